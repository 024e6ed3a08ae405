"""The goal service's asyncio face: goal operations and the round driver over
an ``AsyncRuntime`` on an ``AsyncStore``, every append awaited on the loop
(no thread), and the lease driver over an ``AsyncSharedStore``."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from planfold.adapters.llm.model import ChatRequest, ChatResponse
from planfold.adapters.runtime.aio import AsyncRuntime
from planfold.adapters.runtime.goal_lease_aio import AsyncLeasedDriver
from planfold.adapters.runtime.goal_service import AsyncGoalService, DriveReport, StaleAgentError
from planfold.adapters.runtime.tool_runner import ToolRunner
from planfold.adapters.runtime.toolset import default_registry
from planfold.adapters.runtime.workspace import Workspace
from planfold.adapters.store.aio import AsyncSharedStore
from planfold.adapters.store.aio_memory import AsyncMemoryStore
from planfold.adapters.store.aio_sqlite import AsyncSqliteStore
from planfold.adapters.store.base import AppendRequest, AppendResult, LeaseHeldError, StorageError
from planfold.adapters.store.memory import MemoryStore
from planfold.kernel.errors import ConflictError
from planfold.kernel.goal.ops import GoalError
from planfold.kernel.log import Event, MessageSource
from planfold.kernel.session import fold_session
from tests.runtime_helpers import FILES, HeldAppend, say, ticking

S = "s1"


class Model:
    """An async model that says which round it answers."""

    def __init__(self) -> None:
        self.asked: list[str | None] = []

    async def complete(self, request: ChatRequest) -> ChatResponse:
        await asyncio.sleep(0)
        self.asked.append(request.messages[-1].content if request.messages else None)
        return say(f"answered {len(self.asked)}")


def _tools() -> ToolRunner:
    return ToolRunner(default_registry(), executors=Workspace(dict(FILES)).executors())


async def _goal_service(store: AsyncSharedStore) -> tuple[AsyncRuntime, AsyncGoalService]:
    """A runtime of session ``S`` over ``store``, and agent-1's goal service on
    its goal log."""
    runtime = await AsyncRuntime.open(store, S, Model(), _tools(), clock=ticking())
    return runtime, AsyncGoalService(runtime.goal_log, "agent-1", lambda: "g1")


async def _memory(_: Path) -> AsyncSharedStore:
    return AsyncMemoryStore(clock=ticking())


async def _sqlite(tmp: Path) -> AsyncSharedStore:
    return await AsyncSqliteStore.open(tmp / "goals.db", clock=ticking())


STORES: dict[str, Callable[[Path], Awaitable[AsyncSharedStore]]] = {"memory": _memory, "sqlite": _sqlite}


def _no_hop(*args: object, **kwargs: object) -> object:
    raise AssertionError("the asyncio goal service hopped to a thread")


async def _two_rounds(
    runtime: AsyncRuntime, monkeypatch: pytest.MonkeyPatch, to_thread: Callable[..., object]
) -> tuple[AsyncGoalService, DriveReport]:
    """A goal of two rounds created and driven to its budget on ``runtime``,
    with ``asyncio.to_thread`` replaced by ``to_thread`` meanwhile."""
    monkeypatch.setattr(asyncio, "to_thread", to_thread)
    goals = AsyncGoalService(runtime.goal_log, "agent-1", lambda: "g1")
    await goals.create(goals.agent, "Tidy", max_rounds=2)
    report = await goals.drive_async(goals.agent, runtime)
    monkeypatch.undo()
    assert report.rounds == (1, 2) and report.stopped == "budget-spent"
    return goals, report


@pytest.mark.parametrize("backend", sorted(STORES))
def test_a_goal_is_driven_to_its_budget_on_the_loop_without_a_thread_and_the_log_audits_clean(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario() -> None:
        store = await STORES[backend](tmp_path)
        model = Model()
        runtime = await AsyncRuntime.open(store, S, model, _tools(), clock=ticking())
        goals, report = await _two_rounds(runtime, monkeypatch, _no_hop)
        goal = runtime.state.goal.current
        assert goal is not None and goal.phase == "blocked" and not goals.activation.armed
        assert goal.blocked_reason is not None and goal.blocked_reason.code == "round-limit"
        assert model.asked == ["Continue the goal (round 1).", "Continue the goal (round 2)."]
        assert (await store.audit(S)).ok
        events = await store.read(S)
        assert report.blocked_at == events[-1].seq and fold_session(events) == runtime.state
        rounds = [e.payload["source"] for e in events if e.kind == "user/message"]
        assert [r["round"] for r in rounds if isinstance(r, dict)] == [1, 2]
        await store.close()

    asyncio.run(scenario())


def test_a_goal_created_while_a_turns_append_awaits_its_answer_follows_it_in_the_log_and_the_turn_goes_on() -> None:
    store = HeldAppend("request/header", landed=True)

    async def scenario() -> None:
        runtime, goals = await _goal_service(store)
        turn = asyncio.create_task(runtime.run_turn("go"))
        await store.held.wait()  # the header is in the store, its answer late
        creating = asyncio.ensure_future(goals.create(goals.agent, "Ship it"))
        await asyncio.sleep(0)
        store.release()
        created, report = await creating, await turn
        events = await store.read(S)
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        assert events[created.seq - 1].kind.startswith("goal/") and events[created.seq - 2].kind == "request/header"
        assert report.ended_by == "reply" and runtime.state == fold_session(events)
        assert runtime.state.goal.current is not None and goals.get(goals.agent) is not None

    asyncio.run(scenario())


def test_a_goal_operation_cancelled_while_its_append_awaits_its_answer_keeps_the_writer_until_it_answers() -> None:
    store = HeldAppend("goal/change", landed=True)

    async def scenario() -> None:
        runtime, goals = await _goal_service(store)
        creating = asyncio.ensure_future(goals.create(goals.agent, "Ship it"))
        await store.held.wait()  # the goal is in the store, its answer late
        turn = asyncio.ensure_future(runtime.run_turn("go"))  # waits for the writer
        await asyncio.sleep(0)
        creating.cancel()
        await asyncio.sleep(0)
        store.release()
        with pytest.raises(asyncio.CancelledError):
            await creating
        report = await turn
        events = await store.read(S)
        assert events[0].kind == "goal/change" and report.ended_by == "reply"
        assert runtime.state == fold_session(events) and runtime.state.goal.current is not None

    asyncio.run(scenario())


def test_a_refused_operation_and_a_stale_agent_append_nothing() -> None:
    async def scenario() -> None:
        store = AsyncMemoryStore(clock=ticking())
        runtime, goals = await _goal_service(store)
        old = goals.agent
        goals.replace_agent()
        with pytest.raises(StaleAgentError):
            await goals.create(old, "Tidy")
        with pytest.raises(GoalError):
            await goals.pause(goals.agent)  # no goal to pause
        with pytest.raises(GoalError):
            await goals.block_spent(goals.agent)
        assert await store.head(S) == 0 and runtime.state.last_seq == 0

    asyncio.run(scenario())


def test_a_runtime_over_a_synchronous_store_drives_a_goal_with_one_thread_hop_per_store_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = MemoryStore(clock=ticking())
    hops: list[str] = []
    hop = asyncio.to_thread
    appends: list[int] = []
    append = store.append

    def counting(request: AppendRequest) -> AppendResult:
        appends.append(request.expected_seq)
        return append(request)

    store.append = counting  # type: ignore[method-assign]

    async def counted(call: Callable[..., object], *args: object) -> object:
        hops.append(getattr(call, "__qualname__", ""))
        return await hop(call, *args)

    async def scenario() -> None:
        await _two_rounds(AsyncRuntime(store, S, Model(), _tools(), clock=ticking()), monkeypatch, counted)

    asyncio.run(scenario())
    events = store.read(S)
    assert store.audit(S).ok and fold_session(events) == store.load(S)
    assert len(appends) >= 10 and appends == sorted(appends)  # the goal, 4 appends a round, the block
    assert len(hops) == len(appends) and all(name.startswith("ThreadedStore.") for name in hops)


def test_a_leased_drive_holds_the_lease_for_its_rounds_and_gives_it_back_at_the_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        store = AsyncMemoryStore(clock=ticking())
        runtime, goals = await _goal_service(store)
        driver = AsyncLeasedDriver(goals, store, holder="me")
        await goals.create(goals.agent, "Tidy", max_rounds=2)
        seen: list[str | None] = []

        class Watching:
            async def run_turn(self, text: str, source: MessageSource | None = None) -> object:
                lease = await store.lease(S)
                seen.append(None if lease is None else lease.holder)
                return await runtime.run_turn(text, source)

        monkeypatch.setattr(asyncio, "to_thread", _no_hop)
        drive = await driver.drive(goals.agent, Watching())
        monkeypatch.undo()
        assert drive.rounds == (1, 2) and drive.stopped == "budget-spent" and seen == ["me", "me"]
        assert await store.lease(S) is None and driver.lease is None
        assert (await store.audit(S)).ok

    asyncio.run(scenario())


def test_a_leased_drive_stops_before_its_round_while_another_holder_has_the_lease() -> None:
    async def scenario() -> None:
        store = AsyncMemoryStore(clock=ticking())
        runtime, goals = await _goal_service(store)
        await goals.create(goals.agent, "Tidy", max_rounds=2)
        await store.acquire_lease(S, "someone else", 60_000)
        head = await store.head(S)
        drive = await AsyncLeasedDriver(goals, store, holder="me").drive(goals.agent, runtime)
        assert drive.rounds == () and drive.stopped == LeaseHeldError.code and drive.holder == "someone else"
        assert not goals.activation.armed and await store.head(S) == head

    asyncio.run(scenario())


def test_pausing_the_goal_gives_the_lease_back() -> None:
    async def scenario() -> None:
        store = AsyncMemoryStore(clock=ticking())
        _, goals = await _goal_service(store)
        driver = AsyncLeasedDriver(goals, store, holder="me")
        await goals.create(goals.agent, "Tidy", max_rounds=2)
        await driver.take()
        assert (await store.lease(S)) is not None
        await goals.pause(goals.agent)
        await driver.settle()
        assert await store.lease(S) is None and driver.lease is None

    asyncio.run(scenario())


def test_a_round_whose_lease_was_taken_over_stops_the_drive_and_disarms_this_process() -> None:
    async def scenario() -> None:
        now = [1_000]
        store = AsyncMemoryStore(clock=lambda: now[0])
        runtime, goals = await _goal_service(store)
        driver = AsyncLeasedDriver(goals, store, holder="me", ttl_ms=100)
        await goals.create(goals.agent, "Tidy", max_rounds=3)

        class TakenOver:
            async def run_turn(self, text: str, source: MessageSource | None = None) -> object:
                now[0] += 1_000  # our lease expires and another holder takes it
                await store.acquire_lease(S, "someone else", 60_000)
                return await runtime.run_turn(text, source)

        drive = await driver.drive(goals.agent, TakenOver())
        assert drive.rounds == (1,) and drive.stopped == "lease-lost" and not goals.activation.armed
        assert (await store.audit(S)).ok
        lease = await store.lease(S)
        assert lease is not None and lease.holder == "someone else"

    asyncio.run(scenario())


class _ReadFails(AsyncMemoryStore):
    """An async memory store whose event reads fail while ``failing`` is set
    (its loads answer)."""

    failing = False

    async def read(self, session_id: str, after: int = 0) -> tuple[Event, ...]:
        if self.failing:
            raise StorageError("read", "the server went away")
        return await super().read(session_id, after)


class _Reader(Model):
    """``Model`` that keeps what each request's messages said."""

    def __init__(self) -> None:
        super().__init__()
        self.read: list[list[str | None]] = []

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.read.append([m.content for m in request.messages])
        return await super().complete(request)


def test_a_goal_operation_whose_read_again_fails_leaves_the_runtimes_log_as_it_was_fold_and_events_alike() -> None:
    async def scenario() -> None:
        store, model = _ReadFails(clock=ticking()), _Reader()
        runtime = await AsyncRuntime.open(store, S, model, _tools(), clock=ticking())
        goals = AsyncGoalService(runtime.goal_log, "agent-1", lambda: "g1")
        other = await AsyncRuntime.open(store, S, Model(), _tools(), clock=ticking())
        await other.run_turn("another writer first")
        store.failing = True  # the goal's append conflicts; the session's fold is read again, its events not
        with pytest.raises(StorageError):
            await goals.create(goals.agent, "Keep the docs true")
        assert runtime.state.last_seq == 0  # the fold as it was, as the events are
        store.failing = False
        with pytest.raises(ConflictError):  # the other writer's turn, found by the next append
            await runtime.run_turn("mine")
        report = await runtime.run_turn("mine")
        events = await store.read(S)
        assert report.turn == 2 and runtime.state == await store.load(S) == fold_session(events)
        assert "another writer first" in model.read[-1] and "mine" in model.read[-1]

    asyncio.run(scenario())
