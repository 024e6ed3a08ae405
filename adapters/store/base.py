"""The storage port: the ``Store`` protocol, its typed errors, and the rules
every store shares.

Theory of operation
-------------------
A store keeps, per session, an append-only log of events (the truth) and a
projection of its fold (the session row, plus a snapshot of the fold state
for fast opens). Every store implements the same protocol with the same
semantics and the same errors; one contract suite runs against all of them.

``append(request)`` takes one ``AppendRequest`` (``session_id``,
``expected_seq``, ``events``, and optionally ``idempotency_key``, the
caller's ``folded`` fold and a goal ``lease``) and is a compare-and-set. In
one atomic step the store

1. answers a retried request whose ``idempotency_key`` already landed with the
   original result (``replayed=True``) and writes nothing; the same key with
   different content is ``IdempotencyMismatchError``;
2. raises the kernel's ``ConflictError`` unless the log is at
   ``expected_seq``;
3. folds the new events strictly onto the stored state; a bad event is
   ``AppendRejectedError`` (the caller's fault) and a bad stored log is the
   positioned ``ReplayError`` (the log's fault);
4. writes the events, the projection and the key together.

Nothing is ever partly written. Failures of the storage engine surface as
``StorageError`` (``store-busy`` when the write lock could not be had in
time); ``outcome`` says whether the append certainly did not happen
(``not-applied``) or might have (``unknown``: retry with the same key). No
driver exception ever reaches a caller.

``load`` folds the whole log strictly, or (``incremental=True``) resumes from
the stored snapshot and folds only what follows it. ``audit`` folds the log and
reports every way the stored projection or snapshot differs from it.

``fork(source, at, new_session)`` makes, in one write transaction, a new
session whose log is the first ``at`` events of ``source`` (``1 <= at <=
head``; a fork at 0 would be an empty session, which needs no fork): its
events are the source's, byte for byte, its projection and snapshot are the
strict fold of that prefix, and its ``ForkProvenance`` (the source, ``at``,
the hash of the prefix) is kept with it and read by ``provenance``. The
source is not changed, and from then on the two logs go on independently.
A source without events (``fork-source-missing``), a source without seq
``at`` (``fork-seq-missing``) and a new session that already exists
(``session-exists``) are refused, and nothing is written. ``import_fork``
lands a log forked elsewhere (an export with its fork record) in an empty
session, with its provenance, in one append. ``audit`` checks a fork's
provenance against its own first ``seq`` events.

``SharedStore`` adds what processes that share a store need:

- ``follow(session_id, after_seq)`` yields the session's events after
  ``after_seq`` as any process appends them (it ends after ``timeout``
  seconds without a new event, or never when ``timeout`` is ``None``).
- Goal leases. At most one process may drive a session's goal rounds: it
  holds the session's lease (``acquire_lease``: a holder name and an expiry
  on the store's lease clock; ``LeaseHeldError`` while another holder's lease
  is live) and passes it with every append of its rounds (the request's
  ``lease``). Such a *fenced* append checks the lease in the same
  transaction as the write: a lease that expired, was released or was taken
  over is ``LeaseLostError`` and nothing is written; a live one is extended
  by its ``ttl_ms``. An append without a lease that starts a goal round (a
  ``user/message`` attributed to a goal) is ``LeaseHeldError`` while another
  holder's lease is live. Every grant to a new holder, and every grant after
  an expiry, gets a larger ``token`` (the fencing token), so an old lease can
  never pass for a new one. ``release_lease`` ends a lease early.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass, fields
from typing import Literal, NamedTuple, Protocol, runtime_checkable

import msgspec

from ...kernel.errors import ReplayError
from ...kernel.log import Event
from ...kernel.session import SessionState, fold_more
from ..codec import encode_jsonl, read_session_jsonl, stored_events
from ..errors import AdapterError
from ..provenance import ForkProvenance, encode_fork_record, prefix_digest, split_fork_record
from .projection import (
    SESSION_SNAPSHOT,
    Projection,
    project,
    resume_state,
    snapshot_of,
    snapshot_reusing,
    with_summary,
)
from .snapshot import SnapshotError

__all__ = [
    "MAX_SEQ",
    "AppendRejectedError",
    "AppendRequest",
    "AppendResult",
    "AuditReport",
    "Folded",
    "ForkProvenance",
    "ForkSeqMissingError",
    "ForkSourceMissingError",
    "ForwardingStore",
    "IdempotencyMismatchError",
    "InvalidRequestError",
    "Lease",
    "LeaseHeldError",
    "LeaseLostError",
    "Outcome",
    "PreparedAppend",
    "ProvenanceMismatchError",
    "SchemaMismatchError",
    "SchemaTooNewError",
    "SessionError",
    "SessionExistsError",
    "SharedStore",
    "StorageError",
    "Store",
    "StoreBusyError",
    "StoreClosedError",
    "StoreError",
    "StoreUnavailableError",
    "StoreUnreachableError",
    "audit_state",
    "check_after",
    "check_fork_request",
    "check_lease_request",
    "check_provenance",
    "check_session_id",
    "export_session",
    "fold_new_events",
    "import_session",
    "prepare_append",
    "resume_state",
    "snapshot_of",
    "snapshot_reusing",
    "with_summary",
]

Outcome = Literal["not-applied", "unknown"]


# --------------------------------------------------------------------------
# Errors


class StoreError(AdapterError):
    """Root of the storage adapters' refusals."""

    code = "store-error"


