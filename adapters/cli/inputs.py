"""What the ``planfold`` commands read and open: FILE arguments and databases.

Theory of operation
-------------------
``read_source(name, stdin)`` reads a FILE argument once: ``-`` is standard
input, anything else is opened once and read from that one handle, so a pipe
(``planfold replay <(cat log.jsonl)``) or a FIFO works like a file. A
regular file that starts with the SQLite header (``SQLite format 3``) is a
database, left for SQLite to open by its path; a database arriving any other
way (a pipe, standard input) is read whole and opened from memory. Anything
else is a JSON Lines log, held as its bytes.

``open_database(target, write=...)`` is the one place a database is opened
(``--db`` and database FILEs), so another kind of database (a URL scheme)
is added here and nowhere else: a ``postgresql://`` URL (a FILE or ``--db``)
is a PostgreSQL store (``store.opener.open_store``), read-only unless
written to. A SQLite path opened for reading is opened
read-only: nothing is created, migrated or switched (no WAL), the file's
bytes, mode and side files stay as they were, it works on read-only files
and directories, and a file that is not a planfold database is refused
(``not-a-planfold-database``). Opened for writing (``import``, ``demo``) it is
the ordinary ``SqliteStore``, which creates the file and migrates it.

Every refusal here is a ``CliError`` (an ``AdapterError``) with a stable
code; the commands turn it into a message and exit status 2.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from planfold.adapters.cli.describe import shown
from planfold.adapters.errors import AdapterError
from planfold.adapters.store.engine import LogStore
from planfold.adapters.store.opener import is_postgres_url, open_store
from planfold.adapters.store.sqlite import SqliteStore
from planfold.adapters.store.sqlite_readonly import open_read_only

__all__ = ["SQLITE_MAGIC", "CliError", "Source", "open_database", "read_source", "same_file"]

SQLITE_MAGIC = b"SQLite format 3\x00"


class CliError(AdapterError):
    """A command refused its input or operation (exit status 2, nothing
    written); ``code`` says why: ``no-such-file``, ``not-a-file``,
    ``unreadable-file``, ``no-such-session``, ``no-sessions``,
    ``output-is-the-database``, ``not-a-jsonl-log``, ``nothing-to-import``,
    ``already-imported``, ``session-not-empty``, ``no-api-key``."""

    code = "cli-error"
    codes = frozenset(
        {
            "already-imported",
            "no-api-key",
            "no-sessions",
            "no-such-file",
            "no-such-session",
            "not-a-file",
            "not-a-jsonl-log",
            "nothing-to-import",
            "output-is-the-database",
            "session-not-empty",
            "unreadable-file",
        }
    )

    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message, code=code)


@dataclass(frozen=True, slots=True)
class Source:
    """A FILE argument, read: a JSON Lines log (``data``), a database file
    SQLite opens by ``path``, a database image in memory (``data``), or a
    database URL (``path``)."""

    name: str
    kind: Literal["jsonl", "sqlite", "url"]
    data: bytes = b""
    path: str | None = None

    @property
    def label(self) -> str:
        """What a JSON Lines log is called in reports: its file name's stem."""
        return "stdin" if self.name == "-" else Path(self.name).stem or self.name


def _opened(name: str) -> BinaryIO:
    try:
        return open(name, "rb")
    except FileNotFoundError as exc:
        raise CliError(f"{shown(name)}: no such file", code="no-such-file") from exc
    except IsADirectoryError as exc:
        raise CliError(f"{shown(name)}: is a directory, not a log", code="not-a-file") from exc
    except OSError as exc:
        raise CliError(f"{shown(name)}: cannot be read ({exc.strerror or exc})", code="unreadable-file") from exc


def read_source(name: str, stdin: BinaryIO) -> Source:
    """Read FILE ``name`` (``-``: ``stdin``) once (see the module docstring).
    Raises ``CliError`` when it cannot be read."""
    if is_postgres_url(name):
        return Source(name, "url", path=name)
    if name == "-":
        data = stdin.read()
        return Source(name, "sqlite" if data.startswith(SQLITE_MAGIC) else "jsonl", data)
    with _opened(name) as handle:
        try:
            regular = stat.S_ISREG(os.fstat(handle.fileno()).st_mode)
            head = handle.read(len(SQLITE_MAGIC))
            if head == SQLITE_MAGIC and regular:
                return Source(name, "sqlite", path=name)
            data = head + handle.read()
        except OSError as exc:
            raise CliError(f"{shown(name)}: cannot be read ({exc.strerror or exc})", code="unreadable-file") from exc
    return Source(name, "sqlite" if data.startswith(SQLITE_MAGIC) else "jsonl", data)


def open_database(target: str | Source, *, write: bool) -> LogStore:
    """The store behind ``target``: a database path (``--db``) or a database
    ``Source``. Read-only unless ``write`` (see the module docstring). Raises
    ``CliError`` (no such file, not a planfold database) or the store's
    ``StorageError``."""
    if isinstance(target, Source):
        if target.path is None:
            return open_read_only(target.name, image=target.data)
        target = target.path
    if is_postgres_url(target):
        return open_store(target, read_only=not write)
    if write:
        return SqliteStore(target)
    if not os.path.exists(target):
        raise CliError(f"{shown(target)}: no such database", code="no-such-file")
    if os.path.isdir(target):
        raise CliError(f"{shown(target)}: is a directory, not a database", code="not-a-file")
    return open_read_only(target)


def same_file(one: str, other: str) -> bool:
    """Whether paths ``one`` and ``other`` name one file (either may not exist)."""
    try:
        return os.path.samefile(one, other)
    except OSError:
        return os.path.realpath(one) == os.path.realpath(other)
