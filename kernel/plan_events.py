"""Building ``plan/artifact`` drafts: what the runtime appends, and when.

Theory of operation
-------------------
The runtime never writes plan state; it appends ``plan/artifact`` events and
the session fold derives the plan. Each builder here returns the one draft to
append next (``kernel.log.Draft``: the session log numbers and stamps it), or
raises a ``PlanChangeError`` whose ``code`` is the rule the fold would have
broken (``stale-revision``, ``approval-mismatch``, ``transition-not-allowed``
…). A builder proves its draft by folding it onto the caller's state with the
real reducer, as the candidate event that follows the state (the next seq,
stamped with the state's last time, which the log's own time never goes
below), so a builder and a replay can never disagree.

The builders fold through the whole session, so they live above it; the plan
machine itself (``kernel.plan``) knows only plan state.

Decisions built from them:

- ``exit_plan_events`` records an ``exit_plan_mode`` call: a new draft when no
  plan is live, a rewrite when the plan's substance changed, and nothing when
  it did not (the same version goes back to review). ``update_plan_events``
  records a change proposed outside that call: nothing for discussion, todo
  drafts for progress, a rewrite for a substantive change
  (``kernel.plan.events.classify_change``).
- ``execution_end_event``: ``verify`` when the model stopped and that ended
  the execution; ``verification_event``: ``complete`` or ``verify-fail`` for
  a verification report; ``scope_realign_event``: the ``realign`` for
  effects outside the current plan's scope.
"""

from __future__ import annotations

from collections.abc import Iterable

from .errors import ReplayError
from .log import PLAN_ARTIFACT, Draft, number_drafts
from .plan.artifact import PlanArtifact, PlanRef
from .plan.events import PlanChangeError, classify_change
from .plan.payload import PlanAction, PlanActionName, plan_action_payload
from .plan.scope import Effect, check_scope
from .plan.spec import PlanSpec, TodoStatus, active_todo_ids, spec_hash
from .plan.spec_json import ExitPlanArgs
from .plan.tools import VerificationReport
from .plan.views import adopt_summary
from .session import SessionState, fold_more

__all__ = [
    "approve_event",
    "bootstrap_event",
    "complete_event",
    "draft_event",
    "execution_end_event",
    "exit_plan_events",
    "fold_drafts",
    "open_todo_ids",
    "realign_event",
    "reject_event",
    "rewrite_event",
    "scope_realign_event",
    "start_event",
    "supersede_event",
    "todo_event",
    "update_plan_events",
    "verification_event",
    "verify_event",
    "verify_fail_event",
]


def fold_drafts(state: SessionState, drafts: Iterable[Draft]) -> SessionState:
    """The session once ``drafts`` follow ``state``: each folded with the
    real reducer as the event that follows (the next seq, stamped with the
    state's last time). Raises ``ReplayError`` as the fold does."""
    at = 0 if state.last is None else state.last.at
    return fold_more(state, number_drafts(drafts, state.last_seq, at))


def _checked(state: SessionState, act: PlanAction) -> Draft:
    draft = Draft(PLAN_ARTIFACT, plan_action_payload(act))
    try:
        fold_drafts(state, (draft,))
    except ReplayError as exc:
        raise PlanChangeError(act.action, exc.rule, exc.detail) from exc
    return draft


def _current(state: SessionState, action: PlanActionName) -> PlanArtifact:
    if state.plan.current is None:
        raise PlanChangeError(action, "no-plan", "the session has no plan")
    return state.plan.current


def _content(
    state: SessionState,
    action: PlanActionName,
    *,
    plan_id: str,
    revision: int,
    spec: PlanSpec,
    candidate: object | None,
) -> Draft:
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
    return _checked(state, act)


def draft_event(state: SessionState, plan_id: str, spec: PlanSpec, candidate: object | None) -> Draft:
    """A new plan in ``draft`` from ``exit_plan_mode`` (plan mode, no live
    plan, a fresh id). The candidate is adopted or replaced, never retried."""
    return _content(state, "draft", plan_id=plan_id, revision=1, spec=spec, candidate=candidate)


def bootstrap_event(state: SessionState, plan_id: str, spec: PlanSpec, candidate: object | None) -> Draft:
    """A minimal ``implicit`` plan made by build bootstrap (build mode, no
    live plan, a fresh id, no blocking question)."""
    return _content(state, "bootstrap", plan_id=plan_id, revision=1, spec=spec, candidate=candidate)


def rewrite_event(state: SessionState, spec: PlanSpec, candidate: object | None) -> Draft:
    """A substantive rewrite of the current plan: revision + 1 and a fresh
    summary; voids any approval and aborts execution."""
    cur = _current(state, "rewrite")
    return _content(state, "rewrite", plan_id=cur.id, revision=cur.revision + 1, spec=spec, candidate=candidate)


def approve_event(state: SessionState, ref: PlanRef) -> Draft:
    """The user approved exactly ``ref``; refused unless it is the current
    draft's id, revision and content hash."""
    return _checked(state, PlanAction("approve", ref.plan_id, ref.revision, spec_hash=ref.spec_hash))


