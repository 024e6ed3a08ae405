"""``import_stream``: a log imported into an empty session in bounded
batches inside one transaction lands exactly as one append of it would, and
any refusal, in any batch, writes nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from planfold.adapters.provenance import ForkProvenance, prefix_digest
from planfold.adapters.store.base import (
    AppendRejectedError,
    AppendRequest,
    InvalidRequestError,
    ProvenanceMismatchError,
)
from planfold.adapters.store.engine import LogStore
from planfold.adapters.store.importing import import_stream
from planfold.adapters.store.memory import MemoryStore
from planfold.kernel.errors import ConflictError
from planfold.kernel.log import Event
from planfold.kernel.session import fold_session
from tests.adapters.store.test_spill import goals_then

#: Twelve goals created and completed: 24 events, so batches of 5 leave a short last one.
LOG = goals_then(12)


@pytest.fixture
def store(any_store: LogStore) -> LogStore:
    """Each kind of store (this package's ``any_store``)."""
    return any_store


def _nothing_written(store: LogStore, session: str) -> None:
    assert store.head(session) == 0
    assert session not in store.session_ids()
    assert store.provenance(session) is None


def test_a_log_imported_in_batches_lands_as_one_append_of_it_would(store: LogStore) -> None:
    told: list[int] = []
    result = import_stream(store, "s", iter(LOG), batch=5, idempotency_key="k", progress=told.append)
    assert (result.first_seq, result.last_seq, result.replayed) == (1, 24, False)
    assert told == [5, 10, 15, 20, 24]
    reference = MemoryStore()
    reference.append(AppendRequest("s", 0, LOG))
    assert store.read("s") == reference.read("s") == tuple(LOG)
    assert store.projection("s") == reference.projection("s")
    assert store.load("s", incremental=True) == fold_session(LOG)
    assert store.audit("s").ok
    # the key answers as an append of the same request under it would: replayed, not a mismatch
    assert store.append(AppendRequest("s", 0, LOG, "k")).replayed
    again = import_stream(store, "s", iter(LOG), batch=5, idempotency_key="k")
    assert (again.first_seq, again.last_seq, again.replayed) == (1, 24, True)


def test_a_bad_event_in_a_later_batch_writes_nothing_of_the_batches_before_it(store: LogStore) -> None:
    bad = [*LOG[:22], Event(LOG[22].seq + 1, LOG[22].kind, LOG[22].at, LOG[22].payload)]
    with pytest.raises(AppendRejectedError) as refused:
        import_stream(store, "s", iter(bad), batch=5)
    assert (refused.value.position, refused.value.rule) == (24, "seq-gap")  # the seq it carries
    _nothing_written(store, "s")


def test_a_goal_id_reused_across_batches_is_refused_at_its_seq(store: LogStore) -> None:
    reused = goals_then(6, reused="goal-1")
    with pytest.raises(AppendRejectedError) as refused:
        import_stream(store, "s", iter(reused), batch=4)
    assert (refused.value.position, refused.value.rule) == (13, "id-reused")
    _nothing_written(store, "s")


def test_an_iterable_that_fails_part_way_writes_nothing(store: LogStore) -> None:
    class Broken(Exception):
        pass

    def failing() -> Iterator[Event]:
        yield from LOG[:17]
        raise Broken

    with pytest.raises(Broken):
        import_stream(store, "s", failing(), batch=5)
    _nothing_written(store, "s")


def test_a_session_that_holds_events_is_a_conflict_and_keeps_them(store: LogStore) -> None:
    store.append(AppendRequest("s", 0, LOG[:2]))
    with pytest.raises(ConflictError):
        import_stream(store, "s", iter(LOG), batch=5)
    assert store.read("s") == tuple(LOG[:2])


def test_a_fork_record_is_kept_when_it_describes_the_events_and_refused_otherwise(store: LogStore) -> None:
    kept = ForkProvenance("source", 7, prefix_digest(LOG[:7]))
    assert import_stream(store, "fork", iter(LOG), batch=5, provenance=kept).last_seq == 24
    assert store.provenance("fork") == kept and store.audit("fork").ok
    for wrong in (ForkProvenance("source", 7, prefix_digest(LOG[:6])), ForkProvenance("source", 25, "0" * 64)):
        with pytest.raises(ProvenanceMismatchError):
            import_stream(store, "other", iter(LOG), batch=5, provenance=wrong)
        _nothing_written(store, "other")


def test_no_events_a_bad_batch_size_or_a_bad_provenance_is_the_callers_fault(store: LogStore) -> None:
    with pytest.raises(InvalidRequestError, match="non-empty sequence of events"):
        import_stream(store, "s", iter(()))
    for batch in (0, -1, True):
        with pytest.raises(InvalidRequestError, match="batch must be a positive integer"):
            import_stream(store, "s", iter(LOG), batch=batch)
    with pytest.raises(InvalidRequestError, match="expected a ForkProvenance"):
        import_stream(store, "s", iter(LOG), provenance="source@7")  # type: ignore[arg-type]
    _nothing_written(store, "s")
