"""The turn rules (``kernel.turn``): what a reply means, what closes a turn a
stopped process left open, and what answers a call outside the plan's scope."""

from __future__ import annotations

import json
from types import MappingProxyType

import pytest

from planfold.kernel import log as kinds
from planfold.kernel.log import (
    USAGE_VERSION,
    Draft,
    Event,
    ModelUsage,
    number_drafts,
    read_assistant_message,
    turn_start,
    user_message,
)
from planfold.kernel.payload import JSON, object_of
from planfold.kernel.session import fold_session
from planfold.kernel.tools.events import read_tool_result
from planfold.kernel.tools.gate import Allowed, GatePolicy, Refused
from planfold.kernel.tools.spec import ToolCall, ToolRegistry, ToolSpec
from planfold.kernel.turn import (
    CALL_INTERRUPTED,
    RECORDABLE_KINDS,
    REPLY_NOTICE_SOURCE,
    UNFINISHED,
    Reply,
    abandoned_turn,
    failed_result,
    interrupted_calls,
    record_reply,
    scope_refusal,
    unrecordable,
)

READ = ToolSpec("read_file", "Read", {"type": "object"}, effect="read", origin="builtin")
WRITE = ToolSpec(
    "write_file", "Write", {"type": "object", "properties": {"path": {"type": "string"}}}, effect="write",
    origin="builtin", target_args=("path",),
)
REGISTRY = ToolRegistry.of(READ, WRITE)


def _call(call_id: str = "c1", tool: str = "read_file", **arguments: object) -> ToolCall:
    args = dict(arguments) or {"path": "a.txt"}
    return ToolCall(call_id, tool, json.dumps(args), args)  # type: ignore[arg-type]


def _record(reply: Reply, *, phase: str = "build_execute", cap: int = 32) -> object:
    return record_reply(reply, REGISTRY, GatePolicy(), phase, ("read_file", "write_file"), max_tool_calls=cap)  # type: ignore[arg-type]


def _notice_texts(drafts: tuple[Draft, ...]) -> list[str]:
    assert all(d.payload["source"] == object_of(REPLY_NOTICE_SOURCE) for d in drafts)
    return [str(d.payload["text"]) for d in drafts]


def test_the_unfinished_table_has_one_row_per_reason_a_reply_is_not_the_models_final_word() -> None:
    assert set(UNFINISHED) == {"length", "content_filter", "refusal"}
    assert (UNFINISHED["length"].code, UNFINISHED["length"].ended_by) == ("reply-cut-off", None)
    assert (UNFINISHED["content_filter"].code, UNFINISHED["content_filter"].ended_by) == (
        "reply-filtered",
        "content-filter",
    )
    assert (UNFINISHED["refusal"].code, UNFINISHED["refusal"].ended_by) == ("reply-refused", "refused")


def test_a_finished_reply_with_calls_records_the_message_then_each_call_with_the_gates_verdict() -> None:
    recorded = record_reply(
        Reply("reading", (_call("c1"), _call("c2", "write_file", path="b.txt")), "tool_calls"),
        REGISTRY, GatePolicy(), "plan", ("read_file",), max_tool_calls=32,
    )
    assert recorded.outcome == "calls" and recorded.text == "reading"
    assert [d.kind for d in recorded.batch] == ["assistant/message", "tool/call", "tool/call"]
    assert recorded.batch[0].payload == {"text": "reading", "source": None}
    first, second = recorded.verdicts
    assert isinstance(first, Allowed) and isinstance(second, Refused)
    assert recorded.notices[0] == () and [d.kind for d in recorded.notices[1]] == ["tool/refused"]
    assert recorded.trailing == () and recorded.ended_by is None and recorded.error is None


def test_a_finished_reply_without_calls_is_final() -> None:
    recorded = _record(Reply("done", (), "stop"))
    assert recorded.outcome == "final"  # type: ignore[attr-defined]
    assert recorded.calls == ()  # type: ignore[attr-defined]


