"""The async stores' own behaviour beyond the contract suite (which runs
against each of them in test_contract): cancellation, following on the loop,
opening by address, and running on the loop without threads."""

from __future__ import annotations

import asyncio
import logging
import re
import sqlite3
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from planfold.adapters.runtime.goal_service import GoalService
from planfold.adapters.store.aio import AsyncLogStore, AsyncSharedStore
from planfold.adapters.store.aio_memory import AsyncMemoryStore
from planfold.adapters.store.aio_postgres import AsyncPostgresStore
from planfold.adapters.store.aio_sqlite import AsyncSqliteStore
from planfold.adapters.store.aio_threaded import ThreadedStore
from planfold.adapters.store.base import (
    AppendRequest,
    AppendResult,
    ForwardingStore,
    InvalidRequestError,
    Lease,
    SchemaTooNewError,
    StoreClosedError,
)
from planfold.adapters.store.contract_logs import batch_after
from planfold.adapters.store.memory import MemoryStore
from planfold.adapters.store.opener import open_async_store
from planfold.adapters.store.sqlite import SqliteStore
from planfold.adapters.store.sqlite_conn import connect_sqlite
from planfold.adapters.store.sqlite_schema import Connection
from planfold.kernel.log import Event
from tests.adapters.scripted_turn import scripted_runtime
from tests.runtime_helpers import call, say

Opener = Callable[[Path], Awaitable[AsyncLogStore]]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def opener(request: pytest.FixtureRequest) -> Opener:
    """Opens a fresh async store of each kind (given a file path SQLite uses)."""
    if request.param == "memory":

        async def memory(_: Path) -> AsyncLogStore:
            return AsyncMemoryStore()

        return memory
    if request.param == "sqlite":

        async def sqlite(path: Path) -> AsyncLogStore:
            return await AsyncSqliteStore.open(path, poll_interval=0.02)

        return sqlite
    url: str = request.getfixturevalue("pg_url")

    async def postgres(_: Path) -> AsyncLogStore:
        return await open_async_store(url)

    return postgres


def test_every_async_store_is_an_async_shared_store(opener: Opener, tmp_path: Path) -> None:
    async def scenario() -> None:
        store = await opener(tmp_path / "store.db")
        async with store:
            assert isinstance(store, AsyncSharedStore)

    asyncio.run(scenario())


@pytest.mark.parametrize("steps", range(6))
def test_a_cancelled_append_is_in_the_log_or_not_and_a_later_read_tells_which(
    opener: Opener, tmp_path: Path, steps: int
) -> None:
    async def scenario() -> None:
        store = await opener(tmp_path / "store.db")
        async with store:
            await store.append(AppendRequest("s", 0, batch_after(0, 2)))
            events = batch_after(2, 3)
            task = asyncio.create_task(store.append(AppendRequest("s", 2, events, "k")))
            for _ in range(steps):
                await asyncio.sleep(0)
            task.cancel()
            try:
                await task
                landed = True
            except asyncio.CancelledError:
                landed = False
            head = await store.head("s")
            assert head in (2, 5)
            if landed:
                assert head == 5
            assert (await store.audit("s")).ok
            again = await store.append(AppendRequest("s", 2, events, "k"))
            assert again.replayed == (head == 5)
            assert await store.read("s") == tuple(batch_after(0, 5))

    asyncio.run(scenario())


def test_a_follower_on_the_loop_sees_what_another_task_appends(opener: Opener, tmp_path: Path) -> None:
    async def scenario() -> None:
        store = await opener(tmp_path / "store.db")
        async with store:
            await store.append(AppendRequest("s", 0, batch_after(0, 1)))

            async def write() -> None:
                for head in range(1, 4):
                    await asyncio.sleep(0.01)
                    await store.append(AppendRequest("s", head, batch_after(head, 1)))

            writer = asyncio.create_task(write())
            follower: AsyncIterator[object] = store.follow("s", 0, timeout=10)
            seen = []
            async for event in follower:
                seen.append(event)
                if len(seen) == 4:
                    break
            await writer
            assert tuple(seen) == tuple(batch_after(0, 4))
            assert [e async for e in store.follow("s", 4, timeout=0.01)] == []

    asyncio.run(scenario())


