"""``planfold demo`` on a temporary SQLite file: it runs end to end, its log
passes the audit, and the log holds the expected events in order; a real
model that takes its own path still gets a clean run, and the closing hint
works as printed."""

from __future__ import annotations

import io
import json
import socket
from pathlib import Path

import pytest

from planfold.adapters.cli.demo import command_name, run_demo
from planfold.adapters.cli.main import main
from planfold.adapters.store.sqlite import SqliteStore
from planfold.kernel.log import Event
from planfold.kernel.session import fold_session
from tests.chat_server import Answer, ChatServer, completion


def _subsequence(wanted: list[tuple[str, object]], events: list[tuple[str, object]]) -> bool:
    """Whether ``wanted`` appears in ``events`` in order (not necessarily adjacent)."""
    it = iter(events)
    return all(any(item == got for got in it) for item in wanted)


def test_the_demo_runs_and_its_log_passes_the_audit(tmp_path: Path) -> None:
    db = tmp_path / "demo.sqlite"
    out = io.StringIO()
    result = run_demo(str(db), out)
    text = out.getvalue()
    assert result.audit_ok, text
    assert result.session_id == "demo-1"
    with SqliteStore(db) as store:
        events = store.read("demo-1")
        assert store.audit("demo-1").ok
    state = fold_session(events)
    assert state.plan.status == "completed"
    assert state.goal.current is not None and state.goal.current.phase == "blocked"
    assert state.goal.current.blocked_reason is not None
    assert state.goal.current.blocked_reason.code == "round-limit"

    def mark(e: Event) -> tuple[str, object]:
        p = e.payload
        detail = p.get("active", p.get("action", p.get("operation", p.get("tool", p.get("step")))))
        return (e.kind, detail)

    marks = [mark(e) for e in events]
    expected: list[tuple[str, object]] = [
        ("plan/mode", True),
        ("tool/call", "read_file"),
        ("tool/result", "read_file"),
        ("tool/call", "write_file"),
        ("tool/refused", "write_file"),
        ("tool/call", "exit_plan_mode"),
        ("plan/artifact", "draft"),
        ("plan/artifact", "approve"),
        ("tool/result", "exit_plan_mode"),
        ("plan/mode", False),
        ("plan/artifact", "start"),
        ("tool/result", "write_file"),
        ("tool/call", "update_todo"),
        ("plan/artifact", "todo"),
        ("plan/artifact", "verify"),
        ("tool/call", "report_verification"),
        ("plan/artifact", "complete"),
        ("goal/change", "create"),
        # round 1: build mode without a plan records one, executes, verifies twice
        ("tool/call", "bootstrap_plan"),
        ("plan/artifact", "bootstrap"),
        ("tool/result", "bootstrap_plan"),
        ("plan/artifact", "start"),
        ("tool/result", "write_file"),
        ("plan/artifact", "todo"),
        ("plan/artifact", "verify"),
        ("plan/artifact", "verify-fail"),
        ("tool/result", "write_file"),
        ("plan/artifact", "verify"),
        ("plan/artifact", "complete"),
        ("goal/change", "block"),
        ("goal/change", "edit"),
        ("goal/change", "resume"),
        ("goal/change", "resume"),
        ("goal/change", "block"),
    ]
    first_plan = ["draft", "approve", "start", "todo", "verify", "complete"]
    goal_plan = ["bootstrap", "start", "todo", "verify", "verify-fail", "verify", "complete"]
    assert [m[1] for m in marks if m[0] == "plan/artifact"] == first_plan + goal_plan
    assert [m for m in marks if m[0] == "tool/refused"] == [("tool/refused", "write_file")]
    assert _subsequence(expected, marks), marks
    # the silent exit: nothing between the approval's tool result and the exit
    # but the next pre-step: plan/mode, start, then that step's header
    exit_at = marks.index(("plan/mode", False))
    assert [m[0] for m in marks[exit_at - 1 : exit_at + 3]] == [
        "tool/result",
        "plan/mode",
        "plan/artifact",
        "request/header",
    ]
    assert "README.md names greet() and farewell(): True" in text
    assert "activation after the restart: DISARMED" in text
    assert "stopped: disarmed" in text
    assert "the log passes the audit" in text


def test_a_second_run_adds_a_new_session_and_the_cli_audits_both(tmp_path: Path) -> None:
    db = tmp_path / "demo.sqlite"
    out = io.StringIO()
    assert main(["demo", "--db", str(db)], out=out) == 0
    assert main(["demo", "--db", str(db)], out=out) == 0
    assert "session 'demo-2'" in out.getvalue()
    report = io.StringIO()
    assert main(["audit", "--db", str(db)], out=report) == 0
    assert "demo-1: ok" in report.getvalue() and "demo-2: ok" in report.getvalue()


def test_demo_json_prints_one_json_document_on_stdout(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["demo", "--db", str(tmp_path / "d.sqlite"), "--json"], out=out, err=err) == 0
    assert json.loads(out.getvalue()) == {"session": "demo-1", "events": 99, "ok": True}
    assert "Summary" in err.getvalue()


def test_a_real_model_that_does_not_follow_the_script_gets_a_clean_run_and_audit(tmp_path: Path) -> None:
    with ChatServer() as server:
        server.plan(*[Answer(body=completion("done")) for _ in range(200)])
        out, err = io.StringIO(), io.StringIO()
        db = tmp_path / "real.sqlite"
        argv = ["demo", "--db", str(db), "--base-url", server.base_url, "--timeout", "5", "--retries", "0"]
        code = main(argv, out=out, err=err)
        asked = len(server.received)
    text = out.getvalue()
    assert code == 0, text + err.getvalue()
    assert "the log passes the audit" in text and "the user turns it off" in text
    assert 0 < asked < 200
    with SqliteStore(db) as store:
        assert store.audit("demo-1").ok
        fold_session(store.read("demo-1"))


def test_the_closing_hint_runs_planfold_the_way_the_user_did(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    run_demo(str(tmp_path / "d b.sqlite"), out, command=".venv/bin/planfold")
    hint = f"check it again with: .venv/bin/planfold audit --db '{tmp_path}/d b.sqlite' --session demo-1"
    assert hint in out.getvalue()
    program = tmp_path / ".venv" / "bin" / "planfold"
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", "/nonexistent")
    assert command_name(str(program)) == ".venv/bin/planfold"  # as make demo runs it
    monkeypatch.setenv("PATH", str(program.parent))
    assert command_name(str(program)) == "planfold"  # installed on the PATH


def test_a_model_server_that_cannot_be_used_is_named_without_its_password(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    out, err = io.StringIO(), io.StringIO()
    base_url = f"http://alice:hunter2@127.0.0.1:{port}/v1"
    argv = ["demo", "--db", str(tmp_path / "d.sqlite"), "--base-url", base_url, "--timeout", "5", "--retries", "0"]
    assert main(argv, out=out, err=err) == 2
    said = out.getvalue() + err.getvalue()
    assert "could not be used" in said and f"alice:***@127.0.0.1:{port}" in said
    assert "hunter2" not in said
