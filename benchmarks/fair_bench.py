"""Fair writers: a store shared by threads beside another process that writes.

Theory of operation
-------------------
A server process appends for many sessions through one ``SqliteStore`` (its
threads' appends share commits), while another process writes to the same
file through a connection of its own. Each round here runs, for a fixed
time, four threads appending through one store and one other process
appending through its own store, in one of two mixes:

- ``own sessions``: each writer appends to a session of its own;
- ``one session``: all five append to the same session, each retrying a
  conflict with the head it reads back.

A round counts every writer's appends. Its fairness is the fewest appends of
one writer over the most of one writer (1 = equal shares, 0 = someone
starved); its throughput is all appends over the round's time. planfold's
store takes the write lock in turns while others write
(``adapters.store.sqlite_turns``); the baseline is the same store with that
switched off (SQLite's busy handler alone, as before), measured in the same
run, the two taking rounds in turn. Goals: fairness at least 0.5 with a
session per writer and at least 0.05 on one contended session, and total
throughput not below the baseline's.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.harness import FamilyResult, Measurement, Ratio, Scale, median, ratio
from planfold.adapters.store.base import AppendRequest
from planfold.adapters.store.contract_logs import batch_after
from planfold.adapters.store.sqlite import SqliteStore
from planfold.kernel.errors import ConflictError

__all__ = ["FAMILY", "MIXES", "THREADS", "appending", "run_fair_writers"]

FAMILY = "fair-writers"
#: The threads that share one store.
THREADS = 4
#: The mixes measured: whether every writer appends to the same session.
MIXES = {"own sessions": False, "one session": True}
_SYSTEMS = ("planfold", "busy handler only")


def _store(path: str, turns: bool) -> SqliteStore:
    return SqliteStore(path, take_turns=turns)


def appending(store: SqliteStore, session: str, until: Callable[[], bool]) -> int:
    """Append one event at a time to ``session`` until ``until()``, retrying a
    conflict from the head read back; how many appends landed."""
    landed = 0
    head = store.head(session)
    while not until():
        try:
            store.append(AppendRequest(session, head, batch_after(head, 1)))
        except ConflictError:
            head = store.head(session)
            continue
        head += 1
        landed += 1
    return landed


def _other(path: str, turns: bool, session: str, seconds: float, signals: tuple[Any, Any]) -> None:
    """The other process: its own store, appending from the start signal for ``seconds``."""
    start, answers = signals
    store = _store(path, turns)
    try:
        store.head(session)  # opened before the start
        answers.put("ready")
        start.wait()
        end = time.monotonic() + seconds
        answers.put(appending(store, session, lambda: time.monotonic() >= end))
    finally:
        store.close()


def _round(path: Path, turns: bool, contended: bool, seconds: float) -> tuple[list[int], float]:
    """One round: every writer's appends and the round's wall time."""
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    answers = context.Queue()
    sessions = ["shared"] * (THREADS + 1) if contended else [f"thread-{n}" for n in range(THREADS)] + ["other"]
    child = context.Process(target=_other, args=(str(path), turns, sessions[-1], seconds, (start, answers)))
    child.start()
    store = _store(str(path), turns)
    counts = [0] * THREADS
    failures: list[BaseException] = []
    try:
        if answers.get(timeout=120) != "ready":
            raise RuntimeError("the other process did not start")
        end = time.monotonic() + seconds

        def work(index: int) -> None:
            try:
                counts[index] = appending(store, sessions[index], lambda: time.monotonic() >= end)
            except BaseException as exc:  # reported below
                failures.append(exc)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(THREADS)]
        began = time.perf_counter()
        start.set()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        other = int(answers.get(timeout=120))
        wall = time.perf_counter() - began
    finally:
        child.join(120)
        store.close()
    if failures:
        raise failures[0]
    return [*counts, other], wall


def run_fair_writers(scale: Scale, workdir: Path) -> FamilyResult:
    """Fairness and throughput of four threads sharing a store beside another process, in both mixes."""
    seconds = max(0.3, 2.0 * min(1.0, scale.factor))
    rounds = scale.concurrent_rounds
    fairness: dict[tuple[str, str], list[float]] = {}
    totals: dict[tuple[str, str], list[float]] = {}
    for mix, contended in MIXES.items():
        for index in range(rounds):
            for system in _SYSTEMS if index % 2 == 0 else reversed(_SYSTEMS):
                path = workdir / f"{mix.replace(' ', '-')}-{system.replace(' ', '-')}-{index}.db"
                counts, wall = _round(path, system == "planfold", contended, seconds)
                fairness.setdefault((mix, system), []).append(min(counts) / max(*counts, 1))
                totals.setdefault((mix, system), []).append(sum(counts) / wall)
    detail = f"{THREADS} threads through one store and one other process, {seconds:g} s rounds, WAL + synchronous=FULL"
    measurements: list[Measurement] = []
    ratios: list[Ratio] = []
    for mix, contended in MIXES.items():
        found = {}
        for system in _SYSTEMS:
            rate = totals[(mix, system)]
            found[system] = Measurement(FAMILY, f"{system}, {mix}: all appends", "events/s", median(rate),
                                        tuple(rate), detail)
            measurements.append(found[system])
        share = fairness[(mix, "planfold")]
        bound = 0.05 if contended else 0.5
        ratios.append(Ratio(FAMILY, f"{mix}: fewest / most appends of one writer (planfold)", median(share),
                            "at-least", bound, "per round, the median of the rounds", samples=tuple(share)))
        ratios.append(ratio(FAMILY, f"{mix}: all appends, planfold / busy handler only", found["planfold"],
                            found["busy handler only"], direction="at-least", bound=1.0,
                            how="events/s of all five writers, median of the rounds' quotients"))
        baseline = fairness[(mix, "busy handler only")]
        ratios.append(Ratio(FAMILY, f"{mix}: fewest / most appends of one writer (busy handler only)",
                            median(baseline), "at-least", None, "per round, the median of the rounds",
                            samples=tuple(baseline)))
    return FamilyResult(FAMILY, tuple(measurements), tuple(ratios))
