"""The step machine: what it asks for next, what it refuses, and where it
stands after a failed write, a crash or a cancelled task."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import get_args

import pytest
from hypothesis import note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from benchmarks.workloads import session_events
from planfold.adapters.llm.model import ChatRequest, ChatResponse, ModelTimeoutError
from planfold.adapters.runtime.aio import AsyncRuntime
from planfold.adapters.runtime.machine import (
    Action,
    AskModel,
    OutOfOrderError,
    Review,
    RunTool,
    StepMachine,
    TurnOver,
    TurnReport,
    UnitStore,
)
from planfold.adapters.runtime.review import approve
from planfold.adapters.runtime.tool_runner import ToolRunner
from planfold.adapters.runtime.toolset import default_registry
from planfold.adapters.runtime.workspace import Workspace
from planfold.adapters.serve.client import RemoteError
from planfold.adapters.serve.server import Server
from planfold.adapters.store.base import (
    AppendRequest,
    AppendResult,
    Folded,
    ForwardingStore,
    StorageError,
    Store,
)
from planfold.adapters.store.memory import MemoryStore
from planfold.adapters.store.session_log import LogSealedError
from planfold.adapters.store.sqlite import SqliteStore
from planfold.kernel.errors import KernelError
from planfold.kernel.log import Event
from planfold.kernel.session import SessionState, fold_more, fold_session
from planfold.kernel.turn import CALL_INTERRUPTED
from tests.adapters.serve.test_host import Host
from tests.adapters.serve.test_host import S as HOST_SESSION
from tests.runtime_helpers import batch, call, exit_plan, run_turns, say, ticking
from tests.storage_helpers import CountingFold

S = "s1"


class Outage(ForwardingStore):
    """A store that can be taken down: appends fail with an ``unknown``
    outcome, loads and reads fail as well. With ``falls`` set, the next
    append is written and then the store goes down before it answers."""

    def __init__(self, inner: Store) -> None:
        super().__init__(inner)
        self.down = False
        self.falls = False
        self.appends = 0

    def append(self, request: AppendRequest) -> AppendResult:
        if self.down:
            raise StorageError("append", "the server went away", outcome="unknown")
        self.appends += 1
        result = self.inner.append(request)
        if self.falls:
            self.falls, self.down = False, True
            raise StorageError("append", "the server went away before it answered", outcome="unknown")
        return result

    def load(self, session_id: str, *, incremental: bool = False) -> SessionState:
        if self.down:
            raise StorageError("load", "the server went away")
        return self.inner.load(session_id, incremental=incremental)

    def read(self, session_id: str, after: int = 0) -> tuple[Event, ...]:
        if self.down:
            raise StorageError("read", "the server went away")
        return self.inner.read(session_id, after)


def _tools(workspace: Workspace | None = None) -> ToolRunner:
    return ToolRunner(default_registry(), executors=(workspace or Workspace({"a.txt": "A"})).executors())


def _machine(store: Store) -> StepMachine:
    return StepMachine(store, S, _tools(), clock=ticking())


def _planned_turn(machine: StepMachine) -> list[Action]:
    """A turn in plan mode: read a file, propose a plan, have it approved,
    reply; every action the machine asked for, in order."""
    machine.choose(True)
    machine.start_turn("plan it")
    actions = [machine.next_action()]
    machine.reply(batch(call("read_file", {"path": "a.txt"})))
    actions.append(machine.next_action())
    run = actions[-1]
    assert isinstance(run, RunTool)
    machine.tool_result(run.call.id, True, "A")
    actions.append(machine.next_action())
    machine.reply(exit_plan())
    actions.append(machine.next_action())
    review = actions[-1]
    assert isinstance(review, Review)
    machine.review_answer(review.call.id, approve())
    actions.append(machine.next_action())
    machine.reply(say("done"))
    actions.append(machine.next_action())
    return actions


def test_a_turn_asks_the_model_runs_the_tools_and_asks_for_reviews_in_order() -> None:
    machine = _machine(MemoryStore())
    first, run, after_tool, review, after_review, over = _planned_turn(machine)
    assert isinstance(first, AskModel) and (first.step, first.attempt) == (1, 0)
    assert isinstance(run, RunTool) and run.call.name == "read_file"
    assert isinstance(after_tool, AskModel)
    assert isinstance(review, Review) and review.request.plan.startswith("# ")
    assert isinstance(after_review, AskModel)
    assert isinstance(over, TurnOver) and over.report.ended_by == "reply" and over.report.steps == 3
    assert machine.stage == "idle" and not machine.state.turns.open


def test_an_answer_that_does_not_fit_the_action_asked_for_is_refused_and_changes_nothing() -> None:
    machine = _machine(MemoryStore())
    machine.start_turn("go")
    assert isinstance(machine.next_action(), AskModel)
    before = machine.log.last_seq
    with pytest.raises(OutOfOrderError) as refused:
        machine.tool_result("c1", True, "x")
    assert refused.value.code == "out-of-order" and refused.value.stage == "step"
    machine.reply(batch(call("read_file", {"path": "a.txt"}, "c1"), call("read_file", {"path": "a.txt"}, "c2")))
    action = machine.next_action()
    assert isinstance(action, RunTool)
    after_reply = machine.log.last_seq
    with pytest.raises(OutOfOrderError) as wrong:
        machine.tool_result("c2", True, "x")
    assert wrong.value.code == "unexpected-call"
    with pytest.raises(LogSealedError):  # while a tool runs, nothing but its result
        machine.review_answer("c1", approve())
    with pytest.raises(LogSealedError):
        machine.reply(say("again"))
    assert machine.log.last_seq == after_reply > before and machine.stage == "execute"


def test_a_model_failure_proposes_the_same_step_again_while_the_budget_lasts() -> None:
    machine = _machine(MemoryStore())
    machine.start_turn("go")
    assert isinstance(machine.next_action(), AskModel)
    assert machine.model_failed(ModelTimeoutError(1.0))
    again = machine.next_action()
    assert isinstance(again, AskModel) and (again.step, again.attempt) == (1, 1)
    assert machine.model_failed(ModelTimeoutError(1.0))
    assert isinstance(machine.next_action(), AskModel)
    assert not machine.model_failed(ModelTimeoutError(1.0))  # the budget of two retries is spent
    over = machine.next_action()
    assert isinstance(over, TurnOver) and over.report.ended_by == "model-error" and over.report.retries == 2


@pytest.mark.parametrize("when", ["start", "reply", "result"])
def test_a_failed_write_leaves_the_machine_where_the_store_is_and_raises_the_writes_own_error(when: str) -> None:
    store = Outage(MemoryStore())
    machine = _machine(store)
    if when != "start":
        machine.start_turn("go")
        assert isinstance(machine.next_action(), AskModel)
    if when == "result":
        machine.reply(batch(call("read_file", {"path": "a.txt"})))
        assert isinstance(machine.next_action(), RunTool)
    stage, last = machine.stage, machine.log.last_seq
    store.down = True  # the reload fails too
    with pytest.raises(StorageError) as failed:
        if when == "start":
            machine.start_turn("go")
        elif when == "reply":
            machine.reply(say("done"))
        else:
            machine.tool_result(machine.awaiting_call or "", True, "A")
    assert (failed.value.operation, failed.value.outcome) == ("append", "unknown")
    assert (machine.stage, machine.log.last_seq) == (stage, last)
    store.down = False
    assert machine.log.last_seq == store.head(S)
    assert machine.state == fold_session(store.read(S))


class _Once:
    """A model that does ``first`` at its first request, then says "done"."""

    def __init__(self, first: Callable[[], object] = lambda: None) -> None:
        self.first: Callable[[], object] | None = first

    def complete(self, request: ChatRequest) -> ChatResponse:
        first, self.first = self.first, None
        if first is not None:
            first()
        return say("done")


def _two_turns(driver: str, store: Store, model: _Once, between: Callable[[], object]) -> list[object]:
    """Two turns on one runtime of ``driver`` (``run_turns``)."""
    return run_turns(driver, store, model, _tools(), ("turn 0", "turn 1"), between=between)


@pytest.mark.parametrize("driver", ["sync", "asyncio"])
def test_a_turn_abandoned_while_its_append_is_in_doubt_does_not_stop_the_next_turn_once_the_store_is_back(
    driver: str,
) -> None:
    store = Outage(MemoryStore())

    def fall() -> None:
        store.falls = True  # the reply's append is written, then the store goes down

    def back() -> None:
        store.down = False

    failed, report = _two_turns(driver, store, _Once(fall), back)
    assert isinstance(failed, StorageError) and failed.outcome == "unknown"
    assert isinstance(report, TurnReport), report
    assert report.closed_turn == 1 and report.ended_by == "reply"
    assert store.load(S) == fold_session(store.read(S)) and store.audit(S).ok


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_a_machines_appends_reach_the_store_with_their_fold_so_the_store_folds_none_of_them_again(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MemoryStore() if backend == "memory" else SqliteStore(tmp_path / "machine.db")
    folds = CountingFold(monkeypatch)
    machine = _machine(store)
    assert isinstance(_planned_turn(machine)[-1], TurnOver)
    assert store.head(S) > 10 and folds.calls == 0
    assert store.audit(S).ok
    assert store.load(S) == fold_session(store.read(S)) == machine.state
    store.close()


def test_a_unit_of_work_hands_the_store_one_fold_only_when_its_appends_folds_form_one_chain(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, events = MemoryStore(), list(session_events(12))
    unit = UnitStore(store, S)
    folds = CountingFold(monkeypatch)
    unit.begin()
    empty = store.load(S)
    first = fold_more(empty, events[:3])
    unit.append(AppendRequest(S, 0, events[:3], None, Folded(empty, first)))
    unit.append(AppendRequest(S, 3, events[3:6], None, Folded(first, fold_more(first, events[3:6]))))
    unit.commit()
    assert (store.head(S), folds.calls) == (6, 0)
    unit.begin()
    stored = store.load(S)
    unit.append(AppendRequest(S, 6, events[6:9], None, Folded(stored, fold_more(stored, events[6:9]))))
    unit.append(AppendRequest(S, 9, events[9:12]))  # no fold: the chain is broken, the store folds the unit itself
    unit.commit()
    assert (store.head(S), folds.calls) == (12, 1)
    assert store.audit(S).ok and store.load(S) == fold_session(events)


def test_serve_during_a_store_outage_reports_the_appends_own_error_and_never_runs_ahead_of_the_store() -> None:
    store = Outage(MemoryStore())
    host = Host(Server(store, ticking()))
    store.down = True
    with pytest.raises(RemoteError) as failed:
        host("turn/start", text="during the outage")
    assert failed.value.data["outcome"] == "unknown" and failed.value.data["operation"] == "append"
    store.down = False
    read = host("session/read")
    assert (read["last_seq"], read["turn_open"]) == (store.head(HOST_SESSION), False)
    started = host("turn/start", text="after the outage")
    assert started["turn"] == 1


class _Hanging:
    """An async model that never answers until it is cancelled."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.asked.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


