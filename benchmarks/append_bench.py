"""Durable append and group append.

Theory of operation
-------------------
*Durable append* writes one event per transaction, each committed with WAL
and ``synchronous=FULL``: planfold's ``SqliteStore.append`` (compare-and-set,
strict fold of the event onto the stored snapshot, event row, projection row
and snapshot, one ``BEGIN IMMEDIATE`` transaction), the hand-written
``RawLog`` (the same shape: read of the session row, insert, upsert; nothing
checked), eventsourcing (one ``save`` per event) and LangGraph's SQLite
checkpointer (one ``put`` per step, see ``benchmarks.lg_baseline``), each
to its own file. They take turns event by event (``harness.taking_turns``,
the order rotating), so a slow ``fsync`` or a burst of load elsewhere on the
machine falls on all of them alike; the events are cut into rounds, each
ratio is the median of the rounds' own ratios, and their range is its
spread. Raw sqlite3 over eventsourcing is reported too: it is the most any
store doing the same commits could reach against eventsourcing. The same
comparison with ``synchronous=NORMAL`` (no fsync per commit) shows what the
CPU work costs on its own, and is measured in events per CPU second of this
process (SQLite runs in it), so other processes on the machine do not count;
it is also measured through ``SessionLog``, as a runtime appends (each event
a draft the log numbers and folds; the store takes that fold instead of
folding again), which costs the store's own CPU plus the log's numbering.

*Append growth* asks whether an append costs more when the history is long:
the goal log stored at 1k and at 100k events (``benchmarks.logs``) is copied
and appended to, one event per durable transaction, from the events that
continue it, in interleaved repetitions; the user CPU time of the process
(``resource.getrusage``) per append at 100k is held to at most 1.2 times
that at 1k. Each store first takes one untimed append, so both are measured
in the steady state of a live session (snapshot decoded, memo warm).

*Group append* writes a coding-agent session in calls of ``group_batch``
events (one transaction each): planfold's ``append`` against ``RawLog`` with
``executemany``.
"""

from __future__ import annotations

import functools
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.baselines import RawLog
from benchmarks.es_baseline import MISSING, EsLog, load_eventsourcing
from benchmarks.harness import (
    FamilyResult,
    Measurement,
    Ratio,
    Scale,
    batched,
    median,
    ratio,
    stopwatch,
    taking_turns,
    throughput,
    user_cpu,
)
from benchmarks.lg_baseline import LG_MISSING, LgLog, load_langgraph
from benchmarks.logs import SESSION as LOG_SESSION
from benchmarks.logs import stored_log
from benchmarks.workloads import goal_events, session_events
from planfold.adapters.store.base import AppendRequest
from planfold.adapters.store.session_log import SessionLog
from planfold.adapters.store.sqlite import SqliteStore
from planfold.kernel.log import Draft, Event

__all__ = ["SESSION", "run_append_growth", "run_durable_append", "run_group_append"]

SESSION = "bench-session"
DURABLE = "durable-append"
GROWTH = "append-growth"
GROUP = "group-append"

Appender = Callable[[Event], None]


def _planfold_appender(store: SqliteStore) -> Appender:
    def append(event: Event) -> None:
        store.append(AppendRequest(SESSION, event.seq - 1, [event]))

    return append


def _raw_appender(raw: RawLog) -> Appender:
    def append(event: Event) -> None:
        raw.append(SESSION, [event])

    return append


