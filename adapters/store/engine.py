"""The one append algorithm, written once above thin backends.

Theory of operation
-------------------
``LogStore`` implements the whole ``Store`` protocol: request checks,
idempotency keys, the compare-and-set check, the strict fold of the new
events onto the stored snapshot (or onto a replay when the snapshot is stale
or absent), the projection and the snapshot, strict loads, audits. A backend
supplies only what differs between storage engines:

- ``Backend.run(operation, write, body)``: one transaction. ``write=True``
  takes the session's write lock for the whole transaction (so the check and
  the write are atomic); ``write=False`` reads one consistent view. Any
  exception rolls back, and a driver exception leaves as the store's typed
  ``StorageError`` (``outcome`` ``unknown`` only when the commit itself
  failed). The kernel's ``ConflictError`` and the store errors pass through.
- ``Transaction``: the rows. ``append_view`` reads everything an append needs
  before it decides (the log's last seq, the session row's snapshot, what the
  idempotency key already answered); ``rows`` yields stored
  ``(seq, kind, at, payload text)`` rows in seq order; ``snapshot``,
  ``session_row`` and ``head`` read; ``insert_events``, ``write_row`` and
  ``insert_key`` write. Payloads are stored as the compact JSON text the codec
  produced, so every backend hands back byte-identical events.

An append is: validate (``prepare_append``, outside any transaction); in one
write transaction read the view; answer a known key (or refuse a key reused
for another request); refuse a stale ``expected_seq`` with ``ConflictError``;
fold the new events strictly (``AppendRejectedError``); insert the events,
write the session row (projection and snapshot) and the key; commit. All
checks come before the first write, and a backend writes nothing unless the
transaction commits, so nothing is ever partly written.

Loads fold rows as they are decoded (``kernel.session.fold_rows`` over
``codec.decode_rows``), so a load never holds the whole log.

The store remembers, per session, the last snapshot text it wrote or decoded
together with its state, so the next append to a session it just wrote does
not decode its own snapshot again. The memo is used only when the stored row
holds exactly that text (snapshots round-trip exactly, so equal text means an
equal state); any other text, written by another process or left stale, is
decoded as usual. The memo also keeps the encoded parts of its state, so the
next snapshot encodes only what the new events changed (``snapshot_reusing``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from planfold.adapters.codec import decode_payload, decode_rows
from planfold.adapters.store.base import (
    AppendResult,
    AuditReport,
    IdempotencyMismatchError,
    PreparedAppend,
    audit_state,
    check_after,
    check_session_id,
    fold_new_events,
    prepare_append,
)
from planfold.adapters.store.projection import Projection, project, resume_state, snapshot_reusing, with_summary
from planfold.adapters.store.snapshot import SnapshotParts
from planfold.kernel.errors import ConflictError
from planfold.kernel.log import Event
from planfold.kernel.session import SessionState, fold_rows

__all__ = [
    "AppendView",
    "Backend",
    "KnownKey",
    "LogStore",
    "SessionRow",
    "StoredEvent",
    "Transaction",
]

T = TypeVar("T")

#: One stored event: seq, kind, at and the payload's JSON text. Backends may
#: hand back any values (a hand-edited database holds anything); the fold
#: checks them.
StoredEvent = tuple[Any, Any, Any, Any]

#: Sessions whose last snapshot a store keeps decoded (least recently used dropped).
_MEMO_SIZE = 64


@dataclass(frozen=True, slots=True)
class KnownKey:
    """What an idempotency key already answered."""

    request_hash: str
    first_seq: int
    last_seq: int


@dataclass(frozen=True, slots=True)
class AppendView:
    """Everything an append reads before it decides: the log's last seq,
    whether the session row exists and its snapshot, and the key's answer."""

    head: int
    has_row: bool
    fold_format: str = ""
    fold_state: str = ""
    known: KnownKey | None = None


@dataclass(frozen=True, slots=True)
class SessionRow:
    """The session row a store keeps: the projection and the fold snapshot."""

    projection: Projection
    fold_format: str
    fold_state: str


class Transaction(Protocol):
    """The rows of one backend, inside one transaction (see the module docstring)."""

    def append_view(self, session_id: str, key: str | None) -> AppendView: ...

    def head(self, session_id: str) -> int: ...

    def rows(self, session_id: str, after: int) -> Iterable[StoredEvent]: ...

    def snapshot(self, session_id: str) -> tuple[str, str, int] | None: ...

    def session_row(self, session_id: str) -> SessionRow | None: ...

    def session_ids(self) -> tuple[str, ...]: ...

    def insert_events(self, session_id: str, rows: Sequence[tuple[int, str, int, str]]) -> None: ...

    def write_row(self, session_id: str, row: SessionRow, *, exists: bool, first_at: int, last_at: int) -> None: ...

    def insert_key(self, session_id: str, key: str, request_hash: str, first_seq: int, last_seq: int) -> None: ...


class Backend(Protocol):
    """Transactions on one storage engine (see the module docstring)."""

    def run(self, operation: str, write: bool, body: Callable[[Transaction], T]) -> T: ...

    def close(self) -> None: ...


