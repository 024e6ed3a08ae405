"""Seed 000's Test Plan lines on injection, draft-not-executing, rewrite during
execution and verify, each run through the real runtime loop with the
scripted model: the assertions read the requests the model actually received
and the events the runtime actually appended."""

from __future__ import annotations

from planfold.adapters.runtime.machine import StepListener, TurnReport
from planfold.adapters.runtime.review import approve, keep_planning
from planfold.adapters.runtime.toolset import Session
from planfold.adapters.store.memory import MemoryStore
from planfold.kernel.plan.context import ViewRequest, runtime_phase
from planfold.kernel.plan.review import Dismissed
from planfold.kernel.session import fold_session
from tests.runtime_helpers import (
    FULL_MARK,
    SPEC_V2,
    SUMMARY_MARK,
    HookedModel,
    call,
    exit_plan,
    kinds,
    make_session,
    plan_actions,
    say,
    todo,
    verified,
)


def _turn(session: Session, text: str, view: ViewRequest | None = None) -> TurnReport:
    result = session.runtime.submit(text, view)
    assert isinstance(result, TurnReport)
    assert result.error is None, result.error
    return result


def _views(report: TurnReport) -> list[str]:
    return [p.view.view for p in report.requests]


def _approved_and_executing() -> tuple[Session, HookedModel]:
    """Plan mode, an approved plan, executed, verified and completed."""
    session, model, _ = make_session(
        [
            exit_plan(),
            call("write_file", {"path": "hello.txt", "content": "hello"}),
            todo("t1", "done"),
            say("written"),
            verified(True, "hello.txt says hello"),
            say("ok"),
            say("Nothing else."),
        ]
    )
    session.runtime.submit("/plan")
    report = _turn(session, "Plan a greeting")
    # plan mode (no plan yet), the new plan's first build request in full,
    # then the summary only, and nothing once the plan has completed
    assert _views(report) == ["none", "full", "summary", "summary", "summary", "none"]
    return session, model


def test_seed000_line10_plan_mode_with_a_plan_injects_the_summary_by_default() -> None:
    session, model, _ = make_session(
        [exit_plan(), say("I will wait for you."), say("Because the file is small.")],
        answers=[Dismissed()],  # the user closed the review to ask something
    )
    session.runtime.submit("/plan")
    _turn(session, "Plan a greeting")
    assert session.log.state.plan.status == "draft"
    follow_up = _turn(session, "Why only one step?")
    assert _views(follow_up) == ["summary"]
    system = model.inner.requests[-1].system_text
    assert SUMMARY_MARK in system
    assert FULL_MARK not in system
    assert session.log.state.plan_mode


def test_seed000_line11_plan_mode_injects_the_full_text_when_rewriting_or_summary_is_not_enough() -> None:
    session, model, _ = make_session(
        [exit_plan(), say("Noted."), say("Rewriting."), say("Looking closer.")],
        answers=[keep_planning("more detail")],
    )
    session.runtime.submit("/plan")
    _turn(session, "Plan a greeting")
    rewrite = session.runtime.submit("/plan Rewrite the plan: also document it")
    assert isinstance(rewrite, TurnReport)
    assert _views(rewrite) == ["full"]
    assert rewrite.requests[0].view.reason == "rewriting"
    assert FULL_MARK in model.inner.requests[-1].system_text
    insufficient = _turn(session, "Check the details", ViewRequest(summary_insufficient=True))
    assert [p.view.reason for p in insufficient.requests] == ["summary-insufficient"]
    assert FULL_MARK in model.inner.requests[-1].system_text


def test_seed000_line15_ordinary_execution_injects_only_the_summary() -> None:
    session, model = _approved_and_executing()
    requests = model.inner.requests
    # request 2 is the first build-mode request of the new plan (full, once);
    # every later execution and verify request carries the summary only.
    assert FULL_MARK in requests[1].system_text
    for request in requests[2:5]:
        assert SUMMARY_MARK in request.system_text
        assert FULL_MARK not in request.system_text
    later = _turn(session, "Anything else to do?")
    assert _views(later) == ["none"]  # the plan completed: nothing live to inject
    assert session.log.state.plan.status == "completed"