def test_a_cancelled_asyncio_turn_leaves_a_log_the_next_turn_closes_as_a_killed_processs() -> None:
    store = MemoryStore()

    async def scenario() -> None:
        model = _Hanging()
        runtime = AsyncRuntime(store, S, model, _tools(), clock=ticking())
        task = asyncio.create_task(runtime.run_turn("go"))
        await model.asked.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    left = store.read(S)
    assert fold_session(left).turns.open and left[-1].kind == "request/header"
    machine = _machine(store)
    report = machine.start_turn("again")
    assert report.closed_turn == 1 and [e.kind for e in store.read(S)[len(left):]][:1] == ["turn/end"]


def test_a_synchronous_turn_interrupted_by_the_user_is_left_open_and_the_next_turn_closes_it() -> None:
    store = MemoryStore()

    def interrupt() -> None:
        raise KeyboardInterrupt

    interrupted, report = _two_turns("sync", store, _Once(interrupt), lambda: None)
    assert isinstance(interrupted, KeyboardInterrupt)
    assert isinstance(report, TurnReport), report
    assert report.closed_turn == 1 and report.ended_by == "reply"
    assert [e.kind for e in store.read(S)].count("turn/end") == 2 and store.audit(S).ok


# --------------------------------------------------------------------------
# Crashes and cancellations, in lockstep with a machine rebuilt from the log


