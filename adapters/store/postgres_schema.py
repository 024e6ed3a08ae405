"""The PostgreSQL schema: versions, forward migrations, the SQL, and
driver-error translation.

Theory of operation
-------------------
Every table is prefixed ``planfold_`` so the store can share a database (and
a schema, chosen by the connection's ``search_path``) with other software.
``planfold_schema`` records every step applied (version, name, time); the
database's version is the largest. Each step in ``STEPS`` moves one version
forward:

====  ==========================================================================
 1    the event log (``planfold_events``, primary key ``(session_id, seq)``),
      the session rows (``planfold_sessions``: the projection and the fold
      snapshot) and idempotency keys (``planfold_append_keys``)
 2    goal leases (``planfold_leases``: holder, fencing token, expiry, ttl)
 3    the goal ids each session has created (``planfold_goal_ids``, primary
      key ``(session_id, goal_id)``, with the seq of the create), filled from
      the log: an append checks a create against it instead of carrying
      every id in the snapshot it rewrites
 4    the one-statement append: the function ``planfold_append`` (see
      ``APPEND_FUNCTION``)
 5    fork provenance (``planfold_forks``: one row per forked session with
      its source session, the seq it was forked at and the hash of the
      prefix)
====  ==========================================================================

``migrate`` runs every pending step in ONE transaction under an advisory
lock, re-reading the version under the lock, so concurrent openers migrate
once and a failed migration leaves the database as it was. A database whose
version is above ``SCHEMA_VERSION`` is refused with ``SchemaTooNewError`` and
left untouched; one whose tables do not match its version is
``SchemaMismatchError``.

``translate`` turns any psycopg exception into the adapters' typed errors:
lock and serialization failures are ``store-busy``, a lost or refused
connection is ``store-unavailable``, anything else ``storage-failure``. No
driver exception leaves the PostgreSQL modules.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg

from .base import (
    Outcome,
    SchemaMismatchError,
    StorageError,
    StoreBusyError,
    StoreUnavailableError,
)
from .migration import MigrationReport, Step, logged, supported

__all__ = [
    "APPEND_CALL",
    "APPEND_CALL_PARAMS",
    "APPEND_FUNCTION",
    "APPEND_READ",
    "CHANNEL",
    "INSERT_EVENTS",
    "INSERT_FORK",
    "INSERT_GOAL_IDS",
    "INSERT_KEY",
    "LOCK_SESSION",
    "NOTIFY",
    "ROUTINES",
    "SCHEMA_VERSION",
    "SELECT_EVENTS",
    "SELECT_FORK",
    "SELECT_RANGE",
    "SELECT_ROW",
    "SESSION_IDS",
    "STEPS",
    "TABLES",
    "UPSERT_LEASE",
    "UPSERT_ROW",
    "USED_GOAL_IDS",
    "MigrationReport",
    "Step",
    "connection_lost",
    "driver_message",
    "migrate",
    "read_version",
    "translate",
]

#: The newest layout this code reads and writes.
SCHEMA_VERSION = 5

#: The LISTEN/NOTIFY channel appends announce themselves on (payload: the session id).
CHANNEL = "planfold_events"

#: The advisory lock (two-key form) that serialises migrations.
_MIGRATION_LOCK = (0x706C66, 1)

#: The database's clock in integer milliseconds, read when the statement runs.
_NOW_MS = "floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint"

#: The write lock of one session for the rest of the transaction. Advisory
#: locks take effect at once; the statements after it read what was committed
#: before it was granted (READ COMMITTED takes a new snapshot per statement).
LOCK_SESSION = "SELECT pg_advisory_xact_lock(hashtextextended(%s::text, 0))"

#: Everything an append reads, in one statement: the log's head, whether the
#: session row exists and its snapshot, what the idempotency key (NULL when
#: there is none) already answered, the goal lease, and the database's clock.
APPEND_READ = (
    "SELECT COALESCE((SELECT MAX(seq) FROM planfold_events WHERE session_id = %(s)s::text), 0),"
    " s.id IS NOT NULL, s.fold_format, s.fold_state,"
    " k.request_hash, k.first_seq, k.last_seq, k.key IS NOT NULL,"
    f" l.holder, l.token, l.expires_at, l.ttl_ms, {_NOW_MS}"
    " FROM (SELECT 1) AS one"
    " LEFT JOIN planfold_sessions AS s ON s.id = %(s)s::text"
    " LEFT JOIN planfold_append_keys AS k ON k.session_id = %(s)s::text AND k.key = %(k)s::text"
    " LEFT JOIN planfold_leases AS l ON l.session_id = %(s)s::text"
)

UPSERT_LEASE = (
    "INSERT INTO planfold_leases (session_id, holder, token, expires_at, ttl_ms) VALUES (%s, %s, %s, %s, %s)"
    " ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder, token = excluded.token,"
    " expires_at = excluded.expires_at, ttl_ms = excluded.ttl_ms"
)

#: Announce an append to followers (channel, session id).
NOTIFY = "SELECT pg_notify(%s, %s)"

SELECT_EVENTS = (
    "SELECT seq, kind, at, payload FROM planfold_events WHERE session_id = %s::text AND seq > %s ORDER BY seq"
)

#: A session's events after a seq and up to another, in order.
SELECT_RANGE = (
    "SELECT seq, kind, at, payload FROM planfold_events"
    " WHERE session_id = %s::text AND seq > %s AND seq <= %s ORDER BY seq"
)

SELECT_ROW = (
    "SELECT log_seq, agent_mode, plan_mode, current_plan_json, current_plan_summary_json, goal_json,"
    " fold_format, fold_state FROM planfold_sessions WHERE id = %s::text"
)

#: Every session, in code-point order (as Python and SQLite sort text).
SESSION_IDS = 'SELECT id FROM planfold_sessions ORDER BY id COLLATE "C"'

#: The events of one append, in one statement whatever their number.
INSERT_EVENTS = (
    "INSERT INTO planfold_events (session_id, seq, kind, at, payload)"
    " SELECT %s::text, * FROM unnest(%s::bigint[], %s::text[], %s::bigint[], %s::text[])"
)

#: The session row: the projection and the snapshot (created once, then updated).
UPSERT_ROW = (
    "INSERT INTO planfold_sessions (id, agent_mode, plan_mode, current_plan_json, current_plan_summary_json,"
    " goal_json, log_seq, fold_state, fold_format, created_at, updated_at)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
    " ON CONFLICT (id) DO UPDATE SET agent_mode = excluded.agent_mode, plan_mode = excluded.plan_mode,"
    " current_plan_json = excluded.current_plan_json,"
    " current_plan_summary_json = excluded.current_plan_summary_json, goal_json = excluded.goal_json,"
    " log_seq = excluded.log_seq, fold_state = excluded.fold_state, fold_format = excluded.fold_format,"
    " updated_at = excluded.updated_at"
)

INSERT_KEY = (
    "INSERT INTO planfold_append_keys (session_id, key, request_hash, first_seq, last_seq) VALUES (%s, %s, %s, %s, %s)"
)

#: A forked session's provenance.
SELECT_FORK = "SELECT source_session, source_seq, prefix_sha256 FROM planfold_forks WHERE session_id = %s::text"
#: Record a forked session's provenance (session id, source, seq, prefix hash).
INSERT_FORK = (
    "INSERT INTO planfold_forks (session_id, source_session, source_seq, prefix_sha256) VALUES (%s, %s, %s, %s)"
)

#: Which of some goal ids (an array) the session has created.
USED_GOAL_IDS = "SELECT goal_id FROM planfold_goal_ids WHERE session_id = %s::text AND goal_id = ANY(%s::text[])"

#: Record the goal ids an append creates (session id, ids, seqs of the creates).
INSERT_GOAL_IDS = (
    "INSERT INTO planfold_goal_ids (session_id, goal_id, seq) SELECT %s::text, * FROM unnest(%s::text[], %s::bigint[])"
)


#: One append as one statement, its own transaction (created by step 4). The
#: caller decided the append on a state it holds and names the stored
#: snapshot that state was read from (``p_has_row``, ``p_base_format``,
#: ``p_base_state``). Under the session's lock (``LOCK_SESSION``'s) the
#: function makes every check a store makes before it writes: the key
#: (``p_key``, NULL for none) is new, the log's head is ``p_expected``, a
#: fenced append (``p_holder``, ``p_token``) holds the live lease and an
#: unfenced one that starts a goal round (``p_round``) meets no live lease, no
#: goal id the events create (``p_goals``: a JSON array of ``{"id", "seq"}``,
#: NULL for none) is one the session has used, and the session row holds
#: exactly the base snapshot (or, without ``p_has_row``, that there is no row).
#: When they all hold it writes the session row (the projection and the new
#: snapshot), the lease's extension by ``p_ttl``, the events (``p_events``: a
#: JSON array of ``{"seq", "kind", "at", "payload"}``, the payload's exact
#: text), the key with its request hash, the goal ids, and ``NOTIFY``s
#: followers with ``p_announce``; it answers NULL. Otherwise it writes nothing
#: and answers, as a JSON array, the columns of ``APPEND_READ`` read under the
#: lock, from which the caller draws its answer. ``p_now`` replaces the
#: database's clock (milliseconds) when it is not NULL.
APPEND_FUNCTION = f"""
CREATE OR REPLACE FUNCTION planfold_append(
  p_session text, p_expected bigint, p_has_row boolean, p_base_format text, p_base_state text,
  p_key text, p_hash text, p_holder text, p_token bigint, p_ttl bigint, p_round boolean, p_now bigint,
  p_events json, p_goals json, p_first_at bigint, p_last_at bigint, p_announce text,
  p_agent_mode text, p_plan_mode boolean, p_plan text, p_summary text, p_goal text, p_log_seq bigint,
  p_state text, p_format text) RETURNS text
