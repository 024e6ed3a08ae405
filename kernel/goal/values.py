"""Goals: the values, the transition table and the ``goal/change`` payloads.

Theory of operation
-------------------
A session has at most one current goal: a long-running objective with a
durable lifecycle. Everything durable about it is folded from ``goal/change``
events (see ``kernel.goal_fold``); nothing else stores it.

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

Payload of a snapshot change::

    {"version": 1, "operation": "create" | "edit" | "pause" | "resume" |
                                "complete" | "block",
     "goal": {"id": str, "revision": int >= 1, "objective": str (trimmed,
              non-empty), "phase": phase, "max_rounds": int >= 1,
              "blocked_reason": null | {"code": kebab-case, "message": str}},
     "rounds_started": int >= 0, "created_at": int >= 0, "updated_at": int >= 0}

``blocked_reason`` is an object exactly when the phase is ``blocked``.

Payload of a clear tombstone::

    {"version": 1, "operation": "clear",
     "cleared": {"id": str, "revision": int >= 1}, "cleared_at": int >= 0}

The readers raise ``PayloadError`` with code ``unknown-version`` or
``unknown-operation`` for those two cases and ``malformed-payload`` for any
other bad shape; the fold turns the code into the replay rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, TypeAlias

from ..errors import PayloadError, is_kebab_case
from ..payload import JSONObject, check_keys, read_int, read_object

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
    "GoalChange",
    "GoalOperation",
    "GoalPhase",
    "GoalRef",
    "GoalSnapshot",
    "Guard",
    "SnapshotChange",
    "Transition",
    "activation_after",
    "change_ref",
    "clear_payload",
    "read_goal_change",
    "session_started",
    "snapshot_payload",
]

GoalPhase = Literal["active", "paused", "blocked", "complete"]
GoalOperation = Literal["create", "edit", "pause", "resume", "complete", "block", "clear"]

PHASES: tuple[GoalPhase, ...] = ("active", "paused", "blocked", "complete")
OPERATIONS: tuple[GoalOperation, ...] = (
    "create",
    "edit",
    "pause",
    "resume",
    "complete",
    "block",
    "clear",
)

#: The round cap a goal gets when ``create`` is not given one.
DEFAULT_MAX_ROUNDS = 256
#: The only ``goal/change`` payload version this kernel reads and writes.
GOAL_CHANGE_VERSION = 1


@dataclass(frozen=True, slots=True)
class GoalRef:
    """The compare-and-set handle of one revision of one goal."""

    id: str
    revision: int


@dataclass(frozen=True, slots=True)
class BlockedReason:
    """Why a goal is blocked: a kebab-case ``code`` for routing and a trimmed,
    non-empty ``message``. ``goal_ops.block`` validates and trims it."""

    code: str
    message: str


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
# goal/change payloads: builders


def _reason_json(reason: BlockedReason | None) -> JSONObject | None:
    return None if reason is None else {"code": reason.code, "message": reason.message}


def snapshot_payload(operation: GoalOperation, goal: GoalSnapshot) -> JSONObject:
    """The ``goal/change`` payload recording ``goal`` as the result of
    ``operation`` (any operation but ``clear``)."""
    return {
        "version": GOAL_CHANGE_VERSION,
        "operation": operation,
        "goal": {
            "id": goal.id,
            "revision": goal.revision,
            "objective": goal.objective,
            "phase": goal.phase,
            "max_rounds": goal.max_rounds,
            "blocked_reason": _reason_json(goal.blocked_reason),
        },
        "rounds_started": goal.rounds_started,
        "created_at": goal.created_at,
        "updated_at": goal.updated_at,
    }


def clear_payload(cleared: GoalRef, at: int) -> JSONObject:
    """The ``goal/change`` tombstone clearing a goal; ``cleared`` is the goal at
    the tombstone's own revision (one past the cleared snapshot)."""
    return {
        "version": GOAL_CHANGE_VERSION,
        "operation": "clear",
        "cleared": {"id": cleared.id, "revision": cleared.revision},
        "cleared_at": at,
    }


# --------------------------------------------------------------------------
# goal/change payloads: strict readers


@dataclass(frozen=True, slots=True)
class SnapshotChange:
    """A decoded snapshot change; ``goal`` carries the top-level counters."""

    operation: GoalOperation
    goal: GoalSnapshot


@dataclass(frozen=True, slots=True)
class ClearChange:
    """A decoded clear tombstone."""

    cleared: GoalRef
    cleared_at: int


GoalChange: TypeAlias = SnapshotChange | ClearChange

