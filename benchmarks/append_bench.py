"""Durable append and group append.

Theory of operation
-------------------
*Durable append* writes one event per transaction, each committed with WAL
and ``synchronous=FULL``: planfold's ``SqliteStore.append`` (compare-and-set,
strict fold of the event onto the stored snapshot, event row, projection row
and snapshot, one ``BEGIN IMMEDIATE`` transaction), the hand-written
``RawLog`` (insert + upsert, nothing checked) and eventsourcing (one
``save`` per event). The three take turns in rounds, each appending the next
slice of the same goal log to its own file, so a burst of load elsewhere on
the machine hits all of them; each system's throughput is the median of its
rounds. Raw sqlite3 over eventsourcing is reported too: it is the most any
store doing the same commits could reach against eventsourcing. The same
comparison with ``synchronous=NORMAL`` (no fsync per commit) shows what the
CPU work costs on its own, with no goal attached.

*Group append* writes a coding-agent session in calls of ``group_batch``
events (one transaction each): planfold's ``append`` against ``RawLog`` with
``executemany``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

from benchmarks.baselines import RawLog
from benchmarks.es_baseline import MISSING, EsLog, load_eventsourcing
from benchmarks.harness import FamilyResult, Measurement, Ratio, Scale, batched, median, ratio, stopwatch, throughput
from benchmarks.workloads import goal_events, session_events
from planfold.adapters.store.sqlite import SqliteStore
from planfold.kernel.log import Event

__all__ = ["SESSION", "run_durable_append", "run_group_append"]

SESSION = "bench-session"
DURABLE = "durable-append"
GROUP = "group-append"

Appender = Callable[[Event], None]


def _rounds(systems: dict[str, Appender], events: list[Event], rounds: int) -> dict[str, list[float]]:
    """Feed each system its slice of ``events`` round by round; events/s per round."""
    per_round = max(1, len(events) // rounds)
    samples: dict[str, list[float]] = {name: [] for name in systems}
    for index in range(rounds):
        chunk = events[index * per_round : (index + 1) * per_round]
        if not chunk:
            break
        for name, append in systems.items():

            def feed(append: Appender = append, chunk: list[Event] = chunk) -> None:
                for event in chunk:
                    append(event)

            seconds, _ = stopwatch(feed)
            samples[name].append(throughput(len(chunk), seconds))
    return samples


def _planfold_appender(store: SqliteStore) -> Appender:
    def append(event: Event) -> None:
        store.append(SESSION, event.seq - 1, [event])

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
        samples = _rounds(systems, rest, scale.append_rounds)
    finally:
        store.close()
        raw.close()
        if es is not None:
            es.close()
    detail = f"{len(rest)} goal-log events, one per transaction, WAL + synchronous=FULL"
    found = {name: Measurement(DURABLE, name, "events/s", median(s), tuple(s), detail) for name, s in samples.items()}
    relaxed = _relaxed(scale, workdir, first, rest)
    ratios = [
        ratio(DURABLE, "durable append: planfold / raw sqlite3", found["planfold"], found["raw-sqlite3"],
              direction="at-least", bound=0.8, how="events/s, median of interleaved rounds"),
        ratio(DURABLE, "durable append: planfold / eventsourcing", found["planfold"], found.get("eventsourcing"),
              direction="at-least", bound=1.5, how="events/s, median of interleaved rounds", missing=MISSING),
        ratio(DURABLE, "durable append ceiling: raw sqlite3 / eventsourcing", found["raw-sqlite3"],
              found.get("eventsourcing"), direction="at-least", bound=None, missing=MISSING,
              how="what a planfold with no overhead at all would reach against eventsourcing"),
        ratio(DURABLE, "append with synchronous=NORMAL: planfold / raw sqlite3", relaxed[0], relaxed[1],
              direction="at-least", bound=None, how="events/s, no fsync per commit: the CPU cost alone"),
    ]
    return FamilyResult(DURABLE, (*found.values(), *relaxed), tuple(ratios), tuple(notes))


def _relaxed(scale: Scale, workdir: Path, first: Event, events: list[Event]) -> tuple[Measurement, Measurement]:
    store = SqliteStore(workdir / "append-planfold-normal.db", synchronous="normal")
    raw = RawLog(workdir / "append-raw-normal.db", synchronous="NORMAL")
    try:
        systems = {"planfold": _planfold_appender(store), "raw-sqlite3": _raw_appender(raw)}
        for append in systems.values():
            append(first)
        samples = _rounds(systems, events, scale.append_rounds)
    finally:
        store.close()
        raw.close()
    detail = f"{len(events)} goal-log events, one per transaction, WAL + synchronous=NORMAL"
    return (
        Measurement(DURABLE, "planfold (synchronous=NORMAL)", "events/s", median(samples["planfold"]),
                    tuple(samples["planfold"]), detail),
        Measurement(DURABLE, "raw-sqlite3 (synchronous=NORMAL)", "events/s", median(samples["raw-sqlite3"]),
                    tuple(samples["raw-sqlite3"]), detail),
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
            seconds, _ = stopwatch(functools.partial(store.append, SESSION, head, batch))
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
