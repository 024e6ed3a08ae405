"""``planfold fork`` and forks in the other commands: a fork of the demo's
session at every seq, on each backend, audits clean and exports as the
source's first N lines plus its fork record; ``--turn K`` rewinds to turn
K's start; refusals are exit status 2 with nothing written; ``audit`` and
``replay`` show provenance, ``import`` keeps it, and a bad fork record in a
JSON Lines log is a bad log (exit status 1) at its line."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from planfold.adapters.cli.demo import run_demo
from planfold.adapters.cli.main import main
from planfold.adapters.provenance import ForkProvenance, encode_fork_record, prefix_digest
from planfold.adapters.store.base import export_session, import_session
from planfold.adapters.store.memory import MemoryStore
from planfold.adapters.store.postgres import PostgresStore
from planfold.adapters.store.sqlite import SqliteStore
from planfold.kernel.log import TURN_START


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("fork") / "demo.sqlite"
    run_demo(str(db), io.StringIO())
    return db


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
