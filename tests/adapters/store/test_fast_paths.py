"""The stores' faster paths keep every promise of the slow ones.

A large SQLite append inserts its events with several multi-row ``INSERT``s;
a failure in any of them leaves nothing written. An append reads and writes
through one cursor kept per connection, and leaves no statement open behind
it, whatever it answers. An append without a key to a session the connection
appended to last takes the session's view from what it wrote while no other
connection has committed anything (SQLite's data_version), and reads it
again otherwise, and after any other write. Loads fold rows as they are
decoded, so a bad stored row still stops the fold at its position. A scan
reads a log in pages (on every store) and gives what ``read`` gives.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from benchmarks.workloads import goal_events, session_events
from planfold.adapters.codec import canonical_event
from planfold.adapters.store.base import (
    AppendRejectedError,
    AppendRequest,
    InvalidRequestError,
    LeaseHeldError,
    LeaseLostError,
    StorageError,
)
from planfold.adapters.store.contract import ManualClock
from planfold.adapters.store.engine import Folded, LogStore
from planfold.adapters.store.memory import MemoryStore
from planfold.adapters.store.session_log import SessionLog
from planfold.adapters.store.sqlite import SqliteStore
from planfold.adapters.store.sqlite_conn import connect_sqlite
from planfold.adapters.store.sqlite_schema import Connection
from planfold.adapters.store.sqlite_sql import INSERT_ROWS
from planfold.kernel.errors import ConflictError, ReplayError
from planfold.kernel.log import Draft, Event
from planfold.kernel.session import SessionState, fold_more, fold_session
from tests.storage_helpers import CountingFold

ROWS = INSERT_ROWS


class FailingInsert:
    """A connection whose ``n``-th multi-row event ``INSERT`` fails."""

    def __init__(self, path: str) -> None:
        self.conn = connect_sqlite(path)
        self.fail_at: int | None = None
        self.inserts = 0

    @property
    def in_transaction(self) -> bool:
        return self.conn.in_transaction

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        if sql.startswith("INSERT INTO events"):
            self.inserts += 1
            if self.inserts == self.fail_at:
                raise sqlite3.OperationalError("disk I/O error (injected)")
        return self.conn.execute(sql, parameters)

    def close(self) -> None:
        self.conn.close()


@pytest.mark.parametrize("count", [1, ROWS - 1, ROWS, ROWS + 1, 2 * ROWS + 7])
def test_an_append_of_any_size_reads_back_exactly(tmp_path: Path, count: int) -> None:
    events = list(session_events(count + 3))
    with SqliteStore(tmp_path / "big.db") as store:
        store.append(AppendRequest("s", 0, events[:3]))
        result = store.append(AppendRequest("s", 3, events[3:]))
        assert (result.first_seq, result.last_seq) == (4, count + 3)
        assert store.read("s") == tuple(canonical_event(e) for e in events)
        assert store.load("s") == store.load("s", incremental=True) == fold_session(events)
        assert store.audit("s").ok


@pytest.mark.parametrize("fail_at", [1, 2, 3])
def test_a_failure_in_any_insert_of_a_large_append_writes_nothing(tmp_path: Path, fail_at: int) -> None:
    events = list(goal_events(2 * ROWS + 20))
    opened: list[FailingInsert] = []

    def connect(path: str) -> Connection:
        opened.append(FailingInsert(path))
        return opened[-1]

    with SqliteStore(tmp_path / "fail.db", connect=connect) as store:
        store.append(AppendRequest("s", 0, events[:10]))
        before = (store.read("s"), store.projection("s"))
        opened[-1].inserts, opened[-1].fail_at = 0, fail_at
        with pytest.raises(StorageError) as info:
            store.append(AppendRequest("s", 10, events[10:]))
        assert info.value.outcome == "not-applied"
        assert opened[-1].inserts == fail_at
        assert (store.read("s"), store.projection("s")) == before
        store.append(AppendRequest("s", 10, events[10:]))
        assert store.load("s") == fold_session(events)
        assert store.audit("s").ok


def test_a_bad_row_deep_in_a_long_log_stops_a_streamed_load_at_its_seq(tmp_path: Path) -> None:
    events = list(goal_events(3 * ROWS))
    path = tmp_path / "bad.db"
    with SqliteStore(path) as store:
        store.append(AppendRequest("s", 0, events))
    conn = sqlite3.connect(path)
    conn.execute("UPDATE events SET payload = '{\"text\": 1}' WHERE session_id = 's' AND seq = ?", (ROWS + 5,))
    conn.commit()
    conn.close()
    with SqliteStore(path) as store:
        for _ in range(2):
            with pytest.raises(ReplayError) as info:
                store.load("s")
            assert (info.value.position, info.value.rule) == (ROWS + 5, "malformed-payload")


# --------------------------------------------------------------------------
# A scan reads the log in pages, each its own read transaction


@pytest.mark.parametrize(("count", "page"), [(0, 3), (7, 3), (9, 3), (9, 1), (40, 100)])
def test_a_scan_in_pages_reads_exactly_what_read_reads(any_store: LogStore, count: int, page: int) -> None:
    events = list(session_events(count))
    if events:
        any_store.append(AppendRequest("s", 0, events))
    assert tuple(any_store.scan("s", page=page)) == any_store.read("s") == tuple(map(canonical_event, events))
    assert tuple(any_store.scan("s", 4, page=page)) == any_store.read("s", 4)


def test_a_scan_goes_on_into_what_was_appended_while_it_read(any_store: LogStore) -> None:
    events = list(session_events(12))
    any_store.append(AppendRequest("s", 0, events[:6]))
    scan = any_store.scan("s", page=3)
    first = [next(scan) for _ in range(3)]
    any_store.append(AppendRequest("s", 6, events[6:]))
    assert [e.seq for e in [*first, *scan]] == list(range(1, 13))


def test_a_scan_refuses_a_page_that_is_not_a_positive_count() -> None:
    with MemoryStore() as store, pytest.raises(InvalidRequestError, match="page"):
        store.scan("s", page=0)


def test_an_append_leaves_no_read_open_whatever_it_answers(tmp_path: Path) -> None:
    # A statement left open would hold a read of the file past the end of its
    # transaction: another connection could then not checkpoint the whole log.
    events = list(goal_events(4))
    with SqliteStore(tmp_path / "open.db", synchronous="normal") as store:
        other = sqlite3.connect(tmp_path / "open.db", isolation_level=None)

        def busy() -> int:
            return int(other.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0])

        try:
            store.append(AppendRequest("s", 0, events[:2], "k"))  # written
            assert busy() == 0
            assert store.append(AppendRequest("s", 0, events[:2], "k")).replayed  # answered from its key
            assert busy() == 0
            with pytest.raises(ConflictError):
                store.append(AppendRequest("s", 1, events[1:2]))  # refused
            assert busy() == 0
            assert store.head("s") == 2 and store.audit("s").ok
        finally:
            other.close()


def test_an_append_reads_the_session_again_once_another_connection_has_written(tmp_path: Path) -> None:
    events = list(goal_events(8))
    path = tmp_path / "two.db"
    with SqliteStore(path, synchronous="normal") as first, SqliteStore(path, synchronous="normal") as second:
        first.append(AppendRequest("s", 0, events[:2]))
        first.append(AppendRequest("s", 2, events[2:3]))  # the view of "s" is now known to this connection
        second.append(AppendRequest("s", 3, events[3:4]))
        with pytest.raises(ConflictError) as refused:
            first.append(AppendRequest("s", 3, events[3:4]))
        assert refused.value.actual_seq == 4
        first.append(AppendRequest("s", 4, events[4:5]))
        other = sqlite3.connect(path, isolation_level=None)  # a hand edit: one more event, nothing else
        try:
            row = other.execute("SELECT kind, at, payload FROM events WHERE session_id = 's' AND seq = 5").fetchone()
            other.execute("INSERT INTO events VALUES ('s', 6, ?, ?, ?)", (row[0], row[1], row[2]))
        finally:
            other.close()
        with pytest.raises(ConflictError):
            first.append(AppendRequest("s", 5, events[5:6]))


def test_an_append_sees_a_lease_the_same_store_granted_after_its_last_append(tmp_path: Path) -> None:
    events = list(goal_events(8))  # a create, then rounds (seq 2, 3, 4)
    with SqliteStore(tmp_path / "lease.db", synchronous="normal") as store:
        store.append(AppendRequest("s", 0, events[:2]))
        store.append(AppendRequest("s", 2, events[2:3]))
        store.acquire_lease("s", "another host", 60_000)
        with pytest.raises(LeaseHeldError):
            store.append(AppendRequest("s", 3, events[3:4]))  # a round, unfenced, while another holds the lease


def test_an_append_sees_the_lease_its_last_fenced_append_extended(tmp_path: Path) -> None:
    clock = ManualClock()
    events = list(goal_events(8))
    with SqliteStore(tmp_path / "fenced.db", synchronous="normal", clock=clock) as store:
        store.append(AppendRequest("s", 0, events[:1]))
        lease = store.acquire_lease("s", "this host", 1_000)
        store.append(AppendRequest("s", 1, events[1:2], lease=lease))
        clock.advance(800)
        store.append(AppendRequest("s", 2, events[2:3], lease=lease))  # extended to 1,800 ms from the grant
        clock.advance(800)
        # past the grant's own expiry, within the extension
        store.append(AppendRequest("s", 3, events[3:4], lease=lease))
        clock.advance(1_100)
        with pytest.raises(LeaseLostError):
            store.append(AppendRequest("s", 4, events[4:5], lease=lease))


# --------------------------------------------------------------------------
# An append through the session log is folded once: the store takes the
# log's fold when it was made on the store's own state


def drafts_of(events: Sequence[Event]) -> list[Draft]:
    return [Draft(event.kind, event.payload) for event in events]


def test_an_append_through_the_session_log_is_not_folded_again_by_the_store(
    any_store: LogStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = list(session_events(30))
    folds = CountingFold(monkeypatch)
    log = SessionLog(any_store, "s", clock=lambda: 0)
    for start in range(0, 30, 3):
        log.append(drafts_of(events[start : start + 3]), at=events[start].at)
    assert folds.calls == 0
    again = SessionLog(any_store, "s", clock=lambda: 0)  # a reopened log folds onto the store's state too
    again.append(drafts_of(list(session_events(33))[30:]), at=events[-1].at)
    assert folds.calls == 0
    assert any_store.audit("s").ok
    assert any_store.load("s") == fold_session(any_store.read("s")) == again.state


def test_a_fold_made_on_another_state_is_ignored_and_the_store_folds_the_events_itself(
    any_store: LogStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = list(session_events(12))
    any_store.append(AppendRequest("s", 0, events[:6]))
    folds = CountingFold(monkeypatch)
    elsewhere = fold_session(events[:3])  # not the state the store holds at seq 6
    wrong = Folded(elsewhere, fold_more(elsewhere, events[3:6]))
    any_store.append(AppendRequest("s", 6, events[6:9], folded=wrong))
    assert folds.calls == 1
    bad = replace(events[9], seq=11)  # a gap: the strict fold refuses it
    stored = any_store.load("s", incremental=True)
    with pytest.raises(AppendRejectedError):
        any_store.append(AppendRequest("s", 9, [bad], folded=Folded(stored, stored)))
    assert any_store.head("s") == 9
    assert any_store.audit("s").ok
    assert any_store.load("s") == fold_session(events[:9])


def test_a_fold_made_on_an_equal_state_built_apart_is_not_compared_whole_but_folded_again(
    any_store: LogStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = list(session_events(9))
    any_store.append(AppendRequest("s", 0, events[:6]))
    apart = fold_session(any_store.read("s"))  # equal to the store's state, another object
    assert apart == any_store.load("s") and apart is not any_store.load("s")
    compared = 0
    real_eq = SessionState.__eq__

    def counting_eq(self: SessionState, other: object) -> bool:
        nonlocal compared
        compared += 1
        return real_eq(self, other)

    folds = CountingFold(monkeypatch)
    monkeypatch.setattr(SessionState, "__eq__", counting_eq)
    any_store.append(AppendRequest("s", 6, events[6:9], folded=Folded(apart, fold_more(apart, events[6:9]))))
    assert (folds.calls, compared) == (1, 0)
    monkeypatch.undo()
    assert any_store.audit("s").ok
    assert any_store.load("s") == fold_session(events[:9])


def test_a_fold_of_values_other_than_the_stored_ones_is_ignored(any_store: LogStore) -> None:
    events = list(session_events(6))  # the sixth is a tool/call, whose arguments are free JSON
    any_store.append(AppendRequest("s", 0, events[:5]))
    stored = any_store.load("s", incremental=True)
    call = events[5]
    offered = replace(call, payload={**call.payload, "arguments": {"paths": ("a", "b")}})  # stored as a list
    claimed = Folded(stored, replace(stored, last=offered))  # claims the event, folded nothing
    any_store.append(AppendRequest("s", 5, [offered], folded=claimed))
    assert any_store.audit("s").ok
    assert any_store.load("s") == fold_session(any_store.read("s"))
    assert any_store.read("s")[-1].payload["arguments"] == {"paths": ["a", "b"]}
