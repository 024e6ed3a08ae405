"""Generated valid goal logs and their single mutations, shared by the goal
property tests."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from hypothesis import strategies as st

from planfold.kernel.goal.continuation import budget_block, round_message
from planfold.kernel.goal.fold import GoalState, apply_goal_event
from planfold.kernel.goal.ops import GoalError, block, clear, complete, create, edit, pause, resume
from planfold.kernel.goal.values import DISARMED, BlockedReason, GoalRef
from planfold.kernel.log import (
    ASSISTANT_MESSAGE,
    GOAL_CHANGE,
    PLAN_MODE,
    TURN_START,
    USER_MESSAGE,
    Event,
)
from planfold.kernel.payload import JSONObject
from tests.goal_model import check_log

#: Actions worth trying in each phase (None: no current goal). A few refused
#: ones stay in (create over an unfinished goal, resume of an armed-looking
#: goal after its budget) so refusals are exercised too; they are skipped.
ACTIONS: dict[str | None, tuple[str, ...]] = {
    None: ("create", "create", "filler"),
    "active": ("edit", "pause", "complete", "block", "clear", "round", "round", "round", "budget",
               "create", "resume", "filler"),
    "paused": ("edit", "resume", "complete", "clear", "filler"),
    "blocked": ("edit", "resume", "complete", "clear", "filler"),
    "complete": ("create", "edit", "clear", "filler"),
}
#: Events of other kinds, which the goal fold passes over.
FILLERS: tuple[tuple[str, JSONObject], ...] = (
    (TURN_START, {"turn": 1}),
    (USER_MESSAGE, {"text": "why did that fail?", "source": None}),
    (USER_MESSAGE, {"text": "on", "source": {"type": "plugin", "plugin": "plan-mode"}}),
    (ASSISTANT_MESSAGE, {"text": "done", "source": None}),
    (PLAN_MODE, {"active": True}),
)
OBJECTIVES = ("ship the parser", "fix the flaky test", "write the docs")


def _decide(
    action: str, state: GoalState, draw: st.DrawFn, ident: int, *, seq: int, at: int
) -> Event | None:
    """The event for one action (None when the action does not apply);
    raises ``GoalError`` when the operation refuses."""
    ref = state.current.ref if state.current is not None else GoalRef("none", 1)
    if action == "create":
        cap = draw(st.sampled_from([1, 2, 3, None]))
        text = draw(st.sampled_from(OBJECTIVES))
        return create(state, f"g{ident}", text, cap, actor="user", at=at).numbered(seq, at)
    if action == "edit":
        new_text: str | None = draw(st.sampled_from([None, *OBJECTIVES]))
        new_cap: int | None = draw(st.sampled_from([None, 1, 2, 4]))
        return edit(state, ref, objective=new_text, max_rounds=new_cap, actor="user", at=at).numbered(seq, at)
    if action == "pause":
        return pause(state, ref, actor="user", at=at).numbered(seq, at)
    if action == "resume":
        return resume(state, ref, DISARMED, actor="user", at=at).numbered(seq, at)
    if action == "complete":
        return complete(state, ref, actor="model", at=at).numbered(seq, at)
    if action == "block":
        reason = BlockedReason("needs-input", "which database?")
        return block(state, ref, reason, actor="model", at=at).numbered(seq, at)
    if action == "clear":
        return clear(state, ref, actor="user", at=at).numbered(seq, at)
    if action == "round":
        return round_message(state, "keep going").numbered(seq, at)
    if action == "budget":
        blocked = budget_block(state, at=at)
        return None if blocked is None else blocked.numbered(seq, at)
    kind, payload = draw(st.sampled_from(FILLERS))
    return Event(seq, kind, at, copy.deepcopy(payload))


def valid_logs(max_steps: int = 18) -> st.SearchStrategy[list[Event]]:
    """Logs made by the real operations from random actions (refused ones skipped)."""

    @st.composite
    def build(draw: st.DrawFn) -> list[Event]:
        log: list[Event] = []
        state = GoalState()
        clock = draw(st.integers(0, 5))
        for ident in range(draw(st.integers(1, max_steps))):
            clock += draw(st.integers(0, 3))
            phase = None if state.current is None else state.current.phase
            action = draw(st.sampled_from(ACTIONS[phase]))
            try:
                event = _decide(action, state, draw, ident, seq=len(log) + 1, at=clock)
            except GoalError:
                continue
            if event is None:
                continue
            state = apply_goal_event(state, event)
            log.append(event)
        return log

    return build()


# --------------------------------------------------------------------------
# Mutations

Mutant = list[Event] | None
Mutation = Callable[[list[Event], int], Mutant]


def gapless(events: Sequence[Event]) -> list[Event]:
    """A mutant's events with their seqs closed up (1, 2, 3 …), so that the
    fold gets past the envelope check to the rule the mutation breaks."""
    return [replace(event, seq=index + 1) for index, event in enumerate(events)]


def _with_payload(
    log: list[Event], i: int, edit_payload: Callable[[dict[str, Any]], bool]
) -> Mutant:
    payload = copy.deepcopy(dict(log[i].payload))
    if not edit_payload(payload):
        return None
    return [*log[:i], replace(log[i], payload=payload), *log[i + 1 :]]


def _goal_source(payload: dict[str, Any]) -> dict[str, Any] | None:
    source = payload.get("source")
    return source if isinstance(source, dict) and source.get("type") == "goal" else None


def _shift_revision(delta: int) -> Mutation:
    def mutate(log: list[Event], i: int) -> Mutant:
        def change(p: dict[str, Any]) -> bool:
            if log[i].kind == GOAL_CHANGE:
                target = p["cleared"] if p["operation"] == "clear" else p["goal"]
                target["revision"] += delta
                return True
            source = _goal_source(p)
            if source is None:
                return False
            source["revision"] += delta
            return True

        return _with_payload(log, i, change)

    return mutate


def _skip_round(log: list[Event], i: int) -> Mutant:
    def change(p: dict[str, Any]) -> bool:
        source = _goal_source(p)
        if source is None:
            return False
        source["round"] += 1
        return True

    return _with_payload(log, i, change)


def _round_over_cap(log: list[Event], i: int) -> Mutant:
    goal = check_log(log[:i])[0].goal

    def change(p: dict[str, Any]) -> bool:
        source = _goal_source(p)
        if source is None or goal is None:
            return False
        source["round"] = goal["max_rounds"] + 1
        return True

    return _with_payload(log, i, change)


def _round_zero(log: list[Event], i: int) -> Mutant:
    def change(p: dict[str, Any]) -> bool:
        source = _goal_source(p)
        if source is None:
            return False
        source["round"] = 0
        return True

    return _with_payload(log, i, change)


def _stamp_earlier(log: list[Event], i: int) -> Mutant:
    def change(p: dict[str, Any]) -> bool:
        if log[i].kind != GOAL_CHANGE:
            return False
        key = "cleared_at" if p["operation"] == "clear" else "updated_at"
        p[key] -= 1
        return True

    return _with_payload(log, i, change)


def _unknown_kind(log: list[Event], i: int) -> Mutant:
    return [*log[:i], replace(log[i], kind="goal/archive"), *log[i + 1 :]]


def _wrong_phase(phase: str) -> Mutation:
    def mutate(log: list[Event], i: int) -> Mutant:
        def change(p: dict[str, Any]) -> bool:
            if log[i].kind != GOAL_CHANGE or p["operation"] == "clear":
                return False
            if p["goal"]["phase"] == phase:
                return False
            p["goal"]["phase"] = phase
            return True

        return _with_payload(log, i, change)

    return mutate


def _in_goal(key: str, new_value: Callable[[Any], Any]) -> Mutation:
    """Change one field of a snapshot's goal (skipped when the field is null)."""

    def mutate(log: list[Event], i: int) -> Mutant:
        def change(p: dict[str, Any]) -> bool:
            if log[i].kind != GOAL_CHANGE or p["operation"] == "clear":
                return False
            if p["goal"][key] is None:
                return False
            p["goal"][key] = new_value(p["goal"][key])
            return True

        return _with_payload(log, i, change)

    return mutate


