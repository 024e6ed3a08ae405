"""The runtime-owned plan tools: their arguments, and the effects of a call.

Theory of operation
-------------------
Four tools are the runtime's own (``kernel.tools.RUNTIME_TOOLS``). The gate
offers each one only in its phases and routes a call of it to the runtime;
no executor runs it and no tool call writes plan state. The runtime decodes
the arguments here and appends what ``kernel.decisions.decide_tool_call``
returns, drafts built by ``kernel.plan_events`` (each proven against the
real fold):

- ``exit_plan_mode(plan_spec, summary_candidate)`` (plan): decoded by
  ``kernel.plan.spec_json``, recorded by ``exit_plan_events``, then reviewed.
- ``bootstrap_plan(plan_spec, summary_candidate)`` (build_bootstrap): the
  same arguments; ``bootstrap_event`` records a minimal ``implicit`` plan,
  which the runtime starts before its next request.
- ``update_todo(todo_id, status)`` (build_execute, verify): ``todo_event``.
  Progress is not content: no new revision, and the summary's todo
  references refresh only when the set of open todos changes (a key todo
  change); the result says whether it did.
- ``report_verification(passed, notes)`` (verify): ``verification_event``
  is ``complete`` when it passed, else ``verify-fail`` with the notes, which
  sends the plan back to execution.

Execution ends (``execution_end_event``) when the model stops (a step with
no tool calls) while the plan executes, is not verifying yet, and no todo is
open (``pending`` or ``in_progress``): that records ``verify``. With a todo
still open a reply is only a reply, and execution goes on next turn.

Scope: ``execution_effects`` says what an allowed executor call is about to
do: nothing for a declared read tool; for a shell tool a ``shell`` effect per
path its line writes as far as the shell classifier can name them (one with
no path for a provably read-only line, one of unknown targets otherwise);
for any other tool a ``write`` effect per path in the arguments it declares
as its targets (``ToolSpec.target_args``), or one of unknown targets when it
declares none or a declared argument is missing or holds anything but a path
or a non-empty list of paths. ``decide_scope`` checks them with
``check_scope`` against the executing plan's scope, which fails closed on
unknown targets; any violation gives the ``realign``, and the call must not
run.

The decoders report every problem at once in one ``ToolArgumentsError``
(code ``invalid-tool-arguments``, the model's fault).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, ClassVar, TypeVar, cast

from ..errors import PlanError
from ..payload import OMISSIBLE, Code, JSONObject, NonBlank, NonBlankWhen, read_problems
from ..tools.gate import tool_class
from ..tools.shell import shell_write_targets
from ..tools.spec import ToolSpec
from .scope import Effect
from .spec import SpecProblem, TodoStatus

_Args = TypeVar("_Args")

__all__ = [
    "TodoUpdate",
    "ToolArgumentsError",
    "VerificationReport",
    "decode_todo_update",
    "decode_verification",
    "execution_effects",
]


class ToolArgumentsError(PlanError):
    """A runtime-owned tool was called with arguments it does not take (the
    model's fault). ``problems`` lists every one found."""

    code = "invalid-tool-arguments"

    def __init__(self, tool: str, problems: Sequence[SpecProblem]) -> None:
        listed = "; ".join(f"{p.where}: {p.message}" for p in problems)
        super().__init__(f"{tool} was called with bad arguments: {listed}")
        self.tool = tool
        self.problems = tuple(problems)


@dataclass(frozen=True, slots=True)
class TodoUpdate:
    """``update_todo``: set todo ``todo_id`` of the executing plan to ``status``."""

    todo_id: NonBlank
    status: Annotated[TodoStatus, Code("unknown-todo-status")]


@dataclass(frozen=True, slots=True)
class VerificationReport:
    """``report_verification``: whether the plan's verify list holds, and notes
    (what was checked, or what failed: required when it failed)."""

    __rules__: ClassVar = (NonBlankWhen("notes", "passed", False, "missing-notes", "must say what failed"),)

    passed: bool
    notes: Annotated[str, OMISSIBLE] = ""


def _decode(tool: str, arguments_type: type[_Args], args: object) -> _Args:
    decoded, problems = read_problems(arguments_type, args, "arguments")
    if problems:
        raise ToolArgumentsError(tool, problems)
    result: _Args = decoded
    return result


def decode_todo_update(args: object) -> TodoUpdate:
    """Decode ``update_todo {todo_id, status}``; raises ``ToolArgumentsError``."""
    return _decode("update_todo", TodoUpdate, args)


def decode_verification(args: object) -> VerificationReport:
    """Decode ``report_verification {passed, notes}``; ``notes`` may be left
    out when it passed, and must say what failed when it did not. Raises
    ``ToolArgumentsError``."""
    return _decode("report_verification", VerificationReport, args)


def _declared_targets(tool: ToolSpec, arguments: Mapping[str, object]) -> list[str] | None:
    """The paths in ``tool``'s declared target arguments, or ``None`` when
    they cannot be determined (none declared, one missing, not a path)."""
    if not tool.target_args:
        return None
    paths: list[str] = []
    for name in tool.target_args:
        value = arguments.get(name)
        if isinstance(value, str):
            paths.append(value)
        elif isinstance(value, list | tuple) and value and all(isinstance(v, str) for v in value):
            paths.extend(value)
        else:
            return None
    return paths


def execution_effects(tool: ToolSpec, arguments: Mapping[str, object]) -> tuple[Effect, ...]:
    """What running ``tool`` with ``arguments`` would do (see the module doc):
    nothing for a declared read tool; ``shell`` effects on the paths a shell
    line writes; ``write`` effects on the declared targets; an effect of
    unknown targets whenever they cannot be named. Never raises."""
    if tool_class(tool) == "read":
        return ()
    if tool.origin == "shell":
        named = shell_write_targets(cast(JSONObject, arguments))
        if named is None:
            return (Effect.unknown("shell"),)
        return tuple(Effect("shell", path) for path in named) or (Effect("shell"),)
    paths = _declared_targets(tool, arguments)
    if paths is None:
        return (Effect.unknown("write"),)
    return tuple(Effect("write", path) for path in paths)

