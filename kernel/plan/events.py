"""Building ``plan/artifact`` events: what the runtime appends, and when.

Theory of operation
-------------------
The runtime never writes plan state; it appends ``plan/artifact`` events and
the session fold derives the plan. Each builder here returns the one event to
append next, stamped with the next seq and the caller's time, or raises a
``PlanError`` whose ``code`` is the rule the fold would have broken
(``stale-revision``, ``approval-mismatch``, ``transition-not-allowed`` …). A
builder proves its event by folding it onto the caller's state with the real
reducer, so a builder and a replay can never disagree.

Two decisions sit on top:

- ``classify_change(old, new)``: ``none`` (identical), ``progress`` (only todo
  statuses differ) or ``substantive`` (anything else).
- ``exit_plan_events`` records an ``exit_plan_mode`` call: a new draft when no
  plan is live, a rewrite when the plan's substance changed, and nothing when
  it did not (the same version goes back to review). ``update_plan_events``
  records a change proposed outside that call: nothing for discussion, todo
  events for progress, a rewrite for a substantive change.
"""

from __future__ import annotations

from typing import Literal

# The session fold reads this package's lower modules (artifact, status), and
# these builders fold through the session: the session is imported as a module
# and its names resolved when called, so either may be imported first.
from .. import session
from ..errors import PlanError, ReplayError
from ..log import PLAN_ARTIFACT, Event
from .artifact import PlanArtifact, PlanRef
from .payload import PlanAction, PlanActionName, plan_action_payload
from .spec import PlanSpec, TodoStatus, spec_hash
from .spec_json import ExitPlanArgs
from .views import adopt_summary

__all__ = [
    "ChangeKind",
    "PlanChangeError",
    "approve_event",
    "bootstrap_event",
    "classify_change",
    "complete_event",
    "draft_event",
    "exit_plan_events",
    "realign_event",
    "reject_event",
    "rewrite_event",
    "start_event",
    "supersede_event",
    "todo_event",
    "update_plan_events",
    "verify_event",
    "verify_fail_event",
]


class PlanChangeError(PlanError):
    """The runtime asked for a plan change the plan's state does not allow.

    ``code`` is the broken rule (kebab-case, the same as a replay would
    report, or ``no-plan`` when there is no current plan); ``action`` is what
    was asked for and ``detail`` says why it was refused.
    """

    #: ``no-plan``, and every rule of the plan fold (``plan.status``).
    codes = frozenset(
        {
            "no-plan",
            "malformed-payload",
            "transition-not-allowed",
            "wrong-mode",
            "id-reused",
            "plan-mismatch",
            "stale-revision",
            "revision-gap",
            "approval-mismatch",
            "hash-mismatch",
            "invalid-spec",
            "invalid-summary",
            "rewrite-without-change",
            "unknown-todo",
            "todo-unchanged",
        }
    )

    def __init__(self, action: str, code: str, detail: str) -> None:
        super().__init__(f"cannot {action} the plan: {detail}", code=code)
        self.action = action
        self.detail = detail


def _checked(state: session.SessionState, act: PlanAction, at: int) -> Event:
    event = Event(state.last_seq + 1, PLAN_ARTIFACT, at, plan_action_payload(act))
    try:
        session.apply_session_event(state, event)
    except ReplayError as exc:
        raise PlanChangeError(act.action, exc.rule, exc.detail) from exc
    return event


def _current(state: session.SessionState, action: PlanActionName) -> PlanArtifact:
    if state.plan.current is None:
        raise PlanChangeError(action, "no-plan", "the session has no plan")
    return state.plan.current


def _content(
    state: session.SessionState,
    action: PlanActionName,
    *,
    plan_id: str,
    revision: int,
    spec: PlanSpec,
    candidate: object | None,
    at: int,
) -> Event:
    adoption = adopt_summary(candidate, spec)
    reasons = tuple(f"{p.where}: {p.message}" for p in adoption.rejected)
    act = PlanAction(
        action,
        plan_id,
        revision,
        spec=spec,
        summary=adoption.summary,
        summary_source=adoption.source,
        summary_rejected=reasons,
    )
    return _checked(state, act, at)


def draft_event(state: session.SessionState, plan_id: str, spec: PlanSpec, candidate: object | None, at: int) -> Event:
    """A new plan in ``draft`` from ``exit_plan_mode`` (plan mode, no live
    plan, a fresh id). The candidate is adopted or replaced, never retried."""
    return _content(state, "draft", plan_id=plan_id, revision=1, spec=spec, candidate=candidate, at=at)


def bootstrap_event(
    state: session.SessionState, plan_id: str, spec: PlanSpec, candidate: object | None, at: int
) -> Event:
    """A minimal ``implicit`` plan made by build bootstrap (build mode, no
    live plan, a fresh id, no blocking question)."""
    return _content(state, "bootstrap", plan_id=plan_id, revision=1, spec=spec, candidate=candidate, at=at)


