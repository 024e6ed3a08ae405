"""The demo's scripted model and reviewer: a fixed, checked conversation.

Theory of operation
-------------------
The offline demo needs a model that behaves the same on every run, so the
model is a ``ScriptedClient`` whose steps also check what each request
carried (the tools offered, the prompt sections). If the runtime ever sent a
request that did not match (a write tool offered in plan mode, the plan
policy missing), the script fails loudly instead of the demo passing quietly.

Part one is the planning and execution turn and the first goal rounds; part
two is what the model says after the simulated restart.
"""

from __future__ import annotations

from adapters.model import ChatResponse, ToolCall
from adapters.review import ScriptedReviewer, approve
from adapters.script_format import Expectation, ScriptStep
from adapters.scripted_client import ScriptedClient
from kernel.payload import JSON

__all__ = [
    "DEMO_FILES",
    "DEMO_PLAN_SPEC",
    "DEMO_SUMMARY",
    "TASK",
    "after_restart_model",
    "demo_reviewer",
    "first_model",
]

TASK = "Add a farewell() function next to greet() in greet.py."

DEMO_FILES: dict[str, str] = {
    "README.md": "# greet\n\nA tiny module that greets people.\n",
    "greet.py": 'def greet(name):\n    return f"Hello, {name}!"\n',
}

DEMO_PLAN_SPEC: dict[str, JSON] = {
    "goal": "Add farewell(name) to greet.py, mirroring greet(name).",
    "steps": ["Read greet.py", "Append farewell(name) returning 'Goodbye, <name>!'"],
    "constraints": ["Do not change greet()"],
    "verify": ["greet.py defines both greet and farewell"],
    "todos": [{"id": "t1", "text": "write farewell() into greet.py"}],
}
DEMO_SUMMARY: dict[str, JSON] = {
    "goal": "Add farewell(name) to greet.py",
    "key_steps": ["Append farewell(name)"],
    "constraints": ["Do not change greet()"],
    "verify": ["both functions defined"],
    "active_todo_ids": ["t1"],
}

_NEW_CONTENT = DEMO_FILES["greet.py"] + '\n\ndef farewell(name):\n    return f"Goodbye, {name}!"\n'


def _call(call_id: str, name: str, arguments: dict[str, JSON]) -> ChatResponse:
    return ChatResponse(None, (ToolCall.of(call_id, name, arguments),), "tool_calls")


def _say(text: str) -> ChatResponse:
    return ChatResponse(text, (), "stop")


_PLANNING = Expectation(
    tools_include=frozenset({"read_file", "exit_plan_mode"}),
    tools_exclude=frozenset({"write_file"}),
    system_contains=("[plan:policy]", "[overlay:plan]"),
)
_EXECUTING = Expectation(
    tools_include=frozenset({"write_file"}), system_contains=("[overlay:build]",), system_excludes=("[plan:policy]",)
)
_READ_ONLY = Expectation(tools_exclude=frozenset({"write_file"}), system_excludes=("[plan:policy]",))


def first_model() -> ScriptedClient:
    """Planning, review, execution, verify, and the first goal rounds."""
    return ScriptedClient(
        [
            ScriptStep(_call("c1", "read_file", {"path": "greet.py"}), _PLANNING, "research"),
            ScriptStep(
                _call("c2", "write_file", {"path": "greet.py", "content": "# forged"}),
                _PLANNING,
                "forged write during planning",
            ),
            ScriptStep(
                _call("c3", "exit_plan_mode", {"plan_spec": DEMO_PLAN_SPEC, "summary_candidate": DEMO_SUMMARY}),
                _PLANNING,
                "present the plan",
            ),
            ScriptStep(
                _call("c4", "write_file", {"path": "greet.py", "content": _NEW_CONTENT}),
                Expectation(
                    tools_include=frozenset({"write_file"}),
                    system_contains=("[overlay:build]", "# Plan:"),
                    system_excludes=("[plan:policy]",),
                ),
                "execute the approved plan (full plan: first build request)",
            ),
            ScriptStep(_say("farewell() is written."), _EXECUTING, "execution done"),
            ScriptStep(
                _say("Verified: greet.py defines greet and farewell."),
                Expectation(system_contains=("Current plan (summary)",)),
                "verify",
            ),
            # goal rounds (build mode, no live plan: read-only)
            ScriptStep(_call("g1", "list_files", {}), _READ_ONLY, "goal round 1"),
            ScriptStep(_say("Round 1: README and greet.py are consistent."), _READ_ONLY, "goal round 1 reply"),
            ScriptStep(_say("Round 2: nothing left to tidy."), _READ_ONLY, "goal round 2"),
        ]
    )


def after_restart_model() -> ScriptedClient:
    """The one goal round run after the human resumes the goal."""
    return ScriptedClient([ScriptStep(_say("Round 3: checked again, all tidy."), _READ_ONLY, "goal round 3")])


def demo_reviewer() -> ScriptedReviewer:
    """A human who approves the first plan shown."""
    return ScriptedReviewer.of([approve()])