def _interrupt_after(steps: int) -> StepListener:
    """A listener for "the user interrupts": rejects the step after ``steps``."""
    return lambda p: "rejected" if p.step > steps else "accepted"


def test_seed000_line16_the_full_text_is_injected_again_under_the_specific_conditions() -> None:
    store = MemoryStore()
    read = {"path": "README.md"}
    session, model, _ = make_session(
        [exit_plan(), call("read_file", read), call("read_file", read), call("read_file", read)], store=store
    )
    session.runtime.step_listeners.append(_interrupt_after(2))
    session.runtime.submit("/plan")
    session.runtime.submit("Plan a greeting")
    # a new plan: the first build request carries the full text, once
    assert FULL_MARK in model.inner.requests[1].system_text
    session.runtime.step_listeners[:] = [_interrupt_after(1)]
    ordinary = session.runtime.submit("Go on")
    assert isinstance(ordinary, TurnReport)
    assert [p.view.reason for p in ordinary.requests] == ["default"]
    asked = session.runtime.submit("Show me the whole plan", ViewRequest(user_asked_full=True))
    assert isinstance(asked, TurnReport)
    assert [p.view.reason for p in asked.requests] == ["user-asked"]
    assert FULL_MARK in model.inner.requests[-1].system_text
    # a resume: a new process on the same log aligns with the full text first
    second, resumed_model, _ = make_session([call("read_file", read), call("read_file", read)], store=store)
    second.runtime.step_listeners.append(_interrupt_after(1))
    assert second.runtime.resumed
    report = second.runtime.submit("Where were we?")
    assert isinstance(report, TurnReport)
    assert [p.view.reason for p in report.requests] == ["resumed"]
    assert FULL_MARK in resumed_model.inner.requests[0].system_text
    again = second.runtime.submit("Next?")
    assert isinstance(again, TurnReport)
    assert [p.view.view for p in again.requests] == ["summary"]
    assert session.log.state.plan.status == "executing"


def test_seed000_line16_a_rewritten_plan_is_injected_in_full_at_its_first_build_request() -> None:
    session, model, _ = make_session(
        [exit_plan(), say("Ready."), exit_plan(SPEC_V2), todo(), say("Done."), verified(), say("Finished.")],
        answers=[keep_planning("hold on"), approve()],
    )
    session.runtime.submit("/plan")
    _turn(session, "Plan a greeting")
    report = _turn(session, "Add the README step and present it again")
    assert plan_actions(session.log.events)[-6:] == ["rewrite", "approve", "start", "todo", "verify", "complete"]
    reasons = [p.view.reason for p in report.requests]
    assert reasons == ["rewriting", "rewritten", "default", "default", "no-plan"]
    assert FULL_MARK in model.inner.requests[-4].system_text
    assert FULL_MARK not in model.inner.requests[-3].system_text


def test_seed000_line18_a_draft_plan_cannot_enter_normal_execution() -> None:
    session, model, _ = make_session(
        [
            exit_plan(),
            say("Revising."),
            call("write_file", {"path": "hello.txt", "content": "forged"}),
            say("I cannot write yet."),
        ],
        answers=[keep_planning("not yet")],
    )
    session.runtime.submit("/plan")
    _turn(session, "Plan a greeting")
    assert session.log.state.plan.status == "draft"
    assert session.runtime.submit("/plan off") == "committed"
    report = _turn(session, "Just do it")
    state = session.log.state
    assert state.plan.status == "draft"
    assert "start" not in plan_actions(session.log.events)
    assert runtime_phase(state) == "build_bootstrap"
    assert all(p.phase == "build_bootstrap" for p in report.requests)
    assert "write_file" not in model.inner.requests[-2].tool_names
    refused = [e for e in session.log.events if e.kind == "tool/refused"]
    assert refused and refused[-1].payload["tool"] == "write_file"
    assert session.workspace.writes == 0
    assert "hello.txt" not in session.workspace.files


