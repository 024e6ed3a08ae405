"""Small log builders shared by the plan-mode tests, and the plan-mode rules
over a whole log.

The kernel decides the three plan-mode rules over a session state
(``planfold.kernel.decisions``: ``decide_plan_choice``, ``decide_pre_step``,
``decide_request_header``). The forms here fold the whole log they are given
instead, written from the plan-mode primitives alone, and number what they
decide after the log at a given time: a second, independent reading of the
same rules, which the plan-mode state machine holds equal to the kernel's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from planfold.kernel.errors import ReplayError
from planfold.kernel.log import (
    PLAN_MODE,
    REQUEST_HEADER,
    TURN_END,
    TURN_START,
    Draft,
    Event,
    fold_turns,
    last_seq,
    number_drafts,
    user_message,
)
from planfold.kernel.plan.artifact import PlanStatus
from planfold.kernel.plan.mode import (
    CHOICE_TABLE,
    NOTICE_SOURCE,
    ChoiceOutcome,
    PendingChoice,
    PendingRelation,
    StepVerdict,
    fold_plan_mode,
    notice_due,
    notice_text,
    plan_mode_set,
)


def append(log: Sequence[Event], kind: str, payload: dict[str, object], at: int = 0) -> list[Event]:
    return [*log, Event(last_seq(log) + 1, kind, at, payload)]  # type: ignore[arg-type]


def start_turn(log: Sequence[Event], turn: int) -> list[Event]:
    return append(log, TURN_START, {"turn": turn})


def end_turn(log: Sequence[Event], turn: int) -> list[Event]:
    return append(log, TURN_END, {"turn": turn})


def mode(log: Sequence[Event], active: bool) -> list[Event]:
    return append(log, PLAN_MODE, {"active": active})


def header(log: Sequence[Event], turn: int, step: int, plan_mode: bool) -> list[Event]:
    return append(log, REQUEST_HEADER, {"turn": turn, "step": step, "plan_mode": plan_mode})


# --------------------------------------------------------------------------
# The plan-mode rules over a whole log


@dataclass(frozen=True, slots=True)
class ChoiceDecision:
    """A choice looked up in ``CHOICE_TABLE``: its outcome, the pending
    choice after it, and whether it is appended now."""

    outcome: ChoiceOutcome
    pending: PendingChoice | None
    append_now: bool


def decide_choice(folded: bool, pending: PendingChoice | None, turn_open: bool, target: bool) -> ChoiceDecision:
    """The user's choice of ``target`` by the table alone."""
    row = CHOICE_TABLE[(PendingRelation.of(pending, target), target == folded, turn_open)]
    after = {"keep": pending, "set": PendingChoice(target), "drop": None}[row.pending]
    return ChoiceDecision(row.outcome, after, row.append_now)


def choice_events(
    events: Sequence[Event], target: bool, at: int, *, silent: bool = False, plan_status: PlanStatus | None = None
) -> tuple[Event, ...]:
    """The events that record a choice of ``target`` after ``events``, at
    ``at``: ``plan/mode`` and, unless silent, the notice when one is due."""
    drafts: list[Draft] = [plan_mode_set(target)]
    if not silent and notice_due(events, target):
        drafts.append(user_message(notice_text(target, plan_status), NOTICE_SOURCE))
    return number_drafts(drafts, last_seq(events), at)


@dataclass(frozen=True, slots=True)
class Flush:
    """The pre-step flush over a whole log: the events to append and the
    pending choice after a successful or a failed append."""

    events: tuple[Event, ...]
    pending_after_success: PendingChoice | None
    pending_after_failure: PendingChoice | None


def flush_pre_step(
    events: Sequence[Event],
    pending: PendingChoice | None,
    verdict: StepVerdict,
    at: int,
    *,
    plan_status: PlanStatus | None = None,
) -> Flush:
    """The turn-boundary flush for one proposed step, folding ``events``."""
    if pending is None or verdict != "accepted" or not fold_turns(events).open:
        return Flush((), pending, pending)
    if pending.target == fold_plan_mode(events):
        return Flush((), None, None)
    chosen = choice_events(events, pending.target, at, silent=pending.silent, plan_status=plan_status)
    return Flush(chosen, None, pending)


def derive_request_header(events: Sequence[Event], step: int, at: int) -> Event:
    """The ``request/header`` of ``step`` of the open turn of ``events``,
    recording the plan mode the log gives; ``ReplayError``
    (``transition-not-allowed``) when no turn is open."""
    turns, seq = fold_turns(events), last_seq(events) + 1
    if not turns.open:
        raise ReplayError(seq, "transition-not-allowed", "a request header needs an open turn")
    return Event(seq, REQUEST_HEADER, at, {"turn": turns.turn, "step": step, "plan_mode": fold_plan_mode(events)})
