"""The embedded store for asyncio: one SQLite file, served to the event loop
by a writer thread and a reader thread.

Theory of operation
-------------------
SQLite has no asynchronous interface: every statement runs to its end on
the thread that calls it, and a commit in ``synchronous=FULL`` waits for the
disk. So the loop must never call it, and handing each operation to a fresh
worker (``asyncio.to_thread``) pays a thread hop per operation and lets
every task of the loop contend for the file's one write lock on its own.
Instead, each database file (with one set of options) gets, once per
process, two threads that every ``AsyncSqliteStore`` on it shares:

- **The writer** owns the process's write connection (a ``SqliteStore``,
  the synchronous store, so the append algorithm, the schema and the
  migrations are exactly its). It takes the writes waiting in its queue, all
  of them up to ``GROUP_LIMIT``, in the order they came; consecutive appends
  commit together, in one ``BEGIN IMMEDIATE`` transaction with a savepoint
  each and one ``COMMIT`` (``SqliteBackend.commit_appends``, the synchronous
  store's group commit), whichever sessions and tasks they come from (when
  another process writes too, it first lets that one take its turn at the
  write lock, ``adapters.store.sqlite_turns``, and more writes join). So
  the appends of a thousand sessions on one loop pay one disk flush per
  group, not one each, and take the write lock as one writer. Forks, imports
  and lease changes run in their own transactions, in queue order.
- **The reader** owns a second connection (WAL lets it read while the writer
  writes) and serves every read in turn. It shares the writer's snapshot
  memo, so a load of a session just appended decodes nothing.

A request travels as a ``concurrent.futures.Future`` that the loop awaits
through ``asyncio.wrap_future``: the thread answers it, and the loop is woken
through its own thread-safe wake-up, once per answer. No operation blocks
the loop and no operation starts a thread. An append's request is checked
and encoded on the loop before it is queued (``LogStore.append_transaction``),
so a bad one is refused at once and the writer only folds and writes.

Cancellation: the writer claims a request before it starts it
(``Future.set_running_or_notify_cancel``). A task cancelled before that
takes its request out (it never runs, nothing is written). A task cancelled
after it waits, on the loop, until that transaction has committed or rolled
back, and only then lets the ``CancelledError`` go on. Either way the
append is whole in the log or absent when the cancellation reaches the
caller, and the next ``head``/``read`` (or a retry with the same idempotency
key) tells which.

``follow`` asks the reader for the head at an interval that starts at a few
milliseconds and doubles while nothing happens, up to ``poll_interval``. The
last store of a file to close stops its threads and closes both connections.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import queue
import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from ...kernel.session import SessionState, fold_rows
from .aio import AsyncLogStore, outlast, poll_head
from .base import AppendRequest, AppendResult, InvalidRequestError
from .engine import LogStore, Transaction, append_started, noted_append
from .group import Pending
from .session_log import system_clock
from .sqlite import SqliteStore, Synchronous
from .sqlite_conn import connect_sqlite
from .sqlite_schema import Connection

__all__ = ["AsyncSqliteStore"]

T = TypeVar("T")

#: The most appends the writer commits in one transaction.
GROUP_LIMIT = 256

_Body = Callable[[Transaction], AppendResult]


class _Job:
    """One request to a thread: a store call or an append body, and its future."""

    __slots__ = ("body", "call", "future")

    def __init__(self, call: Callable[[LogStore], Any] | None, body: _Body | None) -> None:
        self.call = call
        self.body = body
        self.future: concurrent.futures.Future[Any] = concurrent.futures.Future()


#: Tells a thread to close its store and end.
_STOP = None


class _FileWorkers:
    """The writer and reader threads of one database file (see the module docstring)."""

    def __init__(self, key: Hashable, open_store: Callable[[], SqliteStore]) -> None:
        self.key = key
        self.open_store = open_store
        self.users = 0
        self.writer: SqliteStore | None = None
        self.reader: SqliteStore | None = None
        self.writes: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.reads: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        name = os.path.basename(str(key[0]) if isinstance(key, tuple) else str(key))
        # The kernel's table of event kinds is filled on first use; filled
        # here, before the two threads fold at once, so neither sees it half
        # filled.
        fold_rows(SessionState(), ())
        self.threads = (
            threading.Thread(target=self._write_loop, name=f"planfold-sqlite-writer:{name}", daemon=True),
            threading.Thread(target=self._read_loop, name=f"planfold-sqlite-reader:{name}", daemon=True),
        )
        for thread in self.threads:
            thread.start()

    # ----------------------------------------------------------------------
    # The threads

    def _writer(self) -> SqliteStore:
        if self.writer is None:
            self.writer = self.open_store()
        return self.writer

    def _reader(self) -> SqliteStore:
        if self.reader is None:
            writer = self._writer()  # opened (and migrated) first, so the reader finds the schema done
            reader = self.open_store()
            reader._memo = writer._memo
            reader._memo_lock = writer._memo_lock
            self.reader = reader
        return self.reader

    def _write_loop(self) -> None:
        writes = self.writes
        while True:
            job = writes.get()
            if job is _STOP:
                break
            if self.writer is not None:
                # Another connection's turn at the write lock, when it is due
                # (adapters.store.sqlite_turns): the writes that come meanwhile join the batch.
                self.writer.connections.hand_over()
            batch = [job]
            stop = False
            while len(batch) < GROUP_LIMIT:
                try:
                    more = writes.get_nowait()
                except queue.Empty:
                    break
                if more is _STOP:
                    stop = True
                    break
                batch.append(more)
            self._write_batch(batch)
            if stop:
                break
        if self.writer is not None:
            self.writer.close()

    def _write_batch(self, batch: list[_Job]) -> None:
        appends: list[_Job] = []
        for job in batch:
            if not job.future.set_running_or_notify_cancel():
                continue  # cancelled before it began: it never runs
            if job.body is not None:
                appends.append(job)
                continue
            self._commit(appends)
            appends = []
            _answer(job, self._writer)
        self._commit(appends)

    def _commit(self, jobs: list[_Job]) -> None:
        if not jobs:
            return
        try:
            backend = self._writer().backend
        except Exception as exc:  # the file could not be opened: every append's answer
            for job in jobs:
                job.future.set_exception(exc)
            return
        batch: list[Pending[Any, Any]] = [Pending(job.body) for job in jobs]
        backend.commit_appends(batch)
        for job, pending in zip(jobs, batch, strict=True):
            if pending.error is not None:
                job.future.set_exception(pending.error)
            else:
                job.future.set_result(pending.result)

    def _read_loop(self) -> None:
        reads = self.reads
        while True:
            job = reads.get()
            if job is _STOP:
                break
            if job.future.set_running_or_notify_cancel():
                _answer(job, self._reader)
        if self.reader is not None:
            self.reader.close()

    def stop(self) -> None:
        self.writes.put(_STOP)
        self.reads.put(_STOP)


def _answer(job: _Job, store: Callable[[], SqliteStore]) -> None:
    """Run the job's call on ``store()`` and answer its future."""
    call = job.call
    assert call is not None
    try:
        result = call(store())
    except BaseException as exc:  # the caller's answer, whatever it is
        job.future.set_exception(exc)
    else:
        job.future.set_result(result)


