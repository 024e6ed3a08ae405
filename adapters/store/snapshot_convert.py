"""The converters behind ``adapters.snapshot``: one small class per kind of
annotation, each turning a value into plain JSON data and back while checking
the declared type both ways.

Every converter knows the JSON ``kinds`` it decodes from (a union uses them to
pick a member without guessing) and ``accepts`` a runtime value (a union uses
that to pick a member when encoding). ``desc`` describes the type; the codec's
format fingerprint is built from it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any

import msgspec

from planfold.adapters.errors import AdapterError
from planfold.kernel.errors import PlanfoldError

__all__ = [
    "OBJECT",
    "SCALAR_KINDS",
    "TAG",
    "AnyConv",
    "Conv",
    "DataclassConv",
    "EnumConv",
    "FixedTupleConv",
    "LiteralConv",
    "MapConv",
    "ScalarConv",
    "SeqConv",
    "SnapshotError",
    "UnionConv",
    "json_kind",
    "malformed",
]

#: The key that names a dataclass inside a union with several object members.
TAG = "$type"


class SnapshotError(AdapterError):
    """A value cannot be snapshotted (``snapshot-unsupported``), or stored
    snapshot bytes do not decode to the declared type (``snapshot-malformed``)."""

    code = "snapshot-malformed"
    codes = frozenset({"snapshot-unsupported"})


# JSON kinds, used to pick a union member on decode.
NULL, BOOL, INT, FLOAT, STR, ARRAY, OBJECT = ("null", "bool", "int", "float", "str", "array", "object")


class Conv:
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


def malformed(message: str) -> SnapshotError:
    return SnapshotError(message, code="snapshot-malformed")


def json_kind(data: object) -> str:
    if data is None:
        return NULL
    if isinstance(data, bool):
        return BOOL
    if isinstance(data, int):
        return INT
    if isinstance(data, float):
        return FLOAT
    if isinstance(data, str):
        return STR
    if isinstance(data, list):
        return ARRAY
    return OBJECT


class AnyConv(Conv):
    """A JSON value kept as plain data (an event payload)."""

    desc = "json"
    kinds = frozenset({NULL, BOOL, INT, FLOAT, STR, ARRAY, OBJECT})

    def accepts(self, value: object) -> bool:
        return True

    def enc(self, value: Any) -> Any:
        return value

    def dec(self, data: Any) -> Any:
        return data


SCALAR_KINDS: dict[type, frozenset[str]] = {
    type(None): frozenset({NULL}),
    bool: frozenset({BOOL}),
    int: frozenset({INT}),
    float: frozenset({FLOAT, INT}),
    str: frozenset({STR}),
}


class ScalarConv(Conv):
    def __init__(self, tp: type) -> None:
        self.tp = tp
        self.desc = tp.__name__
        self.kinds = SCALAR_KINDS[tp]

    def accepts(self, value: object) -> bool:
        if self.tp is float:
            return isinstance(value, float | int) and not isinstance(value, bool)
        return type(value) is self.tp

    def enc(self, value: Any) -> Any:
        if not self.accepts(value):
            raise malformed(f"expected {self.desc}, got {type(value).__name__}")
        return value

    def dec(self, data: Any) -> Any:
        if json_kind(data) not in self.kinds:
            raise malformed(f"expected {self.desc}, got {type(data).__name__}")
        return data


class LiteralConv(Conv):
    def __init__(self, values: tuple[Any, ...]) -> None:
        self.values = values
        self.desc = f"literal{sorted(map(repr, values))}"
        self.kinds = frozenset(json_kind(v) for v in values)

    def accepts(self, value: object) -> bool:
        return any(type(value) is type(v) and value == v for v in self.values)

    def enc(self, value: Any) -> Any:
        if not self.accepts(value):
            raise malformed(f"{value!r} is not one of {self.values}")
        return value

    def dec(self, data: Any) -> Any:
        return self.enc(data)


class EnumConv(Conv):
    def __init__(self, cls: type[enum.Enum]) -> None:
        self.cls = cls
        self.desc = f"enum:{cls.__module__}.{cls.__qualname__}{sorted(repr(m.value) for m in cls)}"
        self.kinds = frozenset(json_kind(m.value) for m in cls)
        if not self.kinds <= {NULL, BOOL, INT, FLOAT, STR}:
            raise SnapshotError(f"enum {cls.__qualname__} has non-scalar values", code="snapshot-unsupported")

    def accepts(self, value: object) -> bool:
        return isinstance(value, self.cls)

    def enc(self, value: Any) -> Any:
        if not isinstance(value, self.cls):
            raise malformed(f"expected {self.cls.__qualname__}, got {type(value).__name__}")
        return value.value

    def dec(self, data: Any) -> Any:
        try:
            return self.cls(data)
        except ValueError as exc:
            raise malformed(f"{data!r} is not a {self.cls.__qualname__}") from exc


class SeqConv(Conv):
    """``tuple[X, ...]`` or abstract ``Sequence[X]`` (both decode to a tuple),
    ``list[X]`` (decodes to a list), or ``frozenset[X]``."""

    kinds = frozenset({ARRAY})

    def __init__(self, item: Conv, make: Callable[[Any], Any], label: str) -> None:
        self.item, self.make, self.label = item, make, label
        self.desc = f"{label}[{item.desc}]"

    def accepts(self, value: object) -> bool:
        if self.make is frozenset:
            return isinstance(value, AbstractSet)
        return isinstance(value, tuple | list)

    def enc(self, value: Any) -> Any:
        if not self.accepts(value):
            raise malformed(f"expected {self.label}, got {type(value).__name__}")
        items = [self.item.enc(v) for v in value]
        if self.make is frozenset:
            items.sort(key=msgspec.json.encode)
        return items

    def dec(self, data: Any) -> Any:
        if not isinstance(data, list):
            raise malformed(f"expected an array for {self.label}")
        return self.make(self.item.dec(v) for v in data)


class FixedTupleConv(Conv):
    kinds = frozenset({ARRAY})

    def __init__(self, items: tuple[Conv, ...]) -> None:
        self.items = items
        self.desc = "tuple(" + ",".join(c.desc for c in items) + ")"

    def accepts(self, value: object) -> bool:
        return isinstance(value, tuple) and len(value) == len(self.items)

    def enc(self, value: Any) -> Any:
        if not self.accepts(value):
            raise malformed(f"expected a tuple of {len(self.items)}")
        return [c.enc(v) for c, v in zip(self.items, value, strict=True)]

    def dec(self, data: Any) -> Any:
        if not isinstance(data, list) or len(data) != len(self.items):
            raise malformed(f"expected an array of {len(self.items)}")
        return tuple(c.dec(v) for c, v in zip(self.items, data, strict=True))


class MapConv(Conv):
    """``dict``/``Mapping``: a JSON object for string keys, else ``[k, v]`` pairs."""

    def __init__(self, key: Conv, value: Conv) -> None:
        self.key, self.value = key, value
        self.str_keys = isinstance(key, ScalarConv) and key.tp is str
        self.kinds = frozenset({OBJECT if self.str_keys else ARRAY})
        self.desc = f"map[{key.desc},{value.desc}]"

    def accepts(self, value: object) -> bool:
        return isinstance(value, Mapping)

    def enc(self, value: Any) -> Any:
        if not isinstance(value, Mapping):
            raise malformed(f"expected a mapping, got {type(value).__name__}")
        if self.str_keys:
            return {self.key.enc(k): self.value.enc(v) for k, v in value.items()}
        return [[self.key.enc(k), self.value.enc(v)] for k, v in value.items()]

    def dec(self, data: Any) -> Any:
        if self.str_keys:
            if not isinstance(data, dict):
                raise malformed("expected an object")
            return {self.key.dec(k): self.value.dec(v) for k, v in data.items()}
        if not isinstance(data, list) or not all(isinstance(p, list) and len(p) == 2 for p in data):
            raise malformed("expected an array of [key, value] pairs")
        return {self.key.dec(k): self.value.dec(v) for k, v in data}


class DataclassConv(Conv):
    kinds = frozenset({OBJECT})

    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.name = self.desc = f"{cls.__module__}.{cls.__qualname__}"
        self.fields: tuple[tuple[str, Conv], ...] = ()

    def accepts(self, value: object) -> bool:
        return type(value) is self.cls

    def enc(self, value: Any) -> Any:
        if type(value) is not self.cls:
            raise malformed(f"expected {self.cls.__qualname__}, got {type(value).__name__}")
        return {name: conv.enc(getattr(value, name)) for name, conv in self.fields}

    def dec(self, data: Any) -> Any:
        if not isinstance(data, dict):
            raise malformed(f"expected an object for {self.cls.__qualname__}")
        names = {name for name, _ in self.fields}
        keys = set(data) - {TAG}
        if keys != names:
            raise malformed(f"{self.cls.__qualname__}: fields {sorted(keys)} != {sorted(names)}")
        try:
            return self.cls(**{name: conv.dec(data[name]) for name, conv in self.fields})
        except (PlanfoldError, TypeError, ValueError) as exc:
            if isinstance(exc, SnapshotError):
                raise
            raise malformed(f"{self.cls.__qualname__} refused the snapshot: {exc}") from exc


class UnionConv(Conv):
    def __init__(self, members: tuple[Conv, ...]) -> None:
        self.members = members
        self.desc = "union(" + "|".join(sorted(m.desc for m in members)) + ")"
        self.kinds = frozenset().union(*(m.kinds for m in members))
        objects = [m for m in members if OBJECT in m.kinds]
        self.tag = len(objects) > 1
        self.by_tag = {m.name: m for m in objects if isinstance(m, DataclassConv)}
        for kind in self.kinds:
            owners = [m for m in members if kind in m.kinds]
            if len(owners) > 1 and not (kind == OBJECT and self._taggable(owners)):
                if kind == INT and {m.desc for m in owners} == {"int", "float"}:
                    continue
                raise SnapshotError(
                    f"union {self.desc} is ambiguous for JSON {kind}", code="snapshot-unsupported"
                )

    @staticmethod
    def _taggable(owners: list[Conv]) -> bool:
        plain = [m for m in owners if not isinstance(m, DataclassConv)]
        return len(plain) <= 1

    def accepts(self, value: object) -> bool:
        return any(m.accepts(value) for m in self.members)

    def enc(self, value: Any) -> Any:
        for member in self.members:
            if member.accepts(value):
                data = member.enc(value)
                if self.tag and isinstance(member, DataclassConv):
                    data = {TAG: member.name, **data}
                return data
        raise malformed(f"{type(value).__name__} is not in {self.desc}")

    def dec(self, data: Any) -> Any:
        kind = json_kind(data)
        if kind == OBJECT and self.tag:
            tag = data.get(TAG) if isinstance(data, dict) else None
            if tag is not None:
                tagged = self.by_tag.get(tag)
                if tagged is None:
                    raise malformed(f"unknown snapshot tag {tag!r}")
                return tagged.dec(data)
            plain = [m for m in self.members if OBJECT in m.kinds and not isinstance(m, DataclassConv)]
            if not plain:
                raise malformed("untagged object in a tagged union")
            return plain[0].dec(data)
        if kind == INT:
            exact = [m for m in self.members if m.desc == "int"]
            if exact:
                return exact[0].dec(data)
        for member in self.members:
            if kind in member.kinds:
                return member.dec(data)
        raise malformed(f"JSON {kind} does not fit {self.desc}")
