"""The SQLite schema: versions, forward migrations, and driver-error translation.

Theory of operation
-------------------
The schema version lives in ``PRAGMA user_version``. Versions 0 to 2 are the
*legacy* layout: a sessions table as a coding agent left it before plan/build
modes existed (``id``, ``title``, ``created_at_ms``, ``updated_at_ms``, task
state columns, a separate messages table), or an empty file. From there each
step in ``STEPS`` moves one version forward:

====  ==========================================================================
 3    ``sessions.agent_mode`` (default ``build``) and ``current_plan_json``
      (default ``''`` = no plan)
 4    ``sessions.current_plan_summary_json`` (default ``''`` = rebuild on read)
 5    the event log (``events``, keyed ``(session_id, seq)``), idempotency keys
      (``append_keys``) and the rest of the projection: ``plan_mode``,
      ``goal_json``, ``log_seq``, ``fold_state``, ``fold_format``,
      ``legacy_head_json``
 6    goal leases (``goal_leases``: one row per session with its holder,
      fencing token, expiry and ttl)
 7    the goal ids each session has created (``goal_ids``, keyed
      ``(session_id, goal_id)``, with the seq of the create), filled from
      the log: an append checks a create against it instead of carrying
      every id in the snapshot it rewrites
 8    fork provenance (``forks``: one row per forked session with its
      source session, the seq it was forked at and the hash of the prefix)
====  ==========================================================================

``migrate`` runs every pending step in ONE ``BEGIN IMMEDIATE`` transaction
and sets the new version in the same transaction, so a migration either
happens completely or not at all, and two processes opening the same old file
at once migrate it once (the second re-reads the version under the lock and
finds nothing to do). Every step checks the columns and tables it adds before
adding them, so running it again changes nothing. A version above
``SCHEMA_VERSION`` is refused with ``SchemaTooNewError`` and the file is left
untouched; a file whose tables do not match its version is
``SchemaMismatchError``.

A file is taken for planfold's only by what planfold writes into it
(``recognise``, its fingerprint): no SQLite application id (planfold sets
none; another application's is refused), and a ``sessions`` table with the
columns every planfold file has had since the legacy layout (``id``,
``title``, ``created_at_ms``, ``updated_at_ms``: the legacy table's own,
which ``_step_base`` also creates), at a ``user_version`` no newer than this
code; from version 3 on the tables and columns that version promises are
checked as well (``SchemaMismatchError`` names what is missing). A file with
nothing in it at version 0 is a new one. Anything else (a web framework's
``sessions (id, data, expires)`` table, a table of another name, a view) is
``ForeignDatabaseError`` (a ``NotPlanfoldDatabaseError``: "not a planfold
database"), raised before the writer switches or writes anything, so the
file stays byte for byte as it was.

A damaged file (a schema SQLite cannot parse, text that is not UTF-8, a
truncated file, pages of garbage) is ``DamagedDatabaseError``
(``damaged-database``, a ``StorageError``) wherever the driver finds it:
``translate`` maps SQLite's corruption codes, and text the driver cannot
decode, to it. Before a writer first changes a file (a migration, or the
switch to WAL of a file not yet in it) it runs ``check_sound`` (SQLite's
``integrity_check``, which reads every page and checks every index against
its table), so that a damaged file is
refused before anything is written to it rather than half way through.

Legacy rows keep all their columns and values. The log is the truth, so a
legacy row that recorded a mode or plan without any log behind it has those
values moved to ``legacy_head_json`` (kept for people and importers) and its
projection reset to what the empty log gives: build mode, no plan.

``translate`` turns any ``sqlite3`` exception (and the ``UnicodeDecodeError``
the driver raises for a damaged schema, ``DRIVER_ERRORS``) into the
adapters' typed errors; no driver exception leaves the SQLite modules.
"""

from __future__ import annotations

import sqlite3
from typing import Any, Protocol

from .base import (
    Outcome,
    SchemaMismatchError,
    StorageError,
    StoreBusyError,
)
from .migration import MigrationReport, Step, logged, supported

