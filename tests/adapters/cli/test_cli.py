"""``planfold replay|audit|export|import|conform``: human and JSON output,
bad logs reported by position and rule with a non-zero exit, the careless
operator's paths (each an accurate message, exit status 2, nothing created or
overwritten), help, version, and exit codes."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from benchmarks.workloads import session_events
from planfold.adapters.cli.main import EXIT_STATUS, main
from planfold.adapters.codec import decode_jsonl, encode_jsonl
from planfold.adapters.specgen.vectors import VECTOR_DIR
from planfold.kernel.log import Event
from tests.adapters.cli.running import run_cli
from tests.fuzz.cli_targets import CLI_TARGETS
from tests.fuzz.harness import check

SPECS = Path(__file__).resolve().parents[3] / "specs"


def _export(db: Path, tmp_path: Path) -> Path:
    target = tmp_path / "log.jsonl"
    code, out, _ = run_cli("export", "--db", str(db), "--session", "demo-1", "-o", str(target))
    assert code == 0 and "exported" in out
    return target


def test_replay_and_audit_a_database_in_text_and_json(demo_db: Path) -> None:
    code, out, _ = run_cli("replay", "--db", str(demo_db))
    assert code == 0 and "demo-1: ok" in out and "plan: plan-" in out and ", completed" in out
    code, out, _ = run_cli("audit", "--db", str(demo_db), "--session", "demo-1", "--json")
    body = json.loads(out)
    assert code == 0 and body["ok"] is True
    (session,) = body["sessions"]
    assert session["projection"] == {"mismatches": [], "snapshot": "current"}
    assert session["state"]["plan"]["status"] == "completed"


def test_export_then_import_round_trips_and_audits(demo_db: Path, tmp_path: Path) -> None:
    exported = _export(demo_db, tmp_path)
    code, out, _ = run_cli("audit", "--db", str(exported), "--json")
    assert code == 0 and json.loads(out)["ok"] is True
    target = tmp_path / "copy.sqlite"
    code, out, _ = run_cli("import", str(exported), "--db", str(target), "--session", "copy", "--json")
    assert code == 0 and json.loads(out)["events"] == len(decode_jsonl(exported.read_bytes()))
    code, out, _ = run_cli("audit", "--db", str(target), "--session", "copy")
    assert code == 0 and "matches the fold" in out

    code, out, _ = run_cli("replay", "--db", str(target), "--session", "copy", "--json")
    assert json.loads(out)["sessions"][0]["events"] == len(decode_jsonl(exported.read_bytes()))


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
    code, out, _ = run_cli("audit", "--db", str(bad))
    assert code == 1
    assert f"BAD LOG at seq {events[20].seq} (line 21) [{rule}]" in out
    code, out, _ = run_cli("replay", "--db", str(bad), "--json")
    error = json.loads(out)["sessions"][0]["error"]
    assert code == 1 and error["rule"] == rule and error["position"] == events[20].seq
    # importing it is refused with the same position and rule; nothing is written
    code, out, _ = run_cli("import", str(bad), "--db", str(tmp_path / "x.sqlite"), "--session", "s", "--json")
    assert code == 1 and json.loads(out)["error"]["rule"] == rule


def test_an_undecodable_line_is_reported_by_seq_when_readable_else_by_line_with_its_rule(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"seq": 1}\n')
    code, out, _ = run_cli("replay", "--db", str(bad))
    assert code == 1 and out.startswith("bad: BAD LOG at seq 1 (line 1) [malformed-record]: ")
    bad.write_text('{"seq": 1, "kind": "turn/start", "at": 1, "payload": {"turn": 1}}\nnot json\n')
    code, out, _ = run_cli("replay", "--db", str(bad), "--json")
    error = json.loads(out)["sessions"][0]["error"]
    assert code == 1 and (error["position"], error["line"], error["rule"]) == (None, 2, "malformed-record")


def test_a_payload_the_fold_refuses_is_reported_at_its_seq_with_the_folds_rule(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"seq": 1, "kind": "goal/change", "at": 5, "payload": null}\n')
    code, out, _ = run_cli("replay", "--db", str(bad), "--json")
    error = json.loads(out)["sessions"][0]["error"]
    assert code == 1 and (error["position"], error["line"], error["rule"]) == (1, 1, "malformed-payload")


def test_replay_and_conform_agree_on_every_vector() -> None:
    sidecars = sorted((SPECS / VECTOR_DIR).glob("*.expected.json"))
    assert len(sidecars) > 50
    for sidecar in sidecars:
        expected = json.loads(sidecar.read_text(encoding="utf-8"))
        log = sidecar.with_name(sidecar.name.replace(".expected.json", ".jsonl"))
        code, out, _ = run_cli("replay", "--db", str(log), "--json")
        (session,) = json.loads(out)["sessions"]
        if expected["ok"]:
            assert code == 0 and session["ok"], log.name
            assert session["state"]["last_seq"] == expected["state"]["last_seq"], log.name
        else:
            error = session["error"]
            assert code == 1, log.name
            assert (error["position"], error["rule"]) == (expected["position"], expected["rule"]), log.name


def test_an_empty_file_is_a_log_with_no_events_and_a_blank_line_is_a_malformed_record(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    code, out, _ = run_cli("replay", "--db", str(empty))
    assert code == 0 and out.startswith("empty: ok, 0 events")
    newline = tmp_path / "newline.jsonl"
    newline.write_bytes(b"\n")
    code, out, _ = run_cli("replay", "--db", str(newline))
    assert code == 1 and "BAD LOG at line 1 [malformed-record]: a blank line is not an event record" in out
    _, help_text, _ = run_cli("replay", "--help")
    assert "An empty file is a log with no events; a blank line is a malformed record." in help_text


def test_an_unknown_session_or_file_is_a_usage_error(demo_db: Path, tmp_path: Path) -> None:
    code, _, err = run_cli("audit", "--db", str(demo_db), "--session", "nope")
    assert code == 2 and err == f"planfold audit: no session 'nope' in {demo_db} (sessions: demo-1)\n"
    code, _, err = run_cli("replay", "--db", str(tmp_path / "missing.jsonl"))
    assert code == 2 and "no such file" in err
    code, _, err = run_cli("replay", "--db", str(tmp_path))
    assert code == 2 and "is a directory" in err


# --------------------------------------------------------------------------
# The careless operator: an accurate message, exit status 2, nothing created


def test_export_from_a_database_that_does_not_exist_creates_nothing(tmp_path: Path) -> None:
    typo = tmp_path / "typo.sqlite"
    code, out, err = run_cli("export", "--db", str(typo), "--session", "demo-1")
    assert (code, out) == (2, "") and "no such database" in err
    assert list(tmp_path.iterdir()) == []


def test_export_of_an_unknown_session_is_refused(demo_db: Path) -> None:
    code, out, err = run_cli("export", "--db", str(demo_db), "--session", "nope")
    assert (code, out) == (2, "") and "no session 'nope'" in err
    code, out, _ = run_cli("export", "--db", str(demo_db), "--session", "nope", "--json")
    assert code == 2 and json.loads(out)["error"]["code"] == "no-such-session"


def test_export_onto_its_own_database_is_refused_and_the_database_kept(demo_db: Path, tmp_path: Path) -> None:
    db = tmp_path / "keep.sqlite"
    db.write_bytes(demo_db.read_bytes())
    before = db.read_bytes()
    for target in (str(db), str(tmp_path / "." / "keep.sqlite"), f"{db}-wal"):
        code, _, err = run_cli("export", "--db", str(db), "--session", "demo-1", "-o", target)
        assert code == 2 and "is the database itself" in err
    assert db.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["keep.sqlite"]


def test_a_refused_import_creates_no_database(demo_db: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"seq": 2, "kind": "turn/start", "at": 1, "payload": {"turn": 1}}\n')
    target = tmp_path / "new.sqlite"
    code, _, err = run_cli("import", str(bad), "--db", str(target), "--session", "s")
    assert code == 1 and "seq-gap" in err
    code, _, err = run_cli("import", str(demo_db), "--db", str(target), "--session", "s")
    assert code == 2 and "is a SQLite database" in err
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    code, _, err = run_cli("import", str(empty), "--db", str(target), "--session", "s")
    assert code == 2 and "holds no events" in err
    assert not target.exists() and not Path(f"{target}-wal").exists()


def test_a_repeated_import_says_nothing_was_imported(demo_db: Path, tmp_path: Path) -> None:
    exported = _export(demo_db, tmp_path)
    target = tmp_path / "copy.sqlite"
    assert run_cli("import", str(exported), "--db", str(target), "--session", "copy")[0] == 0
    before = target.read_bytes()
    code, out, err = run_cli("import", str(exported), "--db", str(target), "--session", "copy")
    assert (code, out) == (2, "")
    assert err == f"planfold import: nothing imported: session 'copy' in {target} already holds this log (99 events)\n"
    other = tmp_path / "other.jsonl"
    other.write_bytes(encode_jsonl(decode_jsonl(exported.read_bytes())[:5]))
    code, out, err = run_cli("import", str(other), "--db", str(target), "--session", "copy", "--json")
    assert code == 2 and json.loads(out)["error"]["code"] == "session-not-empty"
    assert "already holds 99 events" in json.loads(out)["error"]["detail"] and "concurrent" not in out
    assert target.read_bytes() == before


def test_a_file_name_that_is_not_utf8_is_shown_escaped(demo_db: Path, tmp_path: Path) -> None:
    exported = _export(demo_db, tmp_path)
    odd = os.path.join(os.fsencode(tmp_path), b"\xff-log.jsonl")
    with open(odd, "wb") as handle:
        handle.write(exported.read_bytes())
    env = {**os.environ, "LC_ALL": "C.UTF-8", "PYTHONIOENCODING": "utf-8"}
    for argv in (["replay", "--db", os.fsdecode(odd)], ["replay", "--db", os.fsdecode(odd) + ".missing"]):
        done = subprocess.run(
            [sys.executable, "-m", "planfold.adapters.cli", *argv], capture_output=True, env=env, check=False
        )
        assert b"Traceback" not in done.stderr, done.stderr
        assert done.returncode in (0, 2)
        assert b"\\xff-log" in done.stdout + done.stderr


# --------------------------------------------------------------------------
# Output for people, help, version, exit codes


def test_text_output_holds_no_python_reprs(demo_db: Path) -> None:
    code, out, _ = run_cli("audit", "--db", str(demo_db))
    assert code == 0
    assert "{" not in out and "None" not in out and "'" not in out
    assert "  goal: goal-" in out and "blocked (round-limit), rounds 3/3" in out


def test_every_option_has_help_and_the_help_states_the_exit_codes() -> None:
    for command in ("demo", "replay", "audit", "export", "import", "conform"):
        code, text, _ = run_cli(command, "--help")
        assert code == 0, command
        assert EXIT_STATUS in text, command
        options = [line for line in text.splitlines() if line.startswith("  -")]
        assert options, command
        for index, line in enumerate(text.splitlines()):
            if line.startswith("  -") and line.strip() != "-h, --help":
                described = len(line.split("  ")) > 2 or not text.splitlines()[index + 1].startswith("  -")
                assert described, f"{command}: {line.strip()} has no help"
    code, text, _ = run_cli("--help")
    assert code == 0 and EXIT_STATUS in text and "conform" in text


def test_version_is_printed() -> None:
    code, out, _ = run_cli("--version")
    assert code == 0 and out.startswith("planfold ")


def test_a_usage_error_exits_2_with_the_usage() -> None:
    code, out, err = run_cli("replay")
    assert (code, out) == (2, "") and err.startswith("usage: planfold replay")
    code, _, err = run_cli("demo", "--timeout", "nan")
    assert code == 2 and "expected a number of seconds above 0" in err


def test_conform_prints_json_and_a_command_that_cannot_run_is_said_once(tmp_path: Path) -> None:
    code, out, _ = run_cli("conform", str(SPECS / VECTOR_DIR), "--json")
    body = json.loads(out)
    assert code == 0 and body["ok"] is True and body["passed"] == body["total"] > 50 and body["failures"] == []
    code, out, err = run_cli("conform", str(SPECS / VECTOR_DIR), "--command", "/nonexistent/impl")
    assert (code, out) == (2, "") and err.count("\n") == 1 and "could not run /nonexistent/impl" in err
    code, out, _ = run_cli("conform", str(SPECS / VECTOR_DIR), "--command", "/nonexistent/impl", "--json")
    assert code == 2 and json.loads(out)["error"]["code"] == "conform-command-failed"


def test_conform_without_a_folder_checks_the_vectors_installed_with_planfold() -> None:
    code, out, err = run_cli("conform", "--json")
    body = json.loads(out)
    published = len(list((SPECS / VECTOR_DIR).glob("*.jsonl")))
    assert (code, err) == (0, "") and body["ok"] is True and body["passed"] == body["total"] == published


def test_progress_goes_to_stderr_only_when_asked_or_long(demo_db: Path) -> None:
    code, out, err = run_cli("replay", "--db", str(demo_db), "--session", "demo-1", "--progress")
    assert code == 0 and err.startswith("demo-1: 99 events in ") and err.endswith("s\n")
    assert "\r" not in err and out.startswith("demo-1: ok")
    code, _, err = run_cli("replay", "--db", str(demo_db), "--session", "demo-1")
    assert err == ""  # not a terminal, not long


# --------------------------------------------------------------------------
# No input ends in a traceback

(CLI,) = CLI_TARGETS


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(CLI.inputs)
def test_no_arguments_and_no_file_contents_end_in_a_traceback(data: bytes) -> None:
    check(CLI, data)


@pytest.mark.parametrize(
    "argv",
    [
        ["import", "{FILE}", "--db", "{DB}", "--session", ""],
        ["import", "{FILE}", "--db", "{DB}", "--session", "\udcff"],
        ["replay", "--db", "{FILE}", "--session", "\udcff", "--json"],
        ["export", "--db", "{FILE}", "--session", "demo-1", "-o", "{FILE}"],
        ["audit", "--db", "{DIR}", "--json"],
        ["conform", "{DIR}", "--json"],
    ],
)
def test_hostile_arguments_get_a_message_and_an_exit_status(demo_db: Path, argv: list[str]) -> None:
    for content in (demo_db.read_bytes(), _export(demo_db, Path(os.path.dirname(demo_db))).read_bytes(), b"\n"):
        assert check(CLI, json.dumps(argv).encode() + b"\n" + content).startswith("returned exit ")


# --------------------------------------------------------------------------
# A JSON Lines log is read as a stream


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_json_lines_replay_moves_its_bar_as_the_file_is_read(tmp_path: Path) -> None:
    log = tmp_path / "long.jsonl"
    log.write_bytes(encode_jsonl(session_events(4_000)))
    out, err = io.StringIO(), _Terminal()
    assert main(["replay", "--db", str(log), "--progress"], out=out, err=err, stdin=io.BytesIO()) == 0
    frames = err.getvalue().split("\r")[1:]
    read = [float(frame.split("] ")[1].split("/")[0]) for frame in frames]
    size = log.stat().st_size / 1e6
    assert len(set(read)) >= 4 and read == sorted(read) and read[-1] == pytest.approx(size, abs=0.05)
    assert all(" MB " in frame and "ev/s" in frame for frame in frames[1:])
    assert out.getvalue().startswith("long: ok, 4000 events")


def test_a_json_lines_replay_reads_no_further_than_its_first_bad_record() -> None:
    class Endless(io.RawIOBase):
        """Three good records, a bad one, then more text than anyone should read."""

        reads = 0

        def readable(self) -> bool:
            return True

        def readinto(self, buffer: Any) -> int:
            self.reads += 1
            if self.reads == 1:
                data = encode_jsonl(session_events(3)) + b"not a record\n"
            else:
                assert self.reads < 50, "the replay kept reading past the bad record"
                data = b"x" * len(buffer)
            buffer[: len(data)] = data
            return len(data)

    stdin = Endless()
    code, out, _ = _run_with(stdin, "replay", "--db", "-")
    assert code == 1 and "BAD LOG at line 4 [malformed-record]" in out
    assert stdin.reads < 10  # a chunk or two past the bad record, never the rest


def _run_with(stdin: io.RawIOBase, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err, stdin=io.BufferedReader(stdin))
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    "argv",
    [
        ("replay", "--db", "log\x00.jsonl"),
        ("audit", "--db", "log\x00.jsonl"),
        ("replay", "--json", "log\x00.jsonl"),
        ("export", "--db", "db\x00.sqlite", "--session", "s1"),
        ("import", "log\x00.jsonl", "--db", "db.sqlite", "--session", "s1"),
    ],
)
def test_a_file_name_holding_a_nul_character_is_no_such_file_not_a_traceback(
    argv: tuple[str, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(*argv)
    assert code == 2
    assert "Traceback" not in out + err
    assert "no such" in out + err or "no-such-file" in out + err
    assert not (tmp_path / "db.sqlite").exists()
