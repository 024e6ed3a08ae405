"""The wire types agree with the kernel's strict readers, and the schema is
made from them.

The spine is a property: for payloads of every kind, valid ones taken from
the conformance cases and the kernel's builders, then mutated (a key
dropped or added, a value replaced by a near miss or by arbitrary JSON, a tag
switched), the kernel's reader and the msgspec type accept or reject alike.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

import msgspec
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from planfold.adapters.specgen.event_types import (
    EVENT_TYPES,
    KEBAB,
    NON_BLANK,
    PAYLOAD_TYPES,
    TRIMMED,
    WHITESPACE,
    EventLine,
    decode_typed,
    event_schema,
)
from planfold.adapters.specgen.vector_cases import cases
from planfold.adapters.specgen.vector_log import SPEC
from planfold.kernel import log
from planfold.kernel.errors import PayloadError, ReplayError, is_kebab_case
from planfold.kernel.goal import ops as goal_ops
from planfold.kernel.goal.fold import GoalState, apply_goal_event
from planfold.kernel.goal.values import read_goal_change
from planfold.kernel.log import Event, TurnState, apply_turn_event, read_message, read_request_header
from planfold.kernel.payload import JSON, JSONObject
from planfold.kernel.plan import events as plan_events
from planfold.kernel.plan.mode import read_plan_mode
from planfold.kernel.plan.payload import read_plan_action
from planfold.kernel.session import SessionState, apply_session_event
from planfold.kernel.tools.events import read_tool_call, read_tool_notice, read_tool_result

SHAPE_RULES = frozenset({"malformed-payload", "unknown-version", "unknown-operation"})


def _turn(kind: str) -> Callable[[JSONObject], object]:
    # The turn reader is private; the public fold reports a shape problem as
    # malformed-payload and anything else (a turn out of order) as another rule.
    return lambda payload: apply_turn_event(TurnState(), Event(1, kind, 0, payload))


READERS: Mapping[str, Callable[[JSONObject], object]] = {
    log.TURN_START: _turn(log.TURN_START),
    log.TURN_END: _turn(log.TURN_END),
    log.REQUEST_HEADER: read_request_header,
    log.USER_MESSAGE: read_message,
    log.ASSISTANT_MESSAGE: read_message,
    log.PLAN_MODE: read_plan_mode,
    log.GOAL_CHANGE: read_goal_change,
    log.PLAN_ARTIFACT: read_plan_action,
    log.TOOL_CALL: read_tool_call,
    log.TOOL_RESULT: read_tool_result,
    log.TOOL_REFUSED: lambda payload: read_tool_notice(payload, log.TOOL_REFUSED),
    log.TOOL_WARNING: lambda payload: read_tool_notice(payload, log.TOOL_WARNING),
}


def kernel_accepts(kind: str, payload: JSON) -> bool:
    try:
        READERS[kind](payload)  # type: ignore[arg-type]
    except PayloadError:
        return False
    except ReplayError as exc:
        return exc.rule not in SHAPE_RULES
    return True


def types_accept(kind: str, payload: JSON) -> bool:
    try:
        decode_typed(kind, json.dumps(payload).encode())
    except msgspec.ValidationError:
        return False
    return True


# --------------------------------------------------------------------------
# Seeds: valid payloads of every kind


def _extra_seeds() -> list[tuple[str, JSONObject]]:
    """Kinds and variants the valid conformance logs do not contain."""
    out: list[tuple[str, JSONObject]] = [
        (log.ASSISTANT_MESSAGE, {"text": "done", "source": None}),
        (log.TOOL_WARNING, {"call_id": "c", "tool": "t", "code": "a-b", "reason": "r", "phase": "verify"}),
    ]
    created = goal_ops.create(GoalState(), "g1", "Ship", 2, actor="user", at=5).numbered(1, 5)
    goal = apply_goal_event(GoalState(), created)
    assert goal.current is not None
    edit = goal_ops.edit(goal, goal.current.ref, objective="Ship more", actor="user", at=6).numbered(2, 6)
    out.append((log.GOAL_CHANGE, edit.payload))
    state = SessionState()
    state = apply_session_event(state, Event(1, log.PLAN_MODE, 1, {"active": True}))
    draft = plan_events.draft_event(state, "p1", SPEC, None, 2)
    state = apply_session_event(state, draft)
    out.append((log.PLAN_ARTIFACT, plan_events.supersede_event(state, 3, "replaced").payload))
    assert state.plan.current is not None
    state = apply_session_event(state, plan_events.approve_event(state, state.plan.current.ref, 3))
    out.append((log.PLAN_ARTIFACT, plan_events.realign_event(state, "out of scope", 4).payload))
    out.append((log.PLAN_ARTIFACT, plan_events.supersede_event(state, 3, None).payload))
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
    [True, False, 0, 1, -1, 2, 1.0, 2.5, 10**20, "", " ", "x", " x", "x ", "x\n", "\u3000x", "a-b", "a--b", "A-b",
     "a-b\n", None, [], {}, ["x"], [1], [" "], {"x": 1}]
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
def mutated(draw: st.DrawFn, kind: str) -> Any:
    def value() -> Any:
        # A copy: the near misses are shared objects a later mutation may change.
        return copy.deepcopy(draw(near_misses | json_values))

    payload: Any = copy.deepcopy(draw(st.sampled_from(SEEDS[kind])))
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


@pytest.mark.parametrize("kind", sorted(log.KNOWN_KINDS))
@given(data=st.data())
def test_kernel_readers_and_wire_types_agree(kind: str, data: st.DataObject) -> None:
    payload = data.draw(mutated(kind), label="payload")
    accepted = kernel_accepts(kind, payload)
    event("accepted" if accepted else "rejected")
    assert types_accept(kind, payload) == accepted, f"{kind}: kernel {'accepts' if accepted else 'rejects'}"


@pytest.mark.parametrize("kind", sorted(log.KNOWN_KINDS))
def test_every_seed_is_accepted_by_both(kind: str) -> None:
    assert SEEDS[kind], f"no valid payload of {kind} to mutate"
    for payload in SEEDS[kind]:
        assert kernel_accepts(kind, payload)
        assert types_accept(kind, payload)


@pytest.mark.parametrize(
    ("kind", "payload"),
    [
        (log.TURN_START, {"turn": True}),
        (log.TURN_START, {"turn": 1.0}),
        (log.TURN_END, {"turn": 0}),
        (log.REQUEST_HEADER, {"turn": 1, "step": 1}),
        (log.USER_MESSAGE, {"text": "x", "source": {"type": "plugin", "plugin": "", }}),
        (log.USER_MESSAGE, {"text": "x", "source": {"type": "goal", "goal_id": "g", "revision": 1}}),
        (log.PLAN_MODE, {"active": 1}),
        (log.PLAN_MODE, {"active": True, "extra": None}),
        (log.TOOL_REFUSED, {"call_id": "c", "tool": "t", "code": "Bad", "reason": "r", "phase": "plan"}),
        (log.TOOL_REFUSED, {"call_id": "c", "tool": "t", "code": "a", "reason": "r", "phase": "plan", "hint": None}),
        (log.TOOL_CALL, {"call_id": " ", "tool": "t", "arguments": {}}),
    ],
)
def test_known_bad_payloads_are_rejected_by_both(kind: str, payload: JSON) -> None:
    assert not kernel_accepts(kind, payload)
    assert not types_accept(kind, payload)


# --------------------------------------------------------------------------
# The patterns mean what the readers check

PATTERN_TEXT = st.text(alphabet=st.sampled_from([*"ab-z09A_.", *WHITESPACE]), max_size=8)


@given(PATTERN_TEXT)
def test_the_string_patterns_match_the_readers(value: str) -> None:
    assert (re.search(NON_BLANK, value) is not None) == bool(value.strip())
    assert (re.search(TRIMMED, value) is not None) == (bool(value.strip()) and value == value.strip())
    assert (re.search(KEBAB, value) is not None) == is_kebab_case(value)


def test_whitespace_is_exactly_what_strip_removes() -> None:
    assert {ord(ch) for ch in WHITESPACE} == {code for code in range(0x110000) if chr(code).isspace()}


# --------------------------------------------------------------------------
# Event lines and the schema


def test_every_kind_has_a_payload_type_and_a_line_type() -> None:
    assert set(PAYLOAD_TYPES) == set(log.KNOWN_KINDS) == set(EVENT_TYPES)


def test_schema_names_every_kind_and_demands_the_envelope() -> None:
    schema = event_schema()
    assert schema["$schema"].startswith("https://json-schema.org/")
    assert set(schema["discriminator"]["mapping"]) == set(log.KNOWN_KINDS)
    for name in schema["discriminator"]["mapping"].values():
        body = schema["$defs"][name.rsplit("/", 1)[1]]
        assert set(body["required"]) == {"kind", "seq", "at", "payload"}
        assert body["additionalProperties"] is False


def test_valid_vector_lines_decode_as_event_lines_and_shape_errors_do_not() -> None:
    for case in cases():
        lines = list(case.lines)
        for index, line in enumerate(lines):
            raw = json.dumps(line).encode()
            bad = case.rule is not None and index == len(lines) - 1
            typed_seq = isinstance(line["seq"], int)
            if bad and (case.rule in (*SHAPE_RULES, "unknown-kind") or not typed_seq):
                with pytest.raises(msgspec.ValidationError):
                    msgspec.json.decode(raw, type=EventLine)
            elif not bad:
                decoded = msgspec.json.decode(raw, type=EventLine)
                assert msgspec.to_builtins(decoded) == line, case.name
