"""planfold's logs: each module logs on its own name under ``planfold`` and
nothing is shown unless the application configures logging; an append, an
executor's run and a goal lease change are DEBUG records; a session's and a
store's opening, a goal round and a goal operation are INFO; a call the gate
refused is a WARNING."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

import planfold.adapters
from planfold.adapters.runtime.goal_service import GoalService
from planfold.adapters.store.base import AppendRequest
from planfold.adapters.store.memory import MemoryStore
from planfold.adapters.store.opener import open_store
from planfold.adapters.store.session_log import SessionLog
from planfold.kernel.log import Event, turn_start, user_message
from tests.adapters.scripted_turn import scripted_runtime, turn_in_a_fresh_interpreter
from tests.runtime_helpers import call, say

#: the adapters as imported (the checkout's, or a copy of the package)
ADAPTERS = Path(planfold.adapters.__file__).parent


def _messages(caplog: pytest.LogCaptureFixture, name: str, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == name and r.levelno == level]


def test_every_module_that_logs_logs_on_its_own_name() -> None:
    uses = []
    for path in sorted(ADAPTERS.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        uses += [(path.name, name) for name in re.findall(r"\blogger\(([^)]*)\)", text)]
        assert "logging.getLogger(" not in text or path.name in ("loggers.py", "main.py", "command.py"), path
    assert len(uses) >= 8
    assert {name for _, name in uses if _ != "loggers.py"} == {"__name__"}


def test_a_session_run_without_logging_configured_prints_nothing() -> None:
    done = turn_in_a_fresh_interpreter("call('write_file', {'path': 'b', 'content': ''}), say('no')")
    assert done.returncode == 0, done.stderr
    assert (done.stdout, done.stderr) == ("", "")


def test_each_append_is_a_debug_record_with_its_session_seq_range_and_duration(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = MemoryStore()
    events = (Event(1, "turn/start", 5, turn_start(1).payload), Event(2, "user/message", 5, user_message("hi").payload))
    with caplog.at_level(logging.DEBUG, logger="planfold"):
        store.append(AppendRequest("s-1", 0, events, "k"))
        store.append(AppendRequest("s-1", 0, events, "k"))
    first, again = _messages(caplog, "planfold.adapters.store.engine", logging.DEBUG)
    assert re.fullmatch(r"session 's-1': appended seq 1\.\.2 \(2 event\(s\)\) in \d+\.\d\d ms", first)
    assert "an idempotent retry: nothing written" in again


def test_no_append_is_recorded_below_debug(caplog: pytest.LogCaptureFixture) -> None:
    store = MemoryStore()
    with caplog.at_level(logging.INFO, logger="planfold"):
        store.append(AppendRequest("s-1", 0, (Event(1, "turn/start", 5, turn_start(1).payload),)))
    assert caplog.records == []


def test_each_executor_run_is_a_debug_record_with_its_outcome_and_duration(caplog: pytest.LogCaptureFixture) -> None:
    runtime = scripted_runtime(
        MemoryStore(), call("read_file", {"path": "a.txt"}, "c1"), call("read_file", {"path": "zz"}, "c2"), say("ok")
    )
    with caplog.at_level(logging.DEBUG, logger="planfold.adapters.runtime.tool_runner"):
        runtime.submit("read")
    ran, missing = _messages(caplog, "planfold.adapters.runtime.tool_runner", logging.DEBUG)
    assert re.fullmatch(r"tool 'read_file' \(call 'c1'\): allowed, ran ok in \d+\.\d\d ms", ran)
    assert re.fullmatch(r"tool 'read_file' \(call 'c2'\): allowed, ran failed \([a-z-]+\) in \d+\.\d\d ms", missing)


def test_a_refused_call_is_a_warning_with_the_gates_rule(caplog: pytest.LogCaptureFixture) -> None:
    runtime = scripted_runtime(MemoryStore(), call("write_file", {"path": "b", "content": ""}, "w1"), say("fine"))
    with caplog.at_level(logging.WARNING, logger="planfold"):
        runtime.submit("write b")
    (warning,) = _messages(caplog, "planfold.adapters.store.engine", logging.WARNING)
    assert warning.startswith("session 's': the gate refused write_file (call 'w1') at seq ")
    assert "in build_bootstrap: [" in warning


def test_opening_a_session_and_a_store_and_closing_it_are_info_records(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    with caplog.at_level(logging.INFO, logger="planfold"):
        store = open_store(tmp_path / "s.sqlite")
        SessionLog(store, "s-1")
        store.close()
        store.close()
    (opened,) = _messages(caplog, "planfold.adapters.store.opener", logging.INFO)
    assert opened == f"store SqliteStore opened: {tmp_path / 's.sqlite'}"
    assert _messages(caplog, "planfold.adapters.store.session_log", logging.INFO) == [
        "session 's-1': opened at seq 0 (build mode, turn 0 closed)"
    ]
    assert _messages(caplog, "planfold.adapters.store.engine", logging.INFO) == ["store SqliteStore closed"]


def test_goal_rounds_and_goal_operations_are_info_and_lease_changes_debug(caplog: pytest.LogCaptureFixture) -> None:
    store = MemoryStore()
    runtime = scripted_runtime(store, say("round one"))
    goals = GoalService(runtime.log, "agent-1", lambda: "goal-1")
    with caplog.at_level(logging.DEBUG, logger="planfold"):
        goals.create(goals.agent, "Say hello once", max_rounds=1)
        goals.drive(goals.agent, runtime)
        lease = store.acquire_lease("s", "me", 60_000)
        store.release_lease(lease)
    infos = _messages(caplog, "planfold.adapters.store.engine", logging.INFO)
    assert infos[0].startswith("session 's': goal 'goal-1' create at seq ") and infos[0].endswith("active, rounds 0/1")
    assert re.fullmatch(r"session 's': goal 'goal-1' round 1 started at seq \d+ \(revision 1\)", infos[1])
    assert "goal 'goal-1' block at seq" in infos[2] and "blocked, rounds 1/1" in infos[2]
    debug = _messages(caplog, "planfold.adapters.store.engine", logging.DEBUG)
    assert f"session 's': goal lease to 'me', token 1, until {lease.expires_at}" in debug
    assert "session 's': goal lease of 'me' (token 1) released" in debug
