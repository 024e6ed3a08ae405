"""The shared store: session logs in PostgreSQL, for many runtime processes on
many hosts.

Theory of operation
-------------------
``PostgresStore`` is ``LogStore`` (the one append algorithm, ``adapters.store.
engine``) over ``PostgresBackend``, on psycopg 3 with a ``psycopg_pool``
connection pool per process. Install it with ``pip install
'planfold[postgres]'``. The tables (``adapters.store.postgres_schema``) mirror
the SQLite store's: events keyed ``(session_id, seq)`` with the payload kept
as the exact JSON text the codec wrote (so exports are byte-identical across
backends), one session row with the projection and the fold snapshot,
idempotency keys, goal leases, fork provenance.

A write transaction runs at ``READ COMMITTED`` and takes the session's
advisory transaction lock (``pg_advisory_xact_lock`` on a hash of the session
id) before it reads anything, so the compare-and-set check and the writes of
an append are atomic against every other writer on any host, and appends to
different sessions do not wait for each other. The session row, the events,
the key and a ``NOTIFY`` on ``planfold_events`` commit together. Read
transactions run at ``REPEATABLE READ, READ ONLY``: one consistent view, so an
audit never compares a log with a row from a later append.

Such a transaction costs two round trips (``BEGIN``, the lock and the read in
one pipeline; the writes and ``COMMIT`` in another). The common append costs
one: when the store holds the state the append builds on, the engine decides
it in the client (``engine.OneStepBackend``) and ``append_decided`` sends one
statement, ``planfold_append`` (a PL/pgSQL function created by schema step 4),
in autocommit: the function takes the same advisory lock, makes every check
the transaction makes plus that the session row holds the very snapshot the
client's state came from, and writes only when they all hold, so the
compare-and-set stays atomic against writers of either kind. The statement is
prepared once per connection and run through libpq (``call_append``).

One-statement appends through one store share commits (group commit,
``adapters.store.group``): an append that finds no other under way goes
alone, exactly as above. Those that come while one is under way wait, and go
out together when it is done (``GROUP_LIMIT`` at the most): every one's own
``planfold_append`` call, in one round trip and ONE transaction
(``call_appends``: libpq's pipeline mode, the calls and one sync, which the
server commits as one implicit transaction, so one WAL flush), ordered by
session (two groups lock the sessions they share in the same order) and,
within a session, as they came.
Each call keeps its own checks (compare-and-set, key, lease, goal ids,
snapshot), and a refused one writes nothing and answers its view as alone;
every caller is answered only after the sync, that is once the commit is
durable. A call that fails (a lock timeout, say) rolls the transaction back:
that append gets its error (``not-applied``) and the others are sent again
without it. A connection lost during the round trip, or a commit that failed,
is every grouped append's error with ``outcome`` ``unknown``. Appends the
store cannot decide in the client run in transactions of their own, as before.

Driver errors are translated at this boundary (``postgres_schema.translate``):
a conflict is always the kernel's ``ConflictError``, a lost server is
``store-unavailable`` with ``outcome`` ``unknown`` when the ``COMMIT`` may
have happened (retry with the same idempotency key) and ``not-applied``
otherwise; the one-statement append is its own commit, so a connection lost
during it leaves the outcome ``unknown``. A pooled connection found dead when
its transaction begins (the server restarted since it was last used) is
dropped and the transaction starts again on another one; nothing had been
sent, so nothing can have happened twice. A pooled connection with anything
to read before a one-statement append (the server closed it) is dropped
unused for the same reason.

Goal leases use the database's clock (``clock_timestamp()``), one clock for
every host, unless a ``clock`` is given (tests use a manual one). ``follow``
holds its own connection with ``LISTEN planfold_events`` and sleeps until a
notification names its session: no polling.

Opening connects once directly, before the pool, within ``connect_timeout``
seconds (libpq's least is 2): a wrong host, port, database or password, or
a server that is down, is ``StoreUnreachableError`` (``store-unreachable``)
with the driver's own message at once, instead of a pool that keeps trying
until its timeout.

A store used in a child process after a fork opens its own pool there and
leaves the inherited one alone.

A writer waits up to ``busy_timeout_ms`` for a session's lock (the server's
``lock_timeout``, set on every pooled connection); past it the append is
``store-busy`` and nothing was written.

``read_only=True`` (audits, exports) migrates nothing: it refuses a database
that is not planfold's at the current schema version, and every transaction
is read-only, so the server refuses any write.
"""

