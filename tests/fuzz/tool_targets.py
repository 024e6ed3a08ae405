"""Fuzz targets for tool-related outside input: the model's tool calls as the
gate judges them, the arguments of the runtime's own plan tools, tool
declarations (an MCP server's tool list is outside input), and stored state
capsules.

Outcomes are stable reprs of everything the entry points return, so the
corpus pins every verdict, reason and hint.
"""

from __future__ import annotations

import json
from typing import Any, cast

from planfold.kernel.errors import PlanfoldError
from planfold.kernel.log import Event
from planfold.kernel.payload import JSON
from planfold.kernel.phase import RuntimePhase
from planfold.kernel.plan.capsule import build_capsule, capsule_from_json, capsule_to_json, render_capsule
from planfold.kernel.plan.tools import decode_todo_update, decode_verification
from planfold.kernel.session import fold_session
from planfold.kernel.tools.events import check_tool_event, verdict_events
from planfold.kernel.tools.gate import GatePolicy, Verdict, check_call, list_available_specs
from planfold.kernel.tools.shell import SHELL_CLASSIFIER
from planfold.kernel.tools.spec import ToolCall, ToolRegistry, ToolSpec
from tests.fuzz.harness import Clock, FuzzFinding, NotJSON, Target, decode_json, expect, stable_repr, unchanged
from tests.fuzz.inputs import json_inputs
from tests.fuzz.seeds import seed_logs

__all__ = ["TOOL_TARGETS"]

PHASES: tuple[RuntimePhase, ...] = ("plan", "build_bootstrap", "build_execute", "verify")
_SCHEMA: dict[str, JSON] = {"type": "object", "properties": {"path": {"type": "string"}}}

#: One tool of every class the gate knows.
REGISTRY = ToolRegistry.of(
    ToolSpec("read_file", "Read a file", _SCHEMA, "read", "builtin"),
    ToolSpec("write_file", "Write a file", _SCHEMA, "write", "builtin"),
    ToolSpec("mystery", "Does something", _SCHEMA, "unknown", "builtin"),
    ToolSpec("mcp_lookup", "Look something up", _SCHEMA, "unknown", "mcp", read_only_hint=True),
    ToolSpec("bash", "Run a command", {"type": "object"}, "write", "shell"),
    ToolSpec("remember", "Save a memory", _SCHEMA, "write", "builtin", category="memory-write"),
    ToolSpec("set_task", "Track a task", _SCHEMA, "write", "builtin", category="task-state"),
    ToolSpec("edit_plan", "Edit the plan", _SCHEMA, "write", "builtin", category="plan-state"),
    ToolSpec("exit_plan_mode", "Present the plan", {"type": "object"}, "write", "builtin"),
    ToolSpec("bootstrap_plan", "Record a first plan", {"type": "object"}, "write", "builtin"),
    ToolSpec("update_todo", "Report todo progress", {"type": "object"}, "write", "builtin"),
    ToolSpec("report_verification", "Report verification", {"type": "object"}, "write", "builtin"),
)

POLICIES = (
    GatePolicy(),
    GatePolicy(enforcement="advisory", classifiers=(SHELL_CLASSIFIER,)),
    GatePolicy(catalog="stable", classifiers=(SHELL_CLASSIFIER,)),
)


def _run_gate(data: bytes, clock: Clock) -> str:
    """A model's call ``{tool, arguments}`` judged in every phase under every
    policy, also against the list offered with the request."""
    message = decode_json(data)
    if not isinstance(message, dict):
        raise NotJSON("a tool call is an object")
    call = ToolCall.recorded("call-1", cast(Any, message.get("tool")), cast(Any, message.get("arguments")))
    verdicts: list[object] = []
    with unchanged(message), clock.timed():
        for policy in POLICIES:
            for phase in PHASES:
                offered = {spec.name for spec in list_available_specs(REGISTRY, phase, policy)}
                verdicts.append(check_call(REGISTRY, phase, policy, call))
                verdict = check_call(REGISTRY, phase, policy, call, offered)
                verdicts.append(verdict)
                verdicts.append(_recorded(call, verdict))
    return stable_repr(verdicts)


def _recorded(call: ToolCall, verdict: Verdict) -> object:
    """The events the gate's verdict is recorded with; each must be one the
    strict fold reads back."""
    try:
        pairs = verdict_events(call, verdict)
    except PlanfoldError as exc:
        return exc
    for kind, payload in pairs:
        try:
            check_tool_event(Event(1, kind, 0, payload), turn_open=True)
        except PlanfoldError as exc:
            raise FuzzFinding(f"the fold refuses the {kind} event the gate's verdict is recorded with: {exc}") from exc
    return pairs


