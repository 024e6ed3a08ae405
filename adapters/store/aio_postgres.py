"""The shared store for asyncio: session logs in PostgreSQL, on psycopg's
async connection pool.

Theory of operation
-------------------
``AsyncPostgresStore`` keeps everything ``PostgresStore`` promises (the
tables, the advisory session locks, the one-statement append and its group
commit, fencing by leases, ``follow`` by ``LISTEN``/``NOTIFY``) and waits on
the server only through asyncio: its connections come from a
``psycopg_pool.AsyncConnectionPool`` and no operation hands anything to a
thread. (Opening checks the server and migrates the schema once, with the
synchronous code that ``PostgresStore`` uses, in one worker thread; after
that, nothing.)

The append algorithm is still ``LogStore``'s, unchanged, and so are the
rows: the store's ``LogStore`` runs on a backend whose transaction is a
``_ReplayTransaction``, the synchronous PostgreSQL transaction's own code
with its reads answered from what this transaction has fetched so far.
A read it has not fetched stops the body (``_Missing``); the store then
fetches it on its connection, inside the same database transaction (taking
``BEGIN`` and the session's lock with it, as the synchronous transaction
does), and runs the body again from the start with one more answer. Bodies
are functions of what they read, and their writes are only queued until
they return, so a body run again decides exactly as if it had read
everything at once. An append typically stops once (for its view) and a
load once or twice. The writes then go out with ``COMMIT`` in one round
trip, as in the synchronous store.

The common append goes out in one statement: ``LogStore.decide_append``
decides it on the state the store holds, ``planfold_append`` checks and
writes it under the session's lock, and ``LogStore.decided_answer`` reads
the answer. Appends that come while one is on its way wait and go out
together, their calls between one ``BEGIN`` and one ``COMMIT`` in one
pipeline (one round trip, one flush), at most ``GROUP_LIMIT`` of them,
ordered by session. A group that fails on a statement was rolled back
whole, so each of its appends is sent again alone; a connection lost during
a group leaves every one of its appends ``unknown``.

Cancellation: every write runs in a task of its own. A task cancelled while
it awaits a write waits until that write has committed or rolled back (an
append still waiting for its group is taken out and never sent), and only
then lets the ``CancelledError`` go on, so nothing is left half written and
the next read tells whether the append landed. A cancelled read is left to
finish in the background and its connection goes back to the pool.

``follow`` shares one ``LISTEN planfold_events`` connection per store: a
task reads its notifications and wakes the followers of the session each
names. A follower registers before it looks at the log, so no append slips
between its look and its wait.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Coroutine, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar, cast

import psycopg
import psycopg_pool

from .aio import AsyncLogStore, outlast, settled
from .base import AppendRequest, AppendResult, InvalidRequestError, StoreClosedError, StoreUnavailableError
from .engine import DecidedAppend, LogStore, SessionView, Transaction, Watch, append_started, noted_append
from .postgres import (
    Answers,
    AppendArgs,
    Opening,
    PostgresStore,
    Statement,
    _has_input,
    _PostgresTransaction,
    _StaleConnection,
    append_args,
    decided_view,
)
from .postgres_schema import APPEND_CALL_PARAMS, CHANNEL, SELECT_EVENTS, connection_lost, translate

__all__ = ["AsyncPostgresStore"]

T = TypeVar("T")

#: The most one-statement appends one group sends.
GROUP_LIMIT = 64

AsyncConnection = psycopg.AsyncConnection[Any]
#: The rows one statement answered.
Rows = list[tuple[Any, ...]]


class _Missing(Exception):
    """A body asked for reads this transaction has not fetched yet."""

    def __init__(self, statements: Sequence[Statement], lock: str | None) -> None:
        super().__init__(statements[0][0])
        self.statements = statements
        self.lock = lock


def _key(statement: Statement) -> tuple[str, str]:
    sql, params = statement
    return sql, repr(params)


class _ReplayTransaction(_PostgresTransaction):
    """The synchronous transaction's code, its reads answered from ``fetched``
    (see the module docstring); its writes queue in ``writes``."""

    def __init__(self, write: bool, clock: Callable[[], int] | None, fetched: dict[tuple[str, str], Rows]) -> None:
        super().__init__(cast("Any", None), write, clock)
        self.fetched = fetched

    def _fetch(self, statements: Sequence[Statement], lock: str | None = None) -> Answers:
        found = [self.fetched.get(_key(statement)) for statement in statements]
        missing = [statement for statement, rows in zip(statements, found, strict=True) if rows is None]
        if missing:
            raise _Missing(missing, lock)
        return cast("Answers", found)

    def rows(self, session_id: str, after: int = 0, upto: int | None = None) -> Iterator[Any]:
        if upto is not None:
            return super().rows(session_id, after, upto)
        return iter(self._fetch([(SELECT_EVENTS, (session_id, after))])[0])


class _ReplayBackend:
    """The backend of the store's ``LogStore``: runs a body on the transaction
    the store is replaying now."""

    def __init__(self) -> None:
        self.current: _ReplayTransaction | None = None

    def run(self, operation: str, write: bool, body: Callable[[Transaction], T]) -> T:
        current = self.current
        if current is None:
            raise StoreClosedError()
        return body(current)

    @contextmanager
    def watch(self, session_id: str) -> Iterator[Watch]:
        raise StoreClosedError()
        yield  # pragma: no cover

    def close(self) -> None:
        self.current = None


class _AsyncTransaction:
    """One database transaction on an async connection: fetches what a
    replayed body asks for, then sends its writes with ``COMMIT``."""

    def __init__(self, conn: AsyncConnection, write: bool) -> None:
        self.conn = conn
        self.opening = Opening(write)
        self.fetched: dict[tuple[str, str], Rows] = {}

    async def fetch(self, miss: _Missing) -> None:
        conn = self.conn
        ahead = self.opening.due(miss.lock)
        try:
            async with conn.pipeline():
                for sql, params in ahead:
                    await conn.execute(cast("Any", sql), params)
                cursors = [await conn.execute(cast("Any", sql), params) for sql, params in miss.statements]
            answers = [await cursor.fetchall() for cursor in cursors]
        except psycopg.Error as exc:
            if self.opening.stale(exc):
                raise _StaleConnection(exc) from exc
            raise
        self.opening.sent(miss.lock)
        for statement, rows in zip(miss.statements, answers, strict=True):
            self.fetched[_key(statement)] = rows

    async def commit(self, writes: Sequence[Statement]) -> None:
        if not self.opening.started:
            return
        conn = self.conn
        async with conn.pipeline():
            for sql, params in writes:
                await conn.execute(cast("Any", sql), params)
            await conn.execute("COMMIT")


async def _abort(conn: AsyncConnection) -> None:
    """Roll back; a connection that cannot is closed (the pool drops it)."""
    try:
        if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            await conn.execute("ROLLBACK")
    except psycopg.Error:
        await conn.close()


class _Waiting:
    """A one-statement append waiting for its group."""

    __slots__ = ("args", "future", "session_id")

    def __init__(self, args: AppendArgs, future: asyncio.Future[str | None]) -> None:
        self.args = args
        self.session_id = str(args[0])
        self.future = future


class AsyncPostgresStore(AsyncLogStore):
    """An ``AsyncSharedStore`` in a PostgreSQL database (see the module
    docstring). Open one with ``await AsyncPostgresStore.open(conninfo, ...)``,
    which takes ``PostgresStore``'s options."""

    def __init__(
        self, pool: psycopg_pool.AsyncConnectionPool[AsyncConnection], conninfo: str, *, pool_size: int,
        timeout: float, clock: Callable[[], int] | None,
    ) -> None:  # fmt: skip
        super().__init__()
        self.pool = pool
        self.conninfo = conninfo
        self.pool_size = pool_size
        self.timeout = timeout
        self.clock = clock
        self._backend = _ReplayBackend()
        self.store = LogStore(self._backend)
        self._waiting: list[_Waiting] = []
        self._sending = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self._listener: asyncio.Task[None] | None = None
        self._listening: asyncio.Future[None] | None = None
        self._followers: dict[str, set[asyncio.Event]] = {}

    @classmethod
    async def open(
        cls,
        conninfo: str,
        *,
        pool_size: int = 8,
        timeout: float = 30.0,
        clock: Callable[[], int] | None = None,
        busy_timeout_ms: int = 15_000,
        connect_timeout: float = 5.0,
    ) -> AsyncPostgresStore:
        """The store of the database at ``conninfo``, its schema migrated; the
        errors of ``PostgresStore``'s constructor come out of this call."""
        if isinstance(pool_size, bool) or not isinstance(pool_size, int) or not 1 <= pool_size <= 100:
            raise InvalidRequestError("pool_size must be an integer in 1..100")

        def prepare() -> None:
            # The synchronous store's checks, reach and migration, once.
            PostgresStore(
                conninfo, pool_size=1, timeout=timeout, clock=clock, busy_timeout_ms=busy_timeout_ms,
                connect_timeout=connect_timeout,
            ).close()  # fmt: skip

        await asyncio.to_thread(prepare)

        async def configure(conn: AsyncConnection) -> None:
            await conn.execute(cast("Any", f"SET lock_timeout = {int(busy_timeout_ms)}"))

        pool: psycopg_pool.AsyncConnectionPool[AsyncConnection] = psycopg_pool.AsyncConnectionPool(
            conninfo,
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True, "connect_timeout": max(1, round(timeout))},
            timeout=timeout,
            open=False,
            name="planfold-async",
            configure=configure,
        )
        try:
            await pool.open(wait=True, timeout=timeout)
        except psycopg.Error as exc:
            await pool.close(timeout=0)
            raise translate(exc, "open") from exc
        except BaseException:
            await pool.close(timeout=0)
            raise
        return cls(pool, conninfo, pool_size=pool_size, timeout=float(timeout), clock=clock)

    async def __aenter__(self) -> AsyncPostgresStore:
        return self

    # ----------------------------------------------------------------------
    # Transactions

    def _task(self, coroutine: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _getconn(self, operation: str) -> AsyncConnection:
        try:
            return await self.pool.getconn(timeout=self.timeout)
        except psycopg_pool.PoolClosed as exc:
            raise StoreClosedError() from exc
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise StoreUnavailableError(operation, f"no connection within {self.timeout} s: {exc}") from exc

    async def _transact(self, operation: str, write: bool, call: Callable[[LogStore], T]) -> T:
        for attempt in range(self.pool_size + 1):
            conn = await self._getconn(operation)
            try:
                return await self._in_transaction(conn, operation, write, call)
            except _StaleConnection as stale:
                # Its first round trip failed: nothing reached the server, so it runs again.
                if attempt == self.pool_size:
                    raise translate(stale.cause, operation) from stale.cause
            finally:
                await self.pool.putconn(conn)
        raise AssertionError("unreachable")

    async def _in_transaction(
        self, conn: AsyncConnection, operation: str, write: bool, call: Callable[[LogStore], T]
    ) -> T:
        tx = _AsyncTransaction(conn, write)
        committing = False
        try:
            while True:
                replay = _ReplayTransaction(write, self.clock, tx.fetched)
                self._backend.current = replay
                try:
                    result = call(self.store)
                except _Missing as miss:
                    await tx.fetch(miss)
                    continue
                finally:
                    self._backend.current = None
                committing = True
                await tx.commit(replay.writes)
                return result
        except psycopg.Error as exc:
            await _abort(conn)
            lost = connection_lost(exc)
            raise translate(exc, operation, "unknown" if committing and lost else "not-applied") from exc
        except BaseException:
            await _abort(conn)
            raise

    async def _run(self, call: Callable[[LogStore], T]) -> T:
        return await asyncio.shield(self._task(self._transact("read", False, call)))

    async def _write(self, call: Callable[[LogStore], T]) -> T:
        return await settled(self._task(self._transact("write", True, call)))

    # ----------------------------------------------------------------------
    # Appends

    async def _append(self, request: AppendRequest) -> AppendResult:
        store, started = self.store, append_started()
        prepared, folded = store.prepared_append(request)
        decision = store.decide_append(prepared, request.lease, folded)
        if decision is not None:
            view = await self._one_step(decision.append)
            answer = store.decided_answer(decision, view)
            if answer is not None:
                return noted_append(request, answer, started)
        body = store.append_transaction(request)
        written = self._transact("append", True, lambda s: s.backend.run("append", True, body))
        return noted_append(request, await settled(self._task(written)), started)

    async def _one_step(self, append: DecidedAppend) -> SessionView | None:
        """``planfold_append`` of ``append``, alone or with the appends that
        wait meanwhile (see the module docstring)."""
        args = append_args(append, None if self.clock is None else self.clock())
        future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        waiting = _Waiting(args, future)
        self._waiting.append(waiting)
        if not self._sending:
            self._send_next()
        try:
            found = await asyncio.shield(future)
        except asyncio.CancelledError:
            if waiting in self._waiting:  # not sent: it never will be
                self._waiting.remove(waiting)
                raise
            await outlast(lambda: asyncio.shield(future), future.done)
            raise
        return decided_view(append, found)

    def _send_next(self) -> None:
        batch, self._waiting = self._waiting[:GROUP_LIMIT], self._waiting[GROUP_LIMIT:]
        self._sending = bool(batch)
        if batch:
            self._task(self._send(batch))

    async def _send(self, batch: list[_Waiting]) -> None:
        try:
            if len(batch) == 1:
                await self._answer_alone(batch[0])
            else:
                await self._send_together(sorted(batch, key=lambda waiting: waiting.session_id))
        finally:
            self._send_next()

    async def _answer_alone(self, waiting: _Waiting) -> None:
        try:
            waiting.future.set_result(await self._call_alone(waiting.args))
        except Exception as exc:  # the append's own outcome
            waiting.future.set_exception(exc)

    async def _idle_connection(self) -> AsyncConnection:
        """A pooled connection with nothing to read (one that has something
        to read was closed by the server: it is dropped unused)."""
        for _ in range(self.pool_size + 1):
            conn = await self._getconn("append")
            if not _has_input(cast("Any", conn)):
                return conn
            await conn.close()
            await self.pool.putconn(conn)
        raise StoreUnavailableError("append", "every pooled connection was closed by the server", outcome="not-applied")

    async def _call_alone(self, args: AppendArgs) -> str | None:
        conn = await self._idle_connection()
        try:
            cursor = await conn.execute(cast("Any", APPEND_CALL_PARAMS), args, prepare=True)
            row = await cursor.fetchone()
        except psycopg.Error as exc:
            await _abort(conn)
            raise translate(exc, "append", "unknown" if connection_lost(exc) else "not-applied") from exc
        finally:
            await self.pool.putconn(conn)
        return None if row is None or row[0] is None else str(row[0])

    async def _send_together(self, batch: list[_Waiting]) -> None:
        conn = await self._idle_connection()
        try:
            async with conn.pipeline():
                await conn.execute("BEGIN")
                cursors = [await conn.execute(cast("Any", APPEND_CALL_PARAMS), w.args, prepare=True) for w in batch]
                await conn.execute("COMMIT")
            answers = [await cursor.fetchone() for cursor in cursors]
        except psycopg.Error as exc:
            await _abort(conn)
            await self.pool.putconn(conn)
            if connection_lost(exc):
                for waiting in batch:
                    error = translate(exc, "append", "unknown")
                    error.__cause__ = exc
                    waiting.future.set_exception(error)
                return
            # A statement failed, so the group was rolled back whole: each goes again alone.
            for waiting in batch:
                await self._answer_alone(waiting)
            return
        except BaseException:
            await conn.close()
            await self.pool.putconn(conn)
            raise
        await self.pool.putconn(conn)
        for waiting, row in zip(batch, answers, strict=True):
            waiting.future.set_result(None if row is None or row[0] is None else str(row[0]))

    # ----------------------------------------------------------------------
    # Following

    async def _listen(self) -> None:
        if self._listening is not None and self._listener is not None and not self._listener.done():
            await asyncio.shield(self._listening)
            return
        loop = asyncio.get_running_loop()
        self._listening = loop.create_future()
        self._listener = self._task(self._notifications(self._listening))
        await asyncio.shield(self._listening)

    async def _notifications(self, ready: asyncio.Future[None]) -> None:
        try:
            conn = await psycopg.AsyncConnection.connect(
                self.conninfo, autocommit=True, connect_timeout=max(1, math.ceil(self.timeout))
            )
        except psycopg.Error as exc:
            ready.set_exception(translate(exc, "follow"))
            return
        try:
            await conn.execute(cast("Any", f"LISTEN {CHANNEL}"))
            ready.set_result(None)
            async for notify in conn.notifies():
                self._wake(notify.payload)
        except psycopg.Error as exc:
            if not ready.done():
                ready.set_exception(translate(exc, "follow"))
        finally:
            self._wake("")  # followers look again (and listen anew)
            await conn.close()

    def _wake(self, payload: str) -> None:
        if payload:
            for event in self._followers.get(payload, ()):
                event.set()
            return
        for events in self._followers.values():
            for event in events:
                event.set()

    async def _wait(self, session_id: str, position: int, timeout: float | None) -> None:
        await self._listen()
        event = asyncio.Event()
        self._followers.setdefault(session_id, set()).add(event)
        try:
            if await self.head(session_id) > position:
                return
            try:
                await asyncio.wait_for(event.wait(), timeout)
            except TimeoutError:
                return
        finally:
            events = self._followers.get(session_id)
            if events is not None:
                events.discard(event)
                if not events:
                    del self._followers[session_id]

    async def _close(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
        for task in list(self._tasks):
            if task is not self._listener:
                await asyncio.wait([task])
        self._backend.close()
        await self.pool.close(timeout=5)