from __future__ import annotations

import math
import os
import select
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple, TypeVar, cast

import msgspec
import psycopg
import psycopg_pool

from ..redact import redact_text, redact_url
from .base import (
    InvalidRequestError,
    SchemaMismatchError,
    StoreClosedError,
    StoreUnavailableError,
    StoreUnreachableError,
)
from .engine import DecidedAppend, LogStore, SessionRead, SessionView, SessionWrite, StoredEvent, Transaction, Watch
from .group import CommitGroup, Pending, own_copy
from .migration import supported
from .postgres_schema import (
    APPEND_CALL,
    APPEND_READ,
    CHANNEL,
    INSERT_EVENTS,
    INSERT_FORK,
    INSERT_GOAL_IDS,
    INSERT_KEY,
    LOCK_SESSION,
    NOTIFY,
    SCHEMA_VERSION,
    SELECT_EVENTS,
    SELECT_FORK,
    SELECT_RANGE,
    SELECT_ROW,
    SESSION_IDS,
    UPSERT_LEASE,
    UPSERT_ROW,
    USED_GOAL_IDS,
    Connection,
    MigrationReport,
    connection_lost,
    driver_message,
    migrate,
    read_version,
    translate,
)
from .stored import stored_int, stored_key, stored_lease, stored_provenance, stored_row

__all__ = [
    "GroupAnswer",
    "PostgresBackend",
    "PostgresStore",
    "append_args",
    "call_append",
    "call_appends",
    "decided_view",
]

T = TypeVar("T")

#: The longest NOTIFY payload PostgreSQL takes is 8000 bytes; a longer
#: session id is announced as "" (every follower looks).
_NOTIFY_MAX = 7000

#: Encodes the events of a one-step append (``planfold_append``'s ``p_events``).
_EVENTS = msgspec.json.Encoder()
#: Decodes the view a refused one-step append answers (the columns of ``APPEND_READ``).
_VIEW = msgspec.json.Decoder(list[Any])


def _view(session_id: str, columns: Sequence[Any], now: int) -> SessionView:
    """An ``SessionView`` from the columns of ``APPEND_READ`` (the last one, the
    database's clock, replaced by ``now``)."""
    head, has_row, fold_format, fold_state, known_hash, known_first, known_last, known, *lease, _ = columns
    return SessionView(
        stored_int(head),
        bool(has_row),
        "" if fold_format is None else str(fold_format),
        "" if fold_state is None else str(fold_state),
        stored_key(known_hash, known_first, known_last) if known else None,
        stored_lease(session_id, *lease),
        now,
    )


def _announced(session_id: str) -> str:
    """The ``NOTIFY`` payload that announces an append to ``session_id``."""
    return session_id if len(session_id.encode()) <= _NOTIFY_MAX else ""


#: The name ``APPEND_CALL`` is prepared under on each connection.
_APPEND_STATEMENT = b"planfold_append"

#: The most appends one group commit sends.
GROUP_LIMIT = 64

#: The arguments of one ``planfold_append`` call, the session id first.
AppendArgs = tuple[object, ...]


def append_args(append: DecidedAppend, now: int | None) -> AppendArgs:
    """The arguments of ``planfold_append`` for a decided append; ``now`` is
    the lease clock's time (``None``: the database's clock)."""
    p, lease = append.prepared, append.lease
    events = [{"seq": seq, "kind": kind, "at": at, "payload": text} for seq, kind, at, text in append.rows]
    created = [{"id": goal_id, "seq": seq} for goal_id, seq in append.goal_ids]
    goals = _EVENTS.encode(created).decode() if created else None
    return (
        p.session_id, p.expected_seq, append.has_row, append.base_format, append.base_state,
        p.key, p.request_hash,
        None if lease is None else lease.holder, None if lease is None else lease.token,
        None if lease is None else lease.ttl_ms, append.starts_round, now,
        _EVENTS.encode(events).decode(), goals, append.rows[0][2], append.rows[-1][2], _announced(p.session_id),
        *append.row.columns(),
    )  # fmt: skip


def decided_view(append: DecidedAppend, found: str | None) -> SessionView | None:
    """What ``planfold_append`` answered for ``append``: ``None`` when it
    wrote, else the view it read."""
    if found is None:
        return None
    columns = _VIEW.decode(found)
    return _view(append.prepared.session_id, columns, stored_int(columns[-1]))


