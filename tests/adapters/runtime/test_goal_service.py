"""The goal service: activation per process, scoped notifications with
contained listener failures, the round driver, and restarts."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from planfold.adapters.runtime.goal_service import GoalChanged, GoalService, StaleAgentError
from planfold.adapters.store.memory import MemoryStore
from planfold.adapters.store.session_log import SessionLog
from planfold.kernel.goal.continuation import round_message
from planfold.kernel.goal.ops import GoalAuthorityError, GoalError, GoalRequest
from planfold.kernel.goal.values import BlockedReason, GoalRef
from planfold.kernel.log import GoalSource, MessageSource, turn_end, turn_start, user_message
from planfold.kernel.session import fold_session
from tests.runtime_helpers import make_session, say, ticking


def _service(store: MemoryStore | None = None) -> tuple[GoalService, SessionLog, MemoryStore]:
    store = store or MemoryStore()
    log = SessionLog(store, "s1", ticking())
    return GoalService(log, "agent-1", lambda: f"goal-{log.last_seq + 1}"), log, store


@dataclass
class Turns:
    """A round runner that records turns without a model."""

    log: SessionLog
    seen: list[MessageSource | None] = field(default_factory=list)

    def run_turn(self, text: str, source: MessageSource | None = None) -> object:
        n = self.log.state.turns.turn + 1
        self.log.append((turn_start(n), user_message(text, source), turn_end(n)))
        self.seen.append(source)
        return None


def test_activation_starts_disarmed_and_follows_the_operations() -> None:
    goals, _, _ = _service()
    agent = goals.agent
    assert not goals.activation.armed
    goals.create(agent, "Ship it", max_rounds=3)
    assert goals.activation.armed
    goals.pause(agent)
    assert not goals.activation.armed
    goals.resume(agent)
    assert goals.activation.armed
    goals.edit(agent, objective="Ship it well")
    assert goals.activation.armed
    goals.disarm(agent)
    view = goals.get(agent)
    assert view is not None and view.goal.phase == "active" and not view.armed


def test_notifications_are_scoped_to_one_agent_and_a_failing_listener_is_contained() -> None:
    goals, log, store = _service()
    mine: list[GoalChanged] = []
    other: list[GoalChanged] = []

    def broken(_: GoalChanged) -> None:
        raise RuntimeError("listener bug")

    goals.subscribe("agent-1", broken)
    goals.subscribe("agent-1", mine.append)
    goals.subscribe("agent-2", other.append)
    change = goals.create(goals.agent, "Ship it")
    assert [c.operation for c in mine] == ["create"] and other == []
    assert len(goals.listener_failures) == 1 and goals.listener_failures[0].seq == change.seq
    # the fact was committed regardless
    assert store.read("s1")[-1].kind == "goal/change"
    assert log.state.goal.current is not None
    cleared = goals.clear(goals.agent)
    assert cleared.goal is None and mine[-1].operation == "clear"


def test_unsubscribe_stops_notifications() -> None:
    goals, _, _ = _service()
    seen: list[GoalChanged] = []
    stop = goals.subscribe("agent-1", seen.append)
    goals.create(goals.agent, "A")
    stop()
    goals.pause(goals.agent)
    assert [c.operation for c in seen] == ["create"]


def test_a_replaced_agent_handle_is_refused_and_changes_nothing() -> None:
    goals, log, _ = _service()
    old = goals.agent
    goals.create(old, "A")
    goals.replace_agent()
    before = log.last_seq
    with pytest.raises(StaleAgentError):
        goals.pause(old)
    with pytest.raises(StaleAgentError):
        goals.get(old)
    with pytest.raises(StaleAgentError):
        goals.disarm(old)
    assert log.last_seq == before and goals.activation.armed


def test_refused_operations_append_nothing() -> None:
    goals, log, _ = _service()
    with pytest.raises(GoalError) as err:
        goals.pause(goals.agent)
    assert err.value.code == "not-found"
    goals.create(goals.agent, "A")
    before = log.last_seq
    with pytest.raises(GoalAuthorityError):
        goals.block(goals.agent, BlockedReason("round-limit", "only the system may"), actor="model")
    with pytest.raises(GoalError):
        goals.resume(goals.agent)  # active and armed already
    assert log.last_seq == before


def test_a_request_is_applied_as_the_operation_it_names_on_the_goal_the_caller_sees() -> None:
    goals, log, _ = _service()
    made = goals.apply(goals.agent, GoalRequest("create", "user", objective="Ship it", max_rounds=2))
    assert made.goal is not None and made.goal.id == "goal-1" and made.goal.max_rounds == 2
    named = GoalRequest("create", "user", goal_id="mine", objective="Other")
    with pytest.raises(GoalError) as exists:
        goals.apply(goals.agent, named)
    assert exists.value.code == "already-exists"
    edited = goals.apply(goals.agent, GoalRequest("edit", "user", objective="Ship it well"))
    assert edited.ref == GoalRef("goal-1", 2) and edited.goal is not None and edited.goal.objective == "Ship it well"
    before = log.last_seq
    with pytest.raises(GoalError) as stale:
        goals.apply(goals.agent, GoalRequest("pause", "user", made.ref))
    assert stale.value.code == "stale-revision" and log.last_seq == before
    blocked = goals.apply(goals.agent, GoalRequest("block", "model", reason=BlockedReason("stuck", "needs a human")))
    assert blocked.operation == "block" and not goals.activation.armed
    goals.apply(goals.agent, GoalRequest("clear", "user"))
    assert goals.apply(goals.agent, named).ref == GoalRef("mine", 1)


def test_a_request_of_a_replaced_agent_is_refused_and_changes_nothing() -> None:
    goals, log, _ = _service()
    old = goals.agent
    goals.replace_agent()
    with pytest.raises(StaleAgentError):
        goals.apply(old, GoalRequest("create", "user", objective="A"))
    with pytest.raises(StaleAgentError):
        goals.block_spent(old)
    assert log.last_seq == 0


def test_the_budget_block_blocks_only_a_goal_whose_rounds_are_all_started() -> None:
    goals, log, _ = _service()
    goals.create(goals.agent, "Tidy", max_rounds=1)
    with pytest.raises(GoalError) as early:
        goals.block_spent(goals.agent)
    assert early.value.code == "invalid-transition" and log.last_seq == 1 and goals.activation.armed
    goals.drive(goals.agent, Turns(log), limit=1)
    assert goals.decide().reason == "budget-spent"
    blocked = goals.block_spent(goals.agent)
    assert blocked.operation == "block" and blocked.seq == log.last_seq and not goals.activation.armed
    assert blocked.goal is not None and blocked.goal.blocked_reason is not None
    assert blocked.goal.blocked_reason.code == "round-limit"


def test_the_driver_attributes_rounds_and_blocks_the_goal_at_its_budget() -> None:
    goals, log, _ = _service()
    runner = Turns(log)
    goals.create(goals.agent, "Tidy", max_rounds=2)
    report = goals.drive(goals.agent, runner)
    assert report.rounds == (1, 2) and report.stopped == "budget-spent"
    assert [s.round for s in runner.seen if isinstance(s, GoalSource)] == [1, 2]
    goal = log.state.goal.current
    assert goal is not None and goal.phase == "blocked"
    assert goal.blocked_reason is not None and goal.blocked_reason.code == "round-limit"
    assert report.blocked_at == log.last_seq and not goals.activation.armed
    assert fold_session(log.events) == log.state


def test_human_messages_do_not_spend_the_budget() -> None:
    goals, log, _ = _service()
    runner = Turns(log)
    goals.create(goals.agent, "Tidy", max_rounds=1)
    runner.run_turn("a human question")
    goal = log.state.goal.current
    assert goal is not None and goal.rounds_started == 0


def test_a_restart_comes_back_disarmed_and_needs_a_human_resume() -> None:
    goals, log, store = _service()
    goals.create(goals.agent, "Tidy", max_rounds=5)
    goals.drive(goals.agent, Turns(log), limit=2)
    # a new process on the same store
    again, log2, _ = _service(store)
    assert not again.activation.armed
    report = again.drive(again.agent, Turns(log2))
    assert report.rounds == () and report.stopped == "disarmed"
    again.resume(again.agent)
    report = again.drive(again.agent, Turns(log2))
    assert report.rounds == (3, 4, 5) and report.stopped == "budget-spent"


def test_the_driver_runs_real_turns_through_the_runtime() -> None:
    session, model, _ = make_session([say("round one"), say("round two")])
    goals = GoalService(session.log, "agent-1", lambda: "g1")
    goals.create(goals.agent, "Tidy", max_rounds=2)
    report = goals.drive(goals.agent, session.runtime)
    assert report.rounds == (1, 2)
    asked = [r.last_user_text for r in model.inner.requests]
    assert asked == ["Continue the goal (round 1).", "Continue the goal (round 2)."]


def test_a_round_left_open_by_a_stopped_process_is_closed_by_the_next_drive_which_goes_on() -> None:
    store = MemoryStore()
    first, log, _ = _service(store)
    first.create(first.agent, "Tidy", max_rounds=3)
    # The first process started round 1 and stopped before its turn ended.
    log.append((turn_start(1), round_message(log.state.goal, "round 1")))
    session, model, _ = make_session([say("round two"), say("round three")], store=store)
    goals = GoalService(session.log, "agent-1", lambda: "unused")
    assert goals.decide().reason == "disarmed"
    goals.resume(goals.agent)
    assert goals.decide().reason == "turn-open"  # asked from outside a drive, the open turn still counts
    report = goals.drive(goals.agent, session.runtime)
    assert report.rounds == (2, 3) and report.stopped == "budget-spent"
    events = session.log.events
    assert [(e.kind, e.payload["turn"]) for e in events if e.kind in ("turn/start", "turn/end")] == [
        ("turn/start", 1), ("turn/end", 1), ("turn/start", 2), ("turn/end", 2), ("turn/start", 3), ("turn/end", 3),
    ]
    assert fold_session(events) == session.log.state
    assert [r.last_user_text for r in model.inner.requests] == [
        "Continue the goal (round 2).", "Continue the goal (round 3).",
    ]


class GoalServiceMachine(RuleBasedStateMachine):
    """The service's activation and notifications against a plain model."""

    def __init__(self) -> None:
        super().__init__()
        self.store = MemoryStore()
        self.goals, self.log, _ = _service(self.store)
        self.seen: list[str] = []
        self.goals.subscribe("agent-1", lambda c: self.seen.append(c.operation))
        self.goals.subscribe("agent-1", self._boom)
        self.armed = False
        self.phase: str | None = None
        self.expected: list[str] = []

    @staticmethod
    def _boom(change: GoalChanged) -> None:
        raise ValueError(change.operation)

    def _try(self, operation: str, call: object) -> None:
        before = self.log.last_seq
        try:
            assert callable(call)
            call()
        except (GoalError, GoalAuthorityError):
            note(f"{operation}: refused")
            assert self.log.last_seq == before
            return
        note(f"{operation}: accepted")
        self.expected.append(operation)
        self.phase = self.log.state.goal.current.phase if self.log.state.goal.current else None
        self.armed = operation in ("create", "resume") or (operation == "edit" and self.armed)

    @rule(cap=st.integers(1, 3))
    def create(self, cap: int) -> None:
        self._try("create", lambda: self.goals.create(self.goals.agent, "Objective", max_rounds=cap))

    @rule(op=st.sampled_from(["pause", "resume", "complete", "clear"]))
    def simple(self, op: str) -> None:
        self._try(op, lambda: getattr(self.goals, op)(self.goals.agent))

    @rule()
    def edit(self) -> None:
        self._try("edit", lambda: self.goals.edit(self.goals.agent, max_rounds=3))

    @precondition(lambda self: self.phase == "active" and self.armed)
    @rule()
    def drive_one(self) -> None:
        report = self.goals.drive(self.goals.agent, Turns(self.log), limit=1)
        note(f"drive: {report}")
        if report.blocked_at is not None:
            self.expected.append("block")
            self.armed = False
            self.phase = "blocked"

    @rule()
    def restart(self) -> None:
        self.goals, self.log, _ = _service(self.store)
        self.goals.subscribe("agent-1", lambda c: self.seen.append(c.operation))
        self.armed = False
        note("restart")

    @invariant()
    def activation_matches_the_model(self) -> None:
        assert self.goals.activation.armed == self.armed

    @invariant()
    def every_accepted_change_was_broadcast(self) -> None:
        assert self.seen == self.expected

    @invariant()
    def the_log_replays(self) -> None:
        assert fold_session(self.log.events) == self.log.state


GoalServiceMachine.TestCase.settings = settings(
    max_examples=min(settings().max_examples, 30), stateful_step_count=15
)
TestGoalServiceMachine = GoalServiceMachine.TestCase
