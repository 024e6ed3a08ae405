"""The in-memory reference store.

Theory of operation
-------------------
``MemoryStore`` is the simplest thing that honours the ``Store`` contract: one
lock, a dict of sessions, each with its events (payloads kept as the same
compact JSON text the SQLite store writes), its projection row, its snapshot
and its idempotency keys. Every read decodes fresh values, so a caller can
never mutate what the store holds. It runs the same shared rules as the SQLite
store (``prepare_append``, ``fold_new_events``, ``audit_state``), raises the
same errors, and is the reference the contract suite compares against.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from planfold.adapters.codec import Projection, decode_payload, project
from planfold.adapters.store.base import (
    AppendResult,
    AuditReport,
    IdempotencyMismatchError,
    StoreClosedError,
    audit_state,
    check_after,
    check_session_id,
    fold_new_events,
    prepare_append,
    resume_state,
    snapshot_of,
    with_summary,
)
from planfold.kernel.errors import ConflictError
from planfold.kernel.log import Event
from planfold.kernel.session import SessionState, fold_more, fold_session

__all__ = ["MemoryStore"]


@dataclass
class _Session:
    events: list[tuple[int, str, int, str]] = field(default_factory=list)
    row: Projection = field(default_factory=Projection)
    snapshot_format: str = ""
    snapshot: str = ""
    keys: dict[str, tuple[str, int, int]] = field(default_factory=dict)


class MemoryStore:
    """A ``Store`` held in process memory (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, _Session] = {}
        self._closed = False

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the store; later calls raise ``StoreClosedError``. Idempotent."""
        with self._lock:
            self._closed = True

    def _session(self, session_id: str) -> _Session | None:
        if self._closed:
            raise StoreClosedError()
        return self._sessions.get(check_session_id(session_id))

    def append(
        self,
        session_id: str,
        expected_seq: int,
        events: Sequence[Event],
        idempotency_key: str | None = None,
    ) -> AppendResult:
        """Compare-and-set append (see ``adapters.store``)."""
        prepared = prepare_append(session_id, expected_seq, events, idempotency_key)
        with self._lock:
            session = self._session(session_id)
            key = prepared.key
            if key is not None and session is not None and key in session.keys:
                request_hash, first, last = session.keys[key]
                if request_hash != prepared.request_hash:
                    raise IdempotencyMismatchError(session_id, key)
                return AppendResult(session_id, first, last, replayed=True)
            actual = 0 if session is None else len(session.events)
            if actual != expected_seq:
                raise ConflictError(session_id, expected_seq, actual)
            state = self._state(session)
            new_state = fold_new_events(session_id, state, prepared.events)
            target = _Session() if session is None else session
            target.events.extend(
                (e.seq, e.kind, e.at, text) for e, text in zip(prepared.events, prepared.payloads, strict=True)
            )
            target.row = project(new_state)
            target.snapshot_format, target.snapshot = snapshot_of(new_state)
            first, last = prepared.events[0].seq, prepared.events[-1].seq
            if key is not None:
                target.keys[key] = (prepared.request_hash, first, last)
            self._sessions[session_id] = target
            return AppendResult(session_id, first, last)

    def _state(self, session: _Session | None) -> SessionState:
        if session is None:
            return SessionState()
        resumed = resume_state(session.snapshot_format, session.snapshot, len(session.events))
        return fold_session(_stream(session.events)) if resumed is None else resumed

    def head(self, session_id: str) -> int:
        """The last seq of the session's log (0 when empty or unknown)."""
        with self._lock:
            session = self._session(session_id)
            return 0 if session is None else len(session.events)

    def read(self, session_id: str, after: int = 0) -> tuple[Event, ...]:
        """The events with seq > ``after``, in order, as fresh values."""
        start = check_after(after)
        with self._lock:
            session = self._session(session_id)
            rows = [] if session is None else session.events[start:]
        return _decode(rows)

    def load(self, session_id: str, *, incremental: bool = False) -> SessionState:
        """The strict fold of the log, or (``incremental``) the snapshot plus
        the fold of whatever follows it. A bad log raises ``ReplayError``."""
        with self._lock:
            session = self._session(session_id)
            if session is None:
                return SessionState()
            rows = list(session.events)
            resumed = (
                resume_state(session.snapshot_format, session.snapshot, session.row.last_seq)
                if incremental
                else None
            )
        if resumed is not None:
            return fold_more(resumed, _stream(rows[resumed.last_seq :]))
        return fold_session(_stream(rows))

    def projection(self, session_id: str) -> Projection:
        """The stored session row (defaults for an unknown session)."""
        with self._lock:
            session = self._session(session_id)
            row = Projection() if session is None else session.row
        return with_summary(row, self.load(session_id, incremental=True)) if row.current_plan_json else row

    def audit(self, session_id: str) -> AuditReport:
        """Fold the log strictly and compare the stored row and snapshot with it."""
        state = self.load(session_id)
        with self._lock:
            session = self._session(session_id) or _Session()
            return audit_state(session_id, state, session.row, session.snapshot_format, session.snapshot)

    def session_ids(self) -> tuple[str, ...]:
        """Every session with at least one event, sorted."""
        with self._lock:
            if self._closed:
                raise StoreClosedError()
            return tuple(sorted(self._sessions))


def _stream(rows: Sequence[tuple[int, str, int, str]]) -> Iterator[Event]:
    """The events of ``rows``, decoded one at a time for a fold to consume."""
    for seq, kind, at, text in rows:
        yield Event(seq, kind, at, decode_payload(text, seq))


def _decode(rows: Sequence[tuple[int, str, int, str]]) -> tuple[Event, ...]:
    return tuple(_stream(rows))