LANGUAGE plpgsql AS $fn$
DECLARE
  v_head bigint; v_has_row boolean; v_format text; v_state text;
  v_hash text; v_first bigint; v_last bigint; v_known boolean;
  v_holder text; v_token bigint; v_expires bigint; v_ttl bigint; v_now bigint;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended(p_session, 0));
  <<decide>>
  BEGIN
    IF p_key IS NOT NULL THEN
      PERFORM FROM planfold_append_keys WHERE session_id = p_session AND key = p_key;
      IF FOUND THEN EXIT decide; END IF;
    END IF;
    SELECT MAX(seq) INTO v_head FROM planfold_events WHERE session_id = p_session;
    IF COALESCE(v_head, 0) <> p_expected THEN EXIT decide; END IF;
    IF p_holder IS NOT NULL OR p_round THEN
      SELECT holder, token, expires_at, COALESCE(p_now, {_NOW_MS}) INTO v_holder, v_token, v_expires, v_now
      FROM planfold_leases WHERE session_id = p_session;
      IF p_holder IS NOT NULL THEN
        IF v_holder IS DISTINCT FROM p_holder OR v_token IS DISTINCT FROM p_token OR v_expires <= v_now THEN
          EXIT decide;
        END IF;
      ELSIF v_holder <> '' AND v_expires > v_now THEN
        EXIT decide;
      END IF;
    END IF;
    IF p_goals IS NOT NULL THEN
      PERFORM FROM planfold_goal_ids AS g, json_to_recordset(p_goals) AS c(id text, seq bigint)
      WHERE g.session_id = p_session AND g.goal_id = c.id;
      IF FOUND THEN EXIT decide; END IF;
    END IF;
    IF p_has_row THEN
      UPDATE planfold_sessions SET agent_mode = p_agent_mode, plan_mode = p_plan_mode,
        current_plan_json = p_plan, current_plan_summary_json = p_summary, goal_json = p_goal,
        log_seq = p_log_seq, fold_state = p_state, fold_format = p_format, updated_at = p_last_at
      WHERE id = p_session AND fold_format = p_base_format AND fold_state = p_base_state;
      IF NOT FOUND THEN EXIT decide; END IF;
    ELSE
      PERFORM FROM planfold_sessions WHERE id = p_session;
      IF FOUND THEN EXIT decide; END IF;
      INSERT INTO planfold_sessions (id, agent_mode, plan_mode, current_plan_json, current_plan_summary_json,
        goal_json, log_seq, fold_state, fold_format, created_at, updated_at)
      VALUES (p_session, p_agent_mode, p_plan_mode, p_plan, p_summary, p_goal, p_log_seq, p_state, p_format,
        p_first_at, p_last_at);
    END IF;
    -- Every check held: the rest only writes.
    IF p_holder IS NOT NULL THEN
      UPDATE planfold_leases SET expires_at = v_now + p_ttl, ttl_ms = p_ttl WHERE session_id = p_session;
    END IF;
    INSERT INTO planfold_events (session_id, seq, kind, at, payload)
    SELECT p_session, e.seq, e.kind, e.at, e.payload
    FROM json_to_recordset(p_events) AS e(seq bigint, kind text, at bigint, payload text);
    IF p_key IS NOT NULL THEN
      INSERT INTO planfold_append_keys (session_id, key, request_hash, first_seq, last_seq)
      VALUES (p_session, p_key, p_hash, p_expected + 1, p_log_seq);
    END IF;
    IF p_goals IS NOT NULL THEN
      INSERT INTO planfold_goal_ids (session_id, goal_id, seq)
      SELECT p_session, c.id, c.seq FROM json_to_recordset(p_goals) AS c(id text, seq bigint);
    END IF;
    PERFORM pg_notify('{CHANNEL}', p_announce);
    RETURN NULL;
  END;
  -- Refused: nothing was written; answer what an append reads.
  SELECT COALESCE((SELECT MAX(e.seq) FROM planfold_events AS e WHERE e.session_id = p_session), 0),
    s.id IS NOT NULL, s.fold_format, s.fold_state,
    k.request_hash, k.first_seq, k.last_seq, k.key IS NOT NULL,
    l.holder, l.token, l.expires_at, l.ttl_ms, COALESCE(p_now, {_NOW_MS})
  INTO v_head, v_has_row, v_format, v_state, v_hash, v_first, v_last, v_known,
    v_holder, v_token, v_expires, v_ttl, v_now
  FROM (SELECT 1) AS one
  LEFT JOIN planfold_sessions AS s ON s.id = p_session
  LEFT JOIN planfold_append_keys AS k ON k.session_id = p_session AND k.key = p_key
  LEFT JOIN planfold_leases AS l ON l.session_id = p_session;
  RETURN json_build_array(v_head, v_has_row, v_format, v_state, v_hash, v_first, v_last, v_known,
    v_holder, v_token, v_expires, v_ttl, v_now)::text;