def test_a_reply_with_no_text_records_an_empty_message_and_shows_none() -> None:
    recorded = _record(Reply(None, (), "stop"))
    assert recorded.text is None  # type: ignore[attr-defined]
    assert recorded.batch[0].payload["text"] == ""  # type: ignore[attr-defined]


@pytest.mark.parametrize("reason", ["length", "content_filter"])
def test_a_reply_cut_off_or_filtered_has_every_call_refused_with_its_rows_code(reason: str) -> None:
    recorded = _record(Reply("half", (_call("c1"), _call("c2")), reason))
    row = UNFINISHED[reason]
    assert all(isinstance(v, Refused) and v.code == row.code for v in recorded.verdicts)  # type: ignore[attr-defined]
    assert all(f"finish_reason: {reason}" in v.reason for v in recorded.verdicts)  # type: ignore[attr-defined]
    (notice,) = _notice_texts(recorded.trailing)  # type: ignore[attr-defined]
    assert row.what in notice


def test_a_cut_off_reply_goes_on_and_says_so() -> None:
    recorded = _record(Reply("half", (), "length"))
    assert recorded.outcome == "again" and recorded.ended_by is None  # type: ignore[attr-defined]
    (notice,) = _notice_texts(recorded.trailing)  # type: ignore[attr-defined]
    assert "not taken as your final answer" in notice and notice.endswith("continue.")


def test_a_filtered_reply_stops_the_turn_with_its_error() -> None:
    recorded = _record(Reply("x", (), "content_filter"))
    assert (recorded.outcome, recorded.ended_by) == ("stop", "content-filter")  # type: ignore[attr-defined]
    assert recorded.error == (  # type: ignore[attr-defined]
        "[reply-filtered] the model's reply was stopped by a content filter (finish_reason: content_filter)"
    )
    (notice,) = _notice_texts(recorded.trailing)  # type: ignore[attr-defined]
    assert notice.endswith("the runtime ended the turn.")


def test_a_refusal_is_recorded_as_the_assistants_words_and_stops_the_turn_whatever_the_finish_reason() -> None:
    recorded = _record(Reply(None, (_call(),), "stop", refusal="I will not"))
    assert recorded.text == "I will not" and recorded.batch[0].payload["text"] == "I will not"  # type: ignore[attr-defined]
    assert (recorded.outcome, recorded.ended_by) == ("stop", "refused")  # type: ignore[attr-defined]
    assert recorded.verdicts[0].code == "reply-refused"  # type: ignore[attr-defined]
    (notice,) = _notice_texts(recorded.trailing)  # type: ignore[attr-defined]
    assert "'I will not'" in notice


def test_only_the_first_calls_up_to_the_cap_are_taken_and_one_notice_refuses_the_rest() -> None:
    calls = tuple(_call(f"c{i}") for i in range(5))
    recorded = _record(Reply("many", calls, "tool_calls"), cap=2)
    assert [c.call_id for c in recorded.calls] == ["c0", "c1"]  # type: ignore[attr-defined]
    (notice,) = _notice_texts(recorded.trailing)  # type: ignore[attr-defined]
    assert "made 5 tool calls; only the first 2 were taken" in notice and "other 3" in notice


def test_a_negative_cap_takes_no_call() -> None:
    recorded = _record(Reply("x", (_call(),), "tool_calls"), cap=-1)
    assert recorded.calls == () and recorded.outcome == "final"  # type: ignore[attr-defined]


def test_text_ids_and_names_that_are_not_unicode_are_recorded_escaped() -> None:
    bad = ToolCall("c\udc80", "read\udc80", '{"path": "a"}', {"path": "a"})
    recorded = _record(Reply("t\udc80", (bad,), "tool_calls"))
    assert recorded.batch[0].payload["text"] == "t\\udc80"  # type: ignore[attr-defined]
    (call,) = recorded.calls  # type: ignore[attr-defined]
    assert (call.id, call.name) == ("c\\udc80", "read\\udc80")
    assert call.arguments == {"path": "a"} and call.arguments_error is None


