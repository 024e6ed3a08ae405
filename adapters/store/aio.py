"""The storage port for asyncio: ``AsyncStore``, the operations of ``Store``
awaited, and what every async store shares.

Theory of operation
-------------------
``AsyncStore`` has exactly the methods of ``Store`` (``adapters.store.base``),
with the same names, arguments, results and typed errors, each a coroutine;
``AsyncSharedStore`` adds ``SharedStore``'s leases, fenced appends and
``follow`` (an async iterator). ``close`` is awaited too, and a store is an
async context manager.

The append algorithm is not written again for asyncio. Every async store
planfold ships is an ``AsyncLogStore``: it holds a ``LogStore`` (the one
algorithm: idempotency, compare-and-set, the strict fold, the projection and
the snapshot, ``adapters.store.engine``) and decides only *where* its
synchronous work runs, through ``_run`` (reads), ``_write`` (the other
writes) and ``_append``. A request's arguments are checked on the caller's
loop before anything is handed over (an append's events are checked and
encoded there too; an import's where it runs), so a bad request gets the
error the synchronous store gives, and nothing is written.

- ``AsyncMemoryStore`` (``adapters.store.aio_memory``) runs the work inline:
  nothing it does waits, so it needs no thread at all.
- ``AsyncSqliteStore`` (``adapters.store.aio_sqlite``) hands it to one writer
  thread per database file, which group-commits the appends of every session
  of the process, and one reader thread; results come back to the loop as
  futures (see that module for why).
- ``AsyncPostgresStore`` (``adapters.store.aio_postgres``) runs it on the
  loop and awaits the server through psycopg's async connection pool: the
  one-statement append and its group commit natively, every other body
  replayed over the reads it has fetched (see that module).

Cancelling a task that awaits an operation never leaves anything half
written: an append is one transaction, so it is in the log or not. An append
cancelled before its transaction began is dropped and never runs; a task
cancelled while its append's transaction runs waits until it has committed
or rolled back before the ``CancelledError`` goes on, so the next
``head``/``read`` (or a retry with the same idempotency key, answered
``replayed``) tells which.

``open_async_store`` (``adapters.store.opener``) opens one by its ``--db``
address.

``BlockingStore`` is the other way round: a synchronous ``SharedStore`` over
an async one, running its coroutines on a private event loop in a thread of
its own. The published contract suite (``adapters.store.contract``) runs
against every async store through it, so one suite pins both faces.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Generator, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

from ...kernel.log import Event
from ...kernel.session import SessionState
from ..provenance import ForkProvenance
from .base import (
    AppendRequest,
    AppendResult,
    AuditReport,
    InvalidRequestError,
    Lease,
    QuietTimer,
    StoreClosedError,
    check_after,
    check_fork_request,
    check_lease_request,
    check_session_id,
    check_timeout,
)
from .engine import LogStore
from .projection import Projection

__all__ = [
    "AsyncLogStore",
    "AsyncSharedStore",
    "AsyncStore",
    "BlockingStore",
]

T = TypeVar("T")


class AsyncStore(Protocol):
    """What every async session store provides: ``Store``'s operations, awaited."""

    async def append(self, request: AppendRequest) -> AppendResult: ...

    async def head(self, session_id: str) -> int: ...

    async def read(self, session_id: str, after: int = 0) -> tuple[Event, ...]: ...

    async def load(self, session_id: str, *, incremental: bool = False) -> SessionState: ...

    async def projection(self, session_id: str) -> Projection: ...

    async def audit(self, session_id: str) -> AuditReport: ...

    async def session_ids(self) -> tuple[str, ...]: ...

    async def fork(self, source_session: str, at: int, new_session: str) -> ForkProvenance: ...

    async def provenance(self, session_id: str) -> ForkProvenance | None: ...

    async def import_fork(
        self, session_id: str, events: Sequence[Event], provenance: ForkProvenance, idempotency_key: str | None = None
    ) -> AppendResult: ...

    async def close(self) -> None: ...


