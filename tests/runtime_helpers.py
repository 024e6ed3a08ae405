"""Builders shared by the runtime tests: a whole runtime on an in-memory
store with the scripted model, and small script and log helpers."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from planfold.adapters.llm.model import ChatRequest, ChatResponse, ModelClient, ModelError, ToolCall
from planfold.adapters.llm.script_format import Expectation, ScriptStep
from planfold.adapters.llm.scripted import ScriptedClient
from planfold.adapters.runtime.aio import AsyncRuntime, InThread
from planfold.adapters.runtime.loop import Runtime
from planfold.adapters.runtime.review import ScriptedReviewer, approve
from planfold.adapters.runtime.tool_runner import ToolRunner
from planfold.adapters.runtime.toolset import Session, open_runtime
from planfold.adapters.runtime.workspace import Executor, Workspace
from planfold.adapters.store.aio_memory import AsyncMemoryStore
from planfold.adapters.store.base import AppendRequest, AppendResult, Store
from planfold.adapters.store.memory import MemoryStore
from planfold.kernel.log import Event
from planfold.kernel.payload import JSON
from planfold.kernel.plan.review import ReviewAnswer
from planfold.kernel.plan.scope import ResolvedTarget
from planfold.kernel.tools.gate import GatePolicy
from planfold.kernel.tools.spec import ToolSpec

FILES: dict[str, str] = {"README.md": "# demo\n", "app.py": "print('hi')\n"}

SPEC: dict[str, JSON] = {
    "goal": "Say hello from hello.txt",
    "steps": ["Write hello.txt"],
    "constraints": ["Touch nothing else"],
    "verify": ["hello.txt says hello"],
    "todos": [{"id": "t1", "text": "write hello.txt"}],
}
SPEC_V2: dict[str, JSON] = {**SPEC, "steps": ["Write hello.txt", "Mention it in README.md"]}
SUMMARY: dict[str, JSON] = {
    "goal": "Say hello",
    "key_steps": ["Write hello.txt"],
    "constraints": [],
    "verify": ["hello.txt says hello"],
    "active_todo_ids": ["t1"],
}

FULL_MARK = "# Plan: "
SUMMARY_MARK = "## Current plan (summary)"

_ids = itertools.count(1)


def call(name: str, arguments: Mapping[str, JSON], call_id: str | None = None) -> ChatResponse:
    """A reply making one tool call."""
    return ChatResponse(None, (ToolCall.of(call_id or f"c{next(_ids)}", name, arguments),), "tool_calls")


def say(text: str) -> ChatResponse:
    """A plain text reply (no tool calls)."""
    return ChatResponse(text, (), "stop")


def exit_plan(spec: Mapping[str, JSON] = SPEC, summary: Mapping[str, JSON] | None = SUMMARY) -> ChatResponse:
    arguments: dict[str, JSON] = {"plan_spec": dict(spec)}
    if summary is not None:
        arguments["summary_candidate"] = dict(summary)
    return call("exit_plan_mode", arguments)


def bootstrap(spec: Mapping[str, JSON] = SPEC, summary: Mapping[str, JSON] = SUMMARY) -> ChatResponse:
    """A reply recording the plan of build mode's bootstrap phase."""
    return call("bootstrap_plan", {"plan_spec": dict(spec), "summary_candidate": dict(summary)})


def batch(*replies: ChatResponse) -> ChatResponse:
    """One reply making the tool calls of ``replies``, in order."""
    return ChatResponse(None, tuple(c for r in replies for c in r.tool_calls), "tool_calls")


def todo(todo_id: str = "t1", status: str = "done") -> ChatResponse:
    """A reply reporting one todo's progress (``update_todo``)."""
    return call("update_todo", {"todo_id": todo_id, "status": status})


def verified(passed: bool = True, notes: str | None = None) -> ChatResponse:
    """A reply reporting the verification (``report_verification``)."""
    arguments: dict[str, JSON] = {"passed": passed}
    if notes is not None:
        arguments["notes"] = notes
    return call("report_verification", arguments)


Reply = ChatResponse | ModelError


