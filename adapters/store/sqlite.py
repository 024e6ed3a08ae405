"""The embedded store: the session log and its projection in one SQLite file.

Theory of operation
-------------------
``SqliteStore`` is ``LogStore`` (the one append algorithm, ``adapters.store.
engine``) over ``SqliteBackend``. ``events`` holds the log, keyed
``(session_id, seq)``; ``sessions`` holds one row per session: the legacy
columns, the projection ``project(state)`` of the fold (``agent_mode``,
``current_plan_json``, ``current_plan_summary_json``, ``plan_mode``,
``goal_json``), ``log_seq`` and a snapshot of the whole fold state
(``fold_state`` with its ``fold_format``). ``append_keys`` remembers
idempotency keys. ``goal_ids`` holds the goal ids each session has created
(an append checks the creates it carries against it). ``forks`` holds a
forked session's provenance; a file opened read-only at a version before it
(``adapters.store.sqlite_readonly``) has no forks.

An append is one ``BEGIN IMMEDIATE`` transaction, which takes the file's
write lock before the append reads anything; a single statement
(``APPEND_READ``, or ``APPEND_READ_NO_KEY`` for an append without an
idempotency key) then reads what the append needs. The connection keeps the
view of each session it appended to without a key as the append left it,
with the connection's ``PRAGMA data_version``, which SQLite changes exactly
when another connection commits: while it has not changed, no one else has
written the file, and the next append without a key to such a session takes
its view from there instead of reading it (any other write, and any failure,
forgets every view kept). Reads run in a ``BEGIN``
transaction (one consistent view).

Appends through one store share commits (group commit): an append that
finds no commit under way leads. It takes every append waiting, its own
included, and runs them in one ``BEGIN IMMEDIATE`` transaction, each in a
``SAVEPOINT`` of its own with its own compare-and-set, idempotency key and
strict fold, in the order they came; a refused one is rolled back to its
savepoint and leaves the others as they were, and each later one sees what
the earlier ones wrote. One ``COMMIT`` (one flush) makes them all durable;
only then is each waiting caller woken with its own answer or error, and the
lead handed to the first append that came meanwhile, which commits the next
group. A failed commit is every grouped append's error (``outcome``
``unknown``). An append that finds no one else waiting runs alone, exactly as
without grouping (no savepoint). Any exception rolls the transaction back;
if even the rollback fails the connection is closed (SQLite then discards the
transaction) and the next call opens a fresh one. Driver exceptions become
``StorageError``; the kernel's ``ConflictError`` and the store errors pass
through unchanged.

The file runs in WAL mode with ``synchronous=FULL`` by default, so an append
that returned is durable; ``synchronous="normal"`` must be asked for. Writers
wait up to ``busy_timeout_ms`` for the write lock (the store waits itself,
without SQLite's busy handler), and take it in turns with other connections
that write at the same time (``adapters.store.sqlite_turns``). Goal leases (``goal_leases``)
run on ``clock``, the system clock in milliseconds by default, so processes
that share a file should share a host clock. ``follow`` polls the log's head
at an interval that starts at a few milliseconds and doubles while nothing
happens, up to ``poll_interval`` seconds. The connection, its
transactions and its fork safety belong to ``adapters.store.sqlite_conn``, the
SQL text to ``adapters.store.sqlite_sql``.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal, TypeVar, cast

from ..provenance import ForkProvenance
from .base import InvalidRequestError, Lease
from .engine import (
    EventRow,
    LogStore,
    SessionRead,
    SessionRow,
    SessionView,
    SessionWrite,
    StoredEvent,
    Transaction,
    Watch,
)
from .group import CommitGroup, Pending, own_copy
from .session_log import system_clock
from .sqlite_conn import ConnectionKeeper, connect_sqlite, enable_wal
from .sqlite_schema import (
    SCHEMA_VERSION,
    Connection,
    MigrationReport,
    check_sound,
    columns,
    migrate,
    read_version,
    recognise,
    translate,
)
from .sqlite_sql import (
    APPEND_READ,
    APPEND_READ_NO_KEY,
    HAS_TABLE,
    INSERT_FORK,
    INSERT_GOAL_ID,
    INSERT_KEY,
    INSERT_ROWS,
    SELECT_EVENTS,
    SELECT_FORK,
    SELECT_RANGE,
    SELECT_ROW,
    UPSERT_LEASE,
    VIEW_READ_NO_LEASE,
    RowSql,
    insert_events_sql,
    row_sql,
    used_goal_ids_sql,
)
from .sqlite_turns import WriteTurns
from .stored import stored_int, stored_key, stored_lease, stored_provenance, stored_row

__all__ = ["SqliteBackend", "SqliteStore", "Synchronous", "connect_sqlite"]

T = TypeVar("T")
Synchronous = Literal["full", "normal"]

#: Sessions whose view after their last append a connection keeps (the oldest dropped).
_VIEWS = 64


def has_table(conn: Connection, name: str) -> bool:
    """Whether the file has the table ``name`` (a file opened read-only may
    be of a version before its leases or its forks)."""
    return conn.execute(HAS_TABLE, (name,)).fetchone() is not None


class _SqliteTransaction:
    """The rows of one SQLite file, on a connection inside a transaction."""

    def __init__(self, conn: Connection, row_sql: RowSql, clock: Callable[[], int], leases: bool) -> None:
        self.conn = conn
        self.row_sql = row_sql
        self.clock = clock
        #: The view's statement without a key: a file without the leases
        #: table (an older version, opened read-only) has no lease to read.
        self.read_no_key = APPEND_READ_NO_KEY if leases else VIEW_READ_NO_LEASE
        #: Runs a statement whose result is read at once (or not at all): on a
        #: plain connection through one cursor kept for it, which spares the
        #: cursor every ``Connection.execute`` makes; on any other connection
        #: (a test's wrapper) through its ``execute``.
        self.run: Callable[[str, Any], sqlite3.Cursor] = (
            conn.cursor().execute if type(conn) is sqlite3.Connection else conn.execute
        )
        #: The view of each session right after this connection last appended
        #: to it without a key, and the connection's ``data_version`` then
        #: (see ``view``).
        self.views: dict[str, SessionView] = {}
        self.views_version: int | None = None
        #: What the current transaction read and wrote: the session of its
        #: append, the ``data_version`` it read, the lease it read and the one
        #: it wrote, and the view of its session once it commits.
        self.session: str | None = None
        self.version: int | None = None
        self.lease_read: Lease | None = None
        self.lease_written: Lease | None = None
        self.pending: tuple[str, SessionView] | None = None
        #: Whether the current transaction holds the file's write lock.
        self.writing = False

    def _begin(self, writing: bool) -> None:
        """A transaction starts on this connection."""
        self.session = self.version = self.lease_read = self.lease_written = self.pending = None
        self.writing = writing

    def _committed(self, appended: bool) -> None:
        """The transaction committed: an append without a key leaves the view
        of its session known, any other append leaves that view unknown, and
        any other write may have changed a lease, so every view is forgotten."""
        if not appended:
            self._forget()
            return
        pending, version = self.pending, self.version
        if pending is None or version is None:
            if self.session is not None:
                self.views.pop(self.session, None)
            return
        if version != self.views_version:
            self.views = {}
            self.views_version = version
        views = self.views
        views.pop(pending[0], None)
        views[pending[0]] = pending[1]
        if len(views) > _VIEWS:
            del views[next(iter(views))]

    def _forget(self) -> None:
        """Nothing this connection knows of the file is to be trusted any more."""
        self.views = {}
        self.views_version = None

    def view(self, read: SessionRead) -> SessionView:
        session_id, key, goal_ids, row, provenance = read
        view = self._view(session_id, key)
        if not (goal_ids or row or provenance):
            return view
        return view._replace(
            row=self._row(session_id) if row else None,
            used=self._used_goal_ids(session_id, goal_ids) if goal_ids else frozenset(),
            provenance=self._provenance(session_id) if provenance else None,
        )

    def _view(self, session_id: str, key: str | None) -> SessionView:
        """The view's columns that one statement reads (``APPEND_READ``)."""
        hit = None
        self.session = session_id
        if key is None:
            # SQLite's data_version changes exactly when another connection
            # commits: while it has not, the file holds what this connection
            # last wrote, and the view of a session it appended to without a
            # key is known without reading it (the lease clock is read anew).
            # Only under the write lock: a read transaction's snapshot starts
            # with its first read, which a view kept would not be.
            if self.writing:
                version = self.version = self.run("PRAGMA data_version", ()).fetchone()[0]
                known = self.views.get(session_id) if version == self.views_version else None
                if known is not None:
                    lease = self.lease_read = known.lease
                    return SessionView(
                        known.head, known.has_row, known.fold_format, known.fold_state, None, lease, self.clock()
                    )
            head, has_row, fold_format, fold_state, holder, token, expires_at, ttl = self.run(
                self.read_no_key, (session_id,)
            ).fetchone()
        else:
            found = self.run(APPEND_READ, (session_id, key)).fetchone()
            head, has_row, fold_format, fold_state, known_hash, known_first, known_last, known_key = found[:8]
            holder, token, expires_at, ttl = found[8:]
            if known_key:
                hit = stored_key(known_hash, known_first, known_last)
        lease = self.lease_read = stored_lease(session_id, holder, token, expires_at, ttl)
        return SessionView(
            head if type(head) is int else stored_int(head),
            has_row == 1,  # "s.id IS NOT NULL" is 1 or 0
            fold_format if type(fold_format) is str else str(fold_format),
            fold_state if type(fold_state) is str else str(fold_state),
            hit,
            lease,
            self.clock(),
        )

    def _row(self, session_id: str) -> SessionRow | None:
        found = self.conn.execute(SELECT_ROW, (session_id,)).fetchone()
        if found is None:
            return None
        return stored_row(found)

    def _used_goal_ids(self, session_id: str, ids: Sequence[str]) -> frozenset[str]:
        found: set[str] = set()
        for start in range(0, len(ids), INSERT_ROWS):
            chunk = ids[start : start + INSERT_ROWS]
            rows = self.conn.execute(used_goal_ids_sql(len(chunk)), (session_id, *chunk)).fetchall()
            found.update(str(row[0]) for row in rows)
        return frozenset(found)

    def _provenance(self, session_id: str) -> ForkProvenance | None:
        if not has_table(self.conn, "forks"):
            return None  # a file from before forks, opened read-only
        found = self.conn.execute(SELECT_FORK, (session_id,)).fetchone()
        return None if found is None else stored_provenance(found)

    def rows(self, session_id: str, after: int = 0, upto: int | None = None) -> Iterable[StoredEvent]:
        if upto is None:
            return self.conn.execute(SELECT_EVENTS, (session_id, after))
        return self.conn.execute(SELECT_RANGE, (session_id, after, upto))

    def session_ids(self) -> tuple[str, ...]:
        """Every session row, legacy ones included."""
        return tuple(str(r[0]) for r in self.conn.execute("SELECT id FROM sessions ORDER BY id").fetchall())

    def write(self, write: SessionWrite) -> None:
        sid = write.session_id
        if write.lease is not None:
            lease = write.lease
            self.conn.execute(
                UPSERT_LEASE, (lease.session_id, lease.holder, lease.token, lease.expires_at, lease.ttl_ms)
            )
            self.lease_written = lease
        if write.events:
            self._insert_events(sid, write.events)
        for goal_id, seq in write.goal_ids:
            self.conn.execute(INSERT_GOAL_ID, (sid, goal_id, seq))
        if write.row is not None:
            self._write_row(sid, write.row, write.exists, write.first_at, write.last_at)
        if write.key is not None and write.known is not None:
            known = write.known
            self.conn.execute(INSERT_KEY, (sid, write.key, known.request_hash, known.first_seq, known.last_seq))
        if write.provenance is not None:
            source = write.provenance
            self.conn.execute(INSERT_FORK, (sid, source.source, source.seq, source.prefix_sha256))

    def _insert_events(self, session_id: str, rows: Sequence[EventRow]) -> None:
        """One multi-row ``INSERT`` per ``INSERT_ROWS`` events: the connection
        port offers only ``execute`` (tests wrap it to inject faults), and a
        multi-row ``INSERT`` does what ``executemany`` would, in fewer trips
        into SQLite."""
        if len(rows) == 1:
            self.run(insert_events_sql(1), (session_id, *rows[0]))
            return
        for start in range(0, len(rows), INSERT_ROWS):
            chunk = rows[start : start + INSERT_ROWS]
            self.conn.execute(insert_events_sql(len(chunk)), [value for row in chunk for value in (session_id, *row)])

    def _write_row(self, session_id: str, row: SessionRow, exists: bool, first_at: int, last_at: int) -> None:
        sql, values = self.row_sql, row.columns()
        if not exists:
            times = (first_at, last_at) if sql.timed else ()
            self.conn.execute(sql.insert, (session_id, *values, *times, *sql.fill))
        elif sql.timed:
            self.run(sql.update, (*values, last_at, session_id))
        else:
            self.run(sql.update, (*values, session_id))
        if self.version is not None:  # an append without a key: its view once it commits
            lease = self.lease_written or self.lease_read
            view = SessionView(row.projection.last_seq, True, row.fold_format, row.fold_state, None, lease)
            self.pending = (session_id, view)


