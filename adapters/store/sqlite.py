"""The embedded store: the session log and its projection in one SQLite file.

Theory of operation
-------------------
``events`` holds the log, keyed ``(session_id, seq)``; ``sessions`` holds one
row per session: the legacy columns, the projection ``project(state)`` of the
fold (``agent_mode``, ``current_plan_json``, ``current_plan_summary_json``,
``plan_mode``, ``goal_json``), ``log_seq`` and a snapshot of the whole fold
state (``fold_state`` with its ``fold_format``). ``append_keys`` remembers
idempotency keys.

An append is one ``BEGIN IMMEDIATE`` transaction: one statement reads what
the append needs (the log's last seq, the session row's snapshot, what the
idempotency key already answered); answer a known key, compare the last seq
with ``expected_seq``, fold the new events strictly onto the snapshot (or onto
a replay when the snapshot is stale), insert the events, write the row and the
key, commit. Any exception rolls the transaction back; if even the rollback
fails the connection is closed (SQLite then discards the transaction) and the
next call opens a fresh one. Driver exceptions become ``StorageError``; the
kernel's ``ConflictError`` and the store errors pass through unchanged.

Loads read the rows in seq order and fold them as they are decoded
(``kernel.session.fold_rows``), so a load never holds the whole log.

The file runs in WAL mode with ``synchronous=FULL`` by default, so an append
that returned is durable; ``synchronous="normal"`` must be asked for. Writers
wait up to ``busy_timeout_ms`` for the write lock. The connection, its
transactions and its fork safety belong to ``adapters.sqlite_conn``, the SQL
text to ``adapters.sqlite_sql``.

Each store remembers, per session, the last snapshot text it wrote or decoded
together with its state, so the next append to a session it just wrote does
not decode its own snapshot again. The memo is only used when the row holds
exactly that text (snapshots round-trip exactly, so equal text means an equal
state); any other text, written by another process or left stale, is decoded
as usual. The memo also keeps the encoded parts of its state, so the next
snapshot encodes only what the new events changed (``snapshot_reusing``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from typing import Literal, TypeVar

from planfold.adapters.codec import Projection, SnapshotParts, decode_payload, decode_rows, project
from planfold.adapters.store.base import (
    AppendResult,
    AuditReport,
    IdempotencyMismatchError,
    InvalidRequestError,
    PreparedAppend,
    SchemaTooNewError,
    audit_state,
    check_after,
    check_session_id,
    fold_new_events,
    prepare_append,
    resume_state,
    snapshot_reusing,
    with_summary,
)
from planfold.adapters.store.sqlite_conn import ConnectionKeeper, connect_sqlite, enable_wal
from planfold.adapters.store.sqlite_schema import (
    SCHEMA_VERSION,
    Connection,
    MigrationReport,
    columns,
    migrate,
    read_version,
)
from planfold.adapters.store.sqlite_sql import (
    APPEND_READ,
    INSERT_ROWS,
    SELECT_EVENTS,
    RowSql,
    insert_events_sql,
    row_sql,
)
from planfold.kernel.errors import ConflictError
from planfold.kernel.log import Event
from planfold.kernel.session import Row, SessionState, fold_rows

__all__ = ["SqliteStore", "Synchronous", "connect_sqlite"]

T = TypeVar("T")
Synchronous = Literal["full", "normal"]

#: Sessions whose last snapshot a store keeps decoded (least recently used dropped).
_MEMO_SIZE = 64


def _as_int(value: object) -> int:
    """A stored integer; -1 stands for anything else (only a hand-edited file
    holds anything else, and -1 never matches a fold, so audits report it)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


