"""``planfold fork`` and forks in the other commands: a fork of the demo's
session at every seq, on each backend, audits clean and exports as the
source's first N lines plus its fork record; ``--turn K`` rewinds to turn
K's start; refusals are exit status 2 with nothing written; ``audit`` and
``replay`` show provenance, ``import`` keeps it, and a bad fork record in a
JSON Lines log is a bad log (exit status 1) at its line."""

from __future__ import annotations

import io
import json
import os
import shutil
import sqlite3
import stat
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from planfold.adapters.cli.main import main
from planfold.adapters.codec import encode_jsonl
from planfold.adapters.provenance import ForkProvenance, encode_fork_record, prefix_digest
from planfold.adapters.store.base import export_session, import_session
from planfold.adapters.store.memory import MemoryStore
from planfold.adapters.store.postgres import PostgresStore
from planfold.adapters.store.sqlite import SqliteStore
from planfold.kernel.log import TURN_START
from tests.storage_helpers import FULL_SCRIPT, build_legacy_db, build_log


@pytest.fixture
def db(demo_db: Path, tmp_path: Path) -> Path:
    """A copy of the demo's database for a test that writes to it."""
    copy = tmp_path / "demo.sqlite"
    shutil.copy(demo_db, copy)
    return copy


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), out=out, err=err, stdin=io.BytesIO())
    return status, out.getvalue(), err.getvalue()


def lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def _check_every_fork_by_command(target: str, source: bytes) -> None:
    """Fork the demo's session at every seq through the command line, audit
    each fork and compare its export with the source's first lines."""
    count = len(lines(source))
    for at in range(1, count + 1):
        new = f"fork-{at}"
        status, out, err = run("fork", "--db", target, "demo-1", new, "--at", str(at), "--json")
        assert status == 0, out + err
        provenance = ForkProvenance("demo-1", at, json.loads(out)["fork"]["prefix_sha256"])
        status, out, err = run("audit", target, "--session", new, "--json")
        assert status == 0, out + err
        (checked,) = json.loads(out)["sessions"]
        assert checked["ok"] and checked["events"] == at and checked["fork"] == provenance.as_json()
        status, out, err = run("export", "--db", target, "--session", new)
        assert status == 0, err
        assert out.encode() == b"".join(lines(source)[:at]) + encode_fork_record(provenance) + b"\n"


def test_a_fork_at_every_seq_of_the_demo_in_sqlite_audits_clean_and_exports_the_sources_first_lines(
    db: Path,
) -> None:
    status, source, _ = run("export", "--db", str(db), "--session", "demo-1")
    assert status == 0 and len(lines(source.encode())) > 50
    _check_every_fork_by_command(str(db), source.encode())
    status, out, _ = run("export", "--db", str(db), "--session", "demo-1")
    assert out == source  # the source is unchanged


def test_a_fork_at_every_seq_of_the_demo_in_postgresql_audits_clean_and_exports_the_sources_first_lines(
    demo_db: Path, pg_url: str
) -> None:
    with SqliteStore(demo_db) as sqlite:
        source = export_session(sqlite, "demo-1")
    with PostgresStore(pg_url) as store:
        import_session(store, "demo-1", source)
    _check_every_fork_by_command(pg_url, source)
    with PostgresStore(pg_url) as store:
        assert export_session(store, "demo-1") == source


def test_a_fork_at_every_seq_of_the_demo_in_memory_audits_clean_and_exports_the_sources_first_lines(
    demo_db: Path,
) -> None:
    with SqliteStore(demo_db) as sqlite:
        source = export_session(sqlite, "demo-1")
    store = MemoryStore()
    import_session(store, "demo-1", source)
    for at in range(1, len(lines(source)) + 1):
        provenance = store.fork("demo-1", at, f"fork-{at}")
        assert provenance == ForkProvenance("demo-1", at, prefix_digest(store.read("demo-1")[:at]))
        report = store.audit(f"fork-{at}")
        assert report.ok and report.last_seq == at and report.provenance == provenance
        assert export_session(store, f"fork-{at}") == b"".join(lines(source)[:at]) + encode_fork_record(
            provenance
        ) + b"\n"
    assert export_session(store, "demo-1") == source


