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

A change is judged by named checks (``CHECKS``), as the plan machine's are:
first the ones that name the goal it is about (``goal-ref``; a create's
``fresh-id`` and ``first-revision``), then its row of ``TRANSITION_TABLE``
(none, or another target phase: ``transition-not-allowed``), then the row's
checks (``row_checks``: what the operation must keep, the row's guards the
log can show, the counters and the times). The operations in
``kernel.goal.ops`` prove each change they decide with the same checks.

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

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from ..errors import PayloadError, ReplayError
from ..idset import IdSet
from ..log import GOAL_CHANGE, USER_MESSAGE, Event, GoalSource, check_envelope, read_message
from ..payload import maker
from .values import (
    TRANSITION_TABLE,
    ClearChange,
    GoalBody,
    GoalChange,
    GoalOperation,
    GoalPhase,
    GoalRef,
    GoalSnapshot,
    SnapshotChange,
    Transition,
    change_ref,
    read_goal_change,
)

__all__ = [
    "CHECKS",
    "GOAL_REPLAY_RULES",
    "ChangeContext",
    "GoalFailure",
    "GoalFold",
    "GoalState",
    "advance_goal_fold",
    "apply_goal_change",
    "apply_goal_event",
    "check_goal_round",
    "event_ref",
    "fold_goal",
    "row_checks",
    "with_rounds",
]

