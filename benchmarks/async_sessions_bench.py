"""Many asyncio sessions on one event loop: planfold's ``AsyncRuntime`` over
its async stores against LangGraph's async graph with its checkpointers.

Theory of operation
-------------------
N sessions run at once in one ``asyncio.TaskGroup``, 3 turns each. A turn
is model -> one ``read_file`` call -> model -> final answer. The model is
an async port whose latency is seeded and uniform in [0.5, 1.5] s per call
(the same draws for both systems), so the ideal wall time is the longest
session's summed latency: everything else is the system's own cost.

- planfold: ``AsyncRuntime.open`` over ``AsyncMemoryStore``,
  ``AsyncSqliteStore`` and ``AsyncPostgresStore``; ``read_file`` is an
  awaited executor (no thread).
- LangGraph: an async ``StateGraph`` with a model node and a tool node,
  one thread id per session, with ``InMemorySaver``, ``AsyncSqliteSaver``
  and ``AsyncPostgresSaver`` (a pool of 20 connections).

Measured per run: wall time / ideal, the event loop's lag (a task that
sleeps 10 ms in a loop: the p99 and the largest overshoot) and the
process's CPU time per turn. Goals at the larger N: wall / ideal <= 1.1
on every backend, p99 lag <= 10 ms (held as p99 / 10 ms <= 1), planfold's
CPU per turn <= 0.5 x LangGraph's on the same backend.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any

from benchmarks.harness import FamilyResult, Measurement, Ratio, Scale, median
from planfold.adapters.llm.model import ChatRequest, ChatResponse, ToolCall
from planfold.adapters.runtime.aio import AsyncRuntime
from planfold.adapters.runtime.tool_runner import ToolRunner
from planfold.adapters.runtime.toolset import default_registry
from planfold.adapters.store.aio_memory import AsyncMemoryStore
from planfold.adapters.store.aio_sqlite import AsyncSqliteStore

try:  # the bench extra; LangGraph finds a node's config by this annotation
    from langchain_core.runnables import RunnableConfig
except ImportError:  # pragma: no cover - LangGraph's side is then not measured
    RunnableConfig = Any  # type: ignore[misc,assignment]

__all__ = ["run_async_sessions"]

FAMILY = "async-sessions"
TURNS = 3
CALLS = 2 * TURNS
FILES = {"notes.md": "# notes\n" + "a line of notes\n" * 20}


def latencies(sessions: int, seed: int = 7) -> list[list[float]]:
    """Each session's model latencies, seeded, uniform in [0.5, 1.5] s."""
    draw = random.Random(seed)
    return [[draw.uniform(0.5, 1.5) for _ in range(CALLS)] for _ in range(sessions)]


class _Model:
    """The async model port of one session: asks for ``read_file`` after a
    user message, answers after a tool result."""

    def __init__(self, delays: list[float]) -> None:
        self.delays = iter(delays)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        await asyncio.sleep(next(self.delays))
        if request.messages[-1].role == "tool":
            return ChatResponse("The notes say: a line of notes.", finish_reason="stop")
        return ChatResponse(None, (ToolCall.of("c1", "read_file", {"path": "notes.md"}),), "tool_calls")


async def _read_file(arguments: Mapping[str, object]) -> Any:
    return {"path": arguments["path"], "content": FILES[str(arguments["path"])]}