END
$fn$
"""

#: The types of ``planfold_append``'s arguments, in order.
_APPEND_TYPES = (
    "text", "bigint", "boolean", "text", "text", "text", "text", "text", "bigint", "bigint", "boolean", "bigint",
    "json", "json", "bigint", "bigint", "text", "text", "boolean", "text", "text", "text", "bigint", "text", "text",
)  # fmt: skip

#: A call of ``planfold_append``, its arguments as libpq parameters ``$1``, ``$2``, ...
#: ``APPEND_CALL`` with psycopg's placeholders, for a psycopg cursor (the async store's).
APPEND_CALL_PARAMS = "SELECT planfold_append(" + ", ".join(f"%s::{t}" for t in _APPEND_TYPES) + ")"
APPEND_CALL = "SELECT planfold_append(" + ", ".join(f"${i}::{t}" for i, t in enumerate(_APPEND_TYPES, 1)) + ")"

# --------------------------------------------------------------------------
# Errors

#: SQLSTATEs of a lock or snapshot that could not be had: try again.
_BUSY = {"55P03", "40P01", "40001", "57014"}
#: SQLSTATEs of a server that went away or refuses connections now.
_GONE = {"57P01", "57P02", "57P03"}


def connection_lost(exc: psycopg.Error) -> bool:
    """True when ``exc`` says the connection failed rather than a statement."""
    state = exc.sqlstate or ""
    return isinstance(exc, psycopg.OperationalError) and (not state or state.startswith("08") or state in _GONE)


def driver_message(exc: BaseException) -> str:
    """The driver's message of ``exc`` on one line. libpq writes a failed
    connection on several: one line per server address it tried, each hint
    on a line of its own indented by a tab. An indented line is a new
    sentence of its line (after ``. ``, or a space when the line already
    ends one); the next address's line follows after ``; ``."""
    text = ""
    for line in str(exc).splitlines():
        said = line.strip()
        if not said:
            continue
        if not text:
            text = said
        elif not line[:1].isspace():
            text = f"{text}; {said}"
        else:
            text = f"{text}{' ' if text.endswith(('.', '?', '!', ':', ';')) else '. '}{said}"
    return text


