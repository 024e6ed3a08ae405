"""Stores for the store tests: ``any_store``, a fresh store of each kind
planfold ships (memory, SQLite, PostgreSQL), and ``full_log_file``, an SQLite
file holding a whole session, for the tests that change a file behind the
store's back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from planfold.adapters.store.base import AppendRequest
from planfold.adapters.store.contract_logs import FULL_SCRIPT, build_log
from planfold.adapters.store.engine import LogStore
from planfold.adapters.store.memory import MemoryStore
from planfold.adapters.store.postgres import PostgresStore
from planfold.adapters.store.sqlite import SqliteStore


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LogStore]:
    """An empty store of each kind: in memory, an SQLite file, and a schema of
    its own on the test session's PostgreSQL server (one connection); closed
    after the test."""
    if request.param == "memory":
        store: LogStore = MemoryStore()
    elif request.param == "sqlite":
        store = SqliteStore(tmp_path / "store.sqlite")
    else:
        store = PostgresStore(request.getfixturevalue("pg_url"), pool_size=1)
    with store:
        yield store


@pytest.fixture
def full_log_file(tmp_path: Path) -> Path:
    """A closed SQLite store file whose session ``s`` is ``FULL_SCRIPT``'s log."""
    path = tmp_path / "full.sqlite"
    with SqliteStore(path) as store:
        store.append(AppendRequest("s", 0, build_log(FULL_SCRIPT).events))
    return path
