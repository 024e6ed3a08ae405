"""Every driver of the turn reducer under faults: appends that fail before
they are written (``not-applied``) or after (``unknown``), model errors,
tools that raise, asyncio tasks cancelled at any await, and crashes (a new
driver built from the log). After every step the stored log audits clean,
the driver never runs ahead of the store, and a driver rebuilt from the log
agrees with the running one once it has caught up."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import pytest
from hypothesis import note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from planfold.adapters.llm.model import ChatRequest, ChatResponse, ModelBadRequestError, ModelError, ModelTimeoutError
from planfold.adapters.runtime.aio import AsyncRuntime
from planfold.adapters.runtime.loop import Runtime
from planfold.adapters.runtime.tool_runner import ToolRunner
from planfold.adapters.runtime.toolset import default_registry
from planfold.adapters.store.aio_memory import AsyncMemoryStore
from planfold.adapters.store.base import (
    AppendRequest,
    AppendResult,
    ForwardingStore,
    StorageError,
    Store,
)
from planfold.adapters.store.memory import MemoryStore
from planfold.kernel.log import Event
from planfold.kernel.payload import JSON
from planfold.kernel.session import SessionState
from planfold.kernel.turn import CALL_INTERRUPTED
from tests.runtime_helpers import call, say, ticking

S = "s1"

#: what the model answers, by name: a reply, a tool call, or an error
REPLIES = ("say", "read", "boom", "timeout", "refused", "cut")
#: what the store does with an append: write it, fail before writing, or write and fail
FAULTS = (None, "not-applied", "unknown")


def _fault(fault: str) -> StorageError:
    return StorageError("append", f"injected ({fault})", outcome="not-applied" if fault == "not-applied" else "unknown")


class Faults:
    """The faults the next appends meet, in order (``None``: none), and the
    append (counted from 1) during which ``cancel`` is called, if any."""

    def __init__(self) -> None:
        self.next: list[str | None] = []
        self.injected = 0
        self.cancel_at: int | None = None
        self.cancel: Callable[[], None] = lambda: None
        self.appends = 0

    def count(self) -> None:
        self.appends += 1
        if self.appends == self.cancel_at:
            self.cancel()

    def take(self) -> str | None:
        fault = self.next.pop(0) if self.next else None
        self.injected += fault is not None
        return fault


class FaultyStore(ForwardingStore):
    """A synchronous store whose appends meet ``faults``."""

    def __init__(self, inner: Store, faults: Faults) -> None:
        super().__init__(inner)
        self.faults = faults

    def append(self, request: AppendRequest) -> AppendResult:
        self.faults.count()
        fault = self.faults.take()
        if fault == "not-applied":
            raise _fault(fault)
        result = self.inner.append(request)
        if fault == "unknown":
            raise _fault(fault)
        return result


class FaultyAsyncStore(AsyncMemoryStore):
    """An async memory store whose appends meet ``faults`` and yield to the
    loop before and after writing (so a task can be cancelled there)."""

    def __init__(self, faults: Faults) -> None:
        super().__init__(clock=ticking())
        self.faults = faults

    async def _append(self, request: AppendRequest) -> AppendResult:
        self.faults.count()
        await asyncio.sleep(0)
        fault = self.faults.take()
        if fault == "not-applied":
            raise _fault(fault)
        result = await super()._append(request)
        await asyncio.sleep(0)
        if fault == "unknown":
            raise _fault(fault)
        return result


class Model:
    """A model answering from a script (then ``say``), sync and async."""

    def __init__(self) -> None:
        self.script: list[str] = []
        self.asked = 0

    def _answer(self) -> ChatResponse:
        self.asked += 1
        name = self.script.pop(0) if self.script else "say"
        if name == "read":
            return call("read_file", {"path": "a.txt"})
        if name == "boom":
            return call("read_file", {"path": "boom.txt"})
        if name == "timeout":
            raise ModelTimeoutError(1.0, "injected")
        if name == "refused":
            raise ModelBadRequestError("injected")
        if name == "cut":
            return ChatResponse("cut", (), "length")
        return say("done")

    def complete(self, request: ChatRequest) -> ChatResponse:
        return self._answer()


class AsyncModel(Model):
    async def complete(self, request: ChatRequest) -> ChatResponse:  # type: ignore[override]
        await asyncio.sleep(0)
        return self._answer()


def _read(arguments: Mapping[str, object]) -> dict[str, JSON]:
    if arguments.get("path") == "boom.txt":
        raise RuntimeError("the tool broke")
    return {"content": "A"}


async def _read_async(arguments: Mapping[str, object]) -> dict[str, JSON]:
    await asyncio.sleep(0)
    return _read(arguments)


def _tools() -> ToolRunner:
    return ToolRunner(default_registry(), executors={"read_file": _read}, async_executors={"read_file": _read_async})


class DriverUnderFaults(RuleBasedStateMachine):
    """One session driven by one driver; a subclass says which and how."""

    def __init__(self) -> None:
        super().__init__()
        self.faults = Faults()
        self.model = Model()
        self.setup()
        self.rebuild()

    # what a subclass supplies
    def setup(self) -> None:
        raise NotImplementedError

    def rebuild(self) -> None:
        raise NotImplementedError

    def turn(self, cancel_after: int | None) -> None:
        raise NotImplementedError

    def choose(self, active: bool) -> None:
        raise NotImplementedError

    def stored(self) -> tuple[tuple[Event, ...], bool, SessionState]:
        """The stored events, whether they audit clean, and their load."""
        raise NotImplementedError

    def driver_state(self) -> SessionState:
        raise NotImplementedError

    def driver_stage(self) -> str:
        raise NotImplementedError

    def in_doubt(self) -> bool:
        raise NotImplementedError

    # the rules
    @rule(
        script=st.lists(st.sampled_from(REPLIES), max_size=4),
        faults=st.lists(st.sampled_from(FAULTS), max_size=3),
        cancel_after=st.none() | st.integers(0, 30),
    )
    def run_a_turn(self, script: list[str], faults: list[str | None], cancel_after: int | None) -> None:
        note(f"a turn: model {script}, appends {faults}, cancelled after {cancel_after} loop steps")
        self.model.script = list(script)
        self.faults.next = list(faults)
        try:
            self.turn(cancel_after)
        except StorageError:
            assert self.faults.injected
        except asyncio.CancelledError:
            assert cancel_after is not None
        self.faults.next = []

    @rule(active=st.booleans(), fault=st.sampled_from(FAULTS))
    def choose_plan_mode(self, active: bool, fault: str | None) -> None:
        note(f"the user chooses plan mode {active}; the append meets {fault}")
        self.faults.next = [fault]
        try:
            self.choose(active)
        except StorageError:
            assert fault is not None
        self.faults.next = []

    @rule()
    def crash(self) -> None:
        note("the process crashes: a new driver is built from the log")
        self.rebuild()

    @invariant()
    def the_log_audits_clean(self) -> None:
        _, clean, _ = self.stored()
        assert clean

    @invariant()
    def the_driver_never_runs_ahead_of_the_store(self) -> None:
        _, _, loaded = self.stored()
        assert self.driver_state().last_seq <= loaded.last_seq

    @invariant()
    def the_driver_knows_what_a_driver_rebuilt_from_the_log_knows_unless_an_append_is_in_doubt(self) -> None:
        _, _, loaded = self.stored()
        if not self.in_doubt():
            assert self.driver_state() == loaded
            assert self.driver_stage() == ("turn" if loaded.turns.open else "idle")

    @invariant()
    def every_open_call_of_a_closed_turn_is_answered(self) -> None:
        events, _, loaded = self.stored()
        opened = sum(1 for e in events if e.kind == "turn/start")
        ended = sum(1 for e in events if e.kind == "turn/end")
        assert opened - ended == (1 if loaded.turns.open else 0)

    def catch_up_and_compare(self) -> None:
        """A turn after any fault finds out from the store where it stands:
        the driver then knows what a driver rebuilt from the log knows."""
        events, _, loaded = self.stored()
        self.faults.next = []
        self.model.script = []
        before = len(events)
        self.turn(None)
        events, clean, loaded = self.stored()
        assert clean
        assert self.driver_state() == loaded
        assert self.driver_stage() == "idle" and not loaded.turns.open
        # a turn left open by a fault is closed by this one, its calls answered
        fresh = events[before:]
        assert [e.kind for e in fresh][-1] == "turn/end"
        opened_calls = {e.payload["call_id"] for e in events if e.kind == "tool/call"}
        answered = {e.payload["call_id"] for e in events if e.kind == "tool/result"}
        assert opened_calls <= answered, (opened_calls - answered, CALL_INTERRUPTED)

    def teardown(self) -> None:
        self.catch_up_and_compare()


class SyncRuntimeUnderFaults(DriverUnderFaults):
    def setup(self) -> None:
        self.inner = MemoryStore()
        self.store = FaultyStore(self.inner, self.faults)

    def rebuild(self) -> None:
        self.runtime = Runtime(self.store, S, self.model, _tools(), clock=ticking())

    def turn(self, cancel_after: int | None) -> None:
        self.runtime.run_turn("go")

    def choose(self, active: bool) -> None:
        self.runtime.choose_plan_mode(active)

    def stored(self) -> tuple[tuple[Event, ...], bool, SessionState]:
        return self.inner.read(S), self.inner.audit(S).ok, self.inner.load(S)

    def driver_state(self) -> SessionState:
        return self.runtime.machine.state

    def driver_stage(self) -> str:
        return self.runtime.machine.stage

    def in_doubt(self) -> bool:
        return self.runtime.machine.in_doubt


class AsyncRuntimeUnderFaults(DriverUnderFaults):
    """The asyncio runtime over the async memory store: a turn is a task that
    may be cancelled after any number of loop steps."""

    def setup(self) -> None:
        self.model = AsyncModel()
        self.loop = asyncio.new_event_loop()
        self.astore = FaultyAsyncStore(self.faults)

    def rebuild(self) -> None:
        self.runtime = self.loop.run_until_complete(
            AsyncRuntime.open(self.astore, S, self.model, _tools(), clock=ticking())  # type: ignore[arg-type]
        )

    async def _turn(self, cancel_after: int | None) -> None:
        task = asyncio.ensure_future(self.runtime.run_turn("go"))
        if cancel_after is not None:
            for _ in range(cancel_after):
                if task.done():
                    break
                await asyncio.sleep(0)
            task.cancel()
        await task

    def turn(self, cancel_after: int | None) -> None:
        self.loop.run_until_complete(self._turn(cancel_after))

    def choose(self, active: bool) -> None:
        self.loop.run_until_complete(self.runtime.choose_plan_mode(active))

    async def _stored(self) -> tuple[tuple[Event, ...], bool, SessionState]:
        return await self.astore.read(S), (await self.astore.audit(S)).ok, await self.astore.load(S)

    def stored(self) -> tuple[tuple[Event, ...], bool, SessionState]:
        return self.loop.run_until_complete(self._stored())

    def driver_state(self) -> SessionState:
        return self.runtime.state

    def driver_stage(self) -> str:
        return self.runtime.stage

    def in_doubt(self) -> bool:
        return self.runtime.in_doubt

    def teardown(self) -> None:
        try:
            super().teardown()
        finally:
            self.loop.close()


class AsyncRuntimeOverSyncStoreUnderFaults(AsyncRuntimeUnderFaults):
    """The asyncio runtime over a synchronous store (each append in a thread)."""

    def setup(self) -> None:
        super().setup()
        self.inner = MemoryStore()
        self.store = FaultyStore(self.inner, self.faults)

    def rebuild(self) -> None:
        assert isinstance(self.model, AsyncModel)
        self.runtime = AsyncRuntime(self.store, S, self.model, _tools(), clock=ticking())

    async def _turn(self, cancel_after: int | None) -> None:
        """The task is cancelled from within an append (its worker thread),
        so that the cancellation lands while the append is in flight: loop
        steps are no clock while threads run."""
        task = asyncio.ensure_future(self.runtime.run_turn("go"))
        loop = asyncio.get_running_loop()
        self.faults.appends = 0
        self.faults.cancel_at = None if cancel_after is None else cancel_after % 6 + 1

        def cancel() -> None:
            loop.call_soon_threadsafe(task.cancel)

        self.faults.cancel = cancel
        try:
            await task
        finally:
            self.faults.cancel_at = None

    def stored(self) -> tuple[tuple[Event, ...], bool, SessionState]:
        return self.inner.read(S), self.inner.audit(S).ok, self.inner.load(S)


#: small examples; the number of them is the profile's (tests/conftest.py)
_small = settings(stateful_step_count=8, deadline=None)
TestSyncRuntimeUnderFaults = SyncRuntimeUnderFaults.TestCase
TestSyncRuntimeUnderFaults.settings = _small
TestAsyncRuntimeUnderFaults = AsyncRuntimeUnderFaults.TestCase
TestAsyncRuntimeUnderFaults.settings = _small
TestAsyncRuntimeOverSyncStoreUnderFaults = AsyncRuntimeOverSyncStoreUnderFaults.TestCase
TestAsyncRuntimeOverSyncStoreUnderFaults.settings = _small


def test_a_model_error_that_is_not_recoverable_ends_the_turn_and_the_log_audits_clean() -> None:
    machine = SyncRuntimeUnderFaults()
    machine.model.script = ["refused"]
    machine.turn(None)
    events, clean, loaded = machine.stored()
    assert clean and not loaded.turns.open
    assert isinstance(ModelBadRequestError("x"), ModelError) and events[-1].kind == "turn/end"


@pytest.mark.parametrize("fault", ["not-applied", "unknown"])
def test_an_asyncio_turn_cancelled_mid_append_leaves_the_append_whole_and_the_next_turn_finds_out(fault: str) -> None:
    machine = AsyncRuntimeUnderFaults()
    machine.rebuild()
    machine.model.script = ["read"]
    task: list[asyncio.Future[object]] = []
    machine.faults.next = [None, fault]
    machine.faults.cancel_at = 2  # the append of the first request's header

    async def turn() -> None:
        task.append(asyncio.ensure_future(machine.runtime.run_turn("go")))
        await task[0]

    def cancel() -> None:
        task[0].cancel()

    machine.faults.cancel = cancel
    with pytest.raises(asyncio.CancelledError):
        machine.loop.run_until_complete(turn())
    machine.faults.cancel_at = None
    events, clean, loaded = machine.stored()
    assert clean and [e.kind for e in events][-1] == ("request/header" if fault == "unknown" else "user/message")
    assert machine.runtime.state.last_seq == 2 and machine.runtime.in_doubt == (fault == "unknown")
    machine.turn(None)
    events, clean, loaded = machine.stored()
    assert clean and machine.runtime.state == loaded and not loaded.turns.open
    assert [e.kind for e in events].count("turn/end") == 2  # the cancelled turn, closed by the next
    machine.loop.close()
