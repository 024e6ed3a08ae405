"""Logs for the report's tests: the demo's session, and long generated
sessions with refused and warned tool calls, made lazily."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

from planfold.adapters.cli.demo import run_demo
from planfold.adapters.store.sqlite import SqliteStore
from planfold.kernel.log import (
    ASSISTANT_MESSAGE,
    PLAN_MODE,
    REQUEST_HEADER,
    TOOL_CALL,
    TOOL_REFUSED,
    TOOL_RESULT,
    TOOL_WARNING,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
    Event,
)
from planfold.kernel.payload import JSONObject

__all__ = ["WIDE_TURN", "demo_events", "demo_session", "gated_events"]

#: The turn of ``gated_events`` that makes a thousand calls in one step.
WIDE_TURN = 3


def demo_session(directory: Path) -> Path:
    """A database holding the demo's session ``demo-1``."""
    db = directory / "demo.sqlite"
    run_demo(str(db), io.StringIO())
    return db


def demo_events(db: Path) -> tuple[Event, ...]:
    store = SqliteStore(db)
    try:
        return tuple(store.read("demo-1"))
    finally:
        store.close()


def _notice(call_id: str, code: str) -> JSONObject:
    return {"call_id": call_id, "tool": "write_file", "code": code, "reason": "not in this phase",
            "phase": "plan"}


def gated_events(count: int) -> Iterator[Event]:
    """A session of exactly ``count`` events: turns that each make an allowed
    call, a refused one (``not-offered`` or ``read-only-phase``) and a warned
    one; plan mode flips between turns every fifth turn; turn ``WIDE_TURN``
    makes a thousand refused calls."""
    seq = 0
    plan_mode = False
    turn = 0

    def make(kind: str, payload: JSONObject) -> Event:
        nonlocal seq
        seq += 1
        return Event(seq, kind, 1_000 + seq, payload)

    while True:
        turn += 1
        batch: list[Event] = []
        if turn % 5 == 0:
            plan_mode = not plan_mode
            batch.append(make(PLAN_MODE, {"active": plan_mode}))
        batch += [
            make(TURN_START, {"turn": turn}),
            make(USER_MESSAGE, {"text": f"task {turn}", "source": None}),
            make(REQUEST_HEADER, {"turn": turn, "step": 1, "plan_mode": plan_mode}),
        ]
        calls = 1_000 if turn == WIDE_TURN else 1
        for index in range(calls):
            ok, bad, warn = f"a{turn}-{index}", f"r{turn}-{index}", f"w{turn}-{index}"
            code = "not-offered" if index % 2 else "read-only-phase"
            batch += [
                make(TOOL_CALL, {"call_id": ok, "tool": "read_file", "arguments": {"path": "a.py"}}),
                make(TOOL_RESULT, {"call_id": ok, "tool": "read_file", "ok": True, "output": "x"}),
                make(TOOL_CALL, {"call_id": bad, "tool": "write_file", "arguments": {"path": "a.py"}}),
                make(TOOL_REFUSED, _notice(bad, code)),
                make(TOOL_CALL, {"call_id": warn, "tool": "write_file", "arguments": {"path": "b.py"}}),
                make(TOOL_WARNING, _notice(warn, "advisory-write")),
                make(TOOL_RESULT, {"call_id": warn, "tool": "write_file", "ok": True, "output": "y"}),
            ]
        batch += [
            make(ASSISTANT_MESSAGE, {"text": f"done {turn}", "source": None}),
            make(TURN_END, {"turn": turn}),
        ]
        for event in batch:
            if event.seq > count:
                return
            yield event