class _Crash(BaseException):
    """The process died during a write."""


class CrashingStore(ForwardingStore):
    """A store whose next append can be the one the process dies in: before
    it is written, or after (written, never acknowledged)."""

    def __init__(self, inner: Store) -> None:
        super().__init__(inner)
        self.crash: str | None = None

    def append(self, request: AppendRequest) -> AppendResult:
        crash, self.crash = self.crash, None
        if crash == "before":
            raise _Crash
        result = self.inner.append(request)
        if crash == "after":
            raise _Crash
        return result


class CrashingMachine(RuleBasedStateMachine):
    """A random session driven through one machine, which is killed (at any
    write) or has its turn abandoned (a cancelled task) now and then; after
    every rule, a machine built afresh from the store knows what the running
    one knows."""

    def __init__(self) -> None:
        super().__init__()
        self.store = CrashingStore(MemoryStore())
        self.machine = _machine(self.store)
        #: the model: whether the running machine opened the turn that is open
        self.mine = False

    def _answer(self, action: object, choice: int) -> None:
        m = self.machine
        if isinstance(action, AskModel):
            replies = [say("done"), batch(call("read_file", {"path": "a.txt"})), ChatResponse("cut", (), "length")]
            m.reply(replies[choice % len(replies)])
        elif isinstance(action, RunTool):
            m.tool_result(action.call.id, choice % 2 == 0, "A")
        elif isinstance(action, Review):
            m.review_answer(action.call.id, approve())

    @rule(text=st.sampled_from(["go", "more", "/plan"]))
    def start_a_turn(self, text: str) -> None:
        note(f"start a turn with {text!r} at stage {self.machine.stage} (own turn open: {self.mine})")
        if self.mine:
            before = self.store.head(S)
            with pytest.raises(OutOfOrderError):
                self.machine.start_turn(text)
            assert self.store.head(S) == before
            return
        self.machine.start_turn(text)
        self.mine = True

    @precondition(lambda self: self.machine.stage not in ("idle",))
    @rule(choice=st.integers(0, 5))
    def answer_the_next_action(self, choice: int) -> None:
        try:
            action = self.machine.next_action()
        except OutOfOrderError:
            return
        note(f"answer {type(action).__name__} with choice {choice}")
        if isinstance(action, TurnOver):
            self.mine = False
        self._answer(action, choice)

    @rule(active=st.booleans())
    def choose_plan_mode(self, active: bool) -> None:
        note(f"the user chooses plan mode {active}")
        self.machine.choose(active)

    @rule()
    def kill_the_process(self) -> None:
        note(f"the process is killed at seq {self.store.head(S)}")
        self.machine = _machine(self.store)
        self.mine = False

    @precondition(lambda self: self.machine.stage != "idle")
    @rule(when=st.sampled_from(["before", "after"]), choice=st.integers(0, 5))
    def the_process_dies_in_its_next_write(self, when: str, choice: int) -> None:
        note(f"the process dies {when} its next write (choice {choice})")
        self.store.crash = when
        try:
            action = self.machine.next_action()
            self._answer(action, choice)
        except (_Crash, OutOfOrderError):
            pass
        self.store.crash = None
        self.machine = _machine(self.store)
        self.mine = False

    @rule()
    def cancel_the_task(self) -> None:
        note("the turn's task is cancelled")
        self.machine.abandon()
        self.mine = False

    @invariant()
    def the_machine_never_runs_ahead_of_the_store(self) -> None:
        assert self.machine.log.last_seq == self.store.head(S)

    @invariant()
    def a_machine_rebuilt_from_the_log_knows_what_the_running_one_knows(self) -> None:
        rebuilt = _machine(self.store)
        assert rebuilt.state == self.machine.state

    @invariant()
    def the_stored_log_folds_strictly(self) -> None:
        fold_session(self.store.read(S))

    @invariant()
    def every_turn_opened_after_a_crash_closes_the_one_left_open(self) -> None:
        state = self.machine.state
        events = self.store.read(S)
        opened = sum(1 for e in events if e.kind == "turn/start")
        ended = sum(1 for e in events if e.kind == "turn/end")
        assert opened - ended == (1 if state.turns.open else 0)
        interrupted = [e for e in events if e.kind == "tool/result" and CALL_INTERRUPTED in str(e.payload)]
        assert all(e.seq > 0 for e in interrupted)


