"""The one append algorithm, written once above thin backends.

Theory of operation
-------------------
``LogStore`` implements the whole ``Store`` protocol: request checks,
idempotency keys, the compare-and-set check, the strict fold of the new
events onto the stored snapshot (or onto a replay when the snapshot is stale
or absent), the projection and the snapshot, strict loads, audits. A backend
supplies only what differs between storage engines:

- ``Backend.run(operation, write, body)``: one transaction. ``write=True``
  takes the session's write lock for the whole transaction (so the check and
  the write are atomic); ``write=False`` reads one consistent view. Any
  exception rolls back, and a driver exception leaves as the store's typed
  ``StorageError`` (``outcome`` ``unknown`` only when the commit itself
  failed). The kernel's ``ConflictError`` and the store errors pass through.
- ``Transaction``: the rows, in four operations split by concern. ``view``
  reads a session's record in one call: the log's last seq, the session
  row's snapshot, what an idempotency key already answered, the goal lease
  with the lease clock's now, and on request the whole session row
  (projection included), which of some goal ids the session has used and
  its fork provenance. In a write transaction it takes the session's write
  lock first. ``rows`` yields stored ``(seq, kind, at, payload text)`` rows
  in seq order after a seq and, with ``upto``, up to one (such a bounded
  range is read whole: a stream left early may abort its transaction).
  ``session_ids`` lists the sessions. ``write`` takes a ``SessionWrite``,
  the bundle of what one transaction writes to a session (event rows, goal
  ids, the session row, a key, the lease, a provenance; each part
  optional); a transaction may write more than once (an import writes its
  events in batches). Payloads are stored as the compact JSON text the
  codec produced, so every backend hands back byte-identical events.

So a backend implements at most eight operations: ``run``, ``watch`` and
``close``, the transaction's four, and ``append_decided`` when it can
append in one step. Reads are one call because every caller reads a
session's record at one point of its transaction and only the backend knows
how to read its parts together (SQLite: one statement for the parts every
view reads, none when the connection kept the view its last append left;
PostgreSQL: one round trip for ``BEGIN``, the lock and every statement the
view asks for); writes are one bundle because nothing is
read between them (every check comes first), so a backend that defers its
writes to the commit (PostgreSQL) sends them in one round trip. The split is
by concern: ``view`` is what a decision reads, ``rows`` the log, ``write``
the outcome.

An append is: validate (``prepare_append``, outside any transaction); in one
write transaction read the view; answer a known key (or refuse a key reused
for another request); refuse a stale ``expected_seq`` with ``ConflictError``;
fold the new events strictly (``AppendRejectedError``); insert the events,
write the session row (projection and snapshot) and the key; commit.

The goal ids a session has created are an index the backend keeps
(``view``'s ``goal_ids`` and ``SessionWrite.goal_ids``: a table keyed by
session and id),
not part of the snapshot, which would otherwise grow with every goal and be
rewritten on every append. When the new events create goals, the append
looks their ids up in the index first and hands the ones already used to the
fold's state (``knowing_goal_ids``), so a reused id is ``id-reused`` at its
seq, in the order of every other check, exactly as in a replay; the ids the
events create join the index in the same transaction. All
checks come before the first write, and a backend writes nothing unless the
transaction commits, so nothing is ever partly written.

A backend that can check and write an append in one step (``OneStepBackend``:
PostgreSQL, where each statement of a transaction is a round trip to the
server) gets the append decided before anything is sent, when the store
already holds the state it builds on: the memo's state at ``expected_seq``
(or the empty state of a new session). The store folds the events onto it
strictly and derives the event rows, the projection, the snapshot and the
goal ids the events create; ``append_decided`` then makes, in one step under
the session's lock, every check the transaction would make (a created id
must not be in the index) and one more: the stored snapshot must be the very
text the state came from. It writes only when all of them hold. Otherwise it
writes nothing and returns the view ``view`` would read, and the store
draws its answer from that view with the transaction's own checks
(``_answered``, ``_check_round``); a view that explains no refusal (the
memo's state was not the stored one, a created id was used) sends the append
to the transaction. So does an append the fold refuses, so that every
refusal comes in the transaction's order (a reused key before a bad event).

Loads fold rows as they are decoded (``kernel.session.fold_rows`` over
``codec.decode_rows``), so a load never holds the whole log.

Goal leases (see ``adapters.store.base``) are one row per session: holder,
fencing token, expiry and ttl. ``view`` reads it with the store's lease
clock (``now``: the database server's clock where there is one), and the
lease operations read it and write it (``SessionWrite.lease``) in a write
transaction, so every lease decision is made under the same lock as the
appends it fences. A released lease keeps its row (holder ``""``) so that tokens only
ever grow.

A fork (``LogStore.fork``) is one write transaction too: under the new
session's lock (its ``view``) it refuses a new session that exists, reads
the source's first ``at`` rows, folds them strictly, and writes them
(their stored payload text unchanged, so the fork exports byte for byte as
the source does), the goal ids they create, the session row (projection and
snapshot of the prefix's fold) and the provenance (``view`` reads it back).
The source is only read, through ``rows`` (never ``view``, which would lock
it): the rows up to a seq never change once written, so nothing of it needs
locking.

An audit of a forked session checks its provenance twice, in the audit's one
read transaction: against the session's own first events (their digest must
be the recorded one), and, when the source session is in the same store,
against the source's first events (``provenance-source-mismatch`` when they
are missing or hash otherwise), so that a fork imported with a recomputed
digest cannot claim a source it did not come from.

``follow`` reads the events after its position, yields them, and waits on
the backend's ``Watch`` until the session may have grown: a condition
variable in memory, a bounded polling interval on SQLite, ``LISTEN``/``NOTIFY``
on PostgreSQL.

The store remembers, per session, the last snapshot text it wrote or decoded
together with its state, so the next append to a session it just wrote does
not decode its own snapshot again. The memo is used only when the stored row
holds exactly that text (snapshots round-trip exactly, so equal text means an
equal state); any other text, written by another process or left stale, is
decoded as usual. The memo also keeps the encoded parts of its state and its
projection, so the next snapshot encodes only what the new events changed
(``snapshot_reusing``) and the next session row encodes the plan and the goal
again only when they changed (``project_reusing``).
"""