def test_arguments_the_log_cannot_hold_are_recorded_as_raw_text_and_refused_as_malformed() -> None:
    deep = ToolCall("c1", "read_file", '{"x": NaN}', {"x": float("nan")})
    surrogate = ToolCall("c2", "read_file", '{"x": "\\udc80"}', {"x": "\udc80"})
    undecoded = ToolCall("c3", "read_file", "{oops", None, "not JSON")
    recorded = _record(Reply("", (deep, surrogate, undecoded), "tool_calls"))
    first, second, third = recorded.calls  # type: ignore[attr-defined]
    assert first.arguments is None and first.arguments_error == "the arguments hold a value the log cannot record"
    assert second.arguments is None and third.arguments_error == "not JSON"
    assert all(isinstance(v, Refused) and v.code == "malformed-call" for v in recorded.verdicts)  # type: ignore[attr-defined]


def test_a_call_without_an_id_gets_one_from_its_place() -> None:
    recorded = _record(Reply("", (_call(""), _call("")), "tool_calls"))
    assert [c.call_id for c in recorded.calls] == ["call-0", "call-1"]  # type: ignore[attr-defined]


def _turn_log(*drafts: Draft) -> tuple[Event, ...]:
    return number_drafts((turn_start(1), user_message("go"), *drafts), 0, 1)


def _calls(*ids: str) -> tuple[Draft, ...]:
    recorded = record_reply(
        Reply("", tuple(_call(i) for i in ids), "tool_calls"), REGISTRY, GatePolicy(), "build_execute",
        ("read_file",), max_tool_calls=32,
    )
    return recorded.batch


def test_every_call_of_the_open_turn_never_answered_is_answered_as_interrupted_in_order() -> None:
    answered = failed_result("c2", "read_file", "x", "y")
    events = _turn_log(*_calls("c1", "c2", "c3"), answered)
    drafts = interrupted_calls(fold_session(events), events)
    results = [read_tool_result(d.payload) for d in drafts]
    assert [r.call_id for r in results] == ["c1", "c3"] and not any(r.ok for r in results)
    error = json.loads(results[0].output)["error"]
    assert error["code"] == CALL_INTERRUPTED and "whether it ran is unknown" in error["message"]
    assert error["hint"] == "Check its effects before making the call again."


def test_a_refused_call_counts_as_answered() -> None:
    recorded = record_reply(
        Reply("", (_call("c1", "write_file", path="a"),), "tool_calls"), REGISTRY, GatePolicy(), "plan",
        ("read_file",), max_tool_calls=32,
    )
    events = _turn_log(*recorded.batch, *recorded.notices[0])
    assert interrupted_calls(fold_session(events), events) == ()


def test_only_the_open_turns_calls_are_read() -> None:
    first = _turn_log(*_calls("old"))
    closed = (*first, *number_drafts(abandoned_turn(fold_session(first), first), len(first), 2))
    events = (*closed, *number_drafts((turn_start(2), user_message("again"), *_calls("new")), len(closed), 3))
    drafts = interrupted_calls(fold_session(events), events)
    assert [read_tool_result(d.payload).call_id for d in drafts] == ["new"]


def test_the_abandoned_turn_is_its_interrupted_calls_then_its_end_and_nothing_when_no_turn_is_open() -> None:
    events = _turn_log(*_calls("c1"))
    drafts = abandoned_turn(fold_session(events), events)
    assert [d.kind for d in drafts] == ["tool/result", "turn/end"] and drafts[-1].payload == {"turn": 1}
    closed = (*events, *number_drafts(drafts, len(events), 2))
    assert abandoned_turn(fold_session(closed), closed) == ()
    assert interrupted_calls(fold_session(closed), closed) == ()
    assert abandoned_turn(fold_session(()), ()) == ()


