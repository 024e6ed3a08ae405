"""Opening a SessionLog goes through the store's incremental open.

The log is opened from the stored snapshot plus a strict fold of whatever
follows it, never by reading and folding the whole log; the events are read
on first use, up to the state the log was opened at, and are exactly the
events of the store.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest

from benchmarks.workloads import session_events
from planfold.adapters.store.base import AppendRequest, AppendResult, Store
from planfold.adapters.store.memory import MemoryStore
from planfold.adapters.store.session_log import SessionLog
from planfold.adapters.store.sqlite import SqliteStore
from planfold.kernel.errors import ReplayError
from planfold.kernel.log import Draft, Event
from planfold.kernel.session import SessionState, fold_session


class Counting:
    """A store that counts how it is read."""

    def __init__(self, store: Store) -> None:
        self.inner = store
        self.reads: list[int] = []
        self.loads: list[bool] = []

    def append(
        self, session_id: str, expected_seq: int, events: Sequence[Event], idempotency_key: str | None = None
    ) -> AppendResult:
        return self.inner.append(AppendRequest(session_id, expected_seq, events, idempotency_key))

    def read(self, session_id: str, after: int = 0) -> tuple[Event, ...]:
        self.reads.append(after)
        return self.inner.read(session_id, after)

    def load(self, session_id: str, *, incremental: bool = False) -> SessionState:
        self.loads.append(incremental)
        return self.inner.load(session_id, incremental=incremental)


def clock() -> int:
    return 2_000_000_000_000


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "memory":
        return MemoryStore()
    return SqliteStore(tmp_path / "log.db")


def test_opening_reads_no_event_and_folds_like_the_whole_log(store: Store) -> None:
    events = list(session_events(300))
    store.append(AppendRequest("s", 0, events))
    counting = Counting(store)
    log = SessionLog(counting, "s", clock)  # type: ignore[arg-type]
    assert counting.loads == [True] and counting.reads == []
    assert log.state == fold_session(events)
    assert log.events == tuple(store.read("s"))
    assert counting.reads == [0]
    assert log.events == tuple(store.read("s")) and counting.reads == [0]  # read once


def test_events_read_after_another_writer_stop_at_the_opened_state(store: Store) -> None:
    events = list(session_events(60))
    store.append(AppendRequest("s", 0, events[:40]))
    log = SessionLog(store, "s", clock)
    store.append(AppendRequest("s", 40, events[40:]))  # another writer, after the open
    assert log.last_seq == 40
    assert log.events == store.read("s")[:40]


def test_appends_before_and_after_the_events_are_read_are_among_them(store: Store) -> None:
    events = list(session_events(40))
    store.append(AppendRequest("s", 0, events[:20]))
    log = SessionLog(store, "s", clock)
    _append(log, events[20:30])
    assert log.events == store.read("s")
    _append(log, events[30:])
    assert log.events == store.read("s")
    assert log.state == fold_session(events)


def _append(log: SessionLog, events: Sequence[Event]) -> None:
    """Append ``events`` through ``log`` as drafts, each at its own time."""
    for event in events:
        assert log.append((Draft(event.kind, event.payload),), at=event.at) == (event,)


def test_a_bad_event_after_the_snapshot_fails_the_open(tmp_path: Path) -> None:
    path = tmp_path / "bad.db"
    events = list(session_events(50))
    with SqliteStore(path) as sqlite:
        sqlite.append(AppendRequest("s", 0, events))
    conn = sqlite3.connect(path)
    conn.execute(
        "INSERT INTO events (session_id, seq, kind, at, payload) VALUES ('s', 51, 'plan/mode', ?, '{\"active\": 1}')",
        (events[-1].at,),
    )
    conn.commit()
    conn.close()
    with SqliteStore(path) as sqlite, pytest.raises(ReplayError) as info:
        SessionLog(sqlite, "s", clock)
    assert (info.value.position, info.value.rule) == (51, "malformed-payload")


def test_an_empty_session_opens_empty_and_reads_nothing(store: Store) -> None:
    log = SessionLog(store, "nobody", clock)
    assert log.state == SessionState() and log.events == ()