def test_seed000_line19_a_rewrite_during_execution_aborts_it_and_requires_realignment() -> None:
    session, model, _ = make_session(
        [
            exit_plan(),  # turn 1: approved
            call("write_file", {"path": "hello.txt", "content": "hello"}),  # executing
            exit_plan(SPEC_V2),  # turn 2, plan mode: a substantive rewrite
            say("Rethinking."),
            call("write_file", {"path": "hello.txt", "content": "more"}),  # turn 3: refused
            say("Blocked until the plan is realigned."),
            exit_plan(SPEC_V2),  # turn 4: the same version goes back to review
            todo(),
            say("Back to work."),
            verified(),
            say("Finished."),
        ],
        answers=[approve(), keep_planning("first make it right"), approve()],
    )
    # the user interrupts turn 1 after the first write: its step 3 is rejected
    session.runtime.step_listeners.append(lambda p: "rejected" if (p.turn, p.step) == (1, 3) else "accepted")
    session.runtime.submit("/plan")
    interrupted = session.runtime.submit("Plan a greeting")
    assert isinstance(interrupted, TurnReport) and interrupted.ended_by == "step-rejected"
    assert session.log.state.plan.status == "executing"

    session.runtime.submit("/plan")
    _turn(session, "Change of plan: also mention it in README.md")
    state = session.log.state
    assert plan_actions(session.log.events)[-2:] == ["rewrite", "reject"]
    assert state.plan.current is not None and state.plan.current.revision == 2
    assert state.plan.status == "draft" and state.plan.approval is None
    assert state.plan.realign == "the plan was rewritten during execution"

    # leaving plan mode without a new approval does not resume execution
    session.runtime.submit("/plan off")
    blocked = _turn(session, "Carry on writing")
    assert runtime_phase(session.log.state) == "build_bootstrap"
    assert "Realignment needed" in blocked.requests[0].request.system_text
    assert [e.payload["tool"] for e in session.log.events if e.kind == "tool/refused"] == ["write_file"]
    assert session.workspace.files["hello.txt"] == "hello"

    # realigned: the new version is approved and only that version starts
    session.runtime.submit("/plan")
    _turn(session, "Present it again")
    actions = plan_actions(session.log.events)
    assert actions[-5:] == ["approve", "start", "todo", "verify", "complete"]
    start = [e for e in session.log.events if e.kind == "plan/artifact" and e.payload["action"] == "start"][-1]
    assert start.payload["revision"] == 2
    assert session.log.state.plan.realign is None
    assert model.inner.remaining == 0


def test_seed000_line20_after_execution_it_enters_verify_and_is_marked_completed() -> None:
    session, model, _ = make_session(
        [
            exit_plan(),
            call("write_file", {"path": "hello.txt", "content": "hello"}),
            todo("t1", "done"),
            say("written"),  # no todo open: execution ends here
            verified(True, "hello.txt says hello"),
            say("ok"),
        ]
    )
    session.runtime.submit("/plan")
    report = _turn(session, "Plan a greeting")
    events = session.log.events
    assert plan_actions(events) == ["draft", "approve", "start", "todo", "verify", "complete"]
    artifacts = {str(e.payload["action"]): e.seq for e in events if e.kind == "plan/artifact"}
    between = [e for e in events if artifacts["verify"] < e.seq < artifacts["complete"]]
    # exactly one more request was made, in the verify phase, and the model
    # reported the verification through the runtime-owned tool
    assert kinds(between) == ["request/header", "assistant/message", "tool/call"]
    assert between[-1].payload["tool"] == "report_verification"
    assert "report_verification" in model.inner.requests[4].tool_names
    assert "report_verification" not in model.inner.requests[3].tool_names
    phases = [p.phase for p in report.requests]
    assert phases == ["plan", "build_execute", "build_execute", "build_execute", "verify", "build_bootstrap"]
    assert session.log.state.plan.status == "completed"
    assert runtime_phase(session.log.state) == "build_bootstrap"  # nothing live any more
    assert fold_session(events) == session.log.state
    assert session.workspace.files["hello.txt"] == "hello"