from __future__ import annotations

import functools
import itertools
import logging
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import Any, NamedTuple, Protocol, TypeVar, runtime_checkable

from ...kernel.errors import ConflictError, PayloadError, PlanfoldError
from ...kernel.goal.values import SnapshotChange, read_goal_change
from ...kernel.log import GOAL_CHANGE, TOOL_REFUSED, TOOL_WARNING, USER_MESSAGE, Event, GoalSource, read_message
from ...kernel.payload import maker
from ...kernel.session import SessionState, fold_rows
from ...kernel.tools.events import read_tool_notice
from ..codec import decode_payload, decode_rows
from ..loggers import logger
from ..provenance import ForkProvenance, prefix_digest
from .base import (
    MAX_SEQ,
    AppendRejectedError,
    AppendRequest,
    AppendResult,
    AuditReport,
    Folded,
    ForkSeqMissingError,
    ForkSourceMissingError,
    IdempotencyMismatchError,
    InvalidRequestError,
    Lease,
    LeaseHeldError,
    LeaseLostError,
    PreparedAppend,
    QuietTimer,
    SessionExistsError,
    audit_state,
    check_after,
    check_fork_request,
    check_lease_request,
    check_provenance,
    check_session_id,
    check_timeout,
    fold_new_events,
    prepare_append,
    stored_int,
)
from .projection import (
    Projection,
    project,
    project_reusing,
    resume_state,
    snapshot_reusing,
    with_summary,
)
from .snapshot import SnapshotParts

__all__ = [
    "SCAN_PAGE",
    "SOURCE_MISMATCH",
    "Backend",
    "DecidedAppend",
    "Decision",
    "EventRow",
    "Folded",
    "KnownKey",
    "LogStore",
    "OneStepBackend",
    "SessionRead",
    "SessionRow",
    "SessionView",
    "SessionWrite",
    "StoredEvent",
    "Transaction",
    "Watch",
    "append_started",
    "created_goal_ids",
    "knowing_goal_ids",
    "log_appended",
    "noted_append",
    "starts_a_round",
]

T = TypeVar("T")

_log = logger(__name__)

#: One stored event: seq, kind, at and the payload's JSON text. Backends may
#: hand back any values (a hand-edited database holds anything); the fold
#: checks them.
StoredEvent = tuple[Any, Any, Any, Any]

#: Sessions whose last snapshot a store keeps decoded (least recently used dropped).
_MEMO_SIZE = 64


class _Memo(NamedTuple):
    """A snapshot text a store wrote or decoded, the state it encodes, the
    encoded parts of that state (``None`` when unknown) and its projection
    (``None`` when not derived)."""

    fold_format: str
    fold_state: str
    state: SessionState
    parts: SnapshotParts | None
    projection: Projection | None

    def holds(self, fold_format: str, fold_state: str, last_seq: int) -> bool:
        """Whether the stored snapshot is this very text at ``last_seq``."""
        return self.fold_state == fold_state and self.fold_format == fold_format and self.state.last_seq == last_seq


#: ``AppendResult(...)`` without its ``__init__`` (``kernel.payload.maker``): one per append.
_RESULT: Callable[..., AppendResult] = maker(AppendResult)
#: Events per read transaction of ``LogStore.scan``.
SCAN_PAGE = 5_000


class KnownKey(NamedTuple):
    """What an idempotency key already answered."""

    request_hash: str
    first_seq: int
    last_seq: int


class SessionView(NamedTuple):
    """What a transaction reads of one session's record, in one call
    (``Transaction.view``): the log's last seq, whether the session row
    exists and its snapshot, the idempotency key's answer, the goal lease
    with the lease clock's time, and what the call asked for besides: the
    whole session row (``row``), which of some goal ids the session has used
    (``used``) and its fork provenance.

    The store's own values (this one, ``KnownKey``, ``SessionRow``,
    ``SessionWrite``, ``DecidedAppend``) are named tuples: immutable like
    frozen dataclasses, and several of them are made on every append, where
    a frozen dataclass's field-by-field construction showed."""

    head: int
    has_row: bool
    fold_format: str = ""
    fold_state: str = ""
    known: KnownKey | None = None
    lease: Lease | None = None
    now: int = 0
    row: SessionRow | None = None
    used: frozenset[str] = frozenset()
    provenance: ForkProvenance | None = None


class SessionRow(NamedTuple):
    """The session row a store keeps: the projection and the fold snapshot."""

    projection: Projection
    fold_format: str
    fold_state: str

    def snapshot(self) -> tuple[str, str, int]:
        """The fold snapshot's format, its text and the seq it was folded to."""
        return self.fold_format, self.fold_state, self.projection.last_seq

    def columns(self) -> tuple[str, bool, str, str, str, int, str, str]:
        """What an append writes to the row, in the order every backend's
        session table takes it (``sqlite_sql.PROJECTION_COLUMNS``): the agent
        mode, plan mode, current plan, its summary, goal and last seq, then
        the fold state and its format."""
        p = self.projection
        return (
            p.agent_mode,
            p.plan_mode,
            p.current_plan_json,
            p.current_plan_summary_json,
            p.goal_json,
            p.last_seq,
            self.fold_state,
            self.fold_format,
        )