TestCrashingMachine = CrashingMachine.TestCase
TestCrashingMachine.settings = settings(max_examples=40, stateful_step_count=30, deadline=None)


def test_no_kernel_refusal_escapes_a_machine_started_on_an_empty_store() -> None:
    machine = _machine(MemoryStore())
    with pytest.raises(OutOfOrderError):
        machine.next_action()
    assert not isinstance(OutOfOrderError("x", "idle"), KernelError)


def test_the_tables_the_readme_picture_is_drawn_from_name_real_operations_and_drivers() -> None:
    import importlib  # noqa: PLC0415

    from planfold.adapters.runtime.machine import ANSWERS, DRIVERS, Action  # noqa: PLC0415

    assert set(ANSWERS) == set(get_args(Action))
    for answers in ANSWERS.values():
        assert all(callable(getattr(StepMachine, name, None)) for name in answers)
    for module, name, _ in DRIVERS:
        driver = getattr(importlib.import_module(f"planfold.{module}"), name)
        # every driver runs over the kernel's turn reducer: itself, or through a StepMachine
        from planfold.kernel import step  # noqa: PLC0415

        module_of = importlib.import_module(f"planfold.{module}")
        assert getattr(module_of, "step", None) is step or "machine" in driver.__init__.__code__.co_names


