"""The demo's whole session, driven through ``planfold serve`` by a Python
host over a pipe, writes the very log ``planfold demo`` writes, on SQLite
and on PostgreSQL alike (``--db`` opens whatever the store opener opens)."""

from __future__ import annotations

import io
from pathlib import Path

from planfold.adapters.cli.demo import run_demo
from planfold.adapters.cli.demo_script import DEMO_FILES, TASK, after_restart_model, demo_reviewer, first_model
from planfold.adapters.codec import encode_jsonl
from planfold.adapters.llm.scripted import ScriptedClient
from planfold.adapters.runtime.tool_runner import ToolRunner
from planfold.adapters.runtime.toolset import default_registry
from planfold.adapters.runtime.workspace import Workspace
from planfold.adapters.serve.client import ServeClient
from planfold.adapters.store.opener import open_store
from planfold.adapters.store.sqlite import SqliteStore
from tests.serve_host import PyHost

#: The demo's clock: 1_700_000_000_000 ms, one second per reading.
TICKS = (1_700_000_000_000, 1000)


def _demo_log(tmp_path: Path) -> tuple[str, bytes]:
    result = run_demo(str(tmp_path / "demo.sqlite"), io.StringIO())
    assert result.audit_ok
    with SqliteStore(tmp_path / "demo.sqlite") as store:
        return result.session_id, encode_jsonl(store.read(result.session_id))


def _serve_demo(db: str, session: str) -> bytes:
    """Drive the demo's session through ``planfold serve --db DB``; its log."""
    workspace = Workspace(dict(DEMO_FILES))
    executors = ToolRunner(default_registry(), executors=workspace.executors())
    first, second = first_model(), after_restart_model()
    with ServeClient.spawn(db, ticks=TICKS) as client:
        host = PyHost(client, session, first, executors, demo_reviewer())
        host.open()
        assert host.submit("/plan")["outcome"] == "committed"
        assert host.submit(TASK) == "reply"
        created = host.call("goal/create", objective="Keep README.md and greet.py consistent", max_rounds=2)
        assert created["armed"]
        stopped = host.drive()
        assert stopped["reason"] == "budget-spent" and stopped["blocked_at"] is not None
        ref = {"id": stopped["goal"]["id"], "revision": stopped["goal"]["revision"]}
        edited = host.call("goal/edit", ref=ref, max_rounds=3)
        host.call("goal/resume", ref=edited["ref"])
        # the restart: the session's process state is dropped and opened afresh
        host.call("session/close")
        host.model = second
        reopened = host.open()
        assert not reopened["armed"] and reopened["goal"]["phase"] == "active"
        assert host.drive()["reason"] == "disarmed"
        host.call("goal/resume", ref={"id": reopened["goal"]["id"], "revision": reopened["goal"]["revision"]})
        assert host.drive()["reason"] == "budget-spent"
        assert client.close() == 0
    for model in (first, second):
        assert isinstance(model, ScriptedClient) and model.remaining == 0
    store = open_store(db)
    try:
        assert store.audit(session).ok
        return encode_jsonl(store.read(session))
    finally:
        store.close()


def test_the_demo_driven_through_serve_writes_the_demos_very_log(tmp_path: Path) -> None:
    session, expected = _demo_log(tmp_path)
    assert _serve_demo(str(tmp_path / "served.sqlite"), session) == expected


def test_the_demo_driven_through_serve_on_postgresql_writes_the_demos_very_log(tmp_path: Path, pg_url: str) -> None:
    session, expected = _demo_log(tmp_path)
    assert _serve_demo(pg_url, session) == expected
