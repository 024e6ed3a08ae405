"""A backend implements at most eight operations (``adapters.store.engine``):
``run``, ``watch`` and ``close``, the transaction's ``view``, ``rows``,
``session_ids`` and ``write``, and ``append_decided`` for a backend that
appends in one step. Every shipped backend is counted: the public methods
of its backend class that the protocols name, and every public method of
its transaction class, which must all be the protocol's."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from planfold.adapters.store import aio_postgres, postgres
from planfold.adapters.store.aio_memory import AsyncMemoryStore
from planfold.adapters.store.engine import Backend, LogStore, OneStepBackend, SessionRead, Transaction
from planfold.adapters.store.memory import MemoryStore
from planfold.adapters.store.sqlite import SqliteStore
from planfold.adapters.store.sqlite_readonly import open_read_only

#: The most operations a backend author writes.
LIMIT = 8


def operations(protocol: type) -> set[str]:
    """The public methods a protocol itself declares."""
    return {name for name, member in vars(protocol).items() if inspect.isfunction(member) and not name.startswith("_")}


def public_methods(cls: type) -> set[str]:
    return {name for name, _ in inspect.getmembers(cls, inspect.isfunction) if not name.startswith("_")}


BACKEND = operations(Backend) | operations(OneStepBackend)
TRANSACTION = operations(Transaction)


def counted(backend: type, transaction: type) -> tuple[set[str], set[str]]:
    """The operations a backend implements, and the transaction's public
    methods outside the protocol (none is allowed)."""
    written = public_methods(backend) & BACKEND | public_methods(transaction) & TRANSACTION
    return written, public_methods(transaction) - TRANSACTION


def transaction_of(store: LogStore) -> type:
    """The class of the transactions ``store``'s backend runs bodies on."""
    return store.backend.run("count", False, type)


def shipped(tmp_path: Path) -> dict[str, tuple[type, type]]:
    """Every backend the project ships, with its transaction class (the
    PostgreSQL ones by name: counting needs no server)."""
    path = str(tmp_path / "count.sqlite")
    with MemoryStore() as memory, SqliteStore(path) as sqlite:
        found = {
            "memory": (type(memory.backend), transaction_of(memory)),
            "sqlite": (type(sqlite.backend), transaction_of(sqlite)),
        }
    with open_read_only(path) as reader:
        found["sqlite read-only"] = (type(reader.backend), transaction_of(reader))
    inner = AsyncMemoryStore().store
    found["async memory"] = (type(inner.backend), transaction_of(inner))
    inner.close()
    found["postgres"] = (postgres.PostgresBackend, postgres._PostgresTransaction)
    found["async postgres"] = (aio_postgres._ReplayBackend, aio_postgres._ReplayTransaction)
    return found


def test_the_protocols_ask_a_backend_for_at_most_eight_operations() -> None:
    assert operations(Backend) | operations(OneStepBackend) == {"run", "watch", "close", "append_decided"}
    assert operations(Transaction) == {"view", "rows", "session_ids", "write"}
    assert len(BACKEND | TRANSACTION) <= LIMIT


@pytest.mark.parametrize("name", ["memory", "sqlite", "sqlite read-only", "async memory", "postgres", "async postgres"])
def test_every_shipped_backend_implements_the_protocol_in_at_most_eight_operations(tmp_path: Path, name: str) -> None:
    backend, transaction = shipped(tmp_path)[name]
    written, beyond = counted(backend, transaction)
    assert beyond == set(), f"{transaction.__name__} has public methods the protocol does not name"
    assert operations(Backend) | TRANSACTION <= written  # every operation the engine calls is there
    assert len(written) <= LIMIT
    assert ("append_decided" in written) == (name == "postgres")  # only PostgreSQL appends in one step


def test_a_backend_with_one_more_transaction_method_is_counted_and_refused() -> None:
    class Wider(postgres._PostgresTransaction):
        def head(self, session_id: str) -> int:
            return self.view(SessionRead(session_id)).head

    written, beyond = counted(postgres.PostgresBackend, Wider)
    assert beyond == {"head"}
    assert len(written) == LIMIT
