"""Many processes racing compare-and-set appends on one SQLite file or one
PostgreSQL database.

Eight worker processes each make 500 append attempts (read the head, append
one to three events after it), once all onto one session and once spread over
four. Every attempt must end as a success or a ``ConflictError``; no raw
driver error may reach a worker; each log must run 1..N with no gap or
duplicate; and every projection must equal the fold of its log.
"""

from __future__ import annotations

import os
import queue
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from planfold.adapters.store.base import AppendRequest, StoreBusyError
from planfold.adapters.store.opener import open_store
from planfold.adapters.store.sqlite import SqliteStore
from planfold.kernel.session import fold_session
from tests.adapters.store.processes import run_in_a_forked_child
from tests.storage_workers import batch_after, contender, event_at, stress_context

WORKERS = 8
ATTEMPTS = 500
DEADLINE = 240.0


@pytest.fixture(params=["sqlite", "postgres"])
def address(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Where the workers race: a SQLite file or a PostgreSQL schema."""
    if request.param == "sqlite":
        yield str(tmp_path / "race.db")
    else:
        yield request.getfixturevalue("pg_url")


def count_rows(address: str) -> tuple[int, int, int]:
    """Event rows, distinct (session, seq) pairs, and idempotency keys, by SQL."""
    events, keys = ("planfold_events", "planfold_append_keys") if address.startswith("postgresql") else (
        "events", "append_keys")  # fmt: skip
    count = f"SELECT COUNT(*), COUNT(DISTINCT session_id || '/' || seq) FROM {events}"
    keyed = f"SELECT COUNT(*) FROM {keys}"
    if address.startswith("postgresql"):
        with psycopg.connect(address) as pg:
            found = [pg.execute(count).fetchone(), pg.execute(keyed).fetchone()]
    else:
        conn = sqlite3.connect(address)
        try:
            found = [conn.execute(count).fetchone(), conn.execute(keyed).fetchone()]
        finally:
            conn.close()
    (rows, distinct), (key_rows,) = found  # type: ignore[misc]
    return int(rows), int(distinct), int(key_rows)


def race(address: str, sessions: list[str]) -> list[dict[str, Any]]:
    open_store(address).close()  # migrate once up front; the workers race only on appends
    ctx = stress_context()
    start = ctx.Event()
    out = ctx.Queue()
    procs = [
        ctx.Process(
            target=contender,
            args=(address, sessions, ATTEMPTS, seed),
            kwargs={"start": start, "out": out},
            daemon=True,
        )
        for seed in range(WORKERS)
    ]
    for proc in procs:
        proc.start()
    start.set()
    reports: list[dict[str, Any]] = []
    try:
        reports.extend(out.get(timeout=DEADLINE) for _ in procs)
    except queue.Empty:
        pytest.fail(f"only {len(reports)} of {WORKERS} workers reported within {DEADLINE}s")
    finally:
        for proc in procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=10)
    return reports


def check_outcome(address: str, sessions: list[str], reports: list[dict[str, Any]]) -> None:
    assert [r["raw"] for r in reports] == [[]] * WORKERS, "a raw driver error reached a caller"
    assert [r["other"] for r in reports] == [[]] * WORKERS
    ok = sum(r["ok"] for r in reports)
    conflicts = sum(r["conflict"] for r in reports)
    assert ok + conflicts == WORKERS * ATTEMPTS
    assert ok > 0 and conflicts > 0  # it really was a race
    total = 0
    with open_store(address) as store:
        if isinstance(store, SqliteStore):
            assert store.integrity_check() == ("ok",)
        for sid in sessions:
            events = store.read(sid)
            assert [e.seq for e in events] == list(range(1, len(events) + 1))
            assert list(events) == [event_at(e.seq) for e in events]
            assert store.load(sid) == fold_session(events)
            assert store.load(sid, incremental=True) == fold_session(events)
            report = store.audit(sid)
            assert report.ok, report.mismatches
            total += len(events)
    assert total == sum(r["events"] for r in reports)
    rows, distinct, keys = count_rows(address)
    assert rows == distinct == total
    assert keys == 0


@pytest.mark.slow
def test_eight_processes_race_compare_and_set_appends_onto_one_session(address: str) -> None:
    check_outcome(address, ["s"], race(address, ["s"]))


@pytest.mark.slow
def test_eight_processes_race_compare_and_set_appends_onto_four_sessions(address: str) -> None:
    sessions = ["s1", "s2", "s3", "s4"]
    check_outcome(address, sessions, race(address, sessions))


# --------------------------------------------------------------------------
# Fork safety and lock timeouts


def forked_child(store: SqliteStore, out: Any) -> None:
    try:
        inherited_owner = store.connections.owner_pid
        head = store.head("s")
        store.append(AppendRequest("s", head, batch_after(head, 2)))
        # The inherited connection was set aside untouched, and a new one opened.
        out.put(("ok", inherited_owner != os.getpid(), store.connections.inherited, store.connections.owner_pid))
    except Exception as exc:
        out.put(("error", repr(exc), 0, 0))


def test_a_store_used_in_a_forked_child_opens_its_own_connection(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "f.db") as store:
        store.append(AppendRequest("s", 0, batch_after(0, 1)))
        result, proc = run_in_a_forked_child(forked_child, store)
        assert result == ("ok", True, 1, proc.pid)
        assert proc.exitcode == 0
        assert store.head("s") == 3  # the parent's connection still works and sees the child's commit
        store.append(AppendRequest("s", 3, batch_after(3, 1)))
        assert store.audit("s").ok
        assert store.integrity_check() == ("ok",)
        assert store.connections.inherited == 0
        assert store.connections.owner_pid == os.getpid()


def test_a_writer_that_cannot_get_the_lock_gets_store_busy(tmp_path: Path) -> None:
    path = tmp_path / "b.db"
    with SqliteStore(path, busy_timeout_ms=50) as store:
        store.append(AppendRequest("s", 0, batch_after(0, 1)))
        blocker = sqlite3.connect(path, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(StoreBusyError) as info:
                store.append(AppendRequest("s", 1, batch_after(1, 1)))
            assert info.value.code == "store-busy"
            assert info.value.outcome == "not-applied"
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        assert store.append(AppendRequest("s", 1, batch_after(1, 1))).last_seq == 2
