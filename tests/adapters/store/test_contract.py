"""The published store contract (``planfold.adapters.store.contract``) run
against every store planfold ships: the in-memory reference, SQLite and
PostgreSQL (on the test session's throwaway server, a schema per store), each
synchronous and async (through its synchronous face)."""

from __future__ import annotations

import uuid
from collections.abc import Callable

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

    @pytest.fixture
    def store_maker(self) -> StoreMaker:
        return lambda clock: StoreKit.same(MemoryStore(clock=clock))


class TestSqliteStore(StoreContract):
    @pytest.fixture
    def store_maker(self, tmp_path_factory: pytest.TempPathFactory) -> StoreMaker:
        def make(clock: ManualClock) -> StoreKit:
            path = tmp_path_factory.mktemp("store") / "store.db"
            return StoreKit.reopening(lambda: SqliteStore(path, clock=clock, poll_interval=0.05))

        return make


class TestPostgresStore(StoreContract):
    example_divisor = 6

    @pytest.fixture
    def store_maker(self, pg_cluster: Cluster) -> StoreMaker:
        def make(clock: ManualClock) -> StoreKit:
            schema = f"c_{uuid.uuid4().hex[:16]}"
            url = pg_cluster.schema_url(schema)
            opener: Callable[[], PostgresStore] = lambda: PostgresStore(url, clock=clock, pool_size=2)  # noqa: E731
            return StoreKit.reopening(opener, lambda: pg_cluster.drop_schema(schema))

        return make


class TestAsyncMemoryStore(StoreContract):
    example_divisor = 2

    @pytest.fixture
    def store_maker(self) -> StoreMaker:
        return lambda clock: StoreKit.same_async(AsyncMemoryStore(clock=clock))


class TestThreadedMemoryStore(StoreContract):
    """A synchronous store adapted to the async face, one thread hop a call."""

    example_divisor = 2

    @pytest.fixture
    def store_maker(self) -> StoreMaker:
        return lambda clock: StoreKit.same_async(ThreadedStore(MemoryStore(clock=clock)))


class TestAsyncSqliteStore(StoreContract):
    @pytest.fixture
    def store_maker(self, tmp_path_factory: pytest.TempPathFactory) -> StoreMaker:
        def make(clock: ManualClock) -> StoreKit:
            path = tmp_path_factory.mktemp("store") / "store.db"
            return StoreKit.of_async(lambda: AsyncSqliteStore.open(path, clock=clock, poll_interval=0.05))

        return make


class TestAsyncPostgresStore(StoreContract):
    example_divisor = 6

    @pytest.fixture
    def store_maker(self, pg_cluster: Cluster) -> StoreMaker:
        def make(clock: ManualClock) -> StoreKit:
            schema = f"c_{uuid.uuid4().hex[:16]}"
            url = pg_cluster.schema_url(schema)
            return StoreKit.of_async(
                lambda: AsyncPostgresStore.open(url, clock=clock, pool_size=2), lambda: pg_cluster.drop_schema(schema)
            )

        return make
