"""Immutable views of a list that only grows.

Theory of operation
-------------------
A session log only grows at its end, and so does the conversation read from
it. Handing either out as a tuple would copy the whole history every time it
grows; ``Prefix`` instead remembers the list and how long it was: items
appended later are not part of the view, so the view never changes, and it
costs the same to make however long the history. The list's owner must only
ever append to it (the session log and the conversation memo do; they start
a new list when they read a history afresh). A view may carry a fixed
``head`` before the prefix and a ``tail`` after it (a request's system
messages, an assistant message still being read).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar, overload

__all__ = ["Prefix"]

T = TypeVar("T")


class Prefix(Sequence[T]):
    """``head``, the first ``length`` items of ``items``, then ``tail``, as
    an immutable sequence (see the module docstring). Slices are tuples;
    a view equals any tuple, list or view with equal items."""

    __slots__ = ("_head", "_items", "_length", "_size", "_tail")

    def __init__(self, items: list[T], length: int, head: tuple[T, ...] = (), tail: tuple[T, ...] = ()) -> None:
        if not 0 <= length <= len(items):
            raise ValueError(f"a prefix of {len(items)} items cannot hold {length}")
        self._items = items
        self._length = length
        self._head = head
        self._tail = tail
        self._size = len(head) + length + len(tail)

    @property
    def source(self) -> object:
        """The list the view is a prefix of: two views with one source see
        one history, the shorter (without its head and tail) a prefix of the
        longer."""
        return self._items

    def __len__(self) -> int:
        return self._size

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[T, ...]: ...

    def __getitem__(self, index: int | slice) -> T | tuple[T, ...]:
        if isinstance(index, slice):
            start, stop, stride = index.indices(self._size)
            if stride == 1 and not self._head and not self._tail:
                return tuple(self._items[start:stop])
            return tuple(self._at(position) for position in range(start, stop, stride))
        position = index + self._size if index < 0 else index
        if not 0 <= position < self._size:
            raise IndexError("index out of range")
        return self._at(position)

    def _at(self, position: int) -> T:
        head = len(self._head)
        if position < head:
            return self._head[position]
        position -= head
        if position < self._length:
            return self._items[position]
        return self._tail[position - self._length]

    def __iter__(self) -> Iterator[T]:
        yield from self._head
        items = self._items
        for position in range(self._length):
            yield items[position]
        yield from self._tail

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Prefix | tuple | list):
            return len(other) == self._size and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"Prefix({tuple(self)!r})"
