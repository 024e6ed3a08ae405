"""Driving one goal from several processes: the goal lease.

At most one process drives a goal's rounds: it holds the session's lease and
its rounds' appends are fenced by it. Another process is refused (and
disarmed) while the lease is live; it takes over only once the lease has
expired and a human has resumed it; the lease is given back when the goal
stops, is paused, completed or blocked. No round is ever appended twice.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import signal
import time
from multiprocessing.connection import Connection
from typing import Any

import pytest

from planfold.adapters.llm.script_format import Expectation, ScriptStep
from planfold.adapters.llm.scripted import ScriptedClient
from planfold.adapters.runtime.aio import AsyncRuntime, InThread
from planfold.adapters.runtime.goal_lease import LeasedDriver
from planfold.adapters.runtime.goal_lease_aio import AsyncLeasedDriver
from planfold.adapters.runtime.goal_service import AsyncGoalService, GoalService
from planfold.adapters.runtime.loop import Runtime
from planfold.adapters.runtime.tool_runner import ToolRunner
from planfold.adapters.runtime.toolset import default_registry
from planfold.adapters.runtime.workspace import Workspace
from planfold.adapters.store.aio_threaded import ThreadedStore
from planfold.adapters.store.base import AppendRequest, AppendResult, Lease
from planfold.adapters.store.contract import ManualClock
from planfold.adapters.store.memory import MemoryStore
from planfold.adapters.store.postgres import PostgresStore
from planfold.adapters.store.session_log import SessionLog
from planfold.kernel.goal.continuation import round_message
from planfold.kernel.log import (
    TURN_END,
    TURN_START,
    USER_MESSAGE,
    GoalSource,
    MessageSource,
    number_drafts,
    turn_end,
    turn_start,
    user_message,
)
from tests.runtime_helpers import make_session, say
from tests.storage_helpers import CountingFold
from tests.storage_workers import goal_driver, stress_context

SESSION = "goal"


class Rounds:
    """A round runner appending a whole round at once through the log's store."""

    def __init__(self, log: SessionLog) -> None:
        self.log = log
        self.seen: list[int] = []

    def run_turn(self, text: str, source: MessageSource | None = None) -> object:
        head, at, turn = self.log.last_seq, self.log.now(), self.log.state.turns.turn + 1
        round_ = number_drafts((turn_start(turn), user_message(text, source), turn_end(turn)), head, at)
        self.log.store.append(AppendRequest(self.log.session_id, head, round_))
        self.log.reload()
        assert isinstance(source, GoalSource)
        self.seen.append(source.round)
        return None


def process(store: MemoryStore, name: str) -> tuple[GoalService, LeasedDriver, Rounds]:
    """A process's view of the goal: its own log, service (disarmed) and driver."""
    log = SessionLog(store, SESSION, lambda: 1_000)
    goals = GoalService(log, "agent", lambda: "g1")
    return goals, LeasedDriver(goals, store, holder=name, ttl_ms=1_000), Rounds(log)


def round_numbers(store: MemoryStore | PostgresStore) -> list[int]:
    """The round number of every goal-attributed message in the log, in order."""
    numbers: list[int] = []
    for event in store.read(SESSION):
        source = event.payload.get("source")
        if event.kind == USER_MESSAGE and isinstance(source, dict) and isinstance(source.get("round"), int):
            numbers.append(source["round"])
    return numbers


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def store(clock: ManualClock) -> MemoryStore:
    store = MemoryStore(clock=clock)
    goals, _, _ = process(store, "setup")
    goals.create(goals.agent, "keep the docs in step", max_rounds=4)
    return store


def test_a_leased_drive_fences_its_rounds_and_gives_the_lease_back_when_the_budget_blocks(store: MemoryStore) -> None:
    goals, driver, rounds = process(store, "host-a")
    goals.resume(goals.agent)
    seen: list[Lease | None] = []
    inner = store.append

    def recording(request: AppendRequest) -> AppendResult:
        seen.append(request.lease)
        return inner(request)

    store.append = recording  # type: ignore[method-assign]
    report = driver.drive(goals.agent, rounds)
    assert (report.rounds, report.stopped) == ((1, 2, 3, 4), "budget-spent")
    assert seen and all(lease is not None and lease.holder == "host-a" for lease in seen)
    assert store.lease(SESSION) is None
    assert round_numbers(store) == [1, 2, 3, 4]