@dataclass
class HookedModel:
    """The scripted model, with hooks run when request number ``n`` (1-based)
    arrives, before it is answered: a test's way to act "during a step"."""

    inner: ScriptedClient
    hooks: dict[int, Callable[[], object]] = field(default_factory=dict)
    seen: int = 0

    def complete(self, request: ChatRequest) -> ChatResponse:
        self.seen += 1
        hook = self.hooks.get(self.seen)
        if hook is not None:
            hook()
        return self.inner.complete(request)


class BrokenResolver:
    """A resolver that raises, which its port forbids."""

    def resolve(self, path: str) -> tuple[ResolvedTarget, ...]:
        raise OSError(f"the disk under {path} went away")


def run_turns(
    driver: str,
    store: Store,
    model: ModelClient,
    tools: ToolRunner,
    texts: Sequence[str],
    *,
    between: Callable[[], object] = lambda: None,
) -> list[object]:
    """A turn for each of ``texts`` on one runtime of ``driver`` (``sync`` or
    ``asyncio``, the model then run in a thread), ``between`` done after
    each: each turn's report, or what it raised."""
    outcomes: list[object] = []
    if driver == "sync":
        runtime = Runtime(store, "s1", model, tools, clock=ticking())
        for text in texts:
            try:
                outcomes.append(runtime.run_turn(text))
            except BaseException as exc:
                outcomes.append(exc)
            between()
        return outcomes

    async def turns() -> None:
        runtime = AsyncRuntime(store, "s1", InThread(model), tools, clock=ticking())
        for text in texts:
            try:
                outcomes.append(await runtime.run_turn(text))
            except BaseException as exc:
                outcomes.append(exc)
            between()

    asyncio.run(turns())
    return outcomes


def ticking() -> Callable[[], int]:
    counter = itertools.count()
    return lambda: 1_000 + 10 * next(counter)


class HeldAppend(AsyncMemoryStore):
    """An async memory store that holds the next append whose first event is
    of kind ``hold`` until ``release``: before writing it, or (``landed``)
    after, so that the append is in the log and its answer late. ``held`` is
    set while it waits."""

    def __init__(self, hold: str, *, landed: bool = False) -> None:
        super().__init__(clock=ticking())
        self.hold: str | None = hold
        self.landed = landed
        self.held = asyncio.Event()
        self._go = asyncio.Event()

    def release(self) -> None:
        self._go.set()

    async def _pause(self, holding: bool) -> None:
        if holding:
            self.held.set()
            await self._go.wait()

    async def _append(self, request: AppendRequest) -> AppendResult:
        holding = request.events[0].kind == self.hold
        if holding:
            self.hold = None
        await self._pause(holding and not self.landed)
        result = await super()._append(request)
        await self._pause(holding and self.landed)
        return result


def make_session(
    replies: Iterable[Reply],
    *,
    answers: Sequence[ReviewAnswer] = (),
    store: MemoryStore | None = None,
    session_id: str = "s1",
    policy: GatePolicy | None = None,
    files: Mapping[str, str] | None = None,
    review: bool = True,
    tools: Sequence[ToolSpec] = (),
    executors: Mapping[str, Executor] | None = None,
) -> tuple[Session, HookedModel, ScriptedReviewer]:
    """A runtime over a fresh (or given) memory store, answering with
    ``replies`` in order; the reviewer gives ``answers`` (default: approve).
    ``tools`` and ``executors`` are the deployment's own, added to the defaults."""
    model = HookedModel(ScriptedClient(ScriptStep(r, Expectation()) for r in replies))
    reviewer = ScriptedReviewer.of(list(answers) if answers else [approve()])
    session = open_runtime(
        store or MemoryStore(),
        session_id,
        model,
        reviewer if review else None,
        Workspace(dict(files or FILES)),
        clock=ticking(),
        policy=policy,
        tools=tools,
        executors=executors,
    )
    return session, model, reviewer


def kinds(events: Sequence[Event]) -> list[str]:
    return [e.kind for e in events]


def plan_actions(events: Sequence[Event]) -> list[str]:
    return [str(e.payload["action"]) for e in events if e.kind == "plan/artifact"]


def system_text(request: ChatRequest) -> str:
    return request.system_text
