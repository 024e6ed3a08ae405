"""``planfold report``: a SQLite file, a PostgreSQL URL or a JSON Lines log
in, one HTML page out (a file or stdout); the input is opened read-only and
never changed; a bad log exits 1 with its page; the careless operator's
paths are messages with exit status 2."""

from __future__ import annotations

import hashlib
import io
import os
import re
from pathlib import Path

import pytest

from planfold.adapters.cli.demo import run_demo
from planfold.adapters.cli.main import EXIT_STATUS
from tests.adapters.cli.running import run_cli


@pytest.fixture(scope="module")
def two_sessions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("report-cli") / "demo.sqlite"
    run_demo(str(db), io.StringIO())
    run_demo(str(db), io.StringIO())
    return db


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_session_of_a_database_is_reported_to_a_file_and_the_database_is_left_as_it_was(
    two_sessions: Path, tmp_path: Path
) -> None:
    before = _digest(two_sessions)
    sides = sorted(os.listdir(two_sessions.parent))
    out = tmp_path / "report.html"
    code, text, err = run_cli("report", "--db", str(two_sessions), "--session", "demo-1", "-o", str(out))
    assert (code, text, err) == (0, "", "")
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "session <code>demo-1</code>" in page
    assert _digest(two_sessions) == before and sorted(os.listdir(two_sessions.parent)) == sides
    code, text, _ = run_cli("report", "--db", str(two_sessions), "--session", "demo-2")
    assert code == 0 and text.startswith("<!DOCTYPE html>") and "demo-2" in text


def test_all_sessions_of_a_database_give_the_machines_coverage(two_sessions: Path) -> None:
    code, page, _ = run_cli("report", "--db", str(two_sessions), "--all")
    assert code == 0
    assert "every session of <code>" in page and "<code>demo-1</code>" in page and "<code>demo-2</code>" in page
    assert "approve</td><td class=\"num\">2</td>" in page
    assert "<code>demo-1</code>#16, <code>demo-2</code>#16" in page


def test_a_json_lines_log_is_reported_under_its_file_name(two_sessions: Path, tmp_path: Path) -> None:
    log = tmp_path / "audit-me.jsonl"
    assert run_cli("export", "--db", str(two_sessions), "--session", "demo-1", "-o", str(log))[0] == 0
    code, page, _ = run_cli("report", "--db", str(log))
    assert code == 0 and "session <code>audit-me</code>" in page and "passes the strict replay" in page
    code, page, _ = run_cli("report", "--db", "-", stdin=log.read_bytes())
    assert code == 0 and "session <code>stdin</code>" in page


