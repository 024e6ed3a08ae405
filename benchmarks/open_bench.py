"""Opening a session through its projection: 1k events against 1M events, on both log shapes.

Theory of operation
-------------------
Four stored logs (``benchmarks.logs``): the goal log (one goal per about 50
events) and the coding-agent session, each at ``small_events`` and at
``large_events``, written through planfold's own ``SqliteStore.append`` in
large calls, so the large files' tables are as deep as a real million-event
log makes them. Every call was checked and folded strictly and left the
projection row and the fold snapshot behind, exactly as a live session does.

Opening a session is: a new ``SqliteStore`` on the file (connection, schema
check), ``load(session, incremental=True)`` (the stored snapshot plus the
fold of any events after it, here none) and ``projection(session)`` (the
session row). The small and the large session of a shape are opened in
turn, many times; the goal is that an open of the large one takes at most
twice as long as one of the small one (the median of the pairs' ratios),
i.e. opening does not grow with the log. The state opened is checked
against the log's last seq.
"""

from __future__ import annotations

import functools
from pathlib import Path

from benchmarks.harness import FamilyResult, Measurement, Ratio, Scale, median, ratio, stopwatch
from benchmarks.logs import SESSION, Shape, stored_log
from planfold.adapters.store.projection import Projection
from planfold.adapters.store.sqlite import SqliteStore
from planfold.kernel.session import SessionState

__all__ = ["OpenMismatchError", "open_session", "run_open"]

OPEN = "open-session"
SHAPES: tuple[Shape, ...] = ("goal", "session")


class OpenMismatchError(RuntimeError):
    """An open returned a state that is not at the log's end: a benchmark or store bug."""


def open_session(path: Path) -> tuple[SessionState, Projection]:
    """A cold open through the projection: new store, incremental load, session row."""
    store = SqliteStore(path)
    try:
        return store.load(SESSION, incremental=True), store.projection(SESSION)
    finally:
        store.close()


def run_open(scale: Scale, workdir: Path) -> FamilyResult:
    """open(large) / open(small), both through the stored projection, for each log shape."""
    root = workdir.parent / "logs"
    sizes = {"small": scale.small_events, "large": scale.large_events}
    logs = {
        (shape, name): stored_log(root, shape, count, scale.build_batch)
        for shape in SHAPES
        for name, count in sizes.items()
    }
    samples: dict[tuple[Shape, str], list[float]] = {key: [] for key in logs}
    for _ in range(scale.open_repeats):
        for key, log in logs.items():
            seconds, (state, row) = stopwatch(functools.partial(open_session, log.db))
            if state.last_seq != log.count or row.last_seq != log.count:
                raise OpenMismatchError(f"opened {key} at seq {state.last_seq}/{row.last_seq}, log has {log.count}")
            samples[key].append(seconds * 1000)
    found = {
        key: Measurement(OPEN, f"open {logs[key].count:,}-event {key[0]} log", "ms", median(s), tuple(s),
                         "new SqliteStore + load(incremental=True) + projection")
        for key, s in samples.items()
    }
    ratios: tuple[Ratio, ...] = tuple(
        ratio(OPEN, f"open {sizes['large']:,} / open {sizes['small']:,}, {shape} log", found[(shape, "large")],
              found[(shape, "small")], direction="at-most", bound=2.0,
              how="ms of interleaved cold opens, median of the pairs' ratios")
        for shape in SHAPES
    )
    notes = tuple(log.describe() for log in logs.values())
    return FamilyResult(OPEN, tuple(found.values()), ratios, notes)
