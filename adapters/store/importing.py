"""An import of a long log into an empty session: one transaction, written
in bounded batches.

Theory of operation
-------------------
``import_session`` (``adapters.store.base``) hands the whole log to one
``append``, which holds every event, its canonical form and its payload text
at once: memory that grows with the log. ``import_stream`` takes the events
as an iterable instead and writes them in batches of ``batch`` events inside
one write transaction of the store's backend (``Backend.run``), so it holds
one batch at a time and an import is still all or nothing: every check is
made as the events pass, and any refusal raises out of the transaction,
which rolls back whatever batches it had written.

It makes the checks ``append`` makes of an append at seq 0, in the same
order: under the session's lock (``Transaction.view``) a known
idempotency key answers with where that import landed (``replayed``), and a
session that already holds events is a ``ConflictError``; each batch is
made canonical (``codec.stored_events``: the ``CodecError`` of a value a
store cannot keep) and folded strictly onto the state the batches before it
left (``AppendRejectedError`` at the first bad event); then its rows and the
goal ids its events create are written. After the last batch: no events at
all is an ``InvalidRequestError``; a fork's provenance must describe the
events (its seq within them, the first ``seq`` of them hashing to its
``prefix_sha256``: ``ProvenanceMismatchError``, as ``check_provenance``);
the session row (projection and snapshot of the final state), the key with
the hash ``append`` would have recorded for the same request, and the
provenance are written, and the transaction commits.

``fold`` is the strict fold of one event (the kernel's
``apply_session_event`` by default); a caller whose logs create many goals
passes one that keeps their ids off the states (``adapters.store.spill``), so
that nothing the import holds grows with the log. A state folded so is the
same state as far as the snapshot and the projection go: the ids are not
part of either (the backend's index holds them).
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Iterable

import msgspec

from ...kernel.errors import ConflictError, ReplayError
from ...kernel.log import Event
from ...kernel.session import SessionState, apply_session_event
from ..codec import encode_event, stored_events
from ..provenance import ForkProvenance
from .base import (
    AppendRejectedError,
    AppendResult,
    InvalidRequestError,
    ProvenanceMismatchError,
    check_session_id,
)
from .engine import KnownKey, LogStore, SessionRead, SessionRow, SessionWrite, Transaction, created_goal_ids
from .projection import project, snapshot_reusing

__all__ = ["IMPORT_BATCH", "check_prefix", "import_stream"]

#: Events written per batch of an import.
IMPORT_BATCH = 1_000


def import_stream(
    store: LogStore,
    session_id: str,
    events: Iterable[Event],
    *,
    provenance: ForkProvenance | None = None,
    idempotency_key: str | None = None,
    fold: Callable[[SessionState, Event], SessionState] = apply_session_event,
    batch: int = IMPORT_BATCH,
    progress: Callable[[int], None] | None = None,
) -> AppendResult:
    """Import ``events`` into the empty session ``session_id`` of ``store`` in
    one transaction, ``batch`` events at a time (see the module docstring);
    ``progress`` is told how many events are written after each batch."""
    check_session_id(session_id)
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise InvalidRequestError(f"batch must be a positive integer, got {batch!r}")
    if provenance is not None:
        if not isinstance(provenance, ForkProvenance):
            raise InvalidRequestError(f"expected a ForkProvenance, got {provenance!r}")
        check_session_id(provenance.source)

    def body(tx: Transaction) -> AppendResult:
        view = tx.view(SessionRead(session_id, idempotency_key))
        if idempotency_key is not None and view.known is not None:
            return AppendResult(session_id, view.known.first_seq, view.known.last_seq, replayed=True)
        if view.head != 0:
            raise ConflictError(session_id, 0, view.head)
        state = SessionState()
        request = hashlib.sha256(b"0")  # what ``append`` records for an append at seq 0 under a key
        prefix = hashlib.sha256()  # the fork's prefix, up to its seq
        written = 0
        first_at = last_at = 0
        iterator = iter(events)
        while chunk := tuple(itertools.islice(iterator, batch)):
            canonical, payloads = stored_events(chunk)
            for event in canonical:
                try:
                    state = fold(state, event)
                except ReplayError as exc:
                    raise AppendRejectedError(session_id, exc) from exc
                if idempotency_key is not None:
                    request.update(
                        b"\n" + msgspec.json.encode([event.seq, event.kind, event.at, event.payload], order="sorted")
                    )
                if provenance is not None and event.seq <= provenance.seq:
                    prefix.update(encode_event(event) + b"\n")
            rows = [(e.seq, e.kind, e.at, text) for e, text in zip(canonical, payloads, strict=True)]
            tx.write(SessionWrite(session_id, events=rows, goal_ids=created_goal_ids(canonical)))
            if not written:
                first_at = canonical[0].at
            written += len(canonical)
            last_at = canonical[-1].at
            if progress is not None:
                progress(written)
        if not written:
            raise InvalidRequestError("an import needs a non-empty sequence of events")
        if provenance is not None:
            check_prefix(session_id, provenance, written, prefix.hexdigest())
        fold_format, fold_state, _ = snapshot_reusing(state, None)
        row = SessionRow(project(state), fold_format, fold_state)
        known = None if idempotency_key is None else KnownKey(request.hexdigest(), 1, written)
        tx.write(SessionWrite(
            session_id, row=row, exists=view.has_row, first_at=first_at, last_at=last_at, key=idempotency_key,
            known=known, provenance=provenance,
        ))  # fmt: skip
        return AppendResult(session_id, 1, written, replayed=False)

    return store.backend.run("import", True, body)


def check_prefix(session_id: str, provenance: ForkProvenance, count: int, found: str) -> None:
    """``ProvenanceMismatchError`` unless the fork's seq is within the
    ``count`` events imported and their prefix hashed to ``found``."""
    seq = provenance.seq
    if isinstance(seq, bool) or not isinstance(seq, int) or not 1 <= seq <= count:
        raise ProvenanceMismatchError(
            session_id, f"the fork's seq {seq!r} is not within the {count} events imported with it"
        )
    if found != provenance.prefix_sha256:
        raise ProvenanceMismatchError(
            session_id,
            f"the first {seq} events hash to {found}, not to the fork's prefix_sha256 {provenance.prefix_sha256!r}",
        )