def test_a_second_process_is_refused_and_disarmed_while_the_lease_is_live(
    store: MemoryStore, clock: ManualClock
) -> None:
    a_goals, a_driver, _ = process(store, "host-a")
    b_goals, b_driver, b_rounds = process(store, "host-b")
    a_goals.resume(a_goals.agent)
    a_driver.take()
    b_goals.log.reload()
    b_goals.resume(b_goals.agent)
    report = b_driver.drive(b_goals.agent, b_rounds)
    assert (report.rounds, report.stopped, report.holder) == ((), "lease-held", "host-a")
    assert not b_goals.activation.armed and round_numbers(store) == []
    clock.advance(1_000)  # host-a's lease expires, but nothing resumes the goal on its own
    assert b_driver.drive(b_goals.agent, b_rounds).rounds == ()
    b_goals.resume(b_goals.agent)
    assert b_driver.drive(b_goals.agent, b_rounds).rounds == (1, 2, 3, 4)


def test_a_holder_killed_mid_round_leaves_a_turn_the_next_holder_closes_under_its_own_lease(
    store: MemoryStore, clock: ManualClock
) -> None:
    a_goals, a_driver, _ = process(store, "host-a")
    a_goals.resume(a_goals.agent)
    held = a_driver.take()
    # host-a opens round 1 under its lease and is killed before the turn ends
    log = a_goals.log
    head, at = log.last_seq, log.now()
    opened = number_drafts((turn_start(1), round_message(log.state.goal, "round 1")), head, at)
    store.append(AppendRequest(SESSION, head, opened, lease=held))
    session, _, _ = make_session([say("two"), say("three"), say("four")], store=store, session_id=SESSION)
    b_goals = GoalService(session.log, "agent", lambda: "g1")
    b_driver = LeasedDriver(b_goals, store, holder="host-b", ttl_ms=1_000)
    b_goals.resume(b_goals.agent)
    refused = b_driver.drive(b_goals.agent, session.runtime)
    assert (refused.rounds, refused.stopped) == ((), "lease-held")  # host-a's lease is still live
    # nothing of host-a's turn was touched: after it only host-b's resume
    assert [e.kind for e in store.read(SESSION)[head:]] == [TURN_START, USER_MESSAGE, "goal/change"]
    clock.advance(1_000)
    b_goals.resume(b_goals.agent)
    fences: list[tuple[list[str], str | None]] = []
    inner = store.append

    def recording(request: AppendRequest) -> AppendResult:
        lease = request.lease
        fences.append(([e.kind for e in request.events], None if lease is None else lease.holder))
        return inner(request)

    store.append = recording  # type: ignore[method-assign]
    report = b_driver.drive(b_goals.agent, session.runtime)
    closing = next(kinds for kinds in fences if TURN_END in kinds[0])
    assert closing == ([TURN_END, TURN_START, USER_MESSAGE], "host-b")  # one append, fenced by host-b
    assert (report.rounds, report.stopped) == ((2, 3, 4), "budget-spent")
    events = store.read(SESSION)
    ended = next(e for e in events if e.kind == TURN_END)
    assert ended.payload == {"turn": 1} and events[ended.seq].kind == TURN_START  # closed as round 2 opened
    assert round_numbers(store) == [1, 2, 3, 4]


def test_pausing_the_goal_gives_the_lease_back(store: MemoryStore) -> None:
    goals, driver, rounds = process(store, "host-a")
    goals.resume(goals.agent)
    report = driver.drive(goals.agent, rounds, limit=1)
    assert (report.rounds, report.stopped) == ((1,), None)
    assert store.lease(SESSION) is not None  # still driving
    goals.pause(goals.agent)
    assert store.lease(SESSION) is None


# --------------------------------------------------------------------------
# Two processes on PostgreSQL


ROUNDS = 8
TTL_MS = 1_500


def expect(conn: Connection, kind: str, timeout: float = 60) -> tuple[Any, ...]:
    assert conn.poll(timeout), f"no {kind!r} answer within {timeout}s"
    message = conn.recv()
    assert message[0] == kind, message
    return tuple(message)