#: One event row as a store writes it: seq, kind, at and the payload's text.
EventRow = tuple[int, str, int, str]


class SessionRead(NamedTuple):
    """What one ``Transaction.view`` reads of one session besides the parts
    it always reads (the head, the snapshot, the lease and the lease clock):
    what an idempotency key answered, which of some goal ids the session has
    used, the whole session row, its fork provenance. The read's twin of
    ``SessionWrite``."""

    session_id: str
    key: str | None = None
    goal_ids: Sequence[str] = ()
    row: bool = False
    provenance: bool = False


class SessionWrite(NamedTuple):
    """What one ``Transaction.write`` writes to one session, every part
    optional: event rows, the goal ids they create (each with the seq of its
    create), the session row (``exists``: whether the transaction found one;
    ``first_at`` and ``last_at``: the times of the first and last event
    written, for the legacy time columns), an idempotency key with its answer,
    the goal lease, and a fork's provenance."""

    session_id: str
    events: Sequence[EventRow] = ()
    goal_ids: Sequence[tuple[str, int]] = ()
    row: SessionRow | None = None
    exists: bool = False
    first_at: int = 0
    last_at: int = 0
    key: str | None = None
    known: KnownKey | None = None
    lease: Lease | None = None
    provenance: ForkProvenance | None = None


#: ``SessionWrite(...)`` from one tuple of every field (``_make``): one per append.
_WRITE: Callable[[Iterable[Any]], SessionWrite] = SessionWrite._make


class Transaction(Protocol):
    """The rows of one backend, inside one transaction (see the module docstring)."""

    def view(self, read: SessionRead) -> SessionView: ...

    def rows(self, session_id: str, after: int = 0, upto: int | None = None) -> Iterable[StoredEvent]: ...

    def session_ids(self) -> tuple[str, ...]: ...

    def write(self, write: SessionWrite) -> None: ...


class Watch(Protocol):
    """Waits until a followed session may have grown."""

    def wait(self, position: int, timeout: float | None) -> bool:
        """True once the session may hold events after ``position`` (a wake
        without new events is allowed), False when ``timeout`` seconds passed."""
        ...


class Backend(Protocol):
    """Transactions on one storage engine (see the module docstring)."""

    def run(self, operation: str, write: bool, body: Callable[[Transaction], T]) -> T: ...

    def watch(self, session_id: str) -> AbstractContextManager[Watch]: ...

    def close(self) -> None: ...


def created_goal_ids(events: Sequence[Event]) -> list[tuple[str, int]]:
    """The goal ids the ``goal/change`` creates among ``events`` name, each
    with the seq of its create, read by the kind's reader. It may be asked
    before the fold: a change that does not read creates nothing here (the
    fold refuses it at its seq); once the fold has accepted the events, each
    of these is a create it folded."""
    created = []
    for event in events:
        if event.kind == GOAL_CHANGE:
            try:
                change = read_goal_change(event.payload)
            except PayloadError:
                continue
            if isinstance(change, SnapshotChange) and change.operation == "create":
                created.append((change.goal.id, event.seq))
    return created


def knowing_goal_ids(state: SessionState, used: Iterable[str]) -> SessionState:
    """``state`` whose goal fold also knows ``used`` (ids the store's index
    holds) as used, so that folding a create of one is ``id-reused`` exactly
    as in a replay of the whole log."""
    goal = state.goal
    known = goal.used_ids
    for goal_id in sorted(used):
        known = known.with_id(goal_id)
    return state if known is goal.used_ids else replace(state, goal=replace(goal, used_ids=known))


class DecidedAppend(NamedTuple):
    """An append decided on a state the store holds, for ``OneStepBackend``:
    the request (``prepared``, ``lease``), which stored snapshot the state was
    read from (``has_row``, ``base_format``, ``base_state``: the session row's
    exact columns; no row for a new session), whether the events start a goal
    round, and what to write (event rows, the session row, and the goal ids
    the events create with the seqs of their creates)."""

    prepared: PreparedAppend
    lease: Lease | None
    has_row: bool
    base_format: str
    base_state: str
    starts_round: bool
    rows: tuple[tuple[int, str, int, str], ...]
    row: SessionRow
    goal_ids: tuple[tuple[str, int], ...]


class Decision(NamedTuple):
    """An append decided in the client (``LogStore.decide_append``) and the
    memo the store keeps once it is written."""

    append: DecidedAppend
    memo: _Memo


@runtime_checkable
class OneStepBackend(Backend, Protocol):
    """A backend that checks and writes a decided append in one step."""

    def append_decided(self, append: DecidedAppend) -> SessionView | None:
        """In one atomic step under the session's write lock: when the key is
        new, the head is the expected seq, the session row holds exactly the
        base snapshot, a fenced append holds the live lease, an unfenced one
        that starts a round meets no live lease and no goal id it creates is
        in the session's index, write everything (the lease extended by its
        ttl from the lease clock's now) and answer ``None``. Otherwise write
        nothing and answer the view ``Transaction.view`` would read."""
        ...


def _folded(sid: str, state: SessionState, events: Sequence[Event], folded: Folded | None) -> SessionState:
    """The strict fold of ``events`` onto ``state``: the caller's when it
    folded exactly these onto exactly this state, else ``fold_new_events``."""
    # The caller's fold counts when it ends at these events and starts from
    # the very state, or (a new session) from an empty one too: comparing two
    # non-empty states built apart would walk them whole, which costs more
    # than folding the few events again.
    if (
        folded is not None
        and folded.after.last == events[-1]
        and (folded.before is state or (state.last is None and folded.before == state))
    ):
        return folded.after
    return fold_new_events(sid, state, events)