def reject_event(state: SessionState, ref: PlanRef, feedback: str | None) -> Draft:
    """The reviewer sent the draft ``ref`` back with ``feedback``."""
    act = PlanAction("reject", ref.plan_id, ref.revision, spec_hash=ref.spec_hash, note=feedback)
    return _checked(state, act)


def start_event(state: SessionState, ref: PlanRef) -> Draft:
    """Start executing exactly ``ref``: an approved plan whose approval covers
    it, or an implicit plan. A draft never starts."""
    return _checked(state, PlanAction("start", ref.plan_id, ref.revision, spec_hash=ref.spec_hash))


def _simple(state: SessionState, action: PlanActionName, note: str | None = None) -> Draft:
    cur = _current(state, action)
    return _checked(state, PlanAction(action, cur.id, cur.revision, note=note))


def todo_event(state: SessionState, todo_id: str, status: TodoStatus) -> Draft:
    """Progress on one todo of the executing plan (no new revision)."""
    cur = _current(state, "todo")
    return _checked(state, PlanAction("todo", cur.id, cur.revision, todo_id=todo_id, todo_status=status))


def verify_event(state: SessionState) -> Draft:
    """Execution is done; enter the verify phase."""
    return _simple(state, "verify")


def verify_fail_event(state: SessionState, detail: str | None) -> Draft:
    """Verification failed; go back to execution."""
    return _simple(state, "verify-fail", note=detail)


def complete_event(state: SessionState) -> Draft:
    """Verification passed; the plan is completed."""
    return _simple(state, "complete")


def realign_event(state: SessionState, reason: str) -> Draft:
    """Send a live, non-draft plan back to ``draft`` for realignment (for
    example after an effect outside its scope); voids the approval."""
    return _simple(state, "realign", note=reason)


def supersede_event(state: SessionState, reason: str | None = None) -> Draft:
    """Retire the live plan so that a new one may be made."""
    return _simple(state, "supersede", note=reason)


# --------------------------------------------------------------------------
# Decisions


def exit_plan_events(state: SessionState, args: ExitPlanArgs, new_plan_id: str) -> tuple[Draft, ...]:
    """Record a decoded ``exit_plan_mode`` call: a draft with ``new_plan_id``
    when no plan is live, a rewrite of the live plan when its substance
    changed, nothing otherwise. Raises ``PlanError`` as the builders do."""
    cur = state.plan.current
    if cur is None or not state.plan.live:
        return (draft_event(state, new_plan_id, args.spec, args.summary_candidate),)
    if spec_hash(cur.spec) == spec_hash(args.spec):
        return ()
    return (rewrite_event(state, args.spec, args.summary_candidate),)


def update_plan_events(state: SessionState, spec: PlanSpec, candidate: object | None) -> tuple[Draft, ...]:
    """Record a proposed new version of the current plan: nothing when it is
    the same (ordinary discussion), one todo draft per changed todo for
    progress, a rewrite for a substantive change. Raises ``PlanError``."""
    cur = _current(state, "rewrite")
    kind = classify_change(cur.spec, spec)
    if kind == "none":
        return ()
    if kind == "substantive":
        return (rewrite_event(state, spec, candidate),)
    drafts: list[Draft] = []
    for old, new in zip(cur.spec.todos, spec.todos, strict=True):
        if old.status != new.status:
            draft = todo_event(state, new.id, new.status)
            state = fold_drafts(state, (draft,))
            drafts.append(draft)
    return tuple(drafts)


def open_todo_ids(state: SessionState) -> tuple[str, ...]:
    """The current plan's todos still ahead (pending or in progress)."""
    cur = state.plan.current
    return () if cur is None else active_todo_ids(cur.spec)


def execution_end_event(state: SessionState) -> Draft | None:
    """``verify`` when the model stopped while the plan executes, it is not
    verifying yet and no todo is open; ``None`` otherwise. Never raises."""
    if state.plan_mode or state.plan.status != "executing" or state.plan.verifying:
        return None
    if open_todo_ids(state):
        return None
    return verify_event(state)


def verification_event(state: SessionState, report: VerificationReport) -> Draft:
    """``complete`` for a passed verification, ``verify-fail`` (back to
    execution, with the notes) for a failed one. Raises ``PlanError`` when
    the plan is not in its verify phase."""
    if report.passed:
        return complete_event(state)
    return verify_fail_event(state, report.notes)


def scope_realign_event(state: SessionState, effects: Iterable[Effect]) -> Draft | None:
    """The ``realign`` draft when the current plan's scope does not cover
    ``effects``; ``None`` when it does or there is no plan. Raises
    ``PlanError`` when the plan cannot be realigned (a draft already is)."""
    cur = state.plan.current
    if cur is None:
        return None
    verdict = check_scope(cur.spec, effects)
    if not verdict.realign_needed:
        return None
    return realign_event(state, f"execution left the plan's scope: {verdict.reason}")