def _bump_rounds(log: list[Event], i: int) -> Mutant:
    def change(p: dict[str, Any]) -> bool:
        if log[i].kind != GOAL_CHANGE or p["operation"] == "clear":
            return False
        p["rounds_started"] += 1
        return True

    return _with_payload(log, i, change)


def _extra_key(log: list[Event], i: int) -> Mutant:
    def change(p: dict[str, Any]) -> bool:
        p["extra"] = True
        return True

    return _with_payload(log, i, change)


def _extra_goal_key(log: list[Event], i: int) -> Mutant:
    def change(p: dict[str, Any]) -> bool:
        if log[i].kind != GOAL_CHANGE or p["operation"] == "clear":
            return False
        p["goal"]["extra"] = True
        return True

    return _with_payload(log, i, change)


def _set_field(key: str, value: object) -> Mutation:
    def mutate(log: list[Event], i: int) -> Mutant:
        def change(p: dict[str, Any]) -> bool:
            if log[i].kind != GOAL_CHANGE:
                return False
            p[key] = value
            return True

        return _with_payload(log, i, change)

    return mutate


def _time_back(log: list[Event], i: int) -> Mutant:
    if i == 0 or log[i - 1].at == 0:
        return None
    return [*log[:i], replace(log[i], at=log[i - 1].at - 1), *log[i + 1 :]]