#: The kinds an append logs on their own (``log_appended``).
_NOTED = frozenset({USER_MESSAGE, GOAL_CHANGE, TOOL_REFUSED, TOOL_WARNING})


def log_appended(session_id: str, events: Sequence[Event]) -> None:
    """The records of what an accepted append did that a reader of the log
    wants to know without reading it: a goal round started and a goal
    operation at INFO; a call the gate refused, or (advisory) warned about,
    at WARNING: the model made it, nobody asked for it."""
    for event in events:
        kind = event.kind
        if kind not in _NOTED:
            continue
        try:
            _log_event(session_id, event)
        except PayloadError:  # an event the fold accepted always reads; a log line never fails an append
            continue


def append_started() -> float | None:
    """When an append starts, for its DEBUG record (``noted_append``);
    ``None`` when DEBUG is off, so an append costs no clock read then."""
    return time.perf_counter() if _log.isEnabledFor(logging.DEBUG) else None


def noted_append(request: AppendRequest, result: AppendResult, started: float | None) -> AppendResult:
    """``result``, once what ``request`` did is logged: its INFO and WARNING
    records (``log_appended``; an idempotent retry wrote nothing, so it logs
    none) and, unless ``started`` (``append_started``) is ``None``, the
    append's DEBUG record (session, seq range, duration since ``started``).
    What every store's accepted append logs, whichever way it ran."""
    if not result.replayed:
        log_appended(request.session_id, request.events)
    if started is not None:
        _log.debug(
            "session %r: appended seq %d..%d (%d event(s))%s%s in %.2f ms",
            result.session_id, result.first_seq, result.last_seq, result.last_seq - result.first_seq + 1,
            " fenced" if request.lease is not None else "",
            " (an idempotent retry: nothing written)" if result.replayed else "",
            (time.perf_counter() - started) * 1000,
        )  # fmt: skip
    return result


def _log_event(session_id: str, event: Event) -> None:
    kind = event.kind
    if kind == USER_MESSAGE:
        source = read_message(event.payload).source
        if isinstance(source, GoalSource):
            _log.info(
                "session %r: goal %r round %d started at seq %d (revision %d)",
                session_id, source.goal_id, source.round, event.seq, source.revision,
            )  # fmt: skip
    elif kind == GOAL_CHANGE:
        change = read_goal_change(event.payload)
        if isinstance(change, SnapshotChange):
            goal = change.goal
            _log.info(
                "session %r: goal %r %s at seq %d: revision %d, %s, rounds %d/%d",
                session_id, goal.id, change.operation, event.seq, goal.revision, goal.phase,
                change.rounds_started, goal.max_rounds,
            )  # fmt: skip
        else:
            _log.info("session %r: goal %r cleared at seq %d", session_id, change.cleared.id, event.seq)
    elif _log.isEnabledFor(logging.WARNING):
        notice = read_tool_notice(event.payload, kind)
        _log.warning(
            "session %r: the gate %s %s (call %r) at seq %d in %s: [%s] %s",
            session_id, "refused" if kind == TOOL_REFUSED else "warns about", notice.tool, notice.call_id,
            event.seq, notice.phase, notice.code, notice.reason,
        )  # fmt: skip


def starts_a_round(events: Sequence[Event]) -> bool:
    """True when ``events`` hold a ``user/message`` attributed to a goal
    (a round, which only the lease holder may start while a lease is live).
    Asked of events the fold has accepted, so every message reads."""
    return any(
        event.kind == USER_MESSAGE and isinstance(read_message(event.payload).source, GoalSource) for event in events
    )


