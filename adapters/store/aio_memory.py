"""The in-memory reference store for asyncio.

Theory of operation
-------------------
``AsyncMemoryStore`` is ``AsyncLogStore`` over a ``MemoryStore``'s own
``LogStore`` (the one append algorithm over a dict of sessions). Nothing the
memory backend does waits for anything but its own lock, which only the
loop's thread ever takes, so every operation runs inline on the loop: no
thread, no executor, no hop. An operation is one step between two awaits, so
a task cancelled while it awaits one either ran it whole or not at all.

Followers wait on an ``asyncio.Event`` of the store, which every commit that
wrote something sets (and replaces), so a follower wakes on the next write
and looks again. An ``asyncio.Event`` belongs to the loop that first waits
on it, so the store keeps the loop its event was made on and makes a new one
when a follower waits on another loop: the store serves any event loop, one
at a time (one ``asyncio.run`` after another), as it runs only on the loop's
thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from .aio import AsyncLogStore
from .base import AppendRequest, AppendResult
from .engine import LogStore, Transaction
from .memory import MemoryBackend
from .session_log import system_clock

__all__ = ["AsyncMemoryStore"]

T = TypeVar("T")


class _SignallingBackend(MemoryBackend):
    """A ``MemoryBackend`` that also tells the loop's followers about every write."""

    def __init__(self, clock: Callable[[], int]) -> None:
        super().__init__(clock)
        self.written: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def run(self, operation: str, write: bool, body: Callable[[Transaction], T]) -> T:
        result = super().run(operation, write, body)
        if write and self.written is not None:
            self.written.set()
            self.written = None
        return result

    def close(self) -> None:
        super().close()
        if self.written is not None:
            self.written.set()
            self.written = None

    def signal(self) -> asyncio.Event:
        """The event the next write sets, of the running loop (a loop that
        used the store before has ended: nobody waits on its event)."""
        loop = asyncio.get_running_loop()
        if self.written is None or self._loop is not loop:
            self.written, self._loop = asyncio.Event(), loop
        return self.written


class AsyncMemoryStore(AsyncLogStore):
    """An ``AsyncSharedStore`` held in process memory, run on the loop
    without threads (see the module docstring); leases run on ``clock``
    (integer milliseconds)."""

    def __init__(self, *, clock: Callable[[], int] = system_clock) -> None:
        super().__init__()
        self._backend = _SignallingBackend(clock)
        self.store = LogStore(self._backend)

    async def __aenter__(self) -> AsyncMemoryStore:
        return self

    async def _run(self, call: Callable[[LogStore], T]) -> T:
        return call(self.store)

    async def _write(self, call: Callable[[LogStore], T]) -> T:
        return call(self.store)

    async def _append(self, request: AppendRequest) -> AppendResult:
        return self.store.append(request)

    async def _wait(self, session_id: str, position: int, timeout: float | None) -> None:
        if self._backend.closed:
            return
        signal = self._backend.signal()
        if self.store.head(session_id) > position:
            return
        try:
            await asyncio.wait_for(signal.wait(), timeout)
        except TimeoutError:
            return

    async def _close(self) -> None:
        self.store.close()
