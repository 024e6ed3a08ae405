"""Plan mode: a pure fold of ``plan/mode`` events with a turn-boundary flush.

Theory of operation
-------------------
Plan mode is guidance, not enforcement (enforcement is the tool gate's job).
Its recorded state is a pure fold: the ``active`` flag of the last
``plan/mode`` event in a prefix of the log, else ``False``. There is no live
mirror; resume, fork and compaction recover it by folding.

A user's choice is decided from three facts only: the folded state, the
pending target (a choice not yet appended; it lives in the process, never in
the log) and whether a turn is open (from the turn fold). ``CHOICE_TABLE``
holds every case; ``kernel.decisions.decide_plan_choice`` only looks it up.

Between turns a choice is appended at once (``committed``). Inside a turn it
waits (``queued``) and is appended by the next *accepted* in-turn pre-step,
before that step's request is derived, so every ``request/header`` records the
state the fold gives just before it and no request is ever half old, half new.
A flip sequence that nets out appends nothing (``cancelled``). A rejected or
aborted step appends nothing; a failed append keeps the choice pending.

A notice ``user/message`` accompanies an appended choice only when the last
recorded request header described the other state: never before the first
header, and never twice for the same state between two headers (toggling
back and forth between turns does not repeat it). An approved plan review's
exit is silent: the tool result already told the model. So the notice of
leaving plan mode follows ``/plan off`` or a toggle, and is worded from the
state: it speaks of an approved plan only when one exists.

A choice made while a step's request is failing is appended at the pre-step
of that step's same-step retry (the retry is a proposed step like any other),
not deferred to the next turn: the retry's header then records the new state
and its request is derived from it, so every header stays true to the fold.

The three rules are decided over the session state, above the session fold
(``kernel.decisions``): ``decide_plan_choice`` (the choice),
``decide_pre_step`` (the flush) and ``decide_request_header`` (the header).
What they need of plan mode is here: the table, the fold, the ``plan/mode``
draft (``plan_mode_set``), the notice's wording (``notice_text``) and when
one is due (``notice_due``, which reads only the events since the last
request header, so its cost does not grow with the log).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Literal

from ..errors import PayloadError, ReplayError
from ..log import PLAN_MODE, REQUEST_HEADER, USER_MESSAGE, Draft, Event, PluginSource, read_message, read_request_header
from ..payload import JSONObject, read_as
from .artifact import PlanStatus

__all__ = [
    "CHOICE_TABLE",
    "NOTICE_SOURCE",
    "ChoiceOutcome",
    "ChoiceRow",
    "PendingChoice",
    "PendingRelation",
    "PlanModePayload",
    "PlanModeView",
    "StepVerdict",
    "apply_plan_mode_event",
    "fold_plan_mode",
    "get_plan_mode",
    "notice_due",
    "notice_text",
    "plan_mode_set",
    "read_plan_mode",
]

ChoiceOutcome = Literal["noop", "committed", "queued", "cancelled"]


class PendingRelation(Enum):
    """How the pending choice relates to a new target."""

    NONE = "none"
    SAME = "same"
    OPPOSITE = "opposite"

    @classmethod
    def of(cls, pending: PendingChoice | None, target: bool) -> PendingRelation:
        """How ``pending`` relates to a choice of ``target``."""
        if pending is None:
            return cls.NONE
        return cls.SAME if pending.target == target else cls.OPPOSITE


@dataclass(frozen=True, slots=True)
class PendingChoice:
    """A choice waiting for the next accepted in-turn pre-step.

    ``silent`` marks the exit queued by an approved ``exit_plan_mode`` review:
    the tool result reports it to the model, so no notice is added.
    """

    target: bool
    silent: bool = False


@dataclass(frozen=True, slots=True)
class ChoiceRow:
    """One row of the choice table: the outcome, what happens to the pending
    choice (``keep`` it, ``set`` it to the target, ``drop`` it) and whether the
    choice is appended right now."""

    outcome: ChoiceOutcome
    pending: Literal["keep", "set", "drop"]
    append_now: bool


_NOOP = ChoiceRow("noop", "keep", False)
_COMMIT = ChoiceRow("committed", "drop", True)
_QUEUE = ChoiceRow("queued", "set", False)
_CANCEL = ChoiceRow("cancelled", "drop", False)

#: (pending relation, target == folded) -> (row when idle, row when a turn
#: is open). Every combination is present, so the decision is total.
_CHOICES: Mapping[tuple[PendingRelation, bool], tuple[ChoiceRow, ChoiceRow]] = {
    # Always first: already pending at the target -> nothing to do.
    (PendingRelation.SAME, True): (_NOOP, _NOOP),
    (PendingRelation.SAME, False): (_NOOP, _NOOP),
    # Nothing pending and already recorded at the target -> nothing to do.
    (PendingRelation.NONE, True): (_NOOP, _NOOP),
    # A real change: appended at once when idle; in a turn it waits for the
    # next accepted pre-step.
    (PendingRelation.NONE, False): (_COMMIT, _QUEUE),
    (PendingRelation.OPPOSITE, False): (_COMMIT, _QUEUE),
    # An opposite choice was pending and the record already matches: it nets
    # out (in a turn, the flush would skip it).
    (PendingRelation.OPPOSITE, True): (_CANCEL, _CANCEL),
}

#: (pending relation, target == folded, turn open) -> row: ``_CHOICES``
#: with the turn's state as the key's third part.
CHOICE_TABLE: Mapping[tuple[PendingRelation, bool, bool], ChoiceRow] = {
    (relation, matches, turn_open): row
    for (relation, matches), rows in _CHOICES.items()
    for turn_open, row in zip((False, True), rows, strict=True)
}


# --------------------------------------------------------------------------
# The fold


@dataclass(frozen=True, slots=True)
class PlanModePayload:
    """The payload of ``plan/mode``: the recorded plan-mode state."""

    active: bool


def read_plan_mode(payload: JSONObject) -> bool:
    """Read a ``plan/mode`` payload (exactly ``{active: bool}``)."""
    body: PlanModePayload = read_as(PlanModePayload, payload)
    return body.active


def apply_plan_mode_event(active: bool, event: Event) -> bool:
    """Fold one event into the plan-mode state; other kinds pass through.

    Raises ``ReplayError`` (``malformed-payload``) for a bad ``plan/mode``
    payload.
    """
    if event.kind != PLAN_MODE:
        return active
    try:
        return read_plan_mode(event.payload)
    except PayloadError as exc:
        raise ReplayError(event.seq, "malformed-payload", exc.message) from exc


def fold_plan_mode(events: Iterable[Event], end: int | None = None) -> bool:
    """The recorded plan state: the last ``plan/mode`` before seq ``end``
    (exclusive; ``None`` means the whole log), else ``False``."""
    active = False
    for event in events:
        if end is not None and event.seq >= end:
            break
        active = apply_plan_mode_event(active, event)
    return active


@dataclass(frozen=True, slots=True)
class PlanModeView:
    """What ``get`` returns: the recorded state used to assemble the current
    step, and the chosen state waiting to be appended."""

    active: bool
    pending: bool | None


def get_plan_mode(events: Sequence[Event], pending: PendingChoice | None) -> PlanModeView:
    return PlanModeView(fold_plan_mode(events), None if pending is None else pending.target)


# --------------------------------------------------------------------------
# Appending a choice, and the pre-step flush

#: The source of the plan-mode notice.
NOTICE_SOURCE = PluginSource("plugin", "plan-mode")


def plan_mode_set(active: bool) -> Draft:
    """The ``plan/mode`` draft that records plan mode ``active``."""
    return Draft(PLAN_MODE, {"active": active})


def notice_text(active: bool, plan_status: PlanStatus | None = None) -> str:
    """The notice for a recorded choice of ``active``. Leaving plan mode is
    worded from the current plan's status: it speaks of an approved plan
    only when one is approved (waiting to start), of the executing plan only
    while one executes, and is neutral otherwise (no plan, a draft, a
    finished plan)."""
    if active:
        return (
            "Plan mode is now active: research, read and ask questions, then present a "
            "complete plan with exit_plan_mode before changing anything."
        )
    if plan_status == "approved":
        return "Plan mode is now off: carry out the approved plan."
    if plan_status == "executing":
        return "Plan mode is now off: continue the plan that is executing."
    return "Plan mode is now off: you are in build mode again."


def notice_due(events: Sequence[Event], target: bool) -> bool:
    """Whether appending a choice of ``target`` after ``events`` owes the
    model a notice.

    Only when the last recorded request header described the other state
    (so never before the first header), and only once per state between two
    headers: toggling back and forth between turns does not repeat it.
    """
    noticed: set[bool] = set()
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if event.kind == REQUEST_HEADER:
            try:
                header_state = read_request_header(event.payload).plan_mode
            except PayloadError as exc:
                raise ReplayError(event.seq, "malformed-payload", exc.message) from exc
            return header_state != target and target not in noticed
        if event.kind == PLAN_MODE and _is_notice(events, index + 1):
            noticed.add(apply_plan_mode_event(False, event))
    return False


def _is_notice(events: Sequence[Event], index: int) -> bool:
    if index >= len(events) or events[index].kind != USER_MESSAGE:
        return False
    try:
        return read_message(events[index].payload).source == NOTICE_SOURCE
    except PayloadError:
        return False


StepVerdict = Literal["accepted", "rejected", "aborted"]