_SNAPSHOT_KEYS = frozenset(
    {"version", "operation", "goal", "rounds_started", "created_at", "updated_at"}
)
_CLEAR_KEYS = frozenset({"version", "operation", "cleared", "cleared_at"})
_GOAL_KEYS = frozenset({"id", "revision", "objective", "phase", "max_rounds", "blocked_reason"})
_REF_KEYS = frozenset({"id", "revision"})
_REASON_KEYS = frozenset({"code", "message"})


def _read_id(body: JSONObject, where: str) -> str:
    value = body["id"]
    if not isinstance(value, str) or not value:
        raise PayloadError(f"{where} 'id' must be a non-empty string")
    return value


def _read_trimmed(body: JSONObject, key: str, where: str) -> str:
    value = body[key]
    if not isinstance(value, str) or not value.strip() or value != value.strip():
        raise PayloadError(f"{where} {key!r} must be a non-empty string without surrounding space")
    return value


def _read_reason(value: object) -> BlockedReason:
    body = check_keys(value, _REASON_KEYS, where="goal 'blocked_reason'")
    code = body["code"]
    if not isinstance(code, str) or not is_kebab_case(code):
        raise PayloadError("goal 'blocked_reason' 'code' must be a kebab-case string")
    return BlockedReason(code, _read_trimmed(body, "message", "goal 'blocked_reason'"))


def _read_snapshot(body: JSONObject, operation: GoalOperation) -> SnapshotChange:
    goal = check_keys(read_object(body, "goal"), _GOAL_KEYS, where="goal/change 'goal'")
    phase = _as_phase(goal["phase"])
    raw_reason = goal["blocked_reason"]
    reason = None if raw_reason is None else _read_reason(raw_reason)
    if (reason is None) != (phase != "blocked"):
        raise PayloadError(
            "goal 'blocked_reason' must be an object exactly when the phase is blocked"
        )
    snapshot = GoalSnapshot(
        id=_read_id(goal, "goal"),
        objective=_read_trimmed(goal, "objective", "goal"),
        phase=phase,
        blocked_reason=reason,
        max_rounds=read_int(goal, "max_rounds", minimum=1),
        revision=read_int(goal, "revision", minimum=1),
        rounds_started=read_int(body, "rounds_started", minimum=0),
        created_at=read_int(body, "created_at", minimum=0),
        updated_at=read_int(body, "updated_at", minimum=0),
    )
    return SnapshotChange(operation, snapshot)


def _as_phase(value: object) -> GoalPhase:
    for phase in PHASES:
        if isinstance(value, str) and phase == value:
            return phase
    raise PayloadError(f"goal 'phase' must be one of {list(PHASES)}, got {value!r}")


def _as_operation(value: object) -> GoalOperation:
    for operation in OPERATIONS:
        if isinstance(value, str) and operation == value:
            return operation
    raise PayloadError(f"unknown goal operation {value!r}", code="unknown-operation")


def read_goal_change(payload: JSONObject) -> GoalChange:
    """Read a ``goal/change`` payload strictly.

    Raises ``PayloadError``: code ``unknown-version`` when ``version`` is not
    1, ``unknown-operation`` for an operation outside ``OPERATIONS``, and
    ``malformed-payload`` for a missing or extra key or a bad value.
    """
    if not isinstance(payload, Mapping):
        raise PayloadError(f"goal/change payload must be an object, got {type(payload).__name__}")
    if "version" not in payload or "operation" not in payload:
        raise PayloadError("goal/change payload needs 'version' and 'operation'")
    version = payload["version"]
    if isinstance(version, bool) or not isinstance(version, int) or version != GOAL_CHANGE_VERSION:
        raise PayloadError(f"unknown goal/change version {version!r}", code="unknown-version")
    operation = _as_operation(payload["operation"])
    if operation == "clear":
        body = check_keys(payload, _CLEAR_KEYS, where="goal/change clear payload")
        ref = check_keys(read_object(body, "cleared"), _REF_KEYS, where="goal/change 'cleared'")
        return ClearChange(
            GoalRef(_read_id(ref, "cleared"), read_int(ref, "revision", minimum=1)),
            read_int(body, "cleared_at", minimum=0),
        )
    body = check_keys(payload, _SNAPSHOT_KEYS, where="goal/change snapshot payload")
    return _read_snapshot(body, operation)


def change_ref(change: GoalChange) -> GoalRef:
    """The goal and revision a decoded change records."""
    return change.cleared if isinstance(change, ClearChange) else change.goal.ref
