"""A plain model of the goal rules, written straight from the spec.

Two parts, both independent of the kernel's code (they share only the event
envelope type and kind names):

- ``check_log(events)``: walks a log event by event with a dict state and
  returns the state after the valid prefix plus ``(position, rule)`` of the
  first bad event, or ``None`` when the whole log is valid;
- ``to_state(model)``: the kernel ``GoalState`` the model's state stands for,
  so a test can compare the two (``same_goal_state``: used ids included).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from planfold.kernel.goal.fold import GoalState
from planfold.kernel.goal.values import BlockedReason, GoalRef, GoalSnapshot
from planfold.kernel.idset import IdSet
from planfold.kernel.log import KNOWN_KINDS, Event

KEBAB = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
OPS = ("create", "edit", "pause", "resume", "complete", "block", "clear")
PHASES = ("active", "paused", "blocked", "complete")


class Bad(Exception):
    def __init__(self, rule: str) -> None:
        super().__init__(rule)
        self.rule = rule


@dataclass
class Model:
    goal: dict[str, Any] | None = None
    last_ref: tuple[str, int] | None = None
    used: set[str] = field(default_factory=set)


def to_state(model: Model) -> GoalState:
    goal = model.goal
    current = None
    if goal is not None:
        reason = goal["reason"]
        current = GoalSnapshot(
            id=goal["id"],
            objective=goal["objective"],
            phase=goal["phase"],
            blocked_reason=None if reason is None else BlockedReason(*reason),
            max_rounds=goal["max_rounds"],
            revision=goal["revision"],
            rounds_started=goal["rounds"],
            created_at=goal["created"],
            updated_at=goal["updated"],
        )
    last = None if model.last_ref is None else GoalRef(*model.last_ref)
    return GoalState(current, last, IdSet(model.used))


def same_goal_state(one: GoalState, other: GoalState) -> bool:
    """Equal goal states with the same ids used (``used_ids`` is an index the
    state's equality leaves out, so it is compared here on its own)."""
    return one == other and one.used_ids == other.used_ids


# --------------------------------------------------------------------------
# Shapes


def is_int(value: object, low: int | None = None) -> bool:
    return type(value) is int and (low is None or value >= low)


def is_trimmed_text(value: object) -> bool:
    return isinstance(value, str) and value != "" and value == value.strip()


def shape_change(p: object) -> dict[str, Any]:
    if not isinstance(p, dict) or "version" not in p or "operation" not in p:
        raise Bad("malformed-payload")
    if not is_int(p["version"]) or p["version"] != 1:
        raise Bad("unknown-version")
    if p["operation"] not in OPS or not isinstance(p["operation"], str):
        raise Bad("unknown-operation")
    if p["operation"] == "clear":
        ok = (
            set(p) == {"version", "operation", "cleared", "cleared_at"}
            and isinstance(p["cleared"], dict)
            and set(p["cleared"]) == {"id", "revision"}
            and isinstance(p["cleared"]["id"], str)
            and p["cleared"]["id"] != ""
            and is_int(p["cleared"]["revision"], 1)
            and is_int(p["cleared_at"], 0)
        )
        if not ok:
            raise Bad("malformed-payload")
        return p
    keys = {"version", "operation", "goal", "rounds_started", "created_at", "updated_at"}
    if set(p) != keys or not isinstance(p["goal"], dict):
        raise Bad("malformed-payload")
    g = p["goal"]
    if set(g) != {"id", "revision", "objective", "phase", "max_rounds", "blocked_reason"}:
        raise Bad("malformed-payload")
    reason = g["blocked_reason"]
    reason_ok = reason is None or (
        isinstance(reason, dict)
        and set(reason) == {"code", "message"}
        and isinstance(reason["code"], str)
        and KEBAB.match(reason["code"]) is not None
        and is_trimmed_text(reason["message"])
    )
    ok = (
        isinstance(g["phase"], str)
        and g["phase"] in PHASES
        and reason_ok
        and (reason is not None) == (g["phase"] == "blocked")
        and isinstance(g["id"], str)
        and g["id"] != ""
        and is_trimmed_text(g["objective"])
        and is_int(g["max_rounds"], 1)
        and is_int(g["revision"], 1)
        and is_int(p["rounds_started"], 0)
        and is_int(p["created_at"], 0)
        and is_int(p["updated_at"], 0)
    )
    if not ok:
        raise Bad("malformed-payload")
    return p


def shape_message(p: object) -> dict[str, Any] | None:
    """The goal source of a user message, or None for another source."""
    if not isinstance(p, dict) or set(p) != {"text", "source"} or not isinstance(p["text"], str):
        raise Bad("malformed-payload")
    src = p["source"]
    if src is None:
        return None
    if not isinstance(src, dict):
        raise Bad("malformed-payload")
    if src.get("type") == "plugin":
        if set(src) != {"type", "plugin"} or not isinstance(src["plugin"], str) or not src["plugin"]:
            raise Bad("malformed-payload")
        return None
    if src.get("type") == "goal":
        ok = (
            set(src) == {"type", "goal_id", "revision", "round"}
            and isinstance(src["goal_id"], str)
            and src["goal_id"] != ""
            and is_int(src["revision"])
            and is_int(src["round"])
        )
        if not ok:
            raise Bad("malformed-payload")
        return src
    raise Bad("malformed-payload")


# --------------------------------------------------------------------------
# The rules


# The table, written out independently of the kernel's: the phases
# (None: no goal) each operation may start from, and the phase it leaves.
ALLOWED_FROM: dict[str, set[str | None]] = {
    "create": {None, "complete"},
    "edit": {"active", "paused", "blocked", "complete"},
    "pause": {"active"},
    "resume": {"active", "paused", "blocked"},
    "complete": {"active", "paused", "blocked"},
    "block": {"active"},
    "clear": {"active", "paused", "blocked", "complete"},
}
RESULT_PHASE: dict[str, str | None] = {
    "create": "active",
    "pause": "paused",
    "resume": "active",
    "complete": "complete",
    "block": "blocked",
    "clear": None,
}


def target_goal(model: Model, gid: str, rev: int, *, exact: bool) -> dict[str, Any]:
    goal = model.goal
    if goal is None or goal["id"] != gid:
        raise Bad("goal-mismatch")
    want = goal["revision"] if exact else goal["revision"] + 1
    if rev < want:
        raise Bad("stale-revision")
    if rev > want:
        raise Bad("revision-gap")
    return goal


def step_change(model: Model, p: dict[str, Any], at: int) -> None:
    op = p["operation"]
    if op == "clear":
        target_goal(model, p["cleared"]["id"], p["cleared"]["revision"], exact=False)
        if p["cleared_at"] != at:
            raise Bad("timestamp-mismatch")
        model.goal = None
        model.last_ref = (p["cleared"]["id"], p["cleared"]["revision"])
        return
    g = p["goal"]
    reason = None if g["blocked_reason"] is None else (
        g["blocked_reason"]["code"],
        g["blocked_reason"]["message"],
    )
    new = {
        "id": g["id"],
        "objective": g["objective"],
        "phase": g["phase"],
        "reason": reason,
        "max_rounds": g["max_rounds"],
        "revision": g["revision"],
        "rounds": p["rounds_started"],
        "created": p["created_at"],
        "updated": p["updated_at"],
    }
    if op == "create":
        if g["id"] in model.used:
            raise Bad("id-reused")
        if g["revision"] != 1:
            raise Bad("revision-gap")
        if (model.goal is not None and model.goal["phase"] != "complete") or g["phase"] != "active":
            raise Bad("transition-not-allowed")
        if new["rounds"] != 0:
            raise Bad("rounds-mismatch")
        if new["created"] != at or new["updated"] != at:
            raise Bad("timestamp-mismatch")
        model.used.add(g["id"])
    else:
        old = target_goal(model, g["id"], g["revision"], exact=False)
        if old["phase"] not in ALLOWED_FROM[op]:
            raise Bad("transition-not-allowed")
        if new["phase"] != RESULT_PHASE.get(op, old["phase"]):
            raise Bad("transition-not-allowed")
        if op == "edit" and new["reason"] != old["reason"]:
            raise Bad("transition-not-allowed")
        if op != "edit" and (
            new["objective"] != old["objective"] or new["max_rounds"] != old["max_rounds"]
        ):
            raise Bad("transition-not-allowed")
        if op == "resume" and old["rounds"] >= old["max_rounds"]:
            raise Bad("transition-not-allowed")
        if new["rounds"] != old["rounds"]:
            raise Bad("rounds-mismatch")
        if new["created"] != old["created"] or new["updated"] != at:
            raise Bad("timestamp-mismatch")
    model.goal = new
    model.last_ref = (g["id"], g["revision"])


def step_round(model: Model, src: dict[str, Any]) -> None:
    goal = target_goal(model, src["goal_id"], src["revision"], exact=True)
    n = src["round"]
    if n < 1:
        raise Bad("round-not-positive")
    if goal["phase"] != "active":
        raise Bad("round-while-stopped")
    if n > goal["max_rounds"]:
        raise Bad("round-over-cap")
    if n != goal["rounds"] + 1:
        raise Bad("round-gap")
    goal["rounds"] = n


def check_log(events: Sequence[Event]) -> tuple[Model, tuple[int, str] | None]:
    """The model after the valid prefix, and the first failure (if any)."""
    model = Model()
    prev: Event | None = None
    for event in events:
        expected = 1 if prev is None else prev.seq + 1
        if not is_int(event.seq) or event.seq != expected:
            return model, (event.seq if is_int(event.seq) else expected, "seq-gap")
        if not is_int(event.at, 0):
            return model, (event.seq, "malformed-payload")
        if prev is not None and event.at < prev.at:
            return model, (event.seq, "time-regressed")
        if event.kind not in KNOWN_KINDS:
            return model, (event.seq, "unknown-kind")
        trial = Model(
            None if model.goal is None else dict(model.goal), model.last_ref, set(model.used)
        )
        try:
            if event.kind == "goal/change":
                step_change(trial, shape_change(event.payload), event.at)
            elif event.kind == "user/message":
                src = shape_message(event.payload)
                if src is not None:
                    step_round(trial, src)
        except Bad as bad:
            return model, (event.seq, bad.rule)
        model = trial
        prev = event
    return model, None
