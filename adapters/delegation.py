"""Attributes an object shows on behalf of one of its parts.

Theory of operation
-------------------
A wrapper often shows some attributes of an object it holds as its own: a
model client its settings, a runtime driver its step machine's log and
counters. ``Delegated(part)`` is such an attribute, declared once on the
class: reading it reads the attribute of the same name (or ``name``) on the
object the instance holds as ``part``, at the time of the read, so it never
goes stale. It is read-only, like a ``property`` without a setter: an
assignment is a type error, and raises ``AttributeError`` when run.
``Writable(part)`` also forwards an assignment to the part.
"""

from __future__ import annotations

from typing import Any, Generic, Never, Self, TypeVar, cast, overload

__all__ = ["Delegated", "Writable"]

T = TypeVar("T")


class Delegated(Generic[T]):
    """A read-only attribute read from the instance's ``part`` (see the module)."""

    def __init__(self, part: str, name: str | None = None, *, doc: str | None = None) -> None:
        self.part = part
        self.name = name or ""
        self.shown_as = ""
        self.__doc__ = doc

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.shown_as = name
        self.name = self.name or name

    @overload
    def __get__(self, obj: None, owner: type[Any] | None = None) -> Self: ...

    @overload
    def __get__(self, obj: object, owner: type[Any] | None = None) -> T: ...

    def __get__(self, obj: object | None, owner: type[Any] | None = None) -> T | Self:
        if obj is None:
            return self
        return cast(T, getattr(getattr(obj, self.part), self.name))

    def __set__(self, obj: object, value: Never) -> None:
        raise AttributeError(f"{self.shown_as!r} of a {type(obj).__name__} cannot be set")


class Writable(Delegated[T]):
    """A ``Delegated`` attribute whose assignment sets the part's attribute."""

    def __set__(self, obj: object, value: T) -> None:
        setattr(getattr(obj, self.part), self.name, value)
