"""Goals: the values, the transition table and the ``goal/change`` payloads.

Theory of operation
-------------------
A session has at most one current goal: a long-running objective with a
durable lifecycle. Everything durable about it is folded from ``goal/change``
events (see ``kernel.goal.fold``); nothing else stores it.

A goal has one of four phases: ``active``, ``paused``, ``blocked`` (the only
phase that says *why* it stopped: a ``BlockedReason`` with a kebab-case code
to route on and a trimmed message for people and the model) and ``complete``.
Seven operations change it; ``TRANSITIONS`` lists every allowed
(operation, phase before) pair with the phase after, what it does to the
process-local activation, and the guards the operation must also pass. It is
the one table that the operations, the strict fold and the diagram generator
all read; a pair that is not in it is refused.

Activation is process state beside the fold, never persisted: whether this
process may start another goal round on its own. The table's activation column
says what each operation does to it (create and resume arm; pause, complete,
block and clear disarm; edit keeps it), and every session start disarms it, so
a restart never starts work by itself: a human resume re-arms it.

Every accepted change is a compare-and-set against a ``GoalRef(id,
revision)`` and raises the revision by exactly one. A change is recorded as a
full snapshot (the goal after the change, with ``rounds_started``,
``created_at`` and ``updated_at``), never a delta; ``clear`` is recorded as a
tombstone naming the cleared goal at the next revision. Both payload variants
have an exact key set and ``version`` 1. Timestamps are tied to the event that
carries them: ``updated_at`` (``cleared_at`` for a tombstone) equals the
event's ``at``, ``created_at`` equals the ``at`` of the goal's ``create`` and
never changes afterwards.

The two payload variants are ``SnapshotChange`` (the goal after the change,
as a ``GoalBody``, plus the counters) and ``ClearChange`` (the tombstone);
their annotations are the whole contract (see ``kernel.payload``). A
``version`` other than 1 is refused with code ``unknown-version``, an
operation outside ``OPERATIONS`` with ``unknown-operation`` and any other bad
shape with ``malformed-payload``; the fold turns the code into the replay
rule.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, ClassVar, Literal, TypeAlias

from ..payload import (
    Code,
    Count,
    JSONObject,
    Kebab,
    Millis,
    NonEmpty,
    Positive,
    PresentWhen,
    Trimmed,
    object_of,
    read_as,
    record_maker,
    shape_of,
)

__all__ = [
    "ARMED",
    "DEFAULT_MAX_ROUNDS",
    "DISARMED",
    "GOAL_CHANGE_VERSION",
    "OPERATIONS",
    "PHASES",
    "TRANSITIONS",
    "TRANSITION_TABLE",
    "Activation",
    "ActivationEffect",
    "BlockedReason",
    "ClearChange",
    "GoalBody",
    "GoalChange",
    "GoalOperation",
    "GoalPhase",
    "GoalRef",
    "GoalSnapshot",
    "Guard",
    "SnapshotChange",
    "SnapshotOperation",
    "Transition",
    "activation_after",
    "change_ref",
    "clear_payload",
    "read_goal_change",
    "session_started",
    "snapshot_payload",
]

GoalPhase = Literal["active", "paused", "blocked", "complete"]
SnapshotOperation = Literal["create", "edit", "pause", "resume", "complete", "block"]
GoalOperation = Literal[SnapshotOperation, "clear"]

PHASES: tuple[GoalPhase, ...] = typing.get_args(GoalPhase)
OPERATIONS: tuple[GoalOperation, ...] = typing.get_args(GoalOperation)

#: The round cap a goal gets when ``create`` is not given one.
DEFAULT_MAX_ROUNDS = 256
#: The only ``goal/change`` payload version this kernel reads and writes.
GOAL_CHANGE_VERSION: Literal[1] = 1


@dataclass(frozen=True, slots=True)
class GoalRef:
    """The compare-and-set handle of one revision of one goal (in a clear
    tombstone: the goal it clears, at the tombstone's own revision)."""

    id: NonEmpty
    revision: Positive


@dataclass(frozen=True, slots=True)
class BlockedReason:
    """Why a goal is blocked: a kebab-case ``code`` for routing and a trimmed,
    non-empty ``message``. ``goal.ops.block`` checks and trims it."""

    code: Kebab
    message: Trimmed


@dataclass(frozen=True, slots=True)
class GoalSnapshot:
    """The current goal as the log determines it.

    ``blocked_reason`` is set exactly when ``phase`` is ``blocked``.
    ``rounds_started`` counts the goal-attributed rounds admitted so far;
    ``created_at`` is the time of the ``create``, ``updated_at`` the time of
    the latest ``goal/change`` (rounds do not touch it).
    """

    id: str
    objective: str
    phase: GoalPhase
    blocked_reason: BlockedReason | None
    max_rounds: int
    revision: int
    rounds_started: int
    created_at: int
    updated_at: int

    @property
    def ref(self) -> GoalRef:
        return GoalRef(self.id, self.revision)


# --------------------------------------------------------------------------
# The transition table

#: What an accepted operation does to the process-local activation.
ActivationEffect = Literal["arm", "disarm", "keep"]
#: Extra conditions an operation must pass beyond the phase:
#: ``rounds-remaining``: rounds_started < max_rounds (resume);
#: ``disarmed``: the goal is not already armed (resume of an active goal;
#: process state, so only the operation checks it, never the fold);
#: ``reason``: a valid ``BlockedReason`` (block);
#: ``fresh-id``: an id never used before in this session (create).
Guard = Literal["rounds-remaining", "disarmed", "reason", "fresh-id"]


@dataclass(frozen=True, slots=True)
class Transition:
    """One allowed (operation, phase before) pair.

    ``source`` is ``None`` for "no current goal" and ``target`` is ``None``
    for "cleared".
    """

    operation: GoalOperation
    source: GoalPhase | None
    target: GoalPhase | None
    activation: ActivationEffect
    guards: tuple[Guard, ...] = ()


_STOPPED: tuple[GoalPhase, ...] = ("paused", "blocked")

#: Every allowed transition, one row each. Rows absent here are refused.
TRANSITIONS: tuple[Transition, ...] = (
    Transition("create", None, "active", "arm", ("fresh-id",)),
    Transition("create", "complete", "active", "arm", ("fresh-id",)),
    *(Transition("edit", phase, phase, "keep") for phase in PHASES),
    Transition("pause", "active", "paused", "disarm"),
    *(Transition("resume", phase, "active", "arm", ("rounds-remaining",)) for phase in _STOPPED),
    Transition("resume", "active", "active", "arm", ("rounds-remaining", "disarmed")),
    *(Transition("complete", phase, "complete", "disarm") for phase in ("active", *_STOPPED)),
    Transition("block", "active", "blocked", "disarm", ("reason",)),
    *(Transition("clear", phase, None, "disarm") for phase in PHASES),
)

#: ``TRANSITIONS`` keyed by (operation, phase before).
TRANSITION_TABLE: Mapping[tuple[GoalOperation, GoalPhase | None], Transition] = {
    (row.operation, row.source): row for row in TRANSITIONS
}


# --------------------------------------------------------------------------
# Activation (process state, never persisted)


@dataclass(frozen=True, slots=True)
class Activation:
    """Whether this process may continue the current goal on its own. It is
    never persisted: every session start disarms it (``session_started``)."""

    armed: bool = False


ARMED = Activation(True)
DISARMED = Activation(False)

_EFFECTS: Mapping[GoalOperation, ActivationEffect] = {
    row.operation: row.activation for row in TRANSITIONS
}


def activation_after(activation: Activation, operation: GoalOperation) -> Activation:
    """The activation after an accepted ``operation``: the table's activation
    column (create and resume arm; pause, complete, block, clear disarm; edit
    keeps it)."""
    effect = _EFFECTS[operation]
    if effect == "keep":
        return activation
    return ARMED if effect == "arm" else DISARMED


def session_started(activation: Activation) -> Activation:
    """Every session start disarms: the log keeps the goal, not the right to
    continue it without a human's resume."""
    del activation
    return DISARMED


# --------------------------------------------------------------------------
# goal/change payloads

#: ``version`` of every ``goal/change``: only 1 is read.
ChangeVersion: TypeAlias = Annotated[Literal[1], Code("unknown-version")]


@dataclass(frozen=True, slots=True)
class GoalBody:
    """The goal a snapshot change records (its counters sit beside it)."""

    __rules__: ClassVar = (
        PresentWhen("blocked_reason", "phase", "blocked", "must be an object exactly when the phase is blocked"),
    )

    id: NonEmpty
    revision: Positive
    objective: Trimmed
    phase: GoalPhase
    max_rounds: Positive
    blocked_reason: BlockedReason | None


@dataclass(frozen=True, slots=True)
class SnapshotChange:
    """The payload of a ``goal/change`` that records the goal after
    ``operation`` (any operation but ``clear``)."""

    version: ChangeVersion
    operation: Annotated[SnapshotOperation, Code("unknown-operation")]
    goal: GoalBody
    rounds_started: Count
    created_at: Millis
    updated_at: Millis

    @property
    def snapshot(self) -> GoalSnapshot:
        """The goal this change records, counters included."""
        body = self.goal
        snapshot = _snapshot_maker()(
            body.id,
            body.objective,
            body.phase,
            body.blocked_reason,
            body.max_rounds,
            body.revision,
            self.rounds_started,
            self.created_at,
            self.updated_at,
        )
        assert isinstance(snapshot, GoalSnapshot)
        return snapshot

    @staticmethod
    def of(operation: SnapshotOperation, goal: GoalSnapshot) -> SnapshotChange:
        """The change recording ``goal`` as the result of ``operation``."""
        body = GoalBody(goal.id, goal.revision, goal.objective, goal.phase, goal.max_rounds, goal.blocked_reason)
        return SnapshotChange(
            GOAL_CHANGE_VERSION, operation, body, goal.rounds_started, goal.created_at, goal.updated_at
        )


@dataclass(frozen=True, slots=True)
class ClearChange:
    """The payload of a ``goal/change`` tombstone: ``cleared`` is the goal at
    the tombstone's own revision (one past the cleared snapshot)."""

    version: ChangeVersion
    operation: Annotated[Literal["clear"], Code("unknown-operation")]
    cleared: GoalRef
    cleared_at: Millis


GoalChange: TypeAlias = SnapshotChange | ClearChange


@functools.cache
def _snapshot_maker() -> Callable[..., object]:
    # A goal is made for every change a fold reads: without __init__ (see
    # kernel.payload.record_maker), which costs about twice as much.
    return record_maker(shape_of(GoalSnapshot))


def snapshot_payload(operation: SnapshotOperation, goal: GoalSnapshot) -> JSONObject:
    """The ``goal/change`` payload recording ``goal`` as the result of
    ``operation`` (any operation but ``clear``)."""
    return object_of(SnapshotChange.of(operation, goal))


def clear_payload(cleared: GoalRef, at: int) -> JSONObject:
    """The ``goal/change`` tombstone clearing a goal; ``cleared`` is the goal at
    the tombstone's own revision (one past the cleared snapshot)."""
    return object_of(ClearChange(GOAL_CHANGE_VERSION, "clear", cleared, at))


def read_goal_change(payload: JSONObject) -> GoalChange:
    """Read a ``goal/change`` payload strictly.

    Raises ``PayloadError``: code ``unknown-version`` when ``version`` is not
    1, ``unknown-operation`` for an operation outside ``OPERATIONS``, and
    ``malformed-payload`` for a missing or extra key or a bad value.
    """
    change: GoalChange = read_as(GoalChange, payload)
    return change


def change_ref(change: GoalChange) -> GoalRef:
    """The goal and revision a decoded change records."""
    return change.cleared if isinstance(change, ClearChange) else GoalRef(change.goal.id, change.goal.revision)
