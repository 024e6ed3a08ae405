"""PlanSpec checks (every problem with its code, place and message), summary
candidates and their adoption, the views, the content hash, the stored form
and the exit_plan_mode decoder."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planfold.kernel.errors import PayloadError, is_kebab_case
from planfold.kernel.plan.review import start_review
from planfold.kernel.plan.spec import (
    TODO_STATUSES,
    OpenQuestion,
    PlanScope,
    PlanSpec,
    PlanSpecError,
    SpecProblem,
    SummaryView,
    Todo,
    TodoStatus,
    active_todo_ids,
    require_valid_spec,
    spec_hash,
    validate_plan_spec,
    validate_summary_candidate,
)
from planfold.kernel.plan.spec_json import (
    decode_exit_plan_args,
    spec_from_json,
    spec_to_json,
    summary_from_json,
    summary_to_json,
)
from planfold.kernel.plan.views import (
    adopt_summary,
    build_summary_view,
    refresh_summary,
    render_plan_content,
    summary_derives_from,
)
from tests.plan_helpers import GOOD_CANDIDATE, spec, valid_candidates, valid_specs

# --------------------------------------------------------------------------
# validate_plan_spec


@given(valid_specs())
def test_generated_specs_are_valid(s: PlanSpec) -> None:
    assert validate_plan_spec(s) == ()
    assert require_valid_spec(s) is s


def test_every_problem_is_reported_at_once() -> None:
    bad = PlanSpec(
        goal="  ",
        steps=(),
        constraints=(" ",),
        verify=(),
        todos=(),
        open_questions=(OpenQuestion("which db?", blocking=True),),
    )
    codes = [p.code for p in validate_plan_spec(bad)]
    assert codes == [
        "empty-goal",
        "no-steps",
        "blank-item",
        "no-verify",
        "no-todos",
        "blocking-question",
    ]
    with pytest.raises(PlanSpecError) as info:
        require_valid_spec(bad)
    assert info.value.code == "invalid-plan-spec"
    assert len(info.value.problems) == 6
    assert "which db?" in str(info.value)


def test_todo_ids_must_be_unique_and_non_blank() -> None:
    bad = spec(todos_=(Todo("a", "x"), Todo("a", "y"), Todo(" ", "z"), Todo("b", "")))
    problems = validate_plan_spec(bad)
    assert [(p.code, p.where) for p in problems] == [
        ("duplicate-todo-id", "todos[1].id"),
        ("blank-todo-id", "todos[2].id"),
        ("blank-item", "todos[3].text"),
    ]


def test_non_blocking_questions_are_fine_and_blocking_ones_are_not() -> None:
    assert validate_plan_spec(spec(open_questions=(OpenQuestion("naming?"),))) == ()
    problems = validate_plan_spec(spec(open_questions=(OpenQuestion("schema?", True),)))
    assert [p.code for p in problems] == ["blocking-question"]


@given(valid_specs(), st.sampled_from(["goal", "steps", "verify", "todos"]))
def test_emptying_a_required_part_is_always_caught(s: PlanSpec, part: str) -> None:
    fields: dict[str, Any] = {part: "" if part == "goal" else ()}
    emptied = replace(s, **fields)
    problems = validate_plan_spec(emptied)
    assert len(problems) == 1 and problems[0].where == part and is_kebab_case(problems[0].code)


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
# Summary candidates


@given(st.data())
def test_valid_candidates_pass_and_are_adopted(data: st.DataObject) -> None:
    s = data.draw(valid_specs())
    candidate = data.draw(valid_candidates(s))
    assert validate_summary_candidate(candidate, s) == ()
    adoption = adopt_summary(candidate, s)
    assert adoption.source == "model" and adoption.rejected == () and adoption.reason is None
    assert adoption.summary.goal == candidate["goal"].strip()
    assert adoption.summary.active_todo_ids == tuple(candidate["active_todo_ids"])


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"goal": 3}, "wrong-type"),
        ({"key_steps": "one step"}, "wrong-type"),
        ({"verify": ["ok", 2]}, "wrong-type"),
        ({"key_steps": ["a", "  "]}, "blank-item"),
        ({"active_todo_ids": ["t1", "t1"]}, "duplicate-todo-id"),
        ({"extra": 1}, "unexpected-field"),
    ],
)
def test_candidate_shape_problems(change: dict[str, Any], code: str) -> None:
    candidate = {**GOOD_CANDIDATE, **change}
    assert [p.code for p in validate_summary_candidate(candidate, spec())] == [code]


def test_a_non_object_candidate_is_rejected_with_a_reason() -> None:
    adoption = adopt_summary(["goal"], spec())
    assert adoption.source == "runtime"
    assert [p.code for p in adoption.rejected] == ["not-an-object"]


def test_no_candidate_means_the_runtime_summary_and_says_so() -> None:
    adoption = adopt_summary(None, spec())
    assert adoption.summary == build_summary_view(spec())
    assert adoption.source == "runtime"
    assert adoption.reason == "summary_candidate: the model sent none"


def candidate(**change: Any) -> dict[str, Any]:
    return {**GOOD_CANDIDATE, **change}


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
# Views


@given(valid_specs())
def test_runtime_summary_is_deterministic_and_derives_from_the_spec(s: PlanSpec) -> None:
    summary = build_summary_view(s)
    assert summary == build_summary_view(s)
    assert summary_derives_from(summary, s)
    assert summary.active_todo_ids == active_todo_ids(s)
    assert set(summary.active_todo_ids) <= {t.id for t in s.todos}


@given(valid_specs())
def test_full_view_starts_with_a_heading_and_shows_every_part(s: PlanSpec) -> None:
    text = render_plan_content(s)
    assert text.startswith("# ")
    for part in (*s.steps, *s.constraints, *s.verify):
        assert part.strip() in text
    for todo in s.todos:
        assert f"`{todo.id}`" in text


@given(valid_specs())
def test_full_view_is_accepted_by_the_exit_plan_mode_review(s: PlanSpec) -> None:
    assert start_review(True, True, render_plan_content(s)).plan == render_plan_content(s)


def test_the_full_view_of_a_plan_without_a_goal_says_so() -> None:
    text = render_plan_content(PlanSpec(goal="  ", steps=("one",), constraints=(), verify=("v",), todos=()))
    assert text.startswith("# Plan: (no goal)\n\n## Goal\n\n(none)\n\n## Steps\n\n1. one\n")


def test_the_full_view_marks_blocking_open_questions() -> None:
    questions = (OpenQuestion("which format?", blocking=True), OpenQuestion(" later? "))
    text = render_plan_content(spec(open_questions=questions))
    assert "\n## Open questions\n\n- (blocking) which format?\n- later?\n" in text


def test_summary_from_another_spec_does_not_derive_from_this_one() -> None:
    other = build_summary_view(spec(todos_=(Todo("zz", "other"),)))
    assert not summary_derives_from(other, spec())


def test_refresh_only_changes_the_todo_references() -> None:
    s = spec()
    model_summary = SummaryView("short", ("a",), (), ("v",), ("t2",))
    done = replace(s, todos=(replace(s.todos[0], status="done"), s.todos[1]))
    refreshed = refresh_summary(model_summary, done)
    assert refreshed == replace(model_summary, active_todo_ids=("t2",))
    assert refreshed is model_summary  # the active set did not change
    all_done = replace(done, todos=tuple(replace(t, status="done") for t in done.todos))
    assert refresh_summary(model_summary, all_done).active_todo_ids == ()


# --------------------------------------------------------------------------
# The content hash


@given(valid_specs(), st.data())
def test_hash_ignores_todo_progress_but_nothing_else(s: PlanSpec, data: st.DataObject) -> None:
    status = data.draw(st.sampled_from(TODO_STATUSES))
    progressed = replace(s, todos=tuple(replace(t, status=status) for t in s.todos))
    assert spec_hash(progressed) == spec_hash(s)
    assert len(spec_hash(s)) == 64
    assert spec_hash(replace(s, goal=s.goal + "!")) != spec_hash(s)
    assert spec_hash(replace(s, steps=(*s.steps, "more"))) != spec_hash(s)
    assert spec_hash(replace(s, verify=(*s.verify[:-1], "re-" + s.verify[-1]))) != spec_hash(s)
    # The strategies never draw this scope, so it always differs.
    assert spec_hash(replace(s, scope=PlanScope(("only/",), ("net",)))) != spec_hash(s)
    renamed = replace(s, todos=(replace(s.todos[0], text=s.todos[0].text + "+"), *s.todos[1:]))
    assert spec_hash(renamed) != spec_hash(s)


# --------------------------------------------------------------------------
# Strict stored form


@given(valid_specs())
def test_spec_json_round_trips(s: PlanSpec) -> None:
    assert spec_from_json(spec_to_json(s)) == s


@given(valid_specs())
def test_summary_json_round_trips(s: PlanSpec) -> None:
    summary = build_summary_view(s)
    assert summary_from_json(summary_to_json(summary)) == summary


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.pop("scope"),
        lambda d: d.update(extra=1),
        lambda d: d.update(steps="one"),
        lambda d: d.update(todos=[{"id": "t1", "text": "x"}]),
        lambda d: d.update(todos=[{"id": "t1", "text": "x", "status": "later"}]),
        lambda d: d.update(open_questions=[{"text": "q", "blocking": 1}]),
        lambda d: d.update(scope={"paths": []}),
    ],
)
def test_stored_spec_reader_is_strict(mutate: Any) -> None:
    payload: dict[str, Any] = dict(spec_to_json(spec()))
    mutate(payload)
    with pytest.raises(PayloadError):
        spec_from_json(payload)


def test_a_stored_open_question_that_is_not_an_object_is_named_in_the_error() -> None:
    payload = {**spec_to_json(spec()), "open_questions": [5]}
    with pytest.raises(PayloadError) as info:
        spec_from_json(payload)
    assert info.value.message == "spec.open_questions[0]: must be an object"


def test_a_stored_scope_without_effects_is_named_in_the_error() -> None:
    payload = {**spec_to_json(spec()), "scope": {"paths": []}}
    with pytest.raises(PayloadError) as info:
        spec_from_json(payload)
    assert info.value.message == "spec.scope.effects: required field is missing"


def test_a_stored_summary_with_a_missing_field_is_named_in_the_error() -> None:
    payload = dict(summary_to_json(build_summary_view(spec())))
    del payload["verify"]
    with pytest.raises(PayloadError) as info:
        summary_from_json(payload)
    assert info.value.message == "summary.verify: required field is missing"


# --------------------------------------------------------------------------
# The exit_plan_mode decoder


def test_decoder_is_lenient_where_a_model_reasonably_is() -> None:
    args = decode_exit_plan_args(
        {
            "plan_spec": {
                "goal": "g",
                "steps": ["s"],
                "verify": ["v"],
                "todos": [{"id": "t1", "text": "do"}],
                "open_questions": ["naming?"],
            }
        }
    )
    assert args.spec == PlanSpec("g", ("s",), (), ("v",), (Todo("t1", "do"),), (OpenQuestion("naming?"),))
    assert args.summary_candidate is None


def test_decoder_reports_shape_and_content_problems_together() -> None:
    with pytest.raises(PlanSpecError) as info:
        decode_exit_plan_args(
            {
                "plan_spec": {
                    "goal": " ",
                    "steps": "do it",
                    "todos": [{"id": "a", "text": "x", "status": "soon"}, "b"],
                    "open_questions": [{"text": "db?", "blocking": True}],
                    "scope": {"paths": [1]},
                    "colour": "red",
                },
                "summary": {},
            }
        )
    found = {(p.code, p.where) for p in info.value.problems}
    assert found == {
        ("unexpected-field", "arguments.summary"),
        ("missing-field", "arguments.plan_spec.verify"),
        ("unexpected-field", "arguments.plan_spec.colour"),
        ("wrong-type", "arguments.plan_spec.steps"),
        ("unknown-todo-status", "arguments.plan_spec.todos[0].status"),
        ("wrong-type", "arguments.plan_spec.todos[1]"),
        ("wrong-type", "arguments.plan_spec.scope.paths[0]"),
        ("empty-goal", "arguments.plan_spec.goal"),
        ("blocking-question", "arguments.plan_spec.open_questions[0]"),
    }
    assert all(is_kebab_case(code) for code, _ in found)


@pytest.mark.parametrize("args", [None, [], "plan", {}, {"plan_spec": "text"}])
def test_decoder_refuses_arguments_without_a_plan_object(args: object) -> None:
    with pytest.raises(PlanSpecError) as info:
        decode_exit_plan_args(args)
    assert info.value.problems


@given(valid_specs())
def test_decoder_accepts_the_stored_form_of_any_valid_spec(s: PlanSpec) -> None:
    assert decode_exit_plan_args({"plan_spec": spec_to_json(s)}).spec == s


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
        SpecProblem("wrong-type", "arguments.plan_spec.todos[0]", "must be an object"),
        SpecProblem(
            "unknown-todo-status",
            "arguments.plan_spec.todos[1].status",
            "must be one of ['pending', 'in_progress', 'done', 'dropped'], got 'soon'",
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
        SpecProblem("wrong-type", "arguments.plan_spec.todos[0]", "must be an object"),
        SpecProblem("wrong-type", "arguments.plan_spec.open_questions[0]", "must be a string or an object"),
        SpecProblem("blank-item", "arguments.plan_spec.todos[1].text", "must not be blank"),
        SpecProblem(
            "blocking-question",
            "arguments.plan_spec.open_questions[1]",
            "blocking question must be answered first: 'db?'",
        ),
    )


def test_a_repeated_todo_id_is_reported_where_it_repeats_past_an_item_that_is_not_an_object() -> None:
    assert decoder_problems([{"id": "a", "text": "x"}, [], {"id": "a", "text": "y"}]) == (
        SpecProblem("wrong-type", "arguments.plan_spec.todos[1]", "must be an object"),
        SpecProblem("duplicate-todo-id", "arguments.plan_spec.todos[2].id", "todo id 'a' repeats"),
    )


def test_items_that_are_not_objects_are_reported_once_each_and_nothing_is_made_up_for_them() -> None:
    assert decoder_problems([5, None], [1.5]) == (
        SpecProblem("wrong-type", "arguments.plan_spec.todos[0]", "must be an object"),
        SpecProblem("wrong-type", "arguments.plan_spec.todos[1]", "must be an object"),
        SpecProblem("wrong-type", "arguments.plan_spec.open_questions[0]", "must be a string or an object"),
    )
