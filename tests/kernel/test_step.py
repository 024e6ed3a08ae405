"""The turn machine as a pure reducer: every input in every stage has a
defined answer, an input that does not fit is refused and changes nothing,
and a failed append leaves the process where the store is.

A Hypothesis state machine drives ``kernel.step.advance`` alone (no store:
appends go to a list, and the test decides which of them fail) against a
small model of the turn: the stage the last action leaves the session in,
and which inputs that stage takes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest
from hypothesis import note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from planfold.adapters.runtime.review import approve as approval
from planfold.adapters.runtime.review import keep_planning
from planfold.adapters.runtime.toolset import default_registry
from planfold.kernel import step
from planfold.kernel.log import REQUEST_HEADER, Event, read_request_header
from planfold.kernel.payload import JSON
from planfold.kernel.plan.context import ViewRequest
from planfold.kernel.session import SessionState, fold_session
from planfold.kernel.tools.spec import ToolCall
from planfold.kernel.turn import Reply
from tests.runtime_helpers import SPEC, SUMMARY

CONFIG = step.TurnConfig(default_registry(), max_steps=4, max_tool_calls=4, step_retries=1)

#: Which inputs a stage takes, as the model knows it (written apart from ``ACCEPTS``).
TAKES: dict[str, set[str]] = {
    "idle": {"choose", "start-turn", "next"},
    "turn": {"choose", "start-turn", "end-turn", "next"},
    "step": {"choose", "end-turn", "next", "reply", "model-failed"},
    "calls": {"choose", "next"},
    "resolve": {"choose"},
    "execute": {"choose", "tool-done"},
    "review": {"choose", "next", "review-answer"},
}


def _reply(kind: str, call_id: str) -> Reply:
    if kind == "final":
        return Reply("all done", (), "stop")
    if kind == "read":
        return Reply(None, (ToolCall(call_id, "read_file", '{"path": "a.txt"}', {"path": "a.txt"}),), "tool_calls")
    if kind == "write":
        written: dict[str, JSON] = {"path": "b.txt", "content": "x"}
        return Reply(None, (ToolCall(call_id, "write_file", "{}", written),), "tool_calls")
    if kind == "cut":
        return Reply("half", (), "length")
    arguments: dict[str, JSON] = {"plan_spec": dict(SPEC), "summary_candidate": dict(SUMMARY)}
    return Reply(None, (ToolCall(call_id, "exit_plan_mode", "{}", arguments),), "tool_calls")


class TurnMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.events: list[Event] = []
        self.state = SessionState()
        self.process = step.Process.opened(CONFIG, self.log())
        self.stage = "idle"
        self.calls = 0
        self.fail_next = False
        self.at = 1_000
        self.ids = 0

    def log(self) -> step.Log:
        return step.Log(self.state, tuple(self.events))

    def tick(self) -> int:
        self.at += 10
        return self.at

    # -- feeding the reducer as a driver does ----------------------------------

    def feed(self, event: step.Input) -> list[step.Action]:
        """Advance with ``event`` and its continuations; appends go to the list
        unless the test makes one fail (then the value before it stays)."""
        queue: list[step.Input] = [event]
        left: list[step.Action] = []
        written = False
        while queue:
            moved = step.advance(self.process, self.log(), queue.pop(0))
            actions = moved.actions
            if actions and isinstance(actions[0], step.Append):
                append = actions[0]
                assert append.expected_seq == self.state.last_seq and append.before is self.state
                if self.fail_next and not written:  # the operation's first append
                    self.fail_next = False
                    note(f"append of {len(append.events)} event(s) fails ({append.on_failure})")
                    if append.on_failure is None:
                        raise _Failed
                    queue.insert(0, step.AppendFailed(append.on_failure, self.tick(), append.detail))
                    continue
                self.events.extend(append.events)
                self.state = append.state
                written = True
                actions = actions[1:]
            self.process = moved.process
            for action in actions:
                if isinstance(action, step.Then):
                    queue.append(action.event)
                elif isinstance(action, step.ResolvePaths):
                    queue.append(step.Resolved(action.call.id, (), self.tick()))
                elif isinstance(action, step.ProposeStep):
                    queue.append(step.StepVerdictIn("accepted", self.tick()))
                else:
                    left.append(action)
        return left

    def offer(self, event: step.Input) -> list[step.Action] | None:
        """Feed ``event`` when the model says the stage takes it; otherwise
        check that it is refused and changes nothing."""
        fits = event.name in TAKES[self.stage]
        if event.name == "start-turn" and self.process.turn_mine:
            fits = False
        if event.name in ("tool-done", "review-answer") and fits:
            current = self.process.current
            fits = current is not None and current.call.id == getattr(event, "call_id", None)
        if event.name == "next" and self.stage in ("idle", "turn"):
            fits = self.process.over is not None if self.stage == "idle" else self.process.turn_mine
        before = (self.process, len(self.events), self.state)
        if not fits:
            with pytest.raises(step.StageError):
                self.feed(event)
            assert (self.process, len(self.events), self.state) == before
            return None
        try:
            return self.feed(event)
        except _Failed:  # nothing was written, and the machine is where the log is
            assert len(self.events) == before[1] and self.state is before[2]
            assert step.stage_of(self.process, self.log()) == step.stage_of(before[0], self.log())
            return None

    def follow(self, actions: Sequence[step.Action]) -> None:
        """The model's stage after what the machine asked for last."""
        for action in actions:
            if isinstance(action, step.AskModel):
                self.stage = "step"
            elif isinstance(action, step.RunTool):
                self.stage = "execute"
            elif isinstance(action, step.AskReview):
                self.stage = "review"
            elif isinstance(action, step.TurnOver):
                self.stage = "idle"

    # -- the rules --------------------------------------------------------------

    @rule()
    def fail_the_next_append(self) -> None:
        self.fail_next = True

    @rule(wanted=st.booleans())
    def choose(self, wanted: bool) -> None:
        before = self.process.pending
        actions = self.offer(step.Choose(wanted, self.tick()))
        if actions is None:
            assert self.process.pending == before
            return
        outcome = next(a.value for a in actions if isinstance(a, step.Result))
        assert outcome in ("noop", "committed", "queued", "cancelled")

    @rule(text=st.sampled_from(["go", "again", ""]))
    def start_turn(self, text: str) -> None:
        actions = self.offer(step.StartTurn(text, None, ViewRequest(), self.tick()))
        if actions is not None:
            self.stage, self.calls = "turn", 0

    @rule()
    def end_turn(self) -> None:
        if self.offer(step.EndTurn(self.tick())) is not None:
            self.stage = "idle"

    @rule()
    def next_action(self) -> None:
        stage = self.stage
        actions = self.offer(step.Next(self.tick(), True))
        if actions is None:
            return
        self.follow(actions)
        if stage == "calls" and self.stage == "calls":
            self.stage = "turn"
        assert any(isinstance(a, step.AskModel | step.RunTool | step.AskReview | step.TurnOver) for a in actions)

    @rule(kind=st.sampled_from(["final", "read", "write", "exit", "cut"]))
    def reply(self, kind: str) -> None:
        self.ids += 1
        actions = self.offer(step.ReplyIn(_reply(kind, f"c{self.ids}"), self.tick(), 0))
        if actions is None:
            return
        recorded = next(a.value for a in actions if isinstance(a, step.Result))
        note(f"reply {kind}: {getattr(recorded, 'outcome', None)}")
        self.stage = "calls" if self.process.calls else "turn"

    @rule(code=st.sampled_from(["model-timeout", "model-bad-request"]))
    def model_failed(self, code: str) -> None:
        if self.offer(step.ModelFailed(code, "it failed", None, 0)) is not None:
            self.stage = "turn"

    @rule(right=st.booleans(), ok=st.booleans())
    def tool_done(self, right: bool, ok: bool) -> None:
        current = self.process.current
        call_id = current.call.id if current is not None and right else "elsewhere"
        if self.offer(step.ToolDone(call_id, ok, "output", self.tick())) is not None:
            self.stage = "calls" if self.process.calls else "turn"

    @rule(approve=st.booleans())
    def review_answer(self, approve: bool) -> None:
        current = self.process.current
        call_id = current.call.id if current is not None else "none"
        answer = approval() if approve else keep_planning("more detail")
        if self.offer(step.ReviewAnswered(call_id, answer, self.tick())) is not None:
            self.stage = "calls" if self.process.calls else "turn"

    @precondition(lambda self: self.stage == "idle" and self.state.turns.open)
    @rule()
    def a_new_process_opens_over_the_log(self) -> None:
        """A crash: a new process over the same log knows what the log knows."""
        self.process = step.Process.opened(CONFIG, self.log())
        self.stage = "turn"

    # -- invariants ---------------------------------------------------------------

    @invariant()
    def the_log_folds_strictly_to_the_state_the_machine_holds(self) -> None:
        assert fold_session(self.events) == self.state

    @invariant()
    def the_stage_is_the_models(self) -> None:
        assert step.stage_of(self.process, self.log()) == self.stage

    @invariant()
    def every_header_records_the_plan_mode_of_the_fold_before_it(self) -> None:
        for event in self.events[-8:]:
            if event.kind == REQUEST_HEADER:
                before = fold_session(self.events[: event.seq - 1])
                assert read_request_header(event.payload).plan_mode == before.plan_mode

    @invariant()
    def the_process_never_runs_ahead_of_the_log(self) -> None:
        tally = self.process.tally
        if tally is not None:
            assert tally.first_seq <= self.state.last_seq


