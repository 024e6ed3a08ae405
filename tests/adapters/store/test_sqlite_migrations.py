"""Schema versions and forward migrations, on real database files the tests
build: a legacy coding-agent sessions table (no plan/build columns), its first
plan/build release (no summary column), a fresh file, and files we must refuse."""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

import msgspec
import pytest

from planfold.adapters.store.base import (
    AppendRequest,
    InvalidRequestError,
    SchemaMismatchError,
    SchemaTooNewError,
    StorageError,
)
from planfold.adapters.store.projection import Projection, project
from planfold.adapters.store.sqlite import SqliteStore
from planfold.adapters.store.sqlite_readonly import open_read_only
from planfold.adapters.store.sqlite_schema import LEGACY_VERSION, SCHEMA_VERSION, STEPS, columns, migrate, read_version
from planfold.kernel.session import SessionState
from tests.adapters.sqlite_files import write_sqlite
from tests.adapters.store.migrated import check_forks_after_the_forks_step
from tests.storage_helpers import FULL_SCRIPT, LEGACY_SESSIONS, batch_after, build_legacy_db, build_log, dump_db

NEW_COLUMNS = {
    "agent_mode": "'build'",
    "current_plan_json": "''",
    "current_plan_summary_json": "''",
    "plan_mode": "0",
    "goal_json": "''",
    "log_seq": "0",
    "fold_state": "''",
    "fold_format": "''",
    "legacy_head_json": "''",
}


@pytest.fixture
def legacy(tmp_path: Path) -> Path:
    path = tmp_path / "legacy.db"
    build_legacy_db(path)
    return path


def legacy_rows(path: Path) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT id, title, created_at_ms, task_state_json, todos_json, last_seq, message_count"
            " FROM sessions ORDER BY id"
        ).fetchall()
    finally:
        conn.close()


# --------------------------------------------------------------------------
# Seed 000, Test Plan lines 1-3 (storage side)


def test_seed000_old_sessions_load_after_migration_with_default_fields(legacy: Path) -> None:
    """Line 1: after the schema migration old sessions load and the new fields
    have the right defaults."""
    before = legacy_rows(legacy)
    with SqliteStore(legacy) as store:
        assert store.migration is not None
        assert (store.migration.from_version, store.migration.to_version) == (LEGACY_VERSION, SCHEMA_VERSION)
        assert store.session_ids() == tuple(sid for sid, *_ in LEGACY_SESSIONS)
        for sid, *_ in LEGACY_SESSIONS:
            assert store.load(sid) == SessionState()
            assert store.load(sid, incremental=True) == SessionState()
            assert store.projection(sid) == Projection()
            assert store.read(sid) == ()
            assert store.audit(sid).ok
    have = columns(sqlite3.connect(legacy), "sessions")
    for name, default in NEW_COLUMNS.items():
        _, not_null, stored_default, _ = have[name]
        assert not_null and stored_default == default, name
    assert legacy_rows(legacy) == before  # every legacy value is kept
    assert dump_db(legacy)["rows"]["messages"] == [
        (sid, seq, role, f'[{{"text":"{role}"}}]', at)
        for sid, _, at, _ in LEGACY_SESSIONS
        for seq, role in ((1, "user"), (2, "assistant"))
    ]


def test_seed000_old_sessions_default_to_build_with_no_plan(legacy: Path) -> None:
    """Line 2: old sessions default to agent_mode=build, and CurrentPlan=nil is
    legal: they load, project, audit and take new events from seq 1."""
    with SqliteStore(legacy) as store:
        for sid, *_ in LEGACY_SESSIONS:
            proj = store.projection(sid)
            assert proj.agent_mode == "build" and proj.plan_mode is False
            assert proj.current_plan_json == ""  # no plan, and that is a valid state
            state = store.load(sid)
            assert state.agent_mode == "build" and state.plan.current is None and state.goal.current is None
        log = build_log(FULL_SCRIPT).events
        store.append(AppendRequest("legacy-1", 0, log))
        assert store.projection("legacy-1") == project(build_log(FULL_SCRIPT).state)
        assert store.audit("legacy-1").ok
    conn = sqlite3.connect(legacy)
    row = conn.execute("SELECT title, updated_at_ms FROM sessions WHERE id = 'legacy-1'").fetchone()
    assert row == ("Fix the parser", log[-1].at)


def test_seed000_missing_summary_column_is_added_and_rebuilt_on_read(tmp_path: Path) -> None:
    """Line 3: a file from the first plan/build release has agent_mode and
    current_plan_json but no current_plan_summary_json; migrating adds it with
    its default, and an empty summary is rebuilt from the plan on read."""
    path = tmp_path / "v3.db"
    build_legacy_db(path, version=3, plan_columns=True)
    assert "current_plan_summary_json" not in columns(sqlite3.connect(path), "sessions")
    with SqliteStore(path) as store:
        assert store.migration is not None and store.migration.from_version == 3
        assert "current_plan_summary_json" in columns(sqlite3.connect(path), "sessions")
        for sid, *_ in LEGACY_SESSIONS:
            assert store.projection(sid).current_plan_summary_json == ""
            assert store.audit(sid).ok
        builder = build_log(FULL_SCRIPT)
        store.append(AppendRequest("legacy-2", 0, builder.events))
        expected = project(builder.state).current_plan_summary_json
        assert expected != ""
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("UPDATE sessions SET current_plan_summary_json = '' WHERE id = 'legacy-2'")
        assert store.projection("legacy-2").current_plan_summary_json == expected
        assert store.audit("legacy-2").ok  # "" means rebuild on read, not a mismatch


