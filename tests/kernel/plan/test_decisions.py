"""One call per decision: what a runtime asks the plan machines and gets back."""

from __future__ import annotations

import json
from typing import Any

import pytest

from planfold.kernel.decisions import (
    decide_after_final_reply,
    decide_before_request,
    decide_plan_choice,
    decide_pre_step,
    decide_request_header,
    decide_review_answer,
    decide_tool_call,
    tool_error_text,
    tool_ok_text,
)
from planfold.kernel.errors import ReplayError
from planfold.kernel.log import (
    PLAN_ARTIFACT,
    PLAN_MODE,
    REQUEST_HEADER,
    TOOL_RESULT,
    TURN_START,
    USER_MESSAGE,
    Draft,
    number_drafts,
)
from planfold.kernel.payload import object_of
from planfold.kernel.plan.mode import NOTICE_SOURCE, PendingChoice
from planfold.kernel.plan.review import APPROVE, KEEP_PLANNING, Dismissed, Selected
from planfold.kernel.plan.spec_json import spec_to_json
from planfold.kernel.plan_events import verify_event
from planfold.kernel.session import SessionState, apply_session_event
from planfold.kernel.tools.spec import ToolCall
from tests.plan_helpers import GOOD_CANDIDATE, Session, drafted, executing, spec


def in_turn(s: Session) -> Session:
    """``s`` with a turn open (tool calls happen inside one)."""
    s.turn += 1
    s.raw(TURN_START, {"turn": s.turn})
    return s


def appended(s: Session, drafts: tuple[Draft, ...]) -> SessionState:
    """``drafts`` appended as the log would: numbered after the session, stamped later."""
    for event in number_drafts(drafts, s.state.last_seq, s.at()):
        s.add(event)
    return s.state


def exit_call(**arguments: Any) -> ToolCall:
    return ToolCall.of("c1", "exit_plan_mode", {"plan_spec": spec_to_json(spec()), **arguments})


def planning() -> Session:
    s = Session()
    s.mode(True)
    return in_turn(s)


def test_an_exit_plan_mode_call_records_the_draft_and_asks_for_a_review_of_that_exact_version() -> None:
    s = planning()
    decision = decide_tool_call(s.state, exit_call(), new_plan_id="p7", review_available=True)
    assert decision.result is None and decision.review is not None
    assert [d.kind for d in decision.drafts] == [PLAN_ARTIFACT]
    state = appended(s, decision.drafts)
    assert state.plan.current is not None and state.plan.current.ref == decision.review.ref
    assert decision.review.ref.plan_id == "p7" and decision.review.request.plan.startswith("# ")


def test_an_approval_records_approve_and_the_result_and_queues_the_silent_exit() -> None:
    s = planning()
    asked = decide_tool_call(s.state, exit_call(), new_plan_id="p1", review_available=True)
    assert asked.review is not None
    answered = decide_review_answer(appended(s, asked.drafts), asked.review, Selected((APPROVE,), "ship it"))
    assert [d.kind for d in answered.drafts] == [PLAN_ARTIFACT, TOOL_RESULT]
    assert answered.result.ok and json.loads(answered.result.output)["notes"] == "ship it"
    assert answered.exit is not None and answered.exit.silent and answered.exit.target is False
    assert appended(s, answered.drafts).plan.status == "approved"


def test_an_approval_answers_the_model_with_the_approved_version_and_the_users_notes() -> None:
    s = planning()
    asked = decide_tool_call(s.state, exit_call(), new_plan_id="p1", review_available=True)
    assert asked.review is not None
    answered = decide_review_answer(appended(s, asked.drafts), asked.review, Selected((APPROVE,), "ship it"))
    assert json.loads(answered.result.output) == {"approved": True, "plan_id": "p1", "revision": 1, "notes": "ship it"}
    assert answered.outcome.status == "approved" and answered.outcome.feedback == "ship it"