class StoreClosedError(StoreError):
    """The store was used after ``close()`` (the caller's fault)."""

    code = "store-closed"

    def __init__(self) -> None:
        super().__init__("the store is closed")


class InvalidRequestError(StoreError):
    """An argument is not what the store accepts (the caller's fault)."""

    code = "invalid-request"


class SchemaTooNewError(StoreError):
    """The database was written by a newer version of planfold; it is left untouched."""

    code = "schema-too-new"

    def __init__(self, found: int, supported: int) -> None:
        super().__init__(
            f"database schema version {found} is newer than this code supports ({supported}); "
            "upgrade planfold to open it"
        )
        self.found = found
        self.supported = supported


class SchemaMismatchError(StoreError):
    """The database does not have the tables and columns its version promises."""

    code = "schema-mismatch"


class SessionError(StoreError):
    """Base of the store's refusals that concern one session: the message
    starts with the session's id, and ``session_id`` keeps it."""

    def __init__(self, session_id: str, problem: str) -> None:
        super().__init__(f"session {session_id!r}: {problem}")
        self.session_id = session_id


class IdempotencyMismatchError(SessionError):
    """An idempotency key was reused for a different append (the caller's fault)."""

    code = "idempotency-mismatch"

    def __init__(self, session_id: str, key: str) -> None:
        super().__init__(session_id, f"idempotency key {key!r} was already used for a different append")
        self.key = key


class AppendRejectedError(SessionError):
    """The events offered do not continue the log validly (the caller's fault);
    nothing was written. ``position``/``rule``/``detail`` are the fold's."""

    code = "append-rejected"

    def __init__(self, session_id: str, cause: ReplayError) -> None:
        super().__init__(session_id, f"append rejected at seq {cause.position} [{cause.rule}]: {cause.detail}")
        self.position = cause.position
        self.rule = cause.rule
        self.detail = cause.detail


class StorageError(StoreError):
    """The storage engine failed (disk, I/O, corruption, lock timeout).

    ``outcome`` is ``not-applied`` when nothing was written and ``unknown``
    when a commit was under way (retry with the same idempotency key).
    """

    code = "storage-failure"

    def __init__(
        self, operation: str, detail: str, *, outcome: Outcome = "not-applied", code: str | None = None
    ) -> None:
        super().__init__(f"storage failure during {operation} ({outcome}): {detail}", code=code)
        self.operation = operation
        self.detail = detail
        self.outcome = outcome


class StoreBusyError(StorageError):
    """The write lock was not granted within the busy timeout."""

    code = "store-busy"


class StoreUnavailableError(StorageError):
    """The storage server could not be reached, or went away during the call."""

    code = "store-unavailable"


class StoreUnreachableError(StoreUnavailableError):
    """Opening the store found no server to talk to at ``where`` (a URL shown
    without its password): a wrong host, port, database or password, or a
    server down. ``detail`` is the driver's own message; nothing was opened."""

    code = "store-unreachable"

    def __init__(self, where: str, detail: str) -> None:
        super().__init__("open", f"cannot connect to {where}: {detail}")
        self.where = where


class LeaseHeldError(SessionError):
    """Another holder's lease on the session is live: this process may not
    drive its goal rounds now (nothing was written)."""

    code = "lease-held"

    def __init__(self, session_id: str, holder: str, expires_at: int) -> None:
        super().__init__(
            session_id, f"the goal lease is held by {holder!r} until {expires_at} (on the store's lease clock)"
        )
        self.holder = holder
        self.expires_at = expires_at


