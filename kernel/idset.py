"""An immutable set of ids whose insert does not copy the whole set.

Theory of operation
-------------------
A strict fold remembers every id a log has used (a goal id may never be
created twice), so that set grows with the history. Copying it on every new
id (``used | {id}``) makes a fold quadratic in the number of ids: a million
events of a goal-heavy log hold 20,000 goal ids. ``IdSet`` keeps its ids in
*levels*, frozensets whose sizes are distinct powers of two, largest first,
like the digits of a binary counter: ``with_id`` adds a level of one id and
merges the last two levels while the newer is at least as large as the one
before it. An id is copied O(log n) times over all inserts, a lookup asks
O(log n) frozensets, and every earlier ``IdSet`` stays as it was (the levels
are shared, never changed), so the interface is that of an immutable set.

It is a ``collections.abc.Set``: two sets are equal when they hold the same
ids, however their levels are cut, and an ``IdSet`` equals a ``frozenset``
or ``set`` of the same ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from collections.abc import Set as AbstractSet

__all__ = ["IdSet"]


class IdSet(AbstractSet[str]):
    """An immutable set of strings with cheap insert (see the module docstring)."""

    __slots__ = ("_levels", "_size")

    _levels: tuple[frozenset[str], ...]
    _size: int

    def __init__(self, ids: Iterable[str] = ()) -> None:
        level = frozenset(ids)
        object.__setattr__(self, "_levels", (level,) if level else ())
        object.__setattr__(self, "_size", len(level))

    @classmethod
    def _of(cls, levels: tuple[frozenset[str], ...], size: int) -> IdSet:
        made = cls.__new__(cls)
        object.__setattr__(made, "_levels", levels)
        object.__setattr__(made, "_size", size)
        return made

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"IdSet is immutable (cannot set {name})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"IdSet is immutable (cannot delete {name})")

    def with_id(self, new: str) -> IdSet:
        """This set and ``new`` (this very set when it already holds it)."""
        if new in self:
            return self
        levels = list(self._levels)
        merged = frozenset((new,))
        while levels and len(levels[-1]) <= len(merged):
            merged = levels.pop() | merged
        levels.append(merged)
        return IdSet._of(tuple(levels), self._size + 1)

    def __contains__(self, item: object) -> bool:
        return any(item in level for level in self._levels)

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[str]:
        for level in self._levels:
            yield from level

    def __eq__(self, other: object) -> bool:
        if isinstance(other, AbstractSet):
            return self._size == len(other) and all(item in other for item in self)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(frozenset(self))

    def __repr__(self) -> str:
        return f"IdSet({sorted(self)!r})"

    def __reduce__(self) -> tuple[type[IdSet], tuple[tuple[str, ...]]]:
        return IdSet, (tuple(self),)
