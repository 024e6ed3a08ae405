"""Continuation: round attribution, the round budget, activation across a
restart, and ``should_continue``."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planfold.kernel.goal.continuation import (
    CONTINUE_CHECKS,
    ContinueDecision,
    ContinueFacts,
    budget_block,
    decide_budget_block,
    round_message,
    should_continue,
)
from planfold.kernel.goal.fold import GoalState, fold_goal
from planfold.kernel.goal.ops import BUDGET_BLOCK_CODE, GoalError, GoalOperationError, edit, resume
from planfold.kernel.goal.values import (
    ARMED,
    DISARMED,
    PHASES,
    Activation,
    GoalRef,
    GoalSnapshot,
    activation_after,
    session_started,
)
from planfold.kernel.log import USER_MESSAGE, GoalSource, read_message
from tests.goal_helpers import goal_in

GOAL = GoalSnapshot("g1", "ship it", "active", None, 3, 4, 1, 10, 20)
FACTS = ContinueFacts(plan_mode=False, turn_open=False)


def test_round_message_attributes_the_next_round() -> None:
    log = goal_in("active", rounds=1)
    event = log.round()
    message = read_message(event.payload)
    assert (event.kind, message.text) == (USER_MESSAGE, "continue")
    assert message.source == GoalSource("goal", "g1", 1, 2)
    assert log.goal.rounds_started == 2


@pytest.mark.parametrize(
    ("phase", "rounds", "code"),
    [
        (None, 0, "not-found"),
        ("paused", 0, "invalid-transition"),
        ("blocked", 0, "invalid-transition"),
        ("complete", 0, "invalid-transition"),
        ("active", 3, "invalid-transition"),
    ],
)
def test_round_message_refuses(phase: str | None, rounds: int, code: str) -> None:
    log = goal_in(phase, max_rounds=3, rounds=rounds)
    events = list(log.events)
    with pytest.raises(GoalError) as info:
        log.round()
    assert info.value.code == code
    assert log.events == events


def test_a_round_without_a_goal_is_refused_naming_the_round() -> None:
    with pytest.raises(GoalOperationError) as caught:
        round_message(GoalState(), "go on")
    err = caught.value
    assert (err.code, err.operation, err.current) == ("not-found", "round", None)
    assert str(err) == "there is no current goal to start a round of"


@pytest.mark.parametrize(
    ("phase", "max_rounds", "rounds", "revision", "message"),
    [
        pytest.param(
            "paused", 2, 0, 2, "cannot start a round of goal 'g1': the goal is paused",
            id="a_round_of_a_paused_goal_is_refused_with_the_phase",
        ),
        pytest.param(
            "active", 1, 1, 1, "cannot start a round of goal 'g1': all 1 rounds are started",
            id="a_round_past_the_budget_is_refused_with_the_count",
        ),
    ],
)
def test_a_round_the_goal_cannot_start_is_refused_saying_why(
    phase: str, max_rounds: int, rounds: int, revision: int, message: str
) -> None:
    log = goal_in(phase, max_rounds=max_rounds, rounds=rounds)
    with pytest.raises(GoalOperationError) as caught:
        log.round()
    err = caught.value
    assert (err.code, err.operation, err.current) == ("invalid-transition", "round", GoalRef("g1", revision))
    assert str(err) == message


def test_reaching_the_cap_blocks_with_the_policy_code() -> None:
    log = goal_in("active", max_rounds=2, rounds=1)
    assert budget_block(log.state, at=log.tick()) is None
    log.round()
    decision = should_continue(log.goal, ARMED, FACTS)
    assert decision == ContinueDecision(False, "budget-spent", None)
    at = log.tick()
    block_draft = budget_block(log.state, at=at)
    assert block_draft is not None
    log.events.append(block_draft.numbered(log.seq, at))
    goal = log.goal
    assert goal.phase == "blocked"
    assert goal.blocked_reason is not None
    assert goal.blocked_reason.code == BUDGET_BLOCK_CODE
    assert budget_block(log.state, at=log.tick()) is None  # nothing left to block
    with pytest.raises(GoalError) as info:
        log.run(resume, log.ref, DISARMED, actor="user")
    assert info.value.code == "invalid-transition"
    log.run(edit, log.ref, max_rounds=4, actor="user")
    log.run(resume, log.ref, DISARMED, actor="user")
    assert should_continue(log.goal, ARMED, FACTS) == ContinueDecision(True, None, 3)


def test_the_budget_block_is_decided_in_one_call_and_disarms() -> None:
    log = goal_in("active", max_rounds=1, rounds=1)
    at = log.tick()
    decision = decide_budget_block(log.state, ARMED, at)
    assert decision.draft == budget_block(log.state, at=at)
    assert (decision.operation, decision.activation) == ("block", DISARMED)
    assert decision.goal is not None and decision.goal.phase == "blocked" and decision.ref == decision.goal.ref


@pytest.mark.parametrize(("phase", "rounds"), [(None, 0), ("active", 0), ("paused", 1)])
def test_the_budget_block_is_refused_when_the_budget_is_not_spent(phase: str | None, rounds: int) -> None:
    log = goal_in(phase, max_rounds=1, rounds=rounds)
    with pytest.raises(GoalOperationError) as caught:
        decide_budget_block(log.state, ARMED, log.tick())
    err = caught.value
    current = None if phase is None else log.ref
    assert (err.code, err.operation, err.current) == ("invalid-transition", "block", current)
    assert str(err) == "the goal's budget is not spent"


def test_a_spent_budget_blocks_the_goal_saying_how_to_go_on() -> None:
    log = goal_in("active", max_rounds=1, rounds=1)
    event = budget_block(log.state, at=log.tick())
    assert event is not None
    goal = event.payload["goal"]
    assert isinstance(goal, dict)
    assert goal["blocked_reason"] == {
        "code": "round-limit",
        "message": "the goal has started all 1 of its rounds; raise max_rounds and resume to continue",
    }


def test_a_restart_keeps_the_goal_but_needs_a_human_resume() -> None:
    # The crash-recovery walk-through: create, some edits, rounds; the process dies.
    log = goal_in("active", max_rounds=256, rounds=0)
    log.run(edit, log.ref, objective="ship the importer and its docs", actor="user")
    for _ in range(37):
        log.round()
    activation = ARMED
    # A new process: the session-start edge disarms, the log is folded again.
    activation = session_started(activation)
    goal = fold_goal(log.events).current
    assert goal is not None
    assert (goal.phase, goal.revision, goal.rounds_started) == ("active", 2, 37)
    assert should_continue(goal, activation, FACTS) == ContinueDecision(False, "disarmed", None)
    # A human resumes: a new activation edge, recorded as a change.
    log.run(resume, log.ref, activation, actor="user")
    activation = activation_after(activation, "resume")
    assert should_continue(log.goal, activation, FACTS) == ContinueDecision(True, None, 38)
    assert log.goal.max_rounds - log.goal.rounds_started == 219


@pytest.mark.parametrize(
    ("goal", "activation", "facts", "reason"),
    [
        (None, ARMED, FACTS, "no-goal"),
        (replace(GOAL, phase="complete"), ARMED, FACTS, "goal-complete"),
        (replace(GOAL, phase="paused"), ARMED, FACTS, "goal-paused"),
        (replace(GOAL, phase="blocked"), ARMED, FACTS, "goal-blocked"),
        (GOAL, DISARMED, FACTS, "disarmed"),
        (replace(GOAL, rounds_started=3), ARMED, FACTS, "budget-spent"),
        (GOAL, ARMED, ContinueFacts(plan_mode=True), "plan-mode"),
        (GOAL, ARMED, ContinueFacts(turn_open=True), "turn-open"),
    ],
)
def test_should_continue_stops(
    goal: GoalSnapshot | None, activation: Activation, facts: ContinueFacts, reason: str
) -> None:
    assert should_continue(goal, activation, facts) == ContinueDecision(False, reason, None)  # type: ignore[arg-type]


def test_should_continue_continues_with_the_next_round() -> None:
    assert should_continue(GOAL, ARMED, FACTS) == ContinueDecision(True, None, 2)


@given(
    phase=st.none() | st.sampled_from(PHASES),
    armed=st.booleans(),
    rounds=st.integers(0, 4),
    cap=st.integers(1, 4),
    plan_mode=st.booleans(),
    turn_open=st.booleans(),
)
def test_should_continue_never_continues_a_stopped_goal(
    *,
    phase: str | None, armed: bool, rounds: int, cap: int, plan_mode: bool, turn_open: bool
) -> None:
    goal = None if phase is None else replace(GOAL, phase=phase, rounds_started=rounds, max_rounds=cap)  # type: ignore[arg-type]
    decision = should_continue(goal, Activation(armed), ContinueFacts(plan_mode, turn_open))
    holds = {
        "no-goal": phase is None,
        "goal-complete": phase == "complete",
        "goal-paused": phase == "paused",
        "goal-blocked": phase == "blocked",
        "disarmed": not armed,
        "budget-spent": rounds >= cap,
        "plan-mode": plan_mode,
        "turn-open": turn_open,
    }
    assert list(holds) == list(CONTINUE_CHECKS)
    first = next((reason for reason, held in holds.items() if held), None)
    assert decision.proceed == (first is None)
    assert decision.reason == first
    if decision.proceed:
        assert decision.next_round == rounds + 1 <= cap


def test_session_start_disarms_whatever_it_was() -> None:
    assert session_started(ARMED) == session_started(DISARMED) == DISARMED


def test_human_messages_never_spend_the_budget() -> None:
    log = goal_in("active", max_rounds=1)
    for _ in range(5):
        log.append(USER_MESSAGE, {"text": "what is left?", "source": None})
    assert should_continue(log.goal, ARMED, FACTS) == ContinueDecision(True, None, 1)

