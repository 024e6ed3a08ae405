"""Plans on the wire: strict JSON readers and writers, and the decoder of the
model's ``exit_plan_mode`` arguments.

Theory of operation
-------------------
Two directions, two temperaments.

Stored payloads (``plan/artifact`` events) are written by planfold itself, so
they are read strictly: ``spec_from_json`` and ``summary_from_json`` demand the
exact key set and types that ``spec_to_json`` and ``summary_to_json`` write,
and raise ``PayloadError`` at the first deviation (a fold turns that into a
positioned ``ReplayError``). A round trip is the identity.

Model output is written by a model, so ``decode_exit_plan_args`` collects
every problem it finds (shape problems first, then ``validate_plan_spec``'s)
and raises one ``PlanSpecError`` listing all of them, which the runtime hands
back to the model as corrective feedback. It is lenient where a model
reasonably is: ``constraints``, ``open_questions`` and ``scope`` may be left
out, a todo without ``status`` is pending, and an open question may be a plain
string (not blocking). The ``summary_candidate`` is not judged here: it is
returned as sent and adopted or rejected by ``adopt_summary``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from ..errors import PayloadError
from ..payload import JSON, JSONObject, check_keys, read_bool, read_str, read_str_list
from .spec import (
    TODO_STATUSES,
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
    "decode_exit_plan_args",
    "read_todo_status",
    "spec_from_json",
    "spec_to_json",
    "summary_from_json",
    "summary_to_json",
]

_SPEC_KEYS = frozenset({"goal", "steps", "constraints", "verify", "todos", "open_questions", "scope"})
_TODO_KEYS = frozenset({"id", "text", "status"})
_QUESTION_KEYS = frozenset({"text", "blocking"})
_SCOPE_KEYS = frozenset({"paths", "effects"})
_SUMMARY_KEYS = frozenset({"goal", "key_steps", "constraints", "verify", "active_todo_ids"})


# --------------------------------------------------------------------------
# Strict stored form


def spec_to_json(spec: PlanSpec) -> dict[str, JSON]:
    """The stored form of ``spec`` (every key always present)."""
    return {
        "goal": spec.goal,
        "steps": list(spec.steps),
        "constraints": list(spec.constraints),
        "verify": list(spec.verify),
        "todos": [{"id": t.id, "text": t.text, "status": t.status} for t in spec.todos],
        "open_questions": [{"text": q.text, "blocking": q.blocking} for q in spec.open_questions],
        "scope": None if spec.scope is None else {"paths": list(spec.scope.paths), "effects": list(spec.scope.effects)},
    }


def read_todo_status(payload: JSONObject, key: str) -> TodoStatus:
    """Read a todo status; raise ``PayloadError`` for anything else."""
    value = read_str(payload, key)
    if value not in TODO_STATUSES:
        raise PayloadError(f"{key!r} must be one of {list(TODO_STATUSES)}, got {value!r}")
    return value


def _read_items(payload: JSONObject, key: str) -> Sequence[JSON]:
    value = payload[key]
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise PayloadError(f"{key!r} must be a list")
    return value


def spec_from_json(payload: object) -> PlanSpec:
    """Read a stored spec strictly; raise ``PayloadError`` on any deviation."""
    body = check_keys(payload, _SPEC_KEYS, where="plan spec")
    todos = []
    for item in _read_items(body, "todos"):
        todo = check_keys(item, _TODO_KEYS, where="todo")
        todos.append(Todo(read_str(todo, "id"), read_str(todo, "text"), read_todo_status(todo, "status")))
    questions = []
    for item in _read_items(body, "open_questions"):
        question = check_keys(item, _QUESTION_KEYS, where="open question")
        questions.append(OpenQuestion(read_str(question, "text"), read_bool(question, "blocking")))
    scope: PlanScope | None = None
    if body["scope"] is not None:
        raw = check_keys(body["scope"], _SCOPE_KEYS, where="scope")
        scope = PlanScope(read_str_list(raw, "paths"), read_str_list(raw, "effects"))
    return PlanSpec(
        goal=read_str(body, "goal"),
        steps=read_str_list(body, "steps"),
        constraints=read_str_list(body, "constraints"),
        verify=read_str_list(body, "verify"),
        todos=tuple(todos),
        open_questions=tuple(questions),
        scope=scope,
    )


def summary_to_json(summary: SummaryView) -> dict[str, JSON]:
    """The stored form of a summary (the same shape as a summary candidate)."""
    return {
        "goal": summary.goal,
        "key_steps": list(summary.key_steps),
        "constraints": list(summary.constraints),
        "verify": list(summary.verify),
        "active_todo_ids": list(summary.active_todo_ids),
    }


def summary_from_json(payload: object) -> SummaryView:
    """Read a stored summary strictly; raise ``PayloadError`` on any deviation."""
    body = check_keys(payload, _SUMMARY_KEYS, where="summary")
    return SummaryView(
        goal=read_str(body, "goal"),
        key_steps=read_str_list(body, "key_steps"),
        constraints=read_str_list(body, "constraints"),
        verify=read_str_list(body, "verify"),
        active_todo_ids=read_str_list(body, "active_todo_ids"),
    )


# --------------------------------------------------------------------------
# Model output: report everything at once


@dataclass(frozen=True, slots=True)
class ExitPlanArgs:
    """The decoded arguments of ``exit_plan_mode``: a valid spec and the
    summary candidate exactly as the model sent it (``None`` when absent)."""

    spec: PlanSpec
    summary_candidate: JSON


class _Collector:
    def __init__(self) -> None:
        self.problems: list[SpecProblem] = []

    def add(self, code: str, where: str, message: str) -> None:
        self.problems.append(SpecProblem(code, where, message))

    def keys(
        self, value: object, where: str, required: frozenset[str], optional: frozenset[str]
    ) -> Mapping[str, JSON] | None:
        if not isinstance(value, Mapping):
            self.add("wrong-type", where, "must be an object")
            return None
        for key in sorted(required - value.keys()):
            self.add("missing-field", f"{where}.{key}", "required field is missing")
        for key in sorted(str(k) for k in value.keys() - required - optional):
            self.add("unexpected-field", f"{where}.{key}", "is not a known field")
        return cast(Mapping[str, JSON], value)

    def text(self, body: Mapping[str, JSON], key: str, where: str) -> str:
        value = body.get(key, "")
        if not isinstance(value, str):
            self.add("wrong-type", f"{where}.{key}", "must be a string")
            return ""
        return value

    def texts(self, body: Mapping[str, JSON], key: str, where: str) -> tuple[str, ...]:
        value = body.get(key, [])
        if isinstance(value, str | bytes) or not isinstance(value, Sequence):
            self.add("wrong-type", f"{where}.{key}", "must be a list of strings")
            return ()
        out: list[str] = []
        for i, item in enumerate(value):
            if isinstance(item, str):
                out.append(item)
            else:
                self.add("wrong-type", f"{where}.{key}[{i}]", "must be a string")
        return tuple(out)

    def items(self, body: Mapping[str, JSON], key: str, where: str) -> Sequence[JSON]:
        value = body.get(key, [])
        if isinstance(value, str | bytes) or not isinstance(value, Sequence):
            self.add("wrong-type", f"{where}.{key}", "must be a list")
            return ()
        return value


_ARG_KEYS = frozenset({"plan_spec"})
_ARG_OPTIONAL = frozenset({"summary_candidate"})
_MODEL_SPEC_REQUIRED = frozenset({"goal", "steps", "verify", "todos"})
_MODEL_SPEC_OPTIONAL = frozenset({"constraints", "open_questions", "scope"})


def _decode_todo(c: _Collector, item: JSON, where: str) -> Todo:
    # An item that is not an object decodes as an empty one (after its shape
    # problem), so that the items after it keep the index the model sent.
    body = c.keys(item, where, frozenset({"id", "text"}), frozenset({"status"})) or {}
    status = body.get("status", "pending")
    if status not in TODO_STATUSES:
        c.add("unknown-todo-status", f"{where}.status", f"must be one of {list(TODO_STATUSES)}")
        status = "pending"
    return Todo(c.text(body, "id", where), c.text(body, "text", where), cast(TodoStatus, status))


def _decode_question(c: _Collector, item: JSON, where: str) -> OpenQuestion:
    if isinstance(item, str):
        return OpenQuestion(item)
    body = c.keys(item, where, frozenset({"text"}), frozenset({"blocking"})) or {}
    blocking = body.get("blocking", False)
    if not isinstance(blocking, bool):
        c.add("wrong-type", f"{where}.blocking", "must be a boolean")
        blocking = False
    return OpenQuestion(c.text(body, "text", where), blocking)


def decode_exit_plan_args(args: object) -> ExitPlanArgs:
    """Decode ``exit_plan_mode(plan_spec, summary_candidate)`` arguments.

    Raises ``PlanSpecError`` listing every shape problem and every
    ``validate_plan_spec`` problem at once (the model's fault).
    """
    c = _Collector()
    top = c.keys(args, "arguments", _ARG_KEYS, _ARG_OPTIONAL)
    if top is None or "plan_spec" not in top:
        raise PlanSpecError(c.problems)
    where = "plan_spec"
    body = c.keys(top["plan_spec"], where, _MODEL_SPEC_REQUIRED, _MODEL_SPEC_OPTIONAL)
    if body is None:
        raise PlanSpecError(c.problems)
    todos = [_decode_todo(c, item, f"{where}.todos[{i}]") for i, item in enumerate(c.items(body, "todos", where))]
    questions = [
        _decode_question(c, item, f"{where}.open_questions[{i}]")
        for i, item in enumerate(c.items(body, "open_questions", where))
    ]
    scope: PlanScope | None = None
    if body.get("scope") is not None:
        raw = c.keys(body["scope"], f"{where}.scope", frozenset(), _SCOPE_KEYS)
        if raw is not None:
            scope = PlanScope(c.texts(raw, "paths", f"{where}.scope"), c.texts(raw, "effects", f"{where}.scope"))
    spec = PlanSpec(
        goal=c.text(body, "goal", where),
        steps=c.texts(body, "steps", where),
        constraints=c.texts(body, "constraints", where),
        verify=c.texts(body, "verify", where),
        todos=tuple(todos),
        open_questions=tuple(questions),
        scope=scope,
    )
    # Shape problems already name the missing fields and the items that are
    # not objects; skip the semantic duplicates of them ("steps must not be
    # empty" after "steps is missing", the blank id of a todo that is a number).
    shaped = {p.where.removeprefix(f"{where}.") for p in c.problems}
    semantic = [
        p for p in validate_plan_spec(spec) if p.where not in shaped and p.where.partition(".")[0] not in shaped
    ]
    problems = c.problems + [SpecProblem(p.code, f"{where}.{p.where}", p.message) for p in semantic]
    if problems:
        raise PlanSpecError(problems)
    return ExitPlanArgs(spec, top.get("summary_candidate"))
