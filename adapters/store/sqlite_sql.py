"""The SQL the SQLite store runs.

Theory of operation
-------------------
Most statements are fixed text: reading a session's events in seq order,
inserting events (several rows per ``INSERT``, see ``insert_events_sql``), and
``APPEND_READ``, the one statement with which an append learns everything it
needs before it decides: the log's last seq, whether the session row exists
and its snapshot, what an idempotency key already answered and the session's
goal lease (``APPEND_READ_NO_KEY`` without the key, for an append that has
none: the join it spares was a fifth of the statement's cost).

The session row's ``INSERT`` and ``UPDATE`` depend on the file. A file
migrated from the legacy schema may carry columns of its own that are ``NOT
NULL`` without a default; a new row must give them a value, so ``row_sql``
builds both statements from the columns the file has, filling such columns
with the zero value of their declared affinity, and sets ``updated_at_ms``
only where the file has the time columns.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

__all__ = [
    "APPEND_READ",
    "APPEND_READ_NO_KEY",
    "HAS_TABLE",
    "INSERT_FORK",
    "INSERT_GOAL_ID",
    "INSERT_KEY",
    "INSERT_ROWS",
    "PROJECTION_COLUMNS",
    "SELECT_EVENTS",
    "SELECT_FORK",
    "SELECT_RANGE",
    "SELECT_ROW",
    "TIME_COLUMNS",
    "UPSERT_LEASE",
    "VIEW_READ_NO_LEASE",
    "RowSql",
    "insert_events_sql",
    "row_sql",
    "used_goal_ids_sql",
]

#: The session row's columns that every append writes, in the order the
#: statements of ``row_sql`` take them.
PROJECTION_COLUMNS = (
    "agent_mode",
    "plan_mode",
    "current_plan_json",
    "current_plan_summary_json",
    "goal_json",
    "log_seq",
    "fold_state",
    "fold_format",
)
#: The legacy time columns, written when the file has them.
TIME_COLUMNS = ("created_at_ms", "updated_at_ms")

#: A session's events after a seq, in order.
SELECT_EVENTS = "SELECT seq, kind, at, payload FROM events WHERE session_id = ? AND seq > ? ORDER BY seq"

#: A session's events after a seq and up to another, in order.
SELECT_RANGE = "SELECT seq, kind, at, payload FROM events WHERE session_id = ? AND seq > ? AND seq <= ? ORDER BY seq"

#: A session's row: its projection (log seq first) and its snapshot.
SELECT_ROW = (
    "SELECT log_seq, agent_mode, plan_mode, current_plan_json, current_plan_summary_json, goal_json,"
    " fold_format, fold_state FROM sessions WHERE id = ?"
)

#: What an append reads, in one statement: the log's head, whether the
#: session row exists and its snapshot, what the idempotency key (NULL when
#: there is none) already answered, and the session's goal lease.
#: Parameters: session id, key.
APPEND_READ = (
    "SELECT COALESCE((SELECT MAX(seq) FROM events WHERE session_id = ?1), 0),"
    " s.id IS NOT NULL, s.fold_format, s.fold_state,"
    " k.request_hash, k.first_seq, k.last_seq, k.key IS NOT NULL,"
    " l.holder, l.token, l.expires_at, l.ttl_ms"
    " FROM (SELECT 1) LEFT JOIN sessions AS s ON s.id = ?1"
    " LEFT JOIN append_keys AS k ON k.session_id = ?1 AND k.key = ?2"
    " LEFT JOIN goal_leases AS l ON l.session_id = ?1"
)

#: ``APPEND_READ`` for an append without an idempotency key: the same
#: columns but the key's four. Parameter: session id.
APPEND_READ_NO_KEY = (
    "SELECT COALESCE((SELECT MAX(seq) FROM events WHERE session_id = ?1), 0),"
    " s.id IS NOT NULL, s.fold_format, s.fold_state,"
    " l.holder, l.token, l.expires_at, l.ttl_ms"
    " FROM (SELECT 1) LEFT JOIN sessions AS s ON s.id = ?1"
    " LEFT JOIN goal_leases AS l ON l.session_id = ?1"
)

#: ``APPEND_READ_NO_KEY`` for a file without the leases table (an older
#: version, opened read-only): the same columns, the lease's NULL.
VIEW_READ_NO_LEASE = (
    "SELECT COALESCE((SELECT MAX(seq) FROM events WHERE session_id = ?1), 0),"
    " s.id IS NOT NULL, s.fold_format, s.fold_state, NULL, NULL, NULL, NULL"
    " FROM (SELECT 1) LEFT JOIN sessions AS s ON s.id = ?1"
)

#: Write a session's goal lease (session id, holder, token, expiry, ttl).
UPSERT_LEASE = (
    "INSERT INTO goal_leases (session_id, holder, token, expires_at, ttl_ms) VALUES (?, ?, ?, ?, ?)"
    " ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder, token = excluded.token,"
    " expires_at = excluded.expires_at, ttl_ms = excluded.ttl_ms"
)

#: A row when the file has the named table (a file opened read-only may
#: predate the leases and the forks).
HAS_TABLE = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
#: A forked session's provenance.
SELECT_FORK = "SELECT source_session, source_seq, prefix_sha256 FROM forks WHERE session_id = ?"
#: Record a forked session's provenance (session id, source, seq, prefix hash).
INSERT_FORK = "INSERT INTO forks (session_id, source_session, source_seq, prefix_sha256) VALUES (?, ?, ?, ?)"

#: Record what an idempotency key answered (session id, key, request hash, first and last seq).
INSERT_KEY = "INSERT INTO append_keys (session_id, key, request_hash, first_seq, last_seq) VALUES (?, ?, ?, ?, ?)"

#: Record a goal id a session created (session id, goal id, seq of the create).
INSERT_GOAL_ID = "INSERT INTO goal_ids (session_id, goal_id, seq) VALUES (?, ?, ?)"


@functools.lru_cache(maxsize=8)
def used_goal_ids_sql(count: int) -> str:
    """Which of ``count`` goal ids (after the session id) the session has created."""
    return "SELECT goal_id FROM goal_ids WHERE session_id = ? AND goal_id IN (" + ", ".join("?" * count) + ")"


#: Events per multi-row INSERT (5 parameters each, far below SQLite's limit).
INSERT_ROWS = 200


@functools.lru_cache(maxsize=8)
def insert_events_sql(rows: int) -> str:
    """One ``INSERT`` of ``rows`` events (session id, seq, kind, at, payload each)."""
    return "INSERT INTO events (session_id, seq, kind, at, payload) VALUES " + ", ".join(["(?, ?, ?, ?, ?)"] * rows)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _zero(declared: str) -> object:
    """SQLite's affinity rules, reduced to a zero value per affinity."""
    upper = declared.upper()
    if "INT" in upper:
        return 0
    if any(word in upper for word in ("CHAR", "CLOB", "TEXT")):
        return ""
    if "BLOB" in upper or not upper:
        return b""
    return 0