class LeaseLostError(SessionError):
    """A fenced append or a release named a lease that is no longer the
    session's live lease (it expired, was released or was taken over);
    nothing was written."""

    code = "lease-lost"

    def __init__(self, session_id: str, holder: str, token: int, why: str) -> None:
        super().__init__(session_id, f"the lease of {holder!r} (token {token}) is lost: {why}")
        self.holder = holder
        self.token = token
        self.why = why


class SessionExistsError(SessionError):
    """A fork or an import named a new session that already exists (it has
    events or a session row): nothing was written (the caller's fault)."""

    code = "session-exists"

    def __init__(self, session_id: str, what: str) -> None:
        super().__init__(session_id, f"already exists ({what}); a fork makes a new session")


class ForkSourceMissingError(SessionError):
    """The session to fork from has no events (the caller's fault; nothing was written)."""

    code = "fork-source-missing"

    def __init__(self, session_id: str) -> None:
        super().__init__(session_id, "has no events to fork")


class ForkSeqMissingError(SessionError):
    """The session to fork from has no seq ``at``: a fork holds the first
    ``at`` events, for ``at`` from 1 to the source's head (the caller's
    fault; nothing was written)."""

    code = "fork-seq-missing"

    def __init__(self, session_id: str, at: int, head: int, why: str | None = None) -> None:
        if at < 1:
            why = (
                "a fork holds the first N events, N at least 1 "
                "(a fork at 0 would be an empty session: start a new session instead)"
            )
        super().__init__(session_id, f"has no seq {at}: {why or f'its log ends at seq {head}'}")
        self.at = at
        self.head = head


class ProvenanceMismatchError(SessionError):
    """A fork's provenance does not describe the events it came with: its
    seq is past them, or their first ``seq`` events do not hash to its
    ``prefix_sha256`` (the caller's fault; nothing was written)."""

    code = "provenance-mismatch"


# --------------------------------------------------------------------------
# Values


@dataclass(frozen=True, slots=True)
class AppendResult:
    """Where an append landed; ``replayed`` when it was an idempotent retry."""

    session_id: str
    first_seq: int
    last_seq: int
    replayed: bool = False


@dataclass(frozen=True, slots=True)
class AuditReport:
    """The result of comparing a stored projection with the fold of the log.

    ``snapshot`` is ``current`` (checked), ``stale`` (another format; never
    used) or ``absent``.
    """

    session_id: str
    last_seq: int
    mismatches: tuple[str, ...]
    snapshot: Literal["current", "stale", "absent"]
    #: Where the session was forked from (``None`` for a session that was not forked).
    provenance: ForkProvenance | None = None

    @property
    def ok(self) -> bool:
        return not self.mismatches


@dataclass(frozen=True, slots=True)
class Lease:
    """The right to drive a session's goal rounds until ``expires_at`` (on
    the store's lease clock, in milliseconds). ``token`` is the fencing
    token; a fenced append extends the lease by ``ttl_ms``."""

    session_id: str
    holder: str
    token: int
    expires_at: int
    ttl_ms: int


class Folded(NamedTuple):
    """A caller's strict fold of the events it appends: ``after`` is
    ``fold_more(before, events)``, computed by the caller (``SessionLog``,
    which folds every append before it hands it over).

    A ``LogStore`` takes ``after`` instead of folding the same events again
    only when ``before`` is the very state object it would fold onto (its
    memo of the session, which its loads hand out and its appends keep) or,
    for a new session, an empty state; when the events are equal to their
    stored form; and when ``after`` ends with the last of them. Otherwise it
    folds them itself as always. So the fold an append is checked by is
    still a strict fold of exactly the stored events onto the stored state,
    done once. ``after`` is trusted to be that fold: hand a store only a
    fold ``kernel.session.fold_more`` made."""

    before: SessionState
    after: SessionState


@dataclass(frozen=True, slots=True)
class AppendRequest:
    """One append, as ``Store.append`` takes it: ``events`` to land after
    seq ``expected_seq`` of ``session_id`` (see the module docstring).

    ``idempotency_key`` makes a retry safe; ``folded`` is the caller's strict
    fold of the events (see ``Folded``; a store that cannot use it ignores
    it); ``lease`` fences the append with a goal lease (``SharedStore``). A
    wrapper hands the request on whole, so it keeps working when a field is
    added here; it makes a changed one with ``dataclasses.replace``."""

    session_id: str
    expected_seq: int
    events: Sequence[Event]
    idempotency_key: str | None = None
    folded: Folded | None = None
    lease: Lease | None = None


