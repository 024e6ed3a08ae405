"""The runtime's turn boundary, its gate, and exit_plan_mode, through the real
loop with the scripted model."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import pytest

from planfold.adapters.llm.model import AssistantMessage, ChatRequest, ChatResponse, ModelTimeoutError, ToolMessage
from planfold.adapters.runtime.aio import AsyncRuntime
from planfold.adapters.runtime.machine import ProposedStep, TurnReport
from planfold.adapters.runtime.prompt import Conversation, conversation
from planfold.adapters.runtime.review import approve, keep_planning
from planfold.adapters.runtime.tool_runner import ToolRunner
from planfold.adapters.runtime.toolset import Session, default_registry
from planfold.adapters.runtime.workspace import Workspace
from planfold.adapters.store.base import AppendRequest, AppendResult, StorageError
from planfold.adapters.store.memory import MemoryStore
from planfold.adapters.views import Prefix
from planfold.kernel.log import Event
from planfold.kernel.payload import JSON, object_of
from planfold.kernel.plan.mode import NOTICE_SOURCE, PlanModeView, StepVerdict
from planfold.kernel.plan.review import ChannelLost, PlanCommandError
from planfold.kernel.session import fold_session
from planfold.kernel.tools.gate import CatalogMode, GatePolicy
from planfold.kernel.turn import CALL_INTERRUPTED, abandoned_turn
from tests.runtime_helpers import (
    FILES,
    FULL_MARK,
    SPEC,
    SUMMARY_MARK,
    HeldAppend,
    batch,
    call,
    exit_plan,
    kinds,
    make_session,
    plan_actions,
    say,
    ticking,
    todo,
    verified,
)


def _headers(events: Sequence[Event]) -> list[tuple[object, object, object]]:
    return [
        (e.payload["turn"], e.payload["step"], e.payload["plan_mode"]) for e in events if e.kind == "request/header"
    ]


def test_seed004_plan_mode_lands_between_steps_including_retry() -> None:
    session, model, _ = make_session(
        [
            call("read_file", {"path": "README.md"}),  # step 1
            ModelTimeoutError(5.0),  # step 2 fails: the same step is retried
            say("Done reading."),  # step 2, retried
        ]
    )
    runtime = session.runtime
    outcomes: list[str] = []
    # the user flips plan mode while step 1 and then step 2 are in flight
    model.hooks[1] = lambda: outcomes.append(runtime.choose_plan_mode(True))
    model.hooks[2] = lambda: outcomes.append(runtime.choose_plan_mode(False))
    report = runtime.submit("Look around")
    assert isinstance(report, TurnReport)
    assert outcomes == ["queued", "queued"]
    assert report.retries == 1 and report.ended_by == "reply"
    events = session.log.events
    assert _headers(events) == [(1, 1, False), (1, 2, True), (1, 2, False)]
    modes = [i for i, e in enumerate(events) if e.kind == "plan/mode"]
    assert len(modes) == 2
    for index in modes:
        # after the previous step ended (its tool result, or the failed
        # attempt's header), before the next request: a notice at most between
        before = events[index - 1].kind
        assert before in ("tool/result", "request/header")
        after = next(e for e in events[index + 1 :] if e.kind != "user/message")
        assert after.kind == "request/header"
        assert after.payload["plan_mode"] == events[index].payload["active"]
        notices = [e for e in events[index + 1 : events.index(after)] if e.kind == "user/message"]
        assert all(n.payload["source"] == object_of(NOTICE_SOURCE) for n in notices)
    # each request was derived from the state its header records
    assert "[plan:policy]" in model.inner.requests[1].system_text
    assert "[plan:policy]" not in model.inner.requests[2].system_text
    assert runtime.plan_mode.pending is None
    assert fold_session(events) == session.log.state


def test_a_rejected_step_appends_nothing_and_the_choice_stays_pending() -> None:
    session, model, _ = make_session([call("read_file", {"path": "README.md"}), say("ok")])
    runtime = session.runtime
    runtime.step_listeners.append(lambda p: "rejected" if p.step == 2 else "accepted")
    model.hooks[1] = lambda: runtime.choose_plan_mode(True)
    report = runtime.submit("Look around")
    assert isinstance(report, TurnReport) and report.ended_by == "step-rejected"
    assert "plan/mode" not in kinds(session.log.events)
    assert runtime.plan_mode.pending is True
    # the next turn's first accepted pre-step appends it, before its header
    runtime.step_listeners.clear()
    runtime.submit("Again")
    events = session.log.events
    start = max(i for i, e in enumerate(events) if e.kind == "turn/start")
    assert kinds(events[start:]) == [
        "turn/start",
        "user/message",
        "plan/mode",
        "user/message",  # the notice: the last header said build mode
        "request/header",
        "assistant/message",
        "turn/end",
    ]
    assert events[start + 3].payload["source"] == object_of(NOTICE_SOURCE)
    assert runtime.plan_mode.pending is None


class FlakyStore(MemoryStore):
    """Fails the next append that records a plan-mode choice."""

    fail_plan_mode = 0

    def append(self, request: AppendRequest) -> AppendResult:
        if self.fail_plan_mode and any(e.kind == "plan/mode" for e in request.events):
            self.fail_plan_mode -= 1
            raise StorageError("append", "disk unplugged")
        return super().append(request)


def _a_turn_whose_plan_mode_flush_fails() -> tuple[FlakyStore, Session, TurnReport]:
    """A turn of three steps in which plan mode is chosen during step 1 and
    recording the choice fails once."""
    store = FlakyStore()
    session, model, _ = make_session(
        [call("read_file", {"path": "README.md"}), call("list_files", {}), say("ok")], store=store
    )
    runtime = session.runtime
    model.hooks[1] = lambda: runtime.choose_plan_mode(True)
    store.fail_plan_mode = 1
    report = runtime.submit("Look around")
    assert isinstance(report, TurnReport) and report.flush_failures == 1
    return store, session, report


def test_a_failed_flush_keeps_the_choice_pending_and_the_turn_goes_on() -> None:
    store, session, report = _a_turn_whose_plan_mode_flush_fails()
    assert report.ended_by == "reply"
    assert _headers(session.log.events) == [(1, 1, False), (1, 2, False), (1, 3, True)]
    assert session.runtime.plan_mode.pending is None
    assert store.audit("s1").ok


def test_a_step_after_a_failed_flush_is_requested_from_the_recorded_state_alone() -> None:
    _, session, report = _a_turn_whose_plan_mode_flush_fails()
    # step 2: the flush failed, the choice is still pending, the header says
    # build mode, so the whole request is a build-mode request
    step2 = report.requests[1]
    assert _headers(session.log.events)[1] == (1, 2, False)
    assert step2.phase == "build_bootstrap"
    assert [s.name for s in step2.sections][:2] == ["base", "overlay:build"]
    assert "plan:policy" not in [s.name for s in step2.sections]
    assert "[plan:policy]" not in step2.request.system_text
    assert "bootstrap_plan" in step2.offered and "exit_plan_mode" not in step2.offered
    # step 3: the choice is recorded before its header, and the request follows
    step3 = report.requests[2]
    assert step3.phase == "plan" and "plan:policy" in [s.name for s in step3.sections]
    assert "exit_plan_mode" in step3.offered


def test_the_runtime_reads_the_plan_mode_folded_and_pending() -> None:
    session, model, _ = make_session([call("list_files", {}), say("ok")])
    runtime = session.runtime
    seen: list[PlanModeView] = []

    def choose() -> None:
        seen.append(runtime.plan_mode)
        runtime.choose_plan_mode(True)
        seen.append(runtime.plan_mode)

    model.hooks[1] = choose
    assert runtime.plan_mode == PlanModeView(active=False, pending=None)
    runtime.submit("Look")
    assert seen == [PlanModeView(False, None), PlanModeView(False, True)]
    assert runtime.plan_mode == PlanModeView(active=True, pending=None)


def test_plan_off_with_attachments_is_refused_by_submit_and_changes_nothing() -> None:
    session, _, _ = make_session([say("ok")])
    runtime = session.runtime
    runtime.submit("/plan")
    before = session.log.last_seq
    with pytest.raises(PlanCommandError) as err:
        runtime.submit("/plan off", attachments=["shot.png"])
    assert err.value.code == "attachments-with-off"
    assert session.log.last_seq == before and runtime.plan_mode == PlanModeView(True, None)


def test_attachments_go_into_the_recorded_message() -> None:
    session, model, _ = make_session([say("ok"), say("planning")])
    runtime = session.runtime
    runtime.submit("Look at this", attachments=["shot.png", "notes.md"])
    runtime.submit("/plan review it", attachments=["diagram.svg"])
    texts = [e.payload["text"] for e in session.log.events if e.kind == "user/message" and e.payload["source"] is None]
    assert texts == [
        "Look at this\n\nAttachments:\n- shot.png\n- notes.md",
        "review it\n\nAttachments:\n- diagram.svg",
    ]
    assert session.log.state.plan_mode
    assert model.inner.requests[-1].messages[-1].content == texts[-1]


def test_a_users_toggle_while_a_tool_runs_is_queued_for_the_next_pre_step() -> None:
    holder: list[Session] = []
    outcomes: list[str] = []

    def slow_read(arguments: Mapping[str, object]) -> Mapping[str, JSON]:
        outcomes.append(holder[0].runtime.choose_plan_mode(True))  # the user, while the tool runs
        return {"path": "README.md", "content": "# demo"}

    session, model, _ = make_session(
        [call("read_file", {"path": "README.md"}), say("ok")], executors={"read_file": slow_read}
    )
    holder.append(session)
    session.runtime.submit("Look")
    assert outcomes == ["queued"]
    events = session.log.events
    assert [e.payload["ok"] for e in events if e.kind == "tool/result"] == [True]
    assert _headers(events) == [(1, 1, False), (1, 2, True)]
    at = kinds(events).index("plan/mode")
    assert kinds(events)[at - 1] == "tool/result"  # recorded by the runtime, after the tool ran
    assert "[plan:policy]" in model.inner.requests[1].system_text
    assert session.runtime.plan_mode == PlanModeView(True, None)


def test_an_asyncio_users_toggle_while_the_turns_append_is_in_flight_is_kept_for_the_next_pre_step() -> None:
    store = HeldAppend("tool/result")
    replies = [call("read_file", {"path": "README.md"}), say("ok")]

    class Model:
        async def complete(self, request: ChatRequest) -> ChatResponse:
            return replies.pop(0)

    async def scenario() -> tuple[str, TurnReport, AsyncRuntime, Sequence[Event]]:
        tools = ToolRunner(default_registry(), executors=Workspace(dict(FILES)).executors())
        runtime = await AsyncRuntime.open(store, "s1", Model(), tools, clock=ticking())
        turn = asyncio.create_task(runtime.run_turn("Look"))
        await store.held.wait()  # the tool's result is on its way to the store
        choosing = asyncio.create_task(runtime.choose_plan_mode(True))
        await asyncio.sleep(0)
        store.release()
        return await choosing, await turn, runtime, await store.read("s1")

    outcome, report, runtime, events = asyncio.run(scenario())
    assert outcome == "queued" and report.ended_by == "reply"
    assert _headers(events) == [(1, 1, False), (1, 2, True)]
    assert kinds(events)[kinds(events).index("plan/mode") - 1] == "tool/result"
    assert runtime.plan_mode == PlanModeView(True, None)


def test_a_forged_write_in_plan_mode_is_refused_and_returned_as_a_structured_error() -> None:
    session, model, _ = make_session([call("write_file", {"path": "x", "content": "y"}), say("understood")])
    session.runtime.submit("/plan")
    session.runtime.submit("Write x")
    refused = [e for e in session.log.events if e.kind == "tool/refused"]
    assert len(refused) == 1 and refused[0].payload["phase"] == "plan"
    assert session.workspace.writes == 0
    told = model.inner.requests[1].messages[-1]
    assert told.role == "tool"
    error = json.loads(str(told.content))["error"]
    assert error["refused"] is True and error["code"] == refused[0].payload["code"]


def test_advisory_mode_records_a_warning_and_runs_the_call() -> None:
    policy = GatePolicy(catalog="stable", enforcement="advisory")
    session, _, _ = make_session([call("write_file", {"path": "x", "content": "y"}), say("done")], policy=policy)
    session.runtime.submit("/plan")
    session.runtime.submit("Write x")
    assert kinds(session.log.events).count("tool/warning") == 1
    assert "tool/refused" not in kinds(session.log.events)
    assert session.workspace.files["x"] == "y"


def test_exit_plan_mode_reports_every_problem_at_once_and_records_nothing() -> None:
    bad: dict[str, JSON] = {"goal": "", "steps": [], "verify": [], "todos": [{"id": "t1"}], "extra": 1}
    session, _model, reviewer = make_session([exit_plan(bad, None), say("fixing")])
    session.runtime.submit("/plan")
    session.runtime.submit("Plan")
    result = next(e for e in session.log.events if e.kind == "tool/result")
    assert result.payload["ok"] is False
    error = json.loads(str(result.payload["output"]))["error"]
    assert error["code"] == "invalid-plan-spec"
    wheres = {p["where"] for p in error["problems"]}
    assert {"arguments.plan_spec.extra", "arguments.plan_spec.todos[0].text", "arguments.plan_spec.goal"} <= wheres
    assert plan_actions(session.log.events) == []
    assert reviewer.shown == []


def test_exit_plan_mode_without_a_review_channel_fails_closed() -> None:
    session, _, _ = make_session([exit_plan(), say("waiting")], review=False)
    session.runtime.submit("/plan")
    session.runtime.submit("Plan")
    result = next(e for e in session.log.events if e.kind == "tool/result")
    assert json.loads(str(result.payload["output"]))["error"]["code"] == "no-review-channel"
    assert plan_actions(session.log.events) == []
    assert session.log.state.plan_mode


def test_a_review_channel_lost_mid_review_keeps_the_draft_and_plan_mode() -> None:
    session, _, _ = make_session([exit_plan(), say("waiting")], answers=[ChannelLost()])
    session.runtime.submit("/plan")
    session.runtime.submit("Plan")
    assert plan_actions(session.log.events) == ["draft"]
    assert session.log.state.plan_mode and session.runtime.plan_mode.pending is None


def _exit_results(events: Sequence[Event]) -> list[dict[str, Any]]:
    return [
        json.loads(str(e.payload["output"]))
        for e in events
        if e.kind == "tool/result" and e.payload["tool"] == "exit_plan_mode"
    ]


def test_a_bare_keep_planning_records_no_feedback_so_the_plan_is_not_treated_as_a_rewrite() -> None:
    session, model, _ = make_session(
        [exit_plan(), say("What should change?"), say("Still here.")], answers=[keep_planning()]
    )
    session.runtime.submit("/plan")
    session.runtime.submit("Plan a greeting")
    [reject] = [e.payload for e in session.log.events if e.payload.get("action") == "reject"]
    assert reject["note"] is None and session.log.state.plan.feedback is None
    session.runtime.submit("Let me think about it")
    later = model.inner.requests[-1].system_text
    assert SUMMARY_MARK in later and FULL_MARK not in later


def test_keep_planning_with_typed_text_records_it_and_the_next_request_carries_the_full_plan() -> None:
    session, model, _ = make_session(
        [exit_plan(), say("Revising."), say("Here is why.")], answers=[keep_planning("split the greeting step")]
    )
    session.runtime.submit("/plan")
    session.runtime.submit("Plan a greeting")
    assert session.log.state.plan.feedback == "split the greeting step"
    [result] = _exit_results(session.log.events)
    assert "Their feedback: split the greeting step" in result["error"]["message"]
    session.runtime.submit("Why?")
    assert FULL_MARK in model.inner.requests[-1].system_text


def test_an_approval_with_typed_notes_approves_and_tells_the_model_the_notes() -> None:
    session, _, _ = make_session([exit_plan(), say("Starting.")], answers=[approve("keep the old flag working")])
    session.runtime.submit("/plan")
    session.runtime.submit("Plan a greeting")
    [result] = _exit_results(session.log.events)
    assert result["approved"] is True and result["notes"] == "keep the old flag working"
    assert plan_actions(session.log.events)[:2] == ["draft", "approve"]
    assert not session.log.state.plan_mode  # the silent exit landed at the next pre-step


def _notices(events: Sequence[Event]) -> list[str]:
    source = object_of(NOTICE_SOURCE)
    return [str(e.payload["text"]) for e in events if e.kind == "user/message" and e.payload["source"] == source]


def test_plan_off_over_an_unapproved_draft_gets_a_neutral_notice() -> None:
    session, _, _ = make_session([exit_plan(), say("Revising.")], answers=[keep_planning("not yet")])
    session.runtime.submit("/plan")
    session.runtime.submit("Plan a greeting")
    assert session.runtime.submit("/plan off") == "committed"
    assert session.log.state.plan.status == "draft"
    [off] = _notices(session.log.events)
    assert off.startswith("Plan mode is now off") and "approved" not in off


def test_plan_off_over_an_approved_plan_says_to_carry_it_out() -> None:
    session, _, _ = make_session([exit_plan(), say("Approved, waiting.")])
    runtime = session.runtime
    runtime.submit("/plan")
    outcomes: list[str] = []

    def keep_plan_mode(proposed: ProposedStep) -> StepVerdict:
        if proposed.step == 2:  # the approval queued the silent exit: the user cancels it
            outcomes.append(runtime.choose_plan_mode(True))
        return "accepted"

    runtime.step_listeners.append(keep_plan_mode)
    runtime.submit("Plan a greeting")
    assert outcomes == ["cancelled"]
    assert session.log.state.plan_mode and session.log.state.plan.status == "approved"
    assert runtime.submit("/plan off") == "committed"
    assert _notices(session.log.events) == ["Plan mode is now off: carry out the approved plan."]


@pytest.mark.parametrize(("catalog", "code"), [("filtered", "not-offered"), ("stable", "runtime-tool-wrong-phase")])
def test_exit_plan_mode_outside_plan_mode_is_refused_by_the_gate(catalog: CatalogMode, code: str) -> None:
    session, model, reviewer = make_session([exit_plan(), say("ok")], policy=GatePolicy(catalog=catalog))
    session.runtime.submit("Plan")
    assert ("exit_plan_mode" in model.inner.requests[0].tool_names) == (catalog == "stable")
    refused = [e.payload for e in session.log.events if e.kind == "tool/refused"]
    assert [(r["tool"], r["code"], r["phase"]) for r in refused] == [("exit_plan_mode", code, "build_bootstrap")]
    assert "tool/result" not in kinds(session.log.events)
    assert reviewer.shown == [] and plan_actions(session.log.events) == []


def test_build_bootstrap_records_an_implicit_plan_that_then_executes() -> None:
    arguments = {"plan_spec": dict(SPEC)}
    session, model, _ = make_session(
        [
            call("write_file", {"path": "hello.txt", "content": "early"}),
            call("bootstrap_plan", arguments),
            call("write_file", {"path": "hello.txt", "content": "hello"}),
            todo("t1", "done"),
            say("done"),
            verified(True, "hello.txt says hello"),
            say("finished"),
        ]
    )
    session.runtime.submit("Write hello.txt")
    events = session.log.events
    assert plan_actions(events) == ["bootstrap", "start", "todo", "verify", "complete"]
    refused = [e.payload["code"] for e in events if e.kind == "tool/refused"]
    assert refused == ["not-offered"]  # the write before the plan existed: not even offered
    assert session.workspace.files["hello.txt"] == "hello"
    # bootstrap_plan is offered while build mode has no executable plan (again
    # once it completed), never while it executes or verifies
    offers = ["bootstrap_plan" in r.tool_names for r in model.inner.requests]
    assert offers == [True, True, False, False, False, False, True]
    # the runtime answered it: the plan event sits between its call and its result
    at = next(i for i, e in enumerate(events) if e.kind == "tool/call" and e.payload["tool"] == "bootstrap_plan")
    assert kinds(events[at : at + 3]) == ["tool/call", "plan/artifact", "tool/result"]
    assert json.loads(str(events[at + 2].payload["output"]))["status"] == "implicit"


def test_plan_off_cancels_a_pending_entry_no_request_has_seen() -> None:
    session, model, _ = make_session([call("list_files", {}), say("ok")])
    runtime = session.runtime
    outcomes: list[object] = []

    def flip() -> None:
        outcomes.extend([runtime.choose_plan_mode(True), runtime.submit("/plan off")])

    model.hooks[1] = flip
    runtime.submit("Look")
    assert outcomes == ["queued", "cancelled"]
    assert "plan/mode" not in kinds(session.log.events)
    assert runtime.plan_mode.pending is None


# --- a turn left open by a process that stopped ------------------------------


def _whole_session() -> tuple[Event, ...]:
    """A session that plans (a write refused by the gate on the way), executes
    with tool calls (one reply making two), verifies and completes: every kind
    of call a turn can leave unanswered."""
    session, _, _ = make_session(
        [
            call("write_file", {"path": "early.txt", "content": "too soon"}),
            call("read_file", {"path": "README.md"}),
            exit_plan(),
            batch(
                call("write_file", {"path": "hello.txt", "content": "hello"}),
                call("read_file", {"path": "hello.txt"}),
            ),
            todo("t1", "done"),
            say("written"),
            verified(True, "hello.txt says hello"),
            say("ok"),
        ]
    )
    session.runtime.submit("/plan")
    session.runtime.submit("Plan a greeting")
    return session.log.events[:]


WHOLE = _whole_session()


def _answers(events: Sequence[Event]) -> dict[str, list[str]]:
    """Each recorded call's answers (tool/result or tool/refused), by call id."""
    answers: dict[str, list[str]] = {str(e.payload["call_id"]): [] for e in events if e.kind == "tool/call"}
    for e in events:
        if e.kind in ("tool/result", "tool/refused"):
            answers[str(e.payload["call_id"])].append(e.kind)
    return answers


