"""Builders shared by the storage tests: valid session logs that exercise every
machine (turns, plan mode, plans, goals), events that are a pure function of
their seq (for tests whose writers race or die), and a legacy database file
shaped like a coding agent's sessions table from before plan/build modes."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from hypothesis import settings
from hypothesis import strategies as st

from planfold.kernel.errors import KernelError
from planfold.kernel.goal import ops as goal_ops
from planfold.kernel.goal.values import ARMED, BlockedReason
from planfold.kernel.log import (
    ASSISTANT_MESSAGE,
    PLAN_ARTIFACT,
    PLAN_MODE,
    REQUEST_HEADER,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
    Event,
)
from planfold.kernel.plan.payload import PlanAction, PlanActionName, plan_action_payload
from planfold.kernel.plan.spec import OpenQuestion, PlanScope, PlanSpec, Todo, spec_hash
from planfold.kernel.plan.views import build_summary_view
from planfold.kernel.session import SessionState, apply_session_event
from tests.storage_workers import batch_after, event_at

__all__ = [
    "FULL_SCRIPT",
    "LEGACY_SESSIONS",
    "MOVES",
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
# Rich valid logs


@dataclass
class LogBuilder:
    """A log under construction; every move either appends valid events or,
    when the machines do not allow it right now, appends nothing."""

    events: list[Event] = field(default_factory=list)
    state: SessionState = field(default_factory=SessionState)
    clock: int = 1  # so that an event at 0 always goes back in time
    plans: int = 0
    goals: int = 0

    def _try(self, make: Callable[[int, int], Sequence[Event]], dt: int = 1) -> bool:
        seq, at = self.state.last_seq + 1, self.clock + dt
        try:
            new = list(make(seq, at))
            state = self.state
            for event in new:
                state = apply_session_event(state, event)
        except KernelError:
            return False
        self.events += new
        self.state, self.clock = state, max(at, self.clock)
        return True

    def turn(self, text: str = "hello") -> bool:
        n = self.state.turns.turn + 1
        mode = self.state.plan_mode
        return self._try(
            lambda s, at: [
                Event(s, TURN_START, at, {"turn": n}),
                Event(s + 1, REQUEST_HEADER, at, {"turn": n, "step": 1, "plan_mode": mode}),
                Event(s + 2, USER_MESSAGE, at, {"text": text, "source": None}),
                Event(s + 3, ASSISTANT_MESSAGE, at, {"text": text[::-1], "source": None}),
                Event(s + 4, TURN_END, at, {"turn": n}),
            ]
        )

    def plugin_note(self, text: str = "note") -> bool:
        source = {"type": "plugin", "plugin": "lint"}
        return self._try(lambda s, at: [Event(s, USER_MESSAGE, at, {"text": text, "source": source})], dt=0)

    def mode(self) -> bool:
        active = not self.state.plan_mode
        return self._try(lambda s, at: [Event(s, PLAN_MODE, at, {"active": active})])

    def _plan(self, act: PlanAction) -> bool:
        return self._try(lambda s, at: [Event(s, PLAN_ARTIFACT, at, plan_action_payload(act))])

    def new_plan(self, goal: str = "ship it") -> bool:
        self.plans += 1
        spec = PlanSpec(
            goal=goal,
            steps=("read", "write"),
            constraints=("no new deps",),
            verify=("tests pass",),
            todos=(Todo("t1", "first"), Todo("t2", "second", "in_progress")),
            open_questions=(OpenQuestion("which name?"),),
            scope=PlanScope(("src/",), ("write",)) if self.plans % 2 else None,
        )
        action: PlanActionName = "draft" if self.state.plan_mode else "bootstrap"
        act = PlanAction(action, f"p{self.plans}", 1, spec, build_summary_view(spec), "runtime", ())
        return self._plan(act)

    def plan_step(self, action: PlanActionName) -> bool:
        current = self.state.plan.current
        if current is None:
            return False
        base = PlanAction("approve", current.id, current.revision)
        h = spec_hash(current.spec)
        if action == "rewrite":
            spec = replace(current.spec, goal=current.spec.goal + "!")
            act = PlanAction("rewrite", current.id, current.revision + 1, spec, build_summary_view(spec), "runtime", ())
        elif action in ("approve", "start"):
            act = replace(base, action=action, spec_hash=h)
        elif action == "todo":
            act = replace(base, action="todo", todo_id="t1", todo_status="done")
        elif action == "supersede":
            act = replace(base, action="supersede", note="replaced")
        else:
            act = replace(base, action=action)
        return self._plan(act)

    def goal(self, operation: str) -> bool:
        state = self.state.goal
        ref = None if state.current is None else state.current.ref

        def make(s: int, at: int) -> list[Event]:
            if operation == "create":
                self.goals += 1
                return [goal_ops.create(state, f"g{self.goals}", "finish the work", 8, actor="user", seq=s, at=at)]
            if ref is None:
                raise KernelError("no goal")
            if operation == "block":
                reason = BlockedReason("needs-input", "waiting for the user")
                return [goal_ops.block(state, ref, reason, actor="user", seq=s, at=at)]
            if operation == "resume":
                return [goal_ops.resume(state, ref, ARMED, actor="user", seq=s, at=at)]
            op = getattr(goal_ops, operation)
            return [op(state, ref, actor="user", seq=s, at=at)]

        return self._try(make)

    def apply(self, move: str) -> bool:
        if move in ("turn", "plugin_note", "mode", "new_plan"):
            return bool(getattr(self, move)())
        kind, _, name = move.partition(":")
        return self.plan_step(cast(PlanActionName, name)) if kind == "plan" else self.goal(name)


MOVES: tuple[str, ...] = (
    "turn",
    "plugin_note",
    "mode",
    "new_plan",
    *(f"plan:{a}" for a in ("approve", "start", "todo", "verify", "complete", "rewrite", "supersede")),
    *(f"goal:{o}" for o in ("create", "pause", "resume", "block", "complete", "clear")),
)

#: A script that reaches every machine: plan mode, a drafted, approved,
#: executed and completed plan, a goal, turns and a plugin note.
FULL_SCRIPT: tuple[str, ...] = (
    "turn", "mode", "new_plan", "plan:approve", "turn", "mode", "plan:start", "plan:todo",
    "goal:create", "turn", "plugin_note", "goal:pause", "plan:verify", "plan:complete", "goal:resume",
    "new_plan", "plan:rewrite", "turn",
)  # fmt: skip


def build_log(moves: Sequence[str]) -> LogBuilder:
    builder = LogBuilder()
    for move in moves:
        builder.apply(move)
    return builder


def logs(max_moves: int = 25) -> st.SearchStrategy[LogBuilder]:
    """Valid logs built from random moves (moves the machines refuse are skipped)."""
    return st.lists(st.sampled_from(MOVES), max_size=max_moves).map(build_log)


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
