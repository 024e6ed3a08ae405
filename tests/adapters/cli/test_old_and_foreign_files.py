"""The audit commands on SQLite files planfold did not write at its current
schema: an older planfold's file is read (every version a writer could
migrate) and left byte for byte as it was; another application's file is
refused by ``import`` before a byte of it changes."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from planfold.adapters.codec import encode_jsonl
from planfold.adapters.store.sqlite import SqliteStore
from planfold.adapters.store.sqlite_schema import LEGACY_VERSION, LOG_VERSION, SCHEMA_VERSION, migrate
from tests.adapters.cli.running import run_cli
from tests.adapters.sqlite_files import write_sqlite
from tests.storage_helpers import FULL_SCRIPT, LEGACY_SESSIONS, build_legacy_db, build_log


def _files(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


def _old_file(path: Path, version: int) -> None:
    """The legacy fixture at schema ``version`` (migrated that far)."""
    build_legacy_db(path, version=min(version, LEGACY_VERSION))
    if version > LEGACY_VERSION:
        conn = sqlite3.connect(path, isolation_level=None)
        migrate(conn, version)
        conn.close()


@pytest.mark.parametrize("version", range(LOG_VERSION))
@pytest.mark.parametrize("command", ["replay", "audit"])
def test_replay_and_audit_read_a_file_an_older_planfold_wrote_and_leave_its_bytes(
    tmp_path: Path, version: int, command: str
) -> None:
    db = tmp_path / "old.sqlite"
    _old_file(db, version)
    before = _files(tmp_path)
    code, out, err = run_cli(command, "--db", str(db), "--json")
    assert (code, err) == (0, ""), out
    body = json.loads(out)
    assert body["ok"] is True
    assert [s["session"] for s in body["sessions"]] == [sid for sid, *_ in LEGACY_SESSIONS]
    assert all(s["events"] == 0 for s in body["sessions"])
    code, out, err = run_cli(command, "--db", str(db), "--session", "legacy-1")
    assert code == 0 and out.startswith("legacy-1: ok, 0 events")
    code, out, err = run_cli(command, "--db", "-", stdin=before["old.sqlite"])  # a copy in memory, read the same way
    assert code == 0 and "legacy-2: ok" in out
    assert _files(tmp_path) == before


def test_export_of_an_older_file_leaves_it_as_it_was(tmp_path: Path) -> None:
    db = tmp_path / "old.sqlite"
    _old_file(db, LEGACY_VERSION)
    before = _files(tmp_path)
    code, out, err = run_cli("export", "--db", str(db), "--session", "legacy-1")
    assert (code, out, err) == (0, "", "")
    assert _files(tmp_path) == before


def test_an_import_into_an_older_file_migrates_it_and_audits(tmp_path: Path) -> None:
    db = tmp_path / "old.sqlite"
    _old_file(db, 3)
    log = tmp_path / "log.jsonl"
    log.write_bytes(encode_jsonl(build_log(FULL_SCRIPT).events))
    assert run_cli("import", str(log), "--db", str(db), "--session", "s")[0] == 0
    with SqliteStore(db) as store:
        assert store.settings()["user_version"] == SCHEMA_VERSION
    assert run_cli("audit", "--db", str(db))[0] == 0


FOREIGN = {
    "a users table": ("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)", "INSERT INTO users VALUES (1, 'ann')"),
    "a table and an index": ("CREATE TABLE notes (body TEXT)", "CREATE INDEX notes_body ON notes (body)"),
}


@pytest.mark.parametrize("statements", FOREIGN.values(), ids=FOREIGN.keys())
def test_an_import_into_another_applications_database_is_refused_and_leaves_it_byte_identical(
    tmp_path: Path, statements: tuple[str, ...]
) -> None:
    db = write_sqlite(tmp_path / "app.sqlite", *statements)
    log = tmp_path / "log.jsonl"
    log.write_bytes(encode_jsonl(build_log(FULL_SCRIPT).events))
    before = _files(tmp_path)
    code, out, err = run_cli("import", str(log), "--db", str(db), "--session", "s")
    assert code == 2 and out == "" and "another application" in err and "nothing was changed" in err
    code, out, _ = run_cli("import", str(log), "--db", str(db), "--session", "s", "--json")
    assert code == 2 and json.loads(out)["error"]["code"] == "foreign-database"
    code, _, err = run_cli("demo", "--db", str(db))
    assert code == 2 and "another application" in err
    assert _files(tmp_path) == before


def _web_sessions(path: Path) -> None:
    """A web framework's session store: planfold's table name, other columns."""
    write_sqlite(
        path,
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, data BLOB, expires INTEGER)",
        "INSERT INTO sessions VALUES ('k1', x'80037d71002e', 1700000000)",
    )


@pytest.mark.parametrize("command", ["replay", "audit"])
def test_replay_and_audit_refuse_a_web_frameworks_sessions_table_as_not_planfolds(tmp_path: Path, command: str) -> None:
    db = tmp_path / "other.sqlite"
    _web_sessions(db)
    before = _files(tmp_path)
    code, out, err = run_cli(command, str(db))
    assert code == 2 and out == "" and "not a planfold database" in err
    code, out, _ = run_cli(command, str(db), "--json")
    assert code == 2 and json.loads(out)["error"]["code"] == "not-a-planfold-database"
    code, _, err = run_cli(command, "-", stdin=before["other.sqlite"])
    assert code == 2 and "not a planfold database" in err
    assert _files(tmp_path) == before


def test_an_import_into_a_web_frameworks_sessions_table_is_refused_and_leaves_it_byte_identical(
    tmp_path: Path,
) -> None:
    db = tmp_path / "other.sqlite"
    _web_sessions(db)
    log = tmp_path / "log.jsonl"
    log.write_bytes(encode_jsonl(build_log(FULL_SCRIPT).events))
    before = _files(tmp_path)
    code, out, err = run_cli("import", str(log), "--db", str(db), "--session", "x")
    assert code == 2 and out == "" and "not a planfold database" in err
    code, out, _ = run_cli("import", str(log), "--db", str(db), "--session", "x", "--json")
    assert code == 2 and json.loads(out)["error"]["code"] == "foreign-database"
    assert _files(tmp_path) == before


@pytest.mark.parametrize("command", ["import", "export"])
def test_import_and_export_refuse_a_db_that_is_not_a_regular_file(tmp_path: Path, command: str) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    log = tmp_path / "log.jsonl"
    log.write_bytes(encode_jsonl(build_log(FULL_SCRIPT).events))
    for db in ("/dev/null", str(fifo)):
        argv = ["import", str(log)] if command == "import" else ["export"]
        code, out, _ = run_cli(*argv, "--db", db, "--session", "s", "--json")
        assert code == 2 and json.loads(out)["error"]["code"] == "not-a-file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "log.jsonl"]
