"""How the runtime takes a model's reply: a hostile reply is recorded and its
calls refused (the turn goes on), tool calls per reply are capped, and a
reply that was cut off, filtered or refused is never the model's final word."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from planfold.adapters.llm.model import ChatResponse, ToolCall
from planfold.adapters.runtime.machine import TurnReport
from planfold.adapters.runtime.toolset import Session
from planfold.kernel.log import Event
from planfold.kernel.payload import JSON, object_of
from planfold.kernel.session import fold_session
from planfold.kernel.turn import REPLY_NOTICE_SOURCE
from tests.runtime_helpers import SPEC, call, kinds, make_session, plan_actions, say, todo, verified


def _turn(session: Session, text: str) -> TurnReport:
    report = session.runtime.submit(text)
    assert isinstance(report, TurnReport)
    return report


def _refusals(events: Sequence[Event]) -> list[tuple[object, object]]:
    return [(e.payload["tool"], e.payload["code"]) for e in events if e.kind == "tool/refused"]


def _notices(events: Sequence[Event]) -> list[str]:
    notices = [e for e in events if e.kind == "user/message" and e.payload["source"] == object_of(REPLY_NOTICE_SOURCE)]
    return [str(e.payload["text"]) for e in notices]


def _reply(*calls: ToolCall, text: str | None = None, finish: str = "tool_calls") -> ChatResponse:
    return ChatResponse(text, calls, finish)


HOSTILE: dict[str, ChatResponse] = {
    "NaN in the arguments": _reply(ToolCall.parse("c1", "read_file", '{"path": NaN}')),
    "Infinity decoded by a lenient client": _reply(ToolCall("c1", "read_file", "{}", {"path": float("inf")})),
    "nesting deeper than 64": _reply(ToolCall.parse("c1", "read_file", '{"path": ' + "[" * 80 + "]" * 80 + "}")),
    "nesting deeper than 64, decoded": _reply(
        ToolCall("c1", "read_file", "{}", {"path": json.loads("[" * 80 + "]" * 80)})
    ),
    "an escaped lone surrogate": _reply(ToolCall.parse("c1", "read_file", '{"path": "\\udc80"}')),
    "a raw lone surrogate": _reply(ToolCall.parse("c1", "read_file", '{"path": "\udc80"}')),
    "a lone surrogate decoded": _reply(ToolCall("c1", "read_file", "{}", {"path": "\ud800"})),
}


@pytest.mark.parametrize("reply", HOSTILE.values(), ids=list(HOSTILE))
def test_a_hostile_reply_is_recorded_and_its_call_refused_as_malformed_and_the_turn_goes_on(
    reply: ChatResponse,
) -> None:
    session, _, _ = make_session([reply, say("Sorry, reading README.md instead.")])
    report = _turn(session, "Read a file")
    events = session.log.events
    assert report.ended_by == "reply" and report.error is None
    assert report.reply == "Sorry, reading README.md instead."
    assert _refusals(events) == [("read_file", "malformed-call")]
    assert "tool/result" not in kinds(events)  # nothing ran
    fold_session(events)  # the log is whole and strict
    [recorded] = [e for e in events if e.kind == "tool/call"]
    assert isinstance(recorded.payload["arguments"], str)  # the raw text, as the model sent it


def test_text_names_and_ids_that_are_not_unicode_are_recorded_escaped() -> None:
    reply = ChatResponse("odd \udc80 text", (ToolCall.parse("id-\ud800", "read\udfff", "{}"),), "tool_calls")
    session, _, _ = make_session([reply, say("ok")])
    report = _turn(session, "go")
    assert report.ended_by == "reply"
    events = session.log.events
    assert next(e.payload["text"] for e in events if e.kind == "assistant/message") == "odd \\udc80 text"
    [recorded] = [e for e in events if e.kind == "tool/call"]
    assert (recorded.payload["call_id"], recorded.payload["tool"]) == ("id-\\ud800", "read\\udfff")
    assert _refusals(events) == [("read\\udfff", "unknown-tool")]
    fold_session(events)


def test_tool_calls_beyond_the_cap_are_refused_together_and_the_log_stays_bounded() -> None:
    many = _reply(*(ToolCall.of(f"c{i}", "read_file", {"path": "README.md"}) for i in range(2_000)))
    session, _, _ = make_session([many, say("done")])
    session.runtime.max_tool_calls = 8
    report = _turn(session, "Read everything")
    events = session.log.events
    assert report.ended_by == "reply"
    assert kinds(events).count("tool/call") == 8 and kinds(events).count("tool/result") == 8
    [notice] = _notices(events)
    assert "2000 tool calls" in notice and "1992" in notice and "8" in notice
    assert len(events) < 40
    fold_session(events)


def _executing_with_todo_done(*rest: ChatResponse) -> Session:
    """A build-mode session whose bootstrapped plan executes with its only
    todo done: the next reply without tool calls would end the execution."""
    session, _, _ = make_session([call("bootstrap_plan", {"plan_spec": dict(SPEC)}), todo("t1", "done"), *rest])
    return session


def test_a_cut_off_reply_is_not_the_final_word_and_the_turn_goes_on() -> None:
    session = _executing_with_todo_done(
        ChatResponse("All done, the file now", (), "length"),
        say("All done."),
        verified(),
        say("Verified."),
    )
    report = _turn(session, "Write hello.txt")
    events = session.log.events
    assert report.ended_by == "reply" and report.reply == "Verified."
    assert plan_actions(events) == ["bootstrap", "start", "todo", "verify", "complete"]
    [notice] = _notices(events)
    assert "finish_reason: length" in notice
    # verify came only after the complete reply that followed the cut-off one
    texts = [(i, str(e.payload["text"])) for i, e in enumerate(events) if e.kind == "assistant/message"]
    cut = next(i for i, text in texts if text.endswith("now"))
    verify = next(i for i, e in enumerate(events) if e.kind == "plan/artifact" and e.payload["action"] == "verify")
    assert [e.kind for e in events[cut + 1 : cut + 3]] == ["user/message", "request/header"]
    assert verify > cut + 2
    fold_session(events)


def test_the_calls_of_a_cut_off_reply_are_refused_and_the_plan_does_not_advance() -> None:
    session, _, _ = make_session(
        [
            call("bootstrap_plan", {"plan_spec": dict(SPEC)}),
            ChatResponse(None, (ToolCall.of("c9", "update_todo", {"todo_id": "t1", "status": "done"}),), "length"),
            say("Stopping here."),
        ]
    )
    report = _turn(session, "Write hello.txt")
    events = session.log.events
    assert report.ended_by == "reply"
    assert _refusals(events) == [("update_todo", "reply-cut-off")]
    assert plan_actions(events) == ["bootstrap", "start"]


@pytest.mark.parametrize(
    ("reply", "ended_by", "recorded"),
    [
        (ChatResponse("All do", (), "content_filter"), "content-filter", "All do"),
        (ChatResponse(None, (), "stop", refusal="I can't help with that."), "refused", "I can't help with that."),
    ],
    ids=["content filter", "refusal"],
)
def test_a_filtered_or_refused_reply_stops_the_turn_visibly_and_never_completes(
    reply: ChatResponse, ended_by: str, recorded: str
) -> None:
    session = _executing_with_todo_done(reply)
    report = _turn(session, "Write hello.txt")
    events = session.log.events
    assert report.ended_by == ended_by and report.error is not None
    assert plan_actions(events) == ["bootstrap", "start", "todo"]  # no verify
    assert session.log.state.plan.status == "executing"
    texts = [e.payload["text"] for e in events if e.kind == "assistant/message"]
    assert texts[-1] == recorded
    [notice] = _notices(events)
    finish = reply.finish_reason
    assert f"finish_reason: {finish}" in notice
    if reply.refusal is not None:
        assert reply.refusal in notice
    assert kinds(events)[-1] == "turn/end"
    fold_session(events)


def test_a_cut_off_plan_mode_reply_does_not_present_the_plan() -> None:
    arguments: dict[str, JSON] = {"plan_spec": dict(SPEC)}
    session, _, reviewer = make_session(
        [ChatResponse(None, (ToolCall.of("c1", "exit_plan_mode", arguments),), "length"), say("I'll finish it.")]
    )
    session.runtime.submit("/plan")
    report = _turn(session, "Plan hello.txt")
    assert report.ended_by == "reply"
    assert plan_actions(session.log.events) == []
    assert reviewer.shown == []