def _cancel_a_follower(
    open_store: Callable[[], Awaitable[AsyncSharedStore]], release: Callable[[], None] | None = None
) -> tuple[BaseException | None, bool]:
    """Run a loop whose task follows session ``s`` with no timeout and is
    then cancelled: what the task ended with, and whether the loop shut down
    (within a generous bound: a thread still waiting for an event keeps it
    from ever shutting down). The loop closes the store, unless ``release``
    is given: then ``release()`` closes it once the bound has passed or the
    loop is down, so that closing cannot end such a wait first."""
    ended: list[BaseException | None] = []

    async def scenario() -> None:
        store = await open_store()

        async def consume() -> None:
            async for _ in store.follow("s", 0, timeout=None):
                pass

        task = asyncio.create_task(consume())
        await asyncio.sleep(0.05)  # the follower is waiting for an event
        task.cancel()
        try:
            await asyncio.wait_for(task, 30)
            ended.append(None)
        except BaseException as exc:  # what the follower ended with, reported to the test
            ended.append(exc)
        if release is None:
            await store.close()

    run = threading.Thread(target=asyncio.run, args=(scenario(),), daemon=True)
    run.start()
    run.join(60)
    shut_down = not run.is_alive()
    if release is not None:
        release()  # ends a wait still running, so the process can end
        run.join(60)
    return ended[0], shut_down


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_cancelled_follower_of_a_threaded_store_ends_with_cancelled_error_and_its_loop_shuts_down(
    kind: str, tmp_path: Path
) -> None:
    inner = MemoryStore() if kind == "memory" else SqliteStore(tmp_path / "s.db", poll_interval=0.02)

    async def open_store() -> AsyncSharedStore:
        return ThreadedStore(inner)

    ended, shut_down = _cancel_a_follower(open_store, inner.close)
    assert isinstance(ended, asyncio.CancelledError)
    assert shut_down


class _GatedStore(ForwardingStore):
    """A store whose appends wait until ``gate`` is set."""

    def __init__(self, inner: MemoryStore) -> None:
        super().__init__(inner)
        self.gate = threading.Event()
        self.entered = threading.Event()

    def append(self, request: AppendRequest) -> AppendResult:
        self.entered.set()
        assert self.gate.wait(30)
        return super().append(request)


def test_a_cancelled_append_of_a_threaded_store_is_over_before_its_cancelled_error_goes_on() -> None:
    inner = MemoryStore()
    gated = _GatedStore(inner)
    store = ThreadedStore(gated)

    async def scenario() -> int:
        task = asyncio.create_task(store.append(AppendRequest("s", 0, batch_after(0, 2), "k")))
        while not gated.entered.is_set():  # the append runs in its thread
            await asyncio.sleep(0.01)
        task.cancel()
        opens = threading.Timer(0.2, gated.gate.set)
        opens.start()
        with pytest.raises(asyncio.CancelledError):
            await task
        head = inner.head("s")  # what the cancelled caller reads next
        opens.join()
        return head

    assert asyncio.run(scenario()) == 2
    assert inner.head("s") == 2


def test_a_cancelled_follower_of_an_async_store_ends_with_cancelled_error_and_its_loop_shuts_down(
    opener: Opener, tmp_path: Path
) -> None:
    ended, shut_down = _cancel_a_follower(lambda: opener(tmp_path / "store.db"))
    assert isinstance(ended, asyncio.CancelledError)
    assert shut_down


def _noted_log() -> tuple[Event, ...]:
    """A session whose appends log lines: a call the gate refused, then a
    goal created and one round driven to its budget."""
    store = MemoryStore()
    runtime = scripted_runtime(store, call("write_file", {"path": "b", "content": ""}, "w1"), say("no"), say("round"))
    runtime.submit("write b")
    goals = GoalService(runtime.log, "agent-1", lambda: "goal-1")
    goals.create(goals.agent, "Say hello once", max_rounds=1)
    goals.drive(goals.agent, runtime)
    return store.read("s")


def _store_lines(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "planfold.adapters.store.engine"]


def test_an_async_store_logs_goal_rounds_and_refused_calls_as_the_synchronous_store_does(
    opener: Opener, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    events = _noted_log()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="planfold"):
        MemoryStore().append(AppendRequest("s", 0, events))
    expected = _store_lines(caplog)
    assert {level for level, _ in expected} == {logging.INFO, logging.WARNING}
    assert any(" round 1 started at seq " in line for _, line in expected)
    caplog.clear()

    async def scenario() -> None:
        store = await opener(tmp_path / "store.db")
        async with store:
            with caplog.at_level(logging.INFO, logger="planfold"):
                await store.append(AppendRequest("s", 0, events[:1], "k"))
                await store.append(AppendRequest("s", 0, events[:1], "k"))  # a retry: nothing written, nothing logged
                await store.append(AppendRequest("s", 1, events[1:]))
                assert _store_lines(caplog) == expected

    asyncio.run(scenario())