def test_a_bad_log_gets_its_page_and_exit_status_1(two_sessions: Path, tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    assert run_cli("export", "--db", str(two_sessions), "--session", "demo-1", "-o", str(log))[0] == 0
    lines = log.read_bytes().splitlines(keepends=True)
    lines[19] = lines[19].replace(b'"plan_mode":false', b'"plan_mode":true')
    log.write_bytes(b"".join(lines))
    code, page, _ = run_cli("report", "--db", str(log))
    assert code == 1 and "BAD LOG at seq 20" in page and "header-mismatch" in page


def test_a_database_of_many_sessions_needs_a_session_or_all(two_sessions: Path) -> None:
    code, out, err = run_cli("report", "--db", str(two_sessions))
    assert (code, out) == (2, "") and "holds 2 sessions" in err and "--session" in err and "--all" in err
    code, _, err = run_cli("report", "--db", str(two_sessions), "--session", "demo-9")
    assert code == 2 and "no session 'demo-9'" in err
    code, _, err = run_cli("report", "--db", str(two_sessions), "--session", "demo-1", "--all")
    assert code == 2 and "not allowed with argument" in err


def test_a_report_never_overwrites_its_input_or_writes_into_a_directory(two_sessions: Path, tmp_path: Path) -> None:
    before = _digest(two_sessions)
    code, _, err = run_cli("report", "--db", str(two_sessions), "--session", "demo-1", "-o", str(two_sessions))
    assert code == 2 and "is the log itself" in err and _digest(two_sessions) == before
    code, _, err = run_cli("report", "--db", str(two_sessions), "--session", "demo-1", "-o", str(tmp_path))
    assert code == 2 and "is a directory" in err
    code, _, err = run_cli("report", "--db", str(tmp_path / "missing.sqlite"))
    assert code == 2 and "no such file" in err


def test_the_report_help_describes_every_option_and_the_exit_codes() -> None:
    code, text, _ = run_cli("report", "--help")
    assert code == 0 and EXIT_STATUS in text
    for option in ("--session", "--all"):
        assert option in text
    # argparse lays a short and long option pair out as "-o OUT, --output OUT" before
    # Python 3.13 and as "-o, --output OUT" from it on: either names both spellings
    assert re.search(r"^\s+-o( OUT)?, --output OUT\s", text, re.MULTILINE)
    assert "report" in run_cli("--help")[1]


def test_a_postgresql_session_is_reported_without_writing_to_the_database(pg_url: str) -> None:
    assert run_cli("demo", "--db", pg_url, "--json")[0] == 0
    import psycopg  # noqa: PLC0415  # the postgres extra

    def rows() -> list[tuple[object, ...]]:
        with psycopg.connect(pg_url) as conn:
            query = "SELECT session_id, seq, kind, at, payload FROM planfold_events ORDER BY 1, 2"
            return conn.execute(query).fetchall()

    before = rows()
    code, page, err = run_cli("report", "--db", pg_url)
    assert code == 0, err
    assert "session <code>demo-1</code>" in page and "passes the strict replay" in page
    assert rows() == before


def test_a_log_whose_file_name_is_not_utf8_is_reported_under_its_name_escaped(
    two_sessions: Path, tmp_path: Path
) -> None:
    log = Path(os.fsdecode(bytes(tmp_path) + b"/caf\xe9.jsonl"))
    assert run_cli("export", "--db", str(two_sessions), "--session", "demo-1", "-o", str(log))[0] == 0
    out = tmp_path / "r.html"
    code, _, err = run_cli("report", "--db", str(log), "-o", str(out))
    assert code == 0, err
    assert "session <code>caf\\xe9</code>" in out.read_text(encoding="utf-8")


def test_a_fork_is_reported_with_where_it_came_from_from_its_database_and_its_export(
    two_sessions: Path, tmp_path: Path
) -> None:
    db = tmp_path / "forked.sqlite"
    db.write_bytes(two_sessions.read_bytes())
    code, _, err = run_cli("fork", "--db", str(db), "demo-1", "early", "--at", "20")
    assert code == 0, err
    code, page, err = run_cli("report", "--db", str(db), "--session", "early")
    assert code == 0, err
    linked = '<a class="source-link" href="demo-1.html#ev-20"><code>demo-1</code></a> at seq 20'
    assert f"forked from</dt><dd>session {linked}" in page and "passes the strict replay" in page
    log = tmp_path / "early.jsonl"
    assert run_cli("export", "--db", str(db), "--session", "early", "-o", str(log))[0] == 0
    code, page, _ = run_cli("report", "--db", str(log))
    assert code == 0 and '<code>demo-1</code></a> at seq 20' in page
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:15] + lines[-1:]))  # the record claims 20 events; 15 are left
    code, page, _ = run_cli("report", "--db", str(log))
    assert code == 1 and "BAD LOG at line 16" in page and "provenance-mismatch" in page


def test_a_database_whose_stored_projection_does_not_match_its_log_fails_as_audit_fails(
    two_sessions: Path, tmp_path: Path
) -> None:
    import sqlite3  # noqa: PLC0415

    db = tmp_path / "tampered.sqlite"
    db.write_bytes(two_sessions.read_bytes())
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE sessions SET agent_mode = 'plan' WHERE id = 'demo-1'")
    conn.close()
    audit, said, _ = run_cli("audit", "--db", str(db), "--session", "demo-1")
    assert audit == 1 and "DOES NOT match the fold" in said
    code, page, _ = run_cli("report", "--db", str(db), "--session", "demo-1")
    assert code == 1
    assert "passes the" not in page and "FAILS the audit" in page and "agent_mode: stored" in page
    code, page, _ = run_cli("report", "--db", str(db), "--all")
    assert code == 1 and "1 session(s) fail the audit" in page
    code, page, _ = run_cli("report", "--db", str(db), "--session", "demo-2")
    assert code == 0 and "passes the audit" in page and "matches the fold (snapshot current)" in page


def test_an_output_in_a_missing_directory_is_named_as_given_in_the_error(two_sessions: Path, tmp_path: Path) -> None:
    missing = str(tmp_path / "nonexistent" / "x.html")
    code, text, err = run_cli("report", "--db", str(two_sessions), "--session", "demo-1", "-o", missing)
    assert code == 2 and text == ""
    assert err == f"planfold report: {missing}: No such file or directory\n" and ".planfold-export-" not in err
    assert not (tmp_path / "nonexistent").exists()