def test_a_legacy_plan_without_a_log_is_kept_aside_and_the_session_is_build(tmp_path: Path) -> None:
    path = tmp_path / "v3.db"
    build_legacy_db(path, version=3, plan_columns=True)
    with SqliteStore(path) as store:
        assert store.projection("legacy-1") == Projection()
        assert store.audit("legacy-1").ok
    conn = sqlite3.connect(path)
    kept = conn.execute("SELECT legacy_head_json FROM sessions WHERE id = 'legacy-1'").fetchone()[0]
    assert msgspec.json.decode(kept) == {
        "agent_mode": "plan",
        "current_plan_json": '{"id":"old"}',
        "current_plan_summary_json": "",
    }
    assert conn.execute("SELECT legacy_head_json FROM sessions WHERE id = 'legacy-2'").fetchone()[0] == ""


# --------------------------------------------------------------------------
# Atomic, idempotent, ordered


def test_a_fresh_file_gets_every_step(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "new.db") as store:
        assert store.migration is not None
        assert store.migration.applied == tuple(step.name for step in STEPS)
        assert store.settings()["user_version"] == SCHEMA_VERSION
        store.append(AppendRequest("s", 0, batch_after(0, 3)))
        assert store.audit("s").ok


def test_migrating_again_changes_nothing(legacy: Path) -> None:
    SqliteStore(legacy).close()
    once = dump_db(legacy)
    with SqliteStore(legacy) as store:
        assert store.migration is not None and store.migration.applied == ()
    assert dump_db(legacy) == once
    conn = sqlite3.connect(legacy, isolation_level=None)
    report = migrate(conn)
    assert report.applied == () and report.from_version == SCHEMA_VERSION
    assert dump_db(legacy) == once


def test_rerunning_every_step_on_a_migrated_file_changes_nothing(legacy: Path) -> None:
    with SqliteStore(legacy) as store:
        store.append(AppendRequest("legacy-1", 0, batch_after(0, 2)))
    once = dump_db(legacy)
    conn = sqlite3.connect(legacy, isolation_level=None)
    conn.execute(f"PRAGMA user_version = {LEGACY_VERSION}")
    report = migrate(conn)
    assert len(report.applied) == len(STEPS) - 1
    assert dump_db(legacy) == once


def test_step_by_step_equals_all_at_once(tmp_path: Path) -> None:
    one, many = tmp_path / "one.db", tmp_path / "many.db"
    build_legacy_db(one)
    build_legacy_db(many)
    migrate(sqlite3.connect(one, isolation_level=None))
    conn = sqlite3.connect(many, isolation_level=None)
    for target in range(LEGACY_VERSION + 1, SCHEMA_VERSION + 1):
        report = migrate(conn, target)
        assert (report.from_version, report.to_version) == (target - 1, target)
        assert read_version(conn) == target
    assert dump_db(one) == dump_db(many)


def test_no_such_target_version() -> None:
    with pytest.raises(ValueError, match="no schema version"):
        migrate(sqlite3.connect(":memory:"), SCHEMA_VERSION + 1)


@pytest.mark.parametrize("round_", range(30))
def test_concurrent_openers_migrate_the_file_once(tmp_path: Path, round_: int) -> None:
    # Several openers at once also race to switch the file to WAL, which SQLite
    # answers with an immediate SQLITE_BUSY; the store must wait it out.
    path = tmp_path / f"legacy-{round_}.db"
    build_legacy_db(path)
    openers = 6
    barrier = threading.Barrier(openers)
    reports: list[tuple[str, ...]] = []
    errors: list[BaseException] = []

    def opener() -> None:
        try:
            barrier.wait(timeout=10)
            with SqliteStore(path) as store:
                assert store.migration is not None
                reports.append(store.migration.applied)
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=opener) for _ in range(openers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert sorted(map(len, reports)) == [0] * (openers - 1) + [len(STEPS) - 1]


# --------------------------------------------------------------------------
# Files we refuse, untouched


def test_a_newer_file_is_refused_clearly_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY, hologram BLOB)")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    raw = path.read_bytes()
    with pytest.raises(SchemaTooNewError) as info:
        SqliteStore(path)
    err = info.value
    assert (err.found, err.supported, err.code) == (SCHEMA_VERSION + 1, SCHEMA_VERSION, "schema-too-new")
    assert "newer" in err.message
    assert path.read_bytes() == raw
    with pytest.raises(SchemaTooNewError):
        migrate(sqlite3.connect(path, isolation_level=None))


