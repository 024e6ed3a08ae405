"""The PostgreSQL store's schema, connections and errors: forward migrations
run once and atomically, a newer or broken database is refused and left as it
is, a read-only store writes nothing, a session lock held too long is
``store-busy``, an unreachable server is ``store-unavailable``, and a store
used in a forked child opens its own connections."""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

import psycopg
import pytest

import planfold.adapters.store.postgres as postgres_module
from planfold.adapters.store.base import (
    AppendRequest,
    SchemaMismatchError,
    SchemaTooNewError,
    StorageError,
    StoreBusyError,
    StoreUnavailableError,
)
from planfold.adapters.store.opener import is_postgres_url, open_store
from planfold.adapters.store.postgres import PostgresStore
from planfold.adapters.store.postgres_schema import SCHEMA_VERSION, STEPS, migrate
from planfold.adapters.store.sqlite import SqliteStore
from planfold.kernel.session import fold_session
from tests.adapters.store.migrated import check_forks_after_the_forks_step
from tests.adapters.store.processes import run_in_a_forked_child
from tests.storage_helpers import FULL_SCRIPT, batch_after, build_log


def dump(url: str) -> dict[str, Any]:
    """Every planfold table of the URL's schema with all its rows."""
    with psycopg.connect(url) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
                " ORDER BY table_name"
            )
        ]
        rows = {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in tables}
        rows.pop("planfold_schema", None)  # its times differ from run to run
        versions = (
            conn.execute("SELECT version, name FROM planfold_schema ORDER BY version").fetchall()
            if "planfold_schema" in tables
            else []
        )
    return {"tables": tables, "rows": rows, "versions": versions}