class Store(Protocol):
    """What every session store provides (see the module docstring)."""

    def append(self, request: AppendRequest) -> AppendResult: ...

    def head(self, session_id: str) -> int: ...

    def read(self, session_id: str, after: int = 0) -> tuple[Event, ...]: ...

    def load(self, session_id: str, *, incremental: bool = False) -> SessionState: ...

    def projection(self, session_id: str) -> Projection: ...

    def audit(self, session_id: str) -> AuditReport: ...

    def session_ids(self) -> tuple[str, ...]: ...

    def fork(self, source_session: str, at: int, new_session: str) -> ForkProvenance: ...

    def provenance(self, session_id: str) -> ForkProvenance | None: ...

    def import_fork(
        self, session_id: str, events: Sequence[Event], provenance: ForkProvenance, idempotency_key: str | None = None
    ) -> AppendResult: ...

    def close(self) -> None: ...


class ForwardingStore:
    """A ``Store`` that hands every call to ``inner``: a wrapper subclasses it
    and overrides only what it changes (a unit of work that holds appends, a
    lease passed with every append). ``append`` hands the request on whole."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner

    def append(self, request: AppendRequest) -> AppendResult:
        return self.inner.append(request)

    def head(self, session_id: str) -> int:
        return self.inner.head(session_id)

    def read(self, session_id: str, after: int = 0) -> tuple[Event, ...]:
        return self.inner.read(session_id, after)

    def load(self, session_id: str, *, incremental: bool = False) -> SessionState:
        return self.inner.load(session_id, incremental=incremental)

    def projection(self, session_id: str) -> Projection:
        return self.inner.projection(session_id)

    def audit(self, session_id: str) -> AuditReport:
        return self.inner.audit(session_id)

    def session_ids(self) -> tuple[str, ...]:
        return self.inner.session_ids()

    def fork(self, source_session: str, at: int, new_session: str) -> ForkProvenance:
        return self.inner.fork(source_session, at, new_session)

    def provenance(self, session_id: str) -> ForkProvenance | None:
        return self.inner.provenance(session_id)

    def import_fork(
        self, session_id: str, events: Sequence[Event], provenance: ForkProvenance, idempotency_key: str | None = None
    ) -> AppendResult:
        return self.inner.import_fork(session_id, events, provenance, idempotency_key)

    def close(self) -> None:
        self.inner.close()


@runtime_checkable
class SharedStore(Store, Protocol):
    """A store that several processes share: following a session, goal
    leases and fenced appends (see the module docstring): its ``append``
    honours the request's ``lease``."""

    def follow(
        self, session_id: str, after_seq: int = 0, *, timeout: float | None = None
    ) -> Generator[Event, None, None]: ...

    def acquire_lease(self, session_id: str, holder: str, ttl_ms: int) -> Lease: ...

    def release_lease(self, lease: Lease) -> bool: ...

    def lease(self, session_id: str) -> Lease | None: ...


# --------------------------------------------------------------------------
# Shared rules


class PreparedAppend(NamedTuple):
    """A validated append request: canonical events, their stored payloads and,
    when it has an idempotency key, the hash that identifies the request
    (``""`` without a key: nothing would ever compare it). A named tuple:
    one is made on every append."""

    session_id: str
    expected_seq: int
    events: tuple[Event, ...]
    payloads: tuple[str, ...]
    key: str | None
    request_hash: str


#: The largest seq or position a store keeps (a signed 64-bit integer).
MAX_SEQ = 2**63 - 1
#: The longest lease a store grants: a day, in milliseconds.
MAX_LEASE_MS = 86_400_000


