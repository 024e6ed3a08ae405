"""Runtime phases, the plan-view rules and prompt composition."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planfold.kernel.phase import READ_ONLY_PHASES
from planfold.kernel.plan.artifact import PlanArtifact
from planfold.kernel.plan.context import (
    VIEW_RULES,
    PromptParts,
    ViewChoice,
    ViewRequest,
    choose_plan_view,
    compose_prompt,
    plan_to_start,
    render_plan_view,
    render_summary,
    runtime_phase,
)
from planfold.kernel.plan.review import PlanPolicy
from planfold.kernel.plan.spec import Todo
from planfold.kernel.plan.views import build_summary_view
from planfold.kernel.plan_events import (
    approve_event,
    bootstrap_event,
    draft_event,
    realign_event,
    start_event,
    verify_event,
)
from planfold.kernel.session import SessionState
from tests.plan_helpers import Session, drafted, spec


def ref(s: Session) -> tuple[str, int, str]:
    assert s.state.plan.current is not None
    r = s.state.plan.current.ref
    return r.plan_id, r.revision, r.spec_hash


# --------------------------------------------------------------------------
# Phases


def test_phases_along_the_life_of_a_plan() -> None:
    s = Session()
    assert runtime_phase(s.state) == "build_bootstrap"
    s.mode(True)
    assert runtime_phase(s.state) == "plan"
    s.add(draft_event(s.state, "p1", spec(), None))
    assert runtime_phase(s.state) == "plan"
    s.mode(False)
    assert runtime_phase(s.state) == "build_bootstrap"  # a draft does not execute
    assert plan_to_start(s.state) is None
    assert s.state.plan.current is not None
    s.add(approve_event(s.state, s.state.plan.current.ref))
    assert runtime_phase(s.state) == "build_execute"
    to_start = plan_to_start(s.state)
    assert to_start == s.state.plan.current.ref
    s.add(start_event(s.state, to_start))
    assert runtime_phase(s.state) == "build_execute" and plan_to_start(s.state) is None
    s.add(verify_event(s.state))
    assert runtime_phase(s.state) == "verify"
    s.mode(True)
    assert runtime_phase(s.state) == "plan"  # plan mode wins over everything
    s.mode(False)
    s.add(realign_event(s.state, "left scope"))
    assert runtime_phase(s.state) == "build_bootstrap"


def test_bootstrap_phase_is_read_only_until_an_implicit_plan_exists() -> None:
    s = Session()
    assert runtime_phase(s.state) in READ_ONLY_PHASES
    s.add(bootstrap_event(s.state, "b1", spec(), None))
    assert s.state.plan.status == "implicit"
    assert runtime_phase(s.state) == "build_execute"
    assert runtime_phase(s.state) not in READ_ONLY_PHASES


# --------------------------------------------------------------------------
# Plan view


def test_view_rules_table_is_well_formed() -> None:
    reasons = [row.reason for row in VIEW_RULES]
    assert len(reasons) == len(set(reasons))
    assert VIEW_RULES[0].view == "none" and VIEW_RULES[-1].reason == "default"
    assert VIEW_RULES[-1].modes == frozenset({"plan", "build"})


requests = st.builds(
    ViewRequest,
    user_asked_full=st.booleans(),
    summary_insufficient=st.booleans(),
    rewriting=st.booleans(),
    first_since_resume=st.booleans(),
)


@given(requests, st.booleans())
def test_no_live_plan_means_no_view_whatever_is_asked(request: ViewRequest, plan_mode: bool) -> None:
    state = SessionState(plan_mode=plan_mode)
    assert choose_plan_view(state, request) == ViewChoice("none", "no-plan")
    assert render_plan_view(state, ViewChoice("full", "user-asked")) is None


@given(requests)
def test_plan_mode_view_follows_the_seed(request: ViewRequest) -> None:
    state = drafted().state
    want_full = request.user_asked_full or request.summary_insufficient or request.rewriting
    assert choose_plan_view(state, request).view == ("full" if want_full else "summary")


@given(requests, st.booleans())
def test_build_mode_view_follows_the_seed(request: ViewRequest, seen: bool) -> None:
    s = drafted()
    s.add(approve_event(s.state, s.state.plan.current.ref))  # type: ignore[union-attr]
    s.mode(False)
    if seen:
        s.request()
    want_full = request.user_asked_full or request.summary_insufficient or request.first_since_resume or not seen
    choice = choose_plan_view(s.state, request)
    assert choice.view == ("full" if want_full else "summary")
    if not want_full:
        assert choice.reason == "default"


def test_plan_mode_requests_do_not_count_as_seen_by_build() -> None:
    s = drafted()
    s.request()
    s.request()
    assert s.state.plan.unseen
    s.mode(False)
    assert choose_plan_view(s.state).reason == "new-plan"


def test_full_view_is_the_markdown_and_summary_view_names_the_todos() -> None:
    s = drafted()
    full = render_plan_view(s.state, ViewChoice("full", "user-asked"))
    summary = render_plan_view(s.state, ViewChoice("summary", "default"))
    assert full is not None and full.startswith("# Plan: Add an export command")
    assert summary is not None and "`t1` flags (pending)" in summary
    assert "Export command" in summary  # the adopted model summary


def test_the_summary_of_a_plan_with_no_todo_ahead_says_none() -> None:
    done = spec(todos_=(Todo("t1", "flags", "done"), Todo("t2", "exporter", "dropped")))
    artifact = PlanArtifact("p1", 2, "executing", done, build_summary_view(done), 1, 2)
    assert render_summary(artifact).endswith("\nActive todos:\n- (none)\n")


# --------------------------------------------------------------------------
# Prompt composition

POLICY = PlanPolicy("Deployment plan policy.")


@pytest.mark.parametrize(("plan_mode", "policy"), list(itertools.product([False, True], [None, POLICY])))
def test_prompt_sections_are_ordered_and_follow_the_recorded_plan_state(
    plan_mode: bool, policy: PlanPolicy | None
) -> None:
    s = drafted()
    if not plan_mode:
        s.mode(False)
    choice = choose_plan_view(s.state)
    sections = compose_prompt(PromptParts("BASE"), s.state, choice, policy)
    names = [sec.name for sec in sections]
    expected = ["base", "overlay:plan" if plan_mode else "overlay:build"]
    if plan_mode and policy is not None:
        expected.append("plan:policy")
    expected.append("plan:view")
    assert names == expected
    assert sections[0].text == "BASE"
    if "plan:policy" in names:
        assert sections[2].text == POLICY.section


def test_no_plan_view_section_without_a_plan() -> None:
    sections = compose_prompt(PromptParts("B", "P", "U"), SessionState(), ViewChoice("none", "no-plan"))
    assert [(x.name, x.text) for x in sections] == [("base", "B"), ("overlay:build", "U")]


def test_realignment_is_stated_in_the_plan_view() -> None:
    s = Session()
    s.add(bootstrap_event(s.state, "b1", spec(), None))
    s.add(realign_event(s.state, "touched docs/"))
    view = render_plan_view(s.state, choose_plan_view(s.state))
    assert view is not None and "touched docs/" in view
    assert ref(s)[1] == 1  # realignment does not bump the revision
