"""Tests that pin what mutation testing found unpinned in plans: the exact
problems (code, where, message) the spec and summary checks report, the
rules and details of the plan replay checks, the messages of the strict
stored-form readers, and the refusals of the plan/artifact payload writer and
reader."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

import pytest

from planfold.kernel.errors import PayloadError, ReplayError
from planfold.kernel.log import PLAN_ARTIFACT, Event
from planfold.kernel.plan.artifact import PlanRef
from planfold.kernel.plan.events import approve_event, supersede_event, verify_event
from planfold.kernel.plan.payload import PlanAction, plan_action_payload, read_plan_action
from planfold.kernel.plan.spec import (
    PlanScope,
    PlanSpecError,
    SpecProblem,
    Todo,
    TodoStatus,
    require_valid_spec,
    validate_plan_spec,
    validate_summary_candidate,
)
from planfold.kernel.plan.spec_json import decode_exit_plan_args, spec_from_json, spec_to_json
from planfold.kernel.plan.status import apply_plan_event
from planfold.kernel.plan.views import build_summary_view
from tests.plan_helpers import GOOD_CANDIDATE, Session, drafted, executing, spec
from tests.plan_helpers import plan_content as content

# --------------------------------------------------------------------------
# validate_plan_spec: every problem names its place and says what is wrong


def test_an_unknown_todo_status_is_reported_at_the_todo_with_the_status_it_has() -> None:
    odd = spec(todos_=(Todo("t1", "flags"), Todo("t2", "exporter", cast(TodoStatus, "later"))))
    assert validate_plan_spec(odd) == (SpecProblem("unknown-todo-status", "todos[1].status", "'later'"),)


def test_a_blank_todo_text_is_reported_at_the_todo_text() -> None:
    blank = spec(todos_=(Todo("t1", " "),))
    assert validate_plan_spec(blank) == (SpecProblem("blank-item", "todos[0].text", "must not be blank"),)


def test_blank_items_of_steps_and_constraints_are_reported_at_their_index() -> None:
    blank = spec(steps=("parse flags", "  "), constraints=("", "no new dependencies"))
    assert validate_plan_spec(blank) == (
        SpecProblem("blank-item", "steps[1]", "must not be blank"),
        SpecProblem("blank-item", "constraints[0]", "must not be blank"),
    )


def test_blank_scope_paths_and_effects_are_reported_at_their_index() -> None:
    scoped = spec(scope=PlanScope(paths=("src/", " "), effects=("",)))
    assert validate_plan_spec(scoped) == (
        SpecProblem("blank-item", "scope.paths[1]", "must not be blank"),
        SpecProblem("blank-item", "scope.effects[0]", "must not be blank"),
    )


def test_empty_constraints_and_scope_lists_are_fine() -> None:
    assert validate_plan_spec(spec(constraints=(), scope=PlanScope())) == ()


def test_the_spec_error_message_lists_every_problem_with_its_place() -> None:
    bad = spec(steps=(" ",), scope=PlanScope(effects=(" ",)))
    with pytest.raises(PlanSpecError) as info:
        require_valid_spec(bad)
    assert str(info.value) == (
        "the plan is not a valid PlanSpec: steps[0]: must not be blank; scope.effects[0]: must not be blank"
    )


# --------------------------------------------------------------------------
# validate_summary_candidate: exact problems


def candidate(**change: Any) -> dict[str, Any]:
    out = dict(GOOD_CANDIDATE)
    out.update(change)
    return out


@pytest.mark.parametrize(
    ("goal", "problem"),
    [
        (5, SpecProblem("wrong-type", "goal", "must be a string")),
        (["g"], SpecProblem("wrong-type", "goal", "must be a string")),
        ("", SpecProblem("empty-field", "goal", "must not be empty")),
        (" \n", SpecProblem("empty-field", "goal", "must not be empty")),
    ],
)
def test_a_bad_summary_goal_is_reported_at_the_goal(goal: object, problem: SpecProblem) -> None:
    assert validate_summary_candidate(candidate(goal=goal), spec()) == (problem,)


@pytest.mark.parametrize("key", ["key_steps", "verify"])
def test_an_empty_required_summary_list_is_reported_at_its_field(key: str) -> None:
    assert validate_summary_candidate(candidate(**{key: []}), spec()) == (
        SpecProblem("empty-field", key, "must not be empty"),
    )


@pytest.mark.parametrize("key", ["key_steps", "constraints", "verify"])
def test_a_blank_summary_item_is_reported_at_its_index(key: str) -> None:
    assert validate_summary_candidate(candidate(**{key: ["fine", " "]}), spec()) == (
        SpecProblem("blank-item", f"{key}[1]", "must not be blank"),
    )


def test_a_missing_summary_field_does_not_stop_the_checks_of_the_later_fields() -> None:
    without = candidate(verify=[], active_todo_ids=["t9"])
    del without["constraints"]
    assert validate_summary_candidate(without, spec()) == (
        SpecProblem("missing-field", "constraints", "required field is missing"),
        SpecProblem("empty-field", "verify", "must not be empty"),
        SpecProblem("unknown-todo-id", "active_todo_ids[0]", "no todo 't9' in the plan"),
    )


# --------------------------------------------------------------------------
# The plan replay checks: rule, position and detail


def refusal(s: Session, payload: dict[str, Any]) -> tuple[int, str, str]:
    """(position, rule, detail) of the refusal of ``payload`` as the next event."""
    event = Event(s.state.last_seq + 1, PLAN_ARTIFACT, s.clock + 1, payload)
    with pytest.raises(ReplayError) as info:
        apply_plan_event(s.state.plan, event, s.state.plan_mode)
    assert info.value.position == event.seq
    return info.value.position, info.value.rule, info.value.detail


def test_a_reused_plan_id_is_named_in_the_refusal() -> None:
    s = drafted()
    s.add(supersede_event(s.state, s.at()))
    _, rule, detail = refusal(s, content())
    assert (rule, detail) == ("id-reused", "plan id 'p1' was used before")


def test_a_stale_revision_names_both_revisions() -> None:
    s = drafted()
    _, rule, detail = refusal(s, content(revision=1, the_spec=spec(goal="other"), action="rewrite"))
    assert (rule, detail) == ("stale-revision", "revision 1 is older than revision 2")


def test_an_invalid_spec_refusal_lists_every_problem_separated_by_semicolons() -> None:
    s = Session()
    s.mode(True)
    _, rule, detail = refusal(s, content(the_spec=spec(goal=" ", steps=())))
    assert (rule, detail) == ("invalid-spec", "goal: goal must not be empty; steps: steps must not be empty")


def test_an_adopted_model_summary_with_rejection_reasons_is_refused_with_the_reason() -> None:
    s = Session()
    s.mode(True)
    _, rule, detail = refusal(s, content(summary_source="model", summary_rejected=["too long"]))
    assert (rule, detail) == ("invalid-summary", "an adopted model summary has no rejection reasons")


def test_a_rewrite_that_changes_nothing_says_a_rewrite_must_change_the_substance() -> None:
    _, rule, detail = refusal(drafted(), content(revision=2, action="rewrite"))
    assert (rule, detail) == ("rewrite-without-change", "a rewrite must change the plan's substance")


def test_the_verify_phase_refusals_say_inside_or_outside() -> None:
    s = executing()
    _, rule, detail = refusal(s, {"action": "verify-fail", "plan_id": "p1", "revision": 1, "note": None})
    assert (rule, detail) == ("transition-not-allowed", "only allowed inside the verify phase")
    s.add(verify_event(s.state, s.at()))
    _, rule, detail = refusal(s, {"action": "verify", "plan_id": "p1", "revision": 1})
    assert (rule, detail) == ("transition-not-allowed", "only allowed outside the verify phase")


def test_an_approved_plan_whose_standing_approval_covers_another_version_does_not_start() -> None:
    s = drafted()
    assert s.state.plan.current is not None
    ref = s.state.plan.current.ref
    s.add(approve_event(s.state, ref, s.at()))
    s.mode(False)
    start: dict[str, Any] = {"action": "start", "plan_id": "p1", "revision": 1, "spec_hash": ref.spec_hash}
    seq = s.state.last_seq + 1
    event = Event(seq, PLAN_ARTIFACT, s.clock + 1, start)
    for approval in (None, PlanRef("p1", 1, "0" * 64), PlanRef("p0", 1, ref.spec_hash)):
        state = replace(s.state.plan, approval=approval)
        with pytest.raises(ReplayError) as info:
            apply_plan_event(state, event, False)
        assert (info.value.position, info.value.rule, info.value.detail) == (
            seq,
            "approval-mismatch",
            "the approval does not cover this exact version",
        )
    assert apply_plan_event(s.state.plan, event, False).status == "executing"


# --------------------------------------------------------------------------
# The strict stored form: messages name what is wrong


def test_an_unknown_todo_status_in_a_todo_action_names_the_allowed_ones() -> None:
    with pytest.raises(PayloadError) as info:
        read_plan_action({"action": "todo", "plan_id": "p1", "revision": 1, "todo_id": "t1", "status": "later"})
    assert info.value.message == "'status' must be one of ['pending', 'in_progress', 'done', 'dropped'], got 'later'"


def test_a_stored_open_question_that_is_not_an_object_is_named_in_the_error() -> None:
    payload = {**spec_to_json(spec()), "open_questions": [5]}
    with pytest.raises(PayloadError) as info:
        spec_from_json(payload)
    assert info.value.message == "open question must be an object, got int"


def test_a_stored_scope_without_effects_is_named_in_the_error() -> None:
    payload = {**spec_to_json(spec()), "scope": {"paths": []}}
    with pytest.raises(PayloadError) as info:
        spec_from_json(payload)
    assert info.value.message == "scope is missing key(s) ['effects']"


# --------------------------------------------------------------------------
# The exit_plan_mode decoder


def test_a_decoded_todo_with_an_unknown_status_is_reported_once_at_its_own_index() -> None:
    args = {
        "plan_spec": {
            "goal": "g",
            "steps": ["s"],
            "verify": ["v"],
            "todos": [5, {"id": "t1", "text": "do", "status": "soon"}],
        }
    }
    with pytest.raises(PlanSpecError) as info:
        decode_exit_plan_args(args)
    assert info.value.problems == (
        SpecProblem("wrong-type", "plan_spec.todos[0]", "must be an object"),
        SpecProblem(
            "unknown-todo-status",
            "plan_spec.todos[1].status",
            "must be one of ['pending', 'in_progress', 'done', 'dropped']",
        ),
    )


def decoder_problems(todos: list[Any], questions: list[Any] | None = None) -> tuple[SpecProblem, ...]:
    plan: dict[str, Any] = {"goal": "g", "steps": ["s"], "verify": ["v"], "todos": todos}
    if questions is not None:
        plan["open_questions"] = questions
    with pytest.raises(PlanSpecError) as info:
        decode_exit_plan_args({"plan_spec": plan})
    return info.value.problems


def test_problems_of_the_items_after_one_that_is_not_an_object_keep_their_index() -> None:
    assert decoder_problems([5, {"id": "t1", "text": " "}], [7, {"text": "db?", "blocking": True}]) == (
        SpecProblem("wrong-type", "plan_spec.todos[0]", "must be an object"),
        SpecProblem("wrong-type", "plan_spec.open_questions[0]", "must be an object"),
        SpecProblem("blank-item", "plan_spec.todos[1].text", "must not be blank"),
        SpecProblem(
            "blocking-question", "plan_spec.open_questions[1]", "blocking question must be answered first: 'db?'"
        ),
    )


def test_a_repeated_todo_id_is_reported_where_it_repeats_past_an_item_that_is_not_an_object() -> None:
    assert decoder_problems([{"id": "a", "text": "x"}, [], {"id": "a", "text": "y"}]) == (
        SpecProblem("wrong-type", "plan_spec.todos[1]", "must be an object"),
        SpecProblem("duplicate-todo-id", "plan_spec.todos[2].id", "todo id 'a' repeats"),
    )


def test_items_that_are_not_objects_are_reported_once_each_and_nothing_is_made_up_for_them() -> None:
    assert decoder_problems([5, None], [1.5]) == (
        SpecProblem("wrong-type", "plan_spec.todos[0]", "must be an object"),
        SpecProblem("wrong-type", "plan_spec.todos[1]", "must be an object"),
        SpecProblem("wrong-type", "plan_spec.open_questions[0]", "must be an object"),
    )


# --------------------------------------------------------------------------
# The plan/artifact payloads


SPEC = spec()
SUMMARY = build_summary_view(SPEC)


@pytest.mark.parametrize(
    "act",
    [
        PlanAction("draft", "p", 1, spec=None, summary=SUMMARY, summary_source="runtime"),
        PlanAction("draft", "p", 1, spec=SPEC, summary=None, summary_source="runtime"),
        PlanAction("rewrite", "p", 2, spec=SPEC, summary=SUMMARY, summary_source=None),
        PlanAction("bootstrap", "p", 1, spec=None, summary=None, summary_source="model"),
    ],
)
def test_a_content_action_missing_any_one_part_cannot_be_written(act: PlanAction) -> None:
    with pytest.raises(ValueError) as info:
        plan_action_payload(act)
    assert str(info.value) == f"a {act.action} action needs spec, summary and summary_source"


@pytest.mark.parametrize(
    "act",
    [
        PlanAction("todo", "p", 1, todo_id="t1", todo_status=None),
        PlanAction("todo", "p", 1, todo_id=None, todo_status="done"),
    ],
)
def test_a_todo_action_missing_its_id_or_status_cannot_be_written(act: PlanAction) -> None:
    with pytest.raises(ValueError) as info:
        plan_action_payload(act)
    assert str(info.value) == "a todo action needs todo_id and todo_status"


@pytest.mark.parametrize("blank", ["", "  "])
@pytest.mark.parametrize("action", ["approve", "reject", "start"])
def test_a_blank_spec_hash_is_malformed(action: str, blank: str) -> None:
    payload: dict[str, Any] = {"action": action, "plan_id": "p1", "revision": 1, "spec_hash": blank}
    if action == "reject":
        payload["note"] = None
    with pytest.raises(PayloadError) as info:
        read_plan_action(payload)
    assert info.value.message == "'spec_hash' must not be empty"


@pytest.mark.parametrize("blank", ["", "  "])
def test_a_blank_todo_id_is_malformed(blank: str) -> None:
    with pytest.raises(PayloadError) as info:
        read_plan_action({"action": "todo", "plan_id": "p1", "revision": 1, "todo_id": blank, "status": "done"})
    assert info.value.message == "'todo_id' must not be empty"
