"""One SQLite connection per process, its WAL mode, and transactions on it.

Theory of operation
-------------------
``ConnectionKeeper`` owns the connection of one store. It opens it lazily
through a factory and a ``setup`` callback (pragmas, migrations), serialises
every use under a lock, and runs each unit of work as ``begin``, body,
``COMMIT``. Any exception rolls the transaction back; if the rollback itself
fails the connection is closed (SQLite discards an open transaction when its
connection closes) and the next call opens a fresh one. A driver exception
(or the ``UnicodeDecodeError`` it raises for a damaged schema) leaves as
``StorageError`` (``DamagedDatabaseError`` for a damaged file), whose ``outcome`` is ``unknown`` only when the
failure came from the ``COMMIT`` itself (the commit may have happened).

A connection is never used across a fork. A keeper that finds itself in a
child process sets the inherited connection aside without touching it (even
closing it could disturb the parent's locks and journal) and opens its own,
with a fresh lock, since a lock copied over a fork may be held forever.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from .base import StoreClosedError
from .sqlite_schema import DRIVER_ERRORS, Connection, is_busy, rollback_quietly, translate

__all__ = ["ConnectionKeeper", "connect_sqlite", "enable_wal"]

T = TypeVar("T")


def connect_sqlite(path: str) -> Connection:
    """The default connection factory: autocommit mode (the keeper issues its
    own ``BEGIN``/``COMMIT``), usable from any thread under the keeper's lock."""
    return sqlite3.connect(path, isolation_level=None, check_same_thread=False)


def enable_wal(conn: Connection, busy_timeout_ms: int) -> None:
    """Put the file in WAL mode. Switching needs an exclusive lock, and SQLite
    answers SQLITE_BUSY at once (without its busy handler) while other
    openers hold the file, so this waits, within the same busy timeout."""
    if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
        return
    deadline = time.monotonic() + busy_timeout_ms / 1000
    pause = 0.001
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


class ConnectionKeeper:
    """The connection of one store in this process (see the module docstring)."""

    def __init__(self, path: str, connect: Callable[[str], Connection], setup: Callable[[Connection], None]) -> None:
        self.path = path
        self._connect = connect
        self._setup = setup
        self._lock = threading.RLock()
        self._pid = os.getpid()
        self._conn: Connection | None = None
        self._set_aside: list[Connection] = []  # inherited over a fork: kept alive, never used
        self._closed = False

    @property
    def owner_pid(self) -> int | None:
        """The process the current connection belongs to (None when there is none)."""
        return None if self._conn is None else self._pid

    @property
    def inherited(self) -> int:
        """How many connections inherited over a fork were set aside."""
        return len(self._set_aside)

    def _locked(self, pid: int) -> threading.RLock:
        if pid != self._pid:
            self._lock = threading.RLock()
        return self._lock

    def _connection(self, pid: int) -> Connection:
        if self._closed:
            raise StoreClosedError()
        if self._conn is not None and pid != self._pid:
            self._set_aside.append(self._conn)
            self._conn = None
        if self._conn is None:
            self._conn = self._open()
            self._pid = pid
        return self._conn

    def _open(self) -> Connection:
        try:
            conn = self._connect(self.path)
        except DRIVER_ERRORS as exc:
            raise translate(exc, "open") from exc
        try:
            self._setup(conn)
        except BaseException as exc:
            self._drop(conn)
            if isinstance(exc, DRIVER_ERRORS):
                raise translate(exc, "open") from exc
            raise
        return conn

    def _drop(self, conn: Connection) -> None:
        with contextlib.suppress(sqlite3.Error):
            conn.close()
        if self._conn is conn:
            self._conn = None

    def _abort(self, conn: Connection) -> None:
        if not rollback_quietly(conn):
            self._drop(conn)

    def open(self) -> None:
        """Open the connection now (so opening errors surface at once)."""
        pid = os.getpid()
        with self._locked(pid):
            self._connection(pid)

    def run(self, operation: str, begin: str, body: Callable[[Connection], T]) -> T:
        """``begin``; ``body(conn)``; ``COMMIT``, rolled back on any exception."""
        pid = os.getpid()  # once: it is a system call
        with self._locked(pid):
            conn = self._connection(pid)
            committing = False
            try:
                conn.execute(begin)
                result = body(conn)
                committing = True
                conn.execute("COMMIT")
                return result
            except DRIVER_ERRORS as exc:
                self._abort(conn)
                raise translate(exc, operation, "unknown" if committing else "not-applied") from exc
            except BaseException:
                self._abort(conn)
                raise

    def direct(self, operation: str, body: Callable[[Connection], T]) -> T:
        """``body(conn)`` outside any transaction (for pragmas that refuse one)."""
        pid = os.getpid()  # once: it is a system call
        with self._locked(pid):
            conn = self._connection(pid)
            try:
                return body(conn)
            except DRIVER_ERRORS as exc:
                self._abort(conn)
                raise translate(exc, operation) from exc

    def close(self) -> None:
        """Close the connection; later calls raise ``StoreClosedError``. Idempotent."""
        with self._locked(os.getpid()):
            self._closed = True
            if self._conn is not None and os.getpid() == self._pid:
                self._drop(self._conn)
            self._conn = None