class LogStore:
    """A ``Store`` over any ``Backend`` (see the module docstring)."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._memo: dict[str, tuple[str, str, SessionState, SnapshotParts | None]] = {}
        self._memo_lock = threading.Lock()

    def __enter__(self) -> LogStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the backend; later calls raise ``StoreClosedError``. Idempotent."""
        self.backend.close()

    # ----------------------------------------------------------------------
    # Writes

    def append(
        self,
        session_id: str,
        expected_seq: int,
        events: Sequence[Event],
        idempotency_key: str | None = None,
    ) -> AppendResult:
        """Compare-and-set append in one write transaction (see ``adapters.store.base``
        for every outcome)."""
        prepared = prepare_append(session_id, expected_seq, events, idempotency_key)
        return self.backend.run("append", True, lambda tx: self._append(tx, prepared))

    def _append(self, tx: Transaction, p: PreparedAppend) -> AppendResult:
        sid = p.session_id
        view = tx.append_view(sid, p.key)
        if p.key is not None and view.known is not None:
            if view.known.request_hash != p.request_hash:
                raise IdempotencyMismatchError(sid, p.key)
            return AppendResult(sid, view.known.first_seq, view.known.last_seq, replayed=True)
        if view.head != p.expected_seq:
            raise ConflictError(sid, p.expected_seq, view.head)
        state = self._resume(sid, view.fold_format, view.fold_state, view.head) if view.has_row else None
        if state is None:
            state = fold_rows(SessionState(), decode_rows(tx.rows(sid, 0)))
        new_state = fold_new_events(sid, state, p.events)
        # Every check is behind us: from here on only writes.
        tx.insert_events(sid, [(e.seq, e.kind, e.at, text) for e, text in zip(p.events, p.payloads, strict=True)])
        with self._memo_lock:
            known = self._memo.get(sid)
        fold_format, fold_state, parts = snapshot_reusing(new_state, None if known is None else known[3])
        self._remember(sid, fold_format, fold_state, new_state, parts)
        row = SessionRow(project(new_state), fold_format, fold_state)
        tx.write_row(sid, row, exists=view.has_row, first_at=p.events[0].at, last_at=p.events[-1].at)
        first, last = p.events[0].seq, p.events[-1].seq
        if p.key is not None:
            tx.insert_key(sid, p.key, p.request_hash, first, last)
        return AppendResult(sid, first, last)

    def _resume(self, sid: str, fold_format: str, fold_state: str, last_seq: int) -> SessionState | None:
        """``resume_state``, answered from the memo when the stored text is the
        one it holds (see the module docstring)."""
        with self._memo_lock:
            known = self._memo.get(sid)
        if known is not None and known[0] == fold_format and known[1] == fold_state and known[2].last_seq == last_seq:
            return known[2]
        state = resume_state(fold_format, fold_state, last_seq)
        if state is not None:
            self._remember(sid, fold_format, fold_state, state, None)
        return state

    def _remember(
        self, sid: str, fold_format: str, fold_state: str, state: SessionState, parts: SnapshotParts | None
    ) -> None:
        # Pairing a text with the state it encodes is true whether or not the
        # transaction that writes it commits, so the memo needs no rollback.
        # The encoded parts describe objects of that state only, so they are
        # right for any later state that shares them.
        with self._memo_lock:
            self._memo.pop(sid, None)
            if not fold_format:
                return
            self._memo[sid] = (fold_format, fold_state, state, parts)
            if len(self._memo) > _MEMO_SIZE:
                del self._memo[next(iter(self._memo))]

    # ----------------------------------------------------------------------
    # Reads

    def _read(self, operation: str, session_id: str, body: Callable[[Transaction, str], T]) -> T:
        check_session_id(session_id)
        return self.backend.run(operation, False, lambda tx: body(tx, session_id))

    def head(self, session_id: str) -> int:
        """The last seq of the session's log (0 when empty or unknown)."""
        return self._read("head", session_id, lambda tx, sid: tx.head(sid))

    def read(self, session_id: str, after: int = 0) -> tuple[Event, ...]:
        """The events with seq > ``after``, in order, as fresh values; a stored
        payload that is not a JSON object raises the positioned ``ReplayError``."""
        start = check_after(after)
        return self._read("read", session_id, lambda tx, sid: _events(tx.rows(sid, start)))

    def load(self, session_id: str, *, incremental: bool = False) -> SessionState:
        """The strict fold of the log (``ReplayError`` at the first bad event),
        or (``incremental``) the stored snapshot plus the fold of what follows."""
        return self._read("load", session_id, lambda tx, sid: self._load(tx, sid, incremental))

    def _load(self, tx: Transaction, sid: str, incremental: bool) -> SessionState:
        if incremental:
            stored = tx.snapshot(sid)
            state = None if stored is None else self._resume(sid, *stored)
            if state is not None:
                return fold_rows(state, decode_rows(tx.rows(sid, state.last_seq)))
        return fold_rows(SessionState(), decode_rows(tx.rows(sid, 0)))

    def projection(self, session_id: str) -> Projection:
        """The stored session row (defaults for an unknown session); an empty
        summary column is rebuilt from the fold."""

        def body(tx: Transaction, sid: str) -> Projection:
            row = tx.session_row(sid)
            return Projection() if row is None else row.projection

        stored = self._read("projection", session_id, body)
        if stored.current_plan_json and not stored.current_plan_summary_json:
            return with_summary(stored, self.load(session_id, incremental=True))
        return stored

    def audit(self, session_id: str) -> AuditReport:
        """Fold the log strictly (``ReplayError`` on a bad log) and report every
        difference between it and the stored row and snapshot, from one
        consistent view."""

        def body(tx: Transaction, sid: str) -> AuditReport:
            state = fold_rows(SessionState(), decode_rows(tx.rows(sid, 0)))
            row = tx.session_row(sid) or SessionRow(Projection(), "", "")
            return audit_state(sid, state, row.projection, row.fold_format, row.fold_state)

        return self._read("audit", session_id, body)

    def session_ids(self) -> tuple[str, ...]:
        """Every session the store knows, sorted by id."""
        return self.backend.run("session_ids", False, lambda tx: tx.session_ids())


def _events(rows: Iterable[StoredEvent]) -> tuple[Event, ...]:
    return tuple(Event(seq, kind, at, decode_payload(payload, seq)) for seq, kind, at, payload in rows)
