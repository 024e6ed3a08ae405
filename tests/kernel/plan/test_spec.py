"""PlanSpec checks, summary adoption, views, content hash and wire forms."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

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
    SummaryView,
    Todo,
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
        ("missing-field", "plan_spec.verify"),
        ("unexpected-field", "plan_spec.colour"),
        ("wrong-type", "plan_spec.steps"),
        ("unknown-todo-status", "plan_spec.todos[0].status"),
        ("wrong-type", "plan_spec.todos[1]"),
        ("wrong-type", "plan_spec.scope.paths[0]"),
        ("empty-goal", "plan_spec.goal"),
        ("blocking-question", "plan_spec.open_questions[0]"),
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
