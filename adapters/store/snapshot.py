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
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, Generic, TypeVar

import msgspec

from planfold.adapters.store.snapshot_convert import (
    SCALAR_KINDS,
    AnyConv,
    Conv,
    DataclassConv,
    EnumConv,
    FixedTupleConv,
    LiteralConv,
    MapConv,
    ScalarConv,
    SeqConv,
    SnapshotError,
    UnionConv,
    malformed,
)

__all__ = ["SnapshotCodec", "SnapshotError", "SnapshotParts"]

T = TypeVar("T")

#: Bumped by hand when the encoding rules change.
SNAPSHOT_VERSION = 1

# Names the kernel's string annotations may use without importing them (the
# JSON alias is recursive and only ever written as a string).
_HINT_NAMES: dict[str, Any] = {"JSON": Any, "Sequence": Sequence, "Mapping": Mapping}


def _is_json_container(tp: Any) -> bool:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (list, Sequence) and args in ((Any,), ()):
        return True
    return origin in (dict, Mapping) and len(args) == 2 and args[0] is str and args[1] is Any


#: Encoded parts of a snapshot: (converter id, value id) -> (value, its JSON).
SnapshotParts = dict[tuple[int, int], tuple[Any, msgspec.Raw]]

_SCALARS = (bool, int, float, str)


def _immutable(conv: Conv, seen: set[int]) -> bool:
    """Whether every value ``conv`` accepts is immutable all the way down
    (frozen dataclasses, tuples, frozensets, scalars), so that a value's
    encoding can be remembered by its identity. Dicts, lists and JSON
    payloads can change in place, so they never are."""
    if id(conv) in seen:
        return True  # a recursive type: decided by its other members
    seen.add(id(conv))
    if isinstance(conv, ScalarConv | LiteralConv | EnumConv):
        return True
    if isinstance(conv, SeqConv):
        return conv.make is not list and _immutable(conv.item, seen)
    if isinstance(conv, FixedTupleConv):
        return all(_immutable(c, seen) for c in conv.items)
    if isinstance(conv, UnionConv):
        return all(_immutable(c, seen) for c in conv.members)
    if isinstance(conv, DataclassConv):
        params = getattr(conv.cls, "__dataclass_params__", None)
        frozen = bool(getattr(params, "frozen", False))
        return frozen and all(_immutable(c, seen) for _, c in conv.fields)
    return False


class _Compiler:
    def __init__(self) -> None:
        self.dataclasses: dict[type, DataclassConv] = {}

    def compile(self, tp: Any) -> Conv:
        if tp is Any or _is_json_container(tp):
            return AnyConv()
        if tp is None or tp is type(None):
            return ScalarConv(type(None))
        if isinstance(tp, type):
            if tp in SCALAR_KINDS:
                return ScalarConv(tp)
            if issubclass(tp, enum.Enum):
                return EnumConv(tp)
            if dataclasses.is_dataclass(tp):
                return self._dataclass(tp)
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if origin is typing.Literal:
            return LiteralConv(args)
        if origin in (typing.Union, types.UnionType):
            return self._union(args)
        if origin is tuple:
            if len(args) == 2 and args[1] is Ellipsis:
                return SeqConv(self.compile(args[0]), tuple, "tuple")
            return FixedTupleConv(tuple(self.compile(a) for a in args))
        if origin is Sequence and len(args) == 1:
            return SeqConv(self.compile(args[0]), tuple, "tuple")
        if origin is list and len(args) == 1:
            return SeqConv(self.compile(args[0]), list, "list")
        if origin in (frozenset, AbstractSet) and len(args) == 1:
            return SeqConv(self.compile(args[0]), frozenset, "frozenset")
        if origin in (dict, Mapping) and len(args) == 2:
            return MapConv(self.compile(args[0]), self.compile(args[1]))
        raise SnapshotError(f"cannot snapshot values of type {tp!r}", code="snapshot-unsupported")

    def _union(self, args: tuple[Any, ...]) -> Conv:
        members = [self.compile(a) for a in args]
        if any(isinstance(m, AnyConv) for m in members) and all(
            isinstance(m, AnyConv | ScalarConv) for m in members
        ):
            return AnyConv()  # the JSON alias: scalars, arrays and objects as plain data
        literals = [m for m in members if isinstance(m, LiteralConv)]
        if len(literals) > 1:
            merged = LiteralConv(tuple(v for lit in literals for v in lit.values))
            members = [m for m in members if not isinstance(m, LiteralConv)] + [merged]
        return UnionConv(tuple(members))

    def _dataclass(self, cls: type) -> DataclassConv:
        found = self.dataclasses.get(cls)
        if found is not None:
            return found
        conv = DataclassConv(cls)
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
        self._frozen: dict[int, bool] = {}
        digest = hashlib.sha256(f"{shape}|{extra}".encode()).hexdigest()[:20]
        #: Identifies the encoding; a snapshot with another format is stale.
        self.format = f"v{SNAPSHOT_VERSION}-{digest}"

    def encode(self, value: T) -> bytes:
        """JSON bytes for ``value``; ``SnapshotError`` if it breaks its own annotations."""
        try:
            return msgspec.json.encode(self._conv.enc(value))
        except (TypeError, OverflowError, ValueError) as exc:
            raise SnapshotError(f"cannot encode a snapshot: {exc}", code="snapshot-unsupported") from exc

    def encode_reusing(self, value: T, previous: SnapshotParts | None) -> tuple[bytes, SnapshotParts]:
        """``encode(value)`` (the same bytes, the same errors), reusing the
        encoded form of every immutable part of ``value`` that is the very
        object a previous call encoded (``previous``, what that call
        returned). Fold states share most of their parts with the state before
        them, so only what an event changed is encoded again. The parts
        returned keep the objects they describe alive, so an object's identity
        cannot be reused by another while they are kept."""
        old = previous or {}
        new: SnapshotParts = {}
        try:
            return msgspec.json.encode(self._enc(self._conv, value, old, new)), new
        except (TypeError, OverflowError, ValueError) as exc:
            raise SnapshotError(f"cannot encode a snapshot: {exc}", code="snapshot-unsupported") from exc

    def _enc(self, conv: Conv, value: Any, old: SnapshotParts, new: SnapshotParts) -> Any:
        if not isinstance(conv, DataclassConv):
            return conv.enc(value)
        if type(value) is not conv.cls:
            return conv.enc(value)  # raises the converter's own error
        return {name: self._part(field, getattr(value, name), old, new) for name, field in conv.fields}

    def _part(self, conv: Conv, value: Any, old: SnapshotParts, new: SnapshotParts) -> Any:
        if value is None or type(value) in _SCALARS or not self._immutable(conv):
            return self._enc(conv, value, old, new)
        key = (id(conv), id(value))
        hit = old.get(key)
        if hit is None or hit[0] is not value:
            hit = (value, msgspec.Raw(msgspec.json.encode(self._enc(conv, value, old, new))))
        new[key] = hit
        return hit[1]

    def _immutable(self, conv: Conv) -> bool:
        known = self._frozen.get(id(conv))
        if known is None:
            known = self._frozen[id(conv)] = _immutable(conv, set())
        return known

    def decode(self, data: bytes | str) -> T:
        """The value ``data`` encodes; ``SnapshotError`` (``snapshot-malformed``) otherwise."""
        try:
            raw = msgspec.json.decode(data)
        except msgspec.DecodeError as exc:
            raise malformed(f"snapshot is not JSON: {exc}") from exc
        value: T = self._conv.dec(raw)
        return value