class _Failed(Exception):
    """An append the test made fail with no ``on_failure``: the operation's error."""


TurnMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
test_the_turn_reducer_agrees_with_a_small_model_of_the_turn = TurnMachine.TestCase


def test_an_input_that_does_not_fit_the_stage_is_refused_and_names_the_stages_that_take_it() -> None:
    process = step.Process.opened(CONFIG, step.Log(SessionState(), ()))
    with pytest.raises(step.StageError) as refused:
        step.advance(process, step.Log(SessionState(), ()), step.ToolDone("c1", True, "x", 1))
    assert refused.value.code == "out-of-order" and refused.value.stage == "idle"
    assert "needs the session at execute" in refused.value.message


def test_the_stage_table_names_every_input_and_every_stage() -> None:
    assert set(step.ACCEPTS) == {"idle", "turn", "step", "calls", "resolve", "execute", "review"}
    handled = {name for names in step.ACCEPTS.values() for name in names}
    assert handled <= set(step._HANDLERS)
    assert all("choose" in names and "append-failed" in names for names in step.ACCEPTS.values())


def test_a_failed_flush_keeps_the_choice_pending_and_the_step_goes_on() -> None:
    log = step.Log(SessionState(), ())
    process = step.Process.opened(CONFIG, log)
    events: list[Event] = []
    state = SessionState()

    def apply(moved: step.Transition) -> step.Process:
        nonlocal state
        for action in moved.actions:
            if isinstance(action, step.Append):
                events.extend(action.events)
                state = action.state
        return moved.process

    process = apply(step.advance(process, log, step.StartTurn("go", None, ViewRequest(), 1)))
    process = apply(step.advance(process, step.Log(state, tuple(events)), step.Choose(True, 2)))
    assert process.pending is not None and process.pending.target
    begun = step.advance(process, step.Log(state, tuple(events)), step.BeginStep(1, "accepted", 3))
    flush = begun.actions[0]
    assert isinstance(flush, step.Append) and flush.on_failure == "flush"
    # the driver keeps the process from before the failed append and says so
    after = step.advance(process, step.Log(state, tuple(events)), step.AppendFailed("flush", 4, flush.detail))
    assert after.process.pending == process.pending
    assert after.process.tally is not None and after.process.tally.flush_failures == 1
    header = after.actions[0]
    assert isinstance(header, step.Append) and [e.kind for e in header.events] == [REQUEST_HEADER]
    assert read_request_header(header.events[0].payload).plan_mode is False
    assert replace(after.process, tally=None).step_open


