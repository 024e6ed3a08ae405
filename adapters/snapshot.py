"""Exact snapshots of kernel state: frozen dataclasses to JSON bytes and back.

Theory of operation
-------------------
A store keeps the fold state of each session next to its log so that opening a
session does not have to replay everything. That snapshot is only a cache, so
it must decode to a value *equal* to what was encoded, or be refused.

The kernel's values are frozen dataclasses whose annotations name the shapes
(``tuple[str, ...]``, ``X | None``, ``Literal``, enums, nested dataclasses,
JSON payloads). ``SnapshotCodec(root)`` compiles those annotations once into a
small tree of converters; each converter turns a value into plain JSON data
and back, checking the declared type on the way in *and* out. msgspec does the
bytes. Three details keep the round trip exact:

- a JSON payload (``Mapping[str, JSON]``) is passed through untouched: the
  codec stores events in canonical form (objects as dicts, arrays as lists);
- a union with more than one object-shaped member tags its dataclass values
  with ``"$type"``, so a decoder never guesses;
- a union with two members of the same JSON kind (say ``str | SomeStrEnum``)
  is refused when the codec is built, not misread later.

``SnapshotCodec.format`` fingerprints the compiled type tree plus any extra
text (the store adds the reducer names). A snapshot written under a different
format is stale and the store replays the log instead of trusting it.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, Generic, TypeVar

import msgspec

from kernel.errors import KernelError

__all__ = ["SnapshotCodec", "SnapshotError"]

T = TypeVar("T")

#: Bumped by hand when the encoding rules below change.
SNAPSHOT_VERSION = 1

# Names the kernel's string annotations may use without importing them (the
# JSON alias is recursive and only ever written as a string).
_HINT_NAMES: dict[str, Any] = {"JSON": Any, "Sequence": Sequence, "Mapping": Mapping}

_TAG = "$type"


class SnapshotError(KernelError):
    """A value cannot be snapshotted (``snapshot-unsupported``), or stored
    snapshot bytes do not decode to the declared type (``snapshot-malformed``)."""

    code = "snapshot-malformed"


# JSON kinds, used to pick a union member on decode.
_NULL, _BOOL, _INT, _FLOAT, _STR, _ARRAY, _OBJECT = ("null", "bool", "int", "float", "str", "array", "object")


class _Conv:
    """One compiled type: ``enc`` to JSON data, ``dec`` back, ``kinds`` it
    can decode from, ``accepts`` for picking a union member on encode."""

    desc: str = "?"
    kinds: frozenset[str] = frozenset()

    def accepts(self, value: object) -> bool:
        raise NotImplementedError

    def enc(self, value: Any) -> Any:
        raise NotImplementedError

    def dec(self, data: Any) -> Any:
        raise NotImplementedError


def _bad(message: str) -> SnapshotError:
    return SnapshotError(message, code="snapshot-malformed")


def _json_kind(data: object) -> str:
    if data is None:
        return _NULL
    if isinstance(data, bool):
        return _BOOL
    if isinstance(data, int):
        return _INT
    if isinstance(data, float):
        return _FLOAT
    if isinstance(data, str):
        return _STR
    if isinstance(data, list):
        return _ARRAY
    return _OBJECT


class _AnyConv(_Conv):
    """A JSON value kept as plain data (an event payload)."""

    desc = "json"
    kinds = frozenset({_NULL, _BOOL, _INT, _FLOAT, _STR, _ARRAY, _OBJECT})

    def accepts(self, value: object) -> bool:
        return True

    def enc(self, value: Any) -> Any:
        return value

    def dec(self, data: Any) -> Any:
        return data


_SCALAR_KINDS: dict[type, frozenset[str]] = {
    type(None): frozenset({_NULL}),
    bool: frozenset({_BOOL}),
    int: frozenset({_INT}),
    float: frozenset({_FLOAT, _INT}),
    str: frozenset({_STR}),
}


class _ScalarConv(_Conv):
    def __init__(self, tp: type) -> None:
        self.tp = tp
        self.desc = tp.__name__
        self.kinds = _SCALAR_KINDS[tp]

    def accepts(self, value: object) -> bool:
        if self.tp is float:
            return isinstance(value, float | int) and not isinstance(value, bool)
        return type(value) is self.tp

    def enc(self, value: Any) -> Any:
        if not self.accepts(value):
            raise _bad(f"expected {self.desc}, got {type(value).__name__}")
        return value

    def dec(self, data: Any) -> Any:
        if _json_kind(data) not in self.kinds:
            raise _bad(f"expected {self.desc}, got {type(data).__name__}")
        return data


class _LiteralConv(_Conv):
    def __init__(self, values: tuple[Any, ...]) -> None:
        self.values = values
        self.desc = f"literal{sorted(map(repr, values))}"
        self.kinds = frozenset(_json_kind(v) for v in values)

    def accepts(self, value: object) -> bool:
        return any(type(value) is type(v) and value == v for v in self.values)

    def enc(self, value: Any) -> Any:
        if not self.accepts(value):
            raise _bad(f"{value!r} is not one of {self.values}")
        return value

    def dec(self, data: Any) -> Any:
        return self.enc(data)


class _EnumConv(_Conv):
    def __init__(self, cls: type[enum.Enum]) -> None:
        self.cls = cls
        self.desc = f"enum:{cls.__module__}.{cls.__qualname__}{sorted(repr(m.value) for m in cls)}"
        self.kinds = frozenset(_json_kind(m.value) for m in cls)
        if not self.kinds <= {_NULL, _BOOL, _INT, _FLOAT, _STR}:
            raise SnapshotError(f"enum {cls.__qualname__} has non-scalar values", code="snapshot-unsupported")

    def accepts(self, value: object) -> bool:
        return isinstance(value, self.cls)

    def enc(self, value: Any) -> Any:
        if not isinstance(value, self.cls):
            raise _bad(f"expected {self.cls.__qualname__}, got {type(value).__name__}")
        return value.value

    def dec(self, data: Any) -> Any:
        try:
            return self.cls(data)
        except ValueError as exc:
            raise _bad(f"{data!r} is not a {self.cls.__qualname__}") from exc


class _SeqConv(_Conv):
    """``tuple[X, ...]`` or abstract ``Sequence[X]`` (both decode to a tuple),
    ``list[X]`` (decodes to a list), or ``frozenset[X]``."""

    kinds = frozenset({_ARRAY})

    def __init__(self, item: _Conv, make: Callable[[Any], Any], label: str) -> None:
        self.item, self.make, self.label = item, make, label
        self.desc = f"{label}[{item.desc}]"

    def accepts(self, value: object) -> bool:
        if self.make is frozenset:
            return isinstance(value, AbstractSet)
        return isinstance(value, tuple | list)

    def enc(self, value: Any) -> Any:
        if not self.accepts(value):
            raise _bad(f"expected {self.label}, got {type(value).__name__}")
        items = [self.item.enc(v) for v in value]
        if self.make is frozenset:
            items.sort(key=msgspec.json.encode)
        return items

    def dec(self, data: Any) -> Any:
        if not isinstance(data, list):
            raise _bad(f"expected an array for {self.label}")
        return self.make(self.item.dec(v) for v in data)


class _FixedTupleConv(_Conv):
    kinds = frozenset({_ARRAY})

    def __init__(self, items: tuple[_Conv, ...]) -> None:
        self.items = items
        self.desc = "tuple(" + ",".join(c.desc for c in items) + ")"

    def accepts(self, value: object) -> bool:
        return isinstance(value, tuple) and len(value) == len(self.items)

    def enc(self, value: Any) -> Any:
        if not self.accepts(value):
            raise _bad(f"expected a tuple of {len(self.items)}")
        return [c.enc(v) for c, v in zip(self.items, value, strict=True)]

    def dec(self, data: Any) -> Any:
        if not isinstance(data, list) or len(data) != len(self.items):
            raise _bad(f"expected an array of {len(self.items)}")
        return tuple(c.dec(v) for c, v in zip(self.items, data, strict=True))


class _MapConv(_Conv):
    """``dict``/``Mapping``: a JSON object for string keys, else ``[k, v]`` pairs."""

    def __init__(self, key: _Conv, value: _Conv) -> None:
        self.key, self.value = key, value
        self.str_keys = isinstance(key, _ScalarConv) and key.tp is str
        self.kinds = frozenset({_OBJECT if self.str_keys else _ARRAY})
        self.desc = f"map[{key.desc},{value.desc}]"

    def accepts(self, value: object) -> bool:
        return isinstance(value, Mapping)

    def enc(self, value: Any) -> Any:
        if not isinstance(value, Mapping):
            raise _bad(f"expected a mapping, got {type(value).__name__}")
        if self.str_keys:
            return {self.key.enc(k): self.value.enc(v) for k, v in value.items()}
        return [[self.key.enc(k), self.value.enc(v)] for k, v in value.items()]

    def dec(self, data: Any) -> Any:
        if self.str_keys:
            if not isinstance(data, dict):
                raise _bad("expected an object")
            return {self.key.dec(k): self.value.dec(v) for k, v in data.items()}
        if not isinstance(data, list) or not all(isinstance(p, list) and len(p) == 2 for p in data):
            raise _bad("expected an array of [key, value] pairs")
        return {self.key.dec(k): self.value.dec(v) for k, v in data}


class _DataclassConv(_Conv):
    kinds = frozenset({_OBJECT})

    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.name = self.desc = f"{cls.__module__}.{cls.__qualname__}"
        self.fields: tuple[tuple[str, _Conv], ...] = ()

    def accepts(self, value: object) -> bool:
        return type(value) is self.cls

    def enc(self, value: Any) -> Any:
        if type(value) is not self.cls:
            raise _bad(f"expected {self.cls.__qualname__}, got {type(value).__name__}")
        return {name: conv.enc(getattr(value, name)) for name, conv in self.fields}

    def dec(self, data: Any) -> Any:
        if not isinstance(data, dict):
            raise _bad(f"expected an object for {self.cls.__qualname__}")
        names = {name for name, _ in self.fields}
        keys = set(data) - {_TAG}
        if keys != names:
            raise _bad(f"{self.cls.__qualname__}: fields {sorted(keys)} != {sorted(names)}")
        try:
            return self.cls(**{name: conv.dec(data[name]) for name, conv in self.fields})
        except (KernelError, TypeError, ValueError) as exc:
            if isinstance(exc, SnapshotError):
                raise
            raise _bad(f"{self.cls.__qualname__} refused the snapshot: {exc}") from exc


class _UnionConv(_Conv):
    def __init__(self, members: tuple[_Conv, ...]) -> None:
        self.members = members
        self.desc = "union(" + "|".join(sorted(m.desc for m in members)) + ")"
        self.kinds = frozenset().union(*(m.kinds for m in members))
        objects = [m for m in members if _OBJECT in m.kinds]
        self.tag = len(objects) > 1
        self.by_tag = {m.name: m for m in objects if isinstance(m, _DataclassConv)}
        for kind in self.kinds:
            owners = [m for m in members if kind in m.kinds]
            if len(owners) > 1 and not (kind == _OBJECT and self._taggable(owners)):
                if kind == _INT and {m.desc for m in owners} == {"int", "float"}:
                    continue
                raise SnapshotError(
                    f"union {self.desc} is ambiguous for JSON {kind}", code="snapshot-unsupported"
                )

    @staticmethod
    def _taggable(owners: list[_Conv]) -> bool:
        plain = [m for m in owners if not isinstance(m, _DataclassConv)]
        return len(plain) <= 1

    def accepts(self, value: object) -> bool:
        return any(m.accepts(value) for m in self.members)

    def enc(self, value: Any) -> Any:
        for member in self.members:
            if member.accepts(value):
                data = member.enc(value)
                if self.tag and isinstance(member, _DataclassConv):
                    data = {_TAG: member.name, **data}
                return data
        raise _bad(f"{type(value).__name__} is not in {self.desc}")

    def dec(self, data: Any) -> Any:
        kind = _json_kind(data)
        if kind == _OBJECT and self.tag:
            tag = data.get(_TAG) if isinstance(data, dict) else None
            if tag is not None:
                tagged = self.by_tag.get(tag)
                if tagged is None:
                    raise _bad(f"unknown snapshot tag {tag!r}")
                return tagged.dec(data)
            plain = [m for m in self.members if _OBJECT in m.kinds and not isinstance(m, _DataclassConv)]
            if not plain:
                raise _bad("untagged object in a tagged union")
            return plain[0].dec(data)
        if kind == _INT:
            exact = [m for m in self.members if m.desc == "int"]
            if exact:
                return exact[0].dec(data)
        for member in self.members:
            if kind in member.kinds:
                return member.dec(data)
        raise _bad(f"JSON {kind} does not fit {self.desc}")


def _is_json_container(tp: Any) -> bool:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (list, Sequence) and args in ((Any,), ()):
        return True
    return origin in (dict, Mapping) and len(args) == 2 and args[0] is str and args[1] is Any


class _Compiler:
    def __init__(self) -> None:
        self.dataclasses: dict[type, _DataclassConv] = {}

    def compile(self, tp: Any) -> _Conv:
        if tp is Any or _is_json_container(tp):
            return _AnyConv()
        if tp is None or tp is type(None):
            return _ScalarConv(type(None))
        if isinstance(tp, type):
            if tp in _SCALAR_KINDS:
                return _ScalarConv(tp)
            if issubclass(tp, enum.Enum):
                return _EnumConv(tp)
            if dataclasses.is_dataclass(tp):
                return self._dataclass(tp)
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if origin is typing.Literal:
            return _LiteralConv(args)
        if origin in (typing.Union, types.UnionType):
            return self._union(args)
        if origin is tuple:
            if len(args) == 2 and args[1] is Ellipsis:
                return _SeqConv(self.compile(args[0]), tuple, "tuple")
            return _FixedTupleConv(tuple(self.compile(a) for a in args))
        if origin is Sequence and len(args) == 1:
            return _SeqConv(self.compile(args[0]), tuple, "tuple")
        if origin is list and len(args) == 1:
            return _SeqConv(self.compile(args[0]), list, "list")
        if origin in (frozenset, AbstractSet) and len(args) == 1:
            return _SeqConv(self.compile(args[0]), frozenset, "frozenset")
        if origin in (dict, Mapping) and len(args) == 2:
            return _MapConv(self.compile(args[0]), self.compile(args[1]))
        raise SnapshotError(f"cannot snapshot values of type {tp!r}", code="snapshot-unsupported")

    def _union(self, args: tuple[Any, ...]) -> _Conv:
        members = [self.compile(a) for a in args]
        if any(isinstance(m, _AnyConv) for m in members) and all(
            isinstance(m, _AnyConv | _ScalarConv) for m in members
        ):
            return _AnyConv()  # the JSON alias: scalars, arrays and objects as plain data
        literals = [m for m in members if isinstance(m, _LiteralConv)]
        if len(literals) > 1:
            merged = _LiteralConv(tuple(v for lit in literals for v in lit.values))
            members = [m for m in members if not isinstance(m, _LiteralConv)] + [merged]
        return _UnionConv(tuple(members))

    def _dataclass(self, cls: type) -> _DataclassConv:
        found = self.dataclasses.get(cls)
        if found is not None:
            return found
        conv = _DataclassConv(cls)
        self.dataclasses[cls] = conv  # registered first: recursive types terminate
        try:
            hints = typing.get_type_hints(cls, localns=_HINT_NAMES)
        except (NameError, TypeError) as exc:
            raise SnapshotError(
                f"cannot resolve the annotations of {cls.__qualname__}: {exc}", code="snapshot-unsupported"
            ) from exc
        conv.fields = tuple(
            (f.name, self.compile(hints[f.name])) for f in dataclasses.fields(cls) if f.init
        )
        return conv


class SnapshotCodec(Generic[T]):
    """Exact JSON snapshots of values of the dataclass type ``root``.

    Building it raises ``SnapshotError`` (``snapshot-unsupported``) when some
    annotation reachable from ``root`` has no exact encoding.
    """

    def __init__(self, root: type[T], *, extra: str = "") -> None:
        compiler = _Compiler()
        self.root = root
        self._conv = compiler.compile(root)
        shape = ";".join(
            f"{conv.name}{{" + ",".join(f"{n}:{c.desc}" for n, c in conv.fields) + "}"
            for conv in sorted(compiler.dataclasses.values(), key=lambda c: c.name)
        )
        digest = hashlib.sha256(f"{shape}|{extra}".encode()).hexdigest()[:20]
        #: Identifies the encoding; a snapshot with another format is stale.
        self.format = f"v{SNAPSHOT_VERSION}-{digest}"

    def encode(self, value: T) -> bytes:
        """JSON bytes for ``value``; ``SnapshotError`` if it breaks its own annotations."""
        try:
            return msgspec.json.encode(self._conv.enc(value))
        except (TypeError, OverflowError, ValueError) as exc:
            raise SnapshotError(f"cannot encode a snapshot: {exc}", code="snapshot-unsupported") from exc

    def decode(self, data: bytes | str) -> T:
        """The value ``data`` encodes; ``SnapshotError`` (``snapshot-malformed``) otherwise."""
        try:
            raw = msgspec.json.decode(data)
        except msgspec.DecodeError as exc:
            raise _bad(f"snapshot is not JSON: {exc}") from exc
        value: T = self._conv.dec(raw)
        return value