@runtime_checkable
class AsyncSharedStore(AsyncStore, Protocol):
    """An async store that several processes share: ``SharedStore``'s
    following, goal leases and fenced appends (the request's ``lease``), awaited."""

    def follow(self, session_id: str, after_seq: int = 0, *, timeout: float | None = None) -> AsyncIterator[Event]: ...

    async def acquire_lease(self, session_id: str, holder: str, ttl_ms: int) -> Lease: ...

    async def release_lease(self, lease: Lease) -> bool: ...

    async def lease(self, session_id: str) -> Lease | None: ...


class AsyncLogStore:
    """An ``AsyncSharedStore`` over ``LogStore`` (see the module
    docstring): a subclass says where the store's work runs and on which
    ``LogStore`` (``_run`` for reads, ``_write`` for writes, ``_append`` for
    appends)
    and how a follower waits (``_wait``), and closes what it holds
    (``_close``)."""

    def __init__(self) -> None:
        self._closed = False

    # ----------------------------------------------------------------------
    # What a subclass supplies

    async def _run(self, call: Callable[[LogStore], T]) -> T:
        """``call(store)``, a read, run where this store reads (on the
        ``LogStore`` it reads from)."""
        raise NotImplementedError

    async def _write(self, call: Callable[[LogStore], T]) -> T:
        """``call(store)``, a write other than an append, run where this store
        writes (on the ``LogStore`` it writes to)."""
        raise NotImplementedError

    async def _append(self, request: AppendRequest) -> AppendResult:
        """``LogStore.append`` of ``request``, run where this store writes."""
        raise NotImplementedError

    async def _wait(self, session_id: str, position: int, timeout: float | None) -> None:
        """Return once the session may hold events after ``position`` (a wake
        without new events is allowed) or ``timeout`` seconds passed."""
        raise NotImplementedError

    async def _close(self) -> None:
        """Release what the store holds (called once)."""
        raise NotImplementedError

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError()

    # ----------------------------------------------------------------------
    # The protocol

    async def __aenter__(self) -> AsyncLogStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Release the store; later calls raise ``StoreClosedError``. Idempotent."""
        if self._closed:
            return
        self._closed = True
        await self._close()

    async def append(self, request: AppendRequest) -> AppendResult:
        """``Store.append``, awaited (see ``adapters.store.base``): the
        request's ``lease`` fences it, its ``folded`` is the caller's own
        strict fold (``base.Folded``)."""
        self._check_open()
        return await self._append(request)

    async def import_fork(
        self, session_id: str, events: Sequence[Event], provenance: ForkProvenance, idempotency_key: str | None = None
    ) -> AppendResult:
        """``Store.import_fork``, awaited."""
        self._check_open()
        return await self._write(lambda store: store.import_fork(session_id, events, provenance, idempotency_key))

    async def fork(self, source_session: str, at: int, new_session: str) -> ForkProvenance:
        """``Store.fork``, awaited."""
        self._check_open()
        check_fork_request(source_session, at, new_session)
        return await self._write(lambda store: store.fork(source_session, at, new_session))

    async def acquire_lease(self, session_id: str, holder: str, ttl_ms: int) -> Lease:
        """``SharedStore.acquire_lease``, awaited."""
        self._check_open()
        check_lease_request(session_id, holder, ttl_ms)
        return await self._write(lambda store: store.acquire_lease(session_id, holder, ttl_ms))

    async def release_lease(self, lease: Lease) -> bool:
        """``SharedStore.release_lease``, awaited."""
        self._check_open()
        if not isinstance(lease, Lease):
            raise InvalidRequestError(f"expected a Lease, got {lease!r}")
        check_session_id(lease.session_id)
        return await self._write(lambda store: store.release_lease(lease))

    async def lease(self, session_id: str) -> Lease | None:
        """``SharedStore.lease``, awaited."""
        return await self._read(session_id, lambda store: store.lease(session_id))

    async def _read(self, session_id: str, call: Callable[[LogStore], T]) -> T:
        self._check_open()
        check_session_id(session_id)
        return await self._run(call)

    async def head(self, session_id: str) -> int:
        """``Store.head``, awaited."""
        return await self._read(session_id, lambda store: store.head(session_id))

    async def read(self, session_id: str, after: int = 0) -> tuple[Event, ...]:
        """``Store.read``, awaited."""
        check_after(after)
        return await self._read(session_id, lambda store: store.read(session_id, after))

    async def load(self, session_id: str, *, incremental: bool = False) -> SessionState:
        """``Store.load``, awaited."""
        return await self._read(session_id, lambda store: store.load(session_id, incremental=incremental))

    async def projection(self, session_id: str) -> Projection:
        """``Store.projection``, awaited."""
        return await self._read(session_id, lambda store: store.projection(session_id))

    async def audit(self, session_id: str) -> AuditReport:
        """``Store.audit``, awaited."""
        return await self._read(session_id, lambda store: store.audit(session_id))

    async def provenance(self, session_id: str) -> ForkProvenance | None:
        """``Store.provenance``, awaited."""
        return await self._read(session_id, lambda store: store.provenance(session_id))

    async def session_ids(self) -> tuple[str, ...]:
        """``Store.session_ids``, awaited."""
        self._check_open()
        return await self._run(LogStore.session_ids)

    def follow(self, session_id: str, after_seq: int = 0, *, timeout: float | None = None) -> AsyncIterator[Event]:
        """``SharedStore.follow`` as an async iterator: the session's events
        after ``after_seq``, then every event any process appends; it ends once
        ``timeout`` seconds pass without a new event (never when ``None``).
        The request is checked at the call, as the synchronous one is."""
        check_session_id(session_id)
        position = check_after(after_seq)
        return following(
            lambda at: self.read(session_id, at),
            lambda at, left: self._wait(session_id, at, left),
            position,
            check_timeout(timeout),
        )


async def following(
    read: Callable[[int], Awaitable[tuple[Event, ...]]],
    wait: Callable[[int, float | None], Awaitable[None]],
    position: int,
    timeout: float | None,
) -> AsyncIterator[Event]:
    """The loop of an async ``follow``: the events ``read(position)`` gives,
    then, each time ``wait(position, left)`` returns (once there may be more,
    or ``left`` seconds passed), the next ones; it ends once ``timeout``
    seconds pass without a new event (``QuietTimer``; never when ``None``)."""
    quiet = QuietTimer(timeout)
    while True:
        events = await read(position)
        for event in events:
            position = event.seq
            yield event
        left = quiet.wait(bool(events))
        if left is not None and left <= 0:
            return
        await wait(position, left)


async def poll_head(
    head: Callable[[], Awaitable[int]],
    position: int,
    timeout: float | None,
    interval: float,
    stopped: Callable[[], bool] = lambda: False,
) -> None:
    """Return once ``head()`` is past ``position``, ``timeout`` seconds have
    passed or ``stopped()``: it asks at an interval that starts at a few
    milliseconds and doubles while nothing happens, up to ``interval``. Only
    the loop waits meanwhile, so a cancelled follower ends at once."""
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    pause = min(0.005, interval)
    while not stopped():
        if await head() > position:
            return
        left = None if deadline is None else deadline - loop.time()
        if left is not None and left <= 0:
            return
        await asyncio.sleep(pause if left is None else min(pause, left))
        pause = min(pause * 2, interval)


# --------------------------------------------------------------------------
# The synchronous face


class _LoopThread:
    """An event loop running forever in a daemon thread of its own."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="planfold-blocking-store", daemon=True)
        self.thread.start()


