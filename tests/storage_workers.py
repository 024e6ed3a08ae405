"""Worker processes for the storage stress tests, and the events they write.

This module imports only the store, its log builders and the kernel (no
pytest), and is preloaded into the fork server, so a worker starts in
milliseconds. Workers report through pipes and queues; they never share a store or a
connection with the test process.
"""

from __future__ import annotations

import multiprocessing
import random
import sqlite3
import time
from multiprocessing.connection import Connection
from multiprocessing.context import ForkServerContext
from multiprocessing.synchronize import Event as MpEvent
from typing import Any

from planfold.adapters.store.contract_logs import batch_after, event_at
from planfold.adapters.store.sqlite import SqliteStore
from planfold.kernel.errors import ConflictError

__all__ = ["batch_after", "contender", "crash_writer", "event_at", "opener", "stress_context"]


def stress_context() -> ForkServerContext:
    """The fork-server context with this module preloaded (the preload only
    takes effect if the fork server has not started yet in this process)."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([__name__])
    return ctx


def contender(path: str, sessions: list[str], attempts: int, seed: int, *, start: MpEvent, out: Any) -> None:
    """Make ``attempts`` compare-and-set appends (read the head, append one to
    three events after it) and put a report of every outcome on ``out``."""
    report: dict[str, Any] = {"ok": 0, "conflict": 0, "events": 0, "raw": [], "other": []}
    rng = random.Random(seed)
    try:
        store = SqliteStore(path)
        start.wait(60)
        for _ in range(attempts):
            sid = rng.choice(sessions)
            try:
                head = store.load(sid, incremental=True).last_seq if rng.random() < 0.5 else store.head(sid)
            except Exception as exc:  # reported, never expected
                report["raw" if isinstance(exc, sqlite3.Error) else "other"].append(f"read: {exc!r}")
                continue
            size = rng.randint(1, 3)
            try:
                store.append(sid, head, batch_after(head, size))
            except ConflictError:
                report["conflict"] += 1
            except sqlite3.Error as exc:
                report["raw"].append(repr(exc))
            except Exception as exc:
                report["other"].append(repr(exc))
            else:
                report["ok"] += 1
                report["events"] += size
        store.close()
    except Exception as exc:  # the parent sees it in the report
        report["other"].append(f"worker: {exc!r}")
    out.put(report)


def crash_writer(path: str, session: str, seed: int, acks: Connection) -> None:
    """Append to ``session`` until killed; after each append that returned,
    send its last seq on ``acks`` (0 first, once the store is open)."""
    rng = random.Random(seed)
    store = SqliteStore(path)
    acks.send(0)
    while True:
        head = store.head(session)
        try:
            result = store.append(session, head, batch_after(head, rng.randint(1, 3)))
        except ConflictError:
            continue
        acks.send(result.last_seq)


def opener(path: str) -> None:
    """Open (and so migrate) a store, then idle until killed."""
    SqliteStore(path)
    time.sleep(60)
