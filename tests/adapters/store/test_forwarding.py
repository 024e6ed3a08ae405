"""A store of one's own: a ``ForwardingStore`` subclass that overrides only
``append`` sees every append planfold makes, each one ``AppendRequest``
handed on whole (the caller's fold and the goal lease with it), and keeps
working under the runtime (sync and asyncio), the goal driver's fenced
appends and ``SessionLog``. Anything but a request is refused, and nothing
is written."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from planfold.adapters.llm.script_format import Expectation, ScriptStep
from planfold.adapters.llm.scripted import ScriptedClient
from planfold.adapters.runtime.aio import AsyncRuntime, InThread
from planfold.adapters.runtime.goal_lease import LeasedDrive, LeasedDriver
from planfold.adapters.runtime.goal_lease_aio import AsyncLeasedDriver
from planfold.adapters.runtime.goal_service import AsyncGoalService, GoalService
from planfold.adapters.runtime.loop import Runtime
from planfold.adapters.runtime.tool_runner import ToolRunner
from planfold.adapters.runtime.toolset import default_registry
from planfold.adapters.runtime.workspace import Workspace
from planfold.adapters.store.aio_memory import AsyncMemoryStore
from planfold.adapters.store.aio_threaded import ThreadedStore
from planfold.adapters.store.base import (
    AppendRequest,
    AppendResult,
    ForwardingStore,
    InvalidRequestError,
    Store,
)
from planfold.adapters.store.contract import ManualClock
from planfold.adapters.store.contract_logs import batch_after
from planfold.adapters.store.memory import MemoryStore
from planfold.adapters.store.session_log import SessionLog
from planfold.kernel.log import Draft
from tests.runtime_helpers import say
from tests.storage_helpers import CountingFold

S = "s1"


class Recording(ForwardingStore):
    """What a user writes: a wrapper that overrides ``append`` alone (it
    records each request) and hands the request on whole."""

    def __init__(self, inner: Store) -> None:
        super().__init__(inner)
        self.requests: list[AppendRequest] = []

    def append(self, request: AppendRequest) -> AppendResult:
        self.requests.append(request)
        return self.inner.append(request)


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


def _written_through(wrapper: Recording, store: MemoryStore) -> None:
    """Every event the store holds came through ``wrapper``, and the store's
    projection is the fold of its log."""
    assert wrapper.requests
    assert sum(len(request.events) for request in wrapper.requests) == store.head(S)
    assert store.audit(S).ok


def _tools() -> ToolRunner:
    return ToolRunner(default_registry(), executors=Workspace({}).executors())


def _replies(*texts: str) -> ScriptedClient:
    return ScriptedClient(ScriptStep(say(text), Expectation()) for text in texts)


def test_the_runtime_appends_through_a_wrapper_that_overrides_only_append_with_its_fold(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrapper = Recording(store)
    folds = CountingFold(monkeypatch)
    runtime = Runtime(wrapper, S, _replies("hello"), _tools(), clock=lambda: 1_000)
    runtime.run_turn("go")
    _written_through(wrapper, store)
    assert all(request.folded is not None for request in wrapper.requests) and folds.calls == 0
    assert store.load(S) == runtime.log.state


def test_the_asyncio_runtime_appends_through_a_wrapper_that_overrides_only_append(store: MemoryStore) -> None:
    wrapper = Recording(store)

    async def turn() -> None:
        runtime = AsyncRuntime(wrapper, S, InThread(_replies("hello")), _tools(), clock=lambda: 1_000)
        await runtime.run_turn("go")

    asyncio.run(turn())
    _written_through(wrapper, store)
    assert any(request.folded is not None for request in wrapper.requests)


def _drive_two_rounds(face: str, wrapper: Recording, store: MemoryStore, clock: ManualClock) -> LeasedDrive:
    """A goal of two rounds created and driven under the lease of ``store``
    by a runtime (``face``) over ``wrapper``."""
    model, tools, now = _replies("round one", "round two"), _tools(), lambda: clock.now
    if face == "sync":
        runtime = Runtime(wrapper, S, model, tools, clock=now)
        goals = GoalService(runtime.log, "agent", lambda: "g1")
        goals.create(goals.agent, "two rounds", max_rounds=2)
        return LeasedDriver(goals, store, holder="host", ttl_ms=1_000).drive(goals.agent, runtime)

    async def drive() -> LeasedDrive:
        aio = AsyncRuntime(wrapper, S, InThread(model), tools, clock=now)
        goals = AsyncGoalService(aio.goal_log, "agent", lambda: "g1")
        await goals.create(goals.agent, "two rounds", max_rounds=2)
        fenced = AsyncLeasedDriver(goals, ThreadedStore(store), holder="host", ttl_ms=1_000)
        return await fenced.drive(goals.agent, aio)

    return asyncio.run(drive())


@pytest.mark.parametrize("face", ["sync", "asyncio"])
def test_a_goal_drive_fences_every_round_through_a_wrapper_of_the_runtimes_store(face: str) -> None:
    clock = ManualClock()
    store = MemoryStore(clock=clock)
    wrapper = Recording(store)
    drive = _drive_two_rounds(face, wrapper, store, clock)
    assert drive.rounds == (1, 2) and drive.stopped == "budget-spent"
    created, *rounds = wrapper.requests
    assert created.lease is None and [e.kind for e in created.events] == ["goal/change"]
    assert rounds and all(r.lease is not None and r.lease.holder == "host" for r in rounds)
    assert all(r.folded is not None for r in rounds)  # the fold goes along with the fence
    _written_through(wrapper, store)
    assert store.lease(S) is None  # given back when the goal stopped


def test_a_session_logs_append_reaches_the_store_through_a_wrapper_with_its_fold(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrapper = Recording(store)
    log = SessionLog(wrapper, S, lambda: 1_000)
    folds = CountingFold(monkeypatch)
    written = log.append([Draft("user/message", {"text": "hello", "source": None})], "k1")
    (request,) = wrapper.requests
    assert (request.session_id, request.expected_seq, tuple(request.events)) == (S, 0, written)
    assert request.idempotency_key == "k1" and request.folded is not None and request.lease is None
    assert request.folded.after is log.state and folds.calls == 0
    assert store.load(S) == log.state and store.audit(S).ok


@pytest.mark.parametrize(
    "request_",
    [(S, 0, batch_after(0, 1)), None, {"session_id": S, "expected_seq": 0, "events": batch_after(0, 1)}],
    ids=["a-tuple", "none", "a-dict"],
)
def test_anything_but_a_request_is_refused_and_nothing_is_written(store: MemoryStore, request_: object) -> None:
    with pytest.raises(InvalidRequestError, match="an append takes an AppendRequest"):
        store.append(request_)  # type: ignore[arg-type]
    assert store.head(S) == 0 and store.session_ids() == ()

    async def refused() -> None:
        async with AsyncMemoryStore() as aio:
            with pytest.raises(InvalidRequestError, match="an append takes an AppendRequest"):
                await aio.append(request_)  # type: ignore[arg-type]
            assert await aio.head(S) == 0

    asyncio.run(refused())


def test_a_wrapper_changes_one_field_and_hands_on_the_rest_of_the_request(store: MemoryStore) -> None:

    class Keyed(ForwardingStore):
        """Gives every append a key of its own (so a retry is answered once)."""

        def append(self, request: AppendRequest) -> AppendResult:
            return self.inner.append(replace(request, idempotency_key=f"key-{request.expected_seq}"))

    keyed = Keyed(store)
    first = keyed.append(AppendRequest(S, 0, batch_after(0, 2)))
    again = keyed.append(AppendRequest(S, 0, batch_after(0, 2)))
    assert (first.replayed, again) == (False, AppendResult(S, 1, 2, replayed=True))
    assert store.head(S) == 2