def test_fork_turn_k_keeps_everything_before_turn_k_started(db: Path) -> None:
    with SqliteStore(db) as store:
        starts = {e.payload["turn"]: e.seq for e in store.read("demo-1") if e.kind == TURN_START}
    assert len(starts) >= 3
    status, out, err = run("fork", "--db", str(db), "demo-1", "rewound", "--turn", "3")
    assert status == 0, err
    assert f"at seq {starts[3] - 1} into rewound" in out and "prefix sha256" in out
    with SqliteStore(db) as store:
        state = store.load("rewound")
        assert state.last_seq == starts[3] - 1 and state.turns.turn == 2 and not state.turns.open


@pytest.mark.parametrize(
    ("argv", "code", "text"),
    [
        (["demo-1", "demo-1", "--at", "3"], "session-exists", "already exists"),
        (["demo-1", "new", "--at", "100000"], "fork-seq-missing", "has no seq 100000"),
        (["demo-1", "new", "--at", "0"], "fork-seq-missing", "start a new session instead"),
        (["nobody", "new", "--at", "1"], "fork-source-missing", "has no events"),
        (["demo-1", "new", "--turn", "99"], "fork-turn-missing", "has no turn 99"),
        (["demo-1", "new", "--turn", "0"], "invalid-request", "a turn is an integer of at least 1"),
        (["demo-1", "", "--at", "1"], "invalid-request", "a session id"),
    ],
    ids=["new-exists", "past-the-head", "at-zero", "no-source", "no-such-turn", "turn-zero", "empty-new-id"],
)
def test_a_refused_fork_is_exit_status_2_and_writes_nothing(
    db: Path, argv: list[str], code: str, text: str
) -> None:
    before = db.read_bytes()
    status, out, err = run("fork", "--db", str(db), *argv)
    assert status == 2 and out == "" and text in err
    status, out, _ = run("fork", "--db", str(db), *argv, "--json")
    assert status == 2 and json.loads(out)["error"]["code"] == code
    assert db.read_bytes() == before


def test_fork_needs_an_existing_database_and_exactly_one_of_at_and_turn(tmp_path: Path, db: Path) -> None:
    missing = tmp_path / "missing.sqlite"
    status, _, err = run("fork", "--db", str(missing), "demo-1", "new", "--at", "1")
    assert status == 2 and "no such database" in err and not missing.exists()
    assert run("fork", "--db", str(db), "demo-1", "new")[0] == 2
    assert run("fork", "--db", str(db), "demo-1", "new", "--at", "1", "--turn", "1")[0] == 2


def test_replay_and_audit_show_a_forks_provenance_and_import_keeps_it(db: Path, tmp_path: Path) -> None:
    assert run("fork", "--db", str(db), "demo-1", "f", "--at", "30")[0] == 0
    with SqliteStore(db) as store:
        provenance = store.provenance("f")
    assert provenance is not None
    for command in ("replay", "audit"):
        status, out, _ = run(command, str(db), "--session", "f")
        assert status == 0 and f"forked from 'demo-1' at seq 30 (prefix sha256 {provenance.prefix_sha256})" in out
    exported = tmp_path / "f.jsonl"
    status, out, _ = run("export", "--db", str(db), "--session", "f", "-o", str(exported))
    assert status == 0 and "exported 30 events" in out
    status, out, _ = run("replay", str(exported), "--json")
    assert status == 0
    (checked,) = json.loads(out)["sessions"]
    assert checked["events"] == 30 and checked["fork"] == provenance.as_json()
    other = tmp_path / "other.sqlite"
    status, out, err = run("import", str(exported), "--db", str(other), "--session", "copy", "--json")
    assert status == 0, err
    assert json.loads(out) == {"session": "copy", "events": 30, "fork": provenance.as_json()}
    with SqliteStore(other) as store:
        assert store.provenance("copy") == provenance and store.audit("copy").ok
    assert run("export", "--db", str(other), "--session", "copy")[1].encode() == exported.read_bytes()