#: Every rule the goal fold can report, with what breaks it. The first four
#: come from ``kernel.log.check_envelope``.
GOAL_REPLAY_RULES: Mapping[str, str] = {
    "seq-gap": "the seq is not the previous seq + 1 (starting at 1)",
    "time-regressed": "the event's at is earlier than the previous event's",
    "unknown-kind": "the event kind is not one the session log knows",
    "malformed-payload": (
        "a bad payload shape: a missing or extra key, a wrong type, a bad value, an integer "
        "beyond the safe integers (also a negative, non-integer or unsafe at)"
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


# --------------------------------------------------------------------------
# The named checks of a change

#: What a check reads: the state before the change, the change as a snapshot
#: change (``None`` for a clear), as a clear (``None`` otherwise), the current
#: goal's folded round count, and the event's seq and time.
ChangeContext = tuple[GoalState, SnapshotChange | None, ClearChange | None, int, int, int]
Check = Callable[[ChangeContext], None]


def _goal_ref(ctx: ChangeContext) -> None:
    state, change, clear, _, seq, _ = ctx
    named: GoalRef | GoalBody = clear.cleared if clear is not None else change.goal  # type: ignore[union-attr]
    current = state.current
    if current is None or named.id != current.id:
        have = "no current goal" if current is None else f"the current goal is {current.id!r}"
        raise ReplayError(seq, "goal-mismatch", f"the change names goal {named.id!r}, but {have}")
    revision = named.revision
    if revision <= current.revision:
        raise ReplayError(
            seq, "stale-revision", f"revision {revision} is not above the current revision {current.revision}"
        )
    if revision > current.revision + 1:
        raise ReplayError(
            seq, "revision-gap", f"revision {revision} skips past the next revision {current.revision + 1}"
        )


# The checks below run on snapshot changes only (after goal-ref, or a create
# row, where the checks that read the current goal have one).


def _fresh_id(ctx: ChangeContext) -> None:
    change = ctx[1]
    assert change is not None
    if change.goal.id in ctx[0].used_ids:
        raise ReplayError(ctx[4], "id-reused", f"goal id {change.goal.id!r} was already used in this log")


def _first_revision(ctx: ChangeContext) -> None:
    change = ctx[1]
    assert change is not None
    if change.goal.revision != 1:
        raise ReplayError(ctx[4], "revision-gap", f"a create must be revision 1, not {change.goal.revision}")


def _keeps_reason(ctx: ChangeContext) -> None:
    change, current = ctx[1], ctx[0].current
    assert change is not None
    assert current is not None
    if change.goal.blocked_reason != current.blocked_reason:
        raise ReplayError(ctx[4], "transition-not-allowed", "an edit cannot change the blocked reason")


def _keeps_objective_and_cap(ctx: ChangeContext) -> None:
    change, current = ctx[1], ctx[0].current
    assert change is not None
    assert current is not None
    if change.goal.objective != current.objective or change.goal.max_rounds != current.max_rounds:
        raise ReplayError(
            ctx[4],
            "transition-not-allowed",
            f"only edit may change the objective or max_rounds, not {change.operation}",
        )


def _rounds_remaining(ctx: ChangeContext) -> None:
    current, rounds = ctx[0].current, ctx[3]
    assert current is not None
    if rounds >= current.max_rounds:
        raise ReplayError(
            ctx[4], "transition-not-allowed", f"resume with no rounds left ({rounds}/{current.max_rounds})"
        )


def _starts_counting(ctx: ChangeContext) -> None:
    change = ctx[1]
    assert change is not None
    if change.rounds_started != 0:
        raise ReplayError(ctx[4], "rounds-mismatch", "a new goal starts with rounds_started 0")


def _rounds_carried(ctx: ChangeContext) -> None:
    change, rounds = ctx[1], ctx[3]
    assert change is not None
    if change.rounds_started != rounds:
        raise ReplayError(
            ctx[4], "rounds-mismatch", f"rounds_started {change.rounds_started} differs from the folded {rounds}"
        )


def _stamped_at_create(ctx: ChangeContext) -> None:
    change, at = ctx[1], ctx[5]
    assert change is not None
    if change.created_at != at or change.updated_at != at:
        raise ReplayError(ctx[4], "timestamp-mismatch", f"created_at and updated_at must equal the event's at {at}")


def _stamped(ctx: ChangeContext) -> None:
    change, current, at = ctx[1], ctx[0].current, ctx[5]
    assert change is not None
    assert current is not None
    if change.created_at != current.created_at or change.updated_at != at:
        raise ReplayError(
            ctx[4],
            "timestamp-mismatch",
            f"created_at must stay {current.created_at} and updated_at must equal the event's at {at}",
        )


def _cleared_now(ctx: ChangeContext) -> None:
    clear, at = ctx[2], ctx[5]
    assert clear is not None
    if clear.cleared_at != at:
        raise ReplayError(ctx[4], "timestamp-mismatch", f"cleared_at must equal the event's at {at}")


#: Every named check of a ``goal/change``, each raising the rule it enforces:
#: ``goal-ref`` (``goal-mismatch``, ``stale-revision``, ``revision-gap``: the
#: change names the current goal at the next revision), ``fresh-id``
#: (``id-reused``), ``first-revision`` (``revision-gap``), ``keeps-reason``
#: and ``keeps-objective-and-cap`` (``transition-not-allowed``: what only an
#: edit may change, and what not even an edit may), ``rounds-remaining``
#: (``transition-not-allowed``), ``starts-counting`` and ``rounds-carried``
#: (``rounds-mismatch``), ``stamped-at-create``, ``stamped`` and
#: ``cleared-now`` (``timestamp-mismatch``).
CHECKS: Mapping[str, Check] = MappingProxyType(
    {
        "goal-ref": _goal_ref,
        "fresh-id": _fresh_id,
        "first-revision": _first_revision,
        "keeps-reason": _keeps_reason,
        "keeps-objective-and-cap": _keeps_objective_and_cap,
        "rounds-remaining": _rounds_remaining,
        "starts-counting": _starts_counting,
        "rounds-carried": _rounds_carried,
        "stamped-at-create": _stamped_at_create,
        "stamped": _stamped,
        "cleared-now": _cleared_now,
    }
)

#: The checks that name the goal a change is about, run before its row is
#: looked up (identity and revision come before the transition).
_IDENTITY: Mapping[GoalOperation, tuple[str, ...]] = MappingProxyType(
    {"create": ("fresh-id", "first-revision")}
)


@functools.cache
def row_checks(row: Transition) -> tuple[str, ...]:
    """The checks a change must pass once ``row`` allows it: what it must
    keep, the row's guards that the log can show (``disarmed`` is process
    state, for the operations alone), and its counters and times."""
    guards = tuple(g for g in row.guards if g in CHECKS and g not in _IDENTITY.get(row.operation, ()))
    if row.operation == "create":
        return (*guards, "starts-counting", "stamped-at-create")
    if row.operation == "clear":
        return (*guards, "cleared-now")
    keeps = "keeps-reason" if row.operation == "edit" else "keeps-objective-and-cap"
    return (keeps, *guards, "rounds-carried", "stamped")


@functools.cache
def _checks(names: tuple[str, ...]) -> tuple[Check, ...]:
    return tuple(CHECKS[name] for name in names)


#: How a change of one operation from one phase (``None``: no current goal)
#: is judged: the checks that name its goal, its row of ``TRANSITION_TABLE``
#: (``None``: none) and the row's checks, as functions.
_Plan = tuple[tuple[Check, ...], Transition | None, tuple[Check, ...]]
#: The plans made so far, by (operation, phase before), each with the table
#: it was read from.
_PLANS: dict[tuple[GoalOperation, GoalPhase | None], tuple[object, _Plan]] = {}


def _plan(operation: GoalOperation, source: GoalPhase | None) -> _Plan:
    """The plan of a change of ``operation`` from ``source``, read from
    ``TRANSITION_TABLE`` once per pair: looking a row's checks up by the row
    costs more than the rest of a change."""
    key = (operation, source)
    found = _PLANS.get(key)
    if found is not None and found[0] is TRANSITION_TABLE:
        return found[1]
    row = TRANSITION_TABLE.get(key)
    plan = (_checks(_IDENTITY.get(operation, ("goal-ref",))), row, () if row is None else _checks(row_checks(row)))
    _PLANS[key] = (TRANSITION_TABLE, plan)
    return plan


@functools.cache
def _makers() -> tuple[Callable[..., GoalState], Callable[..., GoalRef]]:
    # A state and a ref are made for every change a fold reads: without
    # their __init__ (see kernel.payload.maker), which costs several times as much.
    return maker(GoalState), maker(GoalRef)


def apply_goal_change(state: GoalState, seq: int, at: int, change: GoalChange, rounds: int) -> GoalState:
    """Fold a ``goal/change`` (already read) at ``seq`` and ``at`` into the
    goal state, whose current goal has started ``rounds`` rounds (a fold that
    counts rounds apart from the snapshot passes its count; see
    ``with_rounds``): its identity checks, then its row of
    ``TRANSITION_TABLE``, then the row's checks (``row_checks``). The result
    holds the change's own snapshot, so it is never behind. Raises a
    positioned ``ReplayError`` for a bad change."""
    if isinstance(change, ClearChange):
        ctx: ChangeContext = (state, None, change, rounds, seq, at)
        target = None
    else:
        ctx = (state, change, None, rounds, seq, at)
        target = change.goal.phase
    current = state.current
    source = None if current is None else current.phase
    identity, row, checks = _plan(change.operation, source)
    for check in identity:
        check(ctx)
    if row is None or row.target != target:
        raise ReplayError(
            seq, "transition-not-allowed", f"{change.operation} from {source or 'no goal'} to {target} is not allowed"
        )
    for check in checks:
        check(ctx)
    make_state, make_ref = _makers()
    if isinstance(change, ClearChange):
        return make_state(None, change.cleared, state.used_ids)
    goal = change.snapshot
    ref = make_ref(goal.id, goal.revision)
    if change.operation == "create":
        return make_state(goal, ref, state.used_ids.with_id(goal.id))
    return make_state(goal, ref, state.used_ids)


# --------------------------------------------------------------------------
# Rounds


def check_goal_round(current: GoalSnapshot | None, rounds_started: int, seq: int, source: GoalSource) -> None:
    """Check a goal-attributed ``user/message`` (its source, already read)
    against the current goal, whose rounds so far are ``rounds_started``.
    Raises a positioned ``ReplayError`` for a round the goal does not
    allow; otherwise the goal has started ``source.round`` rounds."""
    goal_id, revision, round_ = source.goal_id, source.revision, source.round
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
    # Made without __init__ (kernel.payload.maker), not with dataclasses.replace:
    # rounds are most of a goal log, and an append of one folds it in one call.
    snapshot = maker(GoalSnapshot)(
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
    made: GoalState = maker(GoalState)(snapshot, state.last_ref, state.used_ids)
    return made


def apply_goal_event(state: GoalState, event: Event) -> GoalState:
    """Fold one event into the goal state (no envelope check; other kinds
    pass through). Raises a positioned ``ReplayError`` for a bad event."""
    rounds = 0 if state.current is None else state.current.rounds_started
    return with_rounds(*_counted(state, rounds, event))


def _counted(state: GoalState, rounds: int, event: Event) -> tuple[GoalState, int]:
    """``apply_goal_event`` with the current goal's rounds counted apart from
    its snapshot (``rounds``, which may be ahead of it; see ``with_rounds``)."""
    kind = event.kind
    if kind == GOAL_CHANGE:
        try:
            change = read_goal_change(event.payload)
        except PayloadError as exc:
            raise ReplayError(event.seq, exc.code, exc.message) from exc
        state = apply_goal_change(state, event.seq, event.at, change, rounds)
        return state, 0 if state.current is None else state.current.rounds_started
    if kind == USER_MESSAGE:
        try:
            source = read_message(event.payload).source
        except PayloadError as exc:
            raise ReplayError(event.seq, exc.code, exc.message) from exc
        if isinstance(source, GoalSource):
            check_goal_round(state.current, rounds, event.seq, source)
            return state, source.round
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
