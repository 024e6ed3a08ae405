"""The plain-Python baselines: raw ``sqlite3`` appends and a naive fold.

Theory of operation
-------------------
``RawLog`` is what a careful programmer writes by hand with ``sqlite3``: the
same two tables as planfold (an ``events`` table keyed ``(session_id, seq)``
without rowid, and a ``sessions`` row per session), WAL with
``synchronous=FULL``, and per append one ``BEGIN IMMEDIATE`` transaction
holding a compare-and-set read of the session row (its last seq must be the
seq before the first new event), the event inserts and one upsert of the
session row (last seq, time and the last payload as its "view"). It checks
nothing else: no fold, no validation. Payloads are encoded with the standard
``json``.

``naive_replay`` reads a session back with one ``SELECT``, ``json.loads`` on
every payload and a fold that builds a new frozen ``NaiveGoal`` with
``dataclasses.replace`` for every event. It trusts the log completely (no
envelope, shape, revision or round checks) and only tracks the current goal,
which is the least any reader of a goal log has to do.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from planfold.kernel.log import GOAL_CHANGE, USER_MESSAGE, Event

__all__ = ["NaiveGoal", "RawLog", "naive_fold", "naive_replay"]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS events ("
    " session_id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL,"
    " at INTEGER NOT NULL, payload TEXT NOT NULL,"
    " PRIMARY KEY (session_id, seq)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS sessions ("
    " id TEXT PRIMARY KEY NOT NULL, log_seq INTEGER NOT NULL,"
    " updated_at_ms INTEGER NOT NULL, view_json TEXT NOT NULL)",
)
_INSERT = "INSERT INTO events (session_id, seq, kind, at, payload) VALUES (?, ?, ?, ?, ?)"
_HEAD = "SELECT log_seq FROM sessions WHERE id = ?"
_UPSERT = (
    "INSERT INTO sessions (id, log_seq, updated_at_ms, view_json) VALUES (?, ?, ?, ?)"
    " ON CONFLICT (id) DO UPDATE SET log_seq = excluded.log_seq,"
    " updated_at_ms = excluded.updated_at_ms, view_json = excluded.view_json"
)


class RawLog:
    """A hand-written ``sqlite3`` event log (see the module docstring)."""

    def __init__(self, path: str | os.PathLike[str], *, synchronous: str = "FULL") -> None:
        # usable from any thread, one at a time (the concurrent family serialises it)
        self.conn = sqlite3.connect(os.fspath(path), isolation_level=None, check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute(f"PRAGMA synchronous = {synchronous}")
        for statement in _SCHEMA:
            self.conn.execute(statement)

    def settings(self) -> tuple[str, int]:
        """The connection's journal mode and synchronous level (2 = FULL)."""
        mode = self.conn.execute("PRAGMA journal_mode").fetchone()[0]
        level = self.conn.execute("PRAGMA synchronous").fetchone()[0]
        return str(mode), int(level)

    def append(self, session_id: str, events: Sequence[Event]) -> None:
        """Compare-and-set: insert ``events`` and upsert the session row in one
        transaction, after checking that the log ends just before them."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute(_HEAD, (session_id,)).fetchone()
            if (0 if row is None else row[0]) != events[0].seq - 1:
                raise ValueError(f"conflict: the log of {session_id!r} is not at {events[0].seq - 1}")
            text = ""
            for event in events:
                text = json.dumps(event.payload, separators=(",", ":"))
                conn.execute(_INSERT, (session_id, event.seq, event.kind, event.at, text))
            last = events[-1]
            conn.execute(_UPSERT, (session_id, last.seq, last.at, text))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def append_many(self, session_id: str, events: Sequence[Event]) -> None:
        """The same transaction as ``append`` with ``executemany`` for the inserts."""
        conn = self.conn
        rows = [
            (session_id, e.seq, e.kind, e.at, json.dumps(e.payload, separators=(",", ":"))) for e in events
        ]
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(_INSERT, rows)
            conn.execute(_UPSERT, (session_id, events[-1].seq, events[-1].at, rows[-1][4]))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self.conn.close()


@dataclass(frozen=True)
class NaiveGoal:
    """The naive reader's view of a goal log: the last seq and the current goal."""

    last_seq: int = 0
    goal_id: str | None = None
    revision: int = 0
    phase: str | None = None
    objective: str | None = None
    max_rounds: int = 0
    rounds_started: int = 0


def naive_fold(rows: Iterable[tuple[int, str, int, str]]) -> NaiveGoal:
    """Fold ``(seq, kind, at, payload text)`` rows with ``json.loads`` and
    ``dataclasses.replace``, trusting every row."""
    state = NaiveGoal()
    for seq, kind, _at, text in rows:
        body: dict[str, Any] = json.loads(text)
        if kind == GOAL_CHANGE:
            if body["operation"] == "clear":
                state = replace(state, last_seq=seq, goal_id=None, phase=None, revision=body["cleared"]["revision"])
            else:
                goal = body["goal"]
                state = replace(
                    state,
                    last_seq=seq,
                    goal_id=goal["id"],
                    revision=goal["revision"],
                    phase=goal["phase"],
                    objective=goal["objective"],
                    max_rounds=goal["max_rounds"],
                    rounds_started=body["rounds_started"],
                )
        elif kind == USER_MESSAGE and body["source"] is not None and body["source"].get("type") == "goal":
            state = replace(state, last_seq=seq, rounds_started=body["source"]["round"])
        else:
            state = replace(state, last_seq=seq)
    return state


def naive_replay(path: str | os.PathLike[str], session_id: str) -> NaiveGoal:
    """Open ``path`` afresh, ``SELECT`` the session's events and fold them naively."""
    conn = sqlite3.connect(os.fspath(path), isolation_level=None)
    try:
        rows = conn.execute(
            "SELECT seq, kind, at, payload FROM events WHERE session_id = ? ORDER BY seq", (session_id,)
        ).fetchall()
    finally:
        conn.close()
    return naive_fold(rows)