#: A grouped append: its body, run in the group's transaction.
_Body = Callable[[Transaction], Any]


class _PollingWatch:
    """Polls the log's head, backing off from a few milliseconds to ``cap`` seconds."""

    def __init__(self, backend: SqliteBackend, session_id: str, cap: float) -> None:
        self.backend = backend
        self.session_id = session_id
        self.cap = cap

    def wait(self, position: int, timeout: float | None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        pause = min(0.005, self.cap)
        while True:
            head = self.backend.run("follow", False, lambda tx: tx.view(SessionRead(self.session_id)).head)
            if head > position:
                return True
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            time.sleep(pause if left is None else min(pause, left))
            pause = min(pause * 2, self.cap)


class SqliteBackend:
    """Transactions on one SQLite file (see the module docstring).

    Opening migrates the file; ``SchemaTooNewError``, ``SchemaMismatchError``
    or ``StorageError`` come out of the constructor.
    """

    def __init__(
        self,
        path: str,
        *,
        synchronous: Synchronous,
        busy_timeout_ms: int,
        connect: Callable[[str], Connection],
        clock: Callable[[], int] = system_clock,
        poll_interval: float = 0.25,
        take_turns: bool = True,
    ) -> None:
        self.path = path
        self.synchronous: Synchronous = synchronous
        self.busy_timeout_ms = busy_timeout_ms
        self.clock = clock
        self.poll_interval = poll_interval
        self._row_sql = RowSql("", "", (), False)
        self._leases = True
        self._tx: _SqliteTransaction | None = None
        #: What opening the file did to its schema.
        self.migration: MigrationReport | None = None
        #: The appends of this process, committed in groups.
        self._commits: CommitGroup[_Body, Any] = CommitGroup(self._alone, self._together, before=self._hand_over)
        #: The connection of this process, and its transactions.
        self.take_turns = take_turns
        turns = WriteTurns(busy_timeout_ms) if take_turns else None
        self.connections = ConnectionKeeper(path, connect, self._setup, turns=turns)
        self.connections.open()

    def _setup(self, conn: Connection) -> None:
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
        version = recognise(conn)  # before the WAL switch, which writes the file's header
        if version < SCHEMA_VERSION or str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
            check_sound(conn)  # about to change the file: refuse a damaged one before the first write
        enable_wal(conn, self.busy_timeout_ms)
        conn.execute(f"PRAGMA synchronous = {self.synchronous.upper()}")
        self.migration = migrate(conn)
        self._row_sql = row_sql(columns(conn, "sessions"))
        self._leases = has_table(conn, "goal_leases")
        if self.take_turns:
            conn.execute("PRAGMA busy_timeout = 0")  # from now on the store waits for locks itself (sqlite_turns)

    def run(self, operation: str, write: bool, body: Callable[[Transaction], T]) -> T:
        if not write:
            return self.connections.run(operation, "BEGIN", lambda conn: body(self._transaction(conn, False)))
        if operation == "append":
            return cast("T", self._commits.submit(body))
        return self._write(operation, body)

    def _write(self, operation: str, body: Callable[[Transaction], T]) -> T:
        """``body`` in a write transaction of its own."""
        try:
            result = self.connections.run(
                operation, "BEGIN IMMEDIATE", lambda conn: body(self._transaction(conn, True))
            )
        except BaseException:
            # It may have committed (an unknown outcome) or not: what the
            # connection kept of the file is not to be trusted either way.
            if self._tx is not None:
                self._tx._forget()
            raise
        if self._tx is not None:
            self._tx._committed(operation == "append")
        return result

    # ----------------------------------------------------------------------
    # Group commit

    def _hand_over(self) -> None:
        """Before a group's leader takes the appends waiting: another
        writer's turn at the write lock, when it is due (``sqlite_turns``)."""
        self.connections.hand_over()

    def _alone(self, body: _Body) -> Any:
        """One append: its own transaction, as when no one else writes."""
        return self._write("append", body)

    def _together(self, batch: Sequence[Pending[_Body, Any]]) -> None:
        """Several appends in one transaction, each in a savepoint of its own:
        one refused is rolled back to its savepoint alone and leaves the
        others as they were; the commit is the group's, and only once it is
        done is an append that went through answered (every other one gets
        the group's error from ``CommitGroup``)."""
        done: list[tuple[Pending[_Body, Any], Any]] = []

        def each(conn: Connection) -> None:
            tx = self._transaction(conn, True)
            for waiting in batch:
                tx._begin(True)
                conn.execute("SAVEPOINT planfold_append")
                try:
                    result = waiting.item(tx)
                except Exception as exc:  # every error is this append's own outcome
                    waiting.fail(translate(exc, "append") if isinstance(exc, sqlite3.Error) else exc)
                    # a failure here leaves the whole transaction to the keeper's rollback
                    conn.execute("ROLLBACK TO planfold_append")
                    conn.execute("RELEASE planfold_append")
                    tx._forget()
                    continue
                conn.execute("RELEASE planfold_append")
                tx._committed(True)  # its view, for the next append of the group to the same session
                done.append((waiting, result))

        try:
            self.connections.run("append", "BEGIN IMMEDIATE", each)
        except BaseException:
            # Nothing of the group is known to be written (or, when the commit
            # failed, whether it was), nor what the connection kept of the file.
            if self._tx is not None:
                self._tx._forget()
            raise
        for waiting, result in done:
            waiting.answer(result)

    def commit_appends(self, batch: Sequence[Pending[_Body, Any]]) -> None:
        """Commit the append bodies of ``batch`` as one group (one alone, as
        without grouping) and answer each: for a caller that gathers the
        group itself (the async store's writer thread). An error that ends
        the group's transaction is the answer of every append not yet answered."""
        if len(batch) == 1:
            only = batch[0]
            try:
                only.answer(self._alone(only.item))
            except Exception as exc:  # the append's own outcome
                only.fail(exc)
            return
        try:
            self._together(batch)
        except Exception as exc:  # the group's outcome, for each one it left unanswered
            for pending in batch:
                if not pending.answered:
                    pending.fail(own_copy(exc))

    def _transaction(self, conn: Connection, writing: bool) -> _SqliteTransaction:
        """The rows on ``conn`` (one object per connection, which keeps what
        this connection wrote: see ``_SqliteTransaction.view``)."""
        tx = self._tx
        if tx is None or tx.conn is not conn:
            tx = self._tx = _SqliteTransaction(conn, self._row_sql, self.clock, self._leases)
        tx._begin(writing)
        return tx

    @contextmanager
    def watch(self, session_id: str) -> Iterator[Watch]:
        yield _PollingWatch(self, session_id, self.poll_interval)

    def close(self) -> None:
        self.connections.close()


class SqliteStore(LogStore):
    """A ``Store`` in one SQLite file (see the module docstring).

    Opening migrates the file; ``SchemaTooNewError``, ``SchemaMismatchError``
    or ``StorageError`` come out of the constructor. ``connect`` replaces the
    connection factory (tests use it to inject faults); ``clock`` is the lease
    clock (integer milliseconds); ``poll_interval`` bounds how long ``follow``
    sleeps between looks at the log (seconds); ``take_turns=False`` leaves
    the waits for locks to SQLite's busy handler, as before write turns
    (``adapters.store.sqlite_turns``; a baseline for benchmarks).
    """

    backend: SqliteBackend

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: Synchronous = "full",
        busy_timeout_ms: int = 15_000,
        connect: Callable[[str], Connection] | None = None,
        clock: Callable[[], int] = system_clock,
        poll_interval: float = 0.25,
        take_turns: bool = True,
    ) -> None:
        if synchronous not in ("full", "normal"):
            raise InvalidRequestError(f"synchronous must be 'full' or 'normal', got {synchronous!r}")
        if isinstance(busy_timeout_ms, bool) or not isinstance(busy_timeout_ms, int) or busy_timeout_ms < 0:
            raise InvalidRequestError("busy_timeout_ms must be a non-negative integer")
        if isinstance(poll_interval, bool) or not isinstance(poll_interval, int | float) or not 0 < poll_interval <= 60:
            raise InvalidRequestError("poll_interval must be a number of seconds in (0, 60]")
        self.path = os.fspath(path)
        self.synchronous: Synchronous = synchronous
        self.busy_timeout_ms = busy_timeout_ms
        super().__init__(
            SqliteBackend(
                self.path,
                synchronous=synchronous,
                busy_timeout_ms=busy_timeout_ms,
                connect=connect or connect_sqlite,
                clock=clock,
                poll_interval=float(poll_interval),
                take_turns=bool(take_turns),
            )
        )

    def __enter__(self) -> SqliteStore:
        return self

    @property
    def connections(self) -> ConnectionKeeper:
        """The connection of this process, and its transactions."""
        return self.backend.connections

    @property
    def migration(self) -> MigrationReport | None:
        """What opening the file did to its schema."""
        return self.backend.migration

    def settings(self) -> dict[str, object]:
        """The live connection's journal mode, synchronous level and schema
        version, and the store's busy timeout (for diagnostics and tests)."""

        def body(conn: Connection) -> dict[str, object]:
            return {
                "journal_mode": conn.execute("PRAGMA journal_mode").fetchone()[0],
                "synchronous": conn.execute("PRAGMA synchronous").fetchone()[0],
                "busy_timeout": self.busy_timeout_ms,  # the store's own waits (SQLite's handler is off)
                "user_version": read_version(conn),
            }

        return self.connections.run("settings", "BEGIN", body)

    def integrity_check(self) -> tuple[str, ...]:
        """``PRAGMA integrity_check``: ``("ok",)`` for a sound file."""
        return self.connections.direct(
            "integrity_check", lambda conn: tuple(str(r[0]) for r in conn.execute("PRAGMA integrity_check").fetchall())
        )
