"""Tool events: builders and strict readers agree, the gate's verdicts become
the right events, and the strict session fold rejects a malformed tool event
or one outside an open turn at its own seq; the readers and the fold's check
say exactly what is wrong."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planfold.kernel.decisions import tool_message_text
from planfold.kernel.errors import PayloadError, ReplayError
from planfold.kernel.log import TOOL_CALL, TOOL_REFUSED, TOOL_RESULT, TOOL_WARNING, TURN_END, TURN_START, Event
from planfold.kernel.payload import JSON, JSONObject
from planfold.kernel.phase import RUNTIME_PHASES
from planfold.kernel.session import fold_session
from planfold.kernel.tools.events import (
    ToolNotice,
    ToolResult,
    check_tool_event,
    read_tool_call,
    read_tool_notice,
    read_tool_result,
    tool_call_payload,
    tool_notice_payload,
    tool_result_payload,
    verdict_events,
)
from planfold.kernel.tools.gate import GatePolicy, Refused, check_call
from planfold.kernel.tools.spec import ToolCall, thaw_json
from tests.gate_helpers import PHASES, REGISTRY, json_values, nested_lists, small_objects

call_ids = st.text(min_size=1, max_size=8).filter(str.strip)
codes = st.from_regex(r"[a-z][a-z0-9]{0,5}(-[a-z0-9]{1,4}){0,2}", fullmatch=True)
refusals = st.builds(
    Refused,
    code=codes,
    reason=st.text(min_size=1, max_size=20).filter(str.strip),
    tool=st.text(max_size=10),
    phase=st.sampled_from(RUNTIME_PHASES),
    hint=st.text(max_size=10),
)


@given(call_id=call_ids, tool=st.text(max_size=12), arguments=json_values)
def test_a_call_round_trips_through_its_payload(call_id: str, tool: str, arguments: JSON) -> None:
    call = ToolCall.recorded(call_id, tool, arguments)
    back = read_tool_call(tool_call_payload(call))
    assert (back.id, back.name, back.arguments_json, back.ok) == (call_id, tool, call.arguments_json, call.ok)
    assert thaw_json(back.recorded_arguments) == thaw_json(call.recorded_arguments)
    if isinstance(arguments, dict | str):
        assert thaw_json(back.recorded_arguments) == arguments


@pytest.mark.parametrize(("value", "text"), [([1, "é"], '[1, "é"]'), (None, "null"), (3, "3"), (True, "true")])
def test_a_recorded_value_that_is_no_object_reads_back_as_arguments_that_did_not_decode(
    value: JSON, text: str
) -> None:
    back = read_tool_call({"call_id": "c1", "tool": "read_file", "arguments": value})
    assert (back.arguments, back.arguments_json, back.ok) == (None, text, False)
    assert back.arguments_error is not None and "must be a JSON object" in back.arguments_error


@given(call_id=call_ids, tool=st.text(max_size=12), ok=st.booleans(), output=st.text(max_size=20))
def test_a_result_round_trips_through_its_payload(call_id: str, tool: str, ok: bool, output: str) -> None:
    payload = tool_result_payload(call_id, tool, ok=ok, output=output)
    assert read_tool_result(payload) == ToolResult(call_id, tool, ok, output)


@given(call_id=call_ids, refused=refusals, kind=st.sampled_from([TOOL_REFUSED, TOOL_WARNING]))
def test_a_refusal_round_trips_through_its_payload(call_id: str, refused: Refused, kind: str) -> None:
    payload = tool_notice_payload(call_id, refused, kind)
    assert set(payload) >= {"call_id", "tool", "code", "reason", "phase"}
    notice = read_tool_notice(payload, kind)
    assert notice == ToolNotice(
        call_id, refused.tool, refused.code, refused.reason, refused.phase, refused.hint or None
    )


@given(call_id=call_ids, refused=refusals, output=st.text(max_size=20))
def test_the_model_reads_a_results_output_and_a_refusal_as_an_error_naming_its_code_reason_hint_and_phase(
    call_id: str, refused: Refused, output: str
) -> None:
    result = Event(1, TOOL_RESULT, 0, tool_result_payload(call_id, refused.tool, ok=False, output=output))
    assert tool_message_text(result) == output
    notice = Event(2, TOOL_REFUSED, 0, tool_notice_payload(call_id, refused, TOOL_REFUSED))
    error = json.loads(tool_message_text(notice))["error"]
    assert error["code"] == refused.code and error["message"] == refused.reason
    assert error["phase"] == refused.phase and error["refused"] is True
    assert error.get("hint") == (refused.hint or None)


GOOD_CALL: dict[str, JSON] = {"call_id": "c1", "tool": "write_file", "arguments": {"path": "a"}}
GOOD_RESULT: dict[str, JSON] = {"call_id": "c1", "tool": "read_file", "ok": True, "output": "x"}
GOOD_NOTICE: dict[str, JSON] = {
    "call_id": "c1",
    "tool": "write_file",
    "code": "write-in-read-only-phase",
    "reason": "it writes",
    "phase": "plan",
}


def changed(base: Mapping[str, JSON], **edits: Any) -> dict[str, JSON]:
    out = dict(base)
    for key, value in edits.items():
        if value is ...:
            out.pop(key)
        else:
            out[key] = value
    return out


BAD_PAYLOADS = [
    (TOOL_CALL, changed(GOOD_CALL, call_id=...)),
    (TOOL_CALL, changed(GOOD_CALL, extra=1)),
    (TOOL_CALL, changed(GOOD_CALL, call_id="")),
    (TOOL_CALL, changed(GOOD_CALL, tool=None)),
    (TOOL_CALL, changed(GOOD_CALL, arguments={"x": float("inf")})),
    (TOOL_RESULT, changed(GOOD_RESULT, ok=1)),
    (TOOL_RESULT, changed(GOOD_RESULT, output=None)),
    (TOOL_RESULT, changed(GOOD_RESULT, output=...)),
    (TOOL_REFUSED, changed(GOOD_NOTICE, code="Not Kebab")),
    (TOOL_REFUSED, changed(GOOD_NOTICE, phase="build")),
    (TOOL_REFUSED, changed(GOOD_NOTICE, reason="  ")),
    (TOOL_REFUSED, changed(GOOD_NOTICE, hint=3)),
    (TOOL_REFUSED, changed(GOOD_NOTICE, phase=...)),
    (TOOL_WARNING, changed(GOOD_NOTICE, call_id=7)),
    (TOOL_WARNING, changed(GOOD_NOTICE, extra="x")),
    (TOOL_WARNING, ["not", "an", "object"]),
]


def turn_log(kind: str, payload: Any) -> list[Event]:
    return [
        Event(1, TURN_START, 10, {"turn": 1}),
        Event(2, TOOL_CALL, 11, GOOD_CALL),
        Event(3, kind, 12, payload),
        Event(4, TURN_END, 13, {"turn": 1}),
    ]


def test_well_formed_tool_events_fold() -> None:
    for kind, payload in ((TOOL_RESULT, GOOD_RESULT), (TOOL_REFUSED, GOOD_NOTICE), (TOOL_WARNING, GOOD_NOTICE)):
        assert fold_session(turn_log(kind, payload)).last_seq == 4


@pytest.mark.parametrize(("kind", "payload"), BAD_PAYLOADS)
def test_a_malformed_tool_event_is_refused_by_reader_and_fold(kind: str, payload: Any) -> None:
    reader = {
        TOOL_CALL: read_tool_call,
        TOOL_RESULT: read_tool_result,
        TOOL_REFUSED: read_tool_notice,
        TOOL_WARNING: read_tool_notice,
    }[kind]
    with pytest.raises(PayloadError):
        reader(payload)
    log = turn_log(kind, payload)
    with pytest.raises(ReplayError) as err:
        fold_session(log)
    assert (err.value.position, err.value.rule) == (3, "malformed-payload")
    # The prefix before the bad event still folds, the same way every time.
    assert fold_session(log[:2]) == fold_session(log[:2])
    with pytest.raises(ReplayError) as again:
        fold_session(log)
    assert again.value.position == 3


@pytest.mark.parametrize(
    ("kind", "payload"), [(TOOL_CALL, GOOD_CALL), (TOOL_RESULT, GOOD_RESULT), (TOOL_REFUSED, GOOD_NOTICE)]
)
def test_a_tool_event_outside_a_turn_is_refused(kind: str, payload: JSONObject) -> None:
    before = [Event(1, TURN_START, 1, {"turn": 1}), Event(2, TURN_END, 2, {"turn": 1})]
    with pytest.raises(ReplayError) as err:
        fold_session([*before, Event(3, kind, 3, payload)])
    assert (err.value.position, err.value.rule, err.value.detail) == (
        3, "tool-outside-turn", f"{kind} while no turn is open"
    )
    with pytest.raises(ReplayError) as first:
        fold_session([Event(1, kind, 1, payload)])
    assert first.value.rule == "tool-outside-turn"


@pytest.mark.parametrize(
    "arguments",
    [{"x": {1, 2}}, {"x": float("nan")}, object()],
)
def test_builders_refuse_what_cannot_be_recorded(arguments: Any) -> None:
    with pytest.raises(PayloadError):
        tool_call_payload(ToolCall("c", "t", "{}", arguments))
    with pytest.raises(PayloadError):
        tool_call_payload(ToolCall.of("", "t", {}))
    with pytest.raises(PayloadError):
        tool_result_payload("c", "t", ok="yes", output="")  # type: ignore[arg-type]
    with pytest.raises(PayloadError):
        tool_notice_payload("c", Refused("Bad Code", "r", "t", "plan", ""))


@given(
    data=st.data(),
    enforcement=st.sampled_from(["hard", "advisory"]),
    names=st.lists(st.sampled_from([*REGISTRY.names, "nope", "Write_File"]), min_size=1, max_size=6),
)
def test_the_gates_verdicts_become_events_the_strict_fold_accepts(
    data: st.DataObject, enforcement: str, names: list[str]
) -> None:
    policy = GatePolicy(enforcement=enforcement)  # type: ignore[arg-type]
    phase = data.draw(st.sampled_from(PHASES))
    log: list[Event] = [Event(1, TURN_START, 0, {"turn": 1})]

    def append(kind: str, payload: JSONObject) -> None:
        log.append(Event(len(log) + 1, kind, len(log), payload))

    for index, name in enumerate(names):
        call = ToolCall.of(f"call-{index}", name, data.draw(small_objects))
        verdict = check_call(REGISTRY, phase, policy, call)
        events = verdict_events(call, verdict)
        assert events[0] == (TOOL_CALL, tool_call_payload(call))
        if isinstance(verdict, Refused):
            assert [k for k, _ in events] == [TOOL_CALL, TOOL_REFUSED]
            assert read_tool_notice(events[1][1]).code == verdict.code
        elif verdict.warning is not None:
            assert [k for k, _ in events] == [TOOL_CALL, TOOL_WARNING]
            assert read_tool_notice(events[1][1], TOOL_WARNING).code == verdict.warning.code
        else:
            assert [k for k, _ in events] == [TOOL_CALL]
        for kind, payload in events:
            append(kind, payload)
        if not isinstance(verdict, Refused):
            append(TOOL_RESULT, tool_result_payload(call.id, name, ok=True, output="done"))
    append(TURN_END, {"turn": 1})
    assert fold_session(log).last_seq == len(log)


# --------------------------------------------------------------------------
# What the strict readers and the fold's check say


def test_a_tool_call_payload_with_arguments_that_are_not_json_is_refused() -> None:
    with pytest.raises(PayloadError) as caught:
        read_tool_call({"call_id": "c1", "tool": "mystery", "arguments": {"x": float("inf")}})
    assert str(caught.value) == "payload.arguments: must be a JSON value"
    with pytest.raises(PayloadError) as built:
        tool_call_payload(ToolCall.of("c1", "mystery", {"x": float("nan")}))
    assert str(built.value) == "payload.arguments: must be a JSON value"


def test_recording_a_call_with_arguments_nested_past_any_limit_is_a_payload_error() -> None:
    deep = nested_lists(sys.getrecursionlimit() + 100)
    with pytest.raises(PayloadError) as caught:
        tool_call_payload(ToolCall("c1", "mystery", "[]", {"x": deep}))
    assert str(caught.value) == "payload.arguments: must be a JSON value"


def test_the_tool_event_readers_name_the_payload_missing_a_key() -> None:
    with pytest.raises(PayloadError) as call:
        read_tool_call({"call_id": "c1", "tool": "mystery"})
    assert str(call.value) == "payload.arguments: required field is missing"
    with pytest.raises(PayloadError) as result:
        read_tool_result({"call_id": "c1", "tool": "mystery", "ok": True})
    assert str(result.value) == "payload.output: required field is missing"
    with pytest.raises(PayloadError) as warning:
        read_tool_notice({"call_id": "c1"}, TOOL_WARNING)
    assert str(warning.value) == (
        "payload.tool: required field is missing; payload.code: required field is missing; "
        "payload.reason: required field is missing; payload.phase: required field is missing"
    )


@pytest.mark.parametrize("call_id", ["", "  "])
def test_a_notice_or_result_without_a_call_id_is_refused(call_id: str) -> None:
    with pytest.raises(PayloadError) as notice:
        read_tool_notice(changed(GOOD_NOTICE, call_id=call_id))
    assert str(notice.value) == "payload.call_id: must not be blank"
    with pytest.raises(PayloadError) as result:
        read_tool_result(changed(GOOD_RESULT, call_id=call_id))
    assert str(result.value) == "payload.call_id: must not be blank"


def test_a_notice_with_a_bad_code_or_phase_says_which() -> None:
    with pytest.raises(PayloadError) as code:
        read_tool_notice(changed(GOOD_NOTICE, code="No Way"))
    assert str(code.value) == "payload.code: must be kebab-case, got 'No Way'"
    with pytest.raises(PayloadError) as phase:
        read_tool_notice(changed(GOOD_NOTICE, phase="napping"))
    assert str(phase.value) == (
        "payload.phase: must be one of ['plan', 'build_bootstrap', 'build_execute', 'verify'], got 'napping'"
    )


@pytest.mark.parametrize("kind", [TOOL_REFUSED, TOOL_WARNING])
def test_the_fold_check_names_every_key_a_malformed_notice_lacks(kind: str) -> None:
    event = Event(seq=3, kind=kind, at=0, payload={"call_id": "c1"})
    with pytest.raises(PayloadError) as caught:
        check_tool_event(event, turn_open=True)
    assert str(caught.value) == (
        "payload.tool: required field is missing; payload.code: required field is missing; "
        "payload.reason: required field is missing; payload.phase: required field is missing"
    )


def test_the_fold_check_refuses_a_tool_event_whose_payload_is_not_an_object() -> None:
    event = Event(seq=2, kind=TOOL_RESULT, at=0, payload=["c1"])  # type: ignore[arg-type]
    with pytest.raises(PayloadError) as caught:
        check_tool_event(event, turn_open=True)
    assert str(caught.value) == "payload: must be an object"


def test_the_fold_check_refuses_a_tool_event_outside_a_turn_with_its_kind() -> None:
    event = Event(seq=4, kind=TOOL_CALL, at=0, payload={"call_id": "c1", "tool": "mystery", "arguments": {}})
    with pytest.raises(ReplayError) as caught:
        check_tool_event(event, turn_open=False)
    err = caught.value
    assert (err.position, err.rule, err.detail) == (4, "tool-outside-turn", "tool/call while no turn is open")
