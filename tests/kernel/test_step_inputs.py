"""The turn reducer's answer to one input at a time: the refusals name the
stages that take the input, an append failure the process did not ask for
is refused, a failed flush goes on as a step of the recorded state, a model
failure leaves the step's spent retries in the process, a dispatched call
returns what the log tells the model, and the log a transition reads while
it appends is the log followed by its events."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planfold.adapters.runtime.review import keep_planning
from planfold.adapters.runtime.toolset import default_registry
from planfold.kernel import step
from planfold.kernel.errors import ReplayError
from planfold.kernel.log import (
    PLAN_ARTIFACT,
    REQUEST_HEADER,
    TOOL_RESULT,
    TURN_END,
    USER_MESSAGE,
    Event,
    number_drafts,
    read_message,
    turn_start,
    user_message,
)
from planfold.kernel.payload import JSON, MAX_SAFE_INTEGER
from planfold.kernel.plan.context import ViewRequest
from planfold.kernel.plan.mode import PendingChoice, StepVerdict
from planfold.kernel.plan.payload import read_plan_action
from planfold.kernel.plan.scope import Effect
from planfold.kernel.session import SessionState, fold_session
from planfold.kernel.tools.events import read_tool_notice, read_tool_result
from planfold.kernel.tools.spec import ToolCall
from planfold.kernel.turn import Reply
from tests.runtime_helpers import SPEC, SUMMARY

CONFIG = step.TurnConfig(default_registry(), max_steps=4, max_tool_calls=4, step_retries=1)

#: Ten events of two turns, to split into a log and what a transition appends.
EVENTS: tuple[Event, ...] = number_drafts(
    [d for turn in (1, 2) for d in (turn_start(turn), *(user_message(f"{turn}.{i}") for i in range(4)))], 0, 5
)


def _open_turn_log() -> step.Log:
    """A log whose turn 1 a process that stopped left open."""
    events = number_drafts([turn_start(1), user_message("go")], 0, 10)
    return step.Log(fold_session(events), events)


def test_an_input_that_two_stages_take_is_refused_elsewhere_with_both_named() -> None:
    log = step.Log(SessionState(), ())
    process = step.Process.opened(CONFIG, log)
    with pytest.raises(step.StageError) as refused:
        step.advance(process, log, step.EndTurn(1))
    assert refused.value.message == "turn/end needs the session at turn or step, but it is at idle"
    assert (refused.value.code, refused.value.stage) == ("out-of-order", "idle")


def test_an_answer_to_a_call_out_of_its_stage_is_refused_naming_the_call() -> None:
    log = step.Log(SessionState(), ())
    with pytest.raises(step.StageError) as refused:
        step.advance(step.Process.opened(CONFIG, log), log, step.ToolDone("c7", True, "x", 1))
    assert refused.value.message == "answering call 'c7' needs the session at execute, but it is at idle"


def test_an_input_with_no_name_of_its_own_in_refusals_is_refused_under_its_input_name() -> None:
    log = step.Log(SessionState(), ())
    with pytest.raises(step.StageError) as refused:
        step.advance(step.Process.opened(CONFIG, log), log, step.StepVerdictIn("accepted", 1))
    assert refused.value.message == "step-verdict needs the session at turn, but it is at idle"


def test_a_process_opened_on_a_log_with_any_event_is_resumed_and_on_an_empty_one_is_not() -> None:
    empty = step.Log(SessionState(), ())
    assert step.Process.opened(CONFIG, empty).resumed is False
    events = number_drafts([turn_start(1)], 0, 1)
    assert step.Process.opened(CONFIG, step.Log(fold_session(events), events)).resumed is True


@pytest.mark.parametrize(
    ("purpose", "detail"),
    [
        ("resolve", ()),
        ("other", (step.BeginStep(1, "accepted", 2),)),
        ("flush", ()),
        ("flush", ("not a step",)),
        ("flush", (step.BeginStep(1, "accepted", 2), step.BeginStep(2, "accepted", 2))),
    ],
)
def test_an_append_failure_the_process_did_not_ask_for_is_refused(purpose: str, detail: tuple[object, ...]) -> None:
    log = _open_turn_log()
    process = step.Process.opened(CONFIG, log)
    with pytest.raises(step.StageError) as refused:
        step.advance(process, log, step.AppendFailed(purpose, 20, detail))
    assert refused.value.message == f"no append of {purpose!r} can fail here"
    assert (refused.value.code, refused.value.stage) == ("out-of-order", "turn")


def test_a_failed_flush_in_a_turn_a_stopped_process_left_open_goes_on_without_a_tally() -> None:
    log = _open_turn_log()
    process = step.Process.opened(CONFIG, log)
    assert process.tally is None and step.stage_of(process, log) == "turn"
    # The step said it had flushed; the flush failed, so the step reports none.
    failed = step.BeginStep(1, "accepted", 20, flushed=True)
    moved = step.advance(process, log, step.AppendFailed("flush", 20, (failed,)))
    assert moved.process.tally is None and moved.process.step_open
    header, result = moved.actions
    assert isinstance(header, step.Append) and [e.kind for e in header.events] == [REQUEST_HEADER]
    assert result == step.Result(step.StepBegun(True, False, False, header.events[0].seq))


def test_a_failed_flush_counts_in_the_tally_of_the_turn_this_process_opened() -> None:
    log = step.Log(SessionState(), ())
    process = step.Process.opened(CONFIG, log)
    opened = step.advance(process, log, step.StartTurn("go", None, ViewRequest(), 1))
    (append, _) = opened.actions
    assert isinstance(append, step.Append)
    log = step.Log(append.state, append.events)
    moved = step.advance(opened.process, log, step.AppendFailed("flush", 2, (step.BeginStep(1, "accepted", 2),)))
    assert moved.process.tally is not None and moved.process.tally.flush_failures == 1
    assert moved.process.tally.steps == 0


@given(st.integers(0, len(EVENTS)), st.data())
def test_the_log_a_transition_reads_is_the_log_then_its_events(split: int, data: st.DataObject) -> None:
    whole = EVENTS
    joined = step._Joined(whole[:split], whole[split:])
    assert len(joined) == len(whole)
    assert list(joined) == list(whole)
    index = data.draw(st.integers(-len(whole) - 2, len(whole) + 2))
    if -len(whole) <= index < len(whole):
        assert joined[index] == whole[index]
    else:
        with pytest.raises(IndexError):
            joined[index]
    part = data.draw(st.slices(len(whole)))
    assert joined[part] == whole[part]


def _in_step(log: step.Log) -> step.Process:
    """A process at the step stage of the turn ``log`` holds open."""
    process = step.Process.opened(CONFIG, log)
    begun = step.advance(process, log, step.BeginStep(1, "accepted", 20, flushed=False))
    (header, _) = begun.actions
    assert isinstance(header, step.Append)
    return begun.process


def test_a_model_failure_that_ends_the_turn_keeps_the_retries_the_step_spent() -> None:
    log = _open_turn_log()
    process = _in_step(log)
    failed = step.advance(process, log, step.ModelFailed("model-timeout", "slow", None, retries_used=1))
    assert failed.actions == (step.Result(False),)
    assert failed.process.retries_used == 1 and failed.process.follow == "end"


def test_a_retried_model_failure_in_a_turn_a_stopped_process_left_open_has_no_tally_to_count_in() -> None:
    log = _open_turn_log()
    process = _in_step(log)
    assert process.tally is None
    failed = step.advance(process, log, step.ModelFailed("model-timeout", "slow", None))
    assert failed.actions == (step.Result(True),)
    assert failed.process.tally is None
    assert (failed.process.attempt, failed.process.retries_used, failed.process.requests) == (1, 1, 1)


def test_an_abandoned_process_keeps_its_deployment_the_pending_choice_and_the_request_count() -> None:
    log = _open_turn_log()
    process = step.Process.opened(CONFIG, log)
    assert process.resumed
    process = step.advance(process, log, step.Choose(True, 20)).process
    process = step.advance(process, log, step.BeginStep(1, "accepted", 21, flushed=False)).process
    process = step.advance(process, log, step.Asked()).process
    assert step.stage_of(process, log) == "step" and process.requests == 1
    abandoned = process.abandoned()
    assert abandoned.config is CONFIG and abandoned.resumed is True
    assert abandoned.pending == PendingChoice(True) and abandoned.requests == 1
    assert step.stage_of(abandoned, log) == "turn" and not abandoned.turn_mine and not abandoned.asked


class _Driver:
    """Feeds the reducer as a driver does whose appends all succeed."""

    def __init__(self) -> None:
        self.log = step.Log(SessionState(), ())
        self.process = step.Process.opened(CONFIG, self.log)

    def feed(self, event: step.Input) -> list[step.Action]:
        moved = step.advance(self.process, self.log, event)
        self.process = moved.process
        left: list[step.Action] = []
        for action in moved.actions:
            if isinstance(action, step.Append):
                self.log = step.Log(action.state, (*self.log.events, *action.events))
            elif isinstance(action, step.Then):
                left += self.feed(action.event)
            else:
                left.append(action)
        return left


def test_a_dispatched_call_returns_what_the_log_tells_the_model() -> None:
    driver = _Driver()
    driver.feed(step.StartTurn("go", None, ViewRequest(), 1))
    driver.feed(step.BeginStep(1, "accepted", 2))
    plan: dict[str, JSON] = {"plan_spec": dict(SPEC), "summary_candidate": dict(SUMMARY)}
    write: dict[str, JSON] = {"path": "b", "content": "x"}
    calls = (ToolCall("c1", "write_file", "{}", write), ToolCall("c2", "bootstrap_plan", "{}", plan))
    driver.feed(step.ReplyIn(Reply(None, calls, "tool_calls"), 3))
    # The gate refused write_file (not offered before a plan): the model is
    # told the refusal's code, reason, hint and phase.
    (refused,) = driver.feed(step.Dispatch("c1", 4))
    notice = read_tool_notice(driver.log.events[-1].payload)
    assert notice.hint is not None
    assert isinstance(refused, step.Result) and isinstance(refused.value, step.DispatchResult)
    answer = refused.value
    assert (answer.call, answer.action, answer.ok, answer.review) == (calls[0], "refused", False, None)
    error = {"code": notice.code, "message": notice.reason, "hint": notice.hint, "phase": notice.phase, "refused": True}
    assert answer.output is not None and json.loads(answer.output) == {"error": error}
    # The runtime answered bootstrap_plan itself: its tool/result is the answer.
    (done,) = driver.feed(step.Dispatch("c2", 5))
    result = read_tool_result(driver.log.events[-1].payload)
    assert result.ok
    assert done == step.Result(step.DispatchResult(calls[1], "done", True, result.output))
    # The plan it made is named after the seq of the event that made it.
    (made,) = [event for event in driver.log.events if event.kind == PLAN_ARTIFACT]
    assert json.loads(result.output)["plan_id"] == f"plan-{made.seq}"


def test_a_review_answer_keeps_a_choice_made_meanwhile_and_then_owes_the_notices_after_the_calls() -> None:
    driver = _Driver()
    driver.process = step.Process.opened(step.TurnConfig(default_registry(), max_tool_calls=1), driver.log)
    driver.feed(step.StartTurn("go", None, ViewRequest(), 1))
    driver.feed(step.Choose(True, 2))
    driver.feed(step.BeginStep(1, "accepted", 3))  # the flush records plan mode
    assert driver.log.state.plan_mode
    driver.feed(step.Choose(False, 4))  # waits for the next pre-step
    plan: dict[str, JSON] = {"plan_spec": dict(SPEC), "summary_candidate": dict(SUMMARY)}
    calls = (ToolCall("c1", "exit_plan_mode", "{}", plan), ToolCall("c2", "read_file", "{}", {"path": "a"}))
    driver.feed(step.ReplyIn(Reply(None, calls, "tool_calls"), 5))  # only the first call is taken
    (review,) = driver.feed(step.Dispatch("c1", 6))
    assert isinstance(review, step.Result) and isinstance(review.value, step.DispatchResult)
    assert review.value.action == "review"
    answered = len(driver.log.events)
    driver.feed(step.ReviewAnswered("c1", keep_planning("more detail"), 7))
    assert driver.process.pending == PendingChoice(False)
    assert driver.process.review is None and driver.process.current is None
    kinds = [event.kind for event in driver.log.events[answered:]]
    assert kinds[-2:] == [TOOL_RESULT, USER_MESSAGE]
    assert "only the first 1 were taken" in read_message(driver.log.events[-1].payload).text


def test_a_call_whose_effects_land_outside_the_plans_scope_runs_nothing_and_is_answered() -> None:
    driver = _Driver()
    driver.feed(step.StartTurn("go", None, ViewRequest(), 1))
    driver.feed(step.BeginStep(1, "accepted", 2))
    spec: dict[str, JSON] = {**SPEC, "scope": {"paths": ["hello.txt"], "effects": ["write"]}}
    plan: dict[str, JSON] = {"plan_spec": spec, "summary_candidate": dict(SUMMARY)}
    driver.feed(step.ReplyIn(Reply(None, (ToolCall("c1", "bootstrap_plan", "{}", plan),), "tool_calls"), 3))
    driver.feed(step.Dispatch("c1", 4))
    driver.feed(step.BeginStep(2, "accepted", 5))  # the plan executes
    write = ToolCall("c2", "write_file", "{}", {"path": "other.txt", "content": "x"})
    driver.feed(step.ReplyIn(Reply(None, (write,), "tool_calls"), 6))
    assert driver.feed(step.Dispatch("c2", 7)) == [step.ResolvePaths(write)]
    (answered,) = driver.feed(step.Resolved("c2", (Effect("write", "other.txt"),), 8))
    result = read_tool_result(driver.log.events[-1].payload)
    assert not result.ok and json.loads(result.output)["error"]["code"] == "outside-plan-scope"
    assert answered == step.Result(step.DispatchResult(write, "done", False, result.output))
    assert driver.process.current is None and step.stage_of(driver.process, driver.log) == "turn"


def test_a_plan_an_earlier_call_of_the_reply_made_starts_before_the_next_call_runs() -> None:
    driver = _Driver()
    driver.feed(step.StartTurn("go", None, ViewRequest(), 1))
    driver.feed(step.BeginStep(1, "accepted", 2))
    plan: dict[str, JSON] = {"plan_spec": dict(SPEC), "summary_candidate": dict(SUMMARY)}
    read = ToolCall("c2", "read_file", "{}", {"path": "hello.txt"})
    driver.feed(step.ReplyIn(Reply(None, (ToolCall("c1", "bootstrap_plan", "{}", plan), read), "tool_calls"), 3))
    driver.feed(step.Dispatch("c1", 4))
    before = len(driver.log.events)
    assert driver.feed(step.Dispatch("c2", 5)) == [step.ResolvePaths(read)]
    (start,) = driver.log.events[before:]
    assert start.kind == PLAN_ARTIFACT and read_plan_action(start.payload).action == "start"


def _refused_as_unexpected(driver: _Driver, event: step.Input, stage: step.Stage) -> None:
    before = (driver.process, driver.log)
    with pytest.raises(step.StageError) as refused:
        driver.feed(event)
    assert refused.value.message == f"call 'c1' is answered next, not {event.call_id!r}"  # type: ignore[union-attr]
    assert (refused.value.code, refused.value.stage) == ("unexpected-call", stage)
    assert (driver.process, driver.log) == before


def test_answering_a_call_other_than_the_next_is_refused_at_every_stage_and_names_the_next() -> None:
    driver = _Driver()
    driver.feed(step.StartTurn("go", None, ViewRequest(), 1))
    driver.feed(step.BeginStep(1, "accepted", 2))
    read = ToolCall("c1", "read_file", "{}", {"path": "hello.txt"})
    driver.feed(step.ReplyIn(Reply(None, (read,), "tool_calls"), 3))
    _refused_as_unexpected(driver, step.Dispatch("c9", 4), "calls")
    driver.feed(step.Dispatch("c1", 4))
    _refused_as_unexpected(driver, step.Resolved("c9", (), 5), "resolve")
    driver.feed(step.Resolved("c1", (Effect("read", "hello.txt"),), 5))
    assert step.stage_of(driver.process, driver.log) == "execute"
    _refused_as_unexpected(driver, step.ToolDone("c9", True, "x", 6), "execute")


def test_a_review_answer_for_another_call_is_refused_at_the_review_and_names_the_call_under_review() -> None:
    driver = _Driver()
    driver.feed(step.StartTurn("go", None, ViewRequest(), 1))
    driver.feed(step.Choose(True, 2))
    driver.feed(step.BeginStep(1, "accepted", 3))
    plan: dict[str, JSON] = {"plan_spec": dict(SPEC), "summary_candidate": dict(SUMMARY)}
    driver.feed(step.ReplyIn(Reply(None, (ToolCall("c1", "exit_plan_mode", "{}", plan),), "tool_calls"), 4))
    driver.feed(step.Dispatch("c1", 5))
    _refused_as_unexpected(driver, step.ReviewAnswered("c9", keep_planning("no"), 6), "review")


def test_a_reply_after_a_retry_starts_the_next_step_at_its_first_attempt_with_its_whole_retry_budget() -> None:
    driver = _Driver()
    driver.feed(step.StartTurn("go", None, ViewRequest(), 1))
    driver.feed(step.BeginStep(1, "accepted", 2))
    assert driver.feed(step.ModelFailed("model-timeout", "slow", None, retries_used=0)) == [step.Result(True)]
    assert (driver.process.attempt, driver.process.retries_used) == (1, 1)
    # the retried attempt: the reducer asks to propose it as attempt 1 of step 1
    (again,) = driver.feed(step.Next(3))
    assert isinstance(again, step.ProposeStep) and (again.step.step, again.step.attempt) == (1, 1)
    driver.feed(step.StepVerdictIn("accepted", 4))
    read = ToolCall("c1", "read_file", '{"path": "a"}', {"path": "a"})
    driver.feed(step.ReplyIn(Reply(None, (read,), "tool_calls"), 5))
    driver.feed(step.Dispatch("c1", 6))
    driver.feed(step.Resolved("c1", (), 7))
    driver.feed(step.ToolDone("c1", True, "text", 8))
    # the next step is proposed as attempt 0 and asks the model with no retry spent
    (proposed,) = driver.feed(step.Next(9))
    assert isinstance(proposed, step.ProposeStep) and (proposed.step.step, proposed.step.attempt) == (2, 0)
    driver.feed(step.StepVerdictIn("accepted", 10))
    (ask,) = driver.feed(step.Next(11))
    assert isinstance(ask, step.AskModel) and (ask.step, ask.attempt, ask.retries_used) == (2, 0, 0)
    # so the new step's own failure is retried within its budget
    assert driver.feed(step.ModelFailed("model-timeout", "slow", None, retries_used=0)) == [step.Result(True)]


def test_a_finished_turns_tally_ends_at_the_seq_of_its_turn_end() -> None:
    driver = _Driver()
    driver.feed(step.StartTurn("go", None, ViewRequest(), 1))
    driver.feed(step.BeginStep(1, "accepted", 2))
    driver.feed(step.ReplyIn(Reply("done", (), "stop"), 3))
    (over,) = driver.feed(step.Next(4))
    assert isinstance(over, step.TurnOver)
    assert driver.log.events[-1].kind == TURN_END
    assert over.tally.last_seq == driver.log.events[-1].seq == driver.log.state.last_seq
    assert (over.tally.first_seq, over.tally.reply, over.tally.ended_by) == (1, "done", "reply")


def test_asking_what_comes_next_before_any_turn_is_refused_as_no_turn_started() -> None:
    driver = _Driver()
    with pytest.raises(step.StageError) as refused:
        driver.feed(step.Next(1))
    assert (refused.value.message, refused.value.stage) == ("no turn was started", "idle")


def test_asking_what_comes_next_in_a_turn_a_stopped_process_left_open_says_to_start_a_turn() -> None:
    log = _open_turn_log()
    with pytest.raises(step.StageError) as refused:
        step.advance(step.Process.opened(CONFIG, log), log, step.Next(20))
    message = "the open turn was left by a process that stopped; start a turn"
    assert (refused.value.message, refused.value.stage) == (message, "turn")


def test_a_model_that_keeps_calling_tools_gets_exactly_max_steps_steps_and_the_turn_ends_by_max_steps() -> None:
    driver = _Driver()
    driver.feed(step.StartTurn("go", None, ViewRequest(), 1))
    asked = 0
    over: step.Tally | None = None
    for at in range(2, 100):
        for action in driver.feed(step.Next(at)):
            if isinstance(action, step.ProposeStep):
                driver.feed(step.StepVerdictIn("accepted", at))
            elif isinstance(action, step.AskModel):
                asked += 1
                call = ToolCall(f"c{asked}", "no_such_tool", "{}", {})  # refused by the gate: nothing runs
                driver.feed(step.ReplyIn(Reply(None, (call,), "tool_calls"), at))
            elif isinstance(action, step.TurnOver):
                over = action.tally
        if over is not None:
            break
    assert over is not None and asked == CONFIG.max_steps == 4
    assert (over.steps, over.ended_by) == (4, "max-steps")


def test_a_turn_ended_mid_step_leaves_a_process_that_owns_no_turn_and_reports_the_tally_up_to_the_turn_end() -> None:
    driver = _Driver()
    driver.feed(step.StartTurn("go", None, ViewRequest(), 1))
    driver.feed(step.BeginStep(1, "accepted", 2))
    driver.feed(step.Next(3))
    driver.feed(step.Asked())  # the request was handed to the model
    assert step.stage_of(driver.process, driver.log) == "step" and driver.process.asked
    (result,) = driver.feed(step.EndTurn(4))
    ended = driver.process
    assert driver.log.events[-1].kind == TURN_END
    assert isinstance(result, step.Result) and isinstance(result.value, step.Tally)
    assert result.value.last_seq == driver.log.state.last_seq and result.value.steps == 1
    assert ended.over == result.value and ended.tally is None
    assert ended.step_open is False and ended.asked is False and ended.turn_mine is False
    assert step.stage_of(ended, driver.log) == "idle"


def _pending_in_turn() -> _Driver:
    """A driver in an open turn with a plan-mode choice waiting for the next pre-step."""
    driver = _Driver()
    driver.feed(step.StartTurn("go", None, ViewRequest(), 100))
    driver.feed(step.Choose(True, 101))
    assert driver.process.pending == PendingChoice(True)
    return driver


def test_a_step_whose_request_header_the_log_would_refuse_is_refused_before_its_flush_is_written() -> None:
    driver = _pending_in_turn()
    with pytest.raises(ReplayError) as refused:
        step.advance(driver.process, driver.log, step.BeginStep(5, "accepted", 102))
    assert (refused.value.rule, refused.value.position) == ("transition-not-allowed", 3)


def test_a_step_at_a_time_the_log_cannot_hold_is_refused_as_malformed_and_nothing_is_written() -> None:
    driver = _pending_in_turn()
    before = (driver.process, driver.log)
    with pytest.raises(ReplayError) as refused:
        driver.feed(step.BeginStep(1, "accepted", MAX_SAFE_INTEGER + 1))
    assert refused.value.rule == "malformed-payload" and "largest safe integer" in refused.value.detail
    assert (driver.process, driver.log) == before


def test_a_request_handed_out_twice_is_counted_once() -> None:
    driver = _Driver()
    driver.feed(step.StartTurn("go", None, ViewRequest(), 1))
    driver.feed(step.BeginStep(1, "accepted", 2))
    driver.feed(step.Next(3))
    assert driver.feed(step.Asked()) == []
    once = driver.process
    assert driver.feed(step.Asked()) == [] and driver.process == once
    assert once.requests == 1 and once.tally is not None and once.tally.steps == 1


def test_the_request_is_derived_from_the_state_its_header_describes_with_the_phase_and_tools_on_offer() -> None:
    driver = _pending_in_turn()
    driver.feed(step.BeginStep(1, "accepted", 102))
    (ask,) = driver.feed(step.Next(103))
    assert isinstance(ask, step.AskModel)
    header = driver.log.events[-1]
    assert header.kind == REQUEST_HEADER and ask.basis.state.last_seq == header.seq - 1
    assert ask.basis.state.plan_mode and ask.basis.phase == "plan"
    assert "exit_plan_mode" in ask.basis.offered and "write_file" not in ask.basis.offered


def test_a_step_a_host_begins_reports_whether_the_pending_choice_was_recorded_and_the_headers_seq() -> None:
    driver = _pending_in_turn()
    (begun,) = driver.feed(step.BeginStep(1, "accepted", 102))
    kinds = [event.kind for event in driver.log.events[2:]]
    assert kinds[0] == "plan/mode" and kinds[-1] == REQUEST_HEADER
    assert begun == step.Result(step.StepBegun(True, True, False, driver.log.events[-1].seq))
    assert driver.process.pending is None and driver.process.step_open


def test_a_step_a_host_rejects_writes_nothing_keeps_the_choice_and_closes_the_step_it_had_begun() -> None:
    driver = _pending_in_turn()
    driver.process = replace(driver.process, pending=None)
    driver.feed(step.BeginStep(1, "accepted", 102))
    driver.feed(step.Next(103))
    driver.feed(step.Asked())
    driver.process = replace(driver.process, pending=PendingChoice(True))
    written = len(driver.log.events)
    (rejected,) = driver.feed(step.BeginStep(2, "rejected", 104))
    assert rejected == step.Result(step.StepBegun(False, False, False, None))
    assert len(driver.log.events) == written and driver.process.pending == PendingChoice(True)
    assert driver.process.step_open is False and driver.process.asked is False


def _resumed_with_a_call_left_unanswered() -> _Driver:
    """A driver built from a log whose turn a stopped process left open at a
    recorded call nobody answered."""
    first = _Driver()
    first.feed(step.StartTurn("go", None, ViewRequest(), 1))
    first.feed(step.BeginStep(1, "accepted", 2))
    read = ToolCall("c1", "read_file", "{}", {"path": "hello.txt"})
    first.feed(step.ReplyIn(Reply(None, (read,), "tool_calls"), 3))
    resumed = _Driver()
    resumed.log = first.log
    resumed.process = step.Process.opened(CONFIG, first.log)
    return resumed


@pytest.mark.parametrize("verdict", ["accepted", "rejected"])
def test_the_pre_step_of_a_resumed_turn_answers_the_call_left_unanswered_and_keeps_a_choice_only_a_rejection_leaves(
    verdict: StepVerdict,
) -> None:
    driver = _resumed_with_a_call_left_unanswered()
    driver.process = replace(driver.process, pending=PendingChoice(True))
    written = len(driver.log.events)
    (begun,) = driver.feed(step.BeginStep(2, verdict, 10))
    flushed = driver.log.events[written:]
    assert flushed[0].kind == TOOL_RESULT and read_tool_result(flushed[0].payload).call_id == "c1"
    assert not read_tool_result(flushed[0].payload).ok
    accepted = verdict == "accepted"
    assert isinstance(begun, step.Result) and isinstance(begun.value, step.StepBegun)
    assert (begun.value.accepted, begun.value.flushed) == (accepted, accepted)
    assert driver.process.pending == (None if accepted else PendingChoice(True))
    assert driver.log.state.plan_mode is accepted


def test_a_step_the_listeners_reject_ends_the_turn_as_step_rejected_with_nothing_asked() -> None:
    driver = _Driver()
    driver.feed(step.StartTurn("go", None, ViewRequest(), 1))
    (proposed,) = driver.feed(step.Next(2))
    assert isinstance(proposed, step.ProposeStep) and proposed.step == step.ProposedStep(1, 1, 0)
    (over,) = driver.feed(step.StepVerdictIn("rejected", 3))
    assert isinstance(over, step.TurnOver)
    assert (over.tally.steps, over.tally.ended_by) == (0, "step-rejected")
    assert [event.kind for event in driver.log.events[2:]] == [TURN_END]
    assert driver.log.events[-1].at == 3


def test_a_step_verdict_for_a_turn_this_process_does_not_own_is_refused_as_left_by_a_stopped_process() -> None:
    log = _open_turn_log()
    process = step.Process.opened(CONFIG, log)
    moved = step.advance(process, log, step.StepVerdictIn("rejected", 20))
    assert moved.process.tally is None and moved.process.follow == "end"
    (then,) = moved.actions
    assert isinstance(then, step.Then)
    with pytest.raises(step.StageError, match="left by a process that stopped"):
        step.advance(moved.process, log, then.event)


def test_a_step_begun_again_before_the_model_answered_counts_its_own_request() -> None:
    driver = _Driver()
    driver.feed(step.StartTurn("go", None, ViewRequest(), 1))
    driver.feed(step.BeginStep(1, "accepted", 2))
    driver.feed(step.Next(3))
    driver.feed(step.Asked())
    driver.feed(step.BeginStep(2, "accepted", 4))
    assert driver.process.asked is False and driver.process.step_open is True
    driver.feed(step.Next(5))
    driver.feed(step.Asked())
    assert driver.process.requests == 2 and driver.process.tally is not None and driver.process.tally.steps == 2


def test_starting_a_turn_while_this_process_owns_one_is_refused_naming_the_stage() -> None:
    driver = _Driver()
    driver.feed(step.StartTurn("go", None, ViewRequest(), 1))
    with pytest.raises(step.StageError) as refused:
        driver.feed(step.StartTurn("again", None, ViewRequest(), 2))
    assert refused.value.message == "turn/start needs the session at idle, but it is at turn"
    assert refused.value.stage == "turn"


def test_a_started_turn_leaves_a_process_that_owns_it_at_its_first_step_with_nothing_open_or_owed() -> None:
    driver = _Driver()
    driver.feed(step.StartTurn("go", None, ViewRequest(), 1))
    driver.feed(step.BeginStep(1, "accepted", 2))
    driver.feed(step.ReplyIn(Reply("done", (), "stop"), 3))
    (over,) = driver.feed(step.Next(4))
    assert isinstance(over, step.TurnOver) and driver.process.over == over.tally
    driver.process = replace(driver.process, step=3, attempt=1, retries_used=1, follow="end")
    first = driver.log.state.last_seq + 1
    (result,) = driver.feed(step.StartTurn("again", None, ViewRequest(), 5))
    started = driver.process
    assert isinstance(result, step.Result) and result.value == started.tally == step.Tally(2, first)
    assert (started.turn_mine, started.step, started.attempt, started.retries_used) == (True, 1, 0, 0)
    assert started.step_open is False and started.asked is False and started.follow == "continue"
    assert started.calls == () and started.trailing == () and started.over is None
    assert step.stage_of(started, driver.log) == "turn"