_LOOP: _LoopThread | None = None
_LOOP_LOCK = threading.Lock()


def _private_loop() -> asyncio.AbstractEventLoop:
    global _LOOP  # noqa: PLW0603 (one private loop per process, started on first use)
    with _LOOP_LOCK:
        if _LOOP is None or not _LOOP.thread.is_alive() or _LOOP.loop.is_closed():
            _LOOP = _LoopThread()
        return _LOOP.loop


async def _next(iterator: AsyncIterator[Event]) -> tuple[bool, Event | None]:
    try:
        return True, await anext(iterator)
    except StopAsyncIteration:
        return False, None


async def _aclose(iterator: AsyncIterator[Event]) -> None:
    closer = getattr(iterator, "aclose", None)
    if closer is not None:
        await closer()


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable


async def outlast(wait: Callable[[], Awaitable[object]], done: Callable[[], bool]) -> None:
    """Await ``wait()`` until ``done()``, whatever cancels the waiting task
    meanwhile: an async store's cancelled write is settled (committed or
    rolled back) before the cancellation reaches its caller, so the next
    read tells whether it landed. The write's outcome is not the cancelled
    caller's to see: an error ends the wait too."""
    while not done():
        try:
            await wait()
        except asyncio.CancelledError:
            continue
        except Exception:
            return


