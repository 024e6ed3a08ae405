"""Reading what a database hands back (``adapters.store.stored``): both SQL
backends read their columns with the same functions, and a value a
hand-edited database holds where the schema promises an integer reads as
-1, never as a crash."""

from __future__ import annotations

import pytest

from planfold.adapters.provenance import ForkProvenance
from planfold.adapters.store.base import Lease
from planfold.adapters.store.engine import KnownKey
from planfold.adapters.store.stored import stored_int, stored_key, stored_lease, stored_provenance, stored_row


@pytest.mark.parametrize(("value", "read"), [(7, 7), (0, 0), (True, -1), ("7", -1), (7.0, -1), (None, -1)])
def test_an_integer_column_reads_as_its_integer_and_anything_else_as_minus_one(value: object, read: int) -> None:
    assert stored_int(value) == read


def test_a_lease_row_reads_as_a_lease_and_no_row_as_none() -> None:
    assert stored_lease("s", None, None, None, None) is None
    assert stored_lease("s", "worker", 3, 1_000, "x") == Lease("s", "worker", 3, 1_000, -1)


def test_a_key_and_a_fork_read_their_columns() -> None:
    assert stored_key("hash", 1, 4) == KnownKey("hash", 1, 4)
    assert stored_provenance(("src", "2", "digest")) == ForkProvenance("src", -1, "digest")


@pytest.mark.parametrize(("plan_mode", "on"), [(1, True), (True, True), (0, False), (False, False), (None, False)])
def test_a_session_row_reads_plan_mode_as_sqlite_and_postgresql_store_it(plan_mode: object, on: bool) -> None:
    row = stored_row((5, "build", plan_mode, "{}", "", "null", "v1", "state"))
    assert (row.projection.last_seq, row.projection.agent_mode, row.projection.plan_mode) == (5, "build", on)
    assert row.snapshot() == ("v1", "state", 5)