class SqliteStore:
    """A ``Store`` in one SQLite file (see the module docstring).

    Opening migrates the file; ``SchemaTooNewError``, ``SchemaMismatchError``
    or ``StorageError`` come out of the constructor. ``connect`` replaces the
    connection factory (tests use it to inject faults).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: Synchronous = "full",
        busy_timeout_ms: int = 15_000,
        connect: Callable[[str], Connection] | None = None,
    ) -> None:
        if synchronous not in ("full", "normal"):
            raise InvalidRequestError(f"synchronous must be 'full' or 'normal', got {synchronous!r}")
        if isinstance(busy_timeout_ms, bool) or not isinstance(busy_timeout_ms, int) or busy_timeout_ms < 0:
            raise InvalidRequestError("busy_timeout_ms must be a non-negative integer")
        self.path = os.fspath(path)
        self.synchronous: Synchronous = synchronous
        self.busy_timeout_ms = busy_timeout_ms
        self._row_sql = RowSql("", "", (), False)
        self._memo: dict[str, tuple[str, str, SessionState, SnapshotParts | None]] = {}
        #: What opening the file did to its schema.
        self.migration: MigrationReport | None = None
        #: The connection of this process, and its transactions.
        self.connections = ConnectionKeeper(self.path, connect or connect_sqlite, self._setup)
        self.connections.open()

    # ----------------------------------------------------------------------
    # Connections

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _setup(self, conn: Connection) -> None:
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
        found = read_version(conn)
        if found > SCHEMA_VERSION:
            raise SchemaTooNewError(found, SCHEMA_VERSION)
        enable_wal(conn, self.busy_timeout_ms)
        conn.execute(f"PRAGMA synchronous = {self.synchronous.upper()}")
        self.migration = migrate(conn)
        self._row_sql = row_sql(columns(conn, "sessions"))

    def _run(self, operation: str, begin: str, body: Callable[[Connection], T]) -> T:
        return self.connections.run(operation, begin, body)

    def close(self) -> None:
        """Close the connection; later calls raise ``StoreClosedError``. Idempotent."""
        self.connections.close()

    # ----------------------------------------------------------------------
    # Writes

    def append(
        self,
        session_id: str,
        expected_seq: int,
        events: Sequence[Event],
        idempotency_key: str | None = None,
    ) -> AppendResult:
        """Compare-and-set append in one ``BEGIN IMMEDIATE`` transaction (see
        ``adapters.store`` for every outcome)."""
        prepared = prepare_append(session_id, expected_seq, events, idempotency_key)
        return self._run("append", "BEGIN IMMEDIATE", lambda conn: self._append(conn, prepared))

    def _append(self, conn: Connection, p: PreparedAppend) -> AppendResult:
        sid = p.session_id
        head, has_row, fold_format, fold_state, known_hash, known_first, known_last, known = conn.execute(
            APPEND_READ, (sid, p.key)
        ).fetchone()
        if p.key is not None and known:
            if known_hash != p.request_hash:
                raise IdempotencyMismatchError(sid, p.key)
            return AppendResult(sid, _as_int(known_first), _as_int(known_last), replayed=True)
        actual = _as_int(head)
        if actual != p.expected_seq:
            raise ConflictError(sid, p.expected_seq, actual)
        state = self._resume(sid, str(fold_format), str(fold_state), actual) if has_row else None
        if state is None:
            state = fold_rows(SessionState(), self._rows(conn, sid, 0))
        new_state = fold_new_events(sid, state, p.events)
        self._insert_events(conn, sid, p)
        proj = project(new_state)
        known = self._memo.get(sid)
        fold_format, fold_state, parts = snapshot_reusing(new_state, None if known is None else known[3])
        self._remember(sid, fold_format, fold_state, new_state, parts)
        values = (
            proj.agent_mode,
            int(proj.plan_mode),
            proj.current_plan_json,
            proj.current_plan_summary_json,
            proj.goal_json,
            proj.last_seq,
            fold_state,
            fold_format,
        )
        at, sql = p.events[-1].at, self._row_sql
        if not has_row:
            times = (p.events[0].at, at) if sql.timed else ()
            conn.execute(sql.insert, (sid, *values, *times, *sql.fill))
        else:
            conn.execute(sql.update, (*values, *((at,) if sql.timed else ()), sid))
        first, last = p.events[0].seq, p.events[-1].seq
        if p.key is not None:
            conn.execute(
                "INSERT INTO append_keys (session_id, key, request_hash, first_seq, last_seq) VALUES (?, ?, ?, ?, ?)",
                (sid, p.key, p.request_hash, first, last),
            )
        return AppendResult(sid, first, last)

    @staticmethod
    def _insert_events(conn: Connection, sid: str, p: PreparedAppend) -> None:
        """Insert the events with one multi-row ``INSERT`` per ``INSERT_ROWS``
        events: the connection port offers only ``execute`` (tests wrap it to
        inject faults), and a multi-row ``INSERT`` does what ``executemany``
        would, in fewer trips into SQLite."""
        rows = [(sid, e.seq, e.kind, e.at, text) for e, text in zip(p.events, p.payloads, strict=True)]
        for start in range(0, len(rows), INSERT_ROWS):
            chunk = rows[start : start + INSERT_ROWS]
            conn.execute(insert_events_sql(len(chunk)), [value for row in chunk for value in row])

    def _resume(self, sid: str, fold_format: str, fold_state: str, last_seq: int) -> SessionState | None:
        """``resume_state``, answered from the memo when the stored text is the
        one it holds (see the module docstring)."""
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
        self._memo.pop(sid, None)
        if not fold_format:
            return
        self._memo[sid] = (fold_format, fold_state, state, parts)
        if len(self._memo) > _MEMO_SIZE:
            del self._memo[next(iter(self._memo))]

    # ----------------------------------------------------------------------
    # Reads

    @staticmethod
    def _head(conn: Connection, sid: str) -> int:
        row = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id = ?", (sid,)).fetchone()
        return _as_int(row[0])

    @staticmethod
    def _stream(conn: Connection, sid: str, after: int) -> Iterator[Event]:
        """The events with seq > ``after``, decoded one row at a time: a fold
        that consumes them keeps only its state, never the whole log (a log
        held in memory also makes the garbage collector walk all of it)."""
        for seq, kind, at, payload in conn.execute(SELECT_EVENTS, (sid, after)):
            yield Event(seq, kind, at, decode_payload(payload, seq))

    @staticmethod
    def _rows(conn: Connection, sid: str, after: int) -> Iterator[Row]:
        """The rows with seq > ``after``, decoded one at a time for
        ``fold_rows``, which makes an ``Event`` only where it needs one."""
        return decode_rows(conn.execute(SELECT_EVENTS, (sid, after)))

    @classmethod
    def _events(cls, conn: Connection, sid: str, after: int) -> tuple[Event, ...]:
        return tuple(cls._stream(conn, sid, after))

    def _read(self, operation: str, session_id: str, body: Callable[[Connection, str], T]) -> T:
        check_session_id(session_id)
        return self._run(operation, "BEGIN", lambda conn: body(conn, session_id))

    def head(self, session_id: str) -> int:
        """The last seq of the session's log (0 when empty or unknown)."""
        return self._read("head", session_id, self._head)

    def read(self, session_id: str, after: int = 0) -> tuple[Event, ...]:
        """The events with seq > ``after``, in order; a stored payload that is
        not a JSON object raises the positioned ``ReplayError``."""
        start = check_after(after)
        return self._read("read", session_id, lambda conn, sid: self._events(conn, sid, start))

    def load(self, session_id: str, *, incremental: bool = False) -> SessionState:
        """The strict fold of the log (``ReplayError`` at the first bad event),
        or (``incremental``) the stored snapshot plus the fold of what follows."""
        return self._read("load", session_id, lambda conn, sid: self._load(conn, sid, incremental))

    def _load(self, conn: Connection, sid: str, incremental: bool) -> SessionState:
        if incremental:
            row = conn.execute("SELECT fold_format, fold_state, log_seq FROM sessions WHERE id = ?", (sid,)).fetchone()
            state = None if row is None else self._resume(sid, str(row[0]), str(row[1]), _as_int(row[2]))
            if state is not None:
                return fold_rows(state, self._rows(conn, sid, state.last_seq))
        return fold_rows(SessionState(), self._rows(conn, sid, 0))

    @staticmethod
    def _row(conn: Connection, sid: str) -> tuple[Projection, str, str]:
        row = conn.execute(
            "SELECT log_seq, agent_mode, plan_mode, current_plan_json, current_plan_summary_json, goal_json,"
            " fold_format, fold_state FROM sessions WHERE id = ?",
            (sid,),
        ).fetchone()
        if row is None:
            return Projection(), "", ""
        proj = Projection(_as_int(row[0]), str(row[1]), row[2] == 1, str(row[3]), str(row[4]), str(row[5]))
        return proj, str(row[6]), str(row[7])

    def projection(self, session_id: str) -> Projection:
        """The stored session row (defaults for an unknown session); an empty
        summary column is rebuilt from the fold."""
        stored = self._read("projection", session_id, lambda conn, sid: self._row(conn, sid)[0])
        if stored.current_plan_json and not stored.current_plan_summary_json:
            return with_summary(stored, self.load(session_id, incremental=True))
        return stored

    def audit(self, session_id: str) -> AuditReport:
        """Fold the log strictly (``ReplayError`` on a bad log) and report every
        difference between it and the stored row and snapshot."""

        def body(conn: Connection, sid: str) -> AuditReport:
            state = fold_rows(SessionState(), self._rows(conn, sid, 0))
            stored, fold_format, fold_state = self._row(conn, sid)
            return audit_state(sid, state, stored, fold_format, fold_state)

        return self._read("audit", session_id, body)

    def session_ids(self) -> tuple[str, ...]:
        """Every session row, legacy ones included, sorted by id."""
        def body(conn: Connection) -> tuple[str, ...]:
            return tuple(str(r[0]) for r in conn.execute("SELECT id FROM sessions ORDER BY id").fetchall())

        return self._run("session_ids", "BEGIN", body)

    def settings(self) -> dict[str, object]:
        """The live connection's journal mode, synchronous level, busy timeout
        and schema version (for diagnostics and tests)."""

        def body(conn: Connection) -> dict[str, object]:
            return {
                "journal_mode": conn.execute("PRAGMA journal_mode").fetchone()[0],
                "synchronous": conn.execute("PRAGMA synchronous").fetchone()[0],
                "busy_timeout": conn.execute("PRAGMA busy_timeout").fetchone()[0],
                "user_version": read_version(conn),
            }

        return self._run("settings", "BEGIN", body)

    def integrity_check(self) -> tuple[str, ...]:
        """``PRAGMA integrity_check``: ``("ok",)`` for a sound file."""
        return self.connections.direct(
            "integrity_check", lambda conn: tuple(str(r[0]) for r in conn.execute("PRAGMA integrity_check").fetchall())
        )
