"""Plans on the wire: the stored form of a spec and a summary, and the
arguments of the model's ``exit_plan_mode`` and ``bootstrap_plan``.

Theory of operation
-------------------
Two directions, two temperaments, one reader (``kernel.payload``).

Stored payloads (``plan/artifact`` events) are written by planfold itself, so
they are read strictly as ``PlanSpec`` and ``SummaryView`` themselves:
``spec_from_json`` and ``summary_from_json`` demand the exact key set and
types that ``spec_to_json`` and ``summary_to_json`` write, and raise
``PayloadError`` listing every deviation (a fold turns that into a positioned
``ReplayError``). A round trip is the identity.

Model output is written by a model, so its types say where a model may be
lenient (``PlanArgs``): ``constraints``, ``open_questions`` and ``scope`` may
be left out, a todo without ``status`` is pending, and an open question may
be a plain string (not blocking). ``decode_exit_plan_args`` reads the
arguments as ``PlanArgs`` and raises one ``PlanSpecError`` listing every
shape problem and every ``validate_plan_spec`` problem of what could be read,
which the runtime hands back to the model as corrective feedback. The
``summary_candidate`` is not judged here: it is returned as sent and adopted
or rejected by ``adopt_summary``. The same types give the JSON Schema the
model is offered for these tools.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated

from ..payload import JSON, OMISSIBLE, Code, Opaque, object_of, read_as, read_problems
from .spec import (
    OpenQuestion,
    PlanScope,
    PlanSpec,
    PlanSpecError,
    SpecProblem,
    SummaryView,
    Todo,
    TodoStatus,
    validate_plan_spec,
)

__all__ = [
    "ExitPlanArgs",
    "PlanArgs",
    "PlanSpecArgs",
    "QuestionArgs",
    "ScopeArgs",
    "TodoArgs",
    "decode_exit_plan_args",
    "spec_from_json",
    "spec_to_json",
    "summary_from_json",
    "summary_to_json",
]


# --------------------------------------------------------------------------
# Strict stored form


def spec_to_json(spec: PlanSpec) -> dict[str, JSON]:
    """The stored form of ``spec`` (every key always present)."""
    return object_of(spec)


def spec_from_json(payload: object) -> PlanSpec:
    """Read a stored spec strictly; raise ``PayloadError`` on any deviation."""
    spec: PlanSpec = read_as(PlanSpec, payload, "spec")
    return spec


def summary_to_json(summary: SummaryView) -> dict[str, JSON]:
    """The stored form of a summary (the same shape as a summary candidate)."""
    return object_of(summary)


def summary_from_json(payload: object) -> SummaryView:
    """Read a stored summary strictly; raise ``PayloadError`` on any deviation."""
    summary: SummaryView = read_as(SummaryView, payload, "summary")
    return summary


# --------------------------------------------------------------------------
# Model output: report everything at once


@dataclass(frozen=True, slots=True)
class TodoArgs:
    """A todo as the model gives it: without ``status`` it is pending."""

    id: str
    text: str
    status: Annotated[TodoStatus, Code("unknown-todo-status"), OMISSIBLE] = "pending"


@dataclass(frozen=True, slots=True)
class QuestionArgs:
    """An open question as an object: ``blocking`` when it blocks writes."""

    text: str
    blocking: Annotated[bool, OMISSIBLE] = False


@dataclass(frozen=True, slots=True)
class ScopeArgs:
    """Where execution may act: workspace paths and effect kinds (``write``,
    ``shell``)."""

    paths: Annotated[tuple[str, ...], OMISSIBLE] = ()
    effects: Annotated[tuple[str, ...], OMISSIBLE] = ()


@dataclass(frozen=True, slots=True)
class PlanSpecArgs:
    """The plan as the model gives it: a goal, steps, verify items and
    todos, none of them empty and no item blank, todo ids unique; open
    questions (a plain string does not block; a plan with a blocking
    question is not finished: ask it instead); where execution may act."""

    goal: str
    steps: tuple[str, ...]
    verify: tuple[str, ...]
    todos: tuple[TodoArgs, ...]
    constraints: Annotated[tuple[str, ...], OMISSIBLE] = ()
    open_questions: Annotated[tuple[str | QuestionArgs, ...], OMISSIBLE] = ()
    scope: Annotated[ScopeArgs | None, OMISSIBLE] = None

    def spec(self) -> PlanSpec:
        """The ``PlanSpec`` these arguments give."""
        questions = tuple(
            OpenQuestion(q) if isinstance(q, str) else OpenQuestion(q.text, q.blocking) for q in self.open_questions
        )
        return PlanSpec(
            goal=self.goal,
            steps=self.steps,
            constraints=self.constraints,
            verify=self.verify,
            todos=tuple(Todo(t.id, t.text, t.status) for t in self.todos),
            open_questions=questions,
            scope=None if self.scope is None else PlanScope(self.scope.paths, self.scope.effects),
        )


def _any(value: object) -> bool:
    return True


def _same(value: object) -> object:
    return value


@dataclass(frozen=True, slots=True)
class PlanArgs:
    """The arguments of ``exit_plan_mode`` and ``bootstrap_plan``: the plan,
    and the model's proposal for its summary (taken as sent: it is adopted
    only when it is a valid summary of the plan)."""

    plan_spec: PlanSpecArgs
    summary_candidate: Annotated[object, Opaque(_any, _same, like=SummaryView), OMISSIBLE] = None


@dataclass(frozen=True, slots=True)
class ExitPlanArgs:
    """The decoded arguments of ``exit_plan_mode``: a valid spec and the
    summary candidate exactly as the model sent it (``None`` when absent)."""

    spec: PlanSpec
    summary_candidate: JSON


def decode_exit_plan_args(args: object) -> ExitPlanArgs:
    """Decode ``exit_plan_mode(plan_spec, summary_candidate)`` arguments.

    Raises ``PlanSpecError`` listing every shape problem and every
    ``validate_plan_spec`` problem at once (the model's fault).
    """
    read, problems = read_problems(PlanArgs, args, "arguments")
    decoded: PlanArgs = read
    if problems and not (isinstance(args, Mapping) and isinstance(args.get("plan_spec"), Mapping)):
        raise PlanSpecError(problems)
    spec = decoded.plan_spec.spec()
    # Shape problems already name the missing fields and the items that are
    # not objects; skip the semantic duplicates of them ("steps must not be
    # empty" after "steps is missing", the blank id of a todo that is a number).
    where = "arguments.plan_spec"
    shaped = {p.where.removeprefix(f"{where}.") for p in problems}
    semantic = [
        p for p in validate_plan_spec(spec) if p.where not in shaped and p.where.partition(".")[0] not in shaped
    ]
    problems += tuple(SpecProblem(p.code, f"{where}.{p.where}", p.message) for p in semantic)
    if problems:
        raise PlanSpecError(problems)
    candidate: JSON = decoded.summary_candidate  # type: ignore[assignment]
    return ExitPlanArgs(spec, candidate)