@pytest.mark.slow
def test_two_processes_drive_one_goal_one_at_a_time_and_take_over_only_after_expiry_and_a_resume(
    pg_url: str,
) -> None:
    with PostgresStore(pg_url) as store:
        goals = GoalService(SessionLog(store, SESSION), "agent", lambda: "g1")
        goals.create(goals.agent, "keep the docs in step", max_rounds=ROUNDS)
    ctx = stress_context()
    conns: dict[str, Connection] = {}
    procs: dict[str, multiprocessing.process.BaseProcess] = {}
    try:
        for name in ("A", "B"):
            mine, theirs = ctx.Pipe()
            procs[name] = ctx.Process(target=goal_driver, args=(pg_url, SESSION, name, TTL_MS, theirs), daemon=True)
            procs[name].start()
            theirs.close()
            conns[name] = mine
        for name, conn in conns.items():
            assert expect(conn, "ready") == ("ready", name, False)  # a started process comes back disarmed
        for name, conn in conns.items():
            conn.send("resume")
            assert expect(conn, "resumed") == ("resumed", name, True)
        for conn in conns.values():
            conn.send("drive")
        # Exactly one drives; the other is refused at once and disarmed.
        rounds: dict[str, list[tuple[int, int, int]]] = {"A": [], "B": []}
        refused: dict[str, tuple[Any, ...]] = {}
        while len(refused) < 1 or sum(map(len, rounds.values())) < 3:
            for name, conn in conns.items():
                while conn.poll(0.01):
                    message = conn.recv()
                    if message[0] == "round":
                        rounds[name].append(message[2:])
                    else:
                        assert message[0] == "drove", message
                        refused[name] = message
        (loser,) = refused
        holder = "B" if loser == "A" else "A"
        assert refused[loser][2:4] == ((), "lease-held") and refused[loser][4] == holder
        assert rounds[loser] == []
        os.kill(procs[holder].pid or 0, signal.SIGKILL)
        procs[holder].join(30)
        while conns[holder].poll(0.5):  # rounds it reported before it died
            try:
                message = conns[holder].recv()
            except EOFError:
                break
            if message[0] == "round":
                rounds[holder].append(message[2:])
        held_token = max(token for _, token, _ in rounds[holder])
        other = conns[loser]
        # Disarmed after the refusal: without a human resume it does nothing.
        other.send("drive")
        drove = expect(other, "drove")
        assert drove[2] == () and drove[3] not in (None, "lease-held")
        # A human resumes it until the lease has expired; only then does it drive.
        expiries: list[int] = []
        deadline = time.monotonic() + 60
        while True:
            assert time.monotonic() < deadline, "the other process never took over"
            other.send("resume")
            expect(other, "resumed")
            other.send("drive")
            answer: tuple[Any, ...] = other.recv() if other.poll(60) else ("timeout",)
            if answer[0] == "drove" and answer[3] == "lease-held":
                assert answer[4] == holder
                expiries.append(answer[5])
                continue
            break
        taken: list[tuple[int, int, int]] = []
        while answer[0] == "round":
            taken.append(answer[2:])
            answer = other.recv() if other.poll(60) else ("timeout",)
        assert answer[0] == "drove" and answer[3] == "budget-spent", answer
        assert taken, "the other process ran no round"
        assert all(granted >= max(expiries, default=0) for _, _, granted in taken)  # only after expiry
        assert all(token > held_token for _, token, _ in taken)  # a new grant, fencing the dead holder out
        with PostgresStore(pg_url) as store:
            numbers = round_numbers(store)
            assert numbers == list(range(1, ROUNDS + 1))  # no round twice, none missing
            assert [n for n, _, _ in rounds[holder]] + [n for n, _, _ in taken] == numbers
            assert store.audit(SESSION).ok
            assert store.lease(SESSION) is None  # given back when the budget blocked the goal
    finally:
        for proc in procs.values():
            if proc.is_alive():
                proc.kill()
                proc.join(10)


