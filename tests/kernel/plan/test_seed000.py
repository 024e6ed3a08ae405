"""Seed 000's Test Plan, the lines about plans, one test per line.

Each test is named after its line (see tests/SEED_TEST_PLAN.md) and drives the
real kernel: the event builders, the session fold and the context policy.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planfold.kernel.log import ASSISTANT_MESSAGE, TURN_END, TURN_START, USER_MESSAGE, Event
from planfold.kernel.plan.context import ViewChoice, ViewRequest, choose_plan_view, render_plan_view, runtime_phase
from planfold.kernel.plan.events import PlanChangeError
from planfold.kernel.plan.spec import PlanSpec, PlanSpecError, Todo, TodoStatus
from planfold.kernel.plan.spec_json import decode_exit_plan_args, spec_to_json
from planfold.kernel.plan.views import adopt_summary, build_summary_view, render_plan_content
from planfold.kernel.plan_events import (
    approve_event,
    complete_event,
    draft_event,
    exit_plan_events,
    rewrite_event,
    start_event,
    todo_event,
    update_plan_events,
    verify_event,
)
from planfold.kernel.session import fold_session
from tests.plan_helpers import GOOD_CANDIDATE, Session, drafted, planning, spec, valid_candidates, valid_specs


def approve_current(s: Session) -> None:
    assert s.state.plan.current is not None
    s.add(approve_event(s.state, s.state.plan.current.ref))


def status_of(s: Session) -> str | None:
    return s.state.plan.status


def executing() -> Session:
    s = drafted()
    approve_current(s)
    s.mode(False)
    assert s.state.plan.current is not None
    s.add(start_event(s.state, s.state.plan.current.ref))
    return s


# Line 2 ----------------------------------------------------------------------


def test_seed000_old_session_defaults_to_build_and_no_plan_is_legal() -> None:
    for old_log in (
        [],
        [
            Event(1, TURN_START, 5, {"turn": 1}),
            Event(2, USER_MESSAGE, 6, {"text": "hi", "source": None}),
            Event(3, ASSISTANT_MESSAGE, 7, {"text": "hello", "source": None}),
            Event(4, TURN_END, 8, {"turn": 1}),
        ],
    ):
        state = fold_session(old_log)
        assert state.agent_mode == "build"
        assert state.plan.current is None and state.plan.approval is None
        assert runtime_phase(state) == "build_bootstrap"  # the first run bootstraps a plan
        assert choose_plan_view(state) == ViewChoice("none", "no-plan")


# Line 6 ----------------------------------------------------------------------


ONE_TODO = [{"id": "t", "text": "x"}]


@pytest.mark.parametrize(
    ("output", "code"),
    [
        ({"plan_spec": {"goal": "g", "steps": [], "verify": ["v"], "todos": ONE_TODO}}, "no-steps"),
        ({"plan_spec": {"goal": "g", "steps": ["s"], "verify": ["v"], "todos": []}}, "no-todos"),
        ({"plan_spec": {"goal": "", "steps": ["s"], "verify": ["v"], "todos": ONE_TODO}}, "empty-goal"),
        ({"plan_spec": {"goal": "g", "steps": ["s"], "todos": ONE_TODO}}, "missing-field"),
        ({"plan_spec": "# My plan\n1. do it"}, "wrong-type"),
        ({"plan": {}}, "missing-field"),
    ],
)
def test_seed000_plan_output_that_is_not_a_valid_plan_spec_returns_an_error(output: Any, code: str) -> None:
    s = planning()
    with pytest.raises(PlanSpecError) as info:
        decode_exit_plan_args(output)
    assert info.value.code == "invalid-plan-spec"
    assert code in {p.code for p in info.value.problems}
    # Nothing reaches the log: there is no spec to record.
    assert s.state.plan.current is None
    # And a builder handed an invalid spec directly refuses it too.
    with pytest.raises(PlanChangeError) as refused:
        draft_event(s.state, "p1", replace(spec(), steps=()), None)
    assert refused.value.code == "invalid-spec"


# Line 7 ----------------------------------------------------------------------


def test_seed000_model_outputs_summary_candidate_with_plan_spec() -> None:
    s = planning()
    args = decode_exit_plan_args({"plan_spec": spec_to_json(spec()), "summary_candidate": GOOD_CANDIDATE})
    assert args.spec == spec() and args.summary_candidate == GOOD_CANDIDATE
    for event in exit_plan_events(s.state, args, "p1"):
        s.add(event)
    cur = s.state.plan.current
    assert cur is not None and cur.status == "draft" and cur.spec == spec()
    assert s.state.plan.summary_source == "model"
    assert cur.summary.goal == GOOD_CANDIDATE["goal"]


# Line 8 ----------------------------------------------------------------------


@given(st.data())
def test_seed000_complete_summary_candidate_with_valid_todo_refs_is_adopted(data: st.DataObject) -> None:
    the_spec = data.draw(valid_specs())
    candidate = data.draw(valid_candidates(the_spec))
    s = planning()
    s.add(draft_event(s.state, "p1", the_spec, candidate))
    cur = s.state.plan.current
    assert cur is not None
    assert s.state.plan.summary_source == "model" and s.state.plan.summary_rejected == ()
    assert cur.summary == adopt_summary(candidate, the_spec).summary
    assert cur.summary.active_todo_ids == tuple(candidate["active_todo_ids"])
    assert cur.summary.key_steps == tuple(x.strip() for x in candidate["key_steps"])


# Line 9 ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("defect", "code"),
    [
        (lambda c: c.pop("goal"), "missing-field"),
        (lambda c: c.pop("active_todo_ids"), "missing-field"),
        (lambda c: c.update(goal="  "), "empty-field"),
        (lambda c: c.update(key_steps=[]), "empty-field"),
        (lambda c: c.update(verify=[]), "empty-field"),
        (lambda c: c.update(active_todo_ids=["t1", "t404"]), "unknown-todo-id"),
    ],
)
def test_seed000_defective_summary_candidate_falls_back_to_runtime_summary(defect: Any, code: str) -> None:
    candidate = dict(GOOD_CANDIDATE)
    defect(candidate)
    s = drafted(candidate)
    cur = s.state.plan.current
    assert cur is not None
    assert cur.summary == build_summary_view(cur.spec)
    assert s.state.plan.summary_source == "runtime"
    rejected = adopt_summary(candidate, spec()).rejected
    assert [p.code for p in rejected] == [code]
    # The reason is kept in the log; there was exactly one event (no retry).
    assert s.state.plan.summary_rejected == tuple(f"{p.where}: {p.message}" for p in rejected)
    assert [e.kind for e in s.log].count("plan/artifact") == 1


# Line 10 ---------------------------------------------------------------------


def test_seed000_plan_mode_with_a_plan_injects_summary_not_full_text() -> None:
    s = drafted()
    s.request()
    s.discuss("what about error handling?")
    choice = choose_plan_view(s.state)
    assert choice == ViewChoice("summary", "default")
    view = render_plan_view(s.state, choice)
    assert view is not None and not view.startswith("# ") and "## Steps" not in view
    assert choose_plan_view(planning().state).view == "none"  # no plan, no plan context


# Line 11 ---------------------------------------------------------------------


def test_seed000_plan_mode_injects_full_text_when_rewriting_or_summary_insufficient() -> None:
    s = drafted()
    assert choose_plan_view(s.state, ViewRequest(rewriting=True)) == ViewChoice("full", "rewriting")
    assert choose_plan_view(s.state, ViewRequest(summary_insufficient=True)).view == "full"
    assert choose_plan_view(s.state, ViewRequest(user_asked_full=True)).view == "full"
    full = render_plan_view(s.state, choose_plan_view(s.state, ViewRequest(rewriting=True)))
    assert full is not None and full.startswith("# ") and "## Verify" in full


# Line 12 ---------------------------------------------------------------------


def test_seed000_ordinary_follow_up_does_not_rewrite_current_plan() -> None:
    s = drafted()
    before = s.state.plan
    s.discuss("why two steps?")
    s.request()
    s.discuss("and the tests?")
    assert s.state.plan.current == before.current
    assert s.state.plan.current is not None
    assert update_plan_events(s.state, s.state.plan.current.spec, GOOD_CANDIDATE) == ()
    assert s.state.plan.current.revision == 1


# Line 13 ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        lambda p: replace(p, goal="Add export and import commands"),
        lambda p: replace(p, steps=(*p.steps, "document the flags")),
        lambda p: replace(p, steps=tuple(reversed(p.steps))),
        lambda p: replace(p, constraints=("may add one dependency",)),
        lambda p: replace(p, verify=("the export and import tests pass",)),
    ],
)
def test_seed000_substantive_change_rewrites_plan_and_increments_revision(change: Any) -> None:
    s = drafted()
    approve_current(s)
    assert s.state.plan.current is not None
    new_spec: PlanSpec = change(s.state.plan.current.spec)
    (event,) = update_plan_events(s.state, new_spec, None)
    s.add(event)
    cur = s.state.plan.current
    assert cur is not None
    assert (cur.id, cur.revision, cur.spec) == ("p1", 2, new_spec)
    assert cur.status == "draft" and s.state.plan.approval is None  # the approval is void
    assert cur.summary == build_summary_view(new_spec)


# Line 14 ---------------------------------------------------------------------


@given(valid_specs())
def test_seed000_summary_view_and_plan_content_derive_from_one_spec(the_spec: PlanSpec) -> None:
    summary, content = build_summary_view(the_spec), render_plan_content(the_spec)
    assert content.startswith("# ")
    for item in (summary.goal, *summary.key_steps, *summary.constraints, *summary.verify):
        assert item in content
    for todo_id in summary.active_todo_ids:
        assert f"`{todo_id}`" in content
    # Both are functions of the spec alone: a copy gives the same views, and
    # a change of goal shows in both.
    copy = replace(the_spec)
    assert (build_summary_view(copy), render_plan_content(copy)) == (summary, content)
    other = replace(the_spec, goal=the_spec.goal + " (revised)")
    assert build_summary_view(other).goal != summary.goal
    assert render_plan_content(other) != content


# Line 15 ---------------------------------------------------------------------


def test_seed000_ordinary_execution_injects_only_the_summary() -> None:
    s = executing()
    assert choose_plan_view(s.state).reason == "new-plan"  # the first build request aligns
    s.request()
    progress: list[tuple[str, TodoStatus]] = [("t1", "in_progress"), ("t1", "done"), ("t2", "in_progress")]
    for todo_id, status in progress:
        assert choose_plan_view(s.state) == ViewChoice("summary", "default")
        s.add(todo_event(s.state, todo_id, status))
        s.request()
    assert choose_plan_view(s.state) == ViewChoice("summary", "default")


# Line 16 ---------------------------------------------------------------------


def test_seed000_full_text_is_injected_again_under_the_specific_conditions() -> None:
    s = executing()
    s.request()
    assert choose_plan_view(s.state).view == "summary"
    assert choose_plan_view(s.state, ViewRequest(first_since_resume=True)).reason == "resumed"
    assert choose_plan_view(s.state, ViewRequest(user_asked_full=True)).reason == "user-asked"
    assert choose_plan_view(s.state, ViewRequest(summary_insufficient=True)).reason == "summary-insufficient"
    s.add(rewrite_event(s.state, spec(goal="Export to CSV as well"), None))
    approve_current(s)
    assert choose_plan_view(s.state).reason == "rewritten"
    s.request()
    assert choose_plan_view(s.state).view == "summary"
    # A resumed session folded from its log aligns the same way.
    resumed = fold_session(s.log)
    assert choose_plan_view(resumed, ViewRequest(first_since_resume=True)).view == "full"


# Line 17 ---------------------------------------------------------------------


def test_seed000_summary_refreshes_at_first_save_rewrite_and_key_todo_change() -> None:
    s = planning()
    assert s.state.plan.current is None
    s.add(draft_event(s.state, "p1", spec(), None))  # first save
    assert s.state.plan.current is not None
    first = s.state.plan.current.summary
    assert first == build_summary_view(spec())
    s.discuss()
    assert s.state.plan.current.summary is first  # discussion does not refresh
    new_spec = spec(steps=("parse flags", "write the exporter", "add docs"))
    s.add(rewrite_event(s.state, new_spec, None))  # formal rewrite
    assert s.state.plan.current.summary == build_summary_view(new_spec) != first
    approve_current(s)
    s.mode(False)
    s.add(start_event(s.state, s.state.plan.current.ref))
    rewritten = s.state.plan.current.summary
    s.add(todo_event(s.state, "t1", "in_progress"))  # not a key change
    assert s.state.plan.current.summary is rewritten
    s.add(todo_event(s.state, "t1", "done"))  # a key change
    assert s.state.plan.current.summary.active_todo_ids == ("t2",)
    assert s.state.plan.current.revision == 2  # progress is not a rewrite


# Line 18 ---------------------------------------------------------------------


def test_seed000_draft_plan_cannot_enter_normal_execution() -> None:
    s = drafted()
    s.mode(False)
    assert runtime_phase(s.state) == "build_bootstrap"  # read-only, not execution
    assert s.state.plan.current is not None
    with pytest.raises(PlanChangeError) as err:
        start_event(s.state, s.state.plan.current.ref)
    assert err.value.code == "transition-not-allowed"
    with pytest.raises(PlanChangeError):
        verify_event(s.state)
    assert status_of(s) == "draft"
    approve_current(s)
    s.add(start_event(s.state, s.state.plan.current.ref))
    assert status_of(s) == "executing"


# Line 19 ---------------------------------------------------------------------


def test_seed000_rewrite_during_execution_aborts_and_requires_realignment() -> None:
    s = executing()
    assert runtime_phase(s.state) == "build_execute"
    s.add(rewrite_event(s.state, spec(goal="Export to Parquet instead"), None))
    assert s.state.plan.status == "draft"
    assert s.state.plan.realign is not None and s.state.plan.approval is None
    assert runtime_phase(s.state) == "build_bootstrap"  # execution stopped; read-only
    assert s.state.plan.current is not None
    with pytest.raises(PlanChangeError) as err:
        start_event(s.state, s.state.plan.current.ref)
    assert err.value.code == "transition-not-allowed"
    assert choose_plan_view(s.state).view == "full"  # realign on the full rewritten plan
    approve_current(s)  # realignment
    assert s.state.plan.realign is None
    s.add(start_event(s.state, s.state.plan.current.ref))
    assert runtime_phase(s.state) == "build_execute"


# Line 20 ---------------------------------------------------------------------


def test_seed000_finished_execution_enters_verify_then_completed() -> None:
    s = executing()
    for todo in ("t1", "t2"):
        s.add(todo_event(s.state, todo, "done"))
    with pytest.raises(PlanChangeError):
        complete_event(s.state)  # no completion without verify
    s.add(verify_event(s.state))
    assert runtime_phase(s.state) == "verify"
    s.add(complete_event(s.state))
    assert s.state.plan.status == "completed"
    assert runtime_phase(s.state) == "build_bootstrap"
    assert fold_session(s.log) == s.state
    assert s.state.plan.current is not None
    assert s.state.plan.current.spec.todos == (Todo("t1", "flags", "done"), Todo("t2", "exporter", "done"))
