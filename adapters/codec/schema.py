"""JSON Schemas made from the kernel's payload types: the event schema
(``specs/events.schema.json``) and the argument schemas of the runtime-owned
tools.

Theory of operation
-------------------
Every payload kind, and every runtime-owned tool's arguments, is one frozen
dataclass in the kernel whose annotations are its whole contract
(``kernel.payload``); ``shape_of`` reads them into a ``Shape`` tree, which the
kernel's reader runs on. This module only translates that same tree into JSON
Schema (2020-12), so the schema cannot drift from what the kernel reads:

- a record is an object with exactly its fields (``additionalProperties``
  false; a key that may be left out is not ``required``), its class docstring
  as the description, and its cross-field rules as ``if``/``then``;
- an integer gets ``minimum``/``maximum`` (never beyond the safe integers,
  ±(2**53 - 1)); a string rule a ``minLength`` or a ``pattern``: the patterns
  list the whitespace ``str.strip`` removes and avoid ``$``, so they mean the
  same in Python and in ECMA-262 (JSON Schema's dialect);
- a ``Literal`` is an ``enum``; a tuple an array; a union of records tagged by
  a field is a ``oneOf`` with a ``discriminator`` naming it; an opaque value
  (any JSON) is unconstrained, described by the type it is expected to have.

What JSON Schema cannot say is said in the descriptions: an integer is
written without a fraction or exponent (``1.0`` is not the integer ``1``
here), and ``true`` is not an integer.

``event_schema`` is one event line ``{seq, kind, at, payload}``, a union
tagged by ``kind``; ``tool_parameters`` is the object schema of one tool's
arguments, every part inline (some model servers do not follow ``$ref``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from ...kernel.payload import MAX_SAFE_INTEGER, NonBlankWhen, PresentWhen, Shape, Text, shape_of
from ...kernel.session import PAYLOAD_TYPES

__all__ = [
    "INTEGER_NOTE",
    "KEBAB",
    "NON_BLANK",
    "TRIMMED",
    "WHITESPACE",
    "event_schema",
    "json_schema",
    "schema_text",
    "tool_parameters",
]

#: Every character ``str.isspace`` accepts (what ``str.strip()`` removes).
WHITESPACE: str = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
_WS = "".join(f"\\u{ord(ch):04x}" for ch in WHITESPACE)
#: Contains a character that is not whitespace (``Text.NON_BLANK``).
NON_BLANK = f"[^{_WS}]"
#: Non-empty, and starts and ends with a non-whitespace character (``Text.TRIMMED``).
TRIMMED = f"^[^{_WS}](?![\\s\\S]*[{_WS}]$)"
#: ``kernel.errors.KEBAB_CASE``, anchored at the true end of the text (``Text.KEBAB``).
KEBAB = r"^[a-z][a-z0-9]*(-[a-z0-9]+)*(?![\s\S])"

_TEXT: Mapping[Text, dict[str, Any]] = {
    Text.NON_EMPTY: {"minLength": 1},
    Text.NON_BLANK: {"pattern": NON_BLANK},
    Text.TRIMMED: {"pattern": TRIMMED},
    Text.KEBAB: {"pattern": KEBAB},
}

#: What JSON Schema's ``integer`` does not say about planfold's integers.
INTEGER_NOTE = "an integer written without a fraction or exponent (true is not an integer)"


def _name(cls: type) -> str:
    return cls.__name__


class _Builder:
    """Translates shapes; records go to ``defs`` by name unless ``inline``."""

    def __init__(self, *, inline: bool) -> None:
        self.inline = inline
        self.defs: dict[str, dict[str, Any]] = {}
        self.named: dict[str, type] = {}

    def of(self, shape: Shape) -> dict[str, Any]:
        kind = shape.kind
        if kind == "int":
            assert shape.range is not None
            low = max(shape.range.minimum, -MAX_SAFE_INTEGER)
            high = min(shape.range.maximum, MAX_SAFE_INTEGER)
            return {"type": "integer", "minimum": low, "maximum": high, "description": INTEGER_NOTE}
        if kind == "bool":
            return {"type": "boolean"}
        if kind == "null":
            return {"type": "null"}
        if kind == "str":
            return {"type": "string", **(_TEXT[shape.text] if shape.text is not None else {})}
        if kind == "choice":
            return {"enum": list(shape.choices)}
        if kind == "array":
            assert shape.item is not None
            return {"type": "array", "items": self.of(shape.item)}
        if kind == "json":
            assert shape.opaque is not None
            like = shape.opaque.like
            if like is None:
                return {"description": "any JSON value"}
            expected = self.of(shape_of(like))
            return {"description": "any JSON value, expected to be like this", "anyOf": [{}, expected]}
        if kind == "record":
            return self.record(shape)
        return self.union(shape)

    def record(self, shape: Shape) -> dict[str, Any]:
        cls = shape.cls
        assert cls is not None
        name = _name(cls)
        if self.named.setdefault(name, cls) is not cls:
            raise ValueError(f"two payload types are named {name}")
        if not self.inline and name in self.defs:
            return {"$ref": f"#/$defs/{name}"}
        body: dict[str, Any] = {"type": "object"}
        if shape.doc:
            body["description"] = " ".join(shape.doc.replace("``", "`").split())
        if not self.inline:
            self.defs[name] = body  # before the fields: a record may name itself
        body["properties"] = {field.name: self.of(field.shape) for field in shape.fields}
        body["required"] = [field.name for field in shape.fields if not field.omissible]
        body["additionalProperties"] = False
        rules = [_rule(rule) for rule in shape.rules]
        if rules:
            body["allOf"] = rules
        return body if self.inline else {"$ref": f"#/$defs/{name}"}

    def union(self, shape: Shape) -> dict[str, Any]:
        members = [self.of(m) for m in shape.members]
        out: dict[str, Any] = {"anyOf": members}
        if shape.tag is not None:
            out = {"oneOf": members}
            if not self.inline:
                mapping = {
                    str(choice): member["$ref"]
                    for member, member_shape in zip(members, shape.members, strict=True)
                    if member_shape.kind == "record"
                    for field in member_shape.fields
                    if field.name == shape.tag
                    for choice in field.shape.choices
                }
                out["discriminator"] = {"propertyName": shape.tag, "mapping": mapping}
        return out


def _rule(rule: PresentWhen | NonBlankWhen) -> dict[str, Any]:
    when = {"properties": {rule.on: {"const": rule.value}}, "required": [rule.on]}
    if isinstance(rule, PresentWhen):
        return {
            "description": f"{rule.field} {rule.message}",
            "if": when,
            "then": {"properties": {rule.field: {"not": {"type": "null"}}}},
            "else": {"properties": {rule.field: {"type": "null"}}},
        }
    return {
        "description": f"{rule.field} {rule.message} ({rule.code})",
        "if": when,
        "then": {"required": [rule.field], "properties": {rule.field: {"type": "string", "pattern": NON_BLANK}}},
    }


def json_schema(tp: object, *, inline: bool = False) -> dict[str, Any]:
    """The JSON Schema of one payload type (records in ``$defs`` unless
    ``inline``)."""
    builder = _Builder(inline=inline)
    body = builder.of(shape_of(tp))
    return body if inline or not builder.defs else {**body, "$defs": builder.defs}


def tool_parameters(tp: object) -> dict[str, Any]:
    """The schema of a tool's arguments, as offered to the model: an object,
    every part inline."""
    body = json_schema(tp, inline=True)
    assert body.get("type") == "object", f"{tp!r} is not a record"
    return body


def _kind_name(kind: str) -> str:
    return "".join(word.capitalize() for word in kind.replace("/", " ").split()) + "Event"


def event_schema(payload_types: Mapping[str, object] = PAYLOAD_TYPES) -> dict[str, Any]:
    """The JSON Schema (2020-12) of one event line, payloads included."""
    builder = _Builder(inline=False)
    lines: dict[str, dict[str, Any]] = {}
    for kind, payload_type in sorted(payload_types.items()):
        lines[_kind_name(kind)] = {
            "type": "object",
            "description": f"One {kind} line.",
            "properties": {
                "seq": {"type": "integer", "minimum": 1, "maximum": MAX_SAFE_INTEGER, "description": INTEGER_NOTE},
                "kind": {"const": kind},
                "at": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": MAX_SAFE_INTEGER,
                    "description": f"integer milliseconds: {INTEGER_NOTE}",
                },
                "payload": builder.of(shape_of(payload_type)),
            },
            "required": ["seq", "kind", "at", "payload"],
            "additionalProperties": False,
        }
    defs = {**builder.defs, **lines}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "planfold session event",
        "description": (
            "One line of a planfold session log (JSON Lines): seq, kind, at and a payload whose shape the kind "
            "fixes. Every integer is a safe integer (within +-(2**53 - 1)), written without a fraction or "
            "exponent. Generated from the kernel's payload types; do not edit."
        ),
        "oneOf": [{"$ref": f"#/$defs/{name}"} for name in lines],
        "discriminator": {"propertyName": "kind", "mapping": {kind: f"#/$defs/{_kind_name(kind)}"
                                                              for kind in sorted(payload_types)}},
        "$defs": dict(sorted(defs.items())),
    }


def schema_text(schema: Callable[[], dict[str, Any]] = event_schema) -> str:
    """A schema as stable, sorted, indented JSON text."""
    return json.dumps(schema(), indent=2, sort_keys=True, ensure_ascii=True) + "\n"
