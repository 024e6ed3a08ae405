"""Builders shared by the storage tests: valid session logs that exercise every
machine and events that are a pure function of their seq (both from
``planfold.adapters.store.contract_logs``, which the published contract suite
uses too), example budgets, and a legacy database file shaped like a coding
agent's sessions table from before plan/build modes; and ``CountingFold``,
which counts the folds a store makes itself."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from planfold.adapters.store import engine
from planfold.adapters.store.base import fold_new_events
from planfold.adapters.store.contract_logs import FULL_SCRIPT, MOVES, LogBuilder, batch_after, build_log, event_at, logs
from planfold.kernel.log import Event
from planfold.kernel.session import SessionState

__all__ = [
    "FULL_SCRIPT",
    "LEGACY_SESSIONS",
    "MOVES",
    "CountingFold",
    "LogBuilder",
    "batch_after",
    "build_legacy_db",
    "build_log",
    "dump_db",
    "event_at",
    "fewer",
    "logs",
]


def fewer(divisor: int, floor: int = 10) -> int:
    """An example budget for an expensive test: a fraction of the active
    profile's, so the ci and fuzz profiles still scale it."""
    profile = settings.default
    budget = 100 if profile is None else profile.max_examples
    return max(floor, budget // divisor)


# --------------------------------------------------------------------------
# A legacy database

LEGACY_SESSIONS = (
    ("legacy-1", "Fix the parser", 1_700_000_000_000, '{"goal":"parse","steps":["a"]}'),
    ("legacy-2", "Write docs", 1_700_000_100_000, "{}"),
)


def build_legacy_db(path: Path, *, version: int = 2, plan_columns: bool = False) -> None:
    """A sessions table and a messages table as a coding agent kept them
    before plan/build modes (``version`` 2), or (``plan_columns``) after its
    first plan/build release added ``agent_mode`` and ``current_plan_json``
    (``version`` 3), with rows in both."""
    conn = sqlite3.connect(path)
    try:
        extra = (
            ", agent_mode TEXT NOT NULL DEFAULT 'build', current_plan_json TEXT NOT NULL DEFAULT ''"
            if plan_columns
            else ""
        )
        conn.executescript(
            f"""
            CREATE TABLE sessions (
                id TEXT PRIMARY KEY,
                title TEXT NOT NULL,
                created_at_ms INTEGER NOT NULL,
                updated_at_ms INTEGER NOT NULL,
                provider TEXT NOT NULL DEFAULT '',
                model TEXT NOT NULL DEFAULT '',
                workdir TEXT NOT NULL DEFAULT '',
                task_state_json TEXT NOT NULL,
                todos_json TEXT NOT NULL,
                token_input_total INTEGER NOT NULL DEFAULT 0,
                has_unknown_usage INTEGER NOT NULL DEFAULT 0,
                last_seq INTEGER NOT NULL DEFAULT 0,
                message_count INTEGER NOT NULL DEFAULT 0{extra}
            );
            CREATE TABLE messages (
                session_id TEXT NOT NULL,
                seq INTEGER NOT NULL,
                role TEXT NOT NULL,
                parts_json TEXT NOT NULL,
                created_at_ms INTEGER NOT NULL,
                PRIMARY KEY (session_id, seq)
            );
            CREATE INDEX idx_sessions_updated_at ON sessions(updated_at_ms DESC);
            """
        )
        for sid, title, at, task in LEGACY_SESSIONS:
            conn.execute(
                "INSERT INTO sessions (id, title, created_at_ms, updated_at_ms, task_state_json, todos_json,"
                " last_seq, message_count) VALUES (?, ?, ?, ?, ?, '[]', 2, 2)",
                (sid, title, at, at + 5, task),
            )
            for seq, role in ((1, "user"), (2, "assistant")):
                conn.execute(
                    "INSERT INTO messages VALUES (?, ?, ?, ?, ?)", (sid, seq, role, f'[{{"text":"{role}"}}]', at)
                )
        if plan_columns:
            conn.execute(
                "UPDATE sessions SET agent_mode = 'plan', current_plan_json = '{\"id\":\"old\"}' WHERE id = 'legacy-1'"
            )
        conn.execute(f"PRAGMA user_version = {version}")
        conn.commit()
    finally:
        conn.close()


def dump_db(path: Path) -> dict[str, Any]:
    """Everything observable in a database file: version, schema and all rows."""
    conn = sqlite3.connect(path)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {
            "user_version": conn.execute("PRAGMA user_version").fetchone()[0],
            "schema": conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name").fetchall(),
            "rows": {t: conn.execute(f'SELECT * FROM "{t}" ORDER BY 1, 2').fetchall() for t in tables},
        }
    finally:
        conn.close()


class CountingFold:
    """``engine.fold_new_events``, counting the store's own folds."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        monkeypatch.setattr(engine, "fold_new_events", self)

    def __call__(self, session_id: str, state: SessionState, events: Sequence[Event]) -> SessionState:
        self.calls += 1
        return fold_new_events(session_id, state, events)