@pytest.mark.parametrize(
    ("tail", "line", "rule"),
    [
        (b'{"fork":{"source":"demo-1","seq":0,"prefix_sha256":"00"}}\n', 11, "malformed-fork-record"),
        (b'{"fork":{"source":"demo-1","seq":10,"prefix_sha256":"' + b"0" * 64 + b'"}}\n{"seq":11}\n', 12,
         "malformed-fork-record"),
        (b'{"fork":{"source":"demo-1","seq":12,"prefix_sha256":"' + b"0" * 64 + b'"}}\n', 11, "provenance-mismatch"),
    ],
    ids=["malformed", "not-the-last-line", "seq-past-the-log"],
)  # fmt: skip
def test_a_bad_fork_record_is_a_bad_log_at_its_line(
    demo_db: Path, tmp_path: Path, tail: bytes, line: int, rule: str
) -> None:
    with SqliteStore(demo_db) as store:
        head = b"".join(lines(export_session(store, "demo-1"))[:10])
    log = tmp_path / "bad.jsonl"
    log.write_bytes(head + tail)
    status, out, _ = run("replay", str(log), "--json")
    assert status == 1
    (checked,) = json.loads(out)["sessions"]
    assert (checked["error"]["line"], checked["error"]["rule"]) == (line, rule)


def test_importing_a_fork_whose_prefix_was_changed_is_refused_and_writes_nothing(
    db: Path, tmp_path: Path
) -> None:
    assert run("fork", "--db", str(db), "demo-1", "f", "--at", "12")[0] == 0
    data = run("export", "--db", str(db), "--session", "f")[1].encode()
    changed = tmp_path / "changed.jsonl"
    changed.write_bytes(data.replace(b'"text":"', b'"text":"not what was said: ', 1))  # still a valid log
    target = tmp_path / "target.sqlite"
    status, out, _ = run("import", str(changed), "--db", str(target), "--session", "copy", "--json")
    assert status == 2 and json.loads(out)["error"]["code"] == "provenance-mismatch"
    assert "hash to" in json.loads(out)["error"]["detail"]
    assert not target.exists()  # refused before anything was opened
    # The hash is of the events as export writes them: the same events spaced otherwise import.
    respaced = tmp_path / "respaced.jsonl"
    respaced.write_bytes(data.replace(b'"at":', b'"at": '))
    assert run("import", str(respaced), "--db", str(target), "--session", "copy")[0] == 0
    with SqliteStore(target) as store, SqliteStore(db) as source:
        assert store.provenance("copy") == source.provenance("f")


# --------------------------------------------------------------------------
# A refused fork writes nothing, whatever the database holds


def _state(folder: Path) -> dict[str, object]:
    """Every file in ``folder`` byte for byte, and each SQLite file's tables
    and pragmas as a reader sees them."""
    seen: dict[str, object] = {}
    for path in sorted(folder.iterdir()):
        data = path.read_bytes()
        seen[path.name] = data
        if data.startswith(b"SQLite format 3\x00"):
            conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
            seen[path.name + " tables"] = conn.execute("SELECT name FROM sqlite_master ORDER BY name").fetchall()
            seen[path.name + " pragmas"] = [
                conn.execute(f"PRAGMA {name}").fetchone() for name in ("user_version", "journal_mode")
            ]
            conn.close()
    return seen


def _older_file(path: Path) -> None:
    """A file an older planfold wrote (schema version 7: before forks), with
    two sessions in it."""
    with SqliteStore(path) as store:
        for sid in ("demo-1", "legacy-1"):
            import_session(store, sid, encode_jsonl(build_log(FULL_SCRIPT).events))
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("DROP TABLE forks")
    conn.execute("PRAGMA user_version = 7")
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()


TARGETS = {
    "an empty file": lambda path: path.write_bytes(b""),
    "an older planfold file": _older_file,
    "a legacy file": build_legacy_db,
}