def _delete(log: list[Event], i: int) -> Mutant:
    return [*log[:i], *log[i + 1 :]]


def _duplicate(log: list[Event], i: int) -> Mutant:
    return [*log[: i + 1], log[i], *log[i + 1 :]]


def _swap(log: list[Event], i: int) -> Mutant:
    if i + 1 >= len(log):
        return None
    a, b = log[i], log[i + 1]
    return [*log[:i], replace(b, seq=a.seq), replace(a, seq=b.seq), *log[i + 2 :]]


def _gapless(mutation: Mutation) -> Mutation:
    def mutate(log: list[Event], i: int) -> Mutant:
        mutant = mutation(log, i)
        return None if mutant is None else gapless(mutant)

    return mutate


#: Every mutation, by name. Each returns the mutant, or None when it does not
#: apply at that position.
MUTATIONS: dict[str, Mutation] = {
    "delete": _delete,
    "delete-gapless": _gapless(_delete),
    "duplicate": _duplicate,
    "duplicate-gapless": _gapless(_duplicate),
    "swap-neighbours": _swap,
    "revision-plus-one": _shift_revision(1),
    "revision-minus-one": _shift_revision(-1),
    "skip-round": _skip_round,
    "round-over-cap": _round_over_cap,
    **{f"phase-{phase}": _wrong_phase(phase) for phase in ("active", "paused", "blocked")},
    "phase-complete": _wrong_phase("complete"),
    "extra-key": _extra_key,
    "extra-goal-key": _extra_goal_key,
    "version-2": _set_field("version", 2),
    "unknown-operation": _set_field("operation", "archive"),
    "time-back": _time_back,
    "other-objective": _in_goal("objective", lambda text: text + " and more"),
    "other-cap": _in_goal("max_rounds", lambda cap: cap + 1),
    "other-reason": _in_goal("blocked_reason", lambda r: {**r, "message": "something else"}),
    "rounds-plus-one": _bump_rounds,
    "round-zero": _round_zero,
    "stamp-earlier": _stamp_earlier,
    "unknown-kind": _unknown_kind,
}
