"""The strict goal fold: ``fold_goal`` and its incremental form.

Theory of operation
-------------------
The goal is a pure fold of the session log. Two kinds matter:

- ``goal/change`` (a snapshot or a clear tombstone, see ``kernel.goal``): it
  must be exactly the change the transition table allows from the folded
  state, at the next revision, with the counters and timestamps carried over;
- ``user/message`` whose source is ``{type: "goal", goal_id, revision,
  round}``: a round. It advances ``rounds_started`` only when it names the
  current goal at its current revision, the goal is active, the round is
  exactly ``rounds_started + 1`` and it is within ``max_rounds``.

Every other kind passes through (``fold_goal`` still checks the envelope of
every event). Anything else is a violation: the fold raises ``ReplayError`` at
the first bad event with one of the rules in ``GOAL_REPLAY_RULES``. A corrupt
record is never skipped or repaired.

Checks run in a fixed order, so a bad event always reports the same rule:
envelope (seq-gap, malformed ``at``, time-regressed, unknown-kind), payload
shape (malformed-payload, unknown-version, unknown-operation), identity
(goal-mismatch, id-reused), revision (stale-revision, revision-gap),
transition (transition-not-allowed), then rounds-mismatch and
timestamp-mismatch for a change; for a round, after identity and revision:
round-not-positive, round-while-stopped, round-over-cap, round-gap.

``GoalFold`` is the incremental form: it keeps the state of the valid prefix
and, once it meets a bad event, sticks there and reports the same failure
however often it is asked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..errors import PayloadError, ReplayError
from ..idset import IdSet
from ..log import GOAL_CHANGE, USER_MESSAGE, Event, check_envelope, read_message_round
from ..payload import JSON, JSONObject
from .values import (
    GOAL_CHANGE_VERSION,
    OPERATIONS,
    PHASES,
    TRANSITION_TABLE,
    ClearChange,
    GoalChange,
    GoalRef,
    GoalSnapshot,
    SnapshotChange,
    change_ref,
    read_goal_change,
)

__all__ = [
    "GOAL_REPLAY_RULES",
    "GoalFailure",
    "GoalFold",
    "GoalState",
    "advance_goal_fold",
    "apply_goal_change",
    "apply_goal_event",
    "check_goal_round",
    "event_ref",
    "fold_goal",
    "with_rounds",
]

#: Every rule the goal fold can report, with what breaks it. The first four
#: come from ``kernel.log.check_envelope``.
GOAL_REPLAY_RULES: Mapping[str, str] = {
    "seq-gap": "the seq is not the previous seq + 1 (starting at 1)",
    "time-regressed": "the event's at is earlier than the previous event's",
    "unknown-kind": "the event kind is not one the session log knows",
    "malformed-payload": (
        "a bad payload shape: a missing or extra key, a wrong type, a bad value "
        "(also a negative or non-integer at)"
    ),
    "unknown-version": "a goal/change payload whose version is not 1",
    "unknown-operation": "a goal/change payload whose operation is not a goal operation",
    "goal-mismatch": (
        "a change other than create, or a round, names a goal that is not the "
        "current one (or there is no current goal)"
    ),
    "id-reused": "a create uses a goal id already used earlier in the log",
    "stale-revision": (
        "a change whose revision is not above the current one, or a round "
        "attributed to an earlier revision"
    ),
    "revision-gap": (
        "a change whose revision skips past current + 1 (a create not at "
        "revision 1), or a round attributed to a later revision"
    ),
    "transition-not-allowed": (
        "the transition table has no row for this operation from the current "
        "phase, or the snapshot is not what the row produces (phase, objective "
        "and cap outside edit, blocked reason, a resume with no rounds left)"
    ),
    "rounds-mismatch": "a change whose rounds_started differs from the folded count",
    "timestamp-mismatch": (
        "updated_at or cleared_at differs from the event's at, or created_at is "
        "not the create's at"
    ),
    "round-not-positive": "a round numbered below 1",
    "round-while-stopped": "a round while the goal is paused, blocked or complete",
    "round-over-cap": "a round numbered above max_rounds",
    "round-gap": "a round that is not exactly rounds_started + 1",
}


_NO_IDS = IdSet()


@dataclass(frozen=True, slots=True)
class GoalState:
    """What the log determines about goals: the current goal (``None`` before
    the first create and after a clear), the ref of the latest change
    (including a clear tombstone) and the goal ids created (``used_ids``).

    ``used_ids`` grows with the history, so it is an ``IdSet`` (an insert
    does not copy it) and it is an index rather than part of the state's
    value: it takes no part in equality, and a store does not snapshot it.
    A fold of the whole log holds every id; a state a store resumed from its
    snapshot holds only the ids the store looked up for the events it folds
    next (the store keeps every id in an index of its own and checks each
    create against it), which is all the fold ever asks about."""

    current: GoalSnapshot | None = None
    last_ref: GoalRef | None = None
    used_ids: IdSet = field(default=_NO_IDS, compare=False)


def _check_target(seq: int, current: GoalSnapshot | None, ref: GoalRef) -> GoalSnapshot:
    """Identity and compare-and-set for a change other than create."""
    if current is None or ref.id != current.id:
        have = "no current goal" if current is None else f"the current goal is {current.id!r}"
        raise ReplayError(seq, "goal-mismatch", f"the change names goal {ref.id!r}, but {have}")
    if ref.revision <= current.revision:
        raise ReplayError(
            seq, "stale-revision", f"revision {ref.revision} is not above the current revision {current.revision}"
        )
    if ref.revision > current.revision + 1:
        raise ReplayError(
            seq, "revision-gap", f"revision {ref.revision} skips past the next revision {current.revision + 1}"
        )
    return current


def _apply_create(state: GoalState, seq: int, at: int, goal: GoalSnapshot) -> GoalState:
    if goal.id in state.used_ids:
        raise ReplayError(seq, "id-reused", f"goal id {goal.id!r} was already used in this log")
    if goal.revision != 1:
        raise ReplayError(seq, "revision-gap", f"a create must be revision 1, not {goal.revision}")
    source = None if state.current is None else state.current.phase
    row = TRANSITION_TABLE.get(("create", source))
    if row is None or goal.phase != row.target:
        raise ReplayError(
            seq, "transition-not-allowed", f"create from {source or 'no goal'} to {goal.phase} is not allowed"
        )
    if goal.rounds_started != 0:
        raise ReplayError(seq, "rounds-mismatch", "a new goal starts with rounds_started 0")
    if goal.created_at != at or goal.updated_at != at:
        raise ReplayError(seq, "timestamp-mismatch", f"created_at and updated_at must equal the event's at {at}")
    return GoalState(goal, goal.ref, state.used_ids.with_id(goal.id))


def _apply_snapshot(state: GoalState, seq: int, at: int, change: SnapshotChange, rounds: int) -> GoalState:
    goal = change.goal
    if change.operation == "create":
        return _apply_create(state, seq, at, goal)
    ref = goal.ref
    current = _check_target(seq, state.current, ref)
    row = TRANSITION_TABLE.get((change.operation, current.phase))
    if row is None or goal.phase != row.target:
        raise ReplayError(
            seq, "transition-not-allowed", f"{change.operation} from {current.phase} to {goal.phase} is not allowed"
        )
    if change.operation == "edit":
        if goal.blocked_reason != current.blocked_reason:
            raise ReplayError(seq, "transition-not-allowed", "an edit cannot change the blocked reason")
    elif goal.objective != current.objective or goal.max_rounds != current.max_rounds:
        raise ReplayError(
            seq, "transition-not-allowed", f"only edit may change the objective or max_rounds, not {change.operation}"
        )
    if "rounds-remaining" in row.guards and rounds >= current.max_rounds:
        raise ReplayError(seq, "transition-not-allowed", f"resume with no rounds left ({rounds}/{current.max_rounds})")
    if goal.rounds_started != rounds:
        raise ReplayError(
            seq, "rounds-mismatch", f"rounds_started {goal.rounds_started} differs from the folded {rounds}"
        )
    if goal.created_at != current.created_at or goal.updated_at != at:
        raise ReplayError(
            seq,
            "timestamp-mismatch",
            f"created_at must stay {current.created_at} and updated_at must equal the event's at "
            f"{at}",
        )
    return GoalState(goal, ref, state.used_ids)


def _apply_clear(state: GoalState, seq: int, at: int, change: ClearChange) -> GoalState:
    _check_target(seq, state.current, change.cleared)
    if change.cleared_at != at:
        raise ReplayError(seq, "timestamp-mismatch", f"cleared_at must equal the event's at {at}")
    return GoalState(None, change.cleared, state.used_ids)


def apply_goal_change(state: GoalState, seq: int, at: int, payload: JSONObject, rounds: int) -> GoalState:
    """Fold a ``goal/change`` event (its seq, time and payload) into the goal
    state, whose current goal has started ``rounds`` rounds (a fold that
    counts rounds apart from the snapshot passes its count; see
    ``with_rounds``). The result holds the change's own snapshot, so it is
    never behind. Raises a positioned ``ReplayError`` for a bad change."""
    try:
        change = _read_change(payload)
    except PayloadError as exc:
        raise ReplayError(seq, exc.code, exc.message) from exc
    if isinstance(change, ClearChange):
        return _apply_clear(state, seq, at, change)
    return _apply_snapshot(state, seq, at, change, rounds)


def check_goal_round(
    current: GoalSnapshot | None, rounds_started: int, seq: int, attributed: tuple[str, int, int]
) -> None:
    """Check a goal-attributed ``user/message`` (already read: ``attributed``
    is the goal id, revision and round it names, see
    ``kernel.log.read_message_round``) against the current goal, whose rounds
    so far are ``rounds_started``. Raises a positioned ``ReplayError`` for a
    round the goal does not allow."""
    goal_id, revision, round_ = attributed
    if current is None or goal_id != current.id:
        have = "no current goal" if current is None else f"the current goal is {current.id!r}"
        raise ReplayError(seq, "goal-mismatch", f"a round names goal {goal_id!r}, but {have}")
    if revision < current.revision:
        raise ReplayError(seq, "stale-revision", f"a round at revision {revision}, the goal is at {current.revision}")
    if revision > current.revision:
        raise ReplayError(
            seq, "revision-gap", f"a round at revision {revision}, the goal is only at {current.revision}"
        )
    if round_ < 1:
        raise ReplayError(seq, "round-not-positive", f"round {round_} is not positive")
    if current.phase != "active":
        raise ReplayError(seq, "round-while-stopped", f"a round while the goal is {current.phase}")
    if round_ > current.max_rounds:
        raise ReplayError(seq, "round-over-cap", f"round {round_} exceeds max_rounds {current.max_rounds}")
    if round_ != rounds_started + 1:
        raise ReplayError(seq, "round-gap", f"round {round_} does not follow round {rounds_started}")


def with_rounds(state: GoalState, rounds_started: int) -> GoalState:
    """``state`` whose current goal has started ``rounds_started`` rounds
    (``state`` itself when there is no goal or the count is already that)."""
    goal = state.current
    if goal is None or goal.rounds_started == rounds_started:
        return state
    # The constructors, not dataclasses.replace: rounds are most of a goal log.
    snapshot = GoalSnapshot(
        goal.id,
        goal.objective,
        goal.phase,
        goal.blocked_reason,
        goal.max_rounds,
        goal.revision,
        rounds_started,
        goal.created_at,
        goal.updated_at,
    )
    return GoalState(snapshot, state.last_ref, state.used_ids)


_SNAPSHOT_KEYS = frozenset({"version", "operation", "goal", "rounds_started", "created_at", "updated_at"})
_GOAL_KEYS = frozenset({"id", "revision", "objective", "phase", "max_rounds", "blocked_reason"})
_SNAPSHOT_OPERATIONS = frozenset(OPERATIONS) - {"clear"}
_UNBLOCKED_PHASES = frozenset(PHASES) - {"blocked"}


def _read_change(payload: JSONObject) -> GoalChange:
    """``read_goal_change``, with the most common payload (a snapshot of a
    goal that is not blocked, as a plain dict of exact types) read here
    directly. Anything else, valid or not, is read by ``read_goal_change``,
    which stays the one definition of the payload and of its errors."""
    if type(payload) is dict and payload.keys() == _SNAPSHOT_KEYS:
        goal, operation, version = payload["goal"], payload["operation"], payload["version"]
        plain = type(goal) is dict and goal.keys() == _GOAL_KEYS and type(version) is int and type(operation) is str
        if plain and version == GOAL_CHANGE_VERSION and operation in _SNAPSHOT_OPERATIONS:
            snapshot = _plain_snapshot(goal, payload)
            if snapshot is not None:
                return SnapshotChange(operation, snapshot)
    return read_goal_change(payload)


def _plain_snapshot(goal: dict[str, JSON], payload: dict[str, JSON]) -> GoalSnapshot | None:
    ident, objective, phase = goal["id"], goal["objective"], goal["phase"]
    max_rounds, revision = goal["max_rounds"], goal["revision"]
    rounds, created_at, updated_at = payload["rounds_started"], payload["created_at"], payload["updated_at"]
    if not (type(ident) is str and ident and type(objective) is str and objective and objective == objective.strip()):
        return None
    if not (type(phase) is str and phase in _UNBLOCKED_PHASES and goal["blocked_reason"] is None):
        return None
    if not (type(max_rounds) is int and max_rounds >= 1 and type(revision) is int and revision >= 1):
        return None
    if not (type(rounds) is int and rounds >= 0 and type(created_at) is int and created_at >= 0):
        return None
    if not (type(updated_at) is int and updated_at >= 0):
        return None
    return GoalSnapshot(ident, objective, phase, None, max_rounds, revision, rounds, created_at, updated_at)


def apply_goal_event(state: GoalState, event: Event) -> GoalState:
    """Fold one event into the goal state (no envelope check; other kinds
    pass through). Raises a positioned ``ReplayError`` for a bad event."""
    rounds = 0 if state.current is None else state.current.rounds_started
    return with_rounds(*_counted(state, rounds, event))


def _counted(state: GoalState, rounds: int, event: Event) -> tuple[GoalState, int]:
    """``apply_goal_event`` with the current goal's rounds counted apart from
    its snapshot (``rounds``, which may be ahead of it; see ``with_rounds``)."""
    try:
        if event.kind == GOAL_CHANGE:
            state = apply_goal_change(state, event.seq, event.at, event.payload, rounds)
            return state, 0 if state.current is None else state.current.rounds_started
        if event.kind == USER_MESSAGE:
            attributed = read_message_round(event.payload)
            if attributed is not None:
                check_goal_round(state.current, rounds, event.seq, attributed)
                return state, attributed[2]
    except PayloadError as exc:
        raise ReplayError(event.seq, exc.code, exc.message) from exc
    return state, rounds


# --------------------------------------------------------------------------
# Whole and incremental folds


@dataclass(frozen=True, slots=True)
class GoalFailure:
    """Where and why an incremental fold stopped."""

    position: int
    rule: str
    detail: str

    def error(self) -> ReplayError:
        """A fresh ``ReplayError`` for this failure."""
        return ReplayError(self.position, self.rule, self.detail)


@dataclass(frozen=True, slots=True)
class GoalFold:
    """An incremental strict fold: the state after the valid prefix, the last
    event of that prefix, and the failure it stopped at (if any)."""

    state: GoalState = GoalState()
    last: Event | None = None
    failure: GoalFailure | None = None

    def result(self) -> GoalState:
        """The folded state; raises the stored ``ReplayError`` after a failure."""
        if self.failure is not None:
            raise self.failure.error()
        return self.state


def advance_goal_fold(fold: GoalFold, events: Iterable[Event]) -> GoalFold:
    """Fold more events (envelope included). Once failed, the fold ignores any
    further events and keeps its valid prefix and its failure."""
    if fold.failure is not None:
        return fold
    state, last = fold.state, fold.last
    rounds = 0 if state.current is None else state.current.rounds_started
    for event in events:
        try:
            check_envelope(last, event)
            state, rounds = _counted(state, rounds, event)
        except ReplayError as exc:
            return GoalFold(with_rounds(state, rounds), last, GoalFailure(exc.position, exc.rule, exc.detail))
        last = event
    return GoalFold(with_rounds(state, rounds), last, None)


def fold_goal(events: Iterable[Event]) -> GoalState:
    """The strict goal fold of a whole log, envelope checks included.

    Raises ``ReplayError`` at the first bad event (rules: ``GOAL_REPLAY_RULES``).
    """
    return advance_goal_fold(GoalFold(), events).result()


def event_ref(event: Event) -> GoalRef:
    """The goal and revision a ``goal/change`` event records (a tombstone's
    own revision for a clear). Raises ``ReplayError`` for a bad payload."""
    try:
        return change_ref(read_goal_change(event.payload))
    except PayloadError as exc:
        raise ReplayError(event.seq, exc.code, exc.message) from exc