@pytest.mark.parametrize("driver", ["sync", "asyncio"])
def test_a_turn_whose_start_is_in_doubt_does_not_stop_the_next_turn_once_the_store_is_back(driver: str) -> None:
    store = Outage(MemoryStore())
    store.falls = True  # the turn's start is written, then the store goes down before it answers

    def back() -> None:
        store.down = False

    failed, report = _two_turns(driver, store, _Once(), back)
    assert isinstance(failed, StorageError) and failed.outcome == "unknown"
    assert isinstance(report, TurnReport), report
    assert report.turn == 2 and report.closed_turn == 1 and report.ended_by == "reply"
    assert store.load(S) == fold_session(store.read(S)) and store.audit(S).ok


class _Interrupted(ForwardingStore):
    """A store that writes the first append, then the user presses Ctrl-C
    before it answers."""

    def __init__(self, inner: Store) -> None:
        super().__init__(inner)
        self.interrupt = True

    def append(self, request: AppendRequest) -> AppendResult:
        result = self.inner.append(request)
        if self.interrupt:
            self.interrupt = False
            raise KeyboardInterrupt
        return result


def test_a_ctrl_c_while_a_turn_starts_leaves_the_next_turn_to_close_it() -> None:
    store = _Interrupted(MemoryStore())
    failed, report = _two_turns("sync", store, _Once(), lambda: None)
    assert isinstance(failed, KeyboardInterrupt)
    assert isinstance(report, TurnReport), report
    assert report.turn == 2 and report.closed_turn == 1 and report.ended_by == "reply"
    assert store.load(S) == fold_session(store.read(S)) and store.audit(S).ok


class _Replying:
    """An async model that lets other tasks run before it answers ``ok``."""

    async def complete(self, request: ChatRequest) -> ChatResponse:
        await asyncio.sleep(0)
        return ChatResponse("ok", (), "stop")


def test_an_asyncio_runtime_runs_contending_turns_under_one_event_loop_after_another() -> None:
    store = MemoryStore()
    runtime = AsyncRuntime(store, S, _Replying(), _tools(), clock=ticking())

    async def two_turns() -> list[str | None]:
        # the second turn waits for the first: the runtime's locks are waited on under this loop
        reports = await asyncio.gather(runtime.run_turn("one"), runtime.run_turn("two"))
        return [report.reply for report in reports]

    assert asyncio.run(two_turns()) == ["ok", "ok"]
    assert asyncio.run(two_turns()) == ["ok", "ok"]
    state = fold_session(store.read(S))
    assert state.turns.turn == 4 and not state.turns.open
