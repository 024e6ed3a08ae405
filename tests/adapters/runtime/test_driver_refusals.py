"""The synchronous and the asyncio runtime refuse the same things with the
same typed errors: both ask the reducer through one helper
(``machine.decide``), and both hold the session log sealed while a tool
runs, so a tool's own attempt to change the session is refused alike."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping

import pytest

from planfold.adapters.errors import AdapterError
from planfold.adapters.llm.model import ChatRequest, ChatResponse
from planfold.adapters.runtime import machine
from planfold.adapters.runtime.aio import AsyncRuntime
from planfold.adapters.runtime.goal_service import AsyncGoalService, GoalService
from planfold.adapters.runtime.loop import Runtime
from planfold.adapters.runtime.machine import OutOfOrderError, decide
from planfold.adapters.runtime.tool_runner import ToolRunner
from planfold.adapters.runtime.toolset import default_registry
from planfold.adapters.runtime.workspace import Workspace
from planfold.adapters.store.aio_memory import AsyncMemoryStore
from planfold.adapters.store.memory import MemoryStore
from planfold.adapters.store.session_log import LogSealedError
from planfold.kernel import step
from planfold.kernel.errors import PlanfoldError
from planfold.kernel.log import Event
from planfold.kernel.payload import JSON
from planfold.kernel.session import fold_session
from planfold.kernel.turn import Reply
from tests.runtime_helpers import FILES, call, say, ticking

S = "s1"

#: What a tool's code tries against the session it runs in, by the runtime it runs under.
Attempt = Callable[[], Awaitable[object]]


class _Replies:
    """A model that reads a file, then answers."""

    def __init__(self) -> None:
        self.replies = [call("read_file", {"path": "a.txt"}, "c1"), say("done")]

    def complete(self, request: ChatRequest) -> ChatResponse:
        return self.replies.pop(0)


class _AsyncReplies(_Replies):
    async def complete(self, request: ChatRequest) -> ChatResponse:  # type: ignore[override]
        return self.replies.pop(0)


def _tried(errors: list[str], attempt: Attempt) -> Callable[[Mapping[str, object]], Awaitable[JSON]]:
    """An async ``read_file`` executor that makes ``attempt`` and keeps its error's code."""

    async def executor(arguments: Mapping[str, object]) -> JSON:
        try:
            await attempt()
        except PlanfoldError as exc:
            errors.append(f"{type(exc).__name__}:{exc.code}")
        return "contents"

    return executor


def _sync_turn(attempt_of: Callable[[Runtime], Callable[[], object]]) -> tuple[list[str], MemoryStore]:
    errors: list[str] = []
    store = MemoryStore()
    holder: list[Runtime] = []

    def executor(arguments: Mapping[str, object]) -> Mapping[str, JSON]:
        try:
            attempt_of(holder[0])()
        except PlanfoldError as exc:
            errors.append(f"{type(exc).__name__}:{exc.code}")
        return {"text": "contents"}

    tools = ToolRunner(default_registry(), executors={**Workspace(dict(FILES)).executors(), "read_file": executor})
    runtime = Runtime(store, S, _Replies(), tools, clock=ticking())
    holder.append(runtime)
    assert runtime.run_turn("Read a.txt").ended_by == "reply"
    return errors, store


def _async_turn(attempt_of: Callable[[AsyncRuntime], Attempt]) -> tuple[list[str], AsyncMemoryStore]:
    errors: list[str] = []
    store = AsyncMemoryStore(clock=ticking())
    holder: list[AsyncRuntime] = []

    async def attempt() -> object:
        return await attempt_of(holder[0])()

    async def scenario() -> None:
        tried = {"read_file": _tried(errors, attempt)}
        tools = ToolRunner(default_registry(), executors=Workspace(dict(FILES)).executors(), async_executors=tried)
        runtime = await AsyncRuntime.open(store, S, _AsyncReplies(), tools, clock=ticking())
        holder.append(runtime)
        async with asyncio.timeout(30):  # a turn that waits for itself would never end
            assert (await runtime.run_turn("Read a.txt")).ended_by == "reply"

    asyncio.run(scenario())
    return errors, store


