"""Opening a session through its projection: 1k events against 1M events.

Theory of operation
-------------------
Two coding-agent sessions (``open_small`` and ``open_large`` events, see
``benchmarks.workloads``) are written through planfold's own
``SqliteStore.append`` in calls of ``open_batch`` events, each into its own
file, so the large file's tables are as deep as a real million-event log
makes them. Every append is checked and folded strictly and leaves the
projection row and the fold snapshot behind, exactly as a live session does;
how fast that build ran is reported as a note.

Opening a session is: a new ``SqliteStore`` on the file (connection, schema
check), ``load(session, incremental=True)`` (the stored snapshot plus the
fold of any events after it, here none) and ``projection(session)`` (the
session row). The small and the large session are opened in turn, many times;
the goal is that the median open of the large one takes at most twice as long
as that of the small one, i.e. opening does not grow with the log. The state
opened is checked against the log's last seq.
"""

from __future__ import annotations

import functools
from pathlib import Path

from benchmarks.harness import FamilyResult, Measurement, Ratio, Scale, batched, median, ratio, stopwatch, throughput
from benchmarks.workloads import session_events
from planfold.adapters.codec import Projection
from planfold.adapters.store.sqlite import SqliteStore
from planfold.kernel.session import SessionState

__all__ = ["OpenMismatchError", "build_session", "open_session", "run_open"]

OPEN = "open-session"
SESSION = "bench-open"


class OpenMismatchError(RuntimeError):
    """An open returned a state that is not at the log's end: a benchmark or store bug."""


def build_session(path: Path, count: int, batch: int) -> float:
    """Write a ``count``-event session through ``SqliteStore.append``; events/s."""
    store = SqliteStore(path)
    try:
        elapsed = 0.0
        for chunk in batched(session_events(count), batch):
            seconds, _ = stopwatch(functools.partial(store.append, SESSION, chunk[0].seq - 1, chunk))
            elapsed += seconds
    finally:
        store.close()
    return throughput(count, elapsed)


def open_session(path: Path) -> tuple[SessionState, Projection]:
    """A cold open through the projection: new store, incremental load, session row."""
    store = SqliteStore(path)
    try:
        return store.load(SESSION, incremental=True), store.projection(SESSION)
    finally:
        store.close()


def run_open(scale: Scale, workdir: Path) -> FamilyResult:
    """open(large) / open(small), both through the stored projection."""
    sizes = {"small": scale.open_small, "large": scale.open_large}
    paths = {name: workdir / f"open-{name}.db" for name in sizes}
    notes = []
    for name, count in sizes.items():
        rate = build_session(paths[name], count, scale.open_batch)
        notes.append(f"built the {count}-event session through SqliteStore.append at {rate:,.0f} events/s")
    samples: dict[str, list[float]] = {name: [] for name in sizes}
    for _ in range(scale.open_repeats):
        for name, count in sizes.items():
            seconds, (state, row) = stopwatch(functools.partial(open_session, paths[name]))
            if state.last_seq != count or row.last_seq != count:
                raise OpenMismatchError(f"opened {name} at seq {state.last_seq}/{row.last_seq}, log has {count}")
            samples[name].append(seconds * 1000)
    found = {
        name: Measurement(OPEN, f"open {sizes[name]} events", "ms", median(s), tuple(s),
                          "new SqliteStore + load(incremental=True) + projection")
        for name, s in samples.items()
    }
    ratios: tuple[Ratio, ...] = (
        ratio(OPEN, f"open({sizes['large']}) / open({sizes['small']})", found["large"], found["small"],
              direction="at-most", bound=2.0, how="median ms of interleaved cold opens"),
    )
    return FamilyResult(OPEN, tuple(found.values()), ratios, tuple(notes))
