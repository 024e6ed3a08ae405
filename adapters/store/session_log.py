"""One session's log as the runtime sees it: a strict fold kept in step with
the store, and compare-and-set appends.

Theory of operation
-------------------
Opening a ``SessionLog`` loads the session through the store's incremental
open: the stored snapshot of the fold (written by the store only after a
strict fold, and checked against the log by ``audit``) plus a strict fold of
any events after it, so opening does not grow with the log; a bad event after
the snapshot raises ``ReplayError`` and nothing runs on it. The events
themselves are read from the store the first time someone asks for them (up
to the state's last seq; the log is append-only, so they are the events the
state was folded from). Afterwards the log keeps the folded ``SessionState``
(and the events, once read) in memory and changes them only through
``append``.

Decisions return drafts (``kernel.log.Draft``: a kind and a payload); the
log is the one place that numbers them. Every append is a compare-and-set:
the drafts become the events that follow the last event this process has
seen, stamped with one time (``number_drafts``), are folded strictly first
(so planfold never writes a log it would refuse to read back), and are handed
to the store with that seq as ``expected_seq``, in one ``AppendRequest``
that carries the fold too (``base.Folded``): when the log's state is the
very state the store holds for the session, a ``LogStore`` checks the append
against that fold instead of folding the same events again, so an append is
folded once (a store that cannot use the fold ignores it). When another writer got there
first the store raises ``ConflictError`` and nothing of ours is written.
``append_decided`` is for decisions that must be made on fresh state (goal
operations): it calls the decision with the current state and the time the
drafts will carry (a goal's snapshot records it), appends what it returns,
and on a conflict reloads and decides again, a bounded number of times;
each conflict is logged (``planfold.adapters.store.session_log``: INFO when
it decides again, WARNING when it gives up).

``observers`` are told about every event after it is written (the demo
prints them); an observer that raises propagates to the appender, so only
trusted display code belongs there.

While a tool executor runs, the runtime holds the log ``sealed``: any append
then raises ``LogSealedError`` and writes nothing, so no tool call can change
the session, its plan or its mode; only the runtime does, through the kernel.

Time is the caller's clock in integer milliseconds, clamped so that it never
goes below the last event's ``at`` (the log's ``time-regressed`` rule).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from ...kernel.errors import ConflictError
from ...kernel.log import Draft, Event, number_drafts
from ...kernel.session import SessionState, fold_more
from ..errors import AdapterError
from ..loggers import logger
from ..views import Prefix
from .base import AppendRequest, Folded, Store

__all__ = [
    "Clock",
    "LogSealedError",
    "Mark",
    "SessionLog",
    "system_clock",
]

Clock = Callable[[], int]

_log = logger(__name__)


def system_clock() -> int:
    """Wall-clock time in integer milliseconds."""
    return time.time_ns() // 1_000_000


class LogSealedError(AdapterError):
    """An append was tried while the log was sealed for a running tool: a
    tool (the deployment's code) tried to change the session. Nothing is
    written."""

    code = "log-sealed"

    def __init__(self, holder: str) -> None:
        super().__init__(
            f"the session log is sealed while {holder} runs: a tool cannot change the session, "
            "its plan or its mode; only the runtime does"
        )
        self.holder = holder


@dataclass(frozen=True, slots=True)
class Mark:
    """Where a log stood (``SessionLog.mark``), to put it back there."""

    state: SessionState
    events: int | None

    @property
    def last_seq(self) -> int:
        return self.state.last_seq


class SessionLog:
    """A session's events and strict fold, appended through ``store``."""

    def __init__(self, store: Store, session_id: str, clock: Clock = system_clock) -> None:
        self.store = store
        self.session_id = session_id
        self.clock = clock
        #: The events read so far (``None``: not read since the last reload);
        #: the list only grows, ``events`` hands out views of its prefix.
        self._events: list[Event] | None = []
        self._state = SessionState()
        self.observers: list[Callable[[Event], None]] = []
        self._sealed_by: str | None = None
        self.reload()
        state = self._state
        _log.info(
            "session %r: opened at seq %d (%s mode, turn %d %s)", session_id, state.last_seq,
            state.agent_mode, state.turns.turn, "open" if state.turns.open else "closed",
        )  # fmt: skip

    @property
    def events(self) -> Prefix[Event]:
        """Every event of the session up to ``last_seq`` (read from the store
        on first use after opening), as an immutable view that later appends
        do not change."""
        if self._events is None:
            self._events = list(self.store.read(self.session_id)[: self.last_seq])
        return Prefix(self._events, len(self._events))

    @property
    def state(self) -> SessionState:
        return self._state

    @property
    def last_seq(self) -> int:
        return self._state.last_seq

    @property
    def sealed_by(self) -> str | None:
        """What holds the log sealed right now, or ``None``."""
        return self._sealed_by

    @contextmanager
    def sealed(self, holder: str) -> Iterator[None]:
        """Refuse every append (``LogSealedError``) while ``holder`` runs."""
        previous, self._sealed_by = self._sealed_by, holder
        try:
            yield
        finally:
            self._sealed_by = previous

    def mark(self) -> Mark:
        """Where the log stands now (``restore`` puts it back there)."""
        return Mark(self._state, None if self._events is None else len(self._events))

    def restore(self, mark: Mark) -> None:
        """Put the in-memory log back where it stood at ``mark`` (after a
        unit of appends that was never written), without reading the
        store. Views handed out earlier keep what they showed."""
        self._state = mark.state
        if self._events is not None:
            self._events = None if mark.events is None else self._events[: mark.events]

    def reload(self) -> None:
        """Open the stored session through the store's incremental load (its
        snapshot and a strict fold of what follows; raises ``ReplayError``)."""
        self._state = self.store.load(self.session_id, incremental=True)
        self._events = None

    def now(self) -> int:
        """The caller's clock, never earlier than the last event."""
        at = int(self.clock())
        last = self._state.last
        return at if last is None or at >= last.at else last.at

    def append(
        self, drafts: Sequence[Draft], idempotency_key: str | None = None, *, at: int | None = None
    ) -> tuple[Event, ...]:
        """Append ``drafts``, numbered to follow the log and stamped ``at``
        (``now()`` when not given); returns the events written (none for no
        drafts, which is never an error).

        Raises ``ReplayError`` (nothing written) when they would break the
        strict fold, ``ConflictError`` when another writer appended first,
        ``LogSealedError`` while a tool runs.
        """
        if not drafts:
            return ()
        if self._sealed_by is not None:
            raise LogSealedError(self._sealed_by)
        batch = number_drafts(drafts, self.last_seq, self.now() if at is None else at)
        self._land(batch, fold_more(self._state, batch), idempotency_key)
        return batch

    def append_folded(self, events: Sequence[Event], before: SessionState, state: SessionState) -> None:
        """Append ``events``, already numbered to follow the log and stamped,
        whose strict fold from ``before`` (the log's state) is ``state`` (the
        kernel's turn machine decides and folds them). Raises as ``append``
        does; ``ConflictError`` when the log is not at ``before``."""
        if not events:
            return
        if self._sealed_by is not None:
            raise LogSealedError(self._sealed_by)
        if before is not self._state:
            raise ConflictError(self.session_id, events[0].seq - 1, self.last_seq)
        self._land(tuple(events), state, None)

    def _land(self, batch: tuple[Event, ...], state: SessionState, idempotency_key: str | None) -> None:
        """Append ``batch``, whose strict fold from the log's state is
        ``state``, with that fold (a store that takes it checks the append
        against it instead of folding again); then keep it and tell the
        observers."""
        folded = Folded(self._state, state)
        self.store.append(AppendRequest(self.session_id, self.last_seq, batch, idempotency_key, folded))
        if self._events is not None:
            self._events.extend(batch)
        self._state = state
        for event in batch:
            for observer in tuple(self.observers):
                observer(event)

    def append_decided(
        self,
        decide: Callable[[SessionState, int], Sequence[Draft]],
        *,
        attempts: int = 3,
    ) -> tuple[Event, ...]:
        """Append what ``decide(state, at)`` returns, stamped ``at``, deciding
        again on fresh state after a conflict (at most ``attempts`` times).
        Whatever ``decide`` raises propagates and nothing is written."""
        for attempt in range(1, attempts + 1):
            at = self.now()
            decided = decide(self._state, at)
            try:
                return self.append(decided, at=at)
            except ConflictError as exc:
                if attempt == attempts:
                    _log.warning(
                        "session %r: conflict on attempt %d of %d, giving up: %s",
                        self.session_id, attempt, attempts, exc.message,
                    )  # fmt: skip
                    raise
                _log.info(
                    "session %r: conflict on attempt %d of %d (%s); reloading to decide again",
                    self.session_id, attempt, attempts, exc.message,
                )  # fmt: skip
                self.reload()
        raise AssertionError("unreachable")