def test_a_tool_that_starts_a_turn_on_its_own_runtime_is_refused_as_the_log_is_sealed_by_both_runtimes() -> None:
    sync_errors, _ = _sync_turn(lambda runtime: lambda: runtime.run_turn("again"))
    async_errors, store = _async_turn(lambda runtime: lambda: runtime.run_turn("again"))
    assert sync_errors == async_errors == ["LogSealedError:log-sealed"]
    events = asyncio.run(store.read(S))
    assert [e.kind for e in events].count("turn/start") == 1 and fold_session(events).turns.turn == 1


def test_a_tool_that_changes_the_goal_is_refused_as_the_log_is_sealed_by_both_runtimes() -> None:
    def sync_goal(runtime: Runtime) -> Callable[[], object]:
        goals = GoalService(runtime.log, "agent-1", lambda: "g1")
        return lambda: goals.create(goals.agent, "Sneak a goal in")

    def async_goal(runtime: AsyncRuntime) -> Attempt:
        goals = AsyncGoalService(runtime.goal_log, "agent-1", lambda: "g1")
        return lambda: goals.create(goals.agent, "Sneak a goal in")

    sync_errors, sync_store = _sync_turn(sync_goal)
    async_errors, store = _async_turn(async_goal)
    assert sync_errors == async_errors == ["LogSealedError:log-sealed"]
    events = asyncio.run(store.read(S))
    assert "goal/change" not in [e.kind for e in events] and fold_session(events).goal.current is None
    assert sync_store.load(S).goal.current is None


def _at_execute() -> tuple[step.Process, step.Log]:
    """A process running call ``c1``'s executor, over the log that recorded it."""
    store = MemoryStore()
    runtime = Runtime(store, S, _Replies(), ToolRunner(default_registry()), clock=ticking())
    machine = runtime.machine
    machine.start_turn("go")
    machine.next_action()
    machine.reply(call("read_file", {"path": "a.txt"}, "c1"))
    machine.next_action()
    assert machine.stage == "execute"
    return machine._p, machine._view()


@pytest.mark.parametrize(
    ("event", "error", "code"),
    [
        (step.ToolDone("c2", True, "x", 0), OutOfOrderError, "unexpected-call"),
        (step.ReplyIn(Reply("again"), 0), LogSealedError, "log-sealed"),
        (step.EndTurn(0), LogSealedError, "log-sealed"),
    ],
)
def test_a_refusal_of_the_reducer_is_one_typed_error_for_every_driver(
    event: step.Input, error: type[AdapterError], code: str
) -> None:
    process, log = _at_execute()
    with pytest.raises(error) as refused:
        decide(process, log, event, lambda: 0)
    assert refused.value.code == code


class _Counted:
    """The reducer, the drivers' questions and the clock, counted."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.questions = self.answers = self.appending = self.reads = 0
        advance, ask = step.advance, machine.decide

        def counted_advance(process: step.Process, log: step.Log, event: step.Input) -> step.Transition:
            self.answers += 1
            moved = advance(process, log, event)
            self.appending += any(isinstance(a, step.Append) for a in moved.actions)
            return moved

        def counted_decide(
            process: step.Process, log: step.Log, event: step.Input, now: Callable[[], int]
        ) -> step.Transition:
            self.questions += 1
            return ask(process, log, event, now)

        monkeypatch.setattr(step, "advance", counted_advance)
        monkeypatch.setattr(machine, "decide", counted_decide)
        self.clock = ticking()

    def now(self) -> int:
        self.reads += 1
        return self.clock()


@pytest.mark.parametrize("driver", ["sync", "asyncio"])
def test_a_driver_asks_the_reducer_once_a_question_and_reads_its_clock_once_an_append(
    driver: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    counted = _Counted(monkeypatch)
    tools = ToolRunner(default_registry(), executors=Workspace(dict(FILES)).executors())
    if driver == "sync":
        store = MemoryStore()
        assert Runtime(store, S, _Replies(), tools, clock=counted.now).run_turn("Read a.txt").ended_by == "reply"
        events = store.read(S)
    else:
        astore = AsyncMemoryStore(clock=ticking())

        async def turn() -> tuple[Event, ...]:
            runtime = await AsyncRuntime.open(astore, S, _AsyncReplies(), tools, clock=counted.now)
            assert (await runtime.run_turn("Read a.txt")).ended_by == "reply"
            return await astore.read(S)

        events = asyncio.run(turn())
    assert counted.questions > counted.appending > 0
    assert counted.answers == counted.questions and counted.reads == counted.appending
    assert len({e.at for e in events}) == counted.appending and fold_session(events).last_seq == len(events)
