"""Plans as values: ``PlanSpec``, its checks and its content hash.

Theory of operation
-------------------
``PlanSpec`` is the single source of truth of a plan. Everything else is a
projection of it (``kernel.plan.views``: the summary and the full markdown)
or a fingerprint of it: ``spec_hash`` is the content hash an approval is bound
to. Nothing is ever extracted back from a view.

``validate_plan_spec`` is the minimal check a plan must pass before it is
recorded at all: a goal, at least one step, one verify item and one todo,
unique non-blank todo ids, and no blocking open question (a plan that still
has a question blocking its writes is not a finished plan: the model asks the
question instead, so no draft and no execution ever carries one). It reports
every problem at once.

``validate_summary_candidate`` is the light structural check of a model's
summary candidate: the five fields are present with the right types, goal,
key_steps and verify are not empty, and every active todo id names a todo of
the spec. Nothing is judged semantically.

Todo progress is not content: a todo's status changes while a plan executes,
but the plan's substance (and so its hash and revision) does not.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ..errors import PlanError, Problem

__all__ = [
    "ACTIVE_TODO_STATUSES",
    "SUMMARY_FIELDS",
    "TODO_STATUSES",
    "OpenQuestion",
    "PlanScope",
    "PlanSpec",
    "PlanSpecError",
    "SpecProblem",
    "SummarySource",
    "SummaryView",
    "Todo",
    "TodoStatus",
    "active_todo_ids",
    "require_valid_spec",
    "spec_hash",
    "validate_plan_spec",
    "validate_summary_candidate",
]

TodoStatus = Literal["pending", "in_progress", "done", "dropped"]
TODO_STATUSES: tuple[TodoStatus, ...] = typing.get_args(TodoStatus)
#: Todos the summary refers to: the work that is still ahead.
ACTIVE_TODO_STATUSES: frozenset[TodoStatus] = frozenset({"pending", "in_progress"})

SummarySource = Literal["model", "runtime"]
SUMMARY_FIELDS: tuple[str, ...] = ("goal", "key_steps", "constraints", "verify", "active_todo_ids")


@dataclass(frozen=True, slots=True)
class Todo:
    """One execution action with a stable ``id`` that summaries refer to."""

    id: str
    text: str
    status: TodoStatus = "pending"


@dataclass(frozen=True, slots=True)
class OpenQuestion:
    """A question the plan leaves open; ``blocking`` when it blocks writes."""

    text: str
    blocking: bool = False


@dataclass(frozen=True, slots=True)
class PlanScope:
    """Where execution may act: path patterns and effect names."""

    paths: tuple[str, ...] = ()
    effects: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PlanSpec:
    """The plan itself, the only truth every view derives from."""

    goal: str
    steps: tuple[str, ...]
    constraints: tuple[str, ...]
    verify: tuple[str, ...]
    todos: tuple[Todo, ...]
    open_questions: tuple[OpenQuestion, ...] = ()
    scope: PlanScope | None = None


@dataclass(frozen=True, slots=True)
class SummaryView:
    """The default plan context of ordinary requests, derived from a spec."""

    goal: str
    key_steps: tuple[str, ...]
    constraints: tuple[str, ...]
    verify: tuple[str, ...]
    active_todo_ids: tuple[str, ...]


#: One thing wrong with a spec, a summary or a tool's arguments: the typed
#: reader's ``Problem`` (a kebab-case ``code``, where, e.g. ``todos[2].id``,
#: and a sentence).
SpecProblem = Problem


class PlanSpecError(PlanError):
    """A plan the model produced is not a valid plan (the model's fault).
    ``problems`` lists every problem found, not only the first."""

    code = "invalid-plan-spec"

    def __init__(self, problems: Sequence[SpecProblem]) -> None:
        listed = "; ".join(f"{p.where}: {p.message}" for p in problems)
        super().__init__(f"the plan is not a valid PlanSpec: {listed}")
        self.problems = tuple(problems)


# --------------------------------------------------------------------------
# Validation


def _blank(text: str) -> bool:
    return not text.strip()


def _list_problems(name: str, items: Sequence[str], *, required: bool) -> list[SpecProblem]:
    out: list[SpecProblem] = []
    if required and not items:
        out.append(SpecProblem(f"no-{name.replace('_', '-')}", name, f"{name} must not be empty"))
    out.extend(
        SpecProblem("blank-item", f"{name}[{i}]", "must not be blank") for i, item in enumerate(items) if _blank(item)
    )
    return out


def validate_plan_spec(spec: PlanSpec) -> tuple[SpecProblem, ...]:
    """Every problem that keeps ``spec`` from being a recordable plan; empty
    when it is valid. Never raises."""
    problems: list[SpecProblem] = []
    if _blank(spec.goal):
        problems.append(SpecProblem("empty-goal", "goal", "goal must not be empty"))
    problems += _list_problems("steps", spec.steps, required=True)
    problems += _list_problems("constraints", spec.constraints, required=False)
    problems += _list_problems("verify", spec.verify, required=True)
    if not spec.todos:
        problems.append(SpecProblem("no-todos", "todos", "at least one todo is required"))
    seen: set[str] = set()
    for i, todo in enumerate(spec.todos):
        if _blank(todo.id):
            problems.append(SpecProblem("blank-todo-id", f"todos[{i}].id", "must not be blank"))
        elif todo.id in seen:
            problems.append(SpecProblem("duplicate-todo-id", f"todos[{i}].id", f"todo id {todo.id!r} repeats"))
        seen.add(todo.id)
        if _blank(todo.text):
            problems.append(SpecProblem("blank-item", f"todos[{i}].text", "must not be blank"))
        if todo.status not in TODO_STATUSES:
            problems.append(SpecProblem("unknown-todo-status", f"todos[{i}].status", f"{todo.status!r}"))
    for i, question in enumerate(spec.open_questions):
        if _blank(question.text):
            problems.append(SpecProblem("blank-item", f"open_questions[{i}]", "must not be blank"))
        if question.blocking:
            problems.append(
                SpecProblem(
                    "blocking-question",
                    f"open_questions[{i}]",
                    f"blocking question must be answered first: {question.text!r}",
                )
            )
    if spec.scope is not None:
        problems += _list_problems("scope.paths", spec.scope.paths, required=False)
        problems += _list_problems("scope.effects", spec.scope.effects, required=False)
    return tuple(problems)


def require_valid_spec(spec: PlanSpec) -> PlanSpec:
    """Return ``spec``; raise ``PlanSpecError`` listing every problem."""
    problems = validate_plan_spec(spec)
    if problems:
        raise PlanSpecError(problems)
    return spec


def _candidate_list(candidate: Mapping[object, object], key: str) -> tuple[list[str], str | None]:
    value = candidate[key]
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        return [], "must be a list of strings"
    if not all(isinstance(item, str) for item in value):
        return [], "must contain only strings"
    return [str(item) for item in value], None


def validate_summary_candidate(candidate: object, spec: PlanSpec) -> tuple[SpecProblem, ...]:
    """The light structural check of a model's summary candidate against
    ``spec``; empty when the candidate may be adopted. Never raises.

    Fails on: not an object, a missing or unexpected field, a wrong type, an
    empty goal, key_steps or verify, a blank item, or an active todo id that
    is not a todo of ``spec``. Nothing is judged semantically.
    """
    if not isinstance(candidate, Mapping):
        return (SpecProblem("not-an-object", "summary_candidate", "must be an object"),)
    problems = [
        SpecProblem("missing-field", key, "required field is missing") for key in SUMMARY_FIELDS if key not in candidate
    ]
    problems.extend(
        SpecProblem("unexpected-field", str(key), "is not a summary field")
        for key in candidate
        if key not in SUMMARY_FIELDS
    )
    if "goal" in candidate:
        goal = candidate["goal"]
        if not isinstance(goal, str):
            problems.append(SpecProblem("wrong-type", "goal", "must be a string"))
        elif _blank(goal):
            problems.append(SpecProblem("empty-field", "goal", "must not be empty"))
    for key in SUMMARY_FIELDS[1:]:
        if key not in candidate:
            continue
        items, type_problem = _candidate_list(candidate, key)
        if type_problem is not None:
            problems.append(SpecProblem("wrong-type", key, type_problem))
            continue
        if key in ("key_steps", "verify") and not items:
            problems.append(SpecProblem("empty-field", key, "must not be empty"))
        problems.extend(
            SpecProblem("blank-item", f"{key}[{i}]", "must not be blank")
            for i, item in enumerate(items)
            if _blank(item)
        )
        if key == "active_todo_ids":
            known = {todo.id for todo in spec.todos}
            problems.extend(
                SpecProblem("unknown-todo-id", f"{key}[{i}]", f"no todo {item!r} in the plan")
                for i, item in enumerate(items)
                if item not in known
            )
            if len(set(items)) != len(items):
                problems.append(SpecProblem("duplicate-todo-id", key, "a todo id repeats"))
    return tuple(problems)


def active_todo_ids(spec: PlanSpec) -> tuple[str, ...]:
    """The ids of the todos still ahead, in plan order."""
    return tuple(todo.id for todo in spec.todos if todo.status in ACTIVE_TODO_STATUSES)


# --------------------------------------------------------------------------
# The content hash


def spec_hash(spec: PlanSpec) -> str:
    """The content hash an approval is bound to: sha256 (hex) of the canonical
    JSON of ``spec`` with todo statuses set aside (progress is not content)."""
    body = {
        "goal": spec.goal,
        "steps": list(spec.steps),
        "constraints": list(spec.constraints),
        "verify": list(spec.verify),
        "todos": [{"id": t.id, "text": t.text} for t in spec.todos],
        "open_questions": [{"text": q.text, "blocking": q.blocking} for q in spec.open_questions],
        "scope": None if spec.scope is None else {"paths": list(spec.scope.paths), "effects": list(spec.scope.effects)},
    }
    import hashlib  # noqa: PLC0415 (imported when a plan is first hashed, not with the kernel)
    import json  # noqa: PLC0415 (the same)

    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()
