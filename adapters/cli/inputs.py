"""What the ``planfold`` commands read and open: FILE arguments and databases.

Theory of operation
-------------------
``read_source(name, stdin)`` reads a FILE argument once: ``-`` is standard
input, anything else is opened once and read from that one handle, so a pipe
(``planfold replay --db <(cat log.jsonl)``) or a FIFO works like a file. A
regular file that starts with the SQLite header (``SQLite format 3``) is a
database, left for SQLite to open by its path; a database arriving any other
way (a pipe, standard input) is read whole and opened from memory. Anything
else is a JSON Lines log, left open to be read as a stream
(``Source.lines``: one line at a time, so a replay holds no more than a
line of it, and ``Source.bytes_read`` says how many bytes were read so far, of
``Source.size`` for a regular file); the caller closes it
(``Source.close``, or ``with``).

``open_database(target, write=...)`` is the one place a database is opened
(``--db`` and database FILEs), so another kind of database (a URL scheme)
is added here and nowhere else: a ``postgresql://`` URL (a FILE or ``--db``)
is a PostgreSQL store (``store.opener.open_store``), read-only unless
written to. A SQLite path opened for reading is opened
read-only: nothing is created, migrated or switched (no WAL), the file's
bytes, mode and side files stay as they were, it works on read-only files
and directories; a file an older planfold wrote is read through a private
migrated copy in memory (``store.sqlite_readonly``), and a file that is not a
planfold database is refused (``not-a-planfold-database``). Opened for
writing (``import``, ``demo``, ``fork``) it is the ordinary ``SqliteStore``, which
creates the file and migrates it, and refuses another application's file
(``foreign-database``) before it writes anything. A SQLite path is a regular
file (links followed) or nothing yet (a writer creates it); a directory, a
device such as ``/dev/null``, a FIFO or a socket is refused before anything
is opened (``require_database_file``).

Every refusal here is a ``CliError`` (an ``AdapterError``) with a stable
code; the commands turn it into a message and exit status 2.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Literal

from ..codec import JsonlLines
from ..errors import AdapterError
from ..store.engine import LogStore
from ..store.opener import is_postgres_url, open_store
from ..store.sqlite import SqliteStore
from ..store.sqlite_readonly import open_read_only
from .describe import shown

__all__ = ["SQLITE_MAGIC", "CliError", "Source", "open_database", "read_source", "require_database_file", "same_file"]

SQLITE_MAGIC = b"SQLite format 3\x00"


class CliError(AdapterError):
    """A command refused its input or operation (exit status 2, nothing
    written); ``code`` says why: ``no-such-file``, ``not-a-file``,
    ``unreadable-file``, ``no-such-session``, ``no-sessions``,
    ``output-is-the-database``, ``not-a-jsonl-log``, ``nothing-to-import``,
    ``already-imported``, ``session-not-empty``, ``session-needed``,
    ``no-api-key``."""

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
            "session-needed",
            "session-not-empty",
            "unreadable-file",
        }
    )

    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message, code=code)


@dataclass(frozen=True, slots=True)
class Source:
    """A FILE argument, read: a JSON Lines log (its first bytes ``data``, the
    rest still in ``stream``), a database file SQLite opens by ``path``, a
    database image in memory (``data``), or a database URL (``path``)."""

    name: str
    kind: Literal["jsonl", "sqlite", "url"]
    data: bytes = b""
    path: str | None = None
    #: The rest of a JSON Lines log, unread; ``size`` is the whole log's
    #: length in bytes when it is a regular file, else 0 (unknown).
    stream: BinaryIO | None = None
    size: int = 0
    owned: bool = False
    _lines: list[JsonlLines] = field(default_factory=list, compare=False, repr=False)

    @property
    def label(self) -> str:
        """What a JSON Lines log is called in reports: its file name's stem."""
        return "stdin" if self.name == "-" else Path(self.name).stem or self.name

    def lines(self) -> Iterator[bytes]:
        """The lines of a JSON Lines log, one at a time, each without its line
        end (``codec.JsonlLines``); read once."""
        reader = JsonlLines(self.stream, self.data)
        self._lines.append(reader)
        return iter(reader)

    @property
    def bytes_read(self) -> int:
        """How many bytes of a JSON Lines log were read so far."""
        return sum(reader.consumed for reader in self._lines)

    def read_all(self) -> bytes:
        """The whole JSON Lines log as bytes (what is left of it)."""
        return self.data + (b"" if self.stream is None else self.stream.read())

    def close(self) -> None:
        """Close the stream if this source opened it."""
        if self.owned and self.stream is not None:
            self.stream.close()

    def __enter__(self) -> Source:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def _opened(name: str) -> BinaryIO:
    if "\x00" in name:  # no file system has such a name; open() would raise ValueError
        raise CliError(f"{shown(name)}: no such file (a file name cannot hold a NUL character)", code="no-such-file")
    try:
        return open(name, "rb")
    except FileNotFoundError as exc:
        raise CliError(f"{shown(name)}: no such file", code="no-such-file") from exc
    except IsADirectoryError as exc:
        raise CliError(f"{shown(name)}: is a directory, not a log", code="not-a-file") from exc
    except OSError as exc:
        raise CliError(f"{shown(name)}: cannot be read ({exc.strerror or exc})", code="unreadable-file") from exc


