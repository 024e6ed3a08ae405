"""Tests that pin what mutation testing found unpinned in the goal modules:
the exact refusals of ``/goal`` and of a goal round (message, code and
context), and the reason a spent budget blocks a goal with."""

from __future__ import annotations

import pytest

from planfold.kernel.goal.command import GoalCommandError, parse_goal_command
from planfold.kernel.goal.continuation import budget_block, round_message
from planfold.kernel.goal.fold import GoalState, fold_goal
from planfold.kernel.goal.ops import GoalOperationError, create, pause
from planfold.kernel.goal.values import GoalRef
from planfold.kernel.log import Event


def created(max_rounds: int = 2) -> list[Event]:
    return [create(GoalState(), "g1", "Ship it", max_rounds, actor="user", seq=1, at=10)]


@pytest.mark.parametrize(
    ("text", "code", "message"),
    [
        ("/goal NEW", "missing-objective", "/goal new needs an objective after it"),
        ("/goal Edit   ", "missing-objective", "/goal edit needs an objective after it"),
        (
            "/goal PAUSE now",
            "unexpected-argument",
            "/goal pause takes nothing after it; to set a goal that starts with 'PAUSE', write /goal new PAUSE now",
        ),
    ],
)
def test_a_misused_goal_verb_is_refused_with_the_verb_in_lower_case(text: str, code: str, message: str) -> None:
    with pytest.raises(GoalCommandError) as caught:
        parse_goal_command(text)
    assert (caught.value.code, str(caught.value)) == (code, message)


def test_a_round_without_a_goal_is_refused_naming_the_round() -> None:
    with pytest.raises(GoalOperationError) as caught:
        round_message(GoalState(), "go on", seq=1, at=1)
    err = caught.value
    assert (err.code, err.operation, err.current) == ("not-found", "round", None)
    assert str(err) == "there is no current goal to start a round of"


def test_a_round_of_a_paused_goal_is_refused_with_the_phase() -> None:
    log = created()
    goal = fold_goal(log).current
    assert goal is not None
    log.append(pause(fold_goal(log), goal.ref, actor="user", seq=2, at=20))
    with pytest.raises(GoalOperationError) as caught:
        round_message(fold_goal(log), "go on", seq=3, at=30)
    err = caught.value
    assert (err.code, err.operation, err.current) == ("invalid-transition", "round", GoalRef("g1", 2))
    assert str(err) == "cannot start a round of goal 'g1': the goal is paused"


def test_a_round_past_the_budget_is_refused_with_the_count() -> None:
    log = created(max_rounds=1)
    log.append(round_message(fold_goal(log), "round one", seq=2, at=20))
    with pytest.raises(GoalOperationError) as caught:
        round_message(fold_goal(log), "round two", seq=3, at=30)
    err = caught.value
    assert (err.code, err.operation, err.current) == ("invalid-transition", "round", GoalRef("g1", 1))
    assert str(err) == "cannot start a round of goal 'g1': all 1 rounds are started"


def test_a_spent_budget_blocks_the_goal_saying_how_to_go_on() -> None:
    log = created(max_rounds=1)
    log.append(round_message(fold_goal(log), "round one", seq=2, at=20))
    event = budget_block(fold_goal(log), seq=3, at=30)
    assert event is not None
    goal = event.payload["goal"]
    assert isinstance(goal, dict)
    assert goal["blocked_reason"] == {
        "code": "round-limit",
        "message": "the goal has started all 1 of its rounds; raise max_rounds and resume to continue",
    }