__all__ = [
    "DRIVER_ERRORS",
    "LEGACY_COLUMNS",
    "LEGACY_VERSION",
    "LOG_VERSION",
    "PLANFOLD_TABLES",
    "SCHEMA_VERSION",
    "STEPS",
    "Connection",
    "DamagedDatabaseError",
    "ForeignDatabaseError",
    "MigrationReport",
    "NotPlanfoldDatabaseError",
    "Step",
    "check_sound",
    "columns",
    "is_busy",
    "migrate",
    "read_version",
    "recognise",
    "refuse_foreign",
    "rollback_quietly",
    "translate",
    "verify_schema",
]

#: The newest layout this code reads and writes.
SCHEMA_VERSION = 8
#: The first layout with the event log: a read-only open reads any from here on.
LOG_VERSION = 5
#: The newest legacy layout (the sessions table before plan/build modes).
LEGACY_VERSION = 2


#: Every table a planfold file may hold, at any version.
PLANFOLD_TABLES = ("sessions", "events", "append_keys", "goal_leases", "goal_ids")


#: The columns of the legacy sessions table, which every planfold file has.
LEGACY_COLUMNS = ("id", "title", "created_at_ms", "updated_at_ms")

#: What the driver raises: its own errors, and ``UnicodeDecodeError`` for
#: schema text that is not UTF-8 (a damaged file).
DRIVER_ERRORS: tuple[type[Exception], ...] = (sqlite3.Error, UnicodeDecodeError)

#: SQLite's result codes for a file that is not (or no longer) a sound database.
_DAMAGE_CODES = ("SQLITE_CORRUPT", "SQLITE_NOTADB")


class NotPlanfoldDatabaseError(SchemaMismatchError):
    """A SQLite file planfold did not write (another application's, or, for a
    reader, an empty one): refused before anything is written to it, and the
    message says "not a planfold database"."""

    code = "not-a-planfold-database"


class ForeignDatabaseError(NotPlanfoldDatabaseError):
    """A SQLite file that belongs to another application: something in it,
    but not planfold's fingerprint (see ``recognise``). Refused before
    anything is written to it."""

    code = "foreign-database"


class DamagedDatabaseError(StorageError):
    """The file is damaged: SQLite cannot read its header, schema or pages,
    or its schema text is not UTF-8 (the file's fault, not the caller's;
    nothing was written)."""

    code = "damaged-database"


class Connection(Protocol):
    """The part of ``sqlite3.Connection`` the store uses (tests wrap it)."""

    @property
    def in_transaction(self) -> bool: ...

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor: ...

    def close(self) -> None: ...