def rewrite_event(state: session.SessionState, spec: PlanSpec, candidate: object | None, at: int) -> Event:
    """A substantive rewrite of the current plan: revision + 1 and a fresh
    summary; voids any approval and aborts execution."""
    cur = _current(state, "rewrite")
    return _content(
        state,
        "rewrite",
        plan_id=cur.id,
        revision=cur.revision + 1,
        spec=spec,
        candidate=candidate,
        at=at,
    )


def approve_event(state: session.SessionState, ref: PlanRef, at: int) -> Event:
    """The user approved exactly ``ref``; refused unless it is the current
    draft's id, revision and content hash."""
    act = PlanAction("approve", ref.plan_id, ref.revision, spec_hash=ref.spec_hash)
    return _checked(state, act, at)


def reject_event(state: session.SessionState, ref: PlanRef, feedback: str | None, at: int) -> Event:
    """The reviewer sent the draft ``ref`` back with ``feedback``."""
    act = PlanAction("reject", ref.plan_id, ref.revision, spec_hash=ref.spec_hash, note=feedback)
    return _checked(state, act, at)


def start_event(state: session.SessionState, ref: PlanRef, at: int) -> Event:
    """Start executing exactly ``ref``: an approved plan whose approval covers
    it, or an implicit plan. A draft never starts."""
    act = PlanAction("start", ref.plan_id, ref.revision, spec_hash=ref.spec_hash)
    return _checked(state, act, at)


def _simple(state: session.SessionState, action: PlanActionName, at: int, note: str | None = None) -> Event:
    cur = _current(state, action)
    return _checked(state, PlanAction(action, cur.id, cur.revision, note=note), at)


def todo_event(state: session.SessionState, todo_id: str, status: TodoStatus, at: int) -> Event:
    """Progress on one todo of the executing plan (no new revision)."""
    cur = _current(state, "todo")
    act = PlanAction("todo", cur.id, cur.revision, todo_id=todo_id, todo_status=status)
    return _checked(state, act, at)


def verify_event(state: session.SessionState, at: int) -> Event:
    """Execution is done; enter the verify phase."""
    return _simple(state, "verify", at)


def verify_fail_event(state: session.SessionState, detail: str | None, at: int) -> Event:
    """Verification failed; go back to execution."""
    return _simple(state, "verify-fail", at, note=detail)


def complete_event(state: session.SessionState, at: int) -> Event:
    """Verification passed; the plan is completed."""
    return _simple(state, "complete", at)


def realign_event(state: session.SessionState, reason: str, at: int) -> Event:
    """Send a live, non-draft plan back to ``draft`` for realignment (for
    example after an effect outside its scope); voids the approval."""
    return _simple(state, "realign", at, note=reason)


def supersede_event(state: session.SessionState, at: int, reason: str | None = None) -> Event:
    """Retire the live plan so that a new one may be made."""
    return _simple(state, "supersede", at, note=reason)


# --------------------------------------------------------------------------
# Decisions

ChangeKind = Literal["none", "progress", "substantive"]


def classify_change(old: PlanSpec, new: PlanSpec) -> ChangeKind:
    """How ``new`` differs from ``old``. Todo statuses alone are progress;
    anything the content hash covers is substantive."""
    if old == new:
        return "none"
    if spec_hash(old) != spec_hash(new):
        return "substantive"
    return "progress"


def exit_plan_events(state: session.SessionState, args: ExitPlanArgs, new_plan_id: str, at: int) -> tuple[Event, ...]:
    """Record a decoded ``exit_plan_mode`` call: a draft with ``new_plan_id``
    when no plan is live, a rewrite of the live plan when its substance
    changed, nothing otherwise. Raises ``PlanError`` as the builders do."""
    cur = state.plan.current
    if cur is None or not state.plan.live:
        return (draft_event(state, new_plan_id, args.spec, args.summary_candidate, at),)
    if spec_hash(cur.spec) == spec_hash(args.spec):
        return ()
    return (rewrite_event(state, args.spec, args.summary_candidate, at),)


def update_plan_events(
    state: session.SessionState, spec: PlanSpec, candidate: object | None, at: int
) -> tuple[Event, ...]:
    """Record a proposed new version of the current plan: nothing when it is
    the same (ordinary discussion), one todo event per changed todo for
    progress, a rewrite for a substantive change. Raises ``PlanError``."""
    cur = _current(state, "rewrite")
    kind = classify_change(cur.spec, spec)
    if kind == "none":
        return ()
    if kind == "substantive":
        return (rewrite_event(state, spec, candidate, at),)
    events: list[Event] = []
    for old, new in zip(cur.spec.todos, spec.todos, strict=True):
        if old.status != new.status:
            event = todo_event(state, new.id, new.status, at)
            state = session.apply_session_event(state, event)
            events.append(event)
    return tuple(events)