@pytest.mark.parametrize("cut", range(1, len(WHOLE) + 1))
def test_a_session_cut_after_any_event_is_continued_by_the_next_runtime(cut: int) -> None:
    # A process that stopped mid-turn leaves the log as its last append left it.
    store = MemoryStore()
    store.append(AppendRequest("s1", 0, WHOLE[:cut]))
    before = fold_session(WHOLE[:cut])
    session, model, _ = make_session([say("carrying on"), say("ok"), say("ok")], store=store)
    report = session.runtime.run_turn("Where were we?")
    events = session.log.events
    assert events[:cut] == WHOLE[:cut]  # nothing recorded is changed
    assert fold_session(events) == session.log.state
    assert report.turn == before.turns.turn + 1 and events[report.first_seq - 1].kind == "turn/start"
    assert report.closed_turn == (before.turns.turn if before.turns.open else None)
    # every call is answered exactly once, and the model's transcript answers it
    assert all(len(kinds_) == 1 for kinds_ in _answers(events).values())
    first = model.inner.requests[0]
    asked = [c.id for m in first.messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    answered = [m.tool_call_id for m in first.messages if isinstance(m, ToolMessage)]
    assert sorted(asked) == sorted(answered)


def test_a_call_left_unanswered_is_answered_as_interrupted_and_its_turn_ended() -> None:
    # the process stopped after recording the reply's two calls, before either ran
    cut = next(i for i in range(1, len(WHOLE)) if WHOLE[i - 1].kind == WHOLE[i].kind == "tool/call") + 1
    written, read = WHOLE[cut - 2], WHOLE[cut - 1]
    assert (written.kind, read.kind) == ("tool/call", "tool/call")
    state = fold_session(WHOLE[:cut])
    closing = abandoned_turn(state, WHOLE[:cut])
    assert [d.kind for d in closing] == ["tool/result", "tool/result", "turn/end"]
    assert [d.payload["call_id"] for d in closing[:2]] == [written.payload["call_id"], read.payload["call_id"]]
    for draft in closing[:2]:
        assert draft.payload["ok"] is False
        error = json.loads(str(draft.payload["output"]))["error"]
        assert error["code"] == CALL_INTERRUPTED and "whether it ran is unknown" in error["message"]
    assert closing[-1].payload == {"turn": state.turns.turn}


def test_an_answered_or_refused_call_is_not_answered_again_when_its_turn_is_closed() -> None:
    for kind in ("tool/result", "tool/refused"):
        answer = next(i for i, e in enumerate(WHOLE) if e.kind == kind)  # the first such answer
        state = fold_session(WHOLE[: answer + 1])
        assert state.turns.open
        assert [d.kind for d in abandoned_turn(state, WHOLE[: answer + 1])] == ["turn/end"]


def test_no_turn_open_means_nothing_to_close() -> None:
    assert abandoned_turn(fold_session(WHOLE), WHOLE) == ()
    assert abandoned_turn(fold_session(()), ()) == ()


@pytest.mark.parametrize("first", range(len(WHOLE) + 1))
def test_a_conversation_read_in_two_parts_is_the_conversation_read_at_once(first: int) -> None:
    # The runtime reads its log's conversation request after request; every
    # cut, an assistant message whose calls come later included, must give
    # what reading the grown log whole gives.
    assert any(e.kind == "tool/call" for e in WHOLE)
    for second in range(first, len(WHOLE) + 1, 3):
        log = list(WHOLE[:first])
        memo = Conversation()
        assert memo.messages(Prefix(log, first)) == tuple(conversation(WHOLE[:first]))
        log.extend(WHOLE[first:second])
        grown = Prefix(log, second)
        assert memo.messages(grown) == tuple(conversation(WHOLE[:second]))
        assert memo.messages(grown) == tuple(conversation(WHOLE[:second]))  # nothing new: the same


def test_a_conversation_given_another_log_reads_it_whole() -> None:
    memo = Conversation()
    log = list(WHOLE)
    assert memo.messages(Prefix(log, len(log))) == tuple(conversation(WHOLE))
    # another log of the same length that differs before the point read
    said = next(i for i, e in enumerate(WHOLE) if e.kind == "user/message")
    other = [replace(e, payload={**e.payload, "text": "other"}) if i == said else e for i, e in enumerate(WHOLE)]
    assert memo.messages(Prefix(other, len(other))) == tuple(conversation(other)) != tuple(conversation(WHOLE))
    # a shorter view of a log read further, and sequences that are no view
    assert memo.messages(Prefix(other, 5)) == tuple(conversation(other[:5]))
    assert memo.messages(WHOLE) == tuple(conversation(WHOLE))
    assert memo.messages(()) == ()