def translate(exc: psycopg.Error, operation: str, outcome: Outcome = "not-applied") -> StorageError:
    """The typed error for a driver exception raised during ``operation``
    (the driver's message on one line: ``driver_message``)."""
    state = exc.sqlstate or ""
    detail = f"{type(exc).__name__}{f' [{state}]' if state else ''}: {driver_message(exc)}"
    if state in _BUSY:
        return StoreBusyError(operation, detail, outcome=outcome)
    if connection_lost(exc):
        return StoreUnavailableError(operation, detail, outcome=outcome)
    return StorageError(operation, detail, outcome=outcome)


# --------------------------------------------------------------------------
# Versions

Connection = psycopg.Connection[Any]


def _step_log(conn: Connection) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS planfold_sessions ("
        " id text PRIMARY KEY,"
        " agent_mode text NOT NULL DEFAULT 'build',"
        " plan_mode boolean NOT NULL DEFAULT false,"
        " current_plan_json text NOT NULL DEFAULT '',"
        " current_plan_summary_json text NOT NULL DEFAULT '',"
        " goal_json text NOT NULL DEFAULT '',"
        " log_seq bigint NOT NULL DEFAULT 0,"
        " fold_state text NOT NULL DEFAULT '',"
        " fold_format text NOT NULL DEFAULT '',"
        " created_at bigint NOT NULL DEFAULT 0,"
        " updated_at bigint NOT NULL DEFAULT 0)"
    )
    conn.execute(
        "CREATE TABLE IF NOT EXISTS planfold_events ("
        " session_id text NOT NULL,"
        " seq bigint NOT NULL CHECK (seq >= 1),"
        " kind text NOT NULL,"
        " at bigint NOT NULL,"
        " payload text NOT NULL,"
        " PRIMARY KEY (session_id, seq))"
    )
    conn.execute(
        "CREATE TABLE IF NOT EXISTS planfold_append_keys ("
        " session_id text NOT NULL,"
        " key text NOT NULL,"
        " request_hash text NOT NULL,"
        " first_seq bigint NOT NULL,"
        " last_seq bigint NOT NULL,"
        " PRIMARY KEY (session_id, key))"
    )


