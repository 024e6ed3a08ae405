"""One short line per event, for people reading a log (demo, replay).

Theory of operation
-------------------
``describe(event)`` says what an event means in a few words: who spoke, which
tool ran or was refused and why, what happened to the plan or the goal. It
reads payloads defensively (a display must never fail on a log the fold has
already accepted or is about to reject) and never decides anything.
``summarize(state)`` says where a folded session stands, as plain data;
``plan_text`` and ``goal_text`` say it in words (``plan-1 rev 2, completed``;
``none``), never as a Python repr. Every text it returns has been through
``shown`` (``adapters.cli.text``): no output can fail to encode, no control
character a log holds reaches the reader's terminal, and a URL's password
becomes ``***``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from ...kernel.log import Event
from ...kernel.session import SessionState
from ..specgen.vectors import summarize as canonical_summary
from .text import shown

__all__ = ["describe", "goal_text", "plan_text", "shown", "summarize"]

_WIDTH = 72


def _short(text: object, width: int = _WIDTH) -> str:
    line = shown(" ".join(str(text).split()))
    return line if len(line) <= width else line[: width - 1] + "…"


def _quoted(text: object) -> str:
    """Text in double quotes, as JSON writes a string."""
    return shown(json.dumps(str(text), ensure_ascii=False))


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
    spec_hash, note = payload.get("spec_hash"), payload.get("note")
    if isinstance(spec_hash, str):
        text += f", hash {spec_hash[:12]}"
    if note:
        text += f" ({_short(note, 40)})"
    return text


def describe(event: Event) -> str:
    """What ``event`` records, in one line (printable: see ``shown``)."""
    return shown(_describe(event))


def _describe(event: Event) -> str:
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
        return who + _short(_quoted(p.get("text", "")))
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


def plan_text(plan: object) -> str:
    """A summary's ``plan`` in words: ``plan-1 rev 2, completed`` or ``none``."""
    if not isinstance(plan, Mapping):
        return "none"
    return shown(f"{plan.get('id')} rev {plan.get('revision')}, {plan.get('status')}")


def goal_text(goal: object) -> str:
    """A summary's ``goal`` in words: ``goal-7 rev 3, blocked (round-limit),
    rounds 2/2`` or ``none``."""
    if not isinstance(goal, Mapping):
        return "none"
    blocked = goal.get("blocked")
    phase = f"{goal.get('phase')} ({blocked})" if blocked else str(goal.get("phase"))
    rounds = f"rounds {goal.get('rounds_started')}/{goal.get('max_rounds')}"
    return shown(f"{goal.get('id')} rev {goal.get('revision')}, {phase}, {rounds}")


def summarize(state: SessionState) -> dict[str, object]:
    """Where a folded session stands, as plain data: the conformance summary
    (``vectors.summarize``) with the turns and a blocked goal's code."""
    summary = canonical_summary(state)
    facts: dict[str, object] = {**summary, "turns": state.turns.turn, "turn_open": state.turns.open}
    goal, found = state.goal.current, summary["goal"]
    if goal is not None and isinstance(found, dict):
        facts["goal"] = {**found, "blocked": None if goal.blocked_reason is None else goal.blocked_reason.code}
    return facts