def test_an_approval_the_plan_refuses_fails_the_call_records_only_the_result_and_keeps_the_outcome() -> None:
    s = planning()
    asked = decide_tool_call(s.state, exit_call(), new_plan_id="p1", review_available=True)
    assert asked.review is not None
    # The draft was never appended, so there is no plan version to approve.
    answered = decide_review_answer(s.state, asked.review, Selected((APPROVE,)))
    assert not answered.result.ok and answered.exit is None
    assert json.loads(answered.result.output)["error"]["code"] == "transition-not-allowed"
    assert [(d.kind, d.payload["ok"], d.payload["output"]) for d in answered.drafts] == [
        (TOOL_RESULT, False, answered.result.output)
    ]
    assert answered.outcome.status == "approved"


def test_keep_planning_records_the_rejection_and_any_other_answer_records_nothing() -> None:
    s = planning()
    asked = decide_tool_call(s.state, exit_call(), new_plan_id="p1", review_available=True)
    assert asked.review is not None
    state = appended(s, asked.drafts)
    kept = decide_review_answer(state, asked.review, Selected((KEEP_PLANNING,), "split step two"))
    assert [d.kind for d in kept.drafts] == [PLAN_ARTIFACT, TOOL_RESULT] and kept.exit is None
    assert not kept.result.ok and json.loads(kept.result.output)["error"]["code"] == "keep-planning"
    dismissed = decide_review_answer(state, asked.review, Dismissed())
    assert [d.kind for d in dismissed.drafts] == [TOOL_RESULT] and not dismissed.result.ok


def test_the_models_mistakes_are_a_failed_result_never_raised_and_record_nothing_else() -> None:
    outside = decide_tool_call(SessionState(), exit_call(), new_plan_id="p1", review_available=True)
    unreviewed = decide_tool_call(planning().state, exit_call(), new_plan_id="p1", review_available=False)
    bad = decide_tool_call(planning().state, exit_call(extra=1), new_plan_id="p1", review_available=True)
    unknown = decide_tool_call(SessionState(), ToolCall.of("c9", "nope", {}), new_plan_id="", review_available=True)
    codes = []
    for decision in (outside, unreviewed, bad, unknown):
        assert decision.review is None and decision.result is not None and not decision.result.ok
        assert [d.kind for d in decision.drafts] == [TOOL_RESULT]
        assert decision.drafts[-1].payload["output"] == decision.result.output
        codes.append(json.loads(decision.result.output)["error"]["code"])
    assert codes == ["not-in-plan-mode", "no-review-channel", "invalid-plan-spec", "no-runtime-handler"]
    assert json.loads(bad.result.output)["error"]["problems"]  # type: ignore[union-attr]


def test_a_refused_call_tells_the_model_the_refusals_code_and_message_and_each_problem_in_full() -> None:
    arguments: dict[str, Any] = {"plan_spec": {**spec_to_json(spec()), "steps": []}, "extra": 1}
    bad = decide_tool_call(
        planning().state, ToolCall.of("c1", "exit_plan_mode", arguments), new_plan_id="p1", review_available=True
    )
    assert bad.result is not None and json.loads(bad.result.output) == {
        "error": {
            "code": "invalid-plan-spec",
            "message": "the plan is not a valid PlanSpec: arguments.extra: is not a known field;"
            " arguments.plan_spec.steps: steps must not be empty",
            "problems": [
                {"code": "unexpected-field", "where": "arguments.extra", "message": "is not a known field"},
                {"code": "no-steps", "where": "arguments.plan_spec.steps", "message": "steps must not be empty"},
            ],
        }
    }
    outside = decide_tool_call(SessionState(), exit_call(), new_plan_id="p1", review_available=True)
    assert outside.result is not None and json.loads(outside.result.output) == {
        "error": {
            "code": "not-in-plan-mode",
            "message": "exit_plan_mode was called outside plan mode; there is nothing to exit",
        }
    }