def is_busy(exc: sqlite3.Error) -> bool:
    """True when ``exc`` says another connection holds a lock we need."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    return name.startswith("SQLITE_BUSY") or "database is locked" in str(exc)


def _damaged(exc: Exception) -> bool:
    """Whether ``exc`` says the file is damaged (see ``DamagedDatabaseError``)."""
    if isinstance(exc, UnicodeDecodeError):
        return True
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc)
    return (
        name.startswith(_DAMAGE_CODES)
        or "disk image is malformed" in text
        or "malformed database schema" in text
        or "file is not a database" in text
        or "Could not decode to UTF-8" in text
    )


def translate(exc: Exception, operation: str, outcome: Outcome = "not-applied") -> StorageError:
    """The typed error for a driver exception (one of ``DRIVER_ERRORS``)
    raised during ``operation``."""
    name = getattr(exc, "sqlite_errorname", "") or type(exc).__name__
    detail = f"{name}: {exc}"
    if isinstance(exc, sqlite3.Error) and is_busy(exc):
        return StoreBusyError(operation, detail, outcome=outcome, code="store-busy")
    if _damaged(exc):
        return DamagedDatabaseError(
            operation, f"the database file is damaged ({detail})", outcome=outcome, code="damaged-database"
        )
    return StorageError(operation, detail, outcome=outcome)


def rollback_quietly(conn: Connection) -> bool:
    """Roll back an open transaction; True when the connection is clean after it."""
    try:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
    except sqlite3.Error:
        return False
    return not conn.in_transaction


def read_version(conn: Connection) -> int:
    """``PRAGMA user_version``."""
    row = conn.execute("PRAGMA user_version").fetchone()
    return int(row[0])


def _described(conn: Connection, names: list[str]) -> str:
    """What a file holds, for a refusal: its first few tables with their columns."""
    shown = []
    for name in sorted(names)[:3]:
        have = columns(conn, name)
        shown.append(f"{name} ({', '.join(list(have)[:6])}{', ...' if len(have) > 6 else ''})" if have else name)
    return ", ".join(shown) + (", ..." if len(names) > 3 else "")


def recognise(conn: Connection) -> int:
    """The schema version of a planfold file, read without writing (see the
    module docstring): 0 for a new file with nothing in it;
    ``SchemaTooNewError`` for a newer one, ``ForeignDatabaseError`` for a
    file planfold did not write, ``SchemaMismatchError`` for a planfold file
    missing what its version promises. Driver errors pass through."""
    version = supported(read_version(conn), SCHEMA_VERSION)
    application = int(conn.execute("PRAGMA application_id").fetchone()[0])
    if application:
        raise ForeignDatabaseError(
            f"not a planfold database: its SQLite application id {application:#x} is another application's; "
            "nothing was changed"
        )
    names = [str(row[0]) for row in conn.execute("SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite%'")]
    if not names and version == 0:
        return 0
    have = columns(conn, "sessions")
    missing = [name for name in LEGACY_COLUMNS if name not in have]
    if missing:
        holds = f"it holds {_described(conn, names)}" if names else "it holds nothing"
        raise ForeignDatabaseError(
            f"not a planfold database: a SQLite file of another application at schema version {version} ({holds}; "
            f"a planfold file has a sessions table with {', '.join(LEGACY_COLUMNS)}); nothing was changed"
        )
    verify_schema(conn, max(version, LEGACY_VERSION))
    return version


def check_sound(conn: Connection) -> None:
    """``PRAGMA integrity_check``: ``DamagedDatabaseError`` naming the first
    problems SQLite finds in the file's pages (reads only). A writer runs it
    before the first change it makes to a file (a migration, the switch to
    WAL), so that a damaged file is refused before it is written to."""
    rows = [str(row[0]) for row in conn.execute("PRAGMA integrity_check(5)").fetchall()]
    if rows != ["ok"]:
        raise DamagedDatabaseError(
            "open", f"the database file is damaged (integrity_check: {'; '.join(rows)})", code="damaged-database"
        )


def refuse_foreign(conn: Connection) -> None:
    """``recognise``, for a writer about to open the file: raises unless the
    file is planfold's (or new); reads only, so the file is left exactly as
    it was."""
    recognise(conn)


def columns(conn: Connection, table: str) -> dict[str, tuple[str, bool, object, bool]]:
    """``{name: (declared type, not null, default, primary key)}`` of ``table``
    (empty when the table does not exist)."""
    rows = conn.execute(f"PRAGMA table_info({table})").fetchall()
    return {r[1]: (str(r[2] or ""), bool(r[3]), r[4], bool(r[5])) for r in rows}


def _add_columns(conn: Connection, table: str, wanted: tuple[tuple[str, str], ...]) -> None:
    have = columns(conn, table)
    for name, decl in wanted:
        if name not in have:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {decl}")


def _step_base(conn: Connection) -> None:
    have = columns(conn, "sessions")
    if not have:
        conn.execute(
            "CREATE TABLE sessions ("
            " id TEXT PRIMARY KEY NOT NULL,"
            " title TEXT NOT NULL DEFAULT '',"
            " created_at_ms INTEGER NOT NULL DEFAULT 0,"
            " updated_at_ms INTEGER NOT NULL DEFAULT 0)"
        )
    elif "id" not in have:
        raise SchemaMismatchError("the existing sessions table has no 'id' column")


MODE_COLUMNS = (
    ("agent_mode", "TEXT NOT NULL DEFAULT 'build'"),
    ("current_plan_json", "TEXT NOT NULL DEFAULT ''"),
)
SUMMARY_COLUMNS = (("current_plan_summary_json", "TEXT NOT NULL DEFAULT ''"),)
LOG_COLUMNS = (
    ("plan_mode", "INTEGER NOT NULL DEFAULT 0"),
    ("goal_json", "TEXT NOT NULL DEFAULT ''"),
    ("log_seq", "INTEGER NOT NULL DEFAULT 0"),
    ("fold_state", "TEXT NOT NULL DEFAULT ''"),
    ("fold_format", "TEXT NOT NULL DEFAULT ''"),
    ("legacy_head_json", "TEXT NOT NULL DEFAULT ''"),
)
EVENT_COLUMNS = ("session_id", "seq", "kind", "at", "payload")
KEY_COLUMNS = ("session_id", "key", "request_hash", "first_seq", "last_seq")
LEASE_COLUMNS = ("session_id", "holder", "token", "expires_at", "ttl_ms")
GOAL_ID_COLUMNS = ("session_id", "goal_id", "seq")
FORK_COLUMNS = ("session_id", "source_session", "source_seq", "prefix_sha256")


def _step_mode(conn: Connection) -> None:
    _add_columns(conn, "sessions", MODE_COLUMNS)


def _step_summary(conn: Connection) -> None:
    _add_columns(conn, "sessions", SUMMARY_COLUMNS)


def _step_log(conn: Connection) -> None:
    _add_columns(conn, "sessions", LOG_COLUMNS)
    conn.execute(
        "CREATE TABLE IF NOT EXISTS events ("
        " session_id TEXT NOT NULL,"
        " seq INTEGER NOT NULL CHECK (seq >= 1),"
        " kind TEXT NOT NULL,"
        " at INTEGER NOT NULL,"
        " payload TEXT NOT NULL,"
        " PRIMARY KEY (session_id, seq)) WITHOUT ROWID"
    )
    conn.execute(
        "CREATE TABLE IF NOT EXISTS append_keys ("
        " session_id TEXT NOT NULL,"
        " key TEXT NOT NULL,"
        " request_hash TEXT NOT NULL,"
        " first_seq INTEGER NOT NULL,"
        " last_seq INTEGER NOT NULL,"
        " PRIMARY KEY (session_id, key)) WITHOUT ROWID"
    )
    # A legacy head with no log behind it: keep its values, reset the projection.
    conn.execute(
        "UPDATE sessions SET"
        " legacy_head_json = json_object('agent_mode', agent_mode, 'current_plan_json', current_plan_json,"
        "   'current_plan_summary_json', current_plan_summary_json),"
        " agent_mode = 'build', current_plan_json = '', current_plan_summary_json = ''"
        " WHERE log_seq = 0 AND legacy_head_json = ''"
        " AND (agent_mode <> 'build' OR current_plan_json <> '' OR current_plan_summary_json <> '')"
    )


def _step_leases(conn: Connection) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS goal_leases ("
        " session_id TEXT PRIMARY KEY NOT NULL,"
        " holder TEXT NOT NULL,"
        " token INTEGER NOT NULL,"
        " expires_at INTEGER NOT NULL,"
        " ttl_ms INTEGER NOT NULL) WITHOUT ROWID"
    )


def _step_goal_ids(conn: Connection) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS goal_ids ("
        " session_id TEXT NOT NULL,"
        " goal_id TEXT NOT NULL,"
        " seq INTEGER NOT NULL,"
        " PRIMARY KEY (session_id, goal_id)) WITHOUT ROWID"
    )
    # Every create already in the log (a log that reuses an id is refused by
    # its replay anyway; the first create of the id is the one kept).
    # CASE, not AND: SQLite may evaluate the terms of a WHERE in any order,
    # and json_extract of a payload that is not JSON is an error.
    conn.execute(
        "INSERT OR IGNORE INTO goal_ids (session_id, goal_id, seq)"
        " SELECT session_id, goal_id, seq FROM ("
        "  SELECT session_id, seq, CASE WHEN json_valid(payload) THEN"
        "   CASE WHEN json_extract(payload, '$.operation') = 'create' AND json_type(payload, '$.goal.id') = 'text'"
        "   THEN json_extract(payload, '$.goal.id') END END AS goal_id"
        "  FROM events WHERE kind = 'goal/change')"
        " WHERE goal_id IS NOT NULL ORDER BY session_id, seq"
    )


def _step_forks(conn: Connection) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS forks ("
        " session_id TEXT PRIMARY KEY NOT NULL,"
        " source_session TEXT NOT NULL,"
        " source_seq INTEGER NOT NULL,"
        " prefix_sha256 TEXT NOT NULL) WITHOUT ROWID"
    )


#: Every step, in order; the last one's version is ``SCHEMA_VERSION``.
STEPS: tuple[Step[Connection], ...] = (
    Step(LEGACY_VERSION, "legacy sessions table", _step_base),
    Step(3, "agent mode and current plan columns", _step_mode),
    Step(4, "plan summary cache column", _step_summary),
    Step(5, "event log, idempotency keys and projection columns", _step_log),
    Step(6, "goal leases", _step_leases),
    Step(7, "goal ids created by each session", _step_goal_ids),
    Step(8, "fork provenance", _step_forks),
)


def verify_schema(conn: Connection, version: int = SCHEMA_VERSION) -> None:
    """Raise ``SchemaMismatchError`` unless the tables match ``version``."""
    missing: list[str] = []
    wanted = {"sessions": ["id"]}
    if version >= 3:
        wanted["sessions"] += [name for name, _ in MODE_COLUMNS]
    if version >= 4:
        wanted["sessions"] += [name for name, _ in SUMMARY_COLUMNS]
    if version >= 5:
        wanted["sessions"] += [name for name, _ in LOG_COLUMNS]
        wanted["events"] = list(EVENT_COLUMNS)
        wanted["append_keys"] = list(KEY_COLUMNS)
    if version >= 6:
        wanted["goal_leases"] = list(LEASE_COLUMNS)
    if version >= 7:
        wanted["goal_ids"] = list(GOAL_ID_COLUMNS)
    if version >= 8:
        wanted["forks"] = list(FORK_COLUMNS)
    for table, names in wanted.items():
        have = columns(conn, table)
        missing += [f"{table}.{n}" for n in names if n not in have]
    if missing:
        raise SchemaMismatchError(f"schema version {version} promises {', '.join(missing)}, which are missing")


def migrate(conn: Connection, target: int = SCHEMA_VERSION) -> MigrationReport:
    """Bring the file forward to ``target`` atomically (see the module docstring).

    Raises ``SchemaTooNewError``, ``SchemaMismatchError`` or ``StorageError``;
    on any failure the file is exactly as it was.
    """
    if not LEGACY_VERSION <= target <= SCHEMA_VERSION:
        raise ValueError(f"no schema version {target}")
    committing = False
    try:
        before = supported(read_version(conn), SCHEMA_VERSION)
        applied: list[str] = []
        if before < target:
            conn.execute("BEGIN IMMEDIATE")
            try:
                before = supported(read_version(conn), SCHEMA_VERSION)  # another process may have migrated meanwhile
                for step in STEPS:
                    if before < step.version <= target:
                        step.apply(conn)
                        applied.append(step.name)
                if applied:
                    conn.execute(f"PRAGMA user_version = {int(target)}")
                committing = True
                conn.execute("COMMIT")
                committing = False
            except BaseException:
                rollback_quietly(conn)
                raise
        verify_schema(conn, max(before, target))
        return logged("SQLite", MigrationReport(before, max(before, target), tuple(applied)))
    except DRIVER_ERRORS as exc:
        raise translate(exc, "schema migration", "unknown" if committing else "not-applied") from exc