def sql(url: str, statement: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(statement)


# --------------------------------------------------------------------------
# Migrations


def test_a_fresh_database_gets_every_step_and_records_them(pg_url: str) -> None:
    with PostgresStore(pg_url) as store:
        assert store.migration is not None
        assert (store.migration.from_version, store.migration.applied) == (0, tuple(s.name for s in STEPS))
        assert store.settings()["schema_version"] == SCHEMA_VERSION
        store.append(AppendRequest("s", 0, batch_after(0, 3)))
        assert store.audit("s").ok
    assert dump(pg_url)["versions"] == [(s.version, s.name) for s in STEPS]


def test_a_database_at_version_1_moves_forward_and_keeps_its_log(pg_url: str) -> None:
    log = build_log(FULL_SCRIPT).events
    with PostgresStore(pg_url) as store:
        store.append(AppendRequest("s", 0, log, "k"))
    sql(
        pg_url,
        "DROP TABLE planfold_leases, planfold_goal_ids, planfold_forks; DROP FUNCTION planfold_append;"
        " DELETE FROM planfold_schema WHERE version >= 2",
    )
    # A hand-edited row whose payload is not JSON does not stop the migration.
    sql(pg_url, "INSERT INTO planfold_events VALUES ('t', 1, 'goal/change', 1, 'not json')")
    with PostgresStore(pg_url) as store:
        assert store.migration is not None
        assert (store.migration.from_version, store.migration.to_version) == (1, SCHEMA_VERSION)
        assert store.migration.applied == (
            "goal leases", "goal ids created by each session", "the append function", "fork provenance"
        )
        assert store.load("s") == fold_session(log)
        assert store.audit("s").ok
        assert store.append(AppendRequest("s", 0, log, "k")).replayed
        assert store.acquire_lease("s", "host-a", 1_000).token == 1
    created = sorted(("s", goal["id"], e.seq) for e in log if (goal := _created_goal(e.payload)) is not None)
    assert created and dump(pg_url)["rows"]["planfold_goal_ids"] == created


def test_a_database_from_before_the_append_function_moves_forward_and_appends_in_one_statement(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = build_log(FULL_SCRIPT).events
    with PostgresStore(pg_url) as store:
        store.append(AppendRequest("s", 0, log[:-3], "k"))
    sql(
        pg_url,
        "DROP FUNCTION planfold_append; DROP TABLE planfold_forks; DELETE FROM planfold_schema WHERE version >= 4",
    )
    with PostgresStore(pg_url) as store:
        assert store.migration is not None
        assert (store.migration.from_version, store.migration.to_version) == (3, SCHEMA_VERSION)
        assert store.migration.applied == ("the append function", "fork provenance")
        statements: list[object] = []
        call = postgres_module.call_append

        def counted(conn: Any, args: Any) -> str | None:
            statements.append(args)
            return call(conn, args)

        monkeypatch.setattr(postgres_module, "call_append", counted)
        store.load("s", incremental=True)  # the state the next appends build on
        assert store.append(AppendRequest("s", 0, log[:-3], "k")).replayed
        for event in log[-3:]:
            store.append(AppendRequest("s", event.seq - 1, [event]))
        assert len(statements) == 4
        assert store.load("s") == fold_session(log)
        assert store.audit("s").ok


def test_a_database_from_before_forks_moves_forward_and_its_sessions_fork(pg_url: str) -> None:
    log = build_log(FULL_SCRIPT).events
    with PostgresStore(pg_url) as store:
        store.append(AppendRequest("s", 0, log))
    sql(pg_url, "DROP TABLE planfold_forks; DELETE FROM planfold_schema WHERE version = 5")
    with PostgresStore(pg_url) as store:
        provenance = check_forks_after_the_forks_step(store, 4)
    assert dump(pg_url)["rows"]["planfold_forks"] == [("f", "s", 10, provenance.prefix_sha256)]


def _created_goal(payload: Any) -> Any:
    """The goal a goal/change create payload creates, else None."""
    return payload.get("goal") if payload.get("operation") == "create" else None


def test_opening_a_migrated_database_again_changes_nothing(pg_url: str) -> None:
    with PostgresStore(pg_url) as store:
        store.append(AppendRequest("s", 0, batch_after(0, 2)))
    once = dump(pg_url)
    with PostgresStore(pg_url) as store:
        assert store.migration is not None and store.migration.applied == ()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert migrate(conn).applied == ()
    assert dump(pg_url) == once


def test_no_such_target_version(pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn, pytest.raises(ValueError, match="no schema version"):
        migrate(conn, SCHEMA_VERSION + 1)


@pytest.mark.parametrize("round_", range(3))
def test_concurrent_openers_migrate_the_database_once(pg_url: str, round_: int) -> None:
    openers = 6
    barrier = threading.Barrier(openers)
    outcomes: list[object] = []

    def open_one() -> None:
        barrier.wait(30)
        try:
            with PostgresStore(pg_url, pool_size=1) as store:
                outcomes.append(store.migration.applied if store.migration else None)
        except Exception as exc:  # reported below
            outcomes.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(openers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    applied = [o for o in outcomes if o]
    assert len(outcomes) == openers and all(isinstance(o, tuple) for o in outcomes), outcomes
    assert applied == [tuple(s.name for s in STEPS)]  # exactly one opener migrated
    assert dump(pg_url)["versions"] == [(s.version, s.name) for s in STEPS]


def test_a_newer_database_is_refused_clearly_and_left_untouched(pg_url: str) -> None:
    with PostgresStore(pg_url) as store:
        store.append(AppendRequest("s", 0, batch_after(0, 2)))
    sql(pg_url, f"INSERT INTO planfold_schema (version, name) VALUES ({SCHEMA_VERSION + 1}, 'from the future')")
    before = dump(pg_url)
    for read_only in (False, True):
        with pytest.raises(SchemaTooNewError) as info:
            PostgresStore(pg_url, read_only=read_only)
        err = info.value
        assert (err.found, err.supported, err.code) == (SCHEMA_VERSION + 1, SCHEMA_VERSION, "schema-too-new")
    assert dump(pg_url) == before


#: What a database at the current version must hold, dropped, and what the refusal names.
PROMISED = {
    "the append function": ("DROP FUNCTION planfold_append", r"function planfold_append\(text, bigint"),
    "the append keys table": ("DROP TABLE planfold_append_keys", r"planfold_append_keys\.session_id"),
}


@pytest.mark.parametrize(("drop", "named"), PROMISED.values(), ids=PROMISED.keys())
def test_a_database_missing_what_its_version_promises_is_refused(pg_url: str, drop: str, named: str) -> None:
    PostgresStore(pg_url).close()
    sql(pg_url, drop)
    with pytest.raises(SchemaMismatchError, match=named):
        PostgresStore(pg_url)


# --------------------------------------------------------------------------
# Read-only stores


def test_a_read_only_store_reads_and_audits_but_the_server_refuses_its_writes(pg_url: str) -> None:
    log = build_log(FULL_SCRIPT).events
    with PostgresStore(pg_url) as store:
        store.append(AppendRequest("s", 0, log))
    before = dump(pg_url)
    with open_store(pg_url, read_only=True) as store:
        assert store.load("s") == fold_session(log)
        assert store.audit("s").ok and store.session_ids() == ("s",)
        with pytest.raises(StorageError) as info:
            store.append(AppendRequest("s", len(log), batch_after(len(log), 1)))
        assert info.value.outcome == "not-applied" and "ReadOnlySqlTransaction" in info.value.detail
        with pytest.raises(StorageError):
            store.acquire_lease("s", "host-a", 1_000)
    assert dump(pg_url) == before


def test_a_read_only_store_refuses_a_database_that_is_not_planfolds_and_creates_nothing(pg_url: str) -> None:
    with pytest.raises(SchemaMismatchError, match="not a planfold database"):
        PostgresStore(pg_url, read_only=True)
    assert dump(pg_url)["tables"] == []


def test_a_read_only_store_refuses_an_older_layout_only_a_writer_may_migrate(pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        migrate(conn, 1)
    with pytest.raises(SchemaMismatchError, match="open it for writing once"):
        PostgresStore(pg_url, read_only=True)


# --------------------------------------------------------------------------
# Connections and their errors


def test_a_session_lock_held_past_the_busy_timeout_is_store_busy_and_writes_nothing(pg_url: str) -> None:
    with PostgresStore(pg_url, busy_timeout_ms=50) as store, psycopg.connect(pg_url, autocommit=True) as blocker:
        store.append(AppendRequest("s", 0, batch_after(0, 1)))
        blocker.execute("SELECT pg_advisory_lock(hashtextextended('s', 0))")
        with pytest.raises(StoreBusyError) as info:
            store.append(AppendRequest("s", 1, batch_after(1, 1)))
        assert (info.value.code, info.value.outcome) == ("store-busy", "not-applied")
        assert store.append(AppendRequest("other", 0, batch_after(0, 1))).last_seq == 1  # other sessions do not wait
        blocker.execute("SELECT pg_advisory_unlock_all()")
        assert store.append(AppendRequest("s", 1, batch_after(1, 1))).last_seq == 2


def test_an_unreachable_server_is_a_typed_store_unavailable_error(tmp_path: Any) -> None:
    url = f"postgresql://postgres@/postgres?host={tmp_path}"
    with pytest.raises(StoreUnavailableError) as info:
        PostgresStore(url, timeout=1)
    assert (info.value.code, info.value.operation) == ("store-unreachable", "open")
    assert isinstance(info.value.__cause__, psycopg.Error)  # kept for debugging, never raised


def test_urls_open_postgresql_and_anything_else_a_sqlite_file(pg_url: str, tmp_path: Any) -> None:
    assert is_postgres_url(pg_url) and is_postgres_url("postgres://h/db") and not is_postgres_url("x.db")
    with open_store(pg_url) as store:
        assert isinstance(store, PostgresStore)
    with open_store(str(tmp_path / "x.db")) as store:
        assert isinstance(store, SqliteStore)


def forked_child(store: PostgresStore, out: Any) -> None:
    try:
        head = store.head("s")
        store.append(AppendRequest("s", head, batch_after(head, 2)))
        out.put(("ok", store.head("s")))
    except Exception as exc:
        out.put(("error", repr(exc)))


def test_a_store_used_in_a_forked_child_opens_its_own_connections(pg_url: str) -> None:
    with PostgresStore(pg_url) as store:
        store.append(AppendRequest("s", 0, batch_after(0, 1)))
        result, _ = run_in_a_forked_child(forked_child, store)
        assert result == ("ok", 3)
        assert store.head("s") == 3  # the parent's pool still works and sees the child's commit
        store.append(AppendRequest("s", 3, batch_after(3, 1)))
        assert store.audit("s").ok
        assert os.getpid() == store.backend._pid


def test_a_migration_of_a_database_is_logged_once(pg_url: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="planfold.adapters.store.migration"):
        PostgresStore(pg_url).close()
        PostgresStore(pg_url).close()  # nothing left to do: nothing logged
    (record,) = [r for r in caplog.records if r.name == "planfold.adapters.store.migration"]
    names = ", ".join(step.name for step in STEPS)
    assert record.getMessage() == f"PostgreSQL schema migrated from version 0 to {SCHEMA_VERSION}: {names}"