def test_runtime_tool_arguments_that_are_not_an_object_fail_the_call_with_one_bad_json_problem() -> None:
    s = in_turn(executing())
    decision = decide_tool_call(
        s.state, ToolCall.parse("c6", "update_todo", '["t1", "done"]'), new_plan_id="", review_available=False
    )
    assert [d.kind for d in decision.drafts] == [TOOL_RESULT]
    assert decision.result is not None and json.loads(decision.result.output) == {
        "error": {
            "code": "invalid-tool-arguments",
            "message": "update_todo was called with bad arguments:"
            " arguments: the arguments did not decode to an object",
            "problems": [
                {"code": "bad-json", "where": "arguments", "message": "the arguments did not decode to an object"}
            ],
        }
    }


def test_a_tool_the_runtime_does_not_own_fails_the_call_naming_the_tool() -> None:
    decision = decide_tool_call(
        SessionState(), ToolCall.of("c7", "write_file", {}), new_plan_id="", review_available=False
    )
    assert decision.result is not None and json.loads(decision.result.output) == {
        "error": {"code": "no-runtime-handler", "message": "the runtime does not handle write_file"}
    }


def test_a_todo_update_is_recorded_and_answered_in_one_call() -> None:
    s = in_turn(executing())
    call = ToolCall.of("c2", "update_todo", {"todo_id": "t1", "status": "done"})
    decision = decide_tool_call(s.state, call, new_plan_id="", review_available=False)
    assert [d.kind for d in decision.drafts] == [PLAN_ARTIFACT, TOOL_RESULT]
    assert decision.result is not None and decision.result.ok
    assert json.loads(decision.result.output)["open_todos"] == ["t2"]
    state = appended(s, decision.drafts)
    assert state.plan.current is not None and state.plan.current.spec.todos[0].status == "done"


def test_a_bootstrap_plan_call_records_the_implicit_plan_with_the_models_summary_and_says_where_it_stands() -> None:
    s = in_turn(Session())  # build mode, no plan yet: the bootstrap phase
    arguments = {"plan_spec": spec_to_json(spec()), "summary_candidate": GOOD_CANDIDATE}
    call = ToolCall.of("c3", "bootstrap_plan", arguments)
    decision = decide_tool_call(s.state, call, new_plan_id="p5", review_available=False)
    assert [d.kind for d in decision.drafts] == [PLAN_ARTIFACT, TOOL_RESULT] and decision.review is None
    assert decision.result is not None and decision.result.ok
    assert decision.drafts[-1].payload["ok"] is True
    state = appended(s, decision.drafts)
    plan = state.plan.current
    assert plan is not None and (plan.id, plan.revision, plan.spec) == ("p5", 1, spec())
    assert json.loads(decision.result.output) == {
        "plan_id": "p5",
        "revision": 1,
        "status": plan.status,
        "next": "the plan starts executing with your next step",
    }
    # The model's summary candidate is adopted, not replaced by the runtime's own.
    assert state.plan.summary_source == "model" and plan.summary.goal == GOOD_CANDIDATE["goal"]


def verifying() -> Session:
    """A turn open on ``executing()`` in its verify phase."""
    s = executing()
    s.add(verify_event(s.state))
    return in_turn(s)


def test_a_verification_report_says_where_the_plan_stands_and_what_to_do_next_only_when_it_failed() -> None:
    s = verifying()
    failed = ToolCall.of("c4", "report_verification", {"passed": False, "notes": "the export test fails"})
    decision = decide_tool_call(s.state, failed, new_plan_id="", review_available=False)
    assert decision.result is not None and decision.result.ok
    state = appended(s, decision.drafts)
    assert state.plan.current is not None
    assert json.loads(decision.result.output) == {
        "passed": False,
        "plan_id": "p1",
        "status": state.plan.current.status,
        "next": "execution continues: fix what failed, then stop again to verify",
    }
    s = verifying()
    passed = ToolCall.of("c5", "report_verification", {"passed": True})
    decision = decide_tool_call(s.state, passed, new_plan_id="", review_available=False)
    assert decision.result is not None and decision.result.ok
    state = appended(s, decision.drafts)
    assert state.plan.current is not None
    assert json.loads(decision.result.output) == {"passed": True, "plan_id": "p1", "status": state.plan.current.status}


