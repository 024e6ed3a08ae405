"""The OpenRPC document describes every method exactly as the protocol types
define it: by-name params that are the params dataclass's fields, a result
that refers to the result dataclass's schema, closed objects, and no
reference that leads nowhere."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from planfold.adapters.serve.openrpc import OPENRPC_FILE, openrpc_document, openrpc_text
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


def _opened(schema: Any) -> Any:
    """``schema`` without the ``additionalProperties: false`` the document adds."""
    if isinstance(schema, dict):
        return {k: _opened(v) for k, v in schema.items() if (k, v) != ("additionalProperties", False)}
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