def test_a_sessions_table_without_an_id_is_refused_as_not_planfolds_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "foreign.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE sessions (token TEXT, expires INTEGER)")
    conn.commit()
    conn.close()
    before = dump_db(path)
    with pytest.raises(SchemaMismatchError) as info:
        SqliteStore(path)
    assert info.value.code == "foreign-database" and "not a planfold database" in info.value.message
    assert dump_db(path) == before


def test_a_file_missing_what_its_version_promises_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "broken.db"
    SqliteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE append_keys")
    conn.commit()
    conn.close()
    with pytest.raises(SchemaMismatchError, match=r"append_keys\.session_id"):
        SqliteStore(path)


@pytest.mark.parametrize("content", [b"this is not a database, just text" * 200, b"\x00" * 4096])
def test_a_file_that_is_not_a_database_is_a_typed_damaged_database_failure(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "junk.db"
    path.write_bytes(content)
    with pytest.raises(StorageError) as info:
        SqliteStore(path)
    assert info.value.code == "damaged-database" and info.value.operation == "open"
    assert "file is not a database" in info.value.message
    assert isinstance(info.value.__cause__, sqlite3.Error)  # kept for debugging, never raised


def test_an_unopenable_path_is_a_typed_storage_failure(tmp_path: Path) -> None:
    with pytest.raises(StorageError) as info:
        SqliteStore(tmp_path / "no" / "such" / "dir" / "x.db")
    assert info.value.operation == "open"


# --------------------------------------------------------------------------
# Connection settings


def test_wal_and_synchronous_full_by_default(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "d.db") as store:
        assert store.settings() == {
            "journal_mode": "wal",
            "synchronous": 2,
            "busy_timeout": 15_000,
            "user_version": SCHEMA_VERSION,
        }


def test_synchronous_normal_only_when_asked(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "d.db", synchronous="normal", busy_timeout_ms=250) as store:
        assert store.settings()["synchronous"] == 1
        assert store.settings()["busy_timeout"] == 250


@pytest.mark.parametrize(
    "kwargs", [{"synchronous": "off"}, {"synchronous": "FULL"}, {"busy_timeout_ms": -1}, {"busy_timeout_ms": True}]
)
def test_bad_options_are_refused(tmp_path: Path, kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidRequestError):
        SqliteStore(tmp_path / "d.db", **kwargs)  # type: ignore[arg-type]
    assert not (tmp_path / "d.db").exists()


def test_a_new_session_in_a_legacy_table_fills_its_required_columns(legacy: Path) -> None:
    with SqliteStore(legacy) as store:
        store.append(AppendRequest("fresh", 0, batch_after(0, 2)))
        assert store.session_ids() == ("fresh", "legacy-1", "legacy-2")
    conn = sqlite3.connect(legacy)
    row = conn.execute(
        "SELECT title, created_at_ms, updated_at_ms, task_state_json, todos_json, last_seq FROM sessions"
        " WHERE id = 'fresh'"
    ).fetchone()
    assert row == ("", 10, 20, "", "", 0)


def test_a_file_with_a_log_gets_the_goal_ids_its_creates_used(full_log_file: Path) -> None:
    path = write_sqlite(
        full_log_file,
        "DROP TABLE goal_ids",
        # A hand-edited row whose payload is not JSON does not stop the migration.
        "INSERT INTO events VALUES ('t', 1, 'goal/change', 1, 'not json')",
        "PRAGMA user_version = 6",
    )
    log = build_log(FULL_SCRIPT).events
    with SqliteStore(path) as store:
        assert store.migration is not None
        assert store.migration.applied == ("goal ids created by each session", "fork provenance")
        assert store.load("s", incremental=True) == store.load("s") and store.audit("s").ok
    created = sorted(
        ("s", e.payload["goal"]["id"], e.seq)  # type: ignore[index,call-overload]
        for e in log
        if e.kind == "goal/change" and e.payload.get("operation") == "create"
    )
    conn = sqlite3.connect(path)
    try:
        assert created and conn.execute("SELECT * FROM goal_ids ORDER BY 1, 2").fetchall() == created
    finally:
        conn.close()


def test_a_migration_that_runs_steps_is_logged_and_one_that_runs_none_is_not(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="planfold.adapters.store.migration"):
        SqliteStore(tmp_path / "new.db").close()
        SqliteStore(tmp_path / "new.db").close()
    (record,) = [r for r in caplog.records if r.name == "planfold.adapters.store.migration"]
    assert record.levelno == logging.INFO
    names = ", ".join(step.name for step in STEPS)
    assert record.getMessage() == f"SQLite schema migrated from version 0 to {SCHEMA_VERSION}: {names}"


def test_a_file_from_before_forks_moves_forward_and_its_sessions_fork(full_log_file: Path) -> None:
    path = write_sqlite(full_log_file, "DROP TABLE forks", "PRAGMA user_version = 7")
    with open_read_only(str(path)) as reader:  # read as it is: a file from before forks has none
        assert reader.provenance("s") is None and reader.audit("s").ok
    with SqliteStore(path) as store:
        provenance = check_forks_after_the_forks_step(store, 7)
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT * FROM forks").fetchall() == [("f", "s", 10, provenance.prefix_sha256)]
    finally:
        conn.close()
