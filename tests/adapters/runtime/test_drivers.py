"""One step machine, three drivers: the demo's scripted session run through
the synchronous ``Runtime``, the asyncio ``AsyncRuntime`` and ``planfold
serve`` writes the same log."""

from __future__ import annotations

import asyncio
import io
import itertools
from collections.abc import Callable
from pathlib import Path

from planfold.adapters.cli.demo import run_demo
from planfold.adapters.cli.demo_script import DEMO_FILES, TASK, after_restart_model, demo_reviewer, first_model
from planfold.adapters.codec import encode_jsonl
from planfold.adapters.llm.scripted import ScriptedClient
from planfold.adapters.runtime.aio import AsyncRuntime, InThread
from planfold.adapters.runtime.goal_service import AsyncGoalService
from planfold.adapters.runtime.machine import TurnReport
from planfold.adapters.runtime.tool_runner import ToolRunner
from planfold.adapters.runtime.toolset import default_registry
from planfold.adapters.runtime.workspace import Workspace
from planfold.adapters.store.sqlite import SqliteStore
from planfold.kernel.log import Event
from tests.adapters.serve.test_demo_over_serve import _serve_demo


def _ticks(start: int = 1_700_000_000_000) -> Callable[[], int]:
    counter = itertools.count()
    return lambda: start + 1000 * next(counter)


def _apart_from_times(events: tuple[Event, ...]) -> list[tuple[int, str, object]]:
    return [(e.seq, e.kind, e.payload) for e in events]


async def _async_demo(db: Path, session: str) -> None:
    """The demo's session (``run_demo``'s calls, in its order) through ``AsyncRuntime``."""
    store = SqliteStore(db)
    workspace = Workspace(dict(DEMO_FILES))
    clock = _ticks()
    first, second = first_model(), after_restart_model()

    async def runtime(model: ScriptedClient) -> AsyncRuntime:
        tools = ToolRunner(default_registry(), executors=workspace.executors())
        return await asyncio.to_thread(
            AsyncRuntime, store, session, InThread(model), tools, demo_reviewer(), clock=clock
        )

    assert isinstance(first, ScriptedClient) and isinstance(second, ScriptedClient)
    run = await runtime(first)
    assert await run.submit("/plan") == "committed"
    report = await run.submit(TASK)
    assert isinstance(report, TurnReport) and report.ended_by == "reply"
    goals = AsyncGoalService(run.goal_log, "agent-1", lambda: f"goal-{run.state.last_seq + 1}")
    await goals.create(goals.agent, "Keep README.md and greet.py consistent", max_rounds=2)
    drive = await goals.drive_async(goals.agent, run)
    assert drive.stopped == "budget-spent"
    await goals.edit(goals.agent, max_rounds=3)
    await goals.resume(goals.agent)
    # the restart: a new runtime on the same store, process state new
    run = await runtime(second)
    goals = AsyncGoalService(run.goal_log, "agent-1", lambda: f"goal-{run.state.last_seq + 1}")
    assert (await goals.drive_async(goals.agent, run)).stopped == "disarmed"
    await goals.resume(goals.agent)
    assert (await goals.drive_async(goals.agent, run)).stopped == "budget-spent"
    assert first.remaining == 0 and second.remaining == 0
    store.close()


def test_the_demo_session_writes_the_same_log_through_the_runtime_the_asyncio_runtime_and_serve(
    tmp_path: Path,
) -> None:
    result = run_demo(str(tmp_path / "sync.sqlite"), io.StringIO())
    assert result.audit_ok
    with SqliteStore(tmp_path / "sync.sqlite") as store:
        synchronous = store.read(result.session_id)
    asyncio.run(_async_demo(tmp_path / "async.sqlite", result.session_id))
    with SqliteStore(tmp_path / "async.sqlite") as store:
        asynchronous = store.read(result.session_id)
        assert store.audit(result.session_id).ok
    served = _serve_demo(str(tmp_path / "served.sqlite"), result.session_id)
    assert len(synchronous) > 50
    assert _apart_from_times(asynchronous) == _apart_from_times(synchronous)
    assert served == encode_jsonl(synchronous)  # serve's clock ticks as the demo's: the very bytes