def test_an_async_store_writes_each_appends_debug_record_as_the_synchronous_store_does(
    opener: Opener, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def debug_lines() -> list[str]:
        lines = [line for level, line in _store_lines(caplog) if level == logging.DEBUG and ": appended seq " in line]
        return [re.sub(r" in \d+\.\d\d ms$", " in _ ms", line) for line in lines]

    lease_at = 60_000
    with caplog.at_level(logging.DEBUG, logger="planfold.adapters.store.engine"):
        store = MemoryStore()
        lease = store.acquire_lease("s", "me", lease_at)
        for request in _logged_appends(lease):
            store.append(request)
        expected = debug_lines()
    assert len(expected) == 4 and all(line.endswith(" in _ ms") for line in expected)
    caplog.clear()

    async def scenario() -> None:
        store = await opener(tmp_path / "store.db")
        async with store:
            with caplog.at_level(logging.DEBUG, logger="planfold.adapters.store.engine"):
                lease = await store.acquire_lease("s", "me", lease_at)
                for request in _logged_appends(lease):
                    await store.append(request)
                assert debug_lines() == expected

    asyncio.run(scenario())


def _logged_appends(lease: Lease) -> list[AppendRequest]:
    """Appends whose DEBUG records differ: a plain one, its idempotent retry,
    a fenced one and one of a new session."""
    return [
        AppendRequest("s", 0, batch_after(0, 2), "k"),
        AppendRequest("s", 0, batch_after(0, 2), "k"),
        AppendRequest("s", 2, batch_after(2, 1), lease=lease),
        AppendRequest("t", 0, batch_after(0, 1)),
    ]


def test_the_async_memory_store_serves_one_event_loop_after_another() -> None:
    store = AsyncMemoryStore()

    async def follow_and_append(head: int) -> tuple[Event, ...]:
        """Session ``s``'s events after ``head`` as a follower sees them,
        while another task appends one more."""

        async def follow() -> tuple[Event, ...]:
            return tuple([event async for event in store.follow("s", head, timeout=0.5)])

        follower = asyncio.create_task(follow())
        await asyncio.sleep(0.05)  # the follower waits for a write
        await store.append(AppendRequest("s", head, batch_after(head, 1)))
        return await asyncio.wait_for(follower, 30)

    assert asyncio.run(follow_and_append(0)) == tuple(batch_after(0, 1))
    assert asyncio.run(follow_and_append(1)) == tuple(batch_after(1, 1))
    assert asyncio.run(store.read("s")) == tuple(batch_after(0, 2))
    asyncio.run(store.close())


def test_a_closed_async_store_refuses_with_store_closed(opener: Opener, tmp_path: Path) -> None:
    async def scenario() -> None:
        store = await opener(tmp_path / "store.db")
        await store.close()
        await store.close()
        with pytest.raises(StoreClosedError):
            await store.append(AppendRequest("s", 0, batch_after(0, 1)))
        with pytest.raises(StoreClosedError):
            await store.head("s")

    asyncio.run(scenario())


def test_the_memory_store_runs_on_the_loop_without_a_thread() -> None:
    async def scenario() -> None:
        before = set(threading.enumerate())
        store = await open_async_store(":memory:")
        assert isinstance(store, AsyncMemoryStore)
        for head in range(20):
            await store.append(AppendRequest("s", head, batch_after(head, 1)))
        assert await store.head("s") == 20
        assert [e async for e in store.follow("s", 18, timeout=0)] == list(batch_after(18, 2))
        assert set(threading.enumerate()) <= before
        await store.close()

    asyncio.run(scenario())


def test_a_bad_request_is_refused_before_it_leaves_the_loop(opener: Opener, tmp_path: Path) -> None:
    async def scenario() -> None:
        store = await opener(tmp_path / "store.db")
        async with store:
            with pytest.raises(InvalidRequestError):
                await store.append(AppendRequest("", 0, batch_after(0, 1)))
            with pytest.raises(InvalidRequestError):
                store.follow("s", 0, timeout=-1)
            assert await store.session_ids() == ()

    asyncio.run(scenario())


class _CountingConnection:
    """A SQLite connection that counts the commits run on it."""

    def __init__(self, conn: Connection, commits: list[int]) -> None:
        self.conn = conn
        self.commits = commits

    def execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        if sql.strip().upper() == "COMMIT":
            self.commits.append(1)
        return self.conn.execute(sql, params)

    def close(self) -> None:
        self.conn.close()


def test_the_sqlite_writer_commits_the_appends_of_many_tasks_together_on_two_threads(tmp_path: Path) -> None:
    commits: list[int] = []

    def connect(path: str) -> Any:
        return _CountingConnection(connect_sqlite(path), commits)

    async def scenario() -> None:
        before = set(threading.enumerate())
        store = await AsyncSqliteStore.open(tmp_path / "store.db", connect=connect)
        other = await AsyncSqliteStore.open(tmp_path / "store.db", connect=connect)
        started = sorted(t.name for t in set(threading.enumerate()) - before)
        assert started == ["planfold-sqlite-reader:store.db", "planfold-sqlite-writer:store.db"]
        await store.head("warm")  # the reader's connection opens
        commits.clear()
        sessions = [f"s{n}" for n in range(100)]
        results = await asyncio.gather(
            *(
                s.append(AppendRequest(sid, 0, batch_after(0, 2)))
                for s, sid in zip([store, other] * 50, sessions, strict=True)
            )
        )
        assert [r.last_seq for r in results] == [2] * 100
        assert len(commits) < 50
        assert await other.session_ids() == tuple(sorted(sessions))
        assert all(report.ok for report in await asyncio.gather(*(store.audit(sid) for sid in sessions)))
        assert sorted(t.name for t in set(threading.enumerate()) - before) == started
        await store.close()
        await other.close()

    asyncio.run(scenario())


def test_an_async_sqlite_store_refuses_a_foreign_file_and_stops_its_threads(tmp_path: Path) -> None:
    path = tmp_path / "newer.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 999")
    conn.close()

    async def scenario() -> None:
        before = set(threading.enumerate())
        with pytest.raises(SchemaTooNewError):
            await AsyncSqliteStore.open(path)
        for _ in range(200):
            if set(threading.enumerate()) <= before:
                break
            await asyncio.sleep(0.01)
        assert set(threading.enumerate()) <= before

    asyncio.run(scenario())