@dataclass(frozen=True, slots=True)
class RowSql:
    """The session row's statements for one file.

    ``insert`` takes the id, the ``PROJECTION_COLUMNS``, then (when ``timed``)
    created and updated times, then ``fill``; ``update`` takes the
    ``PROJECTION_COLUMNS``, then (when ``timed``) the updated time, then the id.
    """

    insert: str
    update: str
    fill: tuple[object, ...]
    timed: bool


def row_sql(have: dict[str, tuple[str, bool, object, bool]]) -> RowSql:
    """The statements for a sessions table with the columns ``have``
    (``{name: (declared type, not null, default, primary key)}``)."""
    ours = {"id", *PROJECTION_COLUMNS}
    timed = all(name in have for name in TIME_COLUMNS)
    fill = {
        name: _zero(decl)
        for name, (decl, not_null, default, pk) in have.items()
        if not_null and default is None and not pk and name not in ours and name not in TIME_COLUMNS
    }
    names = ["id", *PROJECTION_COLUMNS, *(TIME_COLUMNS if timed else ()), *fill]
    insert = f"INSERT INTO sessions ({', '.join(map(_quote, names))}) VALUES ({', '.join('?' * len(names))})"
    sets = [*PROJECTION_COLUMNS, *(("updated_at_ms",) if timed else ())]
    update = f"UPDATE sessions SET {', '.join(f'{_quote(n)} = ?' for n in sets)} WHERE id = ?"
    return RowSql(insert, update, tuple(fill.values()), timed)
