"""The named checks of the plan status table.

Each row of ``kernel.plan.status.TRANSITIONS`` lists checks by name; each
check reads the fold state before the event and the parsed action, and raises
a ``ReplayError`` positioned at the event with the rule it enforces:

- ``fresh-id`` (``id-reused``), ``first-revision`` (``revision-gap``);
- ``plan-ref`` and ``plan-ref-next`` (``plan-mismatch``, ``stale-revision``,
  ``revision-gap``): the event names the current plan at its revision (or the
  next one, for a rewrite);
- ``approval-ref`` (``approval-mismatch``, ``stale-revision``,
  ``revision-gap``): id, revision and content hash are exactly the current
  plan's; ``approved-version`` (``approval-mismatch``): the standing approval
  covers that exact version; ``matching-hash`` (``hash-mismatch``);
- ``valid-spec`` (``invalid-spec``), ``valid-summary`` (``invalid-summary``),
  ``content-changed`` (``rewrite-without-change``);
- ``known-todo`` (``unknown-todo``, ``todo-unchanged``);
- ``verifying`` and ``not-verifying`` (``transition-not-allowed``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from ..errors import ReplayError
from .artifact import PlanState
from .payload import PlanAction
from .spec import spec_hash, validate_plan_spec
from .views import build_summary_view, summary_derives_from

__all__ = ["CHECKS", "CheckContext"]

#: What a check reads: the state before the event, the action, the event's seq.
CheckContext = tuple[PlanState, PlanAction, int]
_Ctx = CheckContext


def _fail(seq: int, rule: str, detail: str) -> ReplayError:
    return ReplayError(seq, rule, detail)


def _revision(seq: int, have: int, want: int) -> None:
    if have < want:
        raise _fail(seq, "stale-revision", f"revision {have} is older than revision {want}")
    if have > want:
        raise _fail(seq, "revision-gap", f"revision {have} skips ahead of revision {want}")


def _plan_ref(ctx: _Ctx, *, next_revision: bool = False, mismatch: str = "plan-mismatch") -> None:
    state, act, seq = ctx
    assert state.current is not None
    if act.plan_id != state.current.id:
        raise _fail(seq, mismatch, f"plan {act.plan_id!r} is not the current plan {state.current.id!r}")
    _revision(seq, act.revision, state.current.revision + (1 if next_revision else 0))


def _hash(ctx: _Ctx, rule: str) -> None:
    state, act, seq = ctx
    assert state.current is not None
    actual = spec_hash(state.current.spec)
    if act.spec_hash != actual:
        raise _fail(seq, rule, f"content hash {act.spec_hash!r} is not the plan's {actual!r}")


def _approval_ref(ctx: _Ctx) -> None:
    _plan_ref(ctx, mismatch="approval-mismatch")
    _hash(ctx, "approval-mismatch")


def _approved_version(ctx: _Ctx) -> None:
    state, _, seq = ctx
    assert state.current is not None
    if state.approval != state.current.ref:
        raise _fail(seq, "approval-mismatch", "the approval does not cover this exact version")


def _fresh_id(ctx: _Ctx) -> None:
    state, act, seq = ctx
    if act.plan_id in state.used_ids:
        raise _fail(seq, "id-reused", f"plan id {act.plan_id!r} was used before")


def _first_revision(ctx: _Ctx) -> None:
    _revision(ctx[2], ctx[1].revision, 1)


def _valid_spec(ctx: _Ctx) -> None:
    state, act, seq = ctx
    spec = act.spec if act.spec is not None else state.current.spec if state.current else None
    assert spec is not None
    problems = validate_plan_spec(spec)
    if problems:
        raise _fail(seq, "invalid-spec", "; ".join(f"{p.where}: {p.message}" for p in problems))


def _valid_summary(ctx: _Ctx) -> None:
    _, act, seq = ctx
    assert act.spec is not None and act.summary is not None
    if not summary_derives_from(act.summary, act.spec):
        raise _fail(seq, "invalid-summary", "the summary does not derive from the spec")
    if act.summary_source == "runtime" and act.summary != build_summary_view(act.spec):
        raise _fail(seq, "invalid-summary", "a runtime summary must equal build_summary_view(spec)")
    if act.summary_source == "model" and act.summary_rejected:
        raise _fail(seq, "invalid-summary", "an adopted model summary has no rejection reasons")


def _content_changed(ctx: _Ctx) -> None:
    state, act, seq = ctx
    assert state.current is not None and act.spec is not None
    if spec_hash(act.spec) == spec_hash(state.current.spec):
        raise _fail(seq, "rewrite-without-change", "a rewrite must change the plan's substance")


def _known_todo(ctx: _Ctx) -> None:
    state, act, seq = ctx
    assert state.current is not None
    todo = next((t for t in state.current.spec.todos if t.id == act.todo_id), None)
    if todo is None:
        raise _fail(seq, "unknown-todo", f"no todo {act.todo_id!r} in the current plan")
    if todo.status == act.todo_status:
        raise _fail(seq, "todo-unchanged", f"todo {act.todo_id!r} is already {todo.status}")


def _verifying(want: bool) -> Callable[[_Ctx], None]:
    def check(ctx: _Ctx) -> None:
        if ctx[0].verifying != want:
            where = "inside" if want else "outside"
            raise _fail(ctx[2], "transition-not-allowed", f"only allowed {where} the verify phase")

    return check


#: The named checks a transition row may list.
CHECKS: Mapping[str, Callable[[_Ctx], None]] = MappingProxyType(
    {
        "fresh-id": _fresh_id,
        "first-revision": _first_revision,
        "valid-spec": _valid_spec,
        "valid-summary": _valid_summary,
        "plan-ref": _plan_ref,
        "plan-ref-next": lambda ctx: _plan_ref(ctx, next_revision=True),
        "matching-hash": lambda ctx: _hash(ctx, "hash-mismatch"),
        "approval-ref": _approval_ref,
        "approved-version": _approved_version,
        "content-changed": _content_changed,
        "known-todo": _known_todo,
        "verifying": _verifying(True),
        "not-verifying": _verifying(False),
    }
)
