"""Shared by the tests of the session fold: outcomes to compare, valid
payload templates of every kind, and generated hostile events (a valid log
and one more event whose payload is a near miss of a valid one)."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from planfold.kernel.errors import PlanfoldError, ReplayError
from planfold.kernel.goal.values import BlockedReason, GoalSnapshot, snapshot_payload
from planfold.kernel.log import (
    ASSISTANT_MESSAGE,
    GOAL_CHANGE,
    KNOWN_KINDS,
    PLAN_ARTIFACT,
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
from planfold.kernel.session import Row
from tests.storage_helpers import logs

Outcome = tuple[str, object]


def outcome(run: Any, *args: Any) -> Outcome:
    """A state, or what was raised (type, and position/rule/detail or message)."""
    try:
        return ("state", run(*args))
    except ReplayError as exc:
        return ("replay", (exc.position, exc.rule, exc.detail))
    except (PlanfoldError, TypeError, ValueError, KeyError, AttributeError) as exc:
        return (type(exc).__name__, str(exc))


# --------------------------------------------------------------------------
# Payloads that are wrong in every way a reader must notice

SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["", " ", "x", "goal", "plugin", "g1"]),
    st.floats(allow_nan=False, allow_infinity=False, width=16),
)
KEYS = st.sampled_from(
    ["text", "source", "type", "goal_id", "revision", "round", "plugin", "turn", "step", "plan_mode", "active",
     "call_id", "tool", "ok", "output", "arguments", "code", "reason", "phase", "version", "operation", "x"]
)
JSONISH = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=5),
                        max_leaves=8)


#: One valid payload of every kind (the generated logs supply more).
TEMPLATES: dict[str, list[dict[str, Any]]] = {
    TURN_START: [{"turn": 1}],
    TURN_END: [{"turn": 1}],
    REQUEST_HEADER: [{"turn": 1, "step": 1, "plan_mode": False}],
    PLAN_MODE: [{"active": True}],
    USER_MESSAGE: [
        {"text": "go", "source": {"type": "goal", "goal_id": "g1", "revision": 1, "round": 1}},
        {"text": "hi", "source": None},
        {"text": "note", "source": {"type": "plugin", "plugin": "lint"}},
    ],
    ASSISTANT_MESSAGE: [{"text": "ok", "source": None}],
    GOAL_CHANGE: [
        {"version": 1, "operation": "clear", "cleared": {"id": "g1", "revision": 2}, "cleared_at": 5},
        dict(snapshot_payload("create", GoalSnapshot("g9", "ship it", "active", None, 4, 1, 0, 0, 0))),
        dict(snapshot_payload("pause", GoalSnapshot("g9", "ship it", "paused", None, 4, 2, 0, 0, 0))),
        dict(
            snapshot_payload(
                "block", GoalSnapshot("g9", "ship it", "blocked", BlockedReason("needs-input", "why"), 4, 2, 0, 0, 0)
            )
        ),
    ],
    PLAN_ARTIFACT: [{"action": "verify", "plan_id": "p1", "revision": 1}],
    TOOL_CALL: [{"call_id": "c1", "tool": "read_file", "arguments": {"path": "a.py"}}],
    TOOL_RESULT: [{"call_id": "c1", "tool": "read_file", "ok": True, "output": "x"}],
    TOOL_REFUSED: [{"call_id": "c1", "tool": "w", "code": "plan-mode", "reason": "no", "phase": "plan"}],
    TOOL_WARNING: [{"call_id": "c1", "tool": "w", "code": "plan-mode", "reason": "no", "phase": "plan", "hint": "h"}],
}


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            out += paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            out += paths(child, (*prefix, index))
    return out


@st.composite
def mutated_payload(draw: st.DrawFn, template: dict[str, Any]) -> Any:
    """``template`` (left as it is now and then) with one thing changed: a value
    replaced by a near miss, a key dropped, a key added."""
    payload = copy.deepcopy(template)
    how = draw(st.sampled_from(["keep", "value", "value", "drop", "add", "whole"]))
    if how == "keep":
        return payload
    if how == "whole":
        return draw(JSONISH)
    path = draw(st.sampled_from(paths(payload)[1:] or [()]))
    if not path:
        return draw(JSONISH)
    parent = payload
    for step in path[:-1]:
        parent = parent[step]
    if how == "value":
        parent[path[-1]] = draw(SCALARS | JSONISH)
    elif how == "drop" and isinstance(parent, dict):
        del parent[path[-1]]
    elif isinstance(parent, dict):
        parent[draw(KEYS)] = draw(SCALARS)
    return payload


@st.composite
def hostile_case(draw: st.DrawFn) -> tuple[list[Event], Event]:
    """A valid log and one more event of a known kind whose payload is a
    near miss of a valid one (and now and then a bad seq or time)."""
    builder = draw(logs(12))
    events = builder.events
    kind = draw(st.sampled_from(sorted(KNOWN_KINDS)))
    seen = [dict(e.payload) for e in events if e.kind == kind]
    template = draw(st.sampled_from(TEMPLATES[kind] + seen))
    payload = draw(mutated_payload(template))
    last = events[-1] if events else None
    seq = (last.seq if last else 0) + draw(st.sampled_from([1, 1, 1, 1, 0, 2]))
    at = (last.at if last else 0) + draw(st.sampled_from([0, 1, 1, -1]))
    return events, Event(seq, kind, at, payload)


def rows_of(events: Sequence[Event]) -> list[Row]:
    return [(e.seq, e.kind, e.at, e.payload) for e in events]
