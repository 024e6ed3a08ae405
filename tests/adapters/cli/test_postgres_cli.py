"""The ``planfold`` command on a PostgreSQL URL: the demo writes its session
there and the audit of the same URL passes; replay, audit and export read
the database without writing to it; a session exported from PostgreSQL and
imported into SQLite exports byte for byte the same JSON Lines, and back."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import psycopg

from planfold.adapters.cli.main import main
from planfold.adapters.store.postgres import PostgresStore
from tests.pg_cluster import Cluster


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), out=out, err=err, stdin=io.BytesIO())
    return status, out.getvalue(), err.getvalue()


def rows(url: str) -> list[tuple[object, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT session_id, seq, kind, at, payload FROM planfold_events ORDER BY 1, 2").fetchall()


def test_the_demo_on_a_postgresql_url_then_its_audit_pass(pg_url: str) -> None:
    status, out, err = run("demo", "--db", pg_url, "--json")
    assert status == 0, err
    summary = json.loads(out)
    assert summary["ok"] is True and summary["session"] == "demo-1"
    status, out, err = run("audit", pg_url, "--json")
    assert status == 0, out + err
    report = json.loads(out)
    assert report["ok"] is True
    assert [s["session"] for s in report["sessions"]] == ["demo-1"]
    assert report["sessions"][0]["projection"]["mismatches"] == []
    assert run("demo", "--db", pg_url, "--json")[0] == 0  # a second run adds demo-2
    with PostgresStore(pg_url) as store:
        assert store.session_ids() == ("demo-1", "demo-2")


def test_replay_audit_and_export_read_a_postgresql_database_without_writing(pg_url: str, tmp_path: Path) -> None:
    assert run("demo", "--db", pg_url, "--json")[0] == 0
    before = rows(pg_url)
    for command in (["replay", pg_url], ["audit", pg_url, "--session", "demo-1"]):
        status, out, err = run(*command)
        assert status == 0, out + err
        assert "demo-1" in out
    assert run("export", "--db", pg_url, "--session", "demo-1", "-o", str(tmp_path / "x.jsonl"))[0] == 0
    assert rows(pg_url) == before


def test_a_session_exported_from_postgresql_and_imported_into_sqlite_exports_byte_identical(
    pg_url: str, tmp_path: Path
) -> None:
    assert run("demo", "--db", pg_url, "--json")[0] == 0
    from_pg, from_sqlite, back = tmp_path / "pg.jsonl", tmp_path / "sqlite.jsonl", tmp_path / "back.jsonl"
    assert run("export", "--db", pg_url, "--session", "demo-1", "-o", str(from_pg))[0] == 0
    db = tmp_path / "copy.sqlite"
    status, out, err = run("import", str(from_pg), "--db", str(db), "--session", "copy")
    assert status == 0, out + err
    assert run("export", "--db", str(db), "--session", "copy", "-o", str(from_sqlite))[0] == 0
    assert from_sqlite.read_bytes() == from_pg.read_bytes()
    assert run("import", str(from_sqlite), "--db", pg_url, "--session", "again")[0] == 0
    assert run("export", "--db", pg_url, "--session", "again", "-o", str(back))[0] == 0
    assert back.read_bytes() == from_pg.read_bytes()
    assert run("audit", pg_url, "--session", "again")[0] == 0


def test_an_import_into_a_filled_postgresql_session_is_refused_and_writes_nothing(
    pg_url: str, tmp_path: Path
) -> None:
    assert run("demo", "--db", pg_url, "--json")[0] == 0
    log = tmp_path / "log.jsonl"
    assert run("export", "--db", pg_url, "--session", "demo-1", "-o", str(log))[0] == 0
    before = rows(pg_url)
    status, out, _ = run("import", str(log), "--db", pg_url, "--session", "demo-1", "--json")
    assert status == 2
    assert json.loads(out)["error"]["code"] == "already-imported"
    assert rows(pg_url) == before


def test_a_postgresql_url_that_is_not_a_planfold_database_is_refused_by_the_readers(pg_url: str) -> None:
    status, out, _ = run("audit", pg_url, "--json")
    assert status == 2
    assert json.loads(out)["error"]["code"] == "schema-mismatch"
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT to_regclass('planfold_schema')").fetchone() == (None,)


def test_an_audit_of_a_url_naming_no_database_fails_at_once_with_the_drivers_message(pg_cluster: Cluster) -> None:
    url = pg_cluster.url("no_such_database").replace("postgres@", "postgres:hunter2@")
    started = time.monotonic()
    status, out, err = run("audit", url)
    assert time.monotonic() - started < 2.0  # not a pool timeout (30 s)
    assert status == 2 and out == ""
    assert 'database "no_such_database" does not exist' in err
    assert "hunter2" not in err and "postgres:***@" in err
    status, out, _ = run("audit", url, "--json")
    assert status == 2 and json.loads(out)["error"]["code"] == "store-unreachable"
    assert "hunter2" not in out


def test_serve_takes_a_connect_timeout_and_fails_at_once_on_a_wrong_url(pg_cluster: Cluster) -> None:
    url = pg_cluster.url("no_such_database")
    status, _, err = run("serve", "--db", url, "--connect-timeout", "1")
    assert status == 2
    assert 'database "no_such_database" does not exist' in err
    assert run("serve", "--db", url, "--connect-timeout", "0")[0] == 2  # a usage error
