"""Concurrent writers: appends from many threads through one store.

Theory of operation
-------------------
A server running many agent sessions appends to each from its own thread.
Each writer here is a thread appending the goal log (``benchmarks.workloads``)
to a session of its own, one event per call, durably (WAL,
``synchronous=FULL``), all of them at once (they start together at a
barrier). planfold's writers share one ``SqliteStore``, whose group commit
gives the appends waiting at the same time one transaction and one flush
(each still with its own compare-and-set and strict fold). The baseline is
``RawLog`` (``benchmarks.baselines``): the same threads, one transaction per
append with the same compare-and-set, sharing one connection under a lock,
which is what ``sqlite3`` offers a program that does not group commits (a
connection per thread only adds the busy handler's sleeps).

For 1, 8 and 64 writers each system runs ``concurrent_rounds`` rounds of
``concurrent_appends`` appends per writer, the systems taking turns round by
round; a round's throughput is its appends over its wall time, and every
append's latency is kept. The goals: planfold's events/s over raw sqlite3's
with 8 and with 64 writers (the median of the rounds' quotients), and
planfold's 99th-percentile append latency with 8 writers over its own with
one writer.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

from benchmarks.baselines import RawLog
from benchmarks.harness import FamilyResult, Measurement, Ratio, Scale, median, ratio
from benchmarks.workloads import goal_events
from planfold.adapters.store.base import AppendRequest
from planfold.adapters.store.engine import LogStore
from planfold.adapters.store.sqlite import SqliteStore
from planfold.kernel.log import Event

__all__ = ["WRITERS", "Turn", "rates", "run_concurrent_append", "store_appender", "turns", "writers_round"]

FAMILY = "concurrent-append"
#: The numbers of writers measured.
WRITERS = (1, 8, 64)

Append = Callable[[str, Event], None]
#: Each system's appender by number of writers.
Systems = Mapping[str, Mapping[int, Append]]


def writers_round(append: Append, sessions: list[str], events: list[Event]) -> tuple[float, list[float]]:
    """Every writer appends ``events`` to its session at once: the round's
    events/s (wall time) and every append's latency in seconds."""
    barrier = threading.Barrier(len(sessions) + 1)
    latencies: list[list[float]] = [[] for _ in sessions]
    failures: list[BaseException] = []

    def work(index: int) -> None:
        own, session = latencies[index], sessions[index]
        barrier.wait()
        try:
            for event in events:
                start = time.perf_counter()
                append(session, event)
                own.append(time.perf_counter() - start)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(index,)) for index in range(len(sessions))]
    for thread in threads:
        thread.start()
    barrier.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - start
    if failures:
        raise failures[0]
    return len(sessions) * len(events) / max(seconds, 1e-9), [x for own in latencies for x in own]


class Turn(NamedTuple):
    """One system's round: its name, its number of writers, its events/s
    (wall time), every append's latency in seconds, and the CPU seconds this
    process spent on it (user and system, every thread)."""

    system: str
    writers: int
    rate: float
    latencies: list[float]
    cpu: float


def store_appender(store: LogStore) -> Append:
    """Appends an event through ``store`` after the seq before it."""

    def append(session: str, event: Event) -> None:
        store.append(AppendRequest(session, event.seq - 1, [event]))

    return append


def _cpu() -> float:
    times = os.times()
    return times.user + times.system


def turns(systems: Systems, events: list[Event], per_round: int, rounds: int) -> Iterator[Turn]:
    """``rounds`` rounds of ``per_round`` of ``events`` for every system (its
    appender by number of writers: each writer on a session of its own) and
    every number of writers, the systems taking turns round by round in an
    order that alternates."""
    counts = sorted({n for by_count in systems.values() for n in by_count})
    for index in range(rounds):
        chunk = events[index * per_round : (index + 1) * per_round]
        for n in counts:
            sessions = [f"writer-{w}" for w in range(n)]
            order = [(name, by_count[n]) for name, by_count in systems.items()]
            for name, append in order if index % 2 == 0 else order[::-1]:
                before = _cpu()
                rate, latencies = writers_round(append, sessions, chunk)
                yield Turn(name, n, rate, latencies, _cpu() - before)


def rates(family: str, done: list[Turn], detail: str, noun: str = "writer") -> dict[tuple[str, int], Measurement]:
    """Each system's events/s by number of writers (``noun``s), one sample a round."""
    samples: dict[tuple[str, int], list[float]] = {}
    for turn in done:
        samples.setdefault((turn.system, turn.writers), []).append(turn.rate)
    return {
        key: Measurement(family, f"{key[0]}, {key[1]} {noun}{'s' if key[1] > 1 else ''}", "events/s",
                         median(values), tuple(values), detail)
        for key, values in samples.items()
    }  # fmt: skip


def _p99(latencies: list[float]) -> float:
    ordered = sorted(latencies)
    return ordered[round(0.99 * (len(ordered) - 1))]


def run_concurrent_append(scale: Scale, workdir: Path) -> FamilyResult:
    """Events/s of 1, 8 and 64 writers through planfold's store and raw sqlite3, and planfold's p99 latency."""
    per_round, rounds = scale.concurrent_appends, scale.concurrent_rounds
    events = list(goal_events(per_round * rounds))
    stores = {n: SqliteStore(workdir / f"planfold-{n}.db") for n in WRITERS}
    raws = {n: RawLog(workdir / f"raw-{n}.db") for n in WRITERS}
    locks = {n: threading.Lock() for n in WRITERS}

    def raw(n: int) -> Append:
        log, lock = raws[n], locks[n]

        def append(session: str, event: Event) -> None:
            with lock:
                log.append(session, [event])

        return append

    systems = {"planfold": {n: store_appender(stores[n]) for n in WRITERS}, "raw-sqlite3": {n: raw(n) for n in WRITERS}}
    try:
        done = list(turns(systems, events, per_round, rounds))
    finally:
        for store in stores.values():
            store.close()
        for log in raws.values():
            log.close()
    detail = f"{per_round} goal-log events per writer per round, one per transaction, WAL + synchronous=FULL"
    found = rates(FAMILY, done, detail)
    p99s: dict[int, list[float]] = {}
    for turn in done:
        if turn.system == "planfold":
            p99s.setdefault(turn.writers, []).append(_p99(turn.latencies) * 1e6)
    latency = {
        n: Measurement(FAMILY, f"planfold p99 append latency, {n} writer{'s' if n > 1 else ''}", "us",
                       median(samples), tuple(samples), "the 99th percentile of the round's appends")
        for n, samples in p99s.items()
    }
    how = "events/s of the same writers appending at once, median of the rounds' quotients"
    ratios: tuple[Ratio, ...] = (
        ratio(FAMILY, "8 concurrent writers: planfold / raw sqlite3 (one transaction per append)",
              found[("planfold", 8)], found[("raw-sqlite3", 8)], direction="at-least", bound=3.0, how=how),
        ratio(FAMILY, "64 concurrent writers: planfold / raw sqlite3 (one transaction per append)",
              found[("planfold", 64)], found[("raw-sqlite3", 64)], direction="at-least", bound=5.0, how=how),
        ratio(FAMILY, "p99 append latency, 8 writers / one writer", latency[8], latency[1],
              direction="at-most", bound=3.0, how="planfold's 99th-percentile latency per round, median of the "
              "rounds' quotients"),
        ratio(FAMILY, "one writer: planfold / raw sqlite3", found[("planfold", 1)], found[("raw-sqlite3", 1)],
              direction="at-least", bound=None, how=how),
    )
    return FamilyResult(FAMILY, (*found.values(), *latency.values()), ratios)
