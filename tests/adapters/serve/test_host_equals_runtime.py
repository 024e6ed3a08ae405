"""A host driving a session through the server writes the very log the
in-process ``Runtime`` writes for the same conversation: any model replies
(calls of every kind, arguments that do not decode, unknown tools, replies
cut off, filtered or refused, more calls than the cap, failed requests), any
review answers, in plan mode or not."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, note, settings
from hypothesis import strategies as st

from planfold.adapters.cli.demo_script import DEMO_FILES
from planfold.adapters.llm.model import ChatResponse, ModelTimeoutError, ToolCall
from planfold.adapters.llm.script_format import ScriptStep
from planfold.adapters.llm.scripted import ScriptedClient
from planfold.adapters.runtime.review import ScriptedReviewer, approve, keep_planning
from planfold.adapters.runtime.tool_runner import ToolRunner
from planfold.adapters.runtime.toolset import default_registry, open_runtime
from planfold.adapters.runtime.workspace import Workspace
from planfold.adapters.serve.command import ticks
from planfold.adapters.serve.server import Server
from planfold.adapters.store.memory import MemoryStore
from planfold.kernel.plan.review import ChannelLost, Dismissed, ReviewAnswer
from tests.serve_host import WORKSPACE_TOOLS, InProcess, PyHost

SESSION = "s"
MAX_CALLS = 3
_SPEC = {"goal": "Add farewell()", "steps": ["write it"], "verify": ["it exists"],
         "todos": [{"id": "t1", "text": "write farewell()"}]}
_SCOPED = {**_SPEC, "scope": {"paths": ["README.md"], "effects": ["write"]}}
CALLS: dict[str, tuple[str, str]] = {
    "read": ("read_file", json.dumps({"path": "greet.py"})),
    "write": ("write_file", json.dumps({"path": "greet.py", "content": "x"})),
    "write-readme": ("write_file", json.dumps({"path": "README.md", "content": "# x"})),
    "exit": ("exit_plan_mode", json.dumps({"plan_spec": _SPEC})),
    "exit-scoped": ("exit_plan_mode", json.dumps({"plan_spec": _SCOPED})),
    "bootstrap": ("bootstrap_plan", json.dumps({"plan_spec": _SCOPED})),
    "todo": ("update_todo", json.dumps({"todo_id": "t1", "status": "done"})),
    "verified": ("report_verification", json.dumps({"passed": True, "notes": "ok"})),
    "failed": ("report_verification", json.dumps({"passed": False, "notes": "no"})),
    "unknown": ("rm_rf", "{}"),
    "broken": ("read_file", '{"path": '),
}
ANSWERS: dict[str, ReviewAnswer] = {
    "approve": approve(),
    "keep-planning": keep_planning(),
    "feedback": keep_planning("split it"),
    "dismissed": Dismissed(),
    "lost": ChannelLost(),
}


@st.composite
def _replies(draw: st.DrawFn) -> ScriptStep:
    if draw(st.integers(0, 12)) == 0:
        return ScriptStep(ModelTimeoutError(1.0))
    names = draw(st.lists(st.sampled_from(sorted(CALLS)), max_size=MAX_CALLS + 1))
    calls = tuple(ToolCall.parse(f"c{i}-{name}", *CALLS[name]) for i, name in enumerate(names))
    text = draw(st.sampled_from([None, "Done.", ""]))
    finish = draw(st.sampled_from([None, "stop", "tool_calls", "length", "content_filter"]))
    refusal = draw(st.sampled_from([None, None, None, "I will not."]))
    return ScriptStep(ChatResponse(text, calls, finish, refusal=refusal))


def _in_process(steps: list[ScriptStep], answers: list[str], plan: bool) -> tuple[Any, ...]:
    store = MemoryStore()
    reviewer = ScriptedReviewer.of([ANSWERS[a] for a in answers])
    session = open_runtime(
        store, SESSION, ScriptedClient(steps), reviewer, Workspace(dict(DEMO_FILES)), clock=ticks(1_000)
    )
    session.runtime.max_tool_calls = MAX_CALLS
    if plan:
        session.runtime.submit("/plan")
    for _ in range(2):
        session.runtime.run_turn("Add farewell() to greet.py.")
    return store.read(SESSION)


def _served(steps: list[ScriptStep], answers: list[str], plan: bool) -> tuple[Any, ...]:
    store = MemoryStore()
    workspace = Workspace(dict(DEMO_FILES))
    executors = ToolRunner(default_registry(), executors=workspace.executors())
    reviewer = ScriptedReviewer.of([ANSWERS[a] for a in answers])
    host = PyHost(InProcess(Server(store, ticks(1_000))), SESSION, ScriptedClient(steps), executors, reviewer)
    host.call("session/open", tools=list(WORKSPACE_TOOLS), max_tool_calls=MAX_CALLS)
    if plan:
        host.submit("/plan")
    for _ in range(2):
        host.run_turn("Add farewell() to greet.py.")
    return store.read(SESSION)


@settings(max_examples=min((settings.default or settings()).max_examples, 60), deadline=None)
@given(
    steps=st.lists(_replies(), max_size=8),
    answers=st.lists(st.sampled_from(sorted(ANSWERS)), max_size=3),
    plan=st.booleans(),
)
def test_a_host_through_the_server_writes_the_log_the_runtime_writes(
    steps: list[ScriptStep], answers: list[str], plan: bool
) -> None:
    expected = _in_process(steps, answers, plan)
    got = _served(steps, answers, plan)
    note(f"{len(expected)} events in-process, {len(got)} served")
    assert got == expected
