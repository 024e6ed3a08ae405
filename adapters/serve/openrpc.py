"""The OpenRPC document of ``planfold serve``, generated from the protocol types.

Theory of operation
-------------------
Every method of ``protocol.METHODS`` becomes one OpenRPC method: its params
(by name) are the fields of its params dataclass, each with the JSON Schema
msgspec derives from the field's type; its result is a reference to the
result dataclass's schema. msgspec derives the schemas of every type reached
from them (the kernel's ``GoalRef``, ``PlanArtifact`` … included) into
``components.schemas``; objects are closed (``additionalProperties:
false``), since the server refuses unknown keys. The error codes are listed
once in ``components.errors`` and referenced by every method.

``make diagrams`` writes the document to ``specs/rpc.openrpc.json``; a test
fails when the committed file differs from what this module generates. The
server also answers ``rpc.discover`` with it.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import msgspec

from .protocol import JSONRPC_ERRORS, METHODS, PROTOCOL_VERSION, ModelToolCall

__all__ = ["CHANGES", "OPENRPC_FILE", "openrpc_document", "openrpc_text"]

#: Where ``make diagrams`` writes the document, under ``specs/``.
OPENRPC_FILE = "rpc.openrpc.json"

_REF = "#/components/schemas/{name}"
_TRANSPORT = (
    "JSON-RPC 2.0 over standard input and output: one request per line in, one response per line out "
    "(UTF-8 JSON); logs go to standard error. Params are by name. Every error's data carries planfold's "
    "stable kebab-case code (data.code), and data.rule and data.position when the log would be broken."
)

#: The protocol's changes a host must know of, newest first: its version and
#: what changed on the wire.
CHANGES: tuple[tuple[str, str], ...] = (
    (
        "2.1.0",
        "Sessions are driven by the step machine every runtime drives. Added: session/fork, and next_step in "
        "every session info (the step a host goes on with). turn/start may open a turn while the open one was "
        "left by a process that stopped (it is closed first, its unanswered calls answered as interrupted). "
        "Stricter: a NUL in a session id is -32602, and every string of every method's params is capped at "
        "1,000,000 characters (events/append included). A failed write answers with that write's own error "
        "and outcome, and the session is left exactly where the store is.",
    ),
    (
        "2.0.0",
        "The results of tool/result and review/answer call the seq of the last event they appended last_seq, "
        "as every other result does (1.0.0 called it seq). The document names its errors in PascalCase (ParseError, "
        "InvalidRequest …), types every enum, and spells a model's tool call as a oneOf of arguments and "
        "arguments_json; the server accepts what it accepted before.",
    ),
    ("1.0.0", "The first version."),
)

#: JSON Schema's name for the type of each JSON value an enum may hold.
_JSON_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (type(None), "null"),
    (list, "array"),
    (dict, "object"),
)


def _error_name(code: int) -> str:
    """``Parse error`` → ``ParseError``: each word's first letter raised."""
    return "".join(word[:1].upper() + word[1:] for word in JSONRPC_ERRORS[code][0].split())


def _json_type(value: object) -> str:
    # bool before int: True is an int to Python, a boolean to JSON
    return next(name for kind, name in _JSON_TYPES if isinstance(value, kind))


def _type_enums(schema: Any) -> None:
    """Give every ``enum`` and ``const`` schema without a ``type`` the type
    of its values (a list of types when they differ), in place."""
    if isinstance(schema, dict):
        if "type" not in schema and ("enum" in schema or "const" in schema):
            values = schema["enum"] if "enum" in schema else [schema["const"]]
            kinds = sorted({_json_type(value) for value in values})
            schema["type"] = kinds[0] if len(kinds) == 1 else kinds
        for value in schema.values():
            _type_enums(value)
    elif isinstance(schema, list):
        for value in schema:
            _type_enums(value)


