"""The in-memory reference store.

Theory of operation
-------------------
``MemoryStore`` is ``LogStore`` (the one append algorithm) over the simplest
backend there is: one lock, a dict of sessions, each with its events
(payloads kept as the same compact JSON text the other backends write), its
session row, its idempotency keys, the goal ids it created and, for a fork,
its provenance. A transaction holds the lock and keeps
its writes aside until the body returns, so a failed body changes nothing.
Every read decodes fresh values, so a caller can never mutate what the store
holds. Leases run on ``clock`` (integer milliseconds, the system clock by
default); followers wait on a condition variable that every commit notifies.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TypeVar

from ..provenance import ForkProvenance
from .base import Lease, StoreClosedError
from .engine import AppendView, KnownKey, LogStore, SessionRow, StoredEvent, Transaction, Watch
from .session_log import system_clock

__all__ = ["MemoryBackend", "MemoryStore"]

T = TypeVar("T")


@dataclass
class _Session:
    events: list[tuple[int, str, int, str]] = field(default_factory=list)
    row: SessionRow | None = None
    keys: dict[str, KnownKey] = field(default_factory=dict)
    goal_ids: set[str] = field(default_factory=set)
    provenance: ForkProvenance | None = None


class _MemoryTransaction:
    """Reads see the committed sessions; writes wait in ``pending``."""

    def __init__(self, sessions: dict[str, _Session], leases: dict[str, Lease], clock: Callable[[], int]) -> None:
        self.sessions = sessions
        self.leases = leases
        self.clock = clock
        self.pending: list[Callable[[], None]] = []

    def _session(self, sid: str) -> _Session:
        return self.sessions.setdefault(sid, _Session())

    def append_view(self, session_id: str, key: str | None) -> AppendView:
        lease = self.leases.get(session_id)
        now = 0 if lease is None else self.clock()  # the clock matters only to a lease
        session = self.sessions.get(session_id)
        if session is None:
            return AppendView(0, False, lease=lease, now=now)
        row = session.row
        return AppendView(
            len(session.events),
            row is not None,
            "" if row is None else row.fold_format,
            "" if row is None else row.fold_state,
            None if key is None else session.keys.get(key),
            lease,
            now,
        )

    def head(self, session_id: str) -> int:
        session = self.sessions.get(session_id)
        return 0 if session is None else len(session.events)

    def rows(self, session_id: str, after: int) -> Iterator[StoredEvent]:
        session = self.sessions.get(session_id)
        return iter(() if session is None else session.events[after:])

    def prefix(self, session_id: str, upto: int) -> Iterator[StoredEvent]:
        session = self.sessions.get(session_id)
        return iter(() if session is None else session.events[: max(upto, 0)])

    def snapshot(self, session_id: str) -> tuple[str, str, int] | None:
        row = self.session_row(session_id)
        return None if row is None else (row.fold_format, row.fold_state, row.projection.last_seq)

    def session_row(self, session_id: str) -> SessionRow | None:
        session = self.sessions.get(session_id)
        return None if session is None else session.row

    def session_ids(self) -> tuple[str, ...]:
        return tuple(sorted(sid for sid, session in self.sessions.items() if session.events))

    def insert_events(self, session_id: str, rows: Sequence[tuple[int, str, int, str]]) -> None:
        self.pending.append(lambda: self._session(session_id).events.extend(rows))

    def write_row(self, session_id: str, row: SessionRow, *, exists: bool, first_at: int, last_at: int) -> None:
        def write() -> None:
            self._session(session_id).row = row

        self.pending.append(write)

    def insert_key(self, session_id: str, key: str, request_hash: str, first_seq: int, last_seq: int) -> None:
        known = KnownKey(request_hash, first_seq, last_seq)
        self.pending.append(lambda: self._session(session_id).keys.__setitem__(key, known))

    def used_goal_ids(self, session_id: str, ids: Sequence[str]) -> frozenset[str]:
        session = self.sessions.get(session_id)
        return frozenset() if session is None else frozenset(ids) & session.goal_ids

    def insert_goal_ids(self, session_id: str, rows: Sequence[tuple[str, int]]) -> None:
        self.pending.append(lambda: self._session(session_id).goal_ids.update(goal_id for goal_id, _ in rows))

    def lease_view(self, session_id: str) -> tuple[Lease | None, int]:
        return self.leases.get(session_id), self.clock()

    def write_lease(self, lease: Lease) -> None:
        self.pending.append(lambda: self.leases.__setitem__(lease.session_id, lease))

    def provenance(self, session_id: str) -> ForkProvenance | None:
        session = self.sessions.get(session_id)
        return None if session is None else session.provenance

    def write_provenance(self, session_id: str, provenance: ForkProvenance) -> None:
        def write() -> None:
            self._session(session_id).provenance = provenance

        self.pending.append(write)

    def commit(self) -> None:
        for write in self.pending:
            write()


class _MemoryWatch:
    def __init__(self, backend: MemoryBackend, session_id: str) -> None:
        self.backend = backend
        self.session_id = session_id

    def wait(self, position: int, timeout: float | None) -> bool:
        backend = self.backend
        with backend.changed:
            return backend.changed.wait_for(lambda: backend.closed or backend.head(self.session_id) > position, timeout)


class MemoryBackend:
    """Sessions in a dict under one lock (see the module docstring)."""

    def __init__(self, clock: Callable[[], int] = system_clock) -> None:
        self._lock = threading.Lock()
        self.changed = threading.Condition(self._lock)
        self._sessions: dict[str, _Session] = {}
        self._leases: dict[str, Lease] = {}
        self._clock = clock
        self._closed = False

    def run(self, operation: str, write: bool, body: Callable[[Transaction], T]) -> T:
        with self._lock:
            if self._closed:
                raise StoreClosedError()
            tx = _MemoryTransaction(self._sessions, self._leases, self._clock)
            result = body(tx)
            tx.commit()
            if tx.pending:
                self.changed.notify_all()
            return result

    @property
    def closed(self) -> bool:
        return self._closed

    def head(self, session_id: str) -> int:
        """The session's last seq (the caller holds the lock)."""
        session = self._sessions.get(session_id)
        return 0 if session is None else len(session.events)

    @contextmanager
    def watch(self, session_id: str) -> Iterator[Watch]:
        yield _MemoryWatch(self, session_id)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self.changed.notify_all()


class MemoryStore(LogStore):
    """A ``Store`` held in process memory (see the module docstring); leases
    run on ``clock`` (integer milliseconds)."""

    def __init__(self, *, clock: Callable[[], int] = system_clock) -> None:
        super().__init__(MemoryBackend(clock))

    def __enter__(self) -> MemoryStore:
        return self
