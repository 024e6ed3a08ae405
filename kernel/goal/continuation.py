"""Goal continuation: round attribution, the round budget and ``should_continue``.

Theory of operation
-------------------
A goal's budget counts only its own rounds. A continuation consumer admits a
round by appending a ``user/message`` whose source attributes it to the
current goal at its current revision with the next round number;
``round_message`` builds exactly that message, and only that message advances
``rounds_started`` in the fold. A human's own messages (source ``null``) never
spend the budget.

When an active goal has started all ``max_rounds`` rounds, the system blocks
it with the policy code ``BUDGET_BLOCK_CODE`` (``budget_block``), so the
reason it stopped is in the log, machine-readable. A resume is then refused
until an edit raises the cap.

Whether the process may start another round on its own is
``should_continue(goal_view, activation, facts)``: a pure decision over the
folded goal, the process-local activation and a few session facts. It checks,
in the order of ``CONTINUE_CHECKS``, and the first that holds stops it:

- ``no-goal``: there is no current goal (never created, or cleared);
- ``goal-complete``, ``goal-paused``, ``goal-blocked``: the goal is not active;
- ``disarmed``: this process holds no activation (every session start
  disarms, so after a restart a human resume is needed);
- ``budget-spent``: all rounds are started (the caller should then append
  ``budget_block``);
- ``plan-mode``: the session is in plan mode;
- ``turn-open``: a turn is still running; a round starts between turns.

Otherwise it continues with round ``rounds_started + 1``.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Literal

from ..log import Draft, GoalSource, user_message
from .fold import GoalState
from .ops import BUDGET_BLOCK_CODE, GoalDecision, GoalOperationError, block
from .values import Activation, BlockedReason, GoalSnapshot

__all__ = [
    "CONTINUE_CHECKS",
    "ContinueDecision",
    "ContinueFacts",
    "StopReason",
    "budget_block",
    "budget_spent",
    "decide_budget_block",
    "round_message",
    "round_source",
    "should_continue",
]

StopReason = Literal[
    "no-goal",
    "goal-complete",
    "goal-paused",
    "goal-blocked",
    "disarmed",
    "budget-spent",
    "plan-mode",
    "turn-open",
]

#: The stop reasons in the order ``should_continue`` checks them (the order
#: of ``StopReason``).
CONTINUE_CHECKS: tuple[StopReason, ...] = typing.get_args(StopReason)


def budget_spent(goal: GoalSnapshot) -> bool:
    """True when the goal has started all the rounds its cap allows."""
    return goal.rounds_started >= goal.max_rounds


def round_source(state: GoalState) -> GoalSource:
    """The source that attributes the next round to the current goal: its id,
    its revision and the next round number.

    Raises ``GoalError``: ``not-found`` (no current goal),
    ``invalid-transition`` (the goal is not active, or its rounds are spent:
    block it with ``budget_block`` instead).
    """
    goal = state.current
    if goal is None:
        raise GoalOperationError(
            "there is no current goal to start a round of",
            code="not-found",
            operation="round",
            current=None,
        )
    if goal.phase != "active" or budget_spent(goal):
        why = (
            f"the goal is {goal.phase}"
            if goal.phase != "active"
            else f"all {goal.max_rounds} rounds are started"
        )
        raise GoalOperationError(
            f"cannot start a round of goal {goal.id!r}: {why}",
            code="invalid-transition",
            operation="round",
            current=goal.ref,
        )
    return GoalSource("goal", goal.id, goal.revision, goal.rounds_started + 1)


def round_message(state: GoalState, text: str) -> Draft:
    """The draft of the ``user/message`` with ``text`` that admits the next
    round of the current goal (``round_source``); raises as it does."""
    return user_message(text, round_source(state))


def budget_block(state: GoalState, *, at: int) -> Draft | None:
    """The system's block of an active goal whose rounds are all started
    (code ``BUDGET_BLOCK_CODE``), or ``None`` when there is nothing to block."""
    goal = state.current
    if goal is None or goal.phase != "active" or not budget_spent(goal):
        return None
    reason = BlockedReason(
        BUDGET_BLOCK_CODE,
        f"the goal has started all {goal.max_rounds} of its rounds; "
        "raise max_rounds and resume to continue",
    )
    return block(state, goal.ref, reason, actor="system", at=at)


def decide_budget_block(state: GoalState, activation: Activation, at: int) -> GoalDecision:
    """The system's block of the current goal when all its rounds are
    started, decided in one call as ``kernel.goal.ops.decide_goal`` decides
    an operation.

    Raises ``GoalOperationError`` (``invalid-transition``) when there is
    nothing to block: no active goal, or rounds left.
    """
    draft = budget_block(state, at=at)
    if draft is None:
        raise GoalOperationError(
            "the goal's budget is not spent",
            code="invalid-transition",
            operation="block",
            current=None if state.current is None else state.current.ref,
        )
    return GoalDecision.of("block", draft, activation)


@dataclass(frozen=True, slots=True)
class ContinueFacts:
    """What the session says beyond the goal: whether plan mode is active (the
    fold) and whether a turn is open (the turn fold)."""

    plan_mode: bool = False
    turn_open: bool = False


@dataclass(frozen=True, slots=True)
class ContinueDecision:
    """Continue with round ``next_round``, or stop for ``reason``."""

    proceed: bool
    reason: StopReason | None = None
    next_round: int | None = None


def _stop(reason: StopReason) -> ContinueDecision:
    return ContinueDecision(False, reason, None)


def should_continue(
    goal_view: GoalSnapshot | None, activation: Activation, facts: ContinueFacts
) -> ContinueDecision:
    """Whether this process may start the next goal round on its own (checks in
    ``CONTINUE_CHECKS`` order). Never raises."""
    if goal_view is None:
        return _stop("no-goal")
    if goal_view.phase == "complete":
        return _stop("goal-complete")
    if goal_view.phase == "paused":
        return _stop("goal-paused")
    if goal_view.phase == "blocked":
        return _stop("goal-blocked")
    if not activation.armed:
        return _stop("disarmed")
    if budget_spent(goal_view):
        return _stop("budget-spent")
    if facts.plan_mode:
        return _stop("plan-mode")
    if facts.turn_open:
        return _stop("turn-open")
    return ContinueDecision(True, None, goal_view.rounds_started + 1)