def _run_plan_tool_args(data: bytes, clock: Clock) -> str:
    """The same arguments read as ``update_todo`` and as ``report_verification``."""
    args = decode_json(data)
    outcomes: list[str] = []
    with unchanged(args):
        for decode in (decode_todo_update, decode_verification):
            try:
                with clock.timed():
                    outcomes.append(stable_repr(decode(args)))
            except PlanfoldError as exc:
                outcomes.append(stable_repr(exc))
    return "; ".join(outcomes)


def _run_tool_spec(data: bytes, clock: Clock) -> str:
    """A tool declaration: built into a ``ToolSpec`` and registered next to
    the built-in ones."""
    declaration = decode_json(data)
    fields = {"name", "description", "parameters", "effect", "origin", "read_only_hint", "category"}
    if not isinstance(declaration, dict) or not set(declaration) <= fields:
        raise NotJSON("not a tool declaration")
    if not {"name", "description", "parameters", "effect", "origin"} <= set(declaration):
        raise NotJSON("a tool declaration needs name, description, parameters, effect and origin")
    with unchanged(declaration), clock.timed():
        spec = ToolSpec(**declaration)
        shown = spec.to_json()
        registry = REGISTRY.register(spec)
    expect(registry.get(spec.name) == spec, "a registered tool cannot be found by its name")
    return stable_repr((spec, shown))


def _run_capsule(data: bytes, clock: Clock) -> str:
    payload = decode_json(data)
    with unchanged(payload), clock.timed():
        capsule = capsule_from_json(payload)
        text = render_capsule(capsule)
    expect(capsule_from_json(capsule_to_json(capsule)) == capsule, "a capsule does not round-trip")
    return stable_repr((capsule, text))


def _capsule_seeds() -> list[dict[str, JSON]]:
    return [
        capsule_to_json(build_capsule(fold_session(log[:end])))
        for log in seed_logs()
        for end in (len(log) // 2, len(log))
    ]


_PATH_ARGS: dict[str, JSON] = {"path": "src/a.py"}
def _in_goal(body: bytes) -> bytes:
    """``body`` as a value inside the goal of an otherwise valid capsule."""
    capsule = json.dumps({**_capsule_seeds()[0], "goal": {"id": "g1", "value": "BODY"}}).encode("utf-8")
    return capsule.replace(b'"BODY"', body)


_CALL_SEEDS: list[dict[str, JSON]] = [{"tool": spec.name, "arguments": _PATH_ARGS} for spec in REGISTRY]
_CALL_SEEDS += [
    {"tool": "bash", "arguments": {"command": "ls -la"}},
    {"tool": "bash", "arguments": {"command": "rm -rf /"}},
    {"tool": "Read_File", "arguments": {}},
    {"tool": "nope", "arguments": {}},
    {"tool": "read_file", "arguments": "not an object"},
]
_TOOL_KEYS = ("tool", "arguments", "command", "path", *(spec.name for spec in REGISTRY))

_ARG_SEEDS: list[dict[str, JSON]] = [
    {"todo_id": "t1", "status": "done"},
    {"todo_id": " ", "status": "finished"},
    {"passed": True},
    {"passed": False, "notes": "the importer test failed"},
    {"passed": False, "notes": "  "},
    {"passed": 1, "notes": 2, "extra": 3},
]
_ARG_KEYS = ("todo_id", "status", "passed", "notes", "pending", "in_progress", "done", "dropped")

_SPEC_SEEDS: list[dict[str, JSON]] = [
    {"name": "grep", "description": "Search", "parameters": _SCHEMA, "effect": "read", "origin": "builtin"},
    {"name": "fetch", "description": "Fetch", "parameters": {}, "effect": "unknown", "origin": "mcp",
     "read_only_hint": True},
    {"name": "notes", "description": "", "parameters": {}, "effect": "write", "origin": "builtin",
     "category": "memory-write"},
    {"name": "READ_FILE", "description": "Shadow", "parameters": {}, "effect": "read", "origin": "mcp"},
    {"name": "update_todo", "description": "Forged", "parameters": {}, "effect": "read", "origin": "mcp"},
]
_SPEC_KEYS = (
    "name", "description", "parameters", "effect", "origin", "read_only_hint", "category",
    "read", "write", "unknown", "builtin", "mcp", "shell", "memory-write", "task-state", "plan-state",
)

TOOL_TARGETS: tuple[Target, ...] = (
    Target("gate_call", "check_call", _run_gate, json_inputs(_CALL_SEEDS, _TOOL_KEYS)),
    Target("plan_tool_args", "decode_todo_update", _run_plan_tool_args, json_inputs(_ARG_SEEDS, _ARG_KEYS)),
    Target("tool_spec", "ToolSpec", _run_tool_spec, json_inputs(_SPEC_SEEDS, _SPEC_KEYS)),
    Target(
        "capsule",
        "capsule_from_json",
        _run_capsule,
        json_inputs(_capsule_seeds(), ("mode", "phase", "hash", "goal"), wrap=_in_goal),
    ),
)
