"""Driving a goal under the session's lease from an asyncio program.

Theory of operation
-------------------
``AsyncLeasedDriver`` is ``goal_lease.LeasedDriver`` for an
``AsyncGoalService`` over an ``AsyncSharedStore`` (the async memory, SQLite
and PostgreSQL stores): the same lease rules (acquired or extended before
every round, carried by every append of the drive so the store refuses it
once lost, released when the drive stops on the kernel's word or the
service blocks, pauses, completes or clears the goal), with every store call
awaited on the loop. The fence is the session log's ``lease`` for the time
of the drive, so the rounds' own appends (the asyncio runtime's, through the
same log) carry it too.

Leases are logged on ``planfold.adapters.runtime.goal_lease_aio`` as the
synchronous driver logs them.

A release asked for by a goal change is a task of the loop (listeners are
plain functions); ``settle`` awaits the ones still running.
"""

from __future__ import annotations

import asyncio

from ...kernel.log import MessageSource
from ..loggers import logger
from ..store.aio import AsyncSharedStore
from ..store.base import Lease, LeaseHeldError, LeaseLostError
from .goal_lease import RELEASING_OPERATIONS, LeasedDrive, LeaseRules, round_number
from .goal_service import AgentHandle, AsyncGoalService, AsyncRoundRunner, DriveReport, GoalChanged

__all__ = ["AsyncLeasedDriver"]

_log = logger(__name__)


class _LeasedRounds:
    """Takes (or extends) the lease before each round, then awaits it."""

    def __init__(self, driver: AsyncLeasedDriver, runner: AsyncRoundRunner) -> None:
        self.driver = driver
        self.runner = runner
        self.rounds: list[int] = []

    async def run_turn(self, text: str, source: MessageSource | None = None) -> object:
        await self.driver.take()
        self.rounds.append(round_number(self.rounds, source))
        return await self.runner.run_turn(text, source)


class AsyncLeasedDriver(LeaseRules[AsyncGoalService, AsyncSharedStore]):
    """An ``AsyncGoalService``'s round driver under the session's goal lease
    in ``store`` (``LeaseRules`` has the arguments)."""

    _logger = _log

    def __init__(
        self, goals: AsyncGoalService, store: AsyncSharedStore, *, holder: str | None = None, ttl_ms: int = 60_000
    ) -> None:
        #: the releases goal changes asked for, still running (see ``settle``)
        self._releasing: set[asyncio.Task[bool]] = set()
        super().__init__(goals, store, holder=holder, ttl_ms=ttl_ms)

    async def take(self) -> Lease:
        """Acquire the lease, or extend it; ``LeaseHeldError`` while another
        holder's is live."""
        return self._took(self.lease, await self.store.acquire_lease(self.session_id, self.holder, self.ttl_ms))

    async def release(self) -> bool:
        """Give the lease back now (False when it was no longer ours)."""
        lease, self.lease = self.lease, None
        return self._gave_back(lease, lease is not None and await self.store.release_lease(lease))

    async def settle(self) -> None:
        """Await the releases that goal changes asked for."""
        while self._releasing:
            await asyncio.gather(*tuple(self._releasing), return_exceptions=True)

    def _changed(self, change: GoalChanged) -> None:
        if change.operation in RELEASING_OPERATIONS and self.lease is not None:
            task = asyncio.get_running_loop().create_task(self.release())
            self._releasing.add(task)
            task.add_done_callback(self._releasing.discard)

    async def drive(self, agent: AgentHandle, runner: AsyncRoundRunner, *, limit: int = 1_000) -> LeasedDrive:
        """Run goal rounds like ``AsyncGoalService.drive_async``, each under the lease."""
        leased = _LeasedRounds(self, runner)
        log = self.goals.log
        saved = log.lease
        log.lease = lambda: self.lease
        try:
            report = await self.goals.drive_async(agent, leased, limit=limit)
        except (LeaseHeldError, LeaseLostError) as exc:
            return self._lost(agent, leased.rounds, exc)
        finally:
            log.lease = saved
        await self.settle()
        return await self._stopped(report)

    async def _stopped(self, report: DriveReport) -> LeasedDrive:
        if report.stopped is not None and self.lease is not None:
            await self.release()
        return LeasedDrive(report.rounds, report.stopped, report.blocked_at)