def test_the_postgres_store_sends_the_appends_of_many_tasks_in_groups_of_one_statement_each(pg_url: str) -> None:
    async def scenario() -> None:
        store = await open_async_store(pg_url)
        assert isinstance(store, AsyncPostgresStore)
        sent: list[int] = []
        send = store._send

        async def counting(batch: list[Any]) -> None:
            sent.append(len(batch))
            await send(batch)

        store._send = counting  # type: ignore[method-assign]
        async with store:
            sessions = [f"s{n}" for n in range(60)]
            for head in (0, 2):
                requests = [AppendRequest(sid, head, batch_after(head, 2)) for sid in sessions]
                results = await asyncio.gather(*(store.append(request) for request in requests))
                assert [r.last_seq for r in results] == [head + 2] * 60
            assert sum(sent) == 120  # every append went out as one statement
            assert len(sent) < 60  # most of them together
            assert await store.session_ids() == tuple(sorted(sessions))
            reports = await asyncio.gather(*(store.audit(sid) for sid in sessions))
            assert all(report.ok for report in reports)

    asyncio.run(scenario())


def test_no_operation_of_an_async_store_starts_a_thread(opener: Opener, tmp_path: Path) -> None:
    async def scenario() -> None:
        store = await opener(tmp_path / "store.db")
        async with store:
            await store.append(AppendRequest("warm", 0, batch_after(0, 1)))
            await store.head("warm")
            before = set(threading.enumerate())
            for head in range(20):
                await store.append(AppendRequest("s", head, batch_after(head, 1)))
                assert (await store.load("s", incremental=True)).last_seq == head + 1
            lease = await store.acquire_lease("s", "me", 1_000)
            await store.append(AppendRequest("s", 20, batch_after(20, 1), lease=lease))
            assert await store.release_lease(lease)
            await store.fork("s", 5, "forked")
            assert [e async for e in store.follow("s", 19, timeout=0)] == list(batch_after(19, 2))
            assert set(threading.enumerate()) <= before

    asyncio.run(scenario())