def test_a_write_without_an_executing_plan_is_no_scope_matter() -> None:
    from planfold.kernel.plan.scope import Effect  # noqa: PLC0415

    events = _turn_log()
    call = ToolCall.of("c1", "write_file", {"path": "x"})
    assert scope_refusal(fold_session(events), call, (Effect("write", "x"),)) is None
    assert scope_refusal(fold_session(events), call, ()) is None


GOAL_ROUND: dict[str, JSON] = {"type": "goal", "goal_id": "g1", "revision": 1, "round": 1}


def test_only_messages_and_request_headers_are_recordable_and_every_other_kind_is_decided() -> None:
    assert sorted(RECORDABLE_KINDS) == ["assistant/message", "request/header", "user/message"]
    for kind in RECORDABLE_KINDS:
        assert unrecordable(kind, {"text": "fyi", "source": None}) is None
        assert unrecordable(kind, {}) is None
    decided = (
        kinds.TURN_START, kinds.TURN_END, kinds.PLAN_MODE, kinds.PLAN_ARTIFACT, kinds.GOAL_CHANGE,
        kinds.TOOL_CALL, kinds.TOOL_RESULT, kinds.TOOL_REFUSED, kinds.TOOL_WARNING, "no/such-kind",
    )  # fmt: skip
    for kind in decided:
        assert unrecordable(kind, {"text": "fyi", "source": None}) == "decided"


def test_a_user_message_attributed_to_a_goal_is_a_goal_round_and_no_other_message_is() -> None:
    assert unrecordable("user/message", {"text": "x", "source": GOAL_ROUND}) == "goal-round"
    assert unrecordable("user/message", {"text": "x", "source": MappingProxyType(GOAL_ROUND)}) == "goal-round"
    assert unrecordable("user/message", {"text": "x", "source": object_of(REPLY_NOTICE_SOURCE)}) is None
    assert unrecordable("user/message", {"text": "x", "source": {"kind": "goal"}}) is None
    assert unrecordable("user/message", {"text": "x", "source": "goal"}) is None
    assert unrecordable("user/message", {"text": "x", "source": ["goal"]}) is None
    assert unrecordable("user/message", {"source": GOAL_ROUND}) is None  # does not read: the fold refuses it
    assert unrecordable("assistant/message", {"text": "x", "source": GOAL_ROUND}) is None
    assert unrecordable("request/header", {"step": 1, "source": GOAL_ROUND}) is None


def test_a_write_outside_the_executing_plans_scope_is_a_realignment_then_a_failed_result_saying_why() -> None:
    from planfold.kernel.plan.scope import Effect  # noqa: PLC0415
    from planfold.kernel.plan.spec import PlanScope  # noqa: PLC0415
    from planfold.kernel.plan_events import approve_event, draft_event, start_event  # noqa: PLC0415
    from tests.plan_helpers import GOOD_CANDIDATE, Session, current_ref, spec  # noqa: PLC0415

    s = Session()
    s.mode(True)
    s.add(draft_event(s.state, "p1", spec(scope=PlanScope(paths=("src/",), effects=("write",))), GOOD_CANDIDATE))
    s.add(approve_event(s.state, current_ref(s)))
    s.mode(False)
    s.add(start_event(s.state, current_ref(s)))
    call = ToolCall.of("c7", "write_file", {"path": "docs/x"})
    assert scope_refusal(s.state, call, (Effect("write", "src/a.py"),)) is None  # inside: the call runs
    refused = scope_refusal(s.state, call, (Effect("write", "docs/x"),))
    assert refused is not None
    realign, result = refused
    assert [d.kind for d in realign] == ["plan/artifact"] and realign[0].payload["action"] == "realign"
    read = read_tool_result(result.payload)
    assert (read.call_id, read.tool, read.ok) == ("c7", "write_file", False)
    error = json.loads(read.output)["error"]
    violation = error["violations"][0]
    assert error["code"] == "outside-plan-scope" and set(violation) == {"code", "message"}
    assert error["message"].startswith("nothing ran: ") and "docs/x" in violation["message"]
    assert error["message"].endswith("; execution stops until the plan is realigned")
    assert error["hint"] == "Tell the user what you need; the plan must be presented and approved again."