class _Lag:
    """A task that sleeps 10 ms in a loop and records how late it wakes."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self.done = False

    async def run(self) -> None:
        while not self.done:
            started = time.perf_counter()
            await asyncio.sleep(0.01)
            self.samples.append(max(0.0, time.perf_counter() - started - 0.01) * 1000)

    def p99(self) -> float:
        ordered = sorted(self.samples) or [0.0]
        return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


_Run = tuple[float, float, float, float]


async def _timed(sessions: int, one: Callable[[int], Coroutine[Any, Any, None]]) -> _Run:
    """Run ``one(n)`` for every session at once: wall s, CPU s, p99 and max lag ms."""
    lag = _Lag()
    lagging = asyncio.create_task(lag.run())
    cpu, wall = time.process_time(), time.perf_counter()
    async with asyncio.TaskGroup() as group:
        for n in range(sessions):
            group.create_task(one(n))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    lag.done = True
    await lagging
    return wall, cpu, lag.p99(), max(lag.samples or [0.0])


async def _planfold(store: Any, sessions: int, delays: list[list[float]]) -> _Run:
    tools = ToolRunner(default_registry(), async_executors={"read_file": _read_file})
    runtimes = [await AsyncRuntime.open(store, f"s{n}", _Model(delays[n]), tools) for n in range(sessions)]

    async def one(n: int) -> None:
        for turn in range(TURNS):
            report = await runtimes[n].run_turn(f"Turn {turn}: what do the notes say?")
            assert report.ended_by == "reply", report

    return await _timed(sessions, one)


def _graph(checkpointer: Any, delays: list[list[float]]) -> Any:
    from langchain_core.messages import AIMessage, ToolMessage  # noqa: PLC0415
    from langgraph.graph import END, START, StateGraph  # noqa: PLC0415 (the bench extra)
    from langgraph.graph.message import MessagesState  # noqa: PLC0415

    models: dict[str, Any] = {}

    async def model(state: Any, config: RunnableConfig) -> dict[str, Any]:
        thread = str((config.get("configurable") or {})["thread_id"])
        delays_of = models.setdefault(thread, iter(delays[int(thread[1:])]))
        await asyncio.sleep(next(delays_of))
        last = state["messages"][-1]
        if isinstance(last, ToolMessage):
            return {"messages": [AIMessage("The notes say: a line of notes.")]}
        call = {"id": "c1", "name": "read_file", "args": {"path": "notes.md"}}
        return {"messages": [AIMessage("", tool_calls=[call])]}

    async def tools(state: Any) -> dict[str, Any]:
        last: Any = state["messages"][-1]
        call = last.tool_calls[0]
        result = await _read_file(call["args"])
        return {"messages": [ToolMessage(json.dumps(result), tool_call_id=call["id"])]}

    def route(state: Any) -> str:
        last: Any = state["messages"][-1]
        return "tools" if last.tool_calls else END

    graph = StateGraph(MessagesState)
    graph.add_node("model", model)
    graph.add_node("tools", tools)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", route, ["tools", END])
    graph.add_edge("tools", "model")
    return graph.compile(checkpointer=checkpointer)


async def _langgraph(checkpointer: Any, sessions: int, delays: list[list[float]]) -> _Run:
    graph = _graph(checkpointer, delays)

    async def one(n: int) -> None:
        config = {"configurable": {"thread_id": f"s{n}"}}
        for turn in range(TURNS):
            await graph.ainvoke({"messages": [("user", f"Turn {turn}: what do the notes say?")]}, config)

    return await _timed(sessions, one)


async def _run_one(
    system: str, backend: str, sessions: int, delays: list[list[float]], *, where: Path, pg: str | None
) -> _Run | None:
    """One run of ``system`` on ``backend``; None when it cannot run here."""
    if system == "planfold":
        if backend == "memory":
            store: Any = AsyncMemoryStore()
        elif backend == "sqlite":
            store = await AsyncSqliteStore.open(where / "planfold.sqlite")
        else:
            if pg is None:
                return None
            from planfold.adapters.store.aio_postgres import AsyncPostgresStore  # noqa: PLC0415

            store = await AsyncPostgresStore.open(pg, pool_size=20)
        try:
            return await _planfold(store, sessions, delays)
        finally:
            await store.close()
    try:
        if backend == "memory":
            from langgraph.checkpoint.memory import InMemorySaver  # noqa: PLC0415

            return await _langgraph(InMemorySaver(), sessions, delays)
        if backend == "sqlite":
            from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver  # noqa: PLC0415

            async with AsyncSqliteSaver.from_conn_string(str(where / "langgraph.sqlite")) as saver:
                return await _langgraph(saver, sessions, delays)
        if pg is None:
            return None
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver  # noqa: PLC0415
        from psycopg.rows import dict_row  # noqa: PLC0415
        from psycopg_pool import AsyncConnectionPool  # noqa: PLC0415

        kwargs: dict[str, Any] = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
        pool: Any = AsyncConnectionPool(pg, max_size=20, kwargs=kwargs, open=False)
        async with pool:
            pg_saver: Any = AsyncPostgresSaver(pool)
            await pg_saver.setup()
            return await _langgraph(pg_saver, sessions, delays)
    except ImportError:
        return None


def run_async_sessions(scale: Scale, workdir: Path) -> FamilyResult:
    """Wall / ideal, loop lag and CPU per turn of N asyncio sessions, planfold against LangGraph."""
    from benchmarks.pg_bench import start_server  # noqa: PLC0415 (a server of the family's own)

    sizes = sorted({max(10, round(100 * scale.factor)), max(20, round(1000 * scale.factor))})
    repeats = 2 if scale.factor >= 1 else 1
    cluster, why = start_server()
    notes: list[str] = [] if cluster is not None else [f"PostgreSQL {why}"]
    measurements: list[Measurement] = []
    ratios: list[Ratio] = []
    try:
        for sessions in sizes:
            delays = latencies(sessions)
            ideal = max(sum(d) for d in delays)
            for backend in ("memory", "sqlite", "postgres"):
                cpu: dict[str, list[float]] = {}
                for system in ("planfold", "langgraph"):
                    runs = []
                    for rep in range(repeats):
                        where = workdir / f"{system}-{backend}-{sessions}-{rep}"
                        where.mkdir(parents=True, exist_ok=True)
                        pg = None
                        if cluster is not None and backend == "postgres":
                            pg = cluster.schema_url(f"{system}_{sessions}_{rep}")
                        done = asyncio.run(_run_one(system, backend, sessions, delays, where=where, pg=pg))
                        if done is not None:
                            runs.append(done)
                    if not runs:
                        notes.append(f"{system} on {backend} at N={sessions}: not measured here")
                        continue
                    subject = f"{system} {backend} N={sessions}"
                    turns = sessions * TURNS
                    walls = tuple(w / ideal for w, _, _, _ in runs)
                    cpu[system] = [c / turns * 1000 for _, c, _, _ in runs]
                    measurements.append(Measurement(FAMILY, f"{subject} wall/ideal", "x", median(walls), walls))
                    measurements.append(
                        Measurement(FAMILY, f"{subject} CPU per turn", "ms", median(cpu[system]), tuple(cpu[system]))
                    )
                    p99s = tuple(p for _, _, p, _ in runs)
                    peaks = tuple(m for _, _, _, m in runs)
                    measurements.append(Measurement(FAMILY, f"{subject} loop lag p99", "ms", median(p99s), p99s))
                    measurements.append(Measurement(FAMILY, f"{subject} loop lag max", "ms", median(peaks), peaks))
                    if system == "planfold" and sessions == sizes[-1]:
                        ratios.append(
                            Ratio(FAMILY, f"planfold {backend} N={sessions}: wall / ideal", median(walls),
                                  "at-most", 1.1, "wall time over the longest session's summed model latency",
                                  samples=walls)
                        )
                        lag = tuple(p / 10.0 for p in p99s)
                        ratios.append(
                            Ratio(FAMILY, f"planfold {backend} N={sessions}: loop lag p99 / 10 ms", median(lag),
                                  "at-most", 1.0, "p99 overshoot of a 10 ms sleep, over 10 ms", samples=lag)
                        )
                if "planfold" in cpu and "langgraph" in cpu and sessions == sizes[-1]:
                    pairs = tuple(a / b for a, b in zip(cpu["planfold"], cpu["langgraph"], strict=False))
                    ratios.append(
                        Ratio(FAMILY, f"{backend} N={sessions}: CPU per turn planfold / LangGraph", median(pairs),
                              "at-most", 0.5, "process CPU time per turn, same workload and backend", samples=pairs)
                    )
    finally:
        if cluster is not None:
            with contextlib.suppress(Exception):
                cluster.stop()
    return FamilyResult(FAMILY, tuple(measurements), tuple(ratios), tuple(notes))
