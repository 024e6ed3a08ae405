"""The eventsourcing library as a baseline, imported only when it is installed.

Theory of operation
-------------------
eventsourcing is an optional extra (``pip install -e '.[bench]'``); nothing
imports it at module load. ``load_eventsourcing()`` imports it and builds the
aggregate class, or returns ``None`` and the benchmark reports the comparison
as not measured, with ``MISSING`` as the reason.

The aggregate is one session log: a ``GoalLog`` whose ``record(seq, kind, at,
payload)`` command triggers one ``Recorded`` event carrying exactly the
planfold event's fields, and whose apply step keeps the last seq, the current
goal (taken from a ``goal/change`` payload) and the round count (from a
goal-attributed ``user/message``), like the naive fold. Persistence is the
library's own SQLite module (``PERSISTENCE_MODULE=eventsourcing.sqlite``,
``SQLITE_DBNAME`` = the file), which runs WAL with SQLite's default
``synchronous`` level (FULL); snapshotting stays off, as it is by default, so
``repository.get`` replays every stored event.

The classes are built with ``types.new_class`` from the imported module so
that type checking does not depend on whether the extra is installed.
"""

from __future__ import annotations

import functools
import importlib
import os
import types
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from planfold.kernel.log import GOAL_CHANGE, USER_MESSAGE, Event

__all__ = ["MISSING", "EsLog", "EventSourcing", "load_eventsourcing"]

#: Why a comparison with eventsourcing was not measured.
MISSING = "eventsourcing is not installed; install the bench extra: pip install -e '.[bench]'"


@dataclass(frozen=True, slots=True)
class EventSourcing:
    """The imported library: its ``Application`` class, the aggregate class and its version."""

    application: Any
    aggregate: Any
    version: str


def _record(self: Any, seq: int, kind: str, at: int, payload: dict[str, Any]) -> None:
    # The body of the decorated command: eventsourcing runs it when the event
    # is triggered and again for every stored event when it replays.
    self.last_seq = seq
    self.last_at = at
    if kind == GOAL_CHANGE:
        self.goal = payload.get("goal")
        if "rounds_started" in payload:
            self.rounds = payload["rounds_started"]
    elif kind == USER_MESSAGE:
        source = payload.get("source")
        if source is not None and source.get("type") == "goal":
            self.rounds = source["round"]


def _init(self: Any) -> None:
    self.last_seq = 0
    self.last_at = 0
    self.goal = None
    self.rounds = 0


@functools.cache
def load_eventsourcing() -> EventSourcing | None:
    """The library and the ``GoalLog`` aggregate, or ``None`` when it is not
    installed. Built once per process: eventsourcing registers each aggregate
    class under its topic and refuses a second class with the same name."""
    try:
        package = importlib.import_module("eventsourcing")
        application = importlib.import_module("eventsourcing.application")
        domain = importlib.import_module("eventsourcing.domain")
    except ImportError:
        return None

    def body(namespace: dict[str, Any]) -> None:
        namespace["__init__"] = _init
        namespace["__module__"] = __name__
        namespace["record"] = domain.event("Recorded")(_record)

    aggregate = types.new_class("GoalLog", (domain.Aggregate,), exec_body=body)
    version = str(getattr(package, "__version__", "") or _dist_version())
    return EventSourcing(application.Application, aggregate, version)


def _dist_version() -> str:
    try:
        metadata = importlib.import_module("importlib.metadata")
        return str(metadata.version("eventsourcing"))
    except Exception:  # a missing distribution record only loses the version
        return "unknown"


class EsLog:
    """One eventsourcing application on one SQLite file."""

    def __init__(self, lib: EventSourcing, path: str | os.PathLike[str]) -> None:
        env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": os.fspath(path)}
        self.lib = lib
        self.app: Any = lib.application(env=env)

    def start(self) -> Any:
        """A new ``GoalLog`` aggregate, saved (its creation is one stored event)."""
        aggregate = self.lib.aggregate()
        self.app.save(aggregate)
        return aggregate

    def append(self, aggregate: Any, event: Event) -> None:
        """Record one event and save it: one transaction per event."""
        aggregate.record(event.seq, event.kind, event.at, dict(event.payload))
        self.app.save(aggregate)

    def append_many(self, aggregate: Any, events: Sequence[Event]) -> None:
        """Record several events and save them together (used to build large logs)."""
        for event in events:
            aggregate.record(event.seq, event.kind, event.at, dict(event.payload))
        self.app.save(aggregate)

    def get(self, aggregate_id: Any) -> Any:
        """``repository.get``: the aggregate rebuilt from every stored event."""
        return self.app.repository.get(aggregate_id)

    def close(self) -> None:
        self.app.close()