def _step_append_function(conn: Connection) -> None:
    conn.execute(APPEND_FUNCTION)


def _step_leases(conn: Connection) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS planfold_leases ("
        " session_id text PRIMARY KEY,"
        " holder text NOT NULL,"
        " token bigint NOT NULL,"
        " expires_at bigint NOT NULL,"
        " ttl_ms bigint NOT NULL)"
    )


def _step_goal_ids(conn: Connection) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS planfold_goal_ids ("
        " session_id text NOT NULL,"
        " goal_id text NOT NULL,"
        " seq bigint NOT NULL,"
        " PRIMARY KEY (session_id, goal_id))"
    )
    # Every create already in the log (a log that reuses an id is refused by
    # its replay anyway; the first create of the id is the one kept). Read
    # here rather than cast in SQL: a stored payload that is not JSON would
    # make a cast fail the whole migration.
    rows = conn.execute(
        "SELECT session_id, seq, payload FROM planfold_events WHERE kind = 'goal/change' ORDER BY session_id, seq"
    )
    created: dict[tuple[str, str], int] = {}
    for session_id, seq, payload in rows:
        goal_id = _created_goal_id(payload)
        if goal_id is not None:
            created.setdefault((session_id, goal_id), seq)
    if created:
        sessions, goal_ids = zip(*created, strict=True)
        conn.execute(
            "INSERT INTO planfold_goal_ids (session_id, goal_id, seq)"
            " SELECT * FROM unnest(%s::text[], %s::text[], %s::bigint[])",
            (list(sessions), list(goal_ids), list(created.values())),
        )


def _created_goal_id(payload: object) -> str | None:
    """The goal id a stored ``goal/change`` payload creates, if it is a create."""
    try:
        body = json.loads(payload) if isinstance(payload, str) else None
    except ValueError:
        return None
    goal = body.get("goal") if isinstance(body, dict) and body.get("operation") == "create" else None
    goal_id = goal.get("id") if isinstance(goal, dict) else None
    return goal_id if isinstance(goal_id, str) else None


def _step_forks(conn: Connection) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS planfold_forks ("
        " session_id text PRIMARY KEY,"
        " source_session text NOT NULL,"
        " source_seq bigint NOT NULL,"
        " prefix_sha256 text NOT NULL)"
    )


