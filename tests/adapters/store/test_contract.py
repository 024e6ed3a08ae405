"""The published store contract (``planfold.adapters.store.contract``) run
against every store planfold ships: the in-memory reference, SQLite and
PostgreSQL (on the test session's throwaway server, a schema per store), each
synchronous and async (through its synchronous face). A store's async kind
runs on storage made as its synchronous kind's is: its class says only how
the store opens (``new_kit``)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from planfold.adapters.store.aio_memory import AsyncMemoryStore
from planfold.adapters.store.aio_postgres import AsyncPostgresStore
from planfold.adapters.store.aio_sqlite import AsyncSqliteStore
from planfold.adapters.store.aio_threaded import ThreadedStore
from planfold.adapters.store.contract import ManualClock, StoreContract, StoreKit, StoreMaker
from planfold.adapters.store.memory import MemoryStore
from planfold.adapters.store.postgres import PostgresStore
from planfold.adapters.store.sqlite import SqliteStore
from tests.pg_cluster import Cluster


class TestMemoryStore(StoreContract):
    example_divisor = 2

    @staticmethod
    def new_kit(clock: ManualClock) -> StoreKit:
        return StoreKit.same(MemoryStore(clock=clock))

    @pytest.fixture
    def store_maker(self) -> StoreMaker:
        return self.new_kit


class TestAsyncMemoryStore(TestMemoryStore):
    @staticmethod
    def new_kit(clock: ManualClock) -> StoreKit:
        return StoreKit.same_async(AsyncMemoryStore(clock=clock))


class TestThreadedMemoryStore(TestMemoryStore):
    """A synchronous store adapted to the async face, one thread hop a call."""

    @staticmethod
    def new_kit(clock: ManualClock) -> StoreKit:
        return StoreKit.same_async(ThreadedStore(MemoryStore(clock=clock)))


class TestSqliteStore(StoreContract):
    """Each store on a new file."""

    @staticmethod
    def new_kit(path: Path, clock: ManualClock) -> StoreKit:
        return StoreKit.reopening(lambda: SqliteStore(path, clock=clock, poll_interval=0.05))

    @pytest.fixture
    def store_maker(self, tmp_path_factory: pytest.TempPathFactory) -> StoreMaker:
        return lambda clock: self.new_kit(tmp_path_factory.mktemp("store") / "store.db", clock)


class TestAsyncSqliteStore(TestSqliteStore):
    @staticmethod
    def new_kit(path: Path, clock: ManualClock) -> StoreKit:
        return StoreKit.of_async(lambda: AsyncSqliteStore.open(path, clock=clock, poll_interval=0.05))


class TestPostgresStore(StoreContract):
    """Each store on a schema of its own, dropped when its test is over."""

    example_divisor = 6

    @staticmethod
    def new_kit(url: str, clock: ManualClock, drop: Callable[[], None]) -> StoreKit:
        return StoreKit.reopening(lambda: PostgresStore(url, clock=clock, pool_size=2), drop)

    @pytest.fixture
    def store_maker(self, pg_cluster: Cluster) -> StoreMaker:
        def make(clock: ManualClock) -> StoreKit:
            schema = f"c_{uuid.uuid4().hex[:16]}"
            return self.new_kit(pg_cluster.schema_url(schema), clock, lambda: pg_cluster.drop_schema(schema))

        return make


class TestAsyncPostgresStore(TestPostgresStore):
    @staticmethod
    def new_kit(url: str, clock: ManualClock, drop: Callable[[], None]) -> StoreKit:
        return StoreKit.of_async(lambda: AsyncPostgresStore.open(url, clock=clock, pool_size=2), drop)