class LogStore:
    """A ``Store`` over any ``Backend`` (see the module docstring)."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._memo: dict[str, _Memo] = {}
        self._memo_lock = threading.Lock()
        self._one_step = backend if isinstance(backend, OneStepBackend) else None
        self._closed = False

    def __enter__(self) -> LogStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the backend; later calls raise ``StoreClosedError``. Idempotent."""
        self.backend.close()
        if not self._closed:
            self._closed = True
            _log.info("store %s closed", type(self).__name__)

    # ----------------------------------------------------------------------
    # Writes

    def append(self, request: AppendRequest) -> AppendResult:
        """Compare-and-set append in one write transaction (see ``adapters.store.base``
        for every outcome); with the request's ``lease``, a fenced append, and
        with its ``folded``, the caller's own strict fold of its events (see
        ``Folded``). Each append is a DEBUG record (session, seq range,
        duration)."""
        started = append_started()
        return noted_append(request, self._append_request(request), started)

    def _append_request(self, request: AppendRequest) -> AppendResult:
        prepared, folded = self.prepared_append(request)
        lease = request.lease
        if self._one_step is not None:
            done = self._append_decided(self._one_step, prepared, lease, folded)
            if done is not None:
                return done
        return self.backend.run("append", True, lambda tx: self._append(tx, prepared, lease, folded))

    def append_transaction(self, request: AppendRequest) -> Callable[[Transaction], AppendResult]:
        """``request``, checked now (its errors are ``append``'s), as the body
        of the write transaction that makes it: for a caller that runs the
        transaction on a backend itself (the async SQLite store's writer,
        which commits appends in groups)."""
        prepared, folded = self.prepared_append(request)
        lease = request.lease
        return lambda tx: self._append(tx, prepared, lease, folded)

    def prepared_append(self, request: AppendRequest) -> tuple[PreparedAppend, Folded | None]:
        """``request`` checked (its errors are ``append``'s; anything but an
        ``AppendRequest``, and a ``lease`` or ``folded`` of another type, is
        ``InvalidRequestError``), and the caller's fold when it counts (see
        ``Folded``)."""
        if not isinstance(request, AppendRequest):
            raise InvalidRequestError(f"an append takes an AppendRequest, got {request!r}")
        session_id, events, lease, folded = request.session_id, request.events, request.lease, request.folded
        prepared = prepare_append(session_id, request.expected_seq, events, request.idempotency_key)
        if lease is not None and (not isinstance(lease, Lease) or lease.session_id != session_id):
            raise InvalidRequestError(f"lease must be a Lease of session {session_id!r}, got {lease!r}")
        if folded is not None and not (
            isinstance(folded, Folded)
            and isinstance(folded.before, SessionState)
            and isinstance(folded.after, SessionState)
        ):
            raise InvalidRequestError(f"folded must be None or a Folded of two SessionStates, got {folded!r}")
        if folded is not None and prepared.events != tuple(events):
            folded = None  # the caller folded other values than the stored ones
        return prepared, folded

    def _append_decided(
        self, backend: OneStepBackend, p: PreparedAppend, lease: Lease | None, folded: Folded | None
    ) -> AppendResult | None:
        """The append decided on the memo's state and sent in one step (see
        the module docstring); ``None`` when the transaction must decide."""
        decision = self.decide_append(p, lease, folded)
        if decision is None:
            return None
        return self.decided_answer(decision, backend.append_decided(decision.append))

    def decide_append(self, p: PreparedAppend, lease: Lease | None, folded: Folded | None) -> Decision | None:
        """The append decided in the client, on the memo's state (or a new
        session's empty one), for a ``OneStepBackend`` to check and write in
        one step; ``None`` when the store holds no such state or the fold
        refuses the events (the transaction decides then)."""
        sid = p.session_id
        memo = self._memo.get(sid)
        if memo is not None and memo.state.last_seq == p.expected_seq:
            has_row, base_format, base_state, state = True, memo.fold_format, memo.fold_state, memo.state
        elif p.expected_seq == 0:
            memo = None
            has_row, base_format, base_state, state = False, "", "", SessionState()
        else:
            return None
        try:
            new_state = _folded(sid, state, p.events, folded)
        except AppendRejectedError:
            return None
        fold_format, fold_state, parts = snapshot_reusing(new_state, None if memo is None else memo.parts)
        projection = project(new_state) if memo is None else project_reusing(new_state, memo.state, memo.projection)
        row = SessionRow(projection, fold_format, fold_state)
        created = tuple(created_goal_ids(p.events))
        round_ = starts_a_round(p.events)
        decided = DecidedAppend(p, lease, has_row, base_format, base_state, round_, _rows(p), row, created)
        return Decision(decided, _Memo(fold_format, fold_state, new_state, parts, projection))

    def decided_answer(self, decision: Decision, view: SessionView | None) -> AppendResult | None:
        """The answer to a decided append, given what the one step answered
        (``None``: it was written; a view: it was not); ``None`` when the
        transaction must decide after all."""
        append = decision.append
        p, lease = append.prepared, append.lease
        sid = p.session_id
        if view is None:
            self._remember(sid, decision.memo)
            return _RESULT(sid, p.events[0].seq, p.events[-1].seq, False)
        answer = _answered(p, lease, view)
        if answer is not None:
            return answer
        if (view.has_row, view.fold_format, view.fold_state) == (append.has_row, append.base_format, append.base_state):
            _check_round(p, lease, view)
        return None

    def _append(self, tx: Transaction, p: PreparedAppend, lease: Lease | None, folded: Folded | None) -> AppendResult:
        sid = p.session_id
        created = created_goal_ids(p.events)
        view = tx.view(SessionRead(sid, p.key, [goal_id for goal_id, _ in created]))
        if p.key is not None or view.head != p.expected_seq or lease is not None:  # else nothing to answer
            answer = _answered(p, lease, view)
            if answer is not None:
                return answer
        memo = self._memo.get(sid)
        if not view.has_row:
            state = None
        elif memo is not None and memo.holds(view.fold_format, view.fold_state, view.head):
            state = memo.state
        else:
            memo = None
            state = self._decoded(sid, view.fold_format, view.fold_state, view.head)
        if state is None:
            memo = None
            state = fold_rows(SessionState(), decode_rows(tx.rows(sid)))
        if created:
            state = knowing_goal_ids(state, view.used)
        new_state = _folded(sid, state, p.events, folded)
        if view.lease is not None:  # no lease, nothing it could hold
            _check_round(p, lease, view)
        # Every check is behind us: from here on only writes.
        fold_format, fold_state, parts = snapshot_reusing(new_state, None if memo is None else memo.parts)
        projection = project(new_state) if memo is None else project_reusing(new_state, memo.state, memo.projection)
        self._remember(sid, _Memo(fold_format, fold_state, new_state, parts, projection))
        events = p.events
        first, last = events[0].seq, events[-1].seq
        key = p.key
        tx.write(
            _WRITE(
                (
                    sid, _rows(p), created, SessionRow(projection, fold_format, fold_state), view.has_row,
                    events[0].at, events[-1].at, key, None if key is None else KnownKey(p.request_hash, first, last),
                    None if lease is None else replace(lease, expires_at=view.now + lease.ttl_ms), None,
                )
            )
        )  # fmt: skip
        return _RESULT(sid, first, last, False)

    def _resume(self, sid: str, fold_format: str, fold_state: str, last_seq: int) -> SessionState | None:
        """``resume_state``, answered from the memo when the stored text is the
        one it holds (see the module docstring)."""
        memo = self._memo.get(sid)
        if memo is not None and memo.holds(fold_format, fold_state, last_seq):
            return memo.state
        return self._decoded(sid, fold_format, fold_state, last_seq)

    def _decoded(self, sid: str, fold_format: str, fold_state: str, last_seq: int) -> SessionState | None:
        """``resume_state``, remembered when the snapshot decodes."""
        state = resume_state(fold_format, fold_state, last_seq)
        if state is not None:
            self._remember(sid, _Memo(fold_format, fold_state, state, None, None))
        return state

    def _remember(self, sid: str, memo: _Memo) -> None:
        # Pairing a text with the state it encodes is true whether or not the
        # transaction that writes it commits, so the memo needs no rollback.
        # The encoded parts and the projection describe that state only, so
        # they are right for any later state that shares their objects. A
        # lookup reads the dict without the lock (one dict operation is
        # atomic); changes take it, so that the size bound holds.
        with self._memo_lock:
            memos = self._memo
            memos.pop(sid, None)
            if not memo.fold_format:
                return
            memos[sid] = memo
            if len(memos) > _MEMO_SIZE:
                del memos[next(iter(memos))]

    # ----------------------------------------------------------------------
    # Forks

    def fork(self, source_session: str, at: int, new_session: str) -> ForkProvenance:
        """A new session ``new_session`` whose log is the first ``at`` events
        of ``source_session``, with its provenance, in one write transaction
        (see ``adapters.store.base``). ``ForkSourceMissingError``,
        ``ForkSeqMissingError`` or ``SessionExistsError`` change nothing; a
        prefix that does not fold strictly is the positioned ``ReplayError``
        (the source log's fault)."""
        upto = check_fork_request(source_session, at, new_session)
        return self.backend.run("fork", True, lambda tx: self._fork(tx, source_session, upto, new_session))

    def _fork(self, tx: Transaction, source: str, at: int, new: str) -> ForkProvenance:
        view = tx.view(SessionRead(new))  # the new session's lock, and whether it exists
        if view.head:
            raise SessionExistsError(new, f"its log ends at seq {view.head}")
        if view.has_row:
            raise SessionExistsError(new, "it has a session row")
        # The source is only read (its rows up to a seq never change), so it
        # is not viewed, which would lock it: its head is the prefix's last
        # seq, or past ``at`` when the prefix does not end there. (Stored
        # seqs are 64-bit integers: a larger ``at`` reads as their largest.)
        bound = min(at, MAX_SEQ)
        rows = list(tx.rows(source, 0, bound))
        head = stored_int(rows[-1][0]) if rows else 0
        if head != at:
            head = max(head, _last_seq(tx.rows(source, bound)))
        if head == 0:
            raise ForkSourceMissingError(source)
        if at > head:
            raise ForkSeqMissingError(source, at, head)
        state = fold_rows(SessionState(), decode_rows(rows))
        if state.last_seq != at:  # a hand-edited log whose seqs skip ``at`` (its head is past it)
            why = f"its seqs run unbroken only to {state.last_seq} and go on after {at} (a hand-edited log)"
            raise ForkSeqMissingError(source, at, head, why)
        events = _events(rows)
        provenance = ForkProvenance(source, at, prefix_digest(events))
        # Every check is behind us: from here on only writes.
        fold_format, fold_state, parts = snapshot_reusing(state, None)
        projection = project(state)
        self._remember(new, _Memo(fold_format, fold_state, state, parts, projection))
        tx.write(
            SessionWrite(
                new,
                events=[(e.seq, e.kind, e.at, str(row[3])) for e, row in zip(events, rows, strict=True)],
                goal_ids=created_goal_ids(events),
                row=SessionRow(projection, fold_format, fold_state),
                first_at=events[0].at,
                last_at=events[-1].at,
                provenance=provenance,
            )
        )
        return provenance

    def provenance(self, session_id: str) -> ForkProvenance | None:
        """Where the session was forked from; ``None`` for a session that was
        not forked (or is unknown)."""
        read = SessionRead(session_id, provenance=True)
        return self._read("provenance", session_id, lambda tx, _: tx.view(read).provenance)

    def import_fork(
        self,
        session_id: str,
        events: Sequence[Event],
        provenance: ForkProvenance,
        idempotency_key: str | None = None,
    ) -> AppendResult:
        """``append(AppendRequest(session_id, 0, events, idempotency_key))`` that also keeps
        ``provenance`` with the new session, in the same transaction: a log
        forked elsewhere, imported. The provenance must describe the events
        (``ProvenanceMismatchError``); everything else is ``append``'s."""
        prepared = prepare_append(session_id, 0, events, idempotency_key)
        kept = check_provenance(session_id, prepared.events, provenance)

        def body(tx: Transaction) -> AppendResult:
            result = self._append(tx, prepared, None, None)
            if not result.replayed:
                tx.write(SessionWrite(session_id, provenance=kept))
            return result

        return self.backend.run("import", True, body)

    # ----------------------------------------------------------------------
    # Goal leases

    def acquire_lease(self, session_id: str, holder: str, ttl_ms: int) -> Lease:
        """The session's goal lease for ``holder`` until ``ttl_ms`` from now on
        the store's lease clock: a new grant (a larger token) when the lease is
        free or expired, an extension (the same token) when ``holder`` holds it
        live; ``LeaseHeldError`` while another holder's lease is live."""
        check_lease_request(session_id, holder, ttl_ms)

        def body(tx: Transaction) -> Lease:
            view = tx.view(SessionRead(session_id))
            current, now = view.lease, view.now
            if current is not None and _is_live(current, now):
                if current.holder != holder:
                    raise LeaseHeldError(session_id, current.holder, current.expires_at)
                granted = replace(current, expires_at=now + ttl_ms, ttl_ms=ttl_ms)
            else:
                token = 1 if current is None else current.token + 1
                granted = Lease(session_id, holder, token, now + ttl_ms, ttl_ms)
            tx.write(SessionWrite(session_id, lease=granted))
            return granted

        lease = self.backend.run("acquire_lease", True, body)
        _log.debug(
            "session %r: goal lease to %r, token %d, until %d", session_id, holder, lease.token, lease.expires_at
        )
        return lease

    def release_lease(self, lease: Lease) -> bool:
        """End ``lease`` now; False (and nothing changed) when it is no longer
        the session's lease (expired leases are released too)."""
        if not isinstance(lease, Lease):
            raise InvalidRequestError(f"expected a Lease, got {lease!r}")
        check_session_id(lease.session_id)

        def body(tx: Transaction) -> bool:
            current = tx.view(SessionRead(lease.session_id)).lease
            if current is None or current.holder != lease.holder or current.token != lease.token:
                return False
            tx.write(SessionWrite(lease.session_id, lease=replace(current, holder="", expires_at=0)))
            return True

        released = self.backend.run("release_lease", True, body)
        _log.debug(
            "session %r: goal lease of %r (token %d) %s", lease.session_id, lease.holder, lease.token,
            "released" if released else "was no longer the live one: nothing released",
        )  # fmt: skip
        return released

    def lease(self, session_id: str) -> Lease | None:
        """The session's live goal lease, or ``None``."""
        check_session_id(session_id)

        def body(tx: Transaction) -> Lease | None:
            view = tx.view(SessionRead(session_id))
            return view.lease if _is_live(view.lease, view.now) else None

        return self.backend.run("lease", False, body)

    # ----------------------------------------------------------------------
    # Following a session

    def follow(
        self, session_id: str, after_seq: int = 0, *, timeout: float | None = None
    ) -> Generator[Event, None, None]:
        """The session's events after ``after_seq``, then every event any
        process appends, as it is committed; the iteration ends once
        ``timeout`` seconds pass without a new event (never when ``None``)."""
        check_session_id(session_id)
        position = check_after(after_seq)
        return self._follow(session_id, position, check_timeout(timeout))

    def _follow(self, session_id: str, position: int, timeout: float | None) -> Generator[Event, None, None]:
        with self.backend.watch(session_id) as watch:  # watching before the first read: nothing slips by
            quiet = QuietTimer(timeout)
            while True:
                events = self.read(session_id, position)
                for event in events:
                    position = event.seq
                    yield event
                left = quiet.wait(bool(events))
                if left is not None and left <= 0:
                    return
                watch.wait(position, left)

    # ----------------------------------------------------------------------
    # Reads

    def _read(self, operation: str, session_id: str, body: Callable[[Transaction, str], T]) -> T:
        check_session_id(session_id)
        return self.backend.run(operation, False, lambda tx: body(tx, session_id))

    def head(self, session_id: str) -> int:
        """The last seq of the session's log (0 when empty or unknown)."""
        return self._read("head", session_id, lambda tx, sid: tx.view(SessionRead(sid)).head)

    def read(self, session_id: str, after: int = 0) -> tuple[Event, ...]:
        """The events with seq > ``after``, in order, as fresh values; a stored
        payload that is not a JSON object raises the positioned ``ReplayError``."""
        start = check_after(after)
        return self._read("read", session_id, lambda tx, sid: _events(tx.rows(sid, start)))

    def scan(self, session_id: str, after: int = 0, *, page: int = SCAN_PAGE) -> Iterator[Event]:
        """``read``, one page of ``page`` events per read transaction, as the
        caller consumes them: a reader that folds as it goes never holds the
        log. The log only grows, so the pages join into the log as it stood
        at the first page plus whatever was appended since. A stored payload
        that is not a JSON object raises the positioned ``ReplayError`` when
        its page is read."""
        start = check_after(after)
        check_session_id(session_id)
        if isinstance(page, bool) or not isinstance(page, int) or page < 1:
            raise InvalidRequestError(f"page must be a positive integer, got {page!r}")
        return self._scan(session_id, start, page)

    def _scan(self, session_id: str, position: int, page: int) -> Iterator[Event]:
        while True:
            events = self.backend.run("read", False, functools.partial(_page, session_id, position, page))
            yield from events
            if len(events) < page:
                return
            position = events[-1].seq

    def load(self, session_id: str, *, incremental: bool = False) -> SessionState:
        """The strict fold of the log (``ReplayError`` at the first bad event),
        or (``incremental``) the stored snapshot plus the fold of what follows."""
        return self._read("load", session_id, lambda tx, sid: self._load(tx, sid, incremental))

    def _load(self, tx: Transaction, sid: str, incremental: bool) -> SessionState:
        if incremental:
            stored = tx.view(SessionRead(sid, row=True)).row
            state = None if stored is None else self._resume(sid, *stored.snapshot())
            if state is not None:
                rows = iter(decode_rows(tx.rows(sid, state.last_seq)))
                first = next(rows, None)
                # Nothing after the snapshot: the state itself, so that an
                # append folded onto it (``Folded``) is not folded again.
                return state if first is None else fold_rows(state, itertools.chain((first,), rows))
        return fold_rows(SessionState(), decode_rows(tx.rows(sid)))

    def projection(self, session_id: str) -> Projection:
        """The stored session row (defaults for an unknown session); an empty
        summary column is rebuilt from the fold."""

        def body(tx: Transaction, sid: str) -> Projection:
            row = tx.view(SessionRead(sid, row=True)).row
            return Projection() if row is None else row.projection

        stored = self._read("projection", session_id, body)
        if stored.current_plan_json and not stored.current_plan_summary_json:
            return with_summary(stored, self.load(session_id, incremental=True))
        return stored

    def audit(self, session_id: str) -> AuditReport:
        """Fold the log strictly (``ReplayError`` on a bad log) and report every
        difference between it and the stored row and snapshot, from one
        consistent view."""

        def body(tx: Transaction, sid: str) -> AuditReport:
            view = tx.view(SessionRead(sid, row=True, provenance=True))
            state = fold_rows(SessionState(), decode_rows(tx.rows(sid)))
            row = view.row or SessionRow(Projection(), "", "")
            report = audit_state(sid, state, row.projection, row.fold_format, row.fold_state)
            provenance = view.provenance
            if provenance is None:
                return report
            problems = _provenance_problems(provenance, state.last_seq, lambda: tx.rows(sid, 0, provenance.seq))
            problems += _source_problems(provenance, tx.view(SessionRead(provenance.source)).head, tx)
            return replace(report, mismatches=report.mismatches + problems, provenance=provenance)

        return self._read("audit", session_id, body)

    def session_ids(self) -> tuple[str, ...]:
        """Every session the store knows, sorted by id."""
        return self.backend.run("session_ids", False, lambda tx: tx.session_ids())


