"""The OpenRPC document describes every method exactly as the protocol types
define it: by-name params that are the params dataclass's fields, a result
that refers to the result dataclass's schema, closed objects, and no
reference that leads nowhere. It reads well to code generators: every enum
and const is typed, errors are named in PascalCase, a model's tool call is a
oneOf of its two spellings, and one value has one field name."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from planfold.adapters.serve.openrpc import CHANGES, OPENRPC_FILE, _type_enums, openrpc_document, openrpc_text
from planfold.adapters.serve.protocol import METHODS, PROTOCOL_VERSION

ROOT = Path(__file__).resolve().parents[3]


def _refs(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        if isinstance(value.get("$ref"), str):
            yield value["$ref"]
        for item in value.values():
            yield from _refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _refs(item)


def _schemas(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _schemas(item)
    elif isinstance(value, list):
        for item in value:
            yield from _schemas(item)


def _opened(schema: Any) -> Any:
    """``schema`` without what the document adds to msgspec's: the
    ``additionalProperties: false`` of closed objects and the ``type`` of
    enums."""
    if isinstance(schema, dict):
        typed_enum = "enum" in schema or "const" in schema
        return {
            k: _opened(v)
            for k, v in schema.items()
            if (k, v) != ("additionalProperties", False) and not (typed_enum and k == "type")
        }
    if isinstance(schema, list):
        return [_opened(item) for item in schema]
    return schema


def test_the_committed_document_is_the_generated_one() -> None:
    assert (ROOT / "specs" / OPENRPC_FILE).read_text(encoding="utf-8") == openrpc_text()
    assert json.loads(openrpc_text()) == openrpc_document()


def test_every_method_has_its_params_dataclass_fields_and_its_result_type() -> None:
    document = openrpc_document()
    assert document["openrpc"].startswith("1.") and document["info"]["version"] == PROTOCOL_VERSION
    methods = {m["name"]: m for m in document["methods"]}
    assert set(methods) == {*METHODS, "rpc.discover"}
    for name, method in METHODS.items():
        described = methods[name]
        fields = dataclasses.fields(method.params)
        assert [p["name"] for p in described["params"]] == [f.name for f in fields]
        missing = dataclasses.MISSING
        required = {f.name for f in fields if f.default is missing and f.default_factory is missing}
        assert {p["name"] for p in described["params"] if p["required"]} == required
        assert described["paramStructure"] == "by-name" and described["summary"] == method.summary
        assert described["result"]["schema"] == {"$ref": f"#/components/schemas/{method.result.__name__}"}


def test_the_schemas_are_msgspecs_closed_and_every_reference_resolves() -> None:
    document = openrpc_document()
    schemas = document["components"]["schemas"]
    for ref in _refs(document):
        assert ref.startswith("#/components/") and ref.split("/")[-1] in schemas | document["components"]["errors"]
    _, generated = msgspec.json.schema_components(
        [m.result for m in METHODS.values()], ref_template="#/components/schemas/{name}"
    )
    for name, schema in generated.items():
        assert _opened(schemas[name]) == json.loads(json.dumps(schema))
        if "properties" in schema:
            assert schemas[name]["additionalProperties"] is False


def test_every_enum_and_const_schema_says_the_type_of_its_values() -> None:
    document = openrpc_document()
    enums = [schema for schema in _schemas(document) if "enum" in schema or "const" in schema]
    assert len(enums) > 20
    for schema in enums:
        values = schema["enum"] if "enum" in schema else [schema["const"]]
        kinds = {{str: "string", bool: "boolean", int: "integer", type(None): "null"}[type(v)] for v in values}
        assert schema.get("type") == (kinds.pop() if len(kinds) == 1 else sorted(kinds)), schema


def test_an_enum_of_values_of_several_types_is_given_each_of_their_types() -> None:
    schema: dict[str, Any] = {"anyOf": [{"enum": [1, "a", None, True]}, {"const": 2.5}, {"enum": ["x"], "type": "x"}]}
    _type_enums(schema)
    assert [branch["type"] for branch in schema["anyOf"]] == [["boolean", "integer", "null", "string"], "number", "x"]


def test_errors_are_named_in_pascal_case_after_their_standard_messages() -> None:
    errors = openrpc_document()["components"]["errors"]
    assert errors["ParseError"]["code"] == -32700 and errors["MethodNotFound"]["code"] == -32601
    assert errors["OutOfOrder"]["code"] == -32003 and errors["BadLog"]["code"] == -32001
    for name in errors:
        assert name[0].isupper() and name.isalnum() and name not in {"Parseerror", "Methodnotfound"}, name


def test_a_model_tool_call_is_one_of_decoded_arguments_or_the_raw_text() -> None:
    call = openrpc_document()["components"]["schemas"]["ModelToolCall"]
    decoded, raw = call["oneOf"]
    assert set(decoded["properties"]) == {"id", "name", "arguments"} and decoded["required"] == ["id", "name"]
    assert set(raw["properties"]) == {"id", "name", "arguments_json"}
    assert raw["required"] == ["id", "name", "arguments_json"]
    assert raw["properties"]["arguments_json"]["type"] == "string"
    assert decoded["additionalProperties"] is False and raw["additionalProperties"] is False


def test_a_tool_answer_calls_the_seq_of_its_last_event_last_seq_and_the_change_is_documented() -> None:
    document = openrpc_document()
    answered = document["components"]["schemas"]["ToolAnswered"]["properties"]
    assert "last_seq" in answered and "seq" not in answered
    assert CHANGES[0][0] == PROTOCOL_VERSION and "2.0.0" in dict(CHANGES)
    assert "last_seq" in document["info"]["description"] and "1.0.0 called it seq" in document["info"]["description"]


def test_the_step_machines_additions_to_the_protocol_are_documented_as_its_newest_version() -> None:
    document = openrpc_document()
    assert PROTOCOL_VERSION == CHANGES[0][0] == document["info"]["version"] == "2.1.0"
    what = dict(CHANGES)["2.1.0"]
    assert all(word in what for word in ("session/fork", "next_step", "NUL", "own error"))
    assert "session/fork" in {method["name"] for method in document["methods"]}