#: Every step, in order; the last one's version is ``SCHEMA_VERSION``.
STEPS: tuple[Step[Connection], ...] = (
    Step(1, "event log, session rows and idempotency keys", _step_log),
    Step(2, "goal leases", _step_leases),
    Step(3, "goal ids created by each session", _step_goal_ids),
    Step(4, "the append function", _step_append_function),
    Step(5, "fork provenance", _step_forks),
)

#: The columns each version promises, by table.
TABLES: dict[int, dict[str, tuple[str, ...]]] = {
    1: {
        "planfold_sessions": (
            "id", "agent_mode", "plan_mode", "current_plan_json", "current_plan_summary_json", "goal_json",
            "log_seq", "fold_state", "fold_format", "created_at", "updated_at",
        ),
        "planfold_events": ("session_id", "seq", "kind", "at", "payload"),
        "planfold_append_keys": ("session_id", "key", "request_hash", "first_seq", "last_seq"),
    },
    2: {"planfold_leases": ("session_id", "holder", "token", "expires_at", "ttl_ms")},
    3: {"planfold_goal_ids": ("session_id", "goal_id", "seq")},
    5: {"planfold_forks": ("session_id", "source_session", "source_seq", "prefix_sha256")},
}  # fmt: skip

#: The functions each version promises, by their signatures.
ROUTINES: dict[int, tuple[str, ...]] = {
    4: (f"planfold_append({', '.join(_APPEND_TYPES)})",),
}


def read_version(conn: Connection) -> int:
    """The database's schema version (0 when planfold never touched it)."""
    row = conn.execute("SELECT to_regclass('planfold_schema') IS NOT NULL").fetchone()
    if row is None or not row[0]:
        return 0
    found = conn.execute("SELECT COALESCE(MAX(version), 0) FROM planfold_schema").fetchone()
    return 0 if found is None else int(found[0])


def _verify(conn: Connection, version: int) -> None:
    missing: list[str] = []
    for since, tables in TABLES.items():
        if since > version:
            continue
        for table, names in tables.items():
            have = {
                r[0]
                for r in conn.execute(
                    "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attnum > 0"
                    " AND NOT attisdropped",
                    (table,),
                )
            }
            missing += [f"{table}.{n}" for n in names if n not in have]
    for since, routines in ROUTINES.items():
        if since <= version:
            for routine in routines:
                row = conn.execute("SELECT to_regprocedure(%s) IS NOT NULL", (routine,)).fetchone()
                missing += [] if row is not None and row[0] else [f"function {routine}"]
    if missing:
        raise SchemaMismatchError(f"schema version {version} promises {', '.join(missing)}, which are missing")


def migrate(conn: Connection, target: int = SCHEMA_VERSION) -> MigrationReport:
    """Bring the database forward to ``target`` atomically (see the module
    docstring) on an autocommit connection. Raises ``SchemaTooNewError``,
    ``SchemaMismatchError`` or ``StorageError``; on any failure the database
    is as it was."""
    if not 1 <= target <= SCHEMA_VERSION:
        raise ValueError(f"no schema version {target}")
    try:
        before = supported(read_version(conn), SCHEMA_VERSION)
        applied: list[str] = []
        if before < target:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", _MIGRATION_LOCK)
                # Under the lock, read the version from the table itself: a
                # name lookup may still see the catalog as it was before the
                # lock was granted, but creating (or finding) and reading the
                # table takes its locks, which brings the catalog up to date.
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS planfold_schema (version integer PRIMARY KEY,"
                    " name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
                )
                found = conn.execute("SELECT COALESCE(MAX(version), 0) FROM planfold_schema").fetchone()
                # Another process may have migrated meanwhile.
                before = supported(0 if found is None else int(found[0]), SCHEMA_VERSION)
                for step in STEPS:
                    if before < step.version <= target:
                        step.apply(conn)
                        conn.execute(
                            "INSERT INTO planfold_schema (version, name) VALUES (%s, %s)", (step.version, step.name)
                        )
                        applied.append(step.name)
        after = max(before, target)
        _verify(conn, after)
        return logged("PostgreSQL", MigrationReport(before, after, tuple(applied)))
    except psycopg.Error as exc:
        raise translate(exc, "schema migration", "unknown" if connection_lost(exc) else "not-applied") from exc
