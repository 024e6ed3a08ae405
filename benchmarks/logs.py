"""The stored logs the families share: built once per run, in bulk.

Theory of operation
-------------------
Several families read the same logs (the 1M-event goal log is replayed,
opened and replayed again in a child process for its memory), and building a
million events is the most expensive thing a run does, so each log is built
once per run and per directory and handed to every family that asks for it.

``stored_log(root, shape, count, batch)`` writes the first ``count`` events
of ``shape`` (``goal``: ``benchmarks.workloads.goal_events``, one goal per
about 50 events; ``session``: ``session_events``, a coding-agent session)
through planfold's own ``SqliteStore.append`` in calls of ``batch`` events,
one transaction each (never one per event), into ``root/<shape>-<count>.db``
as session ``SESSION``; every call is folded strictly and leaves the
projection and the snapshot, as a live session does. The same events are
written to ``root/<shape>-<count>.jsonl`` as JSON Lines while they are made,
so the log is never held in memory whole. The next ``TAIL`` events of the
same log are kept in memory (``StoredLog.tail``): they continue the stored
log validly, for the families that append to it.

The generators are prefix-stable (the first ``n`` events of a longer log are
the log of ``n`` events), so every size of one shape is the same history cut
at another point.
"""

from __future__ import annotations

import functools
import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from benchmarks.harness import batched, stopwatch, throughput
from benchmarks.workloads import goal_events, session_events
from planfold.adapters.codec import encode_event
from planfold.adapters.store.base import AppendRequest
from planfold.adapters.store.sqlite import SqliteStore
from planfold.kernel.log import Event

__all__ = ["SESSION", "TAIL", "Shape", "StoredLog", "events_of", "stored_log"]

Shape = Literal["goal", "session"]
#: The session id of every stored log.
SESSION = "bench"
#: Events kept after the stored log, to append to it.
TAIL = 4_000


@dataclass(frozen=True, slots=True)
class StoredLog:
    """A log written to ``db`` (session ``SESSION``) and ``jsonl``; ``tail``
    continues it; ``rate`` is how fast the store took it (events/s)."""

    shape: Shape
    count: int
    db: Path
    jsonl: Path
    tail: tuple[Event, ...]
    rate: float
    seconds: float

    def describe(self) -> str:
        return (
            f"the {self.count:,}-event {self.shape} log was written through SqliteStore.append "
            f"in {self.seconds:.1f} s ({self.rate:,.0f} events/s, generation included)"
        )


def events_of(shape: Shape, count: int) -> Iterator[Event]:
    """The first ``count`` events of a log of ``shape``."""
    return goal_events(count) if shape == "goal" else session_events(count)


_BUILT: dict[Path, StoredLog] = {}


def stored_log(root: Path, shape: Shape, count: int, batch: int) -> StoredLog:
    """The log of ``shape`` and ``count`` events under ``root``, built on first
    use in this process (see the module docstring)."""
    db = root / f"{shape}-{count}.db"
    built = _BUILT.get(db)
    if built is not None and db.exists():
        return built
    root.mkdir(parents=True, exist_ok=True)
    for side in ("", "-wal", "-shm"):
        if os.path.exists(f"{db}{side}"):
            os.remove(f"{db}{side}")
    jsonl = db.with_suffix(".jsonl")
    seconds, tail = stopwatch(functools.partial(_write, db, jsonl, shape, count, batch))
    built = StoredLog(shape, count, db, jsonl, tail, throughput(count, seconds), seconds)
    _BUILT[db] = built
    return built


def _write(db: Path, jsonl: Path, shape: Shape, count: int, batch: int) -> tuple[Event, ...]:
    events = events_of(shape, count + TAIL)
    store = SqliteStore(db, synchronous="normal")
    try:
        with jsonl.open("wb") as out:
            for chunk in batched(itertools.islice(events, count), batch):
                store.append(AppendRequest(SESSION, chunk[0].seq - 1, chunk))
                out.write(b"".join(encode_event(event) + b"\n" for event in chunk))
    finally:
        store.close()
    return tuple(events)