async def settled(task: asyncio.Task[T]) -> T:
    """``task``'s result (a write run apart from its caller); a caller
    cancelled meanwhile waits until the task is over before its
    ``CancelledError`` goes on (``outlast``), so its next read tells whether
    the write landed."""
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        await outlast(lambda: asyncio.shield(task), task.done)
        raise


class BlockingStore:
    """A synchronous ``SharedStore`` over an ``AsyncSharedStore`` (see the
    module docstring): each call runs the async store's coroutine on a
    private event loop, shared by every ``BlockingStore`` of the process, and
    waits for it. Any thread may call it."""

    def __init__(self, inner: AsyncSharedStore) -> None:
        self.inner = inner
        self.loop = _private_loop()

    @classmethod
    def opening(cls, open_inner: Callable[[], Awaitable[AsyncSharedStore]]) -> BlockingStore:
        """A face over the store ``open_inner()`` opens, opened on the private loop."""
        loop = _private_loop()
        inner = asyncio.run_coroutine_threadsafe(_awaited(open_inner()), loop).result()
        return cls(inner)

    def _call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def __enter__(self) -> BlockingStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def append(self, request: AppendRequest) -> AppendResult:
        return self._call(self.inner.append(request))

    def head(self, session_id: str) -> int:
        return self._call(self.inner.head(session_id))

    def read(self, session_id: str, after: int = 0) -> tuple[Event, ...]:
        return self._call(self.inner.read(session_id, after))

    def load(self, session_id: str, *, incremental: bool = False) -> SessionState:
        return self._call(self.inner.load(session_id, incremental=incremental))

    def projection(self, session_id: str) -> Projection:
        return self._call(self.inner.projection(session_id))

    def audit(self, session_id: str) -> AuditReport:
        return self._call(self.inner.audit(session_id))

    def session_ids(self) -> tuple[str, ...]:
        return self._call(self.inner.session_ids())

    def fork(self, source_session: str, at: int, new_session: str) -> ForkProvenance:
        return self._call(self.inner.fork(source_session, at, new_session))

    def provenance(self, session_id: str) -> ForkProvenance | None:
        return self._call(self.inner.provenance(session_id))

    def import_fork(
        self, session_id: str, events: Sequence[Event], provenance: ForkProvenance, idempotency_key: str | None = None
    ) -> AppendResult:
        return self._call(self.inner.import_fork(session_id, events, provenance, idempotency_key))

    def acquire_lease(self, session_id: str, holder: str, ttl_ms: int) -> Lease:
        return self._call(self.inner.acquire_lease(session_id, holder, ttl_ms))

    def release_lease(self, lease: Lease) -> bool:
        return self._call(self.inner.release_lease(lease))

    def lease(self, session_id: str) -> Lease | None:
        return self._call(self.inner.lease(session_id))

    def follow(
        self, session_id: str, after_seq: int = 0, *, timeout: float | None = None
    ) -> Generator[Event, None, None]:
        iterator = self.inner.follow(session_id, after_seq, timeout=timeout)  # checks the request now
        return self._follow(iterator)

    def _follow(self, iterator: AsyncIterator[Event]) -> Generator[Event, None, None]:
        try:
            while True:
                more, event = self._call(_next(iterator))
                if not more:
                    return
                assert event is not None
                yield event
        finally:
            self._call(_aclose(iterator))

    def close(self) -> None:
        self._call(self.inner.close())