def _param(value: object, encoding: str) -> bytes | None:
    """One argument in PostgreSQL's text format."""
    if value is None:
        return None
    if isinstance(value, bool):
        return b"t" if value else b"f"
    return (value if isinstance(value, str) else str(value)).encode(encoding)


def _params(args: Sequence[object], encoding: str) -> list[bytes]:
    # libpq takes None for NULL; psycopg's signature leaves it out.
    return cast("list[bytes]", [_param(arg, encoding) for arg in args])


def call_append(conn: Connection, args: Sequence[object]) -> str | None:
    """Run ``APPEND_CALL`` with ``args`` on an autocommit connection and
    answer ``planfold_append``'s text. The statement is prepared on the
    connection the first time it is missing there, and executed through
    libpq itself (``conn.pgconn``): one round trip whose client side costs a
    fraction of a cursor's. Failures are psycopg's exceptions, a lost
    connection an ``OperationalError``."""
    pgconn = conn.pgconn
    encoding = conn.info.encoding
    params = _params(args, encoding)
    for attempt in range(2):
        result = pgconn.exec_prepared(_APPEND_STATEMENT, params)
        if result.status == psycopg.pq.ExecStatus.TUPLES_OK:
            value = result.get_value(0, 0)
            return None if value is None else value.decode(encoding)
        if pgconn.status != psycopg.pq.ConnStatus.OK:
            raise psycopg.OperationalError(result.get_error_message(encoding))
        failure = psycopg.errors.error_from_result(result, encoding)
        if attempt or not isinstance(failure, psycopg.errors.InvalidSqlStatementName):
            raise failure
        _prepare(conn)
    raise AssertionError("unreachable")


def _prepare(conn: Connection) -> None:
    """Prepare ``APPEND_CALL`` on ``conn``."""
    encoding = conn.info.encoding
    prepared = conn.pgconn.prepare(_APPEND_STATEMENT, APPEND_CALL.encode(encoding))
    if prepared.status != psycopg.pq.ExecStatus.COMMAND_OK:
        raise psycopg.errors.error_from_result(prepared, encoding)


class GroupAnswer(NamedTuple):
    """What a group of appends sent together (``call_appends``) answered:
    each append's text when they all ran, or else the position of the first
    that failed and its error (the transaction was rolled back: nothing of
    the group was written, and the appends after it did not run)."""

    answers: tuple[str | None, ...]
    failed: tuple[int, psycopg.Error] | None


def call_appends(conn: Connection, batch: Sequence[Sequence[object]]) -> GroupAnswer:
    """Run ``APPEND_CALL`` once for each arguments of ``batch``, in order, in
    ONE transaction and one round trip, on an autocommit connection that is
    idle: libpq's pipeline mode sends every call and then one sync, so the
    calls form one implicit transaction that the server commits at the sync
    (rolls back, after an error). Nothing is answered before the sync's
    answer, so a group answered is a group committed and durable. The wait
    for the server lets other threads run. The statement is prepared, and
    the group sent again, when it is missing on the connection (psycopg
    deallocates every statement of a connection it rolls back). A connection
    lost, or a commit that failed, is psycopg's exception (the group's
    outcome is unknown); the caller closes the connection after any
    exception."""
    encoding = conn.info.encoding
    params = [_params(args, encoding) for args in batch]
    for attempt in range(2):
        answer = _pipeline(conn.pgconn, params, encoding)
        missing = answer.failed is not None and isinstance(answer.failed[1], psycopg.errors.InvalidSqlStatementName)
        if attempt or not missing:
            return answer
        _prepare(conn)
    raise AssertionError("unreachable")


def _pipeline(pgconn: psycopg.pq.abc.PGconn, params: Sequence[list[bytes]], encoding: str) -> GroupAnswer:
    """One pipeline of prepared ``APPEND_CALL``s and a sync (see ``call_appends``)."""
    pgconn.enter_pipeline_mode()
    for values in params:
        pgconn.send_query_prepared(_APPEND_STATEMENT, values)
    pgconn.pipeline_sync()
    _flush(pgconn)
    answers: list[str | None] = []
    failed: tuple[int, psycopg.Error] | None = None
    position = 0  # each call's results end with None
    status = psycopg.pq.ExecStatus
    while True:
        result = _next_result(pgconn)
        if result is None:
            position += 1
            continue
        if result.status == status.PIPELINE_SYNC:
            break
        if result.status == status.TUPLES_OK:
            value = result.get_value(0, 0)
            answers.append(None if value is None else value.decode(encoding))
        elif result.status != status.PIPELINE_ABORTED:  # skipped after an earlier failure
            if pgconn.status != psycopg.pq.ConnStatus.OK:
                raise psycopg.OperationalError(result.get_error_message(encoding))
            failure = psycopg.errors.error_from_result(result, encoding)
            if position >= len(params):
                raise failure  # the commit itself
            if failed is None:
                failed = (position, failure)
    pgconn.exit_pipeline_mode()
    return GroupAnswer(tuple(answers), failed)