def stored_int(value: object) -> int:
    """An integer a database handed back; -1 for anything else (only ever
    in a hand-edited database: it never matches a fold, so an audit reports
    it, and no reader crashes on it)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


def _text(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidRequestError(f"{what} must be a non-empty string")
    try:
        if not value.isascii():  # ASCII always encodes
            value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidRequestError(f"{what} is not valid Unicode text (it holds a lone surrogate)") from exc
    if "\x00" in value:
        raise InvalidRequestError(f"{what} must not contain NUL (no database keeps it in text)")
    return value


def check_session_id(session_id: object) -> str:
    """``session_id`` if it is non-empty, storable text; ``InvalidRequestError`` otherwise."""
    return _text(session_id, "a session id")


def check_after(after: object) -> int:
    """A ``read`` position: an integer, clamped to ``0..MAX_SEQ``."""
    if isinstance(after, bool) or not isinstance(after, int):
        raise InvalidRequestError(f"after must be an integer, got {after!r}")
    return min(max(after, 0), MAX_SEQ)


def check_timeout(timeout: object) -> float | None:
    """A ``follow`` timeout: ``None`` (follow forever) or a finite, non-negative number of seconds."""
    if timeout is None:
        return None
    if not isinstance(timeout, bool) and isinstance(timeout, int | float):
        try:
            seconds = float(timeout)
        except OverflowError:  # an integer past every float
            seconds = math.inf
        if 0 <= seconds < math.inf:  # not NaN either
            return seconds
    raise InvalidRequestError(f"timeout must be a finite, non-negative number of seconds or None, got {timeout!r}")


#: The longest single wait of a ``follow``: a day, within every primitive a
#: store waits on (``threading.TIMEOUT_MAX``; a selector's milliseconds in a
#: C int); a longer quiet time is waited for in turns.
MAX_WAIT = min(86_400.0, threading.TIMEOUT_MAX)


class QuietTimer:
    """How long a ``follow`` waits between reads, sync or async: forever
    without a timeout; otherwise until ``timeout`` seconds pass with no new
    event (each read that brought events starts the quiet time again)."""

    def __init__(self, timeout: float | None) -> None:
        self.timeout = timeout
        self.deadline = None if timeout is None else time.monotonic() + timeout

    def wait(self, got_events: bool) -> float | None:
        """The seconds to wait for more after a read, at most ``MAX_WAIT``
        (``None``: with no end; ``0.0`` or less: the follow is over)."""
        if self.deadline is None or self.timeout is None:
            return None
        now = time.monotonic()
        if got_events:
            self.deadline = now + self.timeout
        return min(self.deadline - now, MAX_WAIT)


def check_lease_request(session_id: object, holder: object, ttl_ms: object) -> None:
    """``InvalidRequestError`` unless the session id and holder are storable
    text and ``ttl_ms`` is a whole number of milliseconds in ``1..MAX_LEASE_MS``."""
    check_session_id(session_id)
    _text(holder, "a lease holder")
    if isinstance(ttl_ms, bool) or not isinstance(ttl_ms, int) or not 1 <= ttl_ms <= MAX_LEASE_MS:
        raise InvalidRequestError(f"ttl_ms must be an integer in 1..{MAX_LEASE_MS}, got {ttl_ms!r}")


def check_fork_request(source_session: object, at: object, new_session: object) -> int:
    """``at`` once both session ids are storable text and ``at`` is an
    integer; ``InvalidRequestError`` otherwise. A fork at seq 0 or below is
    ``ForkSeqMissingError`` (no log has such a seq)."""
    source = check_session_id(source_session)
    check_session_id(new_session)
    if isinstance(at, bool) or not isinstance(at, int):
        raise InvalidRequestError(f"a fork's seq must be an integer, got {at!r}")
    if at < 1:
        raise ForkSeqMissingError(source, at, 0)
    return at


def check_provenance(session_id: str, events: Sequence[Event], provenance: object) -> ForkProvenance:
    """``provenance`` when it is a ``ForkProvenance`` that describes
    ``events`` (canonical events, as ``prepare_append`` makes them): its seq
    is within them and their first ``seq`` hash to its ``prefix_sha256``;
    ``InvalidRequestError`` or ``ProvenanceMismatchError`` otherwise."""
    if not isinstance(provenance, ForkProvenance):
        raise InvalidRequestError(f"expected a ForkProvenance, got {provenance!r}")
    check_session_id(provenance.source)
    seq = provenance.seq
    if isinstance(seq, bool) or not isinstance(seq, int) or not 1 <= seq <= len(events):
        raise ProvenanceMismatchError(
            session_id, f"the fork's seq {seq!r} is not within the {len(events)} events imported with it"
        )
    found = prefix_digest(events[:seq])
    if found != provenance.prefix_sha256:
        raise ProvenanceMismatchError(
            session_id,
            f"the first {seq} events hash to {found}, not to the fork's prefix_sha256 {provenance.prefix_sha256!r}",
        )
    return provenance


def prepare_append(
    session_id: str, expected_seq: int, events: Sequence[Event], idempotency_key: str | None
) -> PreparedAppend:
    """Validate an append request; ``InvalidRequestError`` or ``CodecError`` otherwise."""
    check_session_id(session_id)
    if isinstance(expected_seq, bool) or not isinstance(expected_seq, int) or not 0 <= expected_seq <= MAX_SEQ:
        raise InvalidRequestError(f"expected_seq must be an integer in 0..{MAX_SEQ}, got {expected_seq!r}")
    if idempotency_key is not None:
        _text(idempotency_key, "an idempotency key")
    listed = type(events) is list or type(events) is tuple  # the usual case, without the ABC check
    if (not listed and (isinstance(events, str | bytes) or not isinstance(events, Sequence))) or not events:
        raise InvalidRequestError("an append needs a non-empty sequence of events")
    canonical, payloads = stored_events(events)
    request_hash = "" if idempotency_key is None else _request_hash(expected_seq, canonical)
    return PreparedAppend(session_id, expected_seq, canonical, payloads, idempotency_key, request_hash)


def _request_hash(expected_seq: int, events: Sequence[Event]) -> str:
    """What identifies an append request for its idempotency key: the expected
    seq and every event, payload keys sorted (so key order does not matter)."""
    digest = hashlib.sha256(str(expected_seq).encode())
    for event in events:
        digest.update(b"\n" + msgspec.json.encode([event.seq, event.kind, event.at, event.payload], order="sorted"))
    return digest.hexdigest()


def fold_new_events(session_id: str, state: SessionState, events: Sequence[Event]) -> SessionState:
    """Fold offered events strictly; a bad one is ``AppendRejectedError``."""
    try:
        return fold_more(state, events)
    except ReplayError as exc:
        raise AppendRejectedError(session_id, exc) from exc


def audit_state(
    session_id: str, state: SessionState, stored: Projection, snapshot_format: str, snapshot: str
) -> AuditReport:
    """Compare a stored row and snapshot with ``state``, the fold of the log."""
    expected = project(state)
    mismatches = []
    for f in fields(Projection):
        have, want = getattr(stored, f.name), getattr(expected, f.name)
        if f.name == "current_plan_summary_json" and have == "":
            continue  # rebuilt on read
        if have != want:
            mismatches.append(f"{f.name}: stored {have!r}, fold gives {want!r}")
    status: Literal["current", "stale", "absent"] = "absent"
    if snapshot:
        codec = SESSION_SNAPSHOT
        if codec is None or snapshot_format != codec.format:
            status = "stale"
        else:
            status = "current"
            try:
                if codec.decode(snapshot) != state:
                    mismatches.append("snapshot: decodes to a state other than the fold")
            except SnapshotError as exc:
                mismatches.append(f"snapshot: {exc.message}")
    return AuditReport(session_id, state.last_seq, tuple(mismatches), status)


def export_session(store: Store, session_id: str) -> bytes:
    """The whole log of a session as JSON Lines; a forked session's export
    ends with its fork record (``adapters.provenance``)."""
    data = encode_jsonl(store.read(session_id))
    provenance = store.provenance(session_id)
    return data if provenance is None else data + encode_fork_record(provenance) + b"\n"


def import_session(
    store: Store, session_id: str, data: bytes | str, *, idempotency_key: str | None = None
) -> AppendResult | None:
    """Import a JSON Lines log into an empty session in one append.

    The text is decoded and folded strictly first (``CodecError`` with the
    line, or the positioned ``ReplayError``); a non-empty target session is a
    ``ConflictError``. A last line that is a fork record
    (``adapters.provenance``) is kept as the session's provenance, which
    must describe the events (``ProvenanceMismatchError``). The default
    idempotency key is derived from the content, so a retried import lands
    once. ``None`` when there is nothing to import.
    """
    body, provenance = split_fork_record(data)
    events = read_session_jsonl(body)
    if not events and provenance is None:
        return None
    encoded = encode_jsonl(events)
    if provenance is None:
        key = idempotency_key or "import:" + hashlib.sha256(encoded).hexdigest()
        return store.append(AppendRequest(session_id, 0, events, key))
    record = encode_fork_record(provenance)
    key = idempotency_key or "import:" + hashlib.sha256(encoded + record + b"\n").hexdigest()
    return store.import_fork(session_id, events, provenance, key)
