"""One step through ``planfold serve`` against the same step in-process.

Theory of operation
-------------------
A host runtime in another language reaches planfold through a pipe; what
that costs on top of the decisions themselves is the question. One step of a
host is measured as the three calls it makes before it can run anything:
``step/begin`` (the pre-step flush and the request header),
``step/context`` (the prompt sections and the tools to offer) and
``step/reply`` with one tool call (recorded and checked by the gate). The
call is then dispatched and its result recorded, untimed, so the next step
starts from the same place; every ``TURN_STEPS`` steps the turn is closed and
a new one opened, untimed, so the conversation stays the same size.

The same steps run two ways, interleaved (server, in-process, server, …),
each on its own in-memory store so that storage costs nothing on either
side: through a ``planfold serve --db :memory:`` child process over its
pipes (``ServeClient``: JSON encode, write, the server's read, decode,
dispatch, encode, write, the client's read and decode), and as the same
``HostSession`` methods called directly. The row reported is the median of
the per-step difference (server minus in-process) in milliseconds, held to
the goal of at most 1 ms; the median per-step quotient (server over
in-process) is reported beside it, without a goal.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.harness import FamilyResult, Measurement, Scale, difference, median, ratio, stopwatch
from planfold.adapters.llm.model import ChatResponse, ToolCall
from planfold.adapters.runtime.toolset import READ_FILE
from planfold.adapters.serve.client import ServeClient
from planfold.adapters.serve.host import HostConfig, HostSession
from planfold.adapters.store.memory import MemoryStore
from planfold.kernel.tools.spec import thaw_json

__all__ = ["ADDED_GOAL_MS", "TURN_STEPS", "run_serve"]

SERVE = "serve-step"
SESSION = "bench-serve"
#: Steps per turn before the turn is closed and a new one opened.
TURN_STEPS = 20
#: The goal: at most this many milliseconds added per step by the server.
ADDED_GOAL_MS = 1.0

_DECL: dict[str, Any] = {
    "name": READ_FILE.name,
    "description": READ_FILE.description,
    "parameters": thaw_json(READ_FILE.parameters),
    "effect": READ_FILE.effect,
}


class _Remote:
    """The host's side of the pipe."""

    def __init__(self) -> None:
        argv = [sys.executable, "-m", "planfold.adapters.cli", "serve", "--db", ":memory:"]
        self.client = ServeClient(argv)
        self.session = ""

    def fresh(self, session: str) -> None:
        if self.session:
            self.client.call("session/close", session=self.session)
        self.session = session
        self.client.call("session/open", session=session, tools=[_DECL])
        self.client.call("turn/start", session=session, text="a turn")

    def step(self, step: int, call_id: str) -> None:
        self.client.call("step/begin", session=self.session, step=step)
        self.client.call("step/context", session=self.session)
        call = {"id": call_id, "name": "read_file", "arguments_json": '{"path": "README.md"}'}
        self.client.call("step/reply", session=self.session, tool_calls=[call])

    def answer(self, call_id: str) -> None:
        self.client.call("tool/dispatch", session=self.session, call_id=call_id)
        self.client.call("tool/result", session=self.session, call_id=call_id, ok=True, output="# readme")


class _Local:
    """The same calls on a ``HostSession`` in this process."""

    def __init__(self) -> None:
        clock = itertools.count(1_700_000_000_000)
        self.clock = lambda: next(clock)
        self.store = MemoryStore()
        self.session: HostSession | None = None

    def fresh(self, session: str) -> None:
        self.session = HostSession(self.store, session, self.clock, HostConfig((READ_FILE,)))
        self.session.start_turn("a turn")

    def _host(self) -> HostSession:
        assert self.session is not None
        return self.session

    def step(self, step: int, call_id: str) -> None:
        host = self._host()
        host.begin_step(step)
        host.context()
        host.reply(ChatResponse(None, (ToolCall.parse(call_id, "read_file", '{"path": "README.md"}'),)))

    def answer(self, call_id: str) -> None:
        self._host().dispatch(call_id)
        self._host().tool_result(call_id, True, "# readme")


def _steps(host: _Remote | _Local, count: int, first: int) -> list[float]:
    """Milliseconds of each of ``count`` steps; every ``TURN_STEPS`` steps a
    fresh session with one open turn (untimed), so every step meets a log of
    the same size."""
    samples = []
    for index in range(first, first + count):
        step = index % TURN_STEPS + 1
        if step == 1:
            host.fresh(f"{SESSION}-{index // TURN_STEPS}")
        call_id = f"c{index}"
        seconds, _ = stopwatch(_bind(host.step, step, call_id))
        samples.append(seconds * 1000)
        host.answer(call_id)
    return samples


def _bind(fn: Callable[[int, str], None], step: int, call_id: str) -> Callable[[], None]:
    return lambda: fn(step, call_id)


def run_serve(scale: Scale, workdir: Path) -> FamilyResult:
    """The median step through the server against the same step in-process."""
    remote, local = _Remote(), _Local()
    served: list[float] = []
    direct: list[float] = []
    try:
        _steps(remote, TURN_STEPS, 0)  # warm both sides: imports, first-use caches
        _steps(local, TURN_STEPS, 0)
        for turn in range(1, max(1, scale.serve_steps // TURN_STEPS) + 1):
            served += _steps(remote, TURN_STEPS, turn * TURN_STEPS)
            direct += _steps(local, TURN_STEPS, turn * TURN_STEPS)
    finally:
        status = remote.client.close()
    step_served = Measurement(SERVE, "step through planfold serve", "ms", median(served), tuple(served),
                              "step/begin + step/context + step/reply with one tool call, over the pipe")
    step_direct = Measurement(SERVE, "the same step in-process", "ms", median(direct), tuple(direct),
                              "the same HostSession methods called directly")
    added = difference(
        SERVE, "serve step: added latency (ms)", step_served, step_direct, bound=ADDED_GOAL_MS,
        how="median per-step difference, through the server minus in-process, in milliseconds",
    )
    overhead = ratio(SERVE, "serve step: server / in-process", step_served, step_direct,
                     direction="at-most", bound=None, how="median per-step quotient, server / in-process")
    notes = (f"{len(served)} steps each way; the server exited with status {status}",)
    return FamilyResult(SERVE, (step_served, step_direct), (added, overhead), notes)