def test_a_cut_off_reply_refuses_each_call_saying_why_and_what_to_do_and_still_shows_its_text() -> None:
    recorded = _record(Reply("half", (_call("c1"),), "length"))
    assert recorded.text == "half" and recorded.outcome == "again"  # type: ignore[attr-defined]
    (verdict,) = recorded.verdicts  # type: ignore[attr-defined]
    assert verdict == Refused(
        "reply-cut-off",
        "nothing in this reply ran: it was cut off at the length limit (finish_reason: length)",
        "read_file",
        "build_execute",
        "Send the call again in a complete reply.",
    )


def test_the_notice_for_calls_past_the_cap_says_how_many_were_made_taken_and_refused() -> None:
    recorded = _record(Reply("many", tuple(_call(f"c{i}") for i in range(3)), "tool_calls"), cap=2)
    assert _notice_texts(recorded.trailing) == [  # type: ignore[attr-defined]
        "Your reply made 3 tool calls; only the first 2 were taken (at most 2 per reply) and the other 1 "
        "were refused without running. Send fewer calls per reply."
    ]


def test_a_call_given_an_id_keeps_its_argument_text() -> None:
    recorded = _record(Reply("", (_call(""),), "tool_calls"))
    (call,) = recorded.calls  # type: ignore[attr-defined]
    assert call == ToolCall("call-0", "read_file", '{"path": "a.txt"}', {"path": "a.txt"})


def test_a_call_answered_by_nothing_but_the_turns_first_event_is_still_found() -> None:
    # The open turn's call right after its turn/start, with no message between.
    events = number_drafts((turn_start(1), *_calls("c1")[1:]), 0, 1)
    drafts = interrupted_calls(fold_session(events), events)
    (result,) = (read_tool_result(d.payload) for d in drafts)
    assert result.call_id == "c1"
    assert json.loads(result.output)["error"]["message"] == (
        "the runtime stopped before this call was answered, so whether it ran is unknown"
    )


def test_an_answer_to_a_call_the_open_turn_never_made_is_passed_over() -> None:
    refused = record_reply(
        Reply("", (_call("old", "write_file", path="a"),), "tool_calls"), REGISTRY, GatePolicy(), "plan",
        ("read_file",), max_tool_calls=32,
    ).notices[0]
    events = _turn_log(failed_result("late", "read_file", "x", "y"), *refused, *_calls("c1"))
    drafts = interrupted_calls(fold_session(events), events)
    assert [read_tool_result(d.payload).call_id for d in drafts] == ["c1"]


def test_the_usage_of_a_reply_is_recorded_on_its_assistant_message_and_left_out_when_unknown() -> None:
    usage = ModelUsage(USAGE_VERSION, 840, 1200, 35, 1024)
    recorded = record_reply(
        Reply("reading", (_call("c1"),), "tool_calls", None, usage),
        REGISTRY, GatePolicy(), "plan", ("read_file",), max_tool_calls=32,
    )
    assert recorded.batch[0].payload == {
        "text": "reading",
        "source": None,
        "usage": {"version": 1, "latency_ms": 840, "prompt_tokens": 1200, "completion_tokens": 35,
                  "cached_tokens": 1024},
    }
    assert read_assistant_message(recorded.batch[0].payload).usage == usage
    latency_only = _record(Reply("done", (), "stop", None, ModelUsage(USAGE_VERSION, 95)))
    assert latency_only.batch[0].payload["usage"] == {"version": 1, "latency_ms": 95}  # type: ignore[attr-defined]
    unknown = _record(Reply("done", (), "stop"))
    assert "usage" not in unknown.batch[0].payload  # type: ignore[attr-defined]