_FILES: dict[Hashable, _FileWorkers] = {}
_FILES_LOCK = threading.Lock()


def _acquire(key: Hashable, open_store: Callable[[], SqliteStore]) -> _FileWorkers:
    with _FILES_LOCK:
        workers = _FILES.get(key)
        if workers is None:
            workers = _FILES[key] = _FileWorkers(key, open_store)
        workers.users += 1
        return workers


def _release(workers: _FileWorkers) -> None:
    with _FILES_LOCK:
        workers.users -= 1
        if workers.users:
            return
        if _FILES.get(workers.key) is workers:
            del _FILES[workers.key]
    workers.stop()


class AsyncSqliteStore(AsyncLogStore):
    """An ``AsyncSharedStore`` in one SQLite file (see the module docstring).
    Open one with ``await AsyncSqliteStore.open(path, ...)``, which takes the
    options of ``SqliteStore`` and migrates the file on the writer thread."""

    def __init__(self, workers: _FileWorkers, poll_interval: float) -> None:
        super().__init__()
        self._workers = workers
        self.poll_interval = poll_interval

    @classmethod
    async def open(
        cls,
        path: str | os.PathLike[str],
        *,
        synchronous: Synchronous = "full",
        busy_timeout_ms: int = 15_000,
        connect: Callable[[str], Connection] | None = None,
        clock: Callable[[], int] = system_clock,
        poll_interval: float = 0.25,
    ) -> AsyncSqliteStore:
        """The store of the file at ``path``; the file is opened (and
        migrated) on its writer thread, so ``SchemaTooNewError``,
        ``SchemaMismatchError``, ``StorageError`` and ``InvalidRequestError``
        come out of this call."""
        if isinstance(poll_interval, bool) or not isinstance(poll_interval, int | float) or not 0 < poll_interval <= 60:
            raise InvalidRequestError("poll_interval must be a number of seconds in (0, 60]")
        where = os.fspath(path)
        connector = connect or connect_sqlite
        key = (os.path.abspath(where), synchronous, busy_timeout_ms, connector, clock)

        def open_store() -> SqliteStore:
            return SqliteStore(
                where, synchronous=synchronous, busy_timeout_ms=busy_timeout_ms, connect=connector, clock=clock,
                poll_interval=poll_interval,
            )

        workers = _acquire(key, open_store)
        store = cls(workers, float(poll_interval))
        try:
            await store._write(lambda _: None)  # opens the writer's connection, migrating the file
        except BaseException:
            store._closed = True
            _release(workers)
            raise
        return store

    async def __aenter__(self) -> AsyncSqliteStore:
        return self

    @property
    def path(self) -> str:
        """The database file."""
        return str(self._workers.key[0]) if isinstance(self._workers.key, tuple) else str(self._workers.key)

    async def _submit(self, jobs: queue.SimpleQueue[_Job | None], job: _Job, *, settle: bool = False) -> Any:
        jobs.put(job)
        try:
            return await asyncio.wrap_future(job.future)
        except asyncio.CancelledError:
            if settle:  # a write its thread has begun (or that was taken out before it began)
                future = job.future
                await outlast(lambda: asyncio.wrap_future(future), future.done)
            raise

    async def _run(self, call: Callable[[LogStore], T]) -> T:
        result: T = await self._submit(self._workers.reads, _Job(call, None))
        return result

    async def _write(self, call: Callable[[LogStore], T]) -> T:
        result: T = await self._submit(self._workers.writes, _Job(call, None), settle=True)
        return result

    async def _append(self, request: AppendRequest) -> AppendResult:
        writer = self._workers.writer
        if writer is None:  # not opened (another opener failed): the writer answers why
            return await self._write(lambda store: store.append(request))
        started = append_started()
        body = writer.append_transaction(request)
        result: AppendResult = await self._submit(self._workers.writes, _Job(None, body), settle=True)
        return noted_append(request, result, started)

    async def _wait(self, session_id: str, position: int, timeout: float | None) -> None:
        head = lambda: self._run(lambda store: store.head(session_id))  # noqa: E731
        await poll_head(head, position, timeout, self.poll_interval, lambda: self._closed)

    async def _close(self) -> None:
        _release(self._workers)