def _wait(fileno: int, write: bool) -> bool:
    """Sleep (other threads run) until the socket can be read or, with
    ``write``, written; True when it can be read."""
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fileno, select.POLLIN | (select.POLLOUT if write else 0))
        return any(events & ~select.POLLOUT for _, events in poller.poll())
    readable, _, _ = select.select([fileno], [fileno] if write else [], [fileno])
    return bool(readable)


def _flush(pgconn: psycopg.pq.abc.PGconn) -> None:
    """Send everything queued, reading what comes meanwhile (a server whose
    answers nobody reads stops reading too)."""
    while pgconn.flush():
        if _wait(pgconn.socket, write=True):
            pgconn.consume_input()


def _next_result(pgconn: psycopg.pq.abc.PGconn) -> psycopg.pq.abc.PGresult | None:
    """The next result of a pipeline, waiting for it without holding the GIL."""
    while pgconn.is_busy():
        _wait(pgconn.socket, write=False)
        pgconn.consume_input()
    return pgconn.get_result()


def _has_input(conn: Connection) -> bool:
    """Whether an idle pooled connection has something to read, which it
    should not: the server closed it (a restart, an idle timeout) or sent what
    nobody asked for. Such a connection is not used for a one-step append,
    whose failure could not tell whether the server had received it."""
    if conn.closed or conn.broken:
        return True
    try:
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(conn.fileno(), select.POLLIN)
            return bool(poller.poll(0))
        return bool(select.select([conn.fileno()], [], [], 0)[0])
    except (OSError, ValueError, psycopg.Error):
        return True


class _StaleConnection(Exception):
    """The transaction's first round trip found its pooled connection dead."""

    def __init__(self, cause: psycopg.Error) -> None:
        super().__init__(str(cause))
        self.cause = cause


Params = Sequence[object] | Mapping[str, object] | None
#: One statement and its parameters.
Statement = tuple[str, Params]
#: The rows each of some statements answered, in their order.
Answers = list[list[tuple[Any, ...]]]


class Opening:
    """Where one transaction stands before its next statements (the
    synchronous transaction's and the async store's): whether ``BEGIN`` went
    out, and which sessions a write transaction has locked."""

    def __init__(self, write: bool) -> None:
        self.write = write
        self.begin = "BEGIN" if write else "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"
        self.started = False
        self.locked: set[str] = set()

    def due(self, lock: str | None) -> list[Statement]:
        """What must go out ahead of the next statements: ``BEGIN`` and the
        lock of ``lock``'s session, when still due."""
        ahead: list[Statement] = [] if self.started else [(self.begin, None)]
        if lock is not None and self.write and lock not in self.locked:
            ahead.append((LOCK_SESSION, (lock,)))
        return ahead

    def sent(self, lock: str | None) -> None:
        """The statements went out: the transaction has begun, the session is locked."""
        self.started = True
        if lock is not None and self.write:
            self.locked.add(lock)

    def stale(self, exc: psycopg.Error) -> bool:
        """Whether ``exc`` shows the first round trip found the connection
        dead (nothing reached the server: the transaction may run again)."""
        return not self.started and connection_lost(exc)


def view_statements(read: SessionRead) -> list[Statement]:
    """The statements of ``Transaction.view``, sent together: ``APPEND_READ``
    and what ``read`` asks for besides."""
    sid = read.session_id
    statements: list[Statement] = [(APPEND_READ, {"s": sid, "k": read.key})]
    if read.goal_ids:
        statements.append((USED_GOAL_IDS, (sid, list(read.goal_ids))))
    if read.row:
        statements.append((SELECT_ROW, (sid,)))
    if read.provenance:
        statements.append((SELECT_FORK, (sid,)))
    return statements