def _provenance_problems(
    provenance: ForkProvenance, last_seq: int, rows: Callable[[], Iterable[StoredEvent]]
) -> tuple[str, ...]:
    """How a fork's provenance disagrees with its own log (folded up to
    ``last_seq``): a seq past the log, or a prefix that hashes otherwise."""
    if provenance.seq > last_seq:
        return (f"provenance: the fork's seq {provenance.seq} is past the log's last seq {last_seq}",)
    found = prefix_digest(_events(rows()))
    if found != provenance.prefix_sha256:
        return (
            f"provenance: the first {provenance.seq} events hash to {found}, "
            f"not to the recorded {provenance.prefix_sha256}",
        )
    return ()


#: The rule of an audit mismatch between a fork's provenance and its
#: source session in the same store.
SOURCE_MISMATCH = "provenance-source-mismatch"


def _source_problems(provenance: ForkProvenance, source_head: int, tx: Transaction) -> tuple[str, ...]:
    """How a fork's provenance disagrees with its source session when that
    session is in the same store (``source_head`` > 0): the source's first
    ``seq`` events must exist and hash to the recorded digest. A source the
    store does not hold (a fork imported from elsewhere) cannot be checked
    here and is no mismatch."""
    if source_head == 0 or provenance.source == "":
        return ()
    if provenance.seq > source_head:
        return (
            f"{SOURCE_MISMATCH}: the fork claims the first {provenance.seq} events of session "
            f"{provenance.source!r}, whose log here ends at seq {source_head}",
        )
    try:
        found = prefix_digest(_events(tx.rows(provenance.source, 0, provenance.seq)))
    except PlanfoldError as exc:  # the source's own log is bad: its audit says where
        return (
            f"{SOURCE_MISMATCH}: the first {provenance.seq} events of session {provenance.source!r} "
            f"here do not read ({exc.message})",
        )
    if found != provenance.prefix_sha256:
        return (
            f"{SOURCE_MISMATCH}: the first {provenance.seq} events of session {provenance.source!r} here hash to "
            f"{found}, not to the fork's recorded {provenance.prefix_sha256}",
        )
    return ()


