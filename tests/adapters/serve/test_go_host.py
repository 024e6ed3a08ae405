"""The Go host of ``planfold serve`` in ``examples/go``: standard library
only, its protocol types (``protocol.go``, written from the OpenRPC
document) agree with the document field by field, and it drives a plan-mode
turn to the end whose log audits clean.

The checks of ``protocol.go`` read its source and need no Go. The build and
the run need Go 1.19 or later: without it they are skipped, or fail under
PLANFOLD_REQUIRE_GO=1 (``tests.system_programs``)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from planfold.adapters.serve.openrpc import OPENRPC_FILE
from tests.adapters.serve.hosts import check_a_completed_session
from tests.system_programs import EXAMPLES, go

ROOT = Path(__file__).resolve().parents[3]
DOCUMENT: dict[str, Any] = json.loads((ROOT / "specs" / OPENRPC_FILE).read_text(encoding="utf-8"))
HOST = EXAMPLES / "go"
PROTOCOL = (HOST / "protocol.go").read_text(encoding="utf-8")
SCHEMAS: dict[str, Any] = DOCUMENT["components"]["schemas"]
METHODS: dict[str, Any] = {method["name"]: method for method in DOCUMENT["methods"]}


@dataclass(frozen=True)
class GoField:
    name: str
    go_type: str
    tag: str
    omitempty: bool


@dataclass(frozen=True)
class GoType:
    """A struct of ``protocol.go`` and what its ``planfold:`` line says it is."""

    name: str
    kind: str  # "params" or "schema"
    of: str
    fields: tuple[GoField, ...]


def _go_types(source: str) -> dict[str, GoType]:
    found = {}
    pattern = r"// planfold:(params|schema) (\S+)\ntype (\w+) struct \{\n(.*?)\n\}"
    for kind, of, name, body in re.findall(pattern, source, re.DOTALL):
        fields = []
        for line in body.splitlines():
            match = re.fullmatch(r'\s*(\w+)\s+(\S+)\s+`json:"([^",]+)(,omitempty)?"`', line)
            assert match is not None, f"{name}: a field line protocol.go's check cannot read: {line!r}"
            fields.append(GoField(match[1], match[2], match[3], bool(match[4])))
        found[name] = GoType(name, kind, of, tuple(fields))
    return found


GO_TYPES = _go_types(PROTOCOL)
BY_SCHEMA = {t.of: t.name for t in GO_TYPES.values() if t.kind == "schema"}


def _object(go_type: GoType) -> tuple[dict[str, Any], set[str]]:
    """The properties and required names the document gives what ``go_type`` stands for."""
    if go_type.kind == "params":
        params = METHODS[go_type.of]["params"]
        return {p["name"]: p["schema"] for p in params}, {p["name"] for p in params if p.get("required")}
    schema = SCHEMAS[go_type.of]
    if "oneOf" in schema:  # each branch an object: the names of any, required when every branch requires them
        branches = schema["oneOf"]
        properties = {name: value for branch in branches for name, value in branch["properties"].items()}
        return properties, set.intersection(*(set(branch["required"]) for branch in branches))
    return schema["properties"], set(schema.get("required", ()))


def _nullable(schema: Mapping[str, Any]) -> bool:
    kinds = schema.get("type")
    return any(option.get("type") == "null" for option in schema.get("anyOf", ())) or (
        isinstance(kinds, list) and "null" in kinds)


def _base(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """``schema`` without its ``null`` alternative."""
    options = [option for option in schema.get("anyOf", ()) if option.get("type") != "null"]
    return options[0] if len(options) == 1 else schema


RAW = "json.RawMessage"


def _problem(schema: Mapping[str, Any], go_type: str) -> str | None:
    """Why ``go_type`` cannot carry values of ``schema`` (None when it can)."""
    base = _base(schema)
    go_type = go_type.removeprefix("*")
    if "$ref" in base:
        name = base["$ref"].rsplit("/", 1)[1]
        return None if go_type in (BY_SCHEMA.get(name), RAW) else f"{go_type} is not the type of {name}"
    kind = base.get("type")
    if isinstance(kind, list) or kind == "object" or "anyOf" in base:
        return None if go_type in (RAW, "interface{}") else f"{go_type} cannot hold any JSON value"
    if kind == "array":
        if not go_type.startswith("[]"):
            return f"{go_type} is not a slice"
        return _problem(base.get("items", {}), go_type[2:])
    expected = {"string": ("string",), "integer": ("int", "int64"), "boolean": ("bool",), "number": ("float64",)}
    return None if go_type in expected.get(str(kind), ()) else f"{go_type} is not a JSON {kind}"


def test_protocol_go_names_the_params_of_every_method_the_host_calls_and_the_results_it_reads() -> None:
    host = (HOST / "main.go").read_text(encoding="utf-8")
    called = []
    for method, argument, literal in re.findall(r'Call\("([a-z_/]+)", (\w+)(\{)?', host):
        made = [argument] if literal else re.findall(rf"\b{argument} := (\w+)\{{", host)  # a variable: its literal
        assert len(set(made)) == 1, f"{method}: where {argument} is made"
        called.append((method, made[0]))
    assert {method for method, _ in called} == {
        "session/open", "session/read", "user/command", "turn/start", "step/begin", "step/context", "step/reply",
        "tool/dispatch", "tool/result", "review/answer", "turn/end",
    }
    for method, params in called:
        assert GO_TYPES[params].kind == "params" and GO_TYPES[params].of == method, (method, params)
        result = METHODS[method]["result"]["schema"]["$ref"].rsplit("/", 1)[1]
        assert result in BY_SCHEMA, f"{method}: its result {result} has no type in protocol.go"


@pytest.mark.parametrize("name", sorted(GO_TYPES))
def test_every_go_type_agrees_with_the_openrpc_document_field_by_field(name: str) -> None:
    go_type = GO_TYPES[name]
    properties, required = _object(go_type)
    tags = {field.tag: field for field in go_type.fields}
    assert len(tags) == len(go_type.fields), f"{name}: a JSON name is given twice"
    assert set(tags) <= set(properties), f"{name}: not in the document: {sorted(set(tags) - set(properties))}"
    assert required <= set(tags), f"{name}: the document requires {sorted(required - set(tags))}"
    for tag, field in tags.items():
        schema = properties[tag]
        where = f"{name}.{field.name} ({tag})"
        problem = _problem(schema, field.go_type)
        assert problem is None, f"{where}: {problem}"
        if _nullable(schema):
            assert field.go_type.startswith(("*", "[]")) or field.go_type == RAW, f"{where} may be null"
        assert field.omitempty == (tag not in required), f"{where}: omitempty exactly when it is optional"
        if go_type.kind == "params" and tag not in required and not field.go_type.startswith("[]"):
            assert field.go_type.startswith("*") or field.go_type == RAW, f"{where}: an optional param left out"


def test_the_check_of_protocol_go_tells_a_wrong_type_a_missing_name_and_an_extra_one() -> None:
    assert _problem({"type": "integer"}, "string") == "string is not a JSON integer"
    assert _problem({"anyOf": [{"type": "string"}, {"type": "null"}]}, "*string") is None
    assert _problem({"type": "array", "items": {"type": "string"}}, "[]int") == "int is not a JSON string"
    assert _problem({"$ref": "#/components/schemas/ToolDecl"}, "ToolInfo") == "ToolInfo is not the type of ToolDecl"
    wrong = _go_types(
        "// planfold:params turn/end\ntype Bad struct {\n"
        '\tSession int `json:"session"`\n\tTurn int `json:"turn"`\n}'
    )["Bad"]
    properties, required = _object(wrong)
    assert required == {"session"} and "turn" not in properties
    assert _problem(properties["session"], "int") == "int is not a JSON string"


def test_the_host_imports_the_standard_library_only() -> None:
    assert (HOST / "go.mod").read_text(encoding="utf-8").splitlines()[:3] == [
        "module planfold.example/host", "", "go 1.19"]
    assert "require" not in (HOST / "go.mod").read_text(encoding="utf-8")
    for source in HOST.glob("*.go"):
        block = re.search(r"^import \((.*?)\)|^import (\"[^\"]+\")", source.read_text(encoding="utf-8"),
                          re.DOTALL | re.MULTILINE)
        assert block is not None, source.name
        for package in re.findall(r'"([^"]+)"', block.group(0)):
            assert "." not in package.split("/")[0], f"{source.name} imports {package}"


def _go(program: str, *argv: str | Path, cwd: Path = HOST, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([program, *map(str, argv)], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          check=False)


def test_the_go_host_builds_with_go_vet_clean_and_drives_a_plan_mode_turn_whose_log_audits_clean(
    tmp_path: Path,
) -> None:
    program = go()
    vetted = _go(program, "vet", ".")
    assert vetted.returncode == 0, vetted.stdout + vetted.stderr
    binary = tmp_path / "planfold-host"
    built = _go(program, "build", "-o", binary, ".")
    assert built.returncode == 0, built.stdout + built.stderr
    db = tmp_path / "go.sqlite"
    done = _go(str(binary), db, sys.executable, "-m", "planfold.adapters.cli", "serve", cwd=tmp_path, timeout=120)
    check_a_completed_session(done, db, "go-1")
    assert "/plan: committed" in done.stdout and "exit_plan_mode: approved" in done.stdout
    assert "completed, last seq" in done.stdout


def test_the_go_host_fails_with_the_servers_refusal_when_the_store_is_not_one(tmp_path: Path) -> None:
    program = go()
    binary = tmp_path / "planfold-host"
    assert _go(program, "build", "-o", binary, ".").returncode == 0
    folder = tmp_path / "a-folder"
    folder.mkdir()
    done = _go(str(binary), folder, sys.executable, "-m", "planfold.adapters.cli", "serve", cwd=tmp_path, timeout=120)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines()[-1].startswith("planfold-host: session/open: ")
