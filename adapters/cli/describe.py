"""One short line per event, for people reading a log (demo, replay).

Theory of operation
-------------------
``describe(event)`` says what an event means in a few words: who spoke, which
tool ran or was refused and why, what happened to the plan or the goal. It
reads payloads defensively (a display must never fail on a log the fold has
already accepted or is about to reject) and never decides anything.
``summarize(state)`` says where a folded session stands.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from planfold.kernel.log import Event
from planfold.kernel.session import SessionState

__all__ = ["describe", "summarize"]

_WIDTH = 72


def _short(text: object, width: int = _WIDTH) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= width else line[: width - 1] + "…"


def _source(source: object) -> str:
    if not isinstance(source, Mapping):
        return "human"
    if source.get("type") == "goal":
        return f"goal {source.get('goal_id')} round {source.get('round')}"
    return f"plugin {source.get('plugin')}"


def _goal(payload: Mapping[str, object]) -> str:
    operation = payload.get("operation")
    goal = payload.get("goal")
    if isinstance(goal, Mapping):
        text = f"{operation}: {goal.get('id')} rev {goal.get('revision')} {goal.get('phase')}"
        reason = goal.get("blocked_reason")
        if isinstance(reason, Mapping):
            text += f" ({reason.get('code')})"
        return text + f", rounds {payload.get('rounds_started')}/{goal.get('max_rounds')}"
    cleared = payload.get("cleared")
    if isinstance(cleared, Mapping):
        return f"clear: {cleared.get('id')} (tombstone rev {cleared.get('revision')})"
    return str(operation)


def _plan(payload: Mapping[str, object]) -> str:
    action = payload.get("action")
    text = f"{action}: {payload.get('plan_id')} rev {payload.get('revision')}"
    if action in ("draft", "bootstrap", "rewrite"):
        text += f", summary from the {payload.get('summary_source')}"
    if action == "todo":
        text += f", {payload.get('todo_id')} -> {payload.get('status')}"
    if isinstance(payload.get("spec_hash"), str):
        text += f", hash {str(payload['spec_hash'])[:12]}"
    if payload.get("note"):
        text += f" ({_short(payload['note'], 40)})"
    return text


def describe(event: Event) -> str:
    """What ``event`` records, in one line."""
    p = event.payload
    kind = event.kind
    if kind in ("turn/start", "turn/end"):
        return f"turn {p.get('turn')}"
    if kind == "request/header":
        mode = "plan" if p.get("plan_mode") else "build"
        return f"turn {p.get('turn')} step {p.get('step')}, {mode} mode"
    if kind == "plan/mode":
        return "plan mode on" if p.get("active") else "plan mode off"
    if kind in ("user/message", "assistant/message"):
        who = "" if kind == "assistant/message" else f"[{_source(p.get('source'))}] "
        return who + _short(repr(p.get("text", "")))
    if kind == "tool/call":
        args = json.dumps(p.get("arguments"), ensure_ascii=False, sort_keys=True)
        return f"{p.get('tool')} {_short(args, 50)}"
    if kind == "tool/result":
        status = "ok" if p.get("ok") else "failed"
        return f"{p.get('tool')} {status}: {_short(p.get('output', ''), 50)}"
    if kind in ("tool/refused", "tool/warning"):
        return f"{p.get('tool')} [{p.get('code')}] in {p.get('phase')}"
    if kind == "plan/artifact":
        return _plan(p)
    if kind == "goal/change":
        return _goal(p)
    return _short(json.dumps(p, sort_keys=True, default=str))


def summarize(state: SessionState) -> dict[str, object]:
    """Where a folded session stands, as plain data."""
    plan = state.plan.current
    goal = state.goal.current
    return {
        "last_seq": state.last_seq,
        "turns": state.turns.turn,
        "turn_open": state.turns.open,
        "agent_mode": state.agent_mode,
        "plan": None
        if plan is None
        else {"id": plan.id, "revision": plan.revision, "status": plan.status},
        "goal": None
        if goal is None
        else {
            "id": goal.id,
            "revision": goal.revision,
            "phase": goal.phase,
            "rounds_started": goal.rounds_started,
            "max_rounds": goal.max_rounds,
            "blocked": None if goal.blocked_reason is None else goal.blocked_reason.code,
        },
    }