def test_the_texts_the_model_reads_are_json_with_sorted_keys_and_an_error_keeps_its_text_unescaped() -> None:
    assert tool_ok_text({"status": "executing", "approved": True}) == '{"approved": true, "status": "executing"}'
    assert (
        tool_error_text("no-such-tool", "outil inconnu : café", action="retry")
        == '{"error": {"action": "retry", "code": "no-such-tool", "message": "outil inconnu : café"}}'
    )


def test_around_requests_an_approved_plan_starts_and_a_finished_execution_verifies() -> None:
    s = drafted()
    assert decide_before_request(s.state) == ()  # a draft never starts
    s = in_turn(executing())
    assert decide_before_request(s.state) == ()  # already executing
    assert decide_after_final_reply(s.state) == ()  # todos still open
    for todo in ("t1", "t2"):
        call = ToolCall.of("c", "update_todo", {"todo_id": todo, "status": "done"})
        appended(s, decide_tool_call(s.state, call, new_plan_id="", review_available=False).drafts)
    (verify,) = decide_after_final_reply(s.state)
    assert verify.kind == PLAN_ARTIFACT and appended(s, (verify,)).plan.verifying


def test_an_accepted_pre_step_records_the_waiting_choice_with_a_notice_worded_from_the_plans_status() -> None:
    s = executing()
    s.mode(True)
    s.request()  # a plan-mode request was answered: leaving plan mode now owes a notice
    in_turn(s)
    flush = decide_pre_step(s.state, s.log, PendingChoice(False), "accepted")
    assert [(d.kind, d.payload) for d in flush.drafts] == [
        (PLAN_MODE, {"active": False}),
        (
            USER_MESSAGE,
            {"text": "Plan mode is now off: continue the plan that is executing.", "source": object_of(NOTICE_SOURCE)},
        ),
    ]
    assert (flush.pending_after_success, flush.pending_after_failure) == (None, PendingChoice(False))


def test_a_waiting_choice_equal_to_the_recorded_mode_is_dropped_at_the_pre_step_without_appending() -> None:
    for recorded in (True, False):
        s = Session()
        s.mode(recorded)
        in_turn(s)
        flush = decide_pre_step(s.state, s.log, PendingChoice(recorded), "accepted")
        assert (flush.drafts, flush.pending_after_success, flush.pending_after_failure) == ((), None, None)
        other = decide_pre_step(s.state, s.log, PendingChoice(not recorded), "accepted")
        assert [d.payload for d in other.drafts][:1] == [{"active": not recorded}]


def test_a_request_header_records_the_open_turns_step_and_mode_and_needs_an_open_turn() -> None:
    s = in_turn(Session())  # the log is that turn's start alone
    header = decide_request_header(s.state, 1)
    assert (header.kind, header.payload) == (REQUEST_HEADER, {"turn": 1, "step": 1, "plan_mode": False})
    with pytest.raises(ReplayError) as refused:
        decide_request_header(SessionState(), 1)
    assert (refused.value.rule, refused.value.position) == ("transition-not-allowed", 1)


def test_a_plan_mode_choice_between_turns_is_recorded_now_and_in_a_turn_it_waits() -> None:
    s = Session()
    now = decide_plan_choice(s.state, s.log, None, True)
    assert (now.outcome, now.pending, [d.kind for d in now.drafts]) == ("committed", None, ["plan/mode"])
    waiting = decide_plan_choice(s.state, s.log, None, True, tool_running=True)
    assert (waiting.outcome, waiting.drafts) == ("queued", ())
    assert waiting.pending is not None and waiting.pending.target is True
    assert apply_session_event(s.state, number_drafts(now.drafts, 0, 1)[0]).plan_mode