def test_an_asyncio_drive_over_a_synchronous_store_runs_its_rounds_under_the_lease_and_gives_it_back(
    clock: ManualClock,
) -> None:
    store = MemoryStore(clock=clock)

    async def scenario() -> tuple[tuple[int, ...], str | None]:
        tools = ToolRunner(default_registry(), executors=Workspace({}).executors())
        model = InThread(ScriptedClient(ScriptStep(say(t), Expectation()) for t in ("round one", "round two")))
        runtime = AsyncRuntime(store, SESSION, model, tools, clock=lambda: clock.now)
        goals = AsyncGoalService(runtime.goal_log, "agent", lambda: "g1")
        driver = AsyncLeasedDriver(goals, ThreadedStore(store), holder="async-host", ttl_ms=1_000)
        await goals.create(goals.agent, "two rounds", max_rounds=2)
        drive = await driver.drive(goals.agent, runtime)
        return drive.rounds, drive.stopped

    rounds, stopped = asyncio.run(scenario())
    assert rounds == (1, 2) and stopped == "budget-spent"
    assert round_numbers(store) == [1, 2]
    assert store.lease(SESSION) is None  # given back when the goal stopped
    assert store.audit(SESSION).ok


def test_a_leased_drives_fenced_appends_reach_the_store_with_their_fold(
    clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MemoryStore(clock=clock)
    folds = CountingFold(monkeypatch)
    model = ScriptedClient(ScriptStep(say(t), Expectation()) for t in ("round one", "round two"))
    tools = ToolRunner(default_registry(), executors=Workspace({}).executors())
    runtime = Runtime(store, SESSION, model, tools, clock=lambda: clock.now)
    goals = GoalService(runtime.log, "agent", lambda: "g1")
    driver = LeasedDriver(goals, store, holder="host", ttl_ms=1_000)
    goals.create(goals.agent, "two rounds", max_rounds=2)
    fenced: list[bool] = []
    inner = store.append

    def recording(request: AppendRequest) -> AppendResult:
        fenced.append(request.lease is not None and request.folded is not None)
        return inner(request)

    store.append = recording  # type: ignore[method-assign]
    drive = driver.drive(goals.agent, runtime)
    assert drive.rounds == (1, 2) and round_numbers(store) == [1, 2]
    assert any(fenced) and folds.calls == 0
    assert store.audit(SESSION).ok and store.load(SESSION) == runtime.log.state


LEASE_LOG = "planfold.adapters.runtime.goal_lease"


def lease_lines(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    return [(r.levelname, r.getMessage()) for r in caplog.records if r.name == LEASE_LOG]


def test_lease_grants_extensions_releases_and_refusals_are_logged(
    store: MemoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    a_goals, a_driver, a_rounds = process(store, "host-a")
    b_goals, b_driver, b_rounds = process(store, "host-b")
    a_goals.resume(a_goals.agent)
    with caplog.at_level(logging.DEBUG, logger=LEASE_LOG):
        a_driver.take()
        b_goals.log.reload()
        b_goals.resume(b_goals.agent)
        assert b_driver.drive(b_goals.agent, b_rounds).stopped == "lease-held"
        a_goals.log.reload()
        assert a_driver.drive(a_goals.agent, a_rounds).stopped == "budget-spent"
    lines = lease_lines(caplog)
    assert lines[0][0] == "INFO" and "goal lease granted to 'host-a'" in lines[0][1]
    assert lines[1][0] == "WARNING" and "lease is held by 'host-a'" in lines[1][1]
    assert {level for level, text in lines[2:-1]} == {"DEBUG"}  # each round extends it
    assert all("goal lease extended to 'host-a'" in text for _, text in lines[2:-1])
    assert lines[-1] == ("INFO", "session 'goal': goal lease of 'host-a' released")


def test_a_lease_lost_during_a_round_is_logged_as_a_warning(
    store: MemoryStore, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    a_goals, a_driver, a_rounds = process(store, "host-a")
    _, b_driver, _ = process(store, "host-b")
    a_goals.resume(a_goals.agent)

    class Overtaken(Rounds):
        def run_turn(self, text: str, source: MessageSource | None = None) -> object:
            clock.advance(1_000)  # host-a's lease expires mid-round and host-b takes it
            b_driver.take()
            return super().run_turn(text, source)

    with caplog.at_level(logging.INFO, logger=LEASE_LOG):
        report = a_driver.drive(a_goals.agent, Overtaken(a_rounds.log))
    assert report.stopped == "lease-lost"
    warnings = [text for level, text in lease_lines(caplog) if level == "WARNING"]
    assert len(warnings) == 1 and "the lease of 'host-a' was lost" in warnings[0]
