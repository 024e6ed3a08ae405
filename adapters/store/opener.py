"""Opening a store by its address: a ``postgresql://`` URL or a SQLite file.

Theory of operation
-------------------
Everything that takes ``--db`` (the CLI, the JSON-RPC server, the benchmarks)
opens its store here. ``open_store(target)`` gives a ``PostgresStore`` for a
``postgresql://`` or ``postgres://`` URL (psycopg is imported only then, so
the embedded default needs nothing beyond the base install) and a
``SqliteStore`` for anything else, taken as a file path. For a URL,
``read_only=True`` opens without migrating or writing anything: read-only
transactions, after checking that the database is planfold's at the current
schema version.

``connect_timeout`` (seconds, ``DEFAULT_CONNECT_TIMEOUT``) bounds the first
connection to a PostgreSQL server: a wrong host, port, database or password
fails within it as ``StoreUnreachableError`` with the driver's message.

``open_async_store(target)`` is the same for asyncio programs: an
``AsyncPostgresStore`` for a URL, an ``AsyncSqliteStore`` for a file, and
an ``AsyncMemoryStore`` for ``":memory:"``; each backend is imported only
when it is asked for.

A URL given when psycopg is not installed is ``InvalidRequestError`` saying
which extra to install.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from ..loggers import logger
from ..redact import redact_url
from .base import InvalidRequestError
from .engine import LogStore
from .sqlite import SqliteStore

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .aio import AsyncLogStore

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_STORE_TIMEOUT",
    "POSTGRES_SCHEMES",
    "is_postgres_url",
    "open_async_store",
    "open_store",
    "postgres_extra",
]

_log = logger(__name__)

#: Seconds the first connection to a PostgreSQL server may take.
DEFAULT_CONNECT_TIMEOUT = 5.0

#: The URL schemes that name a PostgreSQL database.
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


#: How long one operation on a PostgreSQL store waits for a connection.
DEFAULT_STORE_TIMEOUT = 30.0


def is_postgres_url(target: object) -> bool:
    """True when ``target`` is a PostgreSQL URL rather than a file path."""
    return isinstance(target, str) and target.lower().startswith(POSTGRES_SCHEMES)


@contextmanager
def postgres_extra() -> Iterator[None]:
    """Around the import of a PostgreSQL store (the postgres extra is
    optional: psycopg is imported only for a URL): a missing driver is an
    ``InvalidRequestError`` that names the extra to install."""
    try:
        yield
    except ImportError as exc:
        raise InvalidRequestError(
            f"a PostgreSQL URL needs the postgres extra: pip install 'planfold[postgres]' ({exc})"
        ) from exc


def open_store(
    target: str | os.PathLike[str],
    *,
    read_only: bool = False,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    timeout: float = DEFAULT_STORE_TIMEOUT,
) -> LogStore:
    """The store at ``target`` (see the module docstring); ``read_only``,
    ``connect_timeout`` (the first connection) and ``timeout`` (how long one
    operation waits for a connection, so for a server that went away) apply
    to PostgreSQL URLs."""
    if is_postgres_url(target):
        with postgres_extra():
            from .postgres import PostgresStore  # noqa: PLC0415
        store: LogStore = PostgresStore(
            os.fspath(target), read_only=read_only, connect_timeout=connect_timeout, timeout=timeout
        )
    else:
        store = SqliteStore(target)
    _log.info("store %s opened: %s", type(store).__name__, redact_url(os.fspath(target)))
    return store


async def open_async_store(
    target: str | os.PathLike[str],
    *,
    connect_timeout: float | None = None,
    timeout: float | None = None,
) -> AsyncLogStore:
    """The async store at ``target``: ``":memory:"`` gives an
    ``AsyncMemoryStore``, a ``postgresql://`` URL an ``AsyncPostgresStore``
    (``connect_timeout`` and ``timeout`` as ``open_store`` takes them),
    anything else the ``AsyncSqliteStore`` of that file. Opening does not
    block the loop."""
    # Each backend is imported only when asked for (psycopg is optional).
    if target == ":memory:":
        from .aio_memory import AsyncMemoryStore  # noqa: PLC0415

        return AsyncMemoryStore()
    if is_postgres_url(target):
        with postgres_extra():
            from .aio_postgres import AsyncPostgresStore  # noqa: PLC0415
        return await AsyncPostgresStore.open(
            os.fspath(target),
            connect_timeout=DEFAULT_CONNECT_TIMEOUT if connect_timeout is None else connect_timeout,
            timeout=DEFAULT_STORE_TIMEOUT if timeout is None else timeout,
        )
    from .aio_sqlite import AsyncSqliteStore  # noqa: PLC0415

    return await AsyncSqliteStore.open(target)