def _answered(p: PreparedAppend, lease: Lease | None, view: SessionView) -> AppendResult | None:
    """The checks an append makes before its fold, on the view it read: the
    answer a known key already gave (``IdempotencyMismatchError`` for another
    request under it), ``ConflictError`` for a stale expected seq,
    ``LeaseLostError`` for a fenced append whose lease is gone; ``None`` when
    the append goes on."""
    sid = p.session_id
    if p.key is not None and view.known is not None:
        if view.known.request_hash != p.request_hash:
            raise IdempotencyMismatchError(sid, p.key)
        return AppendResult(sid, view.known.first_seq, view.known.last_seq, replayed=True)
    if view.head != p.expected_seq:
        raise ConflictError(sid, p.expected_seq, view.head)
    if lease is not None:
        _check_fence(lease, view.lease, view.now)
    return None


def _check_round(p: PreparedAppend, lease: Lease | None, view: SessionView) -> None:
    """The check after the fold: ``LeaseHeldError`` for an unfenced append that
    starts a goal round while another holder's lease is live."""
    live = view.lease
    if lease is None and _is_live(live, view.now) and starts_a_round(p.events):
        assert live is not None
        raise LeaseHeldError(p.session_id, live.holder, live.expires_at)


def _is_live(lease: Lease | None, now: int) -> bool:
    return lease is not None and bool(lease.holder) and lease.expires_at > now


