"""The one call type: what the model port builds, the reply holds, the gate
checks, the log records and the executor receives. Raw text and decoded
arguments always agree; a call built with halves that disagree is a
``ToolCallError`` naming the call; a recorded call reads back as the same
type; the kernel's former field names are read-only."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from types import MappingProxyType

import pytest
from hypothesis import given
from hypothesis import strategies as st

import planfold
from planfold.adapters.llm import model
from planfold.kernel import tools
from planfold.kernel.errors import GateError, PlanfoldError
from planfold.kernel.payload import JSON
from planfold.kernel.tools.events import read_tool_call, tool_call_payload
from planfold.kernel.tools.spec import (
    MAX_ARGUMENT_DEPTH,
    ToolCall,
    ToolCallError,
    argument_problem,
    decode_arguments,
    json_kind,
    thaw_json,
)
from tests.gate_helpers import json_values, nested_objects


def test_the_model_ports_call_and_the_packages_call_are_the_kernels_own_type() -> None:
    assert planfold.ToolCall is model.ToolCall is tools.ToolCall is ToolCall
    assert model.ToolCallError is ToolCallError
    assert model.decode_arguments is tools.decode_arguments
    assert model.MAX_ARGUMENT_DEPTH == MAX_ARGUMENT_DEPTH == 64


@pytest.mark.parametrize(("arguments", "error"), [({}, "both set"), (None, None)], ids=["both halves", "neither half"])
def test_a_call_whose_halves_disagree_is_a_tool_call_error_that_names_the_call_and_whose_fault_it_is(
    arguments: Mapping[str, JSON] | None, error: str | None
) -> None:
    with pytest.raises(ToolCallError) as caught:
        ToolCall("call-7", "read_file", "{}", arguments, error)
    assert caught.value.code == "invalid-tool-call" and caught.value.call_id == "call-7"
    assert caught.value.message == (
        "tool call 'call-7': exactly one of arguments and arguments_error must be set "
        "(the fault of the code that built the call)"
    )
    assert isinstance(caught.value, GateError) and isinstance(caught.value, PlanfoldError)
    assert not isinstance(caught.value, model.ModelError)


def test_parse_keeps_text_that_does_not_decode_and_says_why() -> None:
    broken = ToolCall.parse("c1", "read_file", '{"path": ')
    assert (broken.ok, broken.arguments, broken.arguments_json) == (False, None, '{"path": ')
    assert broken.arguments_error is not None and broken.arguments_error.startswith("arguments are not valid JSON")
    assert broken.recorded_arguments == '{"path": '
    array = ToolCall.parse("c2", "read_file", "[1]")
    assert array.arguments_error == "arguments must be a JSON object, got an array"


def test_of_writes_the_text_of_the_object_it_is_given() -> None:
    call = ToolCall.of("c1", "write_file", {"path": "ä", "lines": (1, 2)})
    assert call.ok and call.arguments_json == '{"path": "ä", "lines": [1, 2]}'
    assert call.recorded_arguments == {"path": "ä", "lines": (1, 2)}


@given(arguments=st.dictionaries(st.text(max_size=5), json_values, max_size=4))
def test_the_text_of_a_call_decodes_to_its_arguments(arguments: dict[str, JSON]) -> None:
    built = ToolCall.of("c1", "t", arguments)
    parsed = ToolCall.parse("c1", "t", built.arguments_json)
    assert parsed == built


def test_arguments_deeper_than_the_gate_allows_do_not_decode() -> None:
    deep = ToolCall.parse("c1", "t", json.dumps(nested_objects(MAX_ARGUMENT_DEPTH + 1)))
    assert deep.arguments is None and "deeper than 64 levels" in (deep.arguments_error or "")
    assert ToolCall.parse("c1", "t", json.dumps(nested_objects(MAX_ARGUMENT_DEPTH))).ok


@pytest.mark.parametrize(
    ("recorded", "ok", "text"),
    [
        ({"path": "a"}, True, '{"path": "a"}'),
        ("{oops", False, "{oops"),
        ([1, 2], False, "[1, 2]"),
        (None, False, "null"),
    ],
)
def test_a_recorded_call_reads_back_as_the_one_call_type(recorded: JSON, ok: bool, text: str) -> None:
    back = read_tool_call({"call_id": "c1", "tool": "read_file", "arguments": recorded})
    assert type(back) is ToolCall
    assert (back.id, back.name, back.ok, back.arguments_json) == ("c1", "read_file", ok, text)
    if ok:
        assert thaw_json(back.recorded_arguments) == recorded


def test_a_recorded_call_that_did_not_decode_says_why() -> None:
    raw = ToolCall.recorded("c1", "read_file", "{oops")
    assert raw.arguments_error == "the arguments were recorded as the raw text that did not decode"
    array = ToolCall.recorded("c1", "read_file", [1, "é"])
    assert array.arguments_error == "arguments must be a JSON object, got an array"
    assert array.arguments_json == '[1, "é"]'


def test_what_the_log_records_of_a_call_is_its_object_or_its_raw_text() -> None:
    decoded = ToolCall.parse("c1", "read_file", '{"path": "a"}')
    broken = ToolCall.parse("c2", "read_file", "{oops")
    assert tool_call_payload(decoded)["arguments"] == {"path": "a"}
    assert tool_call_payload(broken)["arguments"] == "{oops"


def test_the_kernels_former_field_names_are_read_only_names_of_id_and_name() -> None:
    call = ToolCall.of("c1", "read_file", {"path": "a"})
    assert (call.call_id, call.tool) == ("c1", "read_file")
    with pytest.raises(dataclasses.FrozenInstanceError):
        call.id = "other"  # type: ignore[misc]
    for name in ("call_id", "tool"):
        # a frozen, slotted dataclass refuses a name that is no field with
        # AttributeError or, on some Python versions, TypeError
        with pytest.raises((AttributeError, TypeError)):
            setattr(call, name, "other")
    assert call == ToolCall.of("c1", "read_file", {"path": "a"})
    fields = ("id", "name", "arguments_json", "arguments", "arguments_error")
    assert tuple(f.name for f in dataclasses.fields(ToolCall)) == fields


def test_a_call_with_object_arguments_can_be_hashed() -> None:
    assert hash(ToolCall.of("c1", "t", {"a": [1]})) == hash(ToolCall.of("c1", "t", {"a": [1]}))


def test_the_argument_problem_is_found_inside_frozen_objects_and_tuples_too() -> None:
    frozen = MappingProxyType({"paths": ("a", {"b": "\udc80"})})
    assert argument_problem(frozen) == "arguments hold text that is not valid Unicode (a lone surrogate)"
    assert argument_problem(nested_objects(MAX_ARGUMENT_DEPTH + 1)) is not None
    assert argument_problem(MappingProxyType({"paths": ("a", "b")})) is None


@given(st.text(max_size=30))
def test_decoding_arguments_never_raises(raw: str) -> None:
    decoded, problem = decode_arguments(raw)
    assert (decoded is None) != (problem is None)
    if decoded is not None and raw.strip():
        assert json.loads(raw) == decoded


@pytest.mark.parametrize(
    ("raw", "decoded", "problem"),
    [
        ("", {}, None),
        ("  \n", {}, None),
        ('{"a": 1}', {"a": 1}, None),
        ("[1, 2]", None, "arguments must be a JSON object, got an array"),
        ('"text"', None, "arguments must be a JSON object, got a string"),
        ("null", None, "arguments must be a JSON object, got null"),
        ("1.5", None, "arguments must be a JSON object, got a number"),
        ("true", None, "arguments must be a JSON object, got a boolean"),
        ("{'a': 1}", None, "arguments are not valid JSON"),
        ("[" * 100_000, None, "arguments are not valid JSON"),
        ('{"n": NaN}', None, "NaN is not a JSON number"),
        ('{"n": [-Infinity]}', None, "-Infinity is not a JSON number"),
        ('{"deep": ' + "[" * 65 + "]" * 65 + "}", None, "arguments nest arrays and objects deeper than 64 levels"),
        ('{"text": "\\udc80"}', None, "arguments hold text that is not valid Unicode (a lone surrogate)"),
        ('{"\\ud800": 1}', None, "not valid Unicode"),
        ('{"deep": ' + "[" * 64 + "]" * 64 + "}", {"deep": json.loads("[" * 64 + "]" * 64)}, None),
    ],
)
def test_decode_arguments_cases(raw: str, decoded: Mapping[str, JSON] | None, problem: str | None) -> None:
    got, why = decode_arguments(raw)
    assert got == decoded
    assert (why is None) if problem is None else (why is not None and problem in why)


@pytest.mark.parametrize(
    ("value", "kind"),
    [(None, "null"), ({}, "an object"), ([], "an array"), ("", "a string"), (True, "a boolean"), (2, "a number"),
     (2.5, "a number"), ((), "tuple")],
)  # fmt: skip
def test_an_error_names_the_json_kind_of_a_value(value: object, kind: str) -> None:
    assert json_kind(value) == kind
