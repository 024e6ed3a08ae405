"""The plan status machine and the session-level plan fold.

Theory of operation
-------------------
A session has at most one current plan, a ``PlanArtifact``; its history is
the ``plan/artifact`` events of the log and nothing else. Each event names an
action; ``TRANSITIONS`` is the one table of what an action may do to which
status (and in which mode), and which checks it must pass. The reducer only
looks rows up and runs the named checks (``kernel.plan.checks``);
``STATUS_TABLE`` documents the six statuses. A diagram generator reads both
tables.

- ``draft``: recorded from ``exit_plan_mode`` in plan mode (a new plan id,
  revision 1). It never executes by itself.
- ``approved``: the user approved exactly (id, revision, content hash). Only
  that version may start; any rewrite or realignment voids the approval.
- ``implicit``: a minimal plan made by build bootstrap; it may start without
  approval, because nothing stood in for a plan before it.
- ``executing``: started from ``approved`` or ``implicit``. ``verify`` enters
  the verify sub-phase (``PlanState.verifying``); ``verify-fail`` returns to
  execution, ``complete`` (only from verify) ends it.
- ``completed`` and ``superseded``: finished. A new plan (``draft`` or
  ``bootstrap``) may follow; a live plan must be superseded first.

Update rules. Discussion appends no ``plan/artifact`` event, so it changes
nothing. A substantive change (anything in the spec but todo statuses: goal,
steps and their structure, constraints, verify, todos, open questions, scope)
is a ``rewrite``: revision + 1, a fresh summary, and the approval is void; a
rewrite while executing aborts execution and demands realignment (the plan
goes back to ``draft``). A rewrite that changes nothing substantive is refused.
Todo progress (``todo``) is not content: it keeps the revision and hash and
only refreshes the summary's todo references when the active set changes.

Replay is strict: a bad event raises ``ReplayError`` at its seq with a rule:
``malformed-payload``, ``transition-not-allowed``, ``wrong-mode``,
``id-reused``, ``plan-mismatch``, ``stale-revision``, ``revision-gap``,
``approval-mismatch``, ``hash-mismatch``, ``invalid-spec``,
``invalid-summary``, ``rewrite-without-change``, ``unknown-todo`` or
``todo-unchanged``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal

from ..errors import PayloadError, ReplayError
from ..log import ASSISTANT_MESSAGE, PLAN_ARTIFACT, Event
from .artifact import PlanArtifact, PlanState, PlanStatus
from .checks import CHECKS
from .mode import apply_plan_mode_event
from .payload import PlanAction, PlanActionName, read_plan_action
from .views import refresh_summary

__all__ = [
    "TRANSITIONS",
    "Transition",
    "apply_plan_action",
    "apply_plan_event",
    "find_transition",
    "fold_plans",
    "mark_answered",
]

Mode = Literal["plan", "build"]


@dataclass(frozen=True, slots=True)
class Transition:
    """One row: ``action`` moves a plan from ``source`` (``None``: no plan
    yet) to ``target``, only in ``mode`` (``None``: either mode), after
    ``checks`` (names in ``CHECKS``) pass."""

    action: PlanActionName
    source: PlanStatus | None
    target: PlanStatus
    mode: Mode | None
    checks: tuple[str, ...]


_NEW = ("fresh-id", "first-revision", "valid-spec", "valid-summary")
_REWRITE = ("plan-ref-next", "valid-spec", "valid-summary", "content-changed")
_FINISHED: tuple[PlanStatus | None, ...] = (None, "completed", "superseded")
_LIVE: tuple[PlanStatus, ...] = ("draft", "approved", "implicit", "executing")

#: Every allowed transition. Anything not listed is ``transition-not-allowed``.
TRANSITIONS: tuple[Transition, ...] = (
    *(Transition("draft", s, "draft", "plan", _NEW) for s in _FINISHED),
    *(Transition("bootstrap", s, "implicit", "build", _NEW) for s in _FINISHED),
    Transition("rewrite", "draft", "draft", None, _REWRITE),
    Transition("rewrite", "approved", "draft", None, _REWRITE),
    Transition("rewrite", "implicit", "implicit", "build", _REWRITE),
    Transition("rewrite", "implicit", "draft", "plan", _REWRITE),
    Transition("rewrite", "executing", "draft", None, _REWRITE),
    Transition("approve", "draft", "approved", None, ("approval-ref", "valid-spec")),
    Transition("reject", "draft", "draft", None, ("plan-ref", "matching-hash")),
    Transition("start", "approved", "executing", "build", ("approval-ref", "approved-version")),
    Transition("start", "implicit", "executing", "build", ("approval-ref",)),
    Transition("todo", "executing", "executing", None, ("plan-ref", "known-todo")),
    Transition("verify", "executing", "executing", "build", ("plan-ref", "not-verifying")),
    Transition("verify-fail", "executing", "executing", "build", ("plan-ref", "verifying")),
    Transition("complete", "executing", "completed", "build", ("plan-ref", "verifying")),
    *(Transition("realign", s, "draft", None, ("plan-ref",)) for s in _LIVE[1:]),
    *(Transition("supersede", s, "superseded", None, ("plan-ref",)) for s in _LIVE),
)


# --------------------------------------------------------------------------
# The reducer


def _fail(seq: int, rule: str, detail: str) -> ReplayError:
    return ReplayError(seq, rule, detail)


def find_transition(status: PlanStatus | None, action: PlanActionName, mode: Mode, seq: int) -> Transition:
    """The row for ``action`` from ``status`` in ``mode``; raise ``ReplayError``
    (``transition-not-allowed`` or ``wrong-mode``) when there is none."""
    rows = [t for t in TRANSITIONS if t.action == action and t.source == status]
    if not rows:
        raise _fail(seq, "transition-not-allowed", f"cannot {action} a plan that is {status or 'absent'}")
    for row in rows:
        if row.mode in (None, mode):
            return row
    raise _fail(seq, "wrong-mode", f"{action} from {status or 'no plan'} is not allowed in {mode} mode")


def _effect(state: PlanState, act: PlanAction, row: Transition, at: int) -> PlanState:
    cur = state.current
    if act.action in ("draft", "bootstrap"):
        assert act.spec is not None and act.summary is not None and act.summary_source is not None
        artifact = PlanArtifact(act.plan_id, 1, row.target, act.spec, act.summary, at, at)
        return PlanState(
            current=artifact,
            summary_source=act.summary_source,
            summary_rejected=act.summary_rejected,
            unseen=True,
            used_ids=state.used_ids | {act.plan_id},
        )
    assert cur is not None
    moved = replace(cur, status=row.target)
    if act.action == "rewrite":
        assert act.spec is not None and act.summary is not None and act.summary_source is not None
        aborted = "the plan was rewritten during execution" if cur.status == "executing" else None
        return replace(
            state,
            current=replace(moved, revision=act.revision, spec=act.spec, summary=act.summary, updated_at=at),
            approval=None,
            verifying=False,
            realign=aborted or state.realign,
            feedback=None,
            summary_source=act.summary_source,
            summary_rejected=act.summary_rejected,
            unseen=True,
        )
    if act.action == "approve":
        return replace(state, current=moved, approval=moved.ref, realign=None, feedback=None)
    if act.action == "reject":
        return replace(state, feedback=act.note)
    if act.action == "todo":
        todos = tuple(
            replace(t, status=act.todo_status) if t.id == act.todo_id and act.todo_status else t for t in cur.spec.todos
        )
        spec = replace(cur.spec, todos=todos)
        summary = refresh_summary(cur.summary, spec)
        return replace(state, current=replace(moved, spec=spec, summary=summary, updated_at=at))
    if act.action == "verify":
        return replace(state, verifying=True)
    if act.action == "verify-fail":
        return replace(state, verifying=False, verify_failures=state.verify_failures + 1)
    if act.action == "realign":
        reason = act.note or "realignment was requested"
        return replace(state, current=moved, approval=None, verifying=False, realign=reason)
    # start, complete, supersede: the status moves, nothing else of note.
    approval = None if act.action == "supersede" else state.approval
    return replace(state, current=moved, approval=approval, verifying=False)


def apply_plan_action(state: PlanState, act: PlanAction, seq: int, at: int, plan_mode: bool) -> PlanState:
    """Fold one ``plan/artifact`` (already read) at ``seq`` and ``at`` into the
    plan state; ``plan_mode`` is the plan-mode fold just before it: its row of
    ``TRANSITIONS``, then the row's checks, then its effect.

    Raises ``ReplayError`` at a bad action (rules above).
    """
    row = find_transition(state.status, act.action, "plan" if plan_mode else "build", seq)
    for check in row.checks:
        CHECKS[check]((state, act, seq))
    return _effect(state, act, row, at)


def mark_answered(state: PlanState, plan_mode: bool) -> PlanState:
    """The plan state after an ``assistant/message`` with plan mode
    ``plan_mode``: a build-mode answer means the request that carried the
    plan's content reached the model, so the content is no longer unseen."""
    if state.unseen and not plan_mode:
        return replace(state, unseen=False)
    return state


def apply_plan_event(state: PlanState, event: Event, plan_mode: bool) -> PlanState:
    """Fold one event into the plan state; ``plan_mode`` is the plan-mode fold
    just before ``event``. Other kinds pass through, except that a build-mode
    ``assistant/message`` (an answered request) marks the content as seen.

    Raises ``ReplayError`` at a bad ``plan/artifact`` event (rules above).
    """
    if event.kind == ASSISTANT_MESSAGE:
        return mark_answered(state, plan_mode)
    if event.kind != PLAN_ARTIFACT:
        return state
    try:
        act = read_plan_action(event.payload)
    except PayloadError as exc:
        raise ReplayError(event.seq, "malformed-payload", exc.message) from exc
    return apply_plan_action(state, act, event.seq, event.at, plan_mode)


def fold_plans(events: Iterable[Event]) -> PlanState:
    """The plan fold of ``events`` alone, tracking plan mode from ``plan/mode``
    events (no envelope checks: ``fold_session`` does those)."""
    state, mode = PlanState(), False
    for event in events:
        state = apply_plan_event(state, event, mode)
        mode = apply_plan_mode_event(mode, event)
    return state
