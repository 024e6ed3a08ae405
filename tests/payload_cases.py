"""Payloads of every kind, valid and mutated: the seeds are taken from the
conformance cases and the kernel's builders, and a mutation drops or adds a
key, replaces a value with a near miss or with arbitrary JSON, or switches a
tag. Shared by the tests that hold two readings of the same types to each
other (the JSON Schema, the stores' msgspec decoders)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from hypothesis import strategies as st

from planfold.adapters.codec.schema import WHITESPACE
from planfold.adapters.specgen.vector_cases import cases
from planfold.adapters.specgen.vector_log import SPEC
from planfold.kernel import log, plan_events
from planfold.kernel.goal import ops as goal_ops
from planfold.kernel.goal.fold import GoalState, apply_goal_event
from planfold.kernel.payload import JSONObject
from planfold.kernel.plan.mode import plan_mode_set
from planfold.kernel.plan_events import fold_drafts
from planfold.kernel.session import SessionState

__all__ = ["SEEDS", "TAGS", "json_values", "mutated", "near_misses", "text"]


def _extra_seeds() -> list[tuple[str, JSONObject]]:
    """Kinds and variants the valid conformance logs do not contain."""
    out: list[tuple[str, JSONObject]] = [
        (log.ASSISTANT_MESSAGE, {"text": "done", "source": None}),
        (log.TOOL_WARNING, {"call_id": "c", "tool": "t", "code": "a-b", "reason": "r", "phase": "verify"}),
        (log.TOOL_REFUSED, {"call_id": "c", "tool": "t", "code": "a-b", "reason": "r", "phase": "plan", "hint": "h"}),
    ]
    draft = goal_ops.create(GoalState(), "g1", "Ship", 2, actor="user", at=5)
    goal = apply_goal_event(GoalState(), draft.numbered(1, 5))
    assert goal.current is not None
    edit = goal_ops.edit(goal, goal.current.ref, objective="Ship more", actor="user", at=6)
    out.append((log.GOAL_CHANGE, edit.payload))
    state = fold_drafts(SessionState(), (plan_mode_set(True),))
    state = fold_drafts(state, (plan_events.draft_event(state, "p1", SPEC, None),))
    out.append((log.PLAN_ARTIFACT, plan_events.supersede_event(state, "replaced").payload))
    assert state.plan.current is not None
    state = fold_drafts(state, (plan_events.approve_event(state, state.plan.current.ref),))
    out.append((log.PLAN_ARTIFACT, plan_events.realign_event(state, "out of scope").payload))
    out.append((log.PLAN_ARTIFACT, plan_events.supersede_event(state, None).payload))
    return out


def _seeds() -> dict[str, list[JSONObject]]:
    seeds: dict[str, list[JSONObject]] = {}
    lines = [(str(line["kind"]), line["payload"]) for case in cases() if case.rule is None for line in case.lines]
    for kind, payload in [*lines, *_extra_seeds()]:
        assert isinstance(payload, Mapping)
        known = seeds.setdefault(kind, [])
        if payload not in known:
            known.append(copy.deepcopy(dict(payload)))
    return seeds


SEEDS = _seeds()
TAGS = {
    "type": ["plugin", "goal", "human"],
    "operation": ["create", "edit", "pause", "resume", "complete", "block", "clear", "archive"],
    "phase": ["active", "paused", "blocked", "complete", "plan", "verify", "done"],
    "action": ["draft", "bootstrap", "rewrite", "approve", "reject", "start", "todo", "verify", "verify-fail",
               "complete", "realign", "supersede", "archive"],
    "status": ["pending", "in_progress", "done", "dropped", "finished"],
    "summary_source": ["model", "runtime", "user"],
}


# --------------------------------------------------------------------------
# Mutations

text = st.text(alphabet=st.sampled_from([*"ab-Z1 _", *WHITESPACE[:8], "\u3000", "\u00e9"]), max_size=6)
near_misses = st.sampled_from(
    [True, False, 0, 1, -1, 2, 1.0, 2.5, 10**20, 2**53 - 1, 2**53, -(2**53), "", " ", "x", " x", "x ", "x\n",
     "\u3000x", "a-b", "a--b", "A-b", "a-b\n", None, [], {}, ["x"], [1], [" "], {"x": 1}]
)
json_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | text,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(text, children, max_size=3),
    max_leaves=6,
)


def containers(value: Any) -> list[Any]:
    """Every object and list inside ``value``, itself included."""
    found = []
    if isinstance(value, dict | list):
        found.append(value)
        for child in value.values() if isinstance(value, dict) else value:
            found += containers(child)
    return found


@st.composite
def mutated(draw: st.DrawFn, seeds: list[Any]) -> Any:
    def value() -> Any:
        # A copy: the near misses are shared objects a later mutation may change.
        return copy.deepcopy(draw(near_misses | json_values))

    payload: Any = copy.deepcopy(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(0, 3))):
        target = draw(st.sampled_from(containers(payload)))
        how = draw(st.sampled_from(["replace", "drop", "add", "retag"]))
        if isinstance(target, list):
            if target:
                index = draw(st.integers(0, len(target) - 1))
                target[index] = value()
            else:
                target.append(value())
            continue
        keys = sorted(target)
        if how == "add" or not keys:
            target[draw(text | st.sampled_from(sorted(TAGS)))] = value()
        elif how == "drop":
            del target[draw(st.sampled_from(keys))]
        elif how == "retag" and any(key in TAGS for key in keys):
            key = draw(st.sampled_from([key for key in keys if key in TAGS]))
            target[key] = draw(st.sampled_from(TAGS[key]))
        else:
            target[draw(st.sampled_from(keys))] = value()
    if draw(st.integers(0, 19)) == 0:
        payload = draw(json_values)
    return payload


