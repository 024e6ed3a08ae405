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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TypeVar

from ..provenance import ForkProvenance
from .base import Lease, StoreClosedError
from .engine import KnownKey, LogStore, SessionRead, SessionRow, SessionView, SessionWrite, Transaction, Watch
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

    def view(self, read: SessionRead) -> SessionView:
        session_id, key, goal_ids, row, provenance = read
        lease = self.leases.get(session_id)
        now = self.clock()
        session = self.sessions.get(session_id)
        if session is None:
            return SessionView(0, False, lease=lease, now=now)
        stored = session.row
        return SessionView(
            len(session.events),
            stored is not None,
            "" if stored is None else stored.fold_format,
            "" if stored is None else stored.fold_state,
            None if key is None else session.keys.get(key),
            lease,
            now,
            stored if row else None,
            frozenset(goal_ids) & session.goal_ids if goal_ids else frozenset(),
            session.provenance if provenance else None,
        )

    def rows(self, session_id: str, after: int = 0, upto: int | None = None) -> Iterator[tuple[int, str, int, str]]:
        session = self.sessions.get(session_id)
        return iter(() if session is None else session.events[after : None if upto is None else max(upto, after)])

    def session_ids(self) -> tuple[str, ...]:
        return tuple(sorted(sid for sid, session in self.sessions.items() if session.events))

    def write(self, write: SessionWrite) -> None:
        self.pending.append(lambda: self._apply(write))

    def _apply(self, w: SessionWrite) -> None:
        if w.lease is not None:
            self.leases[w.lease.session_id] = w.lease
        if not (w.events or w.row or w.key or w.provenance):
            return  # a lease alone: the session's record is not made
        session = self._session(w.session_id)
        session.events.extend(w.events)
        session.goal_ids.update(goal_id for goal_id, _ in w.goal_ids)
        if w.row is not None:
            session.row = w.row
        if w.key is not None and w.known is not None:
            session.keys[w.key] = w.known
        if w.provenance is not None:
            session.provenance = w.provenance

    def _commit(self) -> None:
        for write in self.pending:
            write()


class _MemoryWatch:
    def __init__(self, backend: MemoryBackend, session_id: str) -> None:
        self.backend = backend
        self.session_id = session_id

    def wait(self, position: int, timeout: float | None) -> bool:
        backend = self.backend
        with backend.changed:
            grown = lambda: backend.closed or backend._head(self.session_id) > position  # noqa: E731
            return backend.changed.wait_for(grown, timeout)


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
            tx._commit()
            if tx.pending:
                self.changed.notify_all()
            return result

    @property
    def closed(self) -> bool:
        return self._closed

    def _head(self, session_id: str) -> int:
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