def run_durable_append(scale: Scale, workdir: Path) -> FamilyResult:
    """One event per transaction, FULL sync: planfold against raw sqlite3 and eventsourcing."""
    events = list(goal_events(scale.append_events + 1))
    first, rest = events[0], events[1:]
    notes: list[str] = []
    store = SqliteStore(workdir / "append-planfold.db")
    raw = RawLog(workdir / "append-raw.db")
    lib = load_eventsourcing()
    es = None if lib is None else EsLog(lib, workdir / "append-es.db")
    lg_lib = load_langgraph()
    lg = None if lg_lib is None else LgLog(lg_lib, workdir / "append-langgraph.db")
    try:
        settings = store.settings()
        mode, level = raw.settings()
        notes.append(
            f"planfold store: journal_mode={settings['journal_mode']} synchronous={settings['synchronous']}; "
            f"raw sqlite3: journal_mode={mode} synchronous={level} (2 = FULL)"
        )
        systems: dict[str, Appender] = {"planfold": _planfold_appender(store), "raw-sqlite3": _raw_appender(raw)}
        systems["planfold"](first)
        systems["raw-sqlite3"](first)
        if es is not None:
            aggregate = es.start()
            systems["eventsourcing"] = lambda event: es.append(aggregate, event)
            systems["eventsourcing"](first)
        else:
            notes.append(MISSING)
        if lg is not None:
            systems["langgraph-sqlite"] = lg.append
            lg.append(first)
            mode, level = lg.settings()
            notes.append(f"LangGraph {lg_lib.version if lg_lib else ''}: journal_mode={mode} synchronous={level}")
        else:
            notes.append(LG_MISSING)
        samples = taking_turns(systems, rest, scale.append_rounds)
    finally:
        store.close()
        raw.close()
        if es is not None:
            es.close()
        if lg is not None:
            lg.close()
    detail = f"{len(rest)} goal-log events from an empty log, one per transaction, WAL + synchronous=FULL"
    found = {name: Measurement(DURABLE, name, "events/s", median(s), tuple(s), detail) for name, s in samples.items()}
    relaxed = _relaxed(scale, workdir, first, rest)
    how = "events/s, median of the interleaved rounds' ratios"
    ratios = [
        ratio(DURABLE, "durable append: planfold / raw sqlite3", found["planfold"], found["raw-sqlite3"],
              direction="at-least", bound=0.9, how=how),
        ratio(DURABLE, "durable append: planfold / eventsourcing", found["planfold"], found.get("eventsourcing"),
              direction="at-least", bound=1.0, how=how, missing=MISSING),
        ratio(DURABLE, "durable append: planfold / LangGraph SQLite checkpointer", found["planfold"],
              found.get("langgraph-sqlite"), direction="at-least", bound=1.0, how=how, missing=LG_MISSING),
        ratio(DURABLE, "durable append ceiling: raw sqlite3 / eventsourcing", found["raw-sqlite3"],
              found.get("eventsourcing"), direction="at-least", bound=None, missing=MISSING,
              how="what a planfold with no overhead at all would reach against eventsourcing"),
        ratio(DURABLE, "durable append, synchronous=NORMAL: planfold / raw sqlite3", relaxed[0], relaxed[2],
              direction="at-least", bound=0.5,
              how="events per CPU second of this process, no fsync per commit: the CPU cost alone"),
        ratio(DURABLE, "durable append through SessionLog, synchronous=NORMAL: planfold / raw sqlite3", relaxed[1],
              relaxed[2], direction="at-least", bound=None,
              how="the same, each event a draft the session log numbers and folds once, and the store takes that fold"),
    ]
    return FamilyResult(DURABLE, (*found.values(), *relaxed), tuple(ratios), tuple(notes))


def _log_appender(log: SessionLog) -> Appender:
    def append(event: Event) -> None:
        log.append([Draft(event.kind, event.payload)], at=event.at)

    return append


def _relaxed(scale: Scale, workdir: Path, first: Event, events: list[Event]) -> tuple[Measurement, ...]:
    store = SqliteStore(workdir / "append-planfold-normal.db", synchronous="normal")
    logged = SqliteStore(workdir / "append-planfold-log-normal.db", synchronous="normal")
    raw = RawLog(workdir / "append-raw-normal.db", synchronous="NORMAL")
    try:
        systems = {
            "planfold": _planfold_appender(store),
            "planfold session log": _log_appender(SessionLog(logged, SESSION)),
            "raw-sqlite3": _raw_appender(raw),
        }
        for append in systems.values():
            append(first)
        samples = taking_turns(systems, events, scale.append_rounds, time.process_time)
    finally:
        store.close()
        logged.close()
        raw.close()
    detail = f"{len(events)} goal-log events, one per transaction, WAL + synchronous=NORMAL; per CPU second"
    return tuple(
        Measurement(DURABLE, f"{name} (synchronous=NORMAL)", "events/s", median(found), tuple(found), detail)
        for name, found in samples.items()
    )