def read_view(read: SessionRead, answers: Answers, now: int | None) -> SessionView:
    """The ``SessionView`` the answers to ``view_statements(read)`` make;
    ``now`` replaces the database's clock when given."""
    columns = answers[0][0]
    view = _view(read.session_id, columns, stored_int(columns[-1]) if now is None else now)
    if len(answers) == 1:
        return view
    rest = iter(answers[1:])
    used = frozenset(str(found[0]) for found in next(rest)) if read.goal_ids else frozenset()
    found = next(rest) if read.row else None
    stored = stored_row(found[0]) if found else None
    found = next(rest) if read.provenance else None
    source = stored_provenance(found[0]) if found else None
    return view._replace(row=stored, used=used, provenance=source)


def write_statements(write: SessionWrite) -> list[Statement]:
    """The statements of ``Transaction.write``, in the order they go out."""
    sid = write.session_id
    out: list[Statement] = []
    lease = write.lease
    if lease is not None:
        out.append((UPSERT_LEASE, (lease.session_id, lease.holder, lease.token, lease.expires_at, lease.ttl_ms)))
    if write.events:
        seqs, kinds, ats, payloads = (list(column) for column in zip(*write.events, strict=True))
        out.append((INSERT_EVENTS, (sid, seqs, kinds, ats, payloads)))
        out.append((NOTIFY, (CHANNEL, _announced(sid))))
    if write.goal_ids:
        goal_ids, goal_seqs = (list(column) for column in zip(*write.goal_ids, strict=True))
        out.append((INSERT_GOAL_IDS, (sid, goal_ids, goal_seqs)))
    if write.row is not None:
        out.append((UPSERT_ROW, (sid, *write.row.columns(), write.first_at, write.last_at)))
    known = write.known
    if write.key is not None and known is not None:
        out.append((INSERT_KEY, (sid, write.key, known.request_hash, known.first_seq, known.last_seq)))
    source = write.provenance
    if source is not None:
        out.append((INSERT_FORK, (sid, source.source, source.seq, source.prefix_sha256)))
    return out


class _PostgresTransaction:
    """The rows of one database, on a connection inside a transaction.

    Round trips are what an append costs, so they are few: ``BEGIN``, the
    session lock and the view's statements go out together in one pipeline,
    and the writes wait until the body is done and go out with the
    ``COMMIT`` in another (every check is made before the first write, so
    nothing read later depends on them). A write transaction locks each
    session it views before it reads it.
    """

    def __init__(self, conn: Connection, write: bool, clock: Callable[[], int] | None) -> None:
        self.conn = conn
        self.clock = clock
        self.opening = Opening(write)
        self.writes: list[Statement] = []

    def _fetch(self, statements: Sequence[Statement], lock: str | None = None) -> Answers:
        """The rows of each of ``statements``, with ``BEGIN`` and the lock of
        ``lock``'s session ahead of them when they are still due, all in one
        round trip."""
        conn = self.conn
        ahead = self.opening.due(lock)
        if not ahead and len(statements) == 1:
            sql, params = statements[0]
            return [conn.execute(cast("Any", sql), params).fetchall()]
        try:
            with conn.pipeline():
                for sql, params in ahead:
                    conn.execute(cast("Any", sql), params)
                cursors = [conn.execute(cast("Any", sql), params) for sql, params in statements]
        except psycopg.Error as exc:
            if self.opening.stale(exc):
                raise _StaleConnection(exc) from exc
            raise
        self.opening.sent(lock)
        return [cursor.fetchall() for cursor in cursors]

    def _commit(self) -> None:
        """The queued writes and ``COMMIT``, in one round trip."""
        if not self.opening.started:
            return
        with self.conn.pipeline():
            for sql, params in self.writes:
                self.conn.execute(cast("Any", sql), params)
            self.conn.execute("COMMIT")

    def view(self, read: SessionRead) -> SessionView:
        answers = self._fetch(view_statements(read), read.session_id)
        return read_view(read, answers, None if self.clock is None else self.clock())

    def rows(self, session_id: str, after: int = 0, upto: int | None = None) -> Iterator[StoredEvent]:
        if upto is not None:
            # Read whole: a stream left early is cancelled, which would abort the transaction.
            return iter(self._fetch([(SELECT_RANGE, (session_id, after, upto))])[0])
        # Streamed row by row: a fold of a long log never holds all of it. A
        # stream cannot share a pipeline, so BEGIN goes first when still due.
        if not self.opening.started:
            self._fetch([("SELECT 1", None)])
        return self.conn.cursor().stream(SELECT_EVENTS, (session_id, after))

    def session_ids(self) -> tuple[str, ...]:
        return tuple(str(r[0]) for r in self._fetch([(SESSION_IDS, None)])[0])

    def write(self, write: SessionWrite) -> None:
        self.writes.extend(write_statements(write))


