"""The plan status machine, driven by Hypothesis against a plain model.

The machine drives drafts, bootstraps, rewrites (substantive and empty),
discussion, approvals (right, stale, wrong hash), rejections, starts,
todo progress, verify results, realignment, supersession, new plans and
mode switches through the real event builders and the real session fold,
and keeps a model written straight from the seed's rules in lockstep.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from planfold.kernel.plan.artifact import PLAN_STATUSES, PlanRef
from planfold.kernel.plan.context import runtime_phase
from planfold.kernel.plan.events import PlanChangeError
from planfold.kernel.plan.spec import TODO_STATUSES, PlanSpec, SummaryView, Todo, TodoStatus, spec_hash
from planfold.kernel.plan.views import summary_derives_from
from planfold.kernel.plan_events import (
    approve_event,
    bootstrap_event,
    complete_event,
    draft_event,
    realign_event,
    reject_event,
    rewrite_event,
    start_event,
    supersede_event,
    todo_event,
    update_plan_events,
    verify_event,
    verify_fail_event,
)
from planfold.kernel.session import fold_session
from tests.plan_helpers import Session, valid_candidates, valid_specs, words

LIVE = {"draft", "approved", "implicit", "executing"}


@dataclass
class ModelPlan:
    id: str
    revision: int
    status: str
    spec: PlanSpec
    summary: SummaryView
    verifying: bool = False
    approved: PlanRef | None = None
    realign: bool = False

    @property
    def ref(self) -> PlanRef:
        return PlanRef(self.id, self.revision, spec_hash(self.spec))


@dataclass
class Model:
    plan_mode: bool = False
    plan: ModelPlan | None = None
    used_ids: set[str] = field(default_factory=set)
    old_refs: list[PlanRef] = field(default_factory=list)
    started_from: list[str] = field(default_factory=list)
    unseen: bool = False

    def phase(self) -> str:
        if self.plan_mode:
            return "plan"
        status = None if self.plan is None else self.plan.status
        if status == "executing":
            assert self.plan is not None
            return "verify" if self.plan.verifying else "build_execute"
        return "build_execute" if status in ("approved", "implicit") else "build_bootstrap"

    def ref_problem(self, ref: PlanRef, id_rule: str, hash_rule: str) -> str | None:
        assert self.plan is not None
        if ref.plan_id != self.plan.id:
            return id_rule
        if ref.revision < self.plan.revision:
            return "stale-revision"
        if ref.revision > self.plan.revision:
            return "revision-gap"
        if ref.spec_hash != spec_hash(self.plan.spec):
            return hash_rule
        return None


def valid_spec_example() -> PlanSpec:
    return PlanSpec("goal", ("step",), (), ("check",), (Todo("t1", "do"),))


def active(spec: PlanSpec) -> tuple[str, ...]:
    return tuple(t.id for t in spec.todos if t.status in ("pending", "in_progress"))


def expected_summary(spec: PlanSpec, candidate: dict[str, Any] | None, kind: str) -> SummaryView:
    if kind == "valid":
        assert candidate is not None
        return SummaryView(
            candidate["goal"].strip(),
            tuple(x.strip() for x in candidate["key_steps"]),
            tuple(x.strip() for x in candidate["constraints"]),
            tuple(x.strip() for x in candidate["verify"]),
            tuple(candidate["active_todo_ids"]),
        )
    return SummaryView(
        spec.goal.strip(),
        tuple(x.strip() for x in spec.steps),
        tuple(x.strip() for x in spec.constraints),
        tuple(x.strip() for x in spec.verify),
        active(spec),
    )


CANDIDATE_KINDS = ["valid", "none", "missing-field", "empty-goal", "unknown-todo"]


@st.composite
def candidates(draw: st.DrawFn, spec: PlanSpec) -> tuple[str, dict[str, Any] | None]:
    kind = draw(st.sampled_from(CANDIDATE_KINDS))
    if kind == "none":
        return kind, None
    candidate = draw(valid_candidates(spec))
    if kind == "missing-field":
        del candidate[draw(st.sampled_from(sorted(candidate)))]
    elif kind == "empty-goal":
        candidate["goal"] = "   "
    elif kind == "unknown-todo":
        candidate["active_todo_ids"] = [*candidate["active_todo_ids"], "#not-a-todo"]
    return kind, candidate


@st.composite
def substantive_changes(draw: st.DrawFn, spec: PlanSpec) -> PlanSpec:
    part = draw(st.sampled_from(["goal", "steps", "constraints", "verify", "todos"]))
    extra = draw(words)
    if part == "goal":
        return replace(spec, goal=f"{spec.goal} / {extra}")
    if part == "steps":
        return replace(spec, steps=(*spec.steps, extra))
    if part == "constraints":
        return replace(spec, constraints=(*spec.constraints, extra))
    if part == "verify":
        return replace(spec, verify=(*spec.verify, extra))
    fresh = "n" + str(len(spec.todos)) + "#" + extra
    return replace(spec, todos=(*spec.todos, Todo(fresh, extra)))


class PlanArtifactMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.s = Session()
        self.m = Model()
        self.next_id = 0

    # -- helpers ----------------------------------------------------------------

    def attempt(self, label: str, expected_error: str | None, build: Any) -> bool:
        """Run a builder; the model says whether it must refuse, and with what."""
        before = self.s.state
        try:
            events = build()
        except PlanChangeError as exc:
            note(f"{label}: refused {exc.code} ({exc.detail})")
            assert exc.code == expected_error, f"{label}: got {exc.code}, model says {expected_error}"
            assert self.s.state is before
            return False
        note(f"{label}: accepted")
        assert expected_error is None, f"{label}: accepted, model says {expected_error}"
        for event in events if isinstance(events, tuple) else (events,):
            self.s.add(event)
        return True

    def retire_ref(self) -> None:
        if self.m.plan is not None:
            self.m.old_refs.append(self.m.plan.ref)

    # -- rules ------------------------------------------------------------------

    @rule(active=st.booleans())
    def switch_mode(self, active: bool) -> None:
        if active != self.m.plan_mode:
            note(f"plan mode -> {active}")
            self.s.mode(active)
            self.m.plan_mode = active

    @rule()
    def request(self) -> None:
        self.s.request()
        if not self.m.plan_mode:
            self.m.unseen = False

    @precondition(lambda self: self.m.plan is None or self.m.plan.status not in LIVE)
    @rule(data=st.data())
    def new_plan(self, data: st.DataObject) -> None:
        """A draft in plan mode, a bootstrap in build mode."""
        self.make_plan(data, bootstrap=not self.m.plan_mode, reuse=False)

    def make_plan(self, data: st.DataObject, bootstrap: bool, reuse: bool) -> None:
        spec = data.draw(valid_specs())
        kind, candidate = data.draw(candidates(spec))
        plan_id = "p0" if reuse and self.m.used_ids else f"p{self.next_id}"
        m = self.m
        if m.plan is not None and m.plan.status in LIVE:
            error: str | None = "transition-not-allowed"
        elif m.plan_mode == bootstrap:
            error = "wrong-mode"
        elif plan_id in m.used_ids:
            error = "id-reused"
        else:
            error = None
        build = bootstrap_event if bootstrap else draft_event
        label = f"{'bootstrap' if bootstrap else 'draft'} {plan_id} ({kind} candidate)"
        if self.attempt(label, error, lambda: build(self.s.state, plan_id, spec, candidate)):
            self.next_id += 1
            self.retire_ref()
            m.used_ids.add(plan_id)
            status = "implicit" if bootstrap else "draft"
            m.plan = ModelPlan(plan_id, 1, status, spec, expected_summary(spec, candidate, kind))
            m.unseen = True

    @precondition(lambda self: self.m.plan is None)
    @rule(what=st.sampled_from(["rewrite", "todo", "verify", "complete", "realign", "supersede"]))
    def act_without_a_plan(self, what: str) -> None:
        state = self.s.state
        build = {
            "rewrite": lambda: rewrite_event(state, valid_spec_example(), None),
            "todo": lambda: todo_event(state, "t1", "done"),
            "verify": lambda: verify_event(state),
            "complete": lambda: complete_event(state),
            "realign": lambda: realign_event(state, "scope"),
            "supersede": lambda: supersede_event(state),
        }[what]
        self.attempt(what, "no-plan", build)

    @precondition(lambda self: self.m.plan is not None)
    @rule(data=st.data())
    def rewrite(self, data: st.DataObject) -> None:
        m = self.m
        assert m.plan is not None
        new = data.draw(substantive_changes(m.plan.spec))
        kind, candidate = data.draw(candidates(new))
        error = None if m.plan.status in LIVE else "transition-not-allowed"
        label = f"rewrite r{m.plan.revision + 1}"
        if self.attempt(label, error, lambda: rewrite_event(self.s.state, new, candidate)):
            self.retire_ref()
            old = m.plan.status
            m.plan.revision += 1
            m.plan.spec, m.plan.summary = new, expected_summary(new, candidate, kind)
            m.plan.status = "implicit" if old == "implicit" and not m.plan_mode else "draft"
            m.plan.approved, m.plan.verifying = None, False
            m.plan.realign = m.plan.realign or old == "executing"
            m.unseen = True

    def rewrite_without_change(self, progress: bool) -> None:
        m = self.m
        assert m.plan is not None
        spec = m.plan.spec
        if progress:
            first = spec.todos[0]
            flipped: TodoStatus = "done" if first.status != "done" else "pending"
            spec = replace(spec, todos=(replace(first, status=flipped), *spec.todos[1:]))
        error = "rewrite-without-change" if m.plan.status in LIVE else "transition-not-allowed"
        self.attempt("empty rewrite", error, lambda: rewrite_event(self.s.state, spec, None))

    @precondition(lambda self: self.m.plan is not None)
    @rule()
    def discussion(self) -> None:
        assert self.m.plan is not None
        self.s.discuss()
        if not self.m.plan_mode:  # the model's answer: the plan has been seen
            self.m.unseen = False
        assert update_plan_events(self.s.state, self.m.plan.spec, None) == ()

    @precondition(lambda self: self.m.plan is not None and self.m.plan.status == "draft")
    @rule()
    def approve_current(self) -> None:
        m = self.m
        assert m.plan is not None
        ref = m.plan.ref
        if self.attempt("approve current", None, lambda: approve_event(self.s.state, ref)):
            m.plan.status, m.plan.approved, m.plan.realign = "approved", ref, False

    @precondition(lambda self: self.m.plan is not None and self.m.plan.status in ("approved", "implicit"))
    @rule()
    def start_current(self) -> None:
        m = self.m
        assert m.plan is not None
        ref = m.plan.ref
        error = "wrong-mode" if m.plan_mode else None
        if self.attempt("start current", error, lambda: start_event(self.s.state, ref)):
            m.started_from.append(m.plan.status)
            if m.plan.status == "approved":
                assert m.plan.approved == m.plan.ref
            m.plan.status = "executing"

    def review(self, how: str, reject: bool) -> None:
        m = self.m
        if m.plan is None or (how == "stale" and not m.old_refs):
            ref = PlanRef("ghost", 1, "0" * 64)
        elif how == "right":
            ref = m.plan.ref
        elif how == "stale":
            ref = m.old_refs[-1]
        else:
            ref = replace(m.plan.ref, spec_hash="0" * 64)
        if m.plan is None or m.plan.status != "draft":
            error: str | None = "transition-not-allowed"
        elif reject:
            error = m.ref_problem(ref, "plan-mismatch", "hash-mismatch")
        else:
            error = m.ref_problem(ref, "approval-mismatch", "approval-mismatch")
        if reject:
            self.attempt(f"reject {how}", error, lambda: reject_event(self.s.state, ref, "no"))
        elif self.attempt(f"approve {how}", error, lambda: approve_event(self.s.state, ref)):
            assert m.plan is not None
            m.plan.status, m.plan.approved, m.plan.realign = "approved", ref, False

    def start(self, stale: bool) -> None:
        m = self.m
        if m.plan is None:
            ref = PlanRef("ghost", 1, "0" * 64)
        else:
            ref = m.old_refs[-1] if stale and m.old_refs else m.plan.ref
        if m.plan is None or m.plan.status not in ("approved", "implicit"):
            error: str | None = "transition-not-allowed"
        elif m.plan_mode:
            error = "wrong-mode"
        else:
            error = m.ref_problem(ref, "approval-mismatch", "approval-mismatch")
        label = f"start ({'stale' if stale else 'current'} ref)"
        if self.attempt(label, error, lambda: start_event(self.s.state, ref)):
            assert m.plan is not None
            m.started_from.append(m.plan.status)
            if m.plan.status == "approved":
                assert m.plan.approved == m.plan.ref
            m.plan.status = "executing"

    @precondition(lambda self: self.m.plan is not None and self.m.plan.status == "executing")
    @rule(data=st.data())
    def todo_progress(self, data: st.DataObject) -> None:
        self.progress(data)

    def progress(self, data: st.DataObject) -> None:
        m = self.m
        assert m.plan is not None
        todo = data.draw(st.sampled_from(m.plan.spec.todos))
        status = data.draw(st.sampled_from(TODO_STATUSES))
        if m.plan.status != "executing":
            error: str | None = "transition-not-allowed"
        elif status == todo.status:
            error = "todo-unchanged"
        else:
            error = None
        label = f"todo {todo.id} -> {status}"
        if self.attempt(label, error, lambda: todo_event(self.s.state, todo.id, status)):
            todos = tuple(replace(t, status=status) if t.id == todo.id else t for t in m.plan.spec.todos)
            m.plan.spec = replace(m.plan.spec, todos=todos)
            m.plan.summary = replace(m.plan.summary, active_todo_ids=active(m.plan.spec))

    def _execution_error(self, want_verifying: bool) -> str | None:
        m = self.m
        if m.plan is None:
            return "no-plan"
        if m.plan.status != "executing":
            return "transition-not-allowed"
        if m.plan_mode:
            return "wrong-mode"
        return None if m.plan.verifying == want_verifying else "transition-not-allowed"

    @precondition(lambda self: self.m.plan is not None and self.m.plan.status == "executing")
    @rule()
    def verify(self) -> None:
        if self.attempt("verify", self._execution_error(False), lambda: verify_event(self.s.state)):
            assert self.m.plan is not None
            self.m.plan.verifying = True

    @precondition(lambda self: self.m.plan is not None and self.m.plan.verifying)
    @rule(passed=st.booleans())
    def verify_result(self, passed: bool) -> None:
        error = self._execution_error(True)
        if passed:
            if self.attempt("verify passed", error, lambda: complete_event(self.s.state)):
                assert self.m.plan is not None
                self.m.plan.status, self.m.plan.verifying = "completed", False
        elif self.attempt("verify failed", error, lambda: verify_fail_event(self.s.state, "red")):
            assert self.m.plan is not None
            self.m.plan.verifying = False

    def realign(self) -> None:
        m = self.m
        if m.plan is None:
            error: str | None = "no-plan"
        else:
            error = None if m.plan.status in ("approved", "implicit", "executing") else "transition-not-allowed"
        if self.attempt("realign", error, lambda: realign_event(self.s.state, "scope")):
            assert m.plan is not None
            m.plan.status, m.plan.approved, m.plan.verifying, m.plan.realign = "draft", None, False, True

    def supersede(self) -> None:
        m = self.m
        if m.plan is None:
            error: str | None = "no-plan"
        else:
            error = None if m.plan.status in LIVE else "transition-not-allowed"
        if self.attempt("supersede", error, lambda: supersede_event(self.s.state)):
            assert m.plan is not None
            m.plan.status, m.plan.approved, m.plan.verifying = "superseded", None, False

    @rule(
        which=st.sampled_from(
            [
                ("approve", "right"),
                ("approve", "stale"),
                ("approve", "wrong-hash"),
                ("reject", "right"),
                ("reject", "stale"),
                ("reject", "wrong-hash"),
                ("start", "stale"),
                ("start", "current"),
                ("new", "wrong-mode"),
                ("new", "reused-id"),
                ("new", "right"),
                ("todo", "any"),
                ("complete", "passed"),
                ("complete", "failed"),
            ]
        ),
        data=st.data(),
    )
    def probe(self, which: tuple[str, str], data: st.DataObject) -> None:
        """Reviews and starts with right, stale and forged versions, and new
        plans in the wrong mode or with a used id, in any state."""
        action, how = which
        if action == "todo" and self.m.plan is not None:
            self.progress(data)
        elif action == "complete" and self.m.plan is not None:
            self.verify_result(passed=how == "passed")
        elif action == "new":
            self.make_plan(data, bootstrap=(how == "wrong-mode") == self.m.plan_mode, reuse=how == "reused-id")
        elif action == "start":
            self.start(stale=how == "stale")
        else:
            self.review(how, reject=action == "reject")

    @precondition(lambda self: self.m.plan is not None)
    @rule(which=st.sampled_from(["realign", "supersede", "empty-rewrite", "progress-rewrite"]))
    def disrupt(self, which: str) -> None:
        """Realignment, supersession, and rewrites that change nothing."""
        if which == "realign":
            self.realign()
        elif which == "supersede":
            self.supersede()
        else:
            self.rewrite_without_change(progress=which == "progress-rewrite")

    # -- invariants -------------------------------------------------------------

    @invariant()
    def status_table_is_never_left(self) -> None:
        status = self.s.state.plan.status
        assert status is None or status in PLAN_STATUSES
        assert status == (None if self.m.plan is None else self.m.plan.status)

    @invariant()
    def a_draft_never_executes(self) -> None:
        phase = runtime_phase(self.s.state)
        if phase in ("build_execute", "verify"):
            assert self.s.state.plan.status in ("approved", "implicit", "executing")
        assert set(self.m.started_from) <= {"approved", "implicit"}
        assert phase == self.m.phase()

    @invariant()
    def verify_belongs_to_execution(self) -> None:
        if self.s.state.plan.verifying:
            assert self.s.state.plan.status == "executing"

    @invariant()
    def summary_derives_from_the_current_spec(self) -> None:
        cur = self.s.state.plan.current
        if cur is not None:
            assert self.m.plan is not None
            assert summary_derives_from(cur.summary, cur.spec)
            assert cur.summary == self.m.plan.summary

    @invariant()
    def identity_and_approval_match_the_model(self) -> None:
        cur, plan = self.s.state.plan.current, self.m.plan
        if cur is None:
            assert plan is None
            return
        assert plan is not None
        assert (cur.id, cur.revision, cur.spec) == (plan.id, plan.revision, plan.spec)
        assert self.s.state.plan.approval == plan.approved
        assert (self.s.state.plan.realign is not None) == plan.realign
        assert self.s.state.plan.unseen == self.m.unseen
        if cur.status == "approved":
            assert self.s.state.plan.approval == cur.ref

    @invariant()
    def replay_gives_the_same_state(self) -> None:
        assert fold_session(self.s.log) == self.s.state


test_plan_artifact_machine = PlanArtifactMachine.TestCase
