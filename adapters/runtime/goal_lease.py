"""Driving a goal from one of many processes that share a store.

Theory of operation
-------------------
Activation (armed or disarmed) belongs to one process. When several processes
on several hosts share a store, at most one may drive a goal's rounds, so
``LeasedDriver`` puts a ``GoalService`` to work under the session's goal
lease (``adapters.store.base``: a holder and an expiry in the store, fenced
writes):

- Before every round it acquires the lease, or extends it when it already
  holds it. While it drives, every append of the session log carries the
  lease (the log's store is wrapped for the drive), so the store checks the
  lease in the same transaction as the round's append and refuses it
  (``lease-lost``) once the lease expired, was released or was taken over; a
  live lease is extended by every such append.
- A lease another holder keeps live stops the drive before the round
  (``lease-held``), and so does a lease lost during a round (``lease-lost``):
  either way this process is disarmed. Nothing resumes a goal on its own, so
  taking over a goal needs both the other holder's lease to have expired (a
  crashed holder's lease simply expires) and a human resume here.
- The lease is released when the drive stops on the kernel's word (the
  budget block, a paused or completed goal, ...), and whenever the service
  blocks, pauses, completes or clears the goal (a listener on its changes).

A process that starts comes back disarmed (``GoalService``), holding no lease.

Leases are logged on ``planfold.adapters.runtime.goal_lease``: a grant and a
release at INFO (an extension at DEBUG), a drive stopped by another holder's
live lease or by a lost lease at WARNING.
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

from ...kernel.log import GoalSource, MessageSource
from ..loggers import logger
from ..store.base import (
    AppendRequest,
    AppendResult,
    ForwardingStore,
    Lease,
    LeaseHeldError,
    LeaseLostError,
    SharedStore,
    Store,
)
from .goal_service import AgentHandle, DriveReport, GoalChanged, GoalLog, GoalService, RoundRunner, _Goals
from .machine import UnitStore

__all__ = ["RELEASING_OPERATIONS", "LeaseRules", "LeasedDrive", "LeasedDriver", "default_holder"]

_log = logger(__name__)

#: The goal operations after which the driver gives its lease back.
RELEASING_OPERATIONS = frozenset({"block", "pause", "complete", "clear"})


def default_holder(agent_id: str) -> str:
    """A lease holder name unique to this process: agent, host, pid and a nonce."""
    return f"{agent_id}@{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


@dataclass(frozen=True, slots=True)
class LeasedDrive:
    """What a leased drive did: the rounds it ran, why it stopped (the
    kernel's reason, ``lease-held``, ``lease-lost`` or ``None`` at its own
    limit), the seq of a budget block it appended, and for ``lease-held`` the
    other holder and when its lease expires."""

    rounds: tuple[int, ...]
    stopped: str | None
    blocked_at: int | None = None
    holder: str | None = None
    expires_at: int | None = None


class _FencedStore(ForwardingStore):
    """The log's own store with ``lease()`` put in every append's request
    (when there is one), which goes on whole, the caller's fold with it, through
    whatever wraps the store to the shared store that holds the lease."""

    def __init__(self, store: Store, lease: Callable[[], Lease | None]) -> None:
        super().__init__(store)
        self.lease = lease

    def append(self, request: AppendRequest) -> AppendResult:
        lease = self.lease()
        return self.inner.append(request if lease is None else replace(request, lease=lease))


class _LeasedRunner:
    """Takes (or extends) the lease before each round, then runs it; keeps
    the numbers of the rounds it started."""

    def __init__(self, driver: LeasedDriver, runner: RoundRunner) -> None:
        self.driver = driver
        self.runner = runner
        self.rounds: list[int] = []

    def run_turn(self, text: str, source: MessageSource | None = None) -> object:
        self.driver.take()
        self.rounds.append(round_number(self.rounds, source))
        return self.runner.run_turn(text, source)


#: The goal service a lease driver drives, and the store that holds the lease.
G = TypeVar("G", bound="_Goals[Any, Any]")
S = TypeVar("S")


class LeaseRules(Generic[G, S]):
    """What the synchronous and the asyncio lease drivers share: ``goals``'s
    driver under the session's goal lease in ``store`` (see the module
    docstring; ``ttl_ms`` is how long the lease lasts past its last use), the
    lease held, and what each step of the lease means (logged on
    ``_logger``); each driver makes the store calls its own way."""

    _logger = _log

    def __init__(self, goals: G, store: S, *, holder: str | None = None, ttl_ms: int = 60_000) -> None:
        self.goals = goals
        self.store = store
        self.holder = holder or default_holder(goals.agent_id)
        self.ttl_ms = ttl_ms
        self.lease: Lease | None = None
        goals.subscribe(goals.agent_id, self._changed)

    @property
    def session_id(self) -> str:
        log: GoalLog = self.goals.log
        return log.session_id

    def _changed(self, change: GoalChanged) -> None:
        """A goal change: the lease is given back after ``RELEASING_OPERATIONS``."""
        raise NotImplementedError

    def _took(self, held: Lease | None, lease: Lease) -> Lease:
        """The lease acquired (or extended: the same token as ``held``)."""
        self.lease = lease
        renewed = held is not None and held.token == lease.token
        self._logger.log(
            logging.DEBUG if renewed else logging.INFO,
            "session %r: goal lease %s to %r (token %d) until %d",
            self.session_id, "extended" if renewed else "granted", self.holder, lease.token, lease.expires_at,
        )  # fmt: skip
        return lease

    def _gave_back(self, lease: Lease | None, released: bool) -> bool:
        """``lease`` given back (``released``: it was still ours)."""
        if lease is not None:
            self._logger.info(
                "session %r: goal lease of %r %s", self.session_id, self.holder,
                "released" if released else "was no longer ours to release",
            )  # fmt: skip
        return released

    def _lost(self, agent: AgentHandle, rounds: Sequence[int], exc: LeaseHeldError | LeaseLostError) -> LeasedDrive:
        """Another holder has the lease, or ours was lost: this process is disarmed."""
        self.goals.disarm(agent)
        self.lease = None
        if isinstance(exc, LeaseHeldError):
            self._logger.warning(
                "session %r: goal drive stopped, the lease is held by %r until %d",
                self.session_id, exc.holder, exc.expires_at,
            )  # fmt: skip
            return LeasedDrive(tuple(rounds), exc.code, holder=exc.holder, expires_at=exc.expires_at)
        self._logger.warning(
            "session %r: goal drive stopped, the lease of %r was lost: %s", self.session_id, self.holder, exc.message
        )
        return LeasedDrive(tuple(rounds), exc.code)


def round_number(rounds: Sequence[int], source: MessageSource | None) -> int:
    """The number of the round ``source`` starts (counted when it names none)."""
    return source.round if isinstance(source, GoalSource) else len(rounds) + 1


class LeasedDriver(LeaseRules[GoalService, SharedStore]):
    """A ``GoalService``'s round driver under the session's goal lease in
    ``store`` (``LeaseRules`` has the arguments)."""

    def take(self) -> Lease:
        """Acquire the lease, or extend it; ``LeaseHeldError`` while another
        holder's is live."""
        return self._took(self.lease, self.store.acquire_lease(self.session_id, self.holder, self.ttl_ms))

    def release(self) -> bool:
        """Give the lease back now (False when it was no longer ours)."""
        lease, self.lease = self.lease, None
        return self._gave_back(lease, lease is not None and self.store.release_lease(lease))

    def _changed(self, change: GoalChanged) -> None:
        if change.operation in RELEASING_OPERATIONS:
            self.release()

    def drive(self, agent: AgentHandle, runner: RoundRunner, *, limit: int = 1_000) -> LeasedDrive:
        """Run goal rounds like ``GoalService.drive``, each under the lease."""
        leased = _LeasedRunner(self, runner)
        try:
            with self._fenced():
                report = self.goals.drive(agent, leased, limit=limit)
        except (LeaseHeldError, LeaseLostError) as exc:
            return self._lost(agent, leased.rounds, exc)
        return self._stopped(report)

    def _stopped(self, report: DriveReport) -> LeasedDrive:
        if report.stopped is not None:
            self.release()
        return LeasedDrive(report.rounds, report.stopped, report.blocked_at)

    @contextmanager
    def _fenced(self) -> Iterator[None]:
        """The session log appends through the fenced store for the drive."""
        log = self.goals.log
        # a step machine's log writes through its unit, which writes here
        holder: Any = log.store if isinstance(log.store, UnitStore) else log
        attribute = "inner" if holder is not log else "store"
        saved: Store = getattr(holder, attribute)
        setattr(holder, attribute, _FencedStore(saved, lambda: self.lease))
        try:
            yield
        finally:
            setattr(holder, attribute, saved)
