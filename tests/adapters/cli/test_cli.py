"""``planfold replay|audit|export|import``: human and JSON output, bad logs
reported by position and rule with a non-zero exit, and the progress bar."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from planfold.adapters.cli.demo import run_demo
from planfold.adapters.cli.main import main
from planfold.adapters.cli.progress import LONG_REPLAY, Progress
from planfold.adapters.codec import decode_jsonl, encode_jsonl
from planfold.kernel.log import Event


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("cli") / "demo.sqlite"
    run_demo(str(db), io.StringIO())
    return db


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def _export(db: Path, tmp_path: Path) -> Path:
    target = tmp_path / "log.jsonl"
    code, out, _ = _run("export", "--db", str(db), "--session", "demo-1", "-o", str(target))
    assert code == 0 and "exported" in out
    return target


def test_replay_and_audit_a_database_in_text_and_json(demo_db: Path) -> None:
    code, out, _ = _run("replay", str(demo_db))
    assert code == 0 and "demo-1: ok" in out and "'status': 'completed'" in out
    code, out, _ = _run("audit", str(demo_db), "--session", "demo-1", "--json")
    body = json.loads(out)
    assert code == 0 and body["ok"] is True
    (session,) = body["sessions"]
    assert session["projection"] == {"mismatches": [], "snapshot": "current"}
    assert session["state"]["plan"]["status"] == "completed"


def test_export_then_import_round_trips_and_audits(demo_db: Path, tmp_path: Path) -> None:
    exported = _export(demo_db, tmp_path)
    code, out, _ = _run("audit", str(exported), "--json")
    assert code == 0 and json.loads(out)["ok"] is True
    target = tmp_path / "copy.sqlite"
    code, out, _ = _run("import", str(exported), "--db", str(target), "--session", "copy", "--json")
    assert code == 0 and json.loads(out)["events"] == len(decode_jsonl(exported.read_bytes()))
    code, out, _ = _run("audit", str(target), "--session", "copy")
    assert code == 0 and "matches the fold" in out
    # the same import again is an idempotent retry: it lands once
    code, out, _ = _run("replay", str(target), "--session", "copy", "--json")
    count = json.loads(out)["sessions"][0]["events"]
    assert _run("import", str(exported), "--db", str(target), "--session", "copy")[0] == 0
    # another log into the non-empty session is refused and changes nothing
    other = tmp_path / "other.jsonl"
    other.write_bytes(encode_jsonl(decode_jsonl(exported.read_bytes())[:5]))
    code, _, err = _run("import", str(other), "--db", str(target), "--session", "copy")
    assert code == 2 and "concurrent writer" in err
    code, out, _ = _run("replay", str(target), "--session", "copy", "--json")
    assert json.loads(out)["sessions"][0]["events"] == count


@pytest.mark.parametrize(
    ("corrupt", "rule"),
    [
        (lambda e: Event(e.seq + 5, e.kind, e.at, e.payload), "seq-gap"),
        (lambda e: Event(e.seq, e.kind, 0, e.payload), "time-regressed"),
        (lambda e: Event(e.seq, "nope/kind", e.at, e.payload), "unknown-kind"),
    ],
)
def test_a_bad_log_prints_the_position_and_rule_of_its_first_bad_event(
    demo_db: Path, tmp_path: Path, corrupt: object, rule: str
) -> None:
    events = list(decode_jsonl(_export(demo_db, tmp_path).read_bytes()))
    assert callable(corrupt)
    events[20] = corrupt(events[20])
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(encode_jsonl(events))
    code, out, _ = _run("audit", str(bad))
    assert code == 1
    assert f"BAD LOG at seq {events[20].seq} [{rule}]" in out
    code, out, _ = _run("replay", str(bad), "--json")
    error = json.loads(out)["sessions"][0]["error"]
    assert code == 1 and error["rule"] == rule and error["position"] == events[20].seq
    # importing it is refused with the same position and rule; nothing is written
    code, out, _ = _run("import", str(bad), "--db", str(tmp_path / "x.sqlite"), "--session", "s", "--json")
    assert code == 1 and json.loads(out)["error"]["rule"] == rule


def test_an_undecodable_line_is_a_bad_log(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"seq": 1}\n')
    code, _, err = _run("replay", str(bad))
    assert code == 1 and "line 1" in err


def test_an_unknown_session_or_file_is_a_usage_error(demo_db: Path, tmp_path: Path) -> None:
    code, _, err = _run("audit", str(demo_db), "--session", "nope")
    assert code == 2 and "nope" in err
    code, _, _ = _run("replay", str(tmp_path / "missing.jsonl"))
    assert code == 2


def test_the_progress_bar_goes_to_stderr_only_when_asked_or_long(demo_db: Path) -> None:
    code, out, err = _run("replay", str(demo_db), "--session", "demo-1", "--progress")
    assert code == 0 and "[" in err and "#" in err and "#" not in out
    code, _, err = _run("replay", str(demo_db), "--session", "demo-1")
    assert err == ""  # not a terminal, not long
    stream = io.StringIO()
    bar = Progress(stream, steps=10)
    bar.start(LONG_REPLAY, "long")
    for done in range(1, LONG_REPLAY + 1):
        bar.update(done)
    bar.finish()
    assert 10 <= bar.drawn <= 12 and stream.getvalue().endswith(f"{LONG_REPLAY}/{LONG_REPLAY}\n")
    quiet = Progress(io.StringIO(), enabled=False)
    quiet.start(LONG_REPLAY, "off")
    quiet.update(LONG_REPLAY)
    assert quiet.drawn == 0
