"""LangGraph's SQLite checkpointer as a baseline, imported only when it is installed.

Theory of operation
-------------------
``langgraph-checkpoint-sqlite`` is in the ``bench`` extra; nothing imports it
at module load. ``load_langgraph()`` imports ``SqliteSaver`` and the
checkpoint helpers, or returns ``None`` and the benchmark reports the
comparison as not measured, with ``LG_MISSING`` as the reason.

A session on LangGraph is a thread whose state has one channel, ``events``,
holding the session's events as a list (what an agent's ``messages`` channel
with an appending reducer holds). One event is one step: the step's
checkpoint, with the list grown by the event, is saved with one
``SqliteSaver.put`` (one transaction). A real graph step also saves the
node's pending writes (``put_writes``, a second transaction); that is left
out, in LangGraph's favour. The saver keeps every checkpoint (it never
deletes a thread's history) and serialises the whole checkpoint, channel
values included, into one blob per put, so its cost per step grows with the
history. The file is in WAL mode (``setup`` switches it) and, like the other
systems, ``synchronous=FULL``.
"""

from __future__ import annotations

import functools
import importlib
import os
import sqlite3
from dataclasses import dataclass
from typing import Any

from planfold.kernel.log import Event

__all__ = ["LG_MISSING", "LangGraph", "LgLog", "load_langgraph"]

#: Why a comparison with LangGraph was not measured.
LG_MISSING = (
    "langgraph-checkpoint-sqlite is not installed; install the bench extra: pip install -e '.[bench]'"
)


@dataclass(frozen=True, slots=True)
class LangGraph:
    """The imported library: the saver class, the checkpoint helpers and the version."""

    saver: Any
    empty_checkpoint: Any
    uuid6: Any
    version: str


@functools.cache
def load_langgraph() -> LangGraph | None:
    """The library, or ``None`` when it is not installed."""
    try:
        sqlite_module = importlib.import_module("langgraph.checkpoint.sqlite")
        base = importlib.import_module("langgraph.checkpoint.base")
        ids = importlib.import_module("langgraph.checkpoint.base.id")
        metadata = importlib.import_module("importlib.metadata")
    except ImportError:
        return None
    try:
        version = str(metadata.version("langgraph-checkpoint-sqlite"))
    except Exception:  # a missing distribution record only loses the version
        version = "unknown"
    return LangGraph(sqlite_module.SqliteSaver, base.empty_checkpoint, ids.uuid6, version)


class LgLog:
    """One LangGraph thread on one SQLite file (see the module docstring)."""

    def __init__(self, lib: LangGraph, path: str | os.PathLike[str], thread: str = "bench") -> None:
        self.lib = lib
        self.conn = sqlite3.connect(os.fspath(path), check_same_thread=False)
        self.saver: Any = lib.saver(self.conn)
        self.saver.setup()
        self.conn.execute("PRAGMA synchronous = FULL")
        self.config: dict[str, Any] = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        self.checkpoint: dict[str, Any] = lib.empty_checkpoint()
        self.events: list[dict[str, Any]] = []
        self.step = 0

    def settings(self) -> tuple[str, int]:
        """The connection's journal mode and synchronous level (2 = FULL)."""
        mode = self.conn.execute("PRAGMA journal_mode").fetchone()[0]
        level = self.conn.execute("PRAGMA synchronous").fetchone()[0]
        return str(mode), int(level)

    def append(self, event: Event) -> None:
        """One step: the event joins the ``events`` channel and the step's
        checkpoint is saved (one ``put``, one transaction)."""
        self.step += 1
        self.events.append({"seq": event.seq, "kind": event.kind, "at": event.at, "payload": dict(event.payload)})
        version = self.step
        checkpoint = {
            **self.checkpoint,
            "id": str(self.lib.uuid6(clock_seq=self.step)),
            "channel_values": {"events": self.events},
            "channel_versions": {"events": version},
            "updated_channels": ["events"],
        }
        metadata = {"source": "loop", "step": self.step, "parents": {}}
        self.config = self.saver.put(self.config, checkpoint, metadata, {"events": version})
        self.checkpoint = checkpoint

    def close(self) -> None:
        self.conn.close()
