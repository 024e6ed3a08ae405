"""The state capsule: canonical, hashed, checked against the log."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planfold.kernel.errors import PayloadError
from planfold.kernel.payload import JSON
from planfold.kernel.plan.capsule import (
    CAPSULE_FIELDS,
    StateCapsule,
    build_capsule,
    capsule_from_json,
    capsule_matches,
    capsule_to_json,
    check_capsule,
    render_capsule,
)
from planfold.kernel.plan.spec import PlanSpec, SummaryView
from planfold.kernel.plan_events import approve_event, draft_event, rewrite_event
from planfold.kernel.session import SessionState, fold_session
from tests.fuzz.seeds import seed_logs
from tests.plan_helpers import Session, spec, valid_specs

GOAL: dict[str, JSON] = {"id": "g1", "revision": 2, "phase": "active", "objective": "ship the exporter"}
#: A session whose plan was sent back for realignment (a seed of the fuzz corpus).
REALIGNED = fold_session(seed_logs()[3])


def planned(the_spec: PlanSpec | None = None) -> Session:
    s = Session()
    s.mode(True)
    s.add(draft_event(s.state, "p1", the_spec or spec(), None))
    return s


def test_empty_session_capsule() -> None:
    capsule = build_capsule(SessionState())
    assert (capsule.mode, capsule.phase, capsule.plan_id, capsule.summary) == (
        "build",
        "build_bootstrap",
        None,
        None,
    )
    assert "No current plan." in render_capsule(capsule)
    assert capsule_matches(capsule, fold_session([]))


@given(valid_specs(), st.none() | st.just(GOAL))
def test_capsule_round_trips_and_matches_the_log(the_spec: PlanSpec, goal: Any) -> None:
    s = planned(the_spec)
    capsule = build_capsule(s.state, goal)
    assert capsule == build_capsule(fold_session(s.log), goal)  # canonical: same state, same bytes
    assert capsule_from_json(capsule_to_json(capsule)) == capsule
    assert capsule.goal == goal
    assert check_capsule(capsule, fold_session(s.log), goal) == ()
    assert len(capsule.hash) == 64


def test_a_stale_capsule_names_what_changed() -> None:
    s = planned()
    old = build_capsule(s.state, GOAL)
    s.add(rewrite_event(s.state, spec(goal="export and import"), None))
    assert check_capsule(old, s.state, GOAL) == ("revision", "spec_hash", "summary")
    assert check_capsule(old, s.state, {**GOAL, "revision": 3})[-1] == "goal"
    assert s.state.plan.current is not None
    s.add(approve_event(s.state, s.state.plan.current.ref))
    assert "status" in check_capsule(old, s.state, GOAL)
    assert not capsule_matches(old, s.state, GOAL)


def test_a_tampered_capsule_is_caught() -> None:
    capsule = build_capsule(planned().state, GOAL)
    forged = replace(capsule, status="approved")
    assert "hash" in check_capsule(forged, planned().state, GOAL)
    stored = capsule_to_json(capsule)
    with pytest.raises(PayloadError, match="hash"):
        capsule_from_json({**stored, "revision": 7})


@pytest.mark.parametrize(
    "change",
    [
        {"mode": "debug"},
        {"phase": "deploy"},
        {"status": "paused"},
        {"revision": "1"},
        {"revision": True},
        {"goal": [1]},
        {"summary": {"goal": "x"}},
    ],
)
def test_stored_capsule_reader_is_strict(change: dict[str, Any]) -> None:
    stored = {**capsule_to_json(build_capsule(planned().state)), **change}
    with pytest.raises(PayloadError):
        capsule_from_json(stored)


def test_missing_or_extra_keys_are_refused() -> None:
    stored = capsule_to_json(build_capsule(planned().state))
    with pytest.raises(PayloadError):
        capsule_from_json({k: v for k, v in stored.items() if k != "realign"})
    with pytest.raises(PayloadError):
        capsule_from_json({**stored, "note": "x"})
    assert set(stored) == {*CAPSULE_FIELDS, "hash"}


def test_a_goal_that_is_not_json_is_the_callers_fault() -> None:
    with pytest.raises(PayloadError, match="goal"):
        build_capsule(SessionState(), {"bad": object()})  # type: ignore[dict-item]


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
def test_a_goal_holding_nan_or_an_infinity_is_refused_in_words_of_its_own(number: float) -> None:
    # json's own wording of this refusal differs between Python versions; planfold's does not
    why = "it holds a number JSON cannot carry (NaN or an infinity)"
    with pytest.raises(PayloadError) as built:
        build_capsule(SessionState(), {"objective": number})
    assert built.value.message == f"the goal summary is not JSON: {why}"
    stored = {**capsule_to_json(build_capsule(planned().state, GOAL)), "goal": {"objective": number}}
    with pytest.raises(PayloadError) as read:
        capsule_from_json(stored)
    assert read.value.message == f"capsule 'goal' is not plain JSON: {why}"


def test_a_stored_goal_holding_a_value_json_cannot_write_is_refused_with_its_type() -> None:
    stored = {**capsule_to_json(build_capsule(planned().state, GOAL)), "goal": {"objective": {1, 2}}}
    with pytest.raises(PayloadError) as read:
        capsule_from_json(stored)
    assert read.value.message == "capsule 'goal' is not plain JSON: Object of type set is not JSON serializable"


def test_render_names_plan_summary_and_goal() -> None:
    text = render_capsule(build_capsule(planned().state, GOAL))
    assert "Plan p1, revision 1, draft." in text
    assert "Goal of the plan: Add an export command" in text
    assert "ship the exporter" in text


def test_a_capsule_renders_every_part() -> None:
    summary = SummaryView("Fix it", ("Read", "Change"), ("No API change", "Keep tests"), ("make test", "make lint"), ())
    capsule = StateCapsule(
        "build", "build_execute", "p1", 2, "executing", "abc", "scope moved", summary, '{"a":1}', "f" * 64
    )
    assert render_capsule(capsule) == (
        "Session state (capsule ffffffffffff): mode build, phase build_execute.\n"
        "Plan p1, revision 2, executing.\n"
        "Realignment needed: scope moved\n"
        "Goal of the plan: Fix it\n"
        "Key steps: Read; Change\n"
        "Constraints: No API change; Keep tests\n"
        "Verify: make test; make lint\n"
        "Active todos: none\n"
        'Goal: {"a":1}\n'
    )


def test_a_capsule_keeps_the_realignment_note_and_its_hash_covers_it() -> None:
    assert REALIGNED.plan.realign == "an edit left the scope"
    capsule = build_capsule(REALIGNED)
    assert capsule.realign == "an edit left the scope"
    stored = capsule_to_json(capsule)
    assert capsule_from_json(stored) == capsule
    with pytest.raises(PayloadError, match="hash does not match"):
        capsule_from_json({**stored, "realign": "nothing to see"})


def test_a_capsule_with_non_ascii_goal_text_round_trips() -> None:
    capsule = build_capsule(SessionState(), {"objective": "café ☕", "rounds": 2})
    assert capsule.goal == {"objective": "café ☕", "rounds": 2}
    assert capsule_from_json(capsule_to_json(capsule)) == capsule


def test_a_capsule_matches_only_with_the_goal_it_was_built_with() -> None:
    goal: dict[str, JSON] = {"objective": "ship it"}
    capsule = build_capsule(REALIGNED, goal)
    assert capsule_matches(capsule, REALIGNED, goal)
    assert not capsule_matches(capsule, REALIGNED)
    assert not capsule_matches(build_capsule(REALIGNED), REALIGNED, goal)
