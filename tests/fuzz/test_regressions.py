"""Kernel bugs the fuzz targets found, each pinned by a test of its own.

A test for a bug that is reported but not fixed yet is a strict expected
failure: the fix makes it pass, and strictness then asks for the marker to
go."""

from __future__ import annotations

from typing import Any

import pytest

from planfold.adapters.codec import CodecError, decode_event, decode_jsonl
from planfold.kernel.errors import PayloadError, ReplayError
from planfold.kernel.log import Event, check_envelope
from planfold.kernel.plan.capsule import build_capsule, capsule_from_json, capsule_to_json
from planfold.kernel.session import SessionState, fold_session
from planfold.kernel.tools.spec import ToolSpec, ToolSpecError


@pytest.mark.parametrize("kind", [["turn/start"], {"plan": "mode"}])
def test_an_event_kind_that_is_not_a_string_is_an_unknown_kind(kind: object) -> None:
    # A log line decoded without a schema (a conformance vector, a hand-edited
    # export) can carry any JSON value as its kind; the envelope check must
    # refuse it as unknown-kind instead of failing to hash it.
    event = Event(1, kind, 0, {"turn": 1})  # type: ignore[arg-type]
    with pytest.raises(ReplayError) as caught:
        check_envelope(None, event)
    assert (caught.value.position, caught.value.rule) == (1, "unknown-kind")
    with pytest.raises(ReplayError, match="unknown-kind"):
        fold_session([event])


@pytest.mark.parametrize("depth", [2_000, 100_000])
def test_a_deeply_nested_record_is_a_codec_error_at_any_depth(depth: int) -> None:
    record = b'{"seq":1,"kind":"user/message","at":0,"payload":{"text":%s,"source":null}}' % (
        b"[" * depth + b"]" * depth
    )
    # Found by the codec_event target (msgspec's RecursionError came out);
    # the codec now bounds the nesting itself.
    with pytest.raises(CodecError) as caught:
        decode_event(record)
    assert caught.value.code == "malformed-record"
    with pytest.raises(CodecError):
        decode_jsonl(record)


@pytest.mark.parametrize("field", ["effect", "origin", "category"])
def test_a_tool_declaration_with_a_list_for_a_name_field_is_a_tool_spec_error(field: str) -> None:
    # Found by the tool_spec target: a declaration read from JSON (an MCP
    # server's tool list, a deployment file) can hold any JSON value here.
    declaration: dict[str, Any] = {
        "name": "fetch",
        "description": "Fetch a page",
        "parameters": {},
        "effect": "unknown",
        "origin": "mcp",
        field: ["read"],
    }
    with pytest.raises(ToolSpecError) as caught:
        ToolSpec(**declaration)
    assert caught.value.code == "invalid-tool-field"


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_capsule_whose_goal_holds_a_non_finite_number_is_a_payload_error(value: float) -> None:
    # Found by the capsule target: a stored capsule read with a lenient JSON
    # reader can carry NaN or Infinity inside its goal object.
    payload = capsule_to_json(build_capsule(SessionState()))
    payload["goal"] = {"id": "g1", "value": value}
    with pytest.raises(PayloadError):
        capsule_from_json(payload)
