"""A synchronous ``Store`` as an ``AsyncStore``: one thread hop per store call.

Theory of operation
-------------------
The asyncio runtime (``adapters.runtime.aio``) has one path: it awaits an
``AsyncStore``. A native async store is the way to run it: the memory,
SQLite and PostgreSQL async stores (``adapters.store.aio``) keep the event
loop free with no thread per call. ``ThreadedStore`` adapts any synchronous
``Store`` (an embedding's own, a wrapper that injects faults, a store the
program holds already) at the store boundary and nowhere else: each call runs
the synchronous store's method in a worker thread (``asyncio.to_thread``), so
the store's I/O never blocks the loop. That is exactly one thread hop per
store call; the runtime above it never hops.

An append hands its request on whole (``base.AppendRequest``: the caller's
fold and any lease travel in it, so a wrapper of a shared store fences
too); leases and ``follow`` need a ``SharedStore`` and are
``InvalidRequestError`` for any other store, as they are for
``otel.TracedAsyncStore`` (which takes a ``ThreadedStore`` for an
``AsyncSharedStore`` whatever it wraps, and hands them on). A cancelled
task does not stop a call already running in its thread: it finishes
there. A task cancelled while it awaits a write (an append, an import, a
fork, a lease's grant or release) waits until the write's thread is done
with it before the ``CancelledError`` goes on, as with every async store
(``aio.settled``): the write is in the log or not, and the next read tells
which.

``follow`` polls, as the async SQLite store does: it reads the session, and
while nothing is new asks for its head at an interval that starts at a few
milliseconds and doubles up to ``POLL_INTERVAL``, each call a hop of its
own. The waiting is done on the loop, never in a thread, so a follower
cancelled at any point ends with ``CancelledError`` and leaves no thread
behind (a thread blocked in the synchronous store's own ``follow`` would
keep the loop from ever shutting down).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TypeVar

from ...kernel.log import Event
from ...kernel.session import SessionState
from ..provenance import ForkProvenance
from .aio import following, poll_head, settled
from .base import (
    AppendRequest,
    AppendResult,
    AuditReport,
    InvalidRequestError,
    Lease,
    SharedStore,
    Store,
    check_after,
    check_session_id,
    check_timeout,
)
from .projection import Projection

__all__ = ["ThreadedStore"]

T = TypeVar("T")

#: The longest pause of a follow between two looks at the session's head, in seconds.
POLL_INTERVAL = 0.25


class ThreadedStore:
    """``store``'s operations awaited, each run in a worker thread (see the
    module docstring). The same arguments, results and typed errors as
    ``store``'s own; ``close`` closes it."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def _shared(self, what: str) -> SharedStore:
        store = self.store
        if not isinstance(store, SharedStore):
            raise InvalidRequestError(f"{what} needs a shared store; {type(store).__name__} is not one")
        return store

    async def _call(self, call: Callable[[], T]) -> T:
        return await asyncio.to_thread(call)

    async def _write(self, call: Callable[[], T]) -> T:
        """``_call`` of a write: a cancelled caller waits for its end (see the module docstring)."""
        return await settled(asyncio.get_running_loop().create_task(self._call(call)))

    async def __aenter__(self) -> ThreadedStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def append(self, request: AppendRequest) -> AppendResult:
        """``Store.append`` of ``request``, handed on whole, in a worker thread."""
        return await self._write(lambda: self.store.append(request))

    async def head(self, session_id: str) -> int:
        return await self._call(lambda: self.store.head(session_id))

    async def read(self, session_id: str, after: int = 0) -> tuple[Event, ...]:
        return await self._call(lambda: self.store.read(session_id, after))

    async def load(self, session_id: str, *, incremental: bool = False) -> SessionState:
        return await self._call(lambda: self.store.load(session_id, incremental=incremental))

    async def projection(self, session_id: str) -> Projection:
        return await self._call(lambda: self.store.projection(session_id))

    async def audit(self, session_id: str) -> AuditReport:
        return await self._call(lambda: self.store.audit(session_id))

    async def session_ids(self) -> tuple[str, ...]:
        return await self._call(self.store.session_ids)

    async def fork(self, source_session: str, at: int, new_session: str) -> ForkProvenance:
        return await self._write(lambda: self.store.fork(source_session, at, new_session))

    async def provenance(self, session_id: str) -> ForkProvenance | None:
        return await self._call(lambda: self.store.provenance(session_id))

    async def import_fork(
        self, session_id: str, events: Sequence[Event], provenance: ForkProvenance, idempotency_key: str | None = None
    ) -> AppendResult:
        return await self._write(lambda: self.store.import_fork(session_id, events, provenance, idempotency_key))

    async def close(self) -> None:
        await self._call(self.store.close)

    async def acquire_lease(self, session_id: str, holder: str, ttl_ms: int) -> Lease:
        shared = self._shared("a goal lease")
        return await self._write(lambda: shared.acquire_lease(session_id, holder, ttl_ms))

    async def release_lease(self, lease: Lease) -> bool:
        shared = self._shared("a goal lease")
        return await self._write(lambda: shared.release_lease(lease))

    async def lease(self, session_id: str) -> Lease | None:
        shared = self._shared("a goal lease")
        return await self._call(lambda: shared.lease(session_id))

    def follow(self, session_id: str, after_seq: int = 0, *, timeout: float | None = None) -> AsyncIterator[Event]:
        """``SharedStore.follow``, by polling (see the module docstring). The
        request is checked at the call, as the synchronous one is."""
        self._shared("following a session")
        check_session_id(session_id)
        position = check_after(after_seq)
        return following(
            lambda at: self.read(session_id, at),
            lambda at, left: poll_head(lambda: self.head(session_id), at, left, POLL_INTERVAL),
            position,
            check_timeout(timeout),
        )