def run_group_append(scale: Scale, workdir: Path) -> FamilyResult:
    """Many events per call: planfold's ``append`` against ``executemany``."""
    batches = list(batched(session_events(scale.group_events), scale.group_batch))
    store = SqliteStore(workdir / "group-planfold.db")
    raw = RawLog(workdir / "group-raw.db")
    samples: dict[str, list[float]] = {"planfold": [], "raw-sqlite3": []}
    try:
        for batch in batches:
            head = batch[0].seq - 1
            seconds, _ = stopwatch(functools.partial(store.append, AppendRequest(SESSION, head, batch)))
            samples["planfold"].append(throughput(len(batch), seconds))
            seconds, _ = stopwatch(functools.partial(raw.append_many, SESSION, batch))
            samples["raw-sqlite3"].append(throughput(len(batch), seconds))
    finally:
        store.close()
        raw.close()
    count = sum(len(b) for b in batches)
    detail = f"{count} session events in calls of {scale.group_batch}, WAL + synchronous=FULL"
    found = {name: Measurement(GROUP, name, "events/s", median(s), tuple(s), detail) for name, s in samples.items()}
    ratios: tuple[Ratio, ...] = (
        ratio(GROUP, "group append: planfold / raw sqlite3 executemany", found["planfold"], found["raw-sqlite3"],
              direction="at-least", bound=None, how="events/s, median over calls"),
    )
    return FamilyResult(GROUP, tuple(found.values()), ratios)



def _copy_db(source: Path, target: Path) -> None:
    for side in ("", "-wal"):
        if Path(f"{source}{side}").exists():
            shutil.copyfile(f"{source}{side}", f"{target}{side}")


def run_append_growth(scale: Scale, workdir: Path) -> FamilyResult:
    """User CPU per durable append onto a 100k-event log against a 1k-event one."""
    workdir.mkdir(parents=True, exist_ok=True)
    root = workdir.parent / "logs"
    sizes = {"small": scale.small_events, "mid": scale.mid_events}
    logs = {name: stored_log(root, "goal", count, scale.build_batch) for name, count in sizes.items()}
    stores: dict[str, SqliteStore] = {}
    heads: dict[str, int] = {}
    per = scale.growth_appends
    samples: dict[str, list[float]] = {name: [] for name in sizes}
    try:
        for name, log in logs.items():
            copy = workdir / f"growth-{name}.db"
            _copy_db(log.db, copy)
            stores[name] = SqliteStore(copy)
            stores[name].append(AppendRequest(LOG_SESSION, log.count, log.tail[:1]))  # steady state: snapshot decoded
            heads[name] = log.count + 1
        for repetition in range(scale.growth_repeats):
            for name, log in logs.items():
                start = 1 + repetition * per
                chunk = log.tail[start : start + per]
                store = stores[name]
                before = user_cpu()
                for event in chunk:
                    store.append(AppendRequest(LOG_SESSION, event.seq - 1, [event]))
                samples[name].append((user_cpu() - before) / len(chunk) * 1e6)
    finally:
        for store in stores.values():
            store.close()
    found = {
        name: Measurement(GROWTH, f"user CPU per append, {sizes[name]:,}-event goal log", "us", median(s), tuple(s),
                          f"{per} appends per repetition, one event per transaction, WAL + synchronous=FULL")
        for name, s in samples.items()
    }
    ratios = (
        ratio(GROWTH, f"user CPU per append: {sizes['mid']:,} events / {sizes['small']:,} events", found["mid"],
              found["small"], direction="at-most", bound=1.2,
              how="user CPU microseconds per append, median of the interleaved repetitions' ratios"),
    )
    notes = tuple(log.describe() for log in logs.values())
    return FamilyResult(GROWTH, tuple(found.values()), ratios, notes)
