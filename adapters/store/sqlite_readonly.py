"""Opening a SQLite file for reading only, without changing anything.

Theory of operation
-------------------
An audit must not change what it audits. ``connect_read_only(path)`` opens
the file through a ``file:`` URI with ``mode=ro``, so SQLite itself refuses
every write; when no journal or write-ahead log sits beside the file (the
state a closed database is left in) it also says ``immutable=1``, so SQLite
takes no locks and creates no ``-wal`` or ``-shm`` side file: nothing in the
directory changes, and a file in a read-only directory can be read. When a
write-ahead log is present (a writer is live, or left one behind) the
connection reads it as well (without it the newest events would be missed),
using the side files that are already there.

``connect_image(data)`` opens a database held in memory (one read from a
pipe or standard input); its header is set to the rollback journal, since an
in-memory database cannot use the write-ahead log.

``check_readable(conn)`` is the setup of such a connection: it switches
nothing (no WAL, no ``synchronous``), runs no migration, turns on
``query_only`` and refuses a file that does not carry planfold's fingerprint
(``sqlite_schema.recognise``), or is not a planfold database with an
event log (schema version ``LOG_VERSION`` up to the current one, its tables
as that version promises) with ``NotPlanfoldDatabaseError``
(``not-a-planfold-database``); a newer version is ``SchemaTooNewError``. An
older version with a log is read as it is: reading needs no table a later
version added.

A file older than the log (a legacy sessions table, schema versions 0 to
``LOG_VERSION - 1``) is one a writer would migrate, so a reader reads it too,
without writing to it: ``readable_connection`` copies the database into a
private one in memory (SQLite's backup, which only reads the file), runs the
writer's own ``migrate`` on the copy and hands the copy on, where
``check_readable`` finds the current layout. Such a file holds no events, so
its copy is as small as its legacy rows. What a writer would refuse (another
application's file, an empty one) is refused here as not planfold's.

``open_read_only(path)`` (or ``open_read_only(name, image=data)``) is the
whole store on such a connection: the one append algorithm's ``LogStore``
over a ``SqliteBackend`` whose setup is ``check_readable``. It reads, loads
and audits like any store; every write fails (SQLite refuses it).
"""

from __future__ import annotations

import os
import sqlite3
import urllib.parse

from .base import SchemaMismatchError
from .engine import LogStore
from .sqlite import SqliteBackend, has_table
from .sqlite_schema import (
    LOG_VERSION,
    SCHEMA_VERSION,
    Connection,
    NotPlanfoldDatabaseError,
    migrate,
    recognise,
    verify_schema,
)

__all__ = [
    "NotPlanfoldDatabaseError",
    "check_readable",
    "connect_image",
    "connect_read_only",
    "open_read_only",
    "readable_connection",
]


def connect_read_only(path: str) -> sqlite3.Connection:
    """A read-only connection to the file at ``path`` (see the module docstring)."""
    absolute = os.path.abspath(path)
    quiet = not any(os.path.exists(absolute + side) for side in ("-wal", "-journal"))
    uri = "file:" + urllib.parse.quote(os.fsencode(absolute)) + ("?mode=ro&immutable=1" if quiet else "?mode=ro")
    return sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)


def connect_image(data: bytes) -> sqlite3.Connection:
    """A read-only connection to the database image ``data``."""
    image = bytearray(data)
    if len(image) >= 20 and image[18:20] == b"\x02\x02":
        image[18:20] = b"\x01\x01"  # WAL -> rollback journal: memory cannot hold a WAL
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    try:
        conn.deserialize(bytes(image))
    except BaseException:
        conn.close()
        raise
    return conn


def _version(conn: Connection) -> int:
    """The schema version of a planfold file (``sqlite_schema.recognise``);
    ``NotPlanfoldDatabaseError`` for any other file, whose tables do not
    match planfold's fingerprint (an empty one is left to
    ``check_readable``)."""
    try:
        return recognise(conn)
    except NotPlanfoldDatabaseError as exc:
        if type(exc) is NotPlanfoldDatabaseError:
            raise
        raise NotPlanfoldDatabaseError(exc.message) from exc
    except SchemaMismatchError as exc:
        raise NotPlanfoldDatabaseError(f"not a planfold database: {exc.message}") from exc


def _legacy(conn: Connection) -> bool:
    """Whether the database is a legacy layout a writer would migrate."""
    version = _version(conn)
    return version < LOG_VERSION and bool(conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone())


def readable_connection(conn: sqlite3.Connection) -> sqlite3.Connection:
    """``conn``, or, when its database is older than the log, a private
    migrated copy of it in memory (``conn`` is then closed; see the module
    docstring). The file itself is only read."""
    try:
        if not _legacy(conn):
            return conn
        copy = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        try:
            conn.backup(copy)
            migrate(copy)
        except BaseException:
            copy.close()
            raise
    except BaseException:
        conn.close()
        raise
    conn.close()
    return copy


def check_readable(conn: Connection, busy_timeout_ms: int = 15_000) -> None:
    """The setup of a read-only connection (see the module docstring)."""
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
    conn.execute("PRAGMA query_only = ON")
    version = _version(conn)
    if version < LOG_VERSION:
        tables = conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
        what = "an empty SQLite file" if not tables else f"a SQLite file with schema version {version}"
        raise NotPlanfoldDatabaseError(
            f"{what}, not a planfold database (version {LOG_VERSION} to {SCHEMA_VERSION}); nothing was changed"
        )
    try:
        verify_schema(conn, version)
    except SchemaMismatchError as exc:
        raise NotPlanfoldDatabaseError(f"not a planfold database: {exc.message}") from exc


class _ReadOnlyBackend(SqliteBackend):
    """A ``SqliteBackend`` whose connection is set up by ``check_readable``."""

    def _setup(self, conn: Connection) -> None:
        check_readable(conn, self.busy_timeout_ms)
        self._leases = has_table(conn, "goal_leases")


def open_read_only(path: str, *, image: bytes | None = None, busy_timeout_ms: int = 15_000) -> LogStore:
    """A store reading the planfold database at ``path`` (or, with
    ``image``, the database held in those bytes; ``path`` is then only its
    name) without changing it. Raises ``NotPlanfoldDatabaseError``,
    ``SchemaTooNewError`` or ``StorageError``."""

    def connect(name: str) -> Connection:
        return readable_connection(connect_read_only(name) if image is None else connect_image(image))

    return LogStore(_ReadOnlyBackend(path, synchronous="full", busy_timeout_ms=busy_timeout_ms, connect=connect))