class _ListenWatch:
    """Sleeps on a ``LISTEN`` connection until a notification names the session."""

    def __init__(self, conn: Connection, session_id: str) -> None:
        self.conn = conn
        self.session_id = session_id

    def wait(self, position: int, timeout: float | None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                for notify in self.conn.notifies(timeout=left, stop_after=1):
                    if notify.payload in (self.session_id, ""):
                        return True
                if deadline is not None and time.monotonic() >= deadline:
                    return False
        except psycopg.Error as exc:
            raise translate(exc, "follow") from exc


def _check_readable(conn: Connection) -> None:
    """Refuse a database a read-only store cannot read as it is."""
    found = supported(read_version(conn), SCHEMA_VERSION)
    if found == 0:
        raise SchemaMismatchError("not a planfold database: it has no planfold_schema table in its search_path")
    if found < SCHEMA_VERSION:
        raise SchemaMismatchError(
            f"the database is at schema version {found}; open it for writing once to migrate it to {SCHEMA_VERSION}"
        )


def _reach(conninfo: str, connect_timeout: float) -> None:
    """Connect once and hang up; ``StoreUnreachableError`` with the driver's
    message on one line when that fails (see the module docstring)."""
    try:
        conn = psycopg.connect(conninfo, autocommit=True, connect_timeout=max(2, math.ceil(connect_timeout)))
    except psycopg.Error as exc:
        raise StoreUnreachableError(redact_url(conninfo), redact_text(driver_message(exc))) from exc
    conn.close()


class PostgresBackend:
    """Transactions on one PostgreSQL database through a connection pool
    (see the module docstring)."""

    def __init__(
        self,
        conninfo: str,
        *,
        pool_size: int,
        timeout: float,
        clock: Callable[[], int] | None,
        read_only: bool = False,
        busy_timeout_ms: int = 15_000,
        connect_timeout: float = 5.0,
    ) -> None:
        self.conninfo = conninfo
        self.pool_size = pool_size
        self.timeout = timeout
        self.clock = clock
        self.read_only = read_only
        self.busy_timeout_ms = busy_timeout_ms
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._pool: psycopg_pool.ConnectionPool[Connection] | None = None
        self._inherited: list[psycopg_pool.ConnectionPool[Connection]] = []
        self._closed = False
        #: What opening the database did to its schema.
        self.migration: MigrationReport | None = None
        #: The one-statement appends of this process, committed in groups.
        self.commits: CommitGroup[AppendArgs, str | None] = CommitGroup(
            self._append_alone, self._append_together, limit=GROUP_LIMIT
        )
        _reach(conninfo, connect_timeout)
        pool = self._current_pool()
        try:
            with pool.connection(timeout=timeout) as conn:
                if read_only:
                    _check_readable(conn)
                else:
                    self.migration = migrate(conn)
        except psycopg.Error as exc:
            self.close()
            raise translate(exc, "open") from exc
        except BaseException:
            self.close()
            raise

    def _current_pool(self) -> psycopg_pool.ConnectionPool[Connection]:
        with self._lock:
            if self._closed:
                raise StoreClosedError()
            if self._pool is not None and os.getpid() != self._pid:
                self._inherited.append(self._pool)  # a parent's pool: never touched here
                self._pool = None
            if self._pool is None:
                self._pid = os.getpid()
                pool: psycopg_pool.ConnectionPool[Connection] = psycopg_pool.ConnectionPool(
                    self.conninfo,
                    min_size=1,
                    max_size=self.pool_size,
                    kwargs={"autocommit": True, "connect_timeout": max(1, round(self.timeout))},
                    timeout=self.timeout,
                    open=False,
                    name="planfold",
                    num_workers=2,
                    configure=self._configure,
                )
                try:
                    pool.open(wait=True, timeout=self.timeout)
                except psycopg.Error as exc:
                    pool.close(timeout=0)
                    raise translate(exc, "open") from exc
                self._pool = pool
            return self._pool

    def _configure(self, conn: Connection) -> None:
        """Every new pooled connection: the lock timeout, and read-only transactions if asked."""
        conn.execute(f"SET lock_timeout = {int(self.busy_timeout_ms)}")
        if self.read_only:
            conn.execute("SET default_transaction_read_only = on")

    def run(self, operation: str, write: bool, body: Callable[[Transaction], T]) -> T:
        pool = self._current_pool()
        for attempt in range(self.pool_size + 1):
            try:
                conn = pool.getconn(timeout=self.timeout)
            except psycopg.Error as exc:
                raise translate(exc, operation) from exc
            try:
                return self._transaction(conn, operation, write, body)
            except _StaleConnection as stale:
                # Its first round trip failed: nothing of this transaction
                # reached the server, so it runs again on another connection.
                if attempt == self.pool_size:
                    raise translate(stale.cause, operation) from stale.cause
            finally:
                pool.putconn(conn)  # a broken connection is discarded by the pool
        raise AssertionError("unreachable")

    def _transaction(self, conn: Connection, operation: str, write: bool, body: Callable[[Transaction], T]) -> T:
        tx = _PostgresTransaction(conn, write, self.clock)
        committing = False
        try:
            result = body(tx)
            committing = True
            tx._commit()
            return result
        except _StaleConnection:
            self._abort(conn)
            raise
        except psycopg.Error as exc:
            self._abort(conn)
            lost = connection_lost(exc)
            raise translate(exc, operation, "unknown" if committing and lost else "not-applied") from exc
        except BaseException:
            self._abort(conn)
            raise

    def append_decided(self, append: DecidedAppend) -> SessionView | None:
        """``planfold_append`` in one statement, which is one round trip and its
        own transaction (see ``engine.OneStepBackend``). A pooled connection
        with something to read is closed unused (nothing was sent on it) and
        another one taken; a connection lost during the statement leaves the
        outcome ``unknown``."""
        args = append_args(append, None if self.clock is None else self.clock())
        # Alone, or with the appends that wait meanwhile (group commit, see the module docstring).
        return decided_view(append, self.commits.submit(args))

    def _idle_connection(self, pool: psycopg_pool.ConnectionPool[Connection]) -> Connection:
        """A pooled connection with nothing to read, for a one-statement append
        (give it back with ``putconn``): one with something to read is closed
        unused (nothing was sent on it, the pool drops it) and another taken."""
        for _ in range(self.pool_size + 1):
            try:
                conn = pool.getconn(timeout=self.timeout)
            except psycopg.Error as exc:
                raise translate(exc, "append") from exc
            if not _has_input(conn):
                return conn
            conn.close()
            pool.putconn(conn)
        raise StoreUnavailableError("append", "every pooled connection was closed by the server", outcome="not-applied")

    def _append_alone(self, args: AppendArgs) -> str | None:
        """One append in one statement, its own transaction; a connection lost
        during it leaves the outcome ``unknown``."""
        pool = self._current_pool()
        conn = self._idle_connection(pool)
        try:
            return call_append(conn, args)
        except psycopg.Error as exc:
            self._abort(conn)
            raise translate(exc, "append", "unknown" if connection_lost(exc) else "not-applied") from exc
        finally:
            pool.putconn(conn)

    def _append_together(self, batch: Sequence[Pending[AppendArgs, str | None]]) -> None:
        """Several appends in one transaction and one round trip
        (``call_appends``), in the order of their sessions (so two groups lock
        the sessions they share in the same order and never deadlock) and, for
        one session, in the order they came. One that fails fails alone: the
        transaction was rolled back, so the others are sent again without it.
        A lost connection or a failed commit is every grouped append's error,
        with outcome ``unknown``."""
        waiting = sorted(batch, key=lambda pending: str(pending.item[0]))
        pool = self._current_pool()
        while len(waiting) > 1:
            conn = self._idle_connection(pool)
            try:
                answer = call_appends(conn, [pending.item for pending in waiting])
            except psycopg.Error as exc:
                conn.close()  # the pool drops it
                error = translate(exc, "append", "unknown")
                for pending in waiting:
                    own = own_copy(error)
                    own.__cause__ = exc
                    pending.fail(own)
                return
            except BaseException:
                conn.close()
                raise
            finally:
                pool.putconn(conn)
            if answer.failed is None:
                for pending, text in zip(waiting, answer.answers, strict=True):
                    pending.answer(text)
                return
            position, failure = answer.failed
            error = translate(failure, "append")
            error.__cause__ = failure
            waiting.pop(position).fail(error)
        for pending in waiting:
            try:
                pending.answer(self._append_alone(pending.item))
            except Exception as exc:  # its own outcome
                pending.fail(exc)

    def direct(self, operation: str, body: Callable[[Connection], T]) -> T:
        """``body(conn)`` on a pooled connection outside any transaction."""
        pool = self._current_pool()
        try:
            with pool.connection(timeout=self.timeout) as conn:
                return body(conn)
        except psycopg.Error as exc:
            raise translate(exc, operation) from exc

    @staticmethod
    def _abort(conn: Connection) -> None:
        """Roll back; a connection that cannot is closed (the server then
        discards its transaction) and the pool drops it."""
        try:
            if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                conn.execute("ROLLBACK")
        except psycopg.Error:
            conn.close()

    @contextmanager
    def watch(self, session_id: str) -> Iterator[Watch]:
        if self._closed:
            raise StoreClosedError()
        try:
            conn = psycopg.connect(self.conninfo, autocommit=True, connect_timeout=max(1, round(self.timeout)))
        except psycopg.Error as exc:
            raise translate(exc, "follow") from exc
        try:
            try:
                conn.execute(f"LISTEN {CHANNEL}")
            except psycopg.Error as exc:
                raise translate(exc, "follow") from exc
            yield _ListenWatch(conn, session_id)
        finally:
            conn.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None and os.getpid() == self._pid:
            pool.close(timeout=5)


class PostgresStore(LogStore):
    """A ``Store`` in a PostgreSQL database (see the module docstring).

    ``conninfo`` is a ``postgresql://`` URL or a libpq connection string (its
    ``options`` may set a ``search_path`` to keep planfold's tables in their
    own schema). Opening migrates the database; ``SchemaTooNewError``,
    ``SchemaMismatchError`` or a ``StorageError`` (``store-unavailable`` when
    the server cannot be reached within ``timeout`` seconds) come out of the
    constructor. ``pool_size`` bounds this process's connections; ``clock``
    replaces the database's clock for leases (integer milliseconds);
    ``busy_timeout_ms`` bounds the wait for a session's lock; ``read_only``
    opens without writing; ``connect_timeout`` bounds the first connection
    (``StoreUnreachableError``, see the module docstring).
    """

    backend: PostgresBackend

    def __init__(
        self,
        conninfo: str,
        *,
        pool_size: int = 4,
        timeout: float = 30.0,
        clock: Callable[[], int] | None = None,
        read_only: bool = False,
        busy_timeout_ms: int = 15_000,
        connect_timeout: float = 5.0,
    ) -> None:
        if not isinstance(conninfo, str) or not conninfo.strip():
            raise InvalidRequestError("a PostgreSQL store needs a connection URL or string")
        if isinstance(busy_timeout_ms, bool) or not isinstance(busy_timeout_ms, int) or busy_timeout_ms < 0:
            raise InvalidRequestError("busy_timeout_ms must be a non-negative integer")
        if isinstance(pool_size, bool) or not isinstance(pool_size, int) or not 1 <= pool_size <= 100:
            raise InvalidRequestError("pool_size must be an integer in 1..100")
        for name, seconds in (("timeout", timeout), ("connect_timeout", connect_timeout)):
            if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 < seconds <= 3600:
                raise InvalidRequestError(f"{name} must be a number of seconds in (0, 3600]")
        self.conninfo = conninfo
        self.read_only = read_only
        super().__init__(
            PostgresBackend(
                conninfo,
                pool_size=pool_size,
                timeout=float(timeout),
                clock=clock,
                read_only=read_only,
                busy_timeout_ms=busy_timeout_ms,
                connect_timeout=float(connect_timeout),
            )
        )

    def __enter__(self) -> PostgresStore:
        return self

    @property
    def migration(self) -> MigrationReport | None:
        """What opening the database did to its schema."""
        return self.backend.migration

    def settings(self) -> dict[str, object]:
        """The server's version, default isolation level, ``synchronous_commit``,
        ``search_path`` and the schema version (for diagnostics and tests)."""

        def body(conn: Connection) -> dict[str, object]:
            names = ("server_version", "default_transaction_isolation", "synchronous_commit", "search_path")
            values: dict[str, object] = {name: _one(conn, f"SHOW {name}") for name in names}
            values["schema_version"] = read_version(conn)
            return values

        return self.backend.direct("settings", body)


def _one(conn: Connection, sql: str) -> object:
    row = conn.execute(sql).fetchone()
    return None if row is None else row[0]
