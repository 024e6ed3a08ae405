"""Write turns (``adapters.store.sqlite_turns``): a SQLite store waits for
the write lock itself, takes it as soon as it is free, and hands the next
turn to another connection that waited."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from planfold.adapters.store.base import AppendRequest, StoreBusyError
from planfold.adapters.store.contract_logs import batch_after
from planfold.adapters.store.sqlite import SqliteStore
from planfold.adapters.store.sqlite_turns import WriteTurns


def _holding(path: Path, release: threading.Event, held: threading.Event) -> threading.Thread:
    """A thread whose own connection holds the file's write lock until ``release``."""

    def hold() -> None:
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO goal_leases (session_id, holder, token, expires_at, ttl_ms) "
                     "VALUES ('x', '', 1, 0, 1)")
        held.set()
        release.wait(30)
        conn.execute("COMMIT")
        conn.close()

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    held.wait(30)
    return thread


def test_a_write_that_meets_the_lock_taken_waits_and_then_takes_turns(tmp_path: Path) -> None:
    path = tmp_path / "turns.db"
    store = SqliteStore(path)
    store.append(AppendRequest("s", 0, batch_after(0, 1)))
    release, held = threading.Event(), threading.Event()
    holder = _holding(path, release, held)
    outcome: list[object] = []
    request = AppendRequest("s", 1, batch_after(1, 1))
    writer = threading.Thread(target=lambda: outcome.append(store.append(request).last_seq))
    writer.start()
    writer.join(0.2)
    assert outcome == []  # still waiting for the lock
    release.set()
    holder.join(30)
    writer.join(30)
    assert outcome == [2]
    turns = store.connections.turns
    assert turns is not None and turns.contended and turns.handing_over
    assert store.head("s") == 2 and store.audit("s").ok
    store.close()


def test_a_lock_held_past_the_busy_timeout_is_store_busy_and_nothing_is_written(tmp_path: Path) -> None:
    path = tmp_path / "busy.db"
    store = SqliteStore(path, busy_timeout_ms=50)
    store.append(AppendRequest("s", 0, batch_after(0, 1)))
    release, held = threading.Event(), threading.Event()
    holder = _holding(path, release, held)
    try:
        with pytest.raises(StoreBusyError) as info:
            store.append(AppendRequest("s", 1, batch_after(1, 1)))
        assert info.value.outcome == "not-applied"
    finally:
        release.set()
        holder.join(30)
    assert store.head("s") == 1
    assert store.read("s") == tuple(batch_after(0, 1))
    store.close()


def test_the_store_waits_for_locks_itself_unless_asked_not_to(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "a.db", busy_timeout_ms=700) as store:
        assert store.connections.turns is not None
        assert store.connections.run("t", "BEGIN", lambda c: c.execute("PRAGMA busy_timeout").fetchone()[0]) == 0
        assert store.settings()["busy_timeout"] == 700
    with SqliteStore(tmp_path / "b.db", busy_timeout_ms=700, take_turns=False) as store:
        assert store.connections.turns is None
        assert store.connections.run("t", "BEGIN", lambda c: c.execute("PRAGMA busy_timeout").fetchone()[0]) == 700


def test_a_turn_is_handed_over_until_another_connection_commits() -> None:
    turns = WriteTurns(1000, handoff=600.0)
    looks = iter([7, 7, 7, 8])
    seen: list[int] = []

    def data_version() -> int:
        seen.append(next(looks))
        return seen[-1]

    turns.handing_over, turns.version = True, 7
    turns.hand_over(data_version)
    assert seen == [7, 7, 7, 8]
    assert turns.version is None and turns.handing_over
    turns.hand_over(data_version)  # nothing to hand over now: no look
    assert seen == [7, 7, 7, 8]


def test_a_turn_no_one_takes_ends_the_handing_over() -> None:
    turns = WriteTurns(1000, handoff=0.0)
    turns.handing_over, turns.version = True, 3
    turns.hand_over(lambda: 3)
    assert turns.version is None and not turns.handing_over


class _Versioned:
    """A connection that only answers ``PRAGMA data_version``."""

    def __init__(self, version: int) -> None:
        self.version = version

    def execute(self, sql: str, params: object = ()) -> sqlite3.Cursor:
        assert sql == "PRAGMA data_version"
        return sqlite3.connect(":memory:").execute(f"SELECT {self.version}")


@pytest.mark.parametrize(
    ("contended", "handing_over", "wrote", "kept"),
    [(True, True, True, 5), (True, True, False, None), (False, True, True, None), (True, False, True, None)],
    ids=["contended-wrote", "wrote-nothing", "not-contended", "not-handing-over"],
)
def test_only_a_commit_that_wrote_while_turns_are_taken_hands_the_next_turn_over(
    contended: bool, handing_over: bool, wrote: bool, kept: int | None
) -> None:
    turns = WriteTurns(1000)
    turns.contended_until = float("inf") if contended else 0.0
    turns.handing_over = handing_over
    turns.ending(_Versioned(5), wrote=wrote)  # type: ignore[arg-type]
    assert turns.version == kept