def _check_fence(lease: Lease, current: Lease | None, now: int) -> None:
    """``LeaseLostError`` unless ``lease`` is the session's live lease."""
    if current is None or current.holder != lease.holder or current.token != lease.token:
        raise LeaseLostError(lease.session_id, lease.holder, lease.token, "it was released or taken over")
    if current.expires_at <= now:
        raise LeaseLostError(lease.session_id, lease.holder, lease.token, f"it expired at {current.expires_at}")


def _rows(p: PreparedAppend) -> tuple[tuple[int, str, int, str], ...]:
    """The event rows an append writes: seq, kind, at and payload text."""
    if len(p.events) == 1:
        event = p.events[0]
        return ((event.seq, event.kind, event.at, p.payloads[0]),)
    return tuple((e.seq, e.kind, e.at, text) for e, text in zip(p.events, p.payloads, strict=True))


def _page(session_id: str, after: int, page: int, tx: Transaction) -> tuple[Event, ...]:
    """At most ``page`` events of the session after seq ``after``."""
    return _events(itertools.islice(tx.rows(session_id, after), page))


def _last_seq(rows: Iterable[StoredEvent]) -> int:
    """The seq of the last of ``rows`` (read whole), 0 for none."""
    last = 0
    for row in rows:
        last = stored_int(row[0])
    return last


def _events(rows: Iterable[StoredEvent]) -> tuple[Event, ...]:
    return tuple(Event(seq, kind, at, decode_payload(payload, seq)) for seq, kind, at, payload in rows)
