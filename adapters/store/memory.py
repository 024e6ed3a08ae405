"""The in-memory reference store.

Theory of operation
-------------------
``MemoryStore`` is ``LogStore`` (the one append algorithm) over the simplest
backend there is: one lock, a dict of sessions, each with its events
(payloads kept as the same compact JSON text the other backends write), its
session row and its idempotency keys. A transaction holds the lock and keeps
its writes aside until the body returns, so a failed body changes nothing.
Every read decodes fresh values, so a caller can never mutate what the store
holds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from planfold.adapters.store.base import StoreClosedError
from planfold.adapters.store.engine import AppendView, KnownKey, LogStore, SessionRow, StoredEvent, Transaction

__all__ = ["MemoryBackend", "MemoryStore"]

T = TypeVar("T")


@dataclass
class _Session:
    events: list[tuple[int, str, int, str]] = field(default_factory=list)
    row: SessionRow | None = None
    keys: dict[str, KnownKey] = field(default_factory=dict)


class _MemoryTransaction:
    """Reads see the committed sessions; writes wait in ``pending``."""

    def __init__(self, sessions: dict[str, _Session]) -> None:
        self.sessions = sessions
        self.pending: list[Callable[[], None]] = []

    def _session(self, sid: str) -> _Session:
        return self.sessions.setdefault(sid, _Session())

    def append_view(self, session_id: str, key: str | None) -> AppendView:
        session = self.sessions.get(session_id)
        if session is None:
            return AppendView(0, False)
        row = session.row
        return AppendView(
            len(session.events),
            row is not None,
            "" if row is None else row.fold_format,
            "" if row is None else row.fold_state,
            None if key is None else session.keys.get(key),
        )

    def head(self, session_id: str) -> int:
        session = self.sessions.get(session_id)
        return 0 if session is None else len(session.events)

    def rows(self, session_id: str, after: int) -> Iterator[StoredEvent]:
        session = self.sessions.get(session_id)
        return iter(() if session is None else session.events[after:])

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

    def commit(self) -> None:
        for write in self.pending:
            write()


class MemoryBackend:
    """Sessions in a dict under one lock (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, _Session] = {}
        self._closed = False

    def run(self, operation: str, write: bool, body: Callable[[Transaction], T]) -> T:
        with self._lock:
            if self._closed:
                raise StoreClosedError()
            tx = _MemoryTransaction(self._sessions)
            result = body(tx)
            tx.commit()
            return result

    def close(self) -> None:
        with self._lock:
            self._closed = True


class MemoryStore(LogStore):
    """A ``Store`` held in process memory (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__(MemoryBackend())

    def __enter__(self) -> MemoryStore:
        return self