def _arguments_one_of(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool call's schema as a ``oneOf`` of its two spellings: the decoded
    ``arguments`` (any JSON value; absent or null is no arguments), or the
    raw ``arguments_json`` text."""
    properties = dict(schema["properties"])
    decoded = {
        "description": "the call's arguments, decoded (any JSON value; absent or null: none)",
        "type": ["object", "array", "string", "number", "boolean", "null"],
    }
    properties.pop("arguments")
    raw = dict(properties.pop("arguments_json")["anyOf"][0])
    raw["description"] = "the call's arguments as the model sent them (JSON text; broken JSON is refused)"
    required = list(schema["required"])

    def spelling(name: str, value: dict[str, Any], need: list[str]) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {**properties, name: value},
            "required": need,
            "additionalProperties": False,
        }

    head: dict[str, Any] = {key: schema[key] for key in ("title", "description") if key in schema}
    spellings = [
        spelling("arguments", decoded, required),
        spelling("arguments_json", raw, [*required, "arguments_json"]),
    ]
    return {**head, "oneOf": spellings}


def _description() -> str:
    changes = " ".join(f"{version}: {what}" for version, what in CHANGES)
    return f"{_TRANSPORT}\n\nChanges, newest first. {changes}"


def _close_objects(schema: Any) -> None:
    """Mark every object schema with declared properties closed, in place."""
    if isinstance(schema, dict):
        if schema.get("type") == "object" and "properties" in schema:
            schema["additionalProperties"] = False
        for value in schema.values():
            _close_objects(value)
    elif isinstance(schema, list):
        for value in schema:
            _close_objects(value)


@functools.cache
def _document() -> str:
    types: list[type] = []
    for method in METHODS.values():
        types += [t for t in (method.params, method.result) if t not in types]
    _, schemas = msgspec.json.schema_components(types, ref_template=_REF)
    _close_objects(schemas)
    _type_enums(schemas)
    schemas[ModelToolCall.__name__] = _arguments_one_of(schemas[ModelToolCall.__name__])
    errors = [{"$ref": f"#/components/errors/{_error_name(code)}"} for code in JSONRPC_ERRORS]
    methods: list[dict[str, Any]] = []
    for method in METHODS.values():
        params, result = schemas[method.params.__name__], method.result.__name__
        required = set(params.get("required", ()))
        descriptors = []
        for name, schema in params["properties"].items():
            descriptor: dict[str, Any] = {"name": name, "required": name in required}
            if "description" in schema:
                descriptor["description"] = schema["description"]
            descriptor["schema"] = schema
            descriptors.append(descriptor)
        methods.append(
            {
                "name": method.name,
                "summary": method.summary,
                "description": params.get("description", method.summary),
                "paramStructure": "by-name",
                "params": descriptors,
                "result": {"name": result, "schema": {"$ref": _REF.format(name=result)}},
                "errors": errors,
            }
        )
    # A params type is spelled out as the method's params; keep its schema
    # only where another schema refers to it.
    text = json.dumps(schemas)
    for method in METHODS.values():
        name = method.params.__name__
        if name in schemas and f'"{_REF.format(name=name)}"' not in text:
            del schemas[name]
    methods.append(
        {
            "name": "rpc.discover",
            "summary": "This document.",
            "description": "The OpenRPC document of the server (this document).",
            "paramStructure": "by-name",
            "params": [],
            "result": {"name": "OpenRPC", "schema": {"type": "object"}},
        }
    )
    document = {
        "openrpc": "1.3.2",
        "info": {"title": "planfold serve", "version": PROTOCOL_VERSION, "description": _description()},
        "methods": methods,
        "components": {
            "schemas": dict(sorted(schemas.items())),
            "errors": {
                _error_name(code): {"code": code, "message": f"{message}: {meaning}"}
                for code, (message, meaning) in JSONRPC_ERRORS.items()
            },
        },
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def openrpc_text() -> str:
    """The document as the text committed in ``specs/``."""
    return _document()


def openrpc_document() -> dict[str, Any]:
    """The document as a fresh JSON value (``rpc.discover``'s result)."""
    value: dict[str, Any] = json.loads(_document())
    return value
