"""Cold strict replay of a goal log from SQLite.

Theory of operation
-------------------
One goal log of ``replay_events`` events (see ``benchmarks.workloads``) is
written three times: through planfold's ``SqliteStore`` (in large appends),
into a ``RawLog`` file, and into eventsourcing (one aggregate, saved in large
batches: only reading is timed here). Then, in interleaved repetitions, each
reader starts cold (a new store, connection or application on the file; the
operating system's page cache stays warm, as it would for a session reopened
on the same machine) and rebuilds the state from every event:

- planfold ``SqliteStore.load`` (not incremental): ``SELECT``, msgspec decode
  of every payload, and the strict session fold, which checks every event
  (envelope, payload shapes, goal revisions and rounds, turns, plan mode);
- planfold ``fold_goal`` over ``SqliteStore.read``: the goal machine alone,
  for comparison;
- the naive reader: ``SELECT``, ``json.loads`` and a ``dataclasses.replace``
  fold that checks nothing;
- eventsourcing ``repository.get`` of the aggregate.

Each reader's result is checked against the others (same last seq, goal and
round count), so a fast wrong answer cannot pass. The ratios are median
seconds of the baseline over median seconds of planfold's ``load``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.baselines import NaiveGoal, RawLog, naive_replay
from benchmarks.es_baseline import MISSING, EsLog, EventSourcing, load_eventsourcing
from benchmarks.harness import FamilyResult, Measurement, Ratio, Scale, batched, median, ratio, stopwatch
from benchmarks.workloads import goal_events
from planfold.adapters.store.sqlite import SqliteStore
from planfold.kernel.goal.fold import GoalState, fold_goal
from planfold.kernel.session import SessionState

__all__ = ["ReplayMismatchError", "check_replays", "run_replay"]

REPLAY = "cold-replay"
SESSION = "bench-replay"
BUILD_BATCH = 5_000


class ReplayMismatchError(RuntimeError):
    """Two readers rebuilt different states from the same log: a benchmark bug."""


def _build(scale: Scale, workdir: Path, lib: EventSourcing | None) -> Any:
    """Write the goal log to every system; the eventsourcing aggregate id (or None)."""
    aggregate_id = None
    store = SqliteStore(workdir / "replay-planfold.db")
    raw = RawLog(workdir / "replay-raw.db")
    es = None if lib is None else EsLog(lib, workdir / "replay-es.db")
    try:
        aggregate = None if es is None else es.start()
        for batch in batched(goal_events(scale.replay_events), BUILD_BATCH):
            store.append(SESSION, batch[0].seq - 1, batch)
            raw.append_many(SESSION, batch)
            if es is not None:
                es.append_many(aggregate, batch)
        if aggregate is not None:
            aggregate_id = aggregate.id
    finally:
        store.close()
        raw.close()
        if es is not None:
            es.close()
    return aggregate_id


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


def run_replay(scale: Scale, workdir: Path) -> FamilyResult:
    """Cold strict replay: planfold against the naive fold and eventsourcing."""
    lib = load_eventsourcing()
    aggregate_id = _build(scale, workdir, lib)
    readers: dict[str, Callable[[], Any]] = {
        "planfold load (strict session fold)": lambda: _planfold_load(workdir / "replay-planfold.db"),
        "planfold read + fold_goal": lambda: _planfold_goal(workdir / "replay-planfold.db"),
        "naive json.loads + replace": lambda: naive_replay(workdir / "replay-raw.db", SESSION),
    }
    if lib is not None:
        readers["eventsourcing repository.get"] = lambda: _es_get(lib, workdir / "replay-es.db", aggregate_id)
    samples: dict[str, list[float]] = {name: [] for name in readers}
    results: dict[str, Any] = {}
    for _ in range(scale.replay_repeats):
        for name, read in readers.items():
            seconds, results[name] = stopwatch(read)
            samples[name].append(seconds)
    check_replays(
        results["planfold load (strict session fold)"],
        results["planfold read + fold_goal"],
        results["naive json.loads + replace"],
        results.get("eventsourcing repository.get"),
    )
    detail = f"{scale.replay_events} goal-log events, new connection each time"
    found = {name: Measurement(REPLAY, name, "s", median(s), tuple(s), detail) for name, s in samples.items()}
    load = found["planfold load (strict session fold)"]
    how = "median seconds of the baseline / median seconds of planfold load"
    ratios: tuple[Ratio, ...] = (
        ratio(REPLAY, "cold replay: eventsourcing get / planfold load", found.get("eventsourcing repository.get"),
              load, direction="at-least", bound=5.0, how=how, missing=MISSING),
        ratio(REPLAY, "cold replay: naive fold / planfold load", found["naive json.loads + replace"], load,
              direction="at-least", bound=1.5, how=how),
        ratio(REPLAY, "cold replay: naive fold / planfold read + fold_goal", found["naive json.loads + replace"],
              found["planfold read + fold_goal"], direction="at-least", bound=None,
              how="the goal machine alone, for comparison"),
    )
    notes = () if lib is not None else (MISSING,)
    return FamilyResult(REPLAY, tuple(found.values()), ratios, notes)