REFUSALS = {
    "no-source": ["nobody", "new", "--at", "1"],
    "past-the-head": ["demo-1", "new", "--at", "100000"],
    "no-such-turn": ["demo-1", "new", "--turn", "99"],
    "new-exists": ["demo-1", "legacy-1", "--at", "1"],
}


@pytest.mark.parametrize("make", TARGETS.values(), ids=TARGETS.keys())
@pytest.mark.parametrize("argv", REFUSALS.values(), ids=REFUSALS.keys())
def test_a_refused_fork_leaves_an_empty_older_or_legacy_file_exactly_as_it_was(
    tmp_path: Path, make: Callable[[Path], None], argv: list[str]
) -> None:
    db = tmp_path / "target.sqlite"
    make(db)
    before = _state(tmp_path)
    status, out, err = run("fork", "--db", str(db), *argv)
    assert status == 2 and out == "" and err.startswith("planfold fork: ")
    assert _state(tmp_path) == before


def test_a_fork_into_an_older_file_that_goes_through_migrates_it(tmp_path: Path) -> None:
    db = tmp_path / "old.sqlite"
    _older_file(db)
    status, _, err = run("fork", "--db", str(db), "demo-1", "f", "--at", "3")
    assert status == 0, err
    with SqliteStore(db) as store:
        assert store.provenance("f") is not None and store.audit("f").ok


@pytest.mark.parametrize("what", ["/dev/null", "a directory", "a fifo", "a link to /dev/null"])
def test_fork_refuses_a_db_that_is_not_a_regular_file_before_anything_is_attempted(
    tmp_path: Path, what: str
) -> None:
    if what == "/dev/null":
        target = "/dev/null"
    elif what == "a directory":
        target = str(tmp_path / "dir")
        os.mkdir(target)
    elif what == "a fifo":
        target = str(tmp_path / "fifo")
        os.mkfifo(target)
    else:
        target = str(tmp_path / "link")
        os.symlink("/dev/null", target)
    before = sorted(p.name for p in tmp_path.iterdir())
    status, out, _ = run("fork", "--db", target, "demo-1", "new", "--at", "1", "--json")
    assert status == 2 and json.loads(out)["error"]["code"] == "not-a-file"
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert not stat.S_ISREG(os.stat(target).st_mode)


def _objects(url: str) -> list[tuple[object, ...]]:
    """Every table, index, sequence and function in the URL's schema."""
    with psycopg.connect(url) as conn:
        relations = conn.execute(
            "SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = current_schema() ORDER BY 1"
        ).fetchall()
        functions = conn.execute(
            "SELECT p.proname, 'f' FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
            " WHERE n.nspname = current_schema() ORDER BY 1"
        ).fetchall()
    return relations + functions


def test_a_refused_fork_gives_an_empty_postgresql_database_no_tables(pg_url: str) -> None:
    assert _objects(pg_url) == []
    for argv in REFUSALS.values():
        status, out, err = run("fork", "--db", pg_url, *argv)
        assert status == 2 and out == "", err
        assert _objects(pg_url) == []


def test_a_refused_fork_leaves_a_postgresql_database_exactly_as_it_was(pg_url: str) -> None:
    with PostgresStore(pg_url) as store:
        import_session(store, "demo-1", encode_jsonl(build_log(FULL_SCRIPT).events))
        store.fork("demo-1", 2, "legacy-1")
    with psycopg.connect(pg_url) as conn:
        tables = [row[0] for row in conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = current_schema() AND c.relkind = 'r' ORDER BY 1"
        ).fetchall()]

    def contents() -> dict[str, list[tuple[object, ...]]]:
        with psycopg.connect(pg_url) as conn:
            return {table: conn.execute(f'SELECT * FROM "{table}" ORDER BY 1').fetchall() for table in tables}

    before = (_objects(pg_url), contents())
    for argv in REFUSALS.values():
        status, out, err = run("fork", "--db", pg_url, *argv)
        assert status == 2 and out == "", err
        assert (_objects(pg_url), contents()) == before
