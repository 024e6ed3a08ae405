"""Cold strict replay of a goal log from SQLite, at 100k and at 1M events.

Theory of operation
-------------------
The goal log (one goal per about 50 events, ``benchmarks.workloads``) is
stored at ``mid_events`` and ``large_events`` (``benchmarks.logs``: through
planfold's ``SqliteStore``, in large appends); the ``mid`` one is also saved
into eventsourcing (one aggregate, in large batches: only reading is timed).
Then, in interleaved repetitions, each reader starts cold (a new store,
connection or application on the file; the operating system's page cache
stays warm, as it would for a session reopened on the same machine) and
rebuilds the state from every event:

- planfold ``SqliteStore.load`` (not incremental): ``SELECT``, msgspec decode
  of every payload, and the strict session fold, which checks every event
  (envelope, payload shapes, goal revisions, rounds and ids, turns, plan
  mode); its wall time and its process CPU time are both taken;
- planfold ``fold_goal`` over ``SqliteStore.read``: the goal machine alone,
  for comparison (``mid`` only);
- the naive reader (``benchmarks.baselines``): ``SELECT`` from the same
  file's events table, ``json.loads`` and a ``dataclasses.replace`` fold
  that checks nothing;
- eventsourcing ``repository.get`` of the aggregate (``mid`` only).

Each reader's result is checked against the others (same last seq, goal and
round count), so a fast wrong answer cannot pass. Every reader is one
single-threaded process reading a warm file, so what it costs is its process
CPU time; the goals are the CPU seconds of the baseline over those of
planfold's ``load``, per repetition (the same ratios in wall time are
printed beside them: on a shared machine wall time also counts whatever else
runs), and the CPU time per event of ``load`` at 1M over that at 100k, which
is 1 for a replay whose cost per event does not grow with the history.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.baselines import NaiveGoal, naive_replay
from benchmarks.es_baseline import MISSING, EsLog, EventSourcing, load_eventsourcing
from benchmarks.harness import FamilyResult, Measurement, Ratio, Scale, batched, median, ratio
from benchmarks.logs import SESSION, StoredLog, stored_log
from benchmarks.workloads import goal_events
from planfold.adapters.store.sqlite import SqliteStore
from planfold.kernel.goal.fold import GoalState, fold_goal
from planfold.kernel.session import SessionState

__all__ = ["ReplayMismatchError", "check_replays", "run_replay"]

REPLAY = "cold-replay"
BUILD_BATCH = 5_000


class ReplayMismatchError(RuntimeError):
    """Two readers rebuilt different states from the same log: a benchmark bug."""


def _build_es(log: StoredLog, workdir: Path, lib: EventSourcing) -> Any:
    """Save the log into eventsourcing; the aggregate id."""
    es = EsLog(lib, workdir / "replay-es.db")
    try:
        aggregate = es.start()
        for batch in batched(goal_events(log.count), BUILD_BATCH):
            es.append_many(aggregate, batch)
        return aggregate.id
    finally:
        es.close()


def _planfold_load(path: Path) -> SessionState:
    store = SqliteStore(path)
    try:
        return store.load(SESSION)
    finally:
        store.close()


def _planfold_goal(path: Path) -> GoalState:
    store = SqliteStore(path)
    try:
        return fold_goal(store.read(SESSION))
    finally:
        store.close()


def _es_get(lib: EventSourcing, path: Path, aggregate_id: Any) -> Any:
    es = EsLog(lib, path)
    try:
        return es.get(aggregate_id)
    finally:
        es.close()


def check_replays(session: SessionState, goal: GoalState, naive: NaiveGoal, es_state: Any) -> None:
    current = session.goal.current
    if current is None or goal.current != current:
        raise ReplayMismatchError(f"load and fold_goal disagree: {current} / {goal.current}")
    seen = (naive.last_seq, naive.goal_id, naive.revision, naive.rounds_started)
    want = (session.last_seq, current.id, current.revision, current.rounds_started)
    if seen != want:
        raise ReplayMismatchError(f"naive fold gives {seen}, planfold {want}")
    if es_state is not None:
        goal_json = es_state.goal or {}
        got = (es_state.last_seq, goal_json.get("id"), goal_json.get("revision"), es_state.rounds)
        if got != want:
            raise ReplayMismatchError(f"eventsourcing gives {got}, planfold {want}")


def _timed(read: Callable[[], Any]) -> tuple[float, float, Any]:
    """Wall seconds, process CPU seconds and the result of ``read()``."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = read()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def run_replay(scale: Scale, workdir: Path) -> FamilyResult:
    """Cold strict replay: planfold against the naive fold and eventsourcing, at 100k and 1M."""
    workdir.mkdir(parents=True, exist_ok=True)
    root = workdir.parent / "logs"
    mid = stored_log(root, "goal", scale.mid_events, scale.build_batch)
    large = stored_log(root, "goal", scale.large_events, scale.build_batch)
    lib = load_eventsourcing()
    aggregate_id = None if lib is None else _build_es(mid, workdir, lib)
    size = {"mid": f"{mid.count:,}", "large": f"{large.count:,}"}
    load = {name: f"planfold load (strict session fold), {n} events" for name, n in size.items()}
    naive = {name: f"naive json.loads + replace, {n} events" for name, n in size.items()}
    readers: dict[str, Callable[[], Any]] = {
        load["mid"]: lambda: _planfold_load(mid.db),
        naive["mid"]: lambda: naive_replay(mid.db, SESSION),
        f"planfold read + fold_goal, {size['mid']} events": lambda: _planfold_goal(mid.db),
    }
    es_name = f"eventsourcing repository.get, {size['mid']} events"
    if lib is not None:
        readers[es_name] = lambda: _es_get(lib, workdir / "replay-es.db", aggregate_id)
    readers[load["large"]] = lambda: _planfold_load(large.db)
    readers[naive["large"]] = lambda: naive_replay(large.db, SESSION)
    wall: dict[str, list[float]] = {name: [] for name in readers}
    cpu: dict[str, list[float]] = {name: [] for name in readers}
    results: dict[str, Any] = {}
    for _ in range(scale.replay_repeats):
        for name, read in readers.items():
            seconds, cpu_seconds, results[name] = _timed(read)
            wall[name].append(seconds)
            cpu[name].append(cpu_seconds)
    check_replays(
        results[load["mid"]],
        results[f"planfold read + fold_goal, {size['mid']} events"],
        results[naive["mid"]],
        results.get(es_name),
    )
    check_replays(results[load["large"]], results[load["large"]].goal, results[naive["large"]], None)
    on_wall = {
        name: Measurement(REPLAY, f"{name}, wall", "s", median(s), tuple(s), "new connection each time")
        for name, s in wall.items()
    }
    on_cpu = {
        name: Measurement(REPLAY, f"{name}, CPU", "s", median(s), tuple(s), "process CPU time of the reader")
        for name, s in cpu.items()
    }
    per_event = {
        which: Measurement(REPLAY, f"planfold load CPU per event, {size[which]} events", "us",
                           median([t / count * 1e6 for t in cpu[load[which]]]),
                           tuple(t / count * 1e6 for t in cpu[load[which]]), "process CPU time of the load / events")
        for which, count in (("mid", mid.count), ("large", large.count))
    }
    how = "CPU seconds of the baseline / CPU seconds of planfold load, median of the interleaved repetitions' ratios"
    how_wall = "the same in wall time (which on a shared machine also counts the other processes)"
    pairs = (
        ("eventsourcing get", es_name, "mid", 5.0),
        ("naive fold", naive["mid"], "mid", 1.5),
        ("naive fold", naive["large"], "large", 1.5),
    )
    goals = [
        ratio(REPLAY, f"cold replay {size[which]}: {label} / planfold load", on_cpu.get(baseline),
              on_cpu[load[which]], direction="at-least", bound=bound, how=how, missing=MISSING)
        for label, baseline, which, bound in pairs
    ]
    walls = [
        ratio(REPLAY, f"cold replay {size[which]}: {label} / planfold load, wall time", on_wall.get(baseline),
              on_wall[load[which]], direction="at-least", bound=None, how=how_wall, missing=MISSING)
        for label, baseline, which, _ in pairs
    ]
    ratios: tuple[Ratio, ...] = (
        *goals,
        ratio(REPLAY, f"replay CPU per event: {size['large']} / {size['mid']}", per_event["large"],
              per_event["mid"], direction="at-most", bound=1.15,
              how="process CPU microseconds per event of planfold load, per repetition"),
        *walls,
        ratio(REPLAY, f"cold replay {size['mid']}: naive fold / planfold read + fold_goal",
              on_cpu[naive["mid"]], on_cpu[f"planfold read + fold_goal, {size['mid']} events"],
              direction="at-least", bound=None, how="the goal machine alone, for comparison (CPU)"),
    )
    notes = [mid.describe(), large.describe()]
    if lib is None:
        notes.append(MISSING)
    return FamilyResult(REPLAY, (*on_cpu.values(), *on_wall.values(), *per_event.values()), ratios, tuple(notes))