class _Clock:
    """A clock that counts its reads."""

    def __init__(self, start: int = 1_000) -> None:
        self.reads = 0
        self.start = start

    def __call__(self) -> int:
        self.reads += 1
        return self.start + self.reads


def test_an_inputs_clock_is_read_once_by_a_transition_that_appends_and_never_by_one_that_does_not() -> None:
    log = step.Log(SessionState(), ())
    process = step.Process.opened(CONFIG, log)
    clock = _Clock()
    started = step.advance(process, log, step.StartTurn("go", None, ViewRequest(), clock))
    opened = started.actions[0]
    assert isinstance(opened, step.Append) and len(opened.events) == 2
    assert clock.reads == 1 and {e.at for e in opened.events} == {1_001}
    after = step.Log(opened.state, opened.events)
    clock.reads = 0
    asked = step.advance(started.process, after, step.Next(clock))
    assert clock.reads == 0 and not any(isinstance(a, step.Append) for a in asked.actions)


def test_a_clock_reading_earlier_than_the_log_stamps_at_the_logs_last_time() -> None:
    log = step.Log(SessionState(), ())
    process = step.Process.opened(CONFIG, log)
    opened = step.advance(process, log, step.StartTurn("go", None, ViewRequest(), 5_000)).actions[0]
    assert isinstance(opened, step.Append)
    after = step.Log(opened.state, opened.events)
    ended = step.advance(step.Process.opened(CONFIG, after), after, step.EndTurn(lambda: 10)).actions[0]
    assert isinstance(ended, step.Append) and {e.at for e in ended.events} == {5_000}
