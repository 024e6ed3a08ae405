"""Goal operations: compare-and-set decisions and the authority rule.

Theory of operation
-------------------
Each operation (create, edit, pause, resume, complete, block, clear) is a pure
decision over the folded ``GoalState``: it returns the draft of the one
``goal/change`` event to append (``kernel.log.Draft``), or raises. The caller
supplies everything that is not in the log: the new goal's id and the time
``at`` the event will carry (the goal's snapshot records it); the session log
numbers the draft and stamps it with that time. A draft returned here, so
appended, is always an event the strict fold accepts right after ``state``.

Refusals, in the order they are checked:

1. ``GoalAuthorityError`` (code ``not-authorized``) when the actor may not
   perform the operation (``AUTHORITY``): the model may only complete, or
   block with a reason; the system may only block (budget and other policy
   limits); the user may do everything, except use a block code reserved for
   the system (``SYSTEM_BLOCK_CODES``);
2. ``GoalOperationError`` with one of ``GOAL_ERROR_CODES``: ``not-found``
   (no current goal), ``goal-mismatch`` (the ref names another goal),
   ``stale-revision`` (the ref names the current goal at another revision),
   ``already-exists`` (create over an unfinished goal, or with an id already
   used in this session: ids are never reused, even after clear),
   ``invalid-transition`` (no row in ``TRANSITION_TABLE``, a resume with no
   rounds left, or of a goal that is already active and armed),
   ``invalid-edit`` (an edit given neither an objective nor a cap),
   ``invalid-objective``,
   ``invalid-max-rounds``, ``invalid-block-reason`` and ``invalid-id`` (an
   empty id given to create: the caller's bug).

``resume`` is the one operation that reads process state: the caller's
``Activation`` (see ``kernel.goal``), because re-arming an active goal is only
meaningful when this process holds it disarmed.

``decide_goal(state, request, activation, at)`` is the one call a runtime
makes for an operation (the goal service, a host over JSON-RPC): it runs the
operation a ``GoalRequest`` names and returns a ``GoalDecision``: the draft to
append, the process's activation afterwards and the change made (the goal
after it, its ref). ``kernel.goal.continuation.decide_budget_block`` is the
same for the system's block of a goal whose rounds are all started.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Literal

from ..errors import GoalError, ReplayError
from ..log import GOAL_CHANGE, Draft
from ..payload import MAX_SAFE_INTEGER, object_of, read_problems
from .fold import GoalState, apply_goal_change
from .values import (
    DEFAULT_MAX_ROUNDS,
    GOAL_CHANGE_VERSION,
    OPERATIONS,
    TRANSITION_TABLE,
    TRANSITIONS,
    Activation,
    BlockedReason,
    ClearChange,
    GoalChange,
    GoalOperation,
    GoalPhase,
    GoalRef,
    GoalSnapshot,
    SnapshotChange,
    SnapshotOperation,
    Transition,
    activation_after,
    read_goal_change,
)

__all__ = [
    "ACTORS",
    "AUTHORITY",
    "BUDGET_BLOCK_CODE",
    "GOAL_ERROR_CODES",
    "SYSTEM_BLOCK_CODES",
    "Actor",
    "GoalAuthorityError",
    "GoalDecision",
    "GoalError",
    "GoalOperationError",
    "GoalRequest",
    "authorize",
    "block",
    "clear",
    "complete",
    "create",
    "decide_goal",
    "edit",
    "pause",
    "resume",
]

Actor = Literal["user", "model", "system"]
ACTORS: tuple[Actor, ...] = ("user", "model", "system")

#: The block code the system uses when a goal has used all its rounds.
BUDGET_BLOCK_CODE = "round-limit"
#: Block codes only the system may record (policy limits).
SYSTEM_BLOCK_CODES: frozenset[str] = frozenset({BUDGET_BLOCK_CODE})

#: Which operations each actor may perform.
AUTHORITY: Mapping[Actor, frozenset[GoalOperation]] = {
    "user": frozenset(OPERATIONS),
    "model": frozenset({"complete", "block"}),
    "system": frozenset({"block"}),
}

#: Every code a ``GoalError`` carries: the operations' refusals
#: (``GoalOperationError``), ``not-authorized`` (``GoalAuthorityError``) and
#: the ``/goal`` command's (``GoalCommandError``). ``goal-mismatch`` and
#: ``stale-revision`` are spelled as the strict fold spells the same situation.
GOAL_ERROR_CODES: tuple[str, ...] = (
    "not-found",
    "already-exists",
    "goal-mismatch",
    "stale-revision",
    "invalid-objective",
    "invalid-max-rounds",
    "invalid-block-reason",
    "invalid-edit",
    "invalid-transition",
    "invalid-id",
    "not-authorized",
    "missing-objective",
    "unexpected-argument",
)


class GoalOperationError(GoalError):
    """A goal operation the caller must not make now; ``code`` is one of
    ``GOAL_ERROR_CODES``. ``operation`` names the refused operation (or
    ``round`` for a round that cannot start) and ``current`` the ref of the
    current goal (``None`` when there is none)."""

    codes = frozenset(GOAL_ERROR_CODES) - {"not-authorized", "missing-objective", "unexpected-argument"}

    def __init__(
        self, message: str, *, code: str, operation: str, current: GoalRef | None
    ) -> None:
        super().__init__(message, code=code)
        self.operation = operation
        self.current = current


class GoalAuthorityError(GoalError):
    """The actor may not perform this goal operation (see ``AUTHORITY``).
    Checked before the goal is read, so it says nothing about the goal."""

    code = "not-authorized"

    def __init__(self, actor: str, operation: GoalOperation, detail: str) -> None:
        super().__init__(f"{actor} may not {operation} a goal: {detail}")
        self.actor = actor
        self.operation = operation


def authorize(actor: Actor, operation: GoalOperation, reason: BlockedReason | None = None) -> None:
    """Raise ``GoalAuthorityError`` unless ``actor`` may perform ``operation``
    (with block ``reason``, whose code may be reserved for the system)."""
    allowed = AUTHORITY.get(actor)
    if allowed is None:
        raise GoalAuthorityError(str(actor), operation, f"unknown actor {actor!r}")
    if operation not in allowed:
        raise GoalAuthorityError(actor, operation, f"{actor} may only {' or '.join(sorted(allowed))}")
    code = None if reason is None else reason.code
    if operation == "block" and actor != "system" and code in SYSTEM_BLOCK_CODES:
        raise GoalAuthorityError(
            actor, operation, f"block code {code!r} is reserved for the system"
        )


# --------------------------------------------------------------------------
# Input checks


def _error(
    code: str, message: str, operation: GoalOperation, state: GoalState
) -> GoalOperationError:
    current = None if state.current is None else state.current.ref
    return GoalOperationError(message, code=code, operation=operation, current=current)


def _objective(value: object, operation: GoalOperation, state: GoalState) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _error(
            "invalid-objective", "the objective must be non-empty text", operation, state
        )
    return value.strip()


def _max_rounds(value: object, operation: GoalOperation, state: GoalState) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_SAFE_INTEGER:
        raise _error(
            "invalid-max-rounds",
            f"max_rounds must be an integer from 1 to {MAX_SAFE_INTEGER}, got {value!r}",
            operation,
            state,
        )
    return value


def _reason(value: object, state: GoalState) -> BlockedReason:
    # The message trimmed, then the reason's own rules (kebab-case code,
    # non-blank message) as the log states them.
    if isinstance(value, BlockedReason) and isinstance(value.message, str):
        reason: BlockedReason
        reason, problems = read_problems(BlockedReason, {"code": value.code, "message": value.message.strip()})
        if not problems:
            return reason
    raise _error(
        "invalid-block-reason",
        "a block needs a reason with a kebab-case code and a non-empty message",
        "block",
        state,
    )


def _current(state: GoalState, ref: GoalRef, operation: GoalOperation) -> GoalSnapshot:
    current = state.current
    if current is None:
        raise _error("not-found", f"there is no current goal to {operation}", operation, state)
    if ref.id != current.id:
        raise _error(
            "goal-mismatch",
            f"the ref names goal {ref.id!r}, but the current goal is {current.id!r}; read it again and retry",
            operation,
            state,
        )
    if ref.revision != current.revision:
        raise _error(
            "stale-revision",
            f"goal {ref.id!r} revision {ref.revision} is stale: the current goal is "
            f"{current.id!r} revision {current.revision}; read it again and retry",
            operation,
            state,
        )
    return current


def _row(state: GoalState, current: GoalSnapshot, operation: GoalOperation) -> Transition:
    row = TRANSITION_TABLE.get((operation, current.phase))
    if row is None:
        allowed = [str(r.source) for r in TRANSITIONS if r.operation == operation]
        raise _error(
            "invalid-transition",
            f"cannot {operation} goal {current.id!r} while it is {current.phase} "
            f"(allowed from: {', '.join(allowed)})",
            operation,
            state,
        )
    return row


#: The operations' codes for what the strict fold refuses of a candidate
#: change (the operations check everything else themselves first).
_FOLD_CODES: Mapping[str, str] = {"id-reused": "already-exists", "transition-not-allowed": "invalid-transition"}


def _proved(state: GoalState, change: GoalChange, at: int) -> Draft:
    """The draft recording ``change``, once the strict fold accepts it right
    after ``state`` (so an operation and a replay cannot disagree): the
    fold's checks (``kernel.goal.fold.CHECKS``) decide the guards the log can
    show, ``fresh-id`` and ``rounds-remaining``."""
    rounds = 0 if state.current is None else state.current.rounds_started
    try:
        apply_goal_change(state, 0, at, change, rounds)
    except ReplayError as exc:
        raise _error(_FOLD_CODES.get(exc.rule, "invalid-transition"), exc.detail, change.operation, state) from exc
    return Draft(GOAL_CHANGE, object_of(change))


def _change(state: GoalState, operation: SnapshotOperation, goal: GoalSnapshot, at: int) -> Draft:
    return _proved(state, SnapshotChange.of(operation, goal), at)


def _next(
    current: GoalSnapshot,
    at: int,
    phase: GoalPhase,
    reason: BlockedReason | None,
    *,
    objective: str | None = None,
    max_rounds: int | None = None,
) -> GoalSnapshot:
    """The snapshot one revision on, stamped ``at``; counters carried over."""
    return replace(
        current,
        objective=current.objective if objective is None else objective,
        phase=phase,
        blocked_reason=reason,
        max_rounds=current.max_rounds if max_rounds is None else max_rounds,
        revision=current.revision + 1,
        updated_at=at,
    )


# --------------------------------------------------------------------------
# The operations


def create(
    state: GoalState,
    goal_id: str,
    objective: str,
    max_rounds: int | None = None,
    *,
    actor: Actor,
    at: int,
) -> Draft:
    """Create an active goal at revision 1 (``max_rounds`` defaults to
    ``DEFAULT_MAX_ROUNDS``); allowed when there is no goal or it is complete.

    Raises ``invalid-objective``, ``invalid-max-rounds``, ``invalid-id``,
    ``already-exists``.
    """
    authorize(actor, "create")
    text = _objective(objective, "create", state)
    cap = DEFAULT_MAX_ROUNDS if max_rounds is None else _max_rounds(max_rounds, "create", state)
    if not isinstance(goal_id, str) or not goal_id:
        raise _error("invalid-id", "a new goal needs a non-empty id", "create", state)
    current = state.current
    if current is not None and ("create", current.phase) not in TRANSITION_TABLE:
        raise _error(
            "already-exists",
            f"goal {current.id!r} is {current.phase}; complete or clear it before creating another",
            "create",
            state,
        )
    goal = GoalSnapshot(goal_id, text, "active", None, cap, 1, 0, at, at)
    return _change(state, "create", goal, at)


def edit(
    state: GoalState,
    ref: GoalRef,
    *,
    objective: str | None = None,
    max_rounds: int | None = None,
    actor: Actor,
    at: int,
) -> Draft:
    """Change the objective and/or ``max_rounds`` (at least one); the phase,
    blocked reason and activation are kept.

    Raises ``not-found``, ``stale-revision``, ``invalid-edit``,
    ``invalid-objective``, ``invalid-max-rounds``.
    """
    authorize(actor, "edit")
    current = _current(state, ref, "edit")
    _row(state, current, "edit")
    if objective is None and max_rounds is None:
        raise _error(
            "invalid-edit", "an edit needs a new objective and/or max_rounds", "edit", state
        )
    text = current.objective if objective is None else _objective(objective, "edit", state)
    cap = current.max_rounds if max_rounds is None else _max_rounds(max_rounds, "edit", state)
    goal = _next(
        current, at, current.phase, current.blocked_reason, objective=text, max_rounds=cap
    )
    return _change(state, "edit", goal, at)


def _simple(
    state: GoalState, ref: GoalRef, operation: SnapshotOperation, *, actor: Actor, at: int
) -> Draft:
    authorize(actor, operation)
    current = _current(state, ref, operation)
    target = _row(state, current, operation).target
    goal = _next(current, at, current.phase if target is None else target, None)
    return _change(state, operation, goal, at)


def pause(state: GoalState, ref: GoalRef, *, actor: Actor, at: int) -> Draft:
    """Pause an active goal. Raises ``not-found``, ``stale-revision``,
    ``invalid-transition``."""
    return _simple(state, ref, "pause", actor=actor, at=at)


def complete(state: GoalState, ref: GoalRef, *, actor: Actor, at: int) -> Draft:
    """Mark a goal complete from any other phase. Raises ``not-found``,
    ``stale-revision``, ``invalid-transition``."""
    return _simple(state, ref, "complete", actor=actor, at=at)


def resume(
    state: GoalState,
    ref: GoalRef,
    activation: Activation,
    *,
    actor: Actor,
    at: int,
) -> Draft:
    """Make a paused or blocked goal active again, or re-arm an active one that
    this process holds disarmed; the blocked reason is dropped.

    Raises ``not-found``, ``stale-revision``, ``invalid-transition`` (wrong
    phase, no rounds left, or already active and armed).
    """
    authorize(actor, "resume")
    current = _current(state, ref, "resume")
    row = _row(state, current, "resume")
    if "disarmed" in row.guards and activation.armed:
        raise _error(
            "invalid-transition",
            f"goal {current.id!r} is already active and armed",
            "resume",
            state,
        )
    return _change(state, "resume", _next(current, at, "active", None), at)


def block(
    state: GoalState,
    ref: GoalRef,
    reason: BlockedReason,
    *,
    actor: Actor,
    at: int,
) -> Draft:
    """Block an active goal with a reason (its message is trimmed).

    Raises ``not-found``, ``stale-revision``, ``invalid-transition``,
    ``invalid-block-reason``.
    """
    authorize(actor, "block", reason if isinstance(reason, BlockedReason) else None)
    current = _current(state, ref, "block")
    _row(state, current, "block")
    checked = _reason(reason, state)
    return _change(state, "block", _next(current, at, "blocked", checked), at)


def clear(state: GoalState, ref: GoalRef, *, actor: Actor, at: int) -> Draft:
    """Clear the current goal from any phase: a tombstone at the next revision.

    Raises ``not-found``, ``stale-revision``.
    """
    authorize(actor, "clear")
    current = _current(state, ref, "clear")
    _row(state, current, "clear")
    cleared = GoalRef(current.id, current.revision + 1)
    return _proved(state, ClearChange(GOAL_CHANGE_VERSION, "clear", cleared, at), at)


# --------------------------------------------------------------------------
# One call per operation


@dataclass(frozen=True, slots=True)
class GoalRequest:
    """An operation someone asks for: ``operation`` by ``actor`` on the goal
    ``ref`` names (every operation but create), with what the operation
    takes: ``goal_id`` and ``objective`` (and ``max_rounds``) to create,
    ``objective`` and/or ``max_rounds`` to edit, ``reason`` to block.
    Anything an operation does not take is ignored."""

    operation: GoalOperation
    actor: Actor
    ref: GoalRef | None = None
    goal_id: str = ""
    objective: str | None = None
    max_rounds: int | None = None
    reason: BlockedReason | None = None


@dataclass(frozen=True, slots=True)
class GoalDecision:
    """An accepted operation: append ``draft`` (stamped with the time it was
    decided at), then hold ``activation``. ``goal`` is the goal after it
    (``None`` after clear) and ``ref`` its ref (for clear, the tombstone's)."""

    operation: GoalOperation
    draft: Draft
    activation: Activation
    goal: GoalSnapshot | None
    ref: GoalRef

    @classmethod
    def of(cls, operation: GoalOperation, draft: Draft, activation: Activation) -> GoalDecision:
        """The decision to append ``draft``, an accepted ``operation``, by a
        process that held ``activation``."""
        change = read_goal_change(draft.payload)
        after = activation_after(activation, operation)
        if isinstance(change, SnapshotChange):
            goal = change.snapshot
            return cls(operation, draft, after, goal, goal.ref)
        return cls(operation, draft, after, None, change.cleared)


def _ref_of(request: GoalRequest, state: GoalState) -> GoalRef:
    if request.ref is not None:
        return request.ref
    if state.current is None:
        raise _error("not-found", f"there is no current goal to {request.operation}", request.operation, state)
    return state.current.ref


def _draft(state: GoalState, request: GoalRequest, activation: Activation, at: int) -> Draft:
    operation, actor = request.operation, request.actor
    if operation == "create":
        return create(state, request.goal_id, request.objective or "", request.max_rounds, actor=actor, at=at)
    ref = _ref_of(request, state)
    if operation == "edit":
        return edit(state, ref, objective=request.objective, max_rounds=request.max_rounds, actor=actor, at=at)
    if operation == "resume":
        return resume(state, ref, activation, actor=actor, at=at)
    if operation == "block":
        return block(state, ref, request.reason, actor=actor, at=at)  # type: ignore[arg-type]  # checked there
    if operation == "pause":
        return pause(state, ref, actor=actor, at=at)
    if operation == "complete":
        return complete(state, ref, actor=actor, at=at)
    if operation == "clear":
        return clear(state, ref, actor=actor, at=at)
    raise _error("invalid-transition", f"unknown goal operation {operation!r}", operation, state)


def decide_goal(state: GoalState, request: GoalRequest, activation: Activation, at: int) -> GoalDecision:
    """Decide ``request`` on ``state`` for a process holding ``activation``,
    at time ``at`` (the time the draft will carry; its snapshot records it).
    A request without a ``ref`` acts on the current goal.

    Raises ``GoalAuthorityError`` or ``GoalOperationError`` (see the module
    doc) and nothing is to be appended.
    """
    return GoalDecision.of(request.operation, _draft(state, request, activation, at), activation)
