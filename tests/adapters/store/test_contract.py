"""The published store contract (``planfold.adapters.store.contract``) run
against every store planfold ships: the in-memory reference and SQLite."""

from __future__ import annotations

import pytest

from planfold.adapters.store.contract import StoreContract, StoreKit, StoreMaker
from planfold.adapters.store.memory import MemoryStore
from planfold.adapters.store.sqlite import SqliteStore


class TestMemoryStore(StoreContract):
    example_divisor = 2

    @pytest.fixture
    def store_maker(self) -> StoreMaker:
        return lambda: StoreKit.same(MemoryStore())


class TestSqliteStore(StoreContract):
    @pytest.fixture
    def store_maker(self, tmp_path_factory: pytest.TempPathFactory) -> StoreMaker:
        def make() -> StoreKit:
            path = tmp_path_factory.mktemp("store") / "store.db"
            return StoreKit.reopening(lambda: SqliteStore(path))

        return make
