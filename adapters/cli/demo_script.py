"""The demo's scripted model and reviewer: a fixed, checked conversation.

Theory of operation
-------------------
The offline demo needs a model that behaves the same on every run, so the
model is a ``ScriptedClient`` whose steps also check what each request
carried (the tools offered, the prompt sections). If the runtime ever sent a
request that did not match (a write tool offered in plan mode, the plan
policy missing), the script fails loudly instead of the demo passing quietly.

Part one is the planning and execution turn (todo progress and a passed
verification) and the first goal rounds: in round one build mode has no plan,
so the model records one with ``bootstrap_plan``, executes it, fails its first
verification (back to execution), fixes the file and passes. Part two is what
the model says after the simulated restart.
"""

from __future__ import annotations

from ...kernel.payload import JSON
from ..llm.model import ChatResponse, ToolCall
from ..llm.script_format import Expectation, ScriptStep
from ..llm.scripted import ScriptedClient
from ..runtime.review import ScriptedReviewer, approve

__all__ = [
    "DEMO_FILES",
    "DEMO_PLAN_SPEC",
    "DEMO_SUMMARY",
    "DOCS_PLAN_SPEC",
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

#: The plan the goal's first round records itself (build mode, no plan).
DOCS_PLAN_SPEC: dict[str, JSON] = {
    "goal": "Make README.md describe both greet() and farewell().",
    "steps": ["Rewrite the description line of README.md"],
    "verify": ["README.md names greet() and farewell()"],
    "todos": [{"id": "d1", "text": "update README.md"}],
    "scope": {"paths": ["README.md"], "effects": ["write"]},
}
_README_HALF = "# greet\n\nA tiny module: farewell(name) says goodbye.\n"
_README_BOTH = "# greet\n\nA tiny module: greet(name) says hello, farewell(name) says goodbye.\n"


def _call(call_id: str, name: str, arguments: dict[str, JSON]) -> ChatResponse:
    return ChatResponse(None, (ToolCall.of(call_id, name, arguments),), "tool_calls")


def _say(text: str) -> ChatResponse:
    return ChatResponse(text, (), "stop")


def _execute(
    write_id: str, tick_id: str, *, path: str, content: str, todo: str, said: str, label: str
) -> list[ScriptStep]:
    """Execute a plan of one todo: write ``path`` (the plan's first build
    request, so the whole plan is in the prompt), tick ``todo`` off, and say
    ``said`` with no todo left open."""
    return [
        ScriptStep(_call(write_id, "write_file", {"path": path, "content": content}), _FIRST_BUILD, label),
        ScriptStep(_call(tick_id, "update_todo", {"todo_id": todo, "status": "done"}), _EXECUTING, "todo done"),
        ScriptStep(_say(said), _EXECUTING, "execution done: no todo open"),
    ]


_PLANNING = Expectation(
    tools_include=frozenset({"read_file", "exit_plan_mode"}),
    tools_exclude=frozenset({"write_file", "bootstrap_plan", "update_todo"}),
    system_contains=("[plan:policy]", "[overlay:plan]"),
)
_EXECUTING = Expectation(
    tools_include=frozenset({"write_file", "update_todo"}),
    tools_exclude=frozenset({"exit_plan_mode", "bootstrap_plan", "report_verification"}),
    system_contains=("[overlay:build]",),
    system_excludes=("[plan:policy]",),
)
_FIRST_BUILD = Expectation(
    tools_include=frozenset({"write_file", "update_todo"}),
    system_contains=("[overlay:build]", "# Plan:"),
    system_excludes=("[plan:policy]",),
)
_VERIFYING = Expectation(
    tools_include=frozenset({"report_verification", "update_todo"}),
    system_contains=("Current plan (summary)",),
)
#: Build mode with no executable plan: read-only, bootstrap_plan on offer.
_BOOTSTRAP = Expectation(
    tools_include=frozenset({"read_file", "bootstrap_plan"}),
    tools_exclude=frozenset({"write_file", "update_todo", "report_verification"}),
    system_excludes=("[plan:policy]",),
)


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
            *_execute(
                "c4",
                "c5",
                path="greet.py",
                content=_NEW_CONTENT,
                todo="t1",
                said="farewell() is written.",
                label="execute the approved plan (full plan: first build request)",
            ),
            ScriptStep(
                _call(
                    "c6",
                    "report_verification",
                    {"passed": True, "notes": "greet.py defines greet and farewell"},
                ),
                _VERIFYING,
                "verify",
            ),
            ScriptStep(_say("The plan is complete."), _BOOTSTRAP, "after completion"),
            # goal round 1: build mode without a plan: read, bootstrap, execute, verify
            ScriptStep(_call("g1", "read_file", {"path": "README.md"}), _BOOTSTRAP, "goal round 1: research"),
            ScriptStep(
                _call("g2", "bootstrap_plan", {"plan_spec": DOCS_PLAN_SPEC}),
                _BOOTSTRAP,
                "goal round 1: record a minimal plan",
            ),
            *_execute(
                "g3",
                "g4",
                path="README.md",
                content=_README_HALF,
                todo="d1",
                said="README.md now mentions farewell().",
                label="goal round 1: execute the implicit plan",
            ),
            ScriptStep(
                _call("g5", "report_verification", {"passed": False, "notes": "README.md no longer names greet()"}),
                _VERIFYING,
                "verification fails",
            ),
            ScriptStep(
                _call("g6", "write_file", {"path": "README.md", "content": _README_BOTH}),
                _EXECUTING,
                "back to execution: fix it",
            ),
            ScriptStep(_say("README.md names both functions again."), _EXECUTING, "execution done again"),
            ScriptStep(
                _call("g7", "report_verification", {"passed": True, "notes": "README.md names greet and farewell"}),
                _VERIFYING,
                "verification passes",
            ),
            ScriptStep(_say("Round 1: README.md and greet.py are consistent."), _BOOTSTRAP, "goal round 1 reply"),
            ScriptStep(_say("Round 2: nothing left to tidy."), _BOOTSTRAP, "goal round 2"),
        ]
    )


def after_restart_model() -> ScriptedClient:
    """The one goal round run after the human resumes the goal."""
    return ScriptedClient([ScriptStep(_say("Round 3: checked again, all tidy."), _BOOTSTRAP, "goal round 3")])


def demo_reviewer() -> ScriptedReviewer:
    """A human who approves the first plan shown."""
    return ScriptedReviewer.of([approve()])
