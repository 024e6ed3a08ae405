"""One short line per event, for people reading a log (demo, replay).

Theory of operation
-------------------
``describe(event)`` says what an event means in a few words: who spoke, which
tool ran or was refused and why, what happened to the plan or the goal. It
reads each payload with its kind's reader, and never decides anything; a
payload that does not read (a log the fold is about to reject) is shown as
its JSON, so a display never fails.
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

from ...kernel.errors import PayloadError
from ...kernel.goal.values import GoalChange, SnapshotChange, read_goal_change
from ...kernel.log import (
    Event,
    GoalSource,
    MessageSource,
    TurnPayload,
    read_assistant_message,
    read_message,
    read_request_header,
)
from ...kernel.payload import JSONObject, read_as
from ...kernel.plan.mode import read_plan_mode
from ...kernel.plan.payload import PlanAction, read_plan_action
from ...kernel.session import SessionState
from ...kernel.tools.events import read_tool_call, read_tool_notice, read_tool_result
from ...kernel.tools.spec import thaw_json
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


def _source(source: MessageSource | None) -> str:
    if source is None:
        return "human"
    if isinstance(source, GoalSource):
        return f"goal {source.goal_id} round {source.round}"
    return f"plugin {source.plugin}"


def _goal(change: GoalChange) -> str:
    if isinstance(change, SnapshotChange):
        goal = change.goal
        text = f"{change.operation}: {goal.id} rev {goal.revision} {goal.phase}"
        if goal.blocked_reason is not None:
            text += f" ({goal.blocked_reason.code})"
        return text + f", rounds {change.rounds_started}/{goal.max_rounds}"
    return f"clear: {change.cleared.id} (tombstone rev {change.cleared.revision})"


def _plan(act: PlanAction) -> str:
    text = f"{act.action}: {act.plan_id} rev {act.revision}"
    if act.action in ("draft", "bootstrap", "rewrite"):
        text += f", summary from the {act.summary_source}"
    if act.action == "todo":
        text += f", {act.todo_id} -> {act.todo_status}"
    if act.spec_hash is not None:
        text += f", hash {act.spec_hash[:12]}"
    if act.note:
        text += f" ({_short(act.note, 40)})"
    return text


def describe(event: Event) -> str:
    """What ``event`` records, in one line (printable: see ``shown``)."""
    try:
        return shown(_describe(event.kind, event.payload))
    except PayloadError:  # the fold refuses it: show what it holds
        return shown(_json(event.payload))


def _json(payload: JSONObject) -> str:
    return _short(json.dumps(payload, sort_keys=True, default=str))


def _describe(kind: str, p: JSONObject) -> str:
    if kind in ("turn/start", "turn/end"):
        body: TurnPayload = read_as(TurnPayload, p)
        return f"turn {body.turn}"
    if kind == "request/header":
        header = read_request_header(p)
        return f"turn {header.turn} step {header.step}, {'plan' if header.plan_mode else 'build'} mode"
    if kind == "plan/mode":
        return "plan mode on" if read_plan_mode(p) else "plan mode off"
    if kind == "assistant/message":
        return _short(_quoted(read_assistant_message(p).text))
    if kind == "user/message":
        message = read_message(p)
        return f"[{_source(message.source)}] " + _short(_quoted(message.text))
    if kind == "tool/call":
        call = read_tool_call(p)
        args = json.dumps(thaw_json(call.recorded_arguments), ensure_ascii=False, sort_keys=True)
        return f"{call.name} {_short(args, 50)}"
    if kind == "tool/result":
        result = read_tool_result(p)
        return f"{result.tool} {'ok' if result.ok else 'failed'}: {_short(result.output, 50)}"
    if kind in ("tool/refused", "tool/warning"):
        notice = read_tool_notice(p)
        return f"{notice.tool} [{notice.code}] in {notice.phase}"
    if kind == "plan/artifact":
        return _plan(read_plan_action(p))
    if kind == "goal/change":
        return _goal(read_goal_change(p))
    return _json(p)


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