def read_source(name: str, stdin: BinaryIO) -> Source:
    """Open FILE ``name`` (``-``: ``stdin``) to be read once (see the module
    docstring). Raises ``CliError`` when it cannot be read."""
    if is_postgres_url(name):
        return Source(name, "url", path=name)
    if name == "-":
        head = stdin.read(len(SQLITE_MAGIC))
        if head == SQLITE_MAGIC:
            return Source(name, "sqlite", head + stdin.read())
        return Source(name, "jsonl", head, stream=stdin)
    handle = _opened(name)
    try:
        status = os.fstat(handle.fileno())
        regular = stat.S_ISREG(status.st_mode)
        head = handle.read(len(SQLITE_MAGIC))
        if head == SQLITE_MAGIC:
            if regular:
                handle.close()
                return Source(name, "sqlite", path=name)
            data = head + handle.read()
            handle.close()
            return Source(name, "sqlite", data)
    except OSError as exc:
        handle.close()
        raise CliError(f"{shown(name)}: cannot be read ({exc.strerror or exc})", code="unreadable-file") from exc
    return Source(name, "jsonl", head, stream=handle, size=status.st_size if regular else 0, owned=True)


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
        if "\x00" in target or os.path.lexists(target):
            require_database_file(target)
        return SqliteStore(target)
    require_database_file(target)
    return open_read_only(target)


def require_database_file(target: str) -> None:
    """Refuse a ``--db`` path that is not a regular file (links followed):
    ``no-such-file`` when nothing is there, ``not-a-file`` for a directory,
    a device (``/dev/null``), a FIFO or a socket; before anything is opened."""
    if "\x00" in target:
        raise CliError(f"{shown(target)}: no such database (a file name cannot hold a NUL character)",
                       code="no-such-file")
    try:
        status = os.stat(target)
    except FileNotFoundError as exc:
        raise CliError(f"{shown(target)}: no such database", code="no-such-file") from exc
    except OSError as exc:
        raise CliError(f"{shown(target)}: cannot be read ({exc.strerror or exc})", code="unreadable-file") from exc
    if stat.S_ISDIR(status.st_mode):
        raise CliError(f"{shown(target)}: is a directory, not a database", code="not-a-file")
    if not stat.S_ISREG(status.st_mode):
        raise CliError(f"{shown(target)}: is not a regular file, not a database", code="not-a-file")


def same_file(one: str, other: str) -> bool:
    """Whether paths ``one`` and ``other`` name one file (either may not exist)."""
    try:
        return os.path.samefile(one, other)
    except OSError:
        return os.path.realpath(one) == os.path.realpath(other)
