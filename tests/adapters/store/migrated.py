"""What every store must show once it has moved a log from before forks
forward, whichever backend it is."""

from __future__ import annotations

from planfold.adapters.provenance import ForkProvenance
from planfold.adapters.store.postgres import PostgresStore
from planfold.adapters.store.sqlite import SqliteStore


def check_forks_after_the_forks_step(store: SqliteStore | PostgresStore, from_version: int) -> ForkProvenance:
    """``store`` opened a log of session ``s`` from before forks: it ran the
    fork provenance step alone, from ``from_version``; ``s`` has no provenance
    and audits clean, and a fork of it at seq 10 records its provenance and
    audits clean. The fork's provenance."""
    assert store.migration is not None
    assert (store.migration.from_version, store.migration.applied) == (from_version, ("fork provenance",))
    assert store.provenance("s") is None and store.audit("s").ok
    provenance = store.fork("s", 10, "f")
    assert store.provenance("f") == provenance and store.audit("f").ok
    return provenance
