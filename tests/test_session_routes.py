"""The session fold's dispatch table: every step does what its reducers do.

``kernel.session.REDUCERS`` defines the machines; ``ROUTES`` sends each kind
to the reducers that read it and runs a fused step instead. The reference
here is the plain fold (every reducer, in order, for every event, then
``last``), and the steps, ``apply_session_event`` and the batch ``fold_more``
must agree with it on valid logs, on single mutations of them and on hostile
payloads: the same state, or the same error at the same position with the
same rule and detail.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from kernel import goal_fold
from kernel import log as kernel_log
from kernel.errors import KernelError, PayloadError, ReplayError
from kernel.goal import BlockedReason, GoalSnapshot, read_goal_change, snapshot_payload
from kernel.goal_fold import _read_change
from kernel.log import (
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
    check_envelope,
    read_message,
    read_message_round,
)
from kernel.session import (
    REDUCERS,
    ROUTES,
    Row,
    SessionState,
    apply_session_event,
    fold_more,
    fold_rows,
    fold_session,
)
from tests.goal_logs import MUTATIONS, valid_logs
from tests.storage_helpers import FULL_SCRIPT, build_log, logs

Outcome = tuple[str, object]


def reference_apply(state: SessionState, event: Event) -> SessionState:
    """The fold as the machines define it: all seven reducers, in order."""
    check_envelope(state.last, event)
    try:
        for reducer in REDUCERS:
            state = reducer(state, event)
    except PayloadError as exc:
        raise ReplayError(event.seq, "malformed-payload", exc.message) from exc
    return replace(state, last=event)


def reference_fold(state: SessionState, events: Sequence[Event]) -> SessionState:
    for event in events:
        state = reference_apply(state, event)
    return state


def outcome(run: Any, *args: Any) -> Outcome:
    """A state, or what was raised (type, and position/rule/detail or message)."""
    try:
        return ("state", run(*args))
    except ReplayError as exc:
        return ("replay", (exc.position, exc.rule, exc.detail))
    except (KernelError, TypeError, ValueError, KeyError, AttributeError) as exc:
        return (type(exc).__name__, str(exc))


# --------------------------------------------------------------------------
# The table


def test_every_known_kind_has_a_route_and_nothing_else_does() -> None:
    assert set(ROUTES) == KNOWN_KINDS


@pytest.mark.parametrize("kind", sorted(KNOWN_KINDS))
def test_a_route_lists_reducers_in_the_order_of_REDUCERS(kind: str) -> None:
    reducers = ROUTES[kind].reducers
    assert reducers, kind
    positions = [REDUCERS.index(r) for r in reducers]
    assert positions == sorted(set(positions))


# --------------------------------------------------------------------------
# Payloads that are wrong in every way a reader must notice

_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["", " ", "x", "goal", "plugin", "g1"]),
    st.floats(allow_nan=False, allow_infinity=False, width=16),
)
_KEYS = st.sampled_from(
    ["text", "source", "type", "goal_id", "revision", "round", "plugin", "turn", "step", "plan_mode", "active",
     "call_id", "tool", "ok", "output", "arguments", "code", "reason", "phase", "version", "operation", "x"]
)
_JSONISH = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=5),
                        max_leaves=8)


#: One valid payload of every kind (the generated logs supply more).
_TEMPLATES: dict[str, list[dict[str, Any]]] = {
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


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            out += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            out += _paths(child, (*prefix, index))
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
        return draw(_JSONISH)
    path = draw(st.sampled_from(_paths(payload)[1:] or [()]))
    if not path:
        return draw(_JSONISH)
    parent = payload
    for step in path[:-1]:
        parent = parent[step]
    if how == "value":
        parent[path[-1]] = draw(_SCALARS | _JSONISH)
    elif how == "drop" and isinstance(parent, dict):
        del parent[path[-1]]
    elif isinstance(parent, dict):
        parent[draw(_KEYS)] = draw(_SCALARS)
    return payload


@st.composite
def hostile_case(draw: st.DrawFn) -> tuple[list[Event], Event]:
    """A valid log and one more event of a known kind whose payload is a
    near miss of a valid one (and now and then a bad seq or time)."""
    builder = draw(logs(12))
    events = builder.events
    kind = draw(st.sampled_from(sorted(KNOWN_KINDS)))
    seen = [dict(e.payload) for e in events if e.kind == kind]
    template = draw(st.sampled_from(_TEMPLATES[kind] + seen))
    payload = draw(mutated_payload(template))
    last = events[-1] if events else None
    seq = (last.seq if last else 0) + draw(st.sampled_from([1, 1, 1, 1, 0, 2]))
    at = (last.at if last else 0) + draw(st.sampled_from([0, 1, 1, -1]))
    return events, Event(seq, kind, at, payload)


def test_the_fast_message_reader_answers_like_read_message() -> None:
    source: dict[str, Any] = {"type": "goal", "goal_id": "g1", "revision": 1, "round": 1}
    assert read_message_round({"text": "hi", "source": source}) == ("g1", 1, 1)
    assert read_message_round({"text": "hi", "source": None}) is None
    for key, bad in (("revision", True), ("round", 1.0), ("goal_id", "")):
        with pytest.raises(PayloadError) as err:
            read_message_round({"text": "hi", "source": {**source, key: bad}})
        with pytest.raises(PayloadError) as slow:
            read_message({"text": "hi", "source": {**source, key: bad}})
        assert err.value.message == slow.value.message


# --------------------------------------------------------------------------
# Steps against reducers


@given(hostile_case())
@settings(max_examples=min(settings().max_examples, 300))
def test_apply_session_event_agrees_with_the_reducers_on_hostile_events(case: tuple[list[Event], Event]) -> None:
    events, event = case
    state = fold_session(events)
    note(f"kind={event.kind} seq={event.seq} at={event.at} payload={event.payload!r}")
    assert outcome(apply_session_event, state, event) == outcome(reference_apply, state, event)


@given(hostile_case())
@settings(max_examples=min(settings().max_examples, 300))
def test_reducers_off_the_route_pass_the_kind_through(case: tuple[list[Event], Event]) -> None:
    events, event = case
    state = fold_session(events)
    route = ROUTES[event.kind].reducers
    for reducer in REDUCERS:
        if reducer not in route:
            assert reducer(state, event) is state, reducer.__name__


@given(logs(25), st.integers(0, 200))
def test_fold_more_agrees_with_the_reducers_on_valid_session_logs(builder: Any, cut: int) -> None:
    events = builder.events
    cut = min(cut, len(events))
    note(f"{len(events)} events, cut at {cut}")
    expected = reference_fold(SessionState(), events)
    assert fold_session(events) == expected
    assert fold_more(fold_session(events[:cut]), events[cut:]) == expected
    assert fold_more(reference_fold(SessionState(), events[:cut]), events[cut:]) == expected


@given(valid_logs(), st.sampled_from(sorted(MUTATIONS)), st.integers(0, 40), st.integers(0, 40))
@settings(max_examples=min(settings().max_examples, 300))
def test_fold_more_agrees_with_the_reducers_on_mutated_goal_logs(
    log: list[Event], name: str, where: int, cut: int
) -> None:
    mutant = MUTATIONS[name](log, where % len(log)) if log else None
    events = log if mutant is None else mutant
    cut = min(cut, len(events))
    note(f"mutation {name} at {where % max(len(log), 1)}, cut at {cut}")
    expected = outcome(reference_fold, SessionState(), events)
    assert outcome(fold_session, events) == expected
    start = outcome(reference_fold, SessionState(), events[:cut])
    if start[0] == "state":
        assert outcome(fold_more, start[1], events[cut:]) == expected


def _near_misses(value: Any) -> list[Any]:
    """Values a careless reader might take for ``value``."""
    if isinstance(value, bool):
        return [int(value), None, str(value).lower()]
    if isinstance(value, int):
        return [value + 1, value - 1, 0, -1, True, False, float(value), str(value), None]
    if isinstance(value, str):
        return ["", " ", value + " ", 1, None, [value]]
    if value is None:
        return [{}, "", 0, False, []]
    if isinstance(value, dict):
        return [None, [], "", {**value, "x": 1}, dict(list(value.items())[1:])]
    return [None, {}, ""]


def _contexts() -> list[SessionState]:
    """States to fold a near miss onto: empty, a rich log, and an open turn
    with an active goal that has run one round."""
    builder = build_log(("goal:create",))
    goal = builder.state.goal.current
    assert goal is not None
    at = builder.clock
    seq = builder.state.last_seq
    more = [
        Event(seq + 1, TURN_START, at, {"turn": 1}),
        Event(seq + 2, USER_MESSAGE, at,
              {"text": "go", "source": {"type": "goal", "goal_id": goal.id, "revision": goal.revision, "round": 1}}),
    ]
    return [SessionState(), build_log(FULL_SCRIPT).state, reference_fold(builder.state, more)]


def _templates_for(state: SessionState) -> list[tuple[str, dict[str, Any]]]:
    out = [(kind, payload) for kind, payloads in sorted(_TEMPLATES.items()) for payload in payloads]
    goal = state.goal.current
    if goal is not None:
        source = {"type": "goal", "goal_id": goal.id, "revision": goal.revision, "round": goal.rounds_started + 1}
        out.append((USER_MESSAGE, {"text": "go", "source": source}))
        at = state.last.at if state.last else 0
        paused = replace(goal, phase="paused", revision=goal.revision + 1, updated_at=at)
        out.append((GOAL_CHANGE, dict(snapshot_payload("pause", paused))))
        edited = replace(goal, objective="ship it twice", revision=goal.revision + 1, updated_at=at)
        out.append((GOAL_CHANGE, dict(snapshot_payload("edit", edited))))
    return out


def test_every_near_miss_of_every_field_is_judged_like_the_reducers() -> None:
    checked = accepted = 0
    for state in _contexts():
        seq, at = state.last_seq + 1, state.last.at if state.last else 0
        for kind, template in _templates_for(state):
            for path in _paths(template):
                parent: Any = None
                for miss in _near_misses(_get(template, path)):
                    payload = copy.deepcopy(template)
                    if path:
                        parent = _get(payload, path[:-1])
                        parent[path[-1]] = miss
                    else:
                        payload = miss
                    event = Event(seq, kind, at, payload)
                    want = outcome(reference_apply, state, event)
                    assert outcome(apply_session_event, state, event) == want, (kind, path, miss)
                    assert outcome(fold_more, state, [event]) == want, (kind, path, miss)
                    checked += 1
                    accepted += want[0] == "state"
    assert checked > 1000 and accepted > 50, (checked, accepted)


def test_the_goal_fold_reads_every_near_miss_of_a_goal_change_like_read_goal_change() -> None:
    # The goal fold reads the common snapshot shape itself (kernel.goal_fold
    # ._read_change) and leaves the rest to kernel.goal.read_goal_change.
    checked = 0
    for state in _contexts():
        for kind, template in _templates_for(state):
            if kind != GOAL_CHANGE:
                continue
            for path in _paths(template):
                for miss in _near_misses(_get(template, path)):
                    payload = copy.deepcopy(template)
                    if path:
                        _get(payload, path[:-1])[path[-1]] = miss
                    else:
                        payload = miss
                    assert outcome(_read_change, payload) == outcome(read_goal_change, payload), (path, miss)
                    checked += 1
    assert checked > 300, checked


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


def rows_of(events: Sequence[Event]) -> list[Row]:
    return [(e.seq, e.kind, e.at, e.payload) for e in events]


@given(hostile_case())
@settings(max_examples=min(settings().max_examples, 300))
def test_fold_rows_agrees_with_fold_more_on_hostile_events(case: tuple[list[Event], Event]) -> None:
    events, event = case
    cut = len(events) // 2
    start = fold_session(events[:cut])
    rest = [*events[cut:], event]
    assert outcome(fold_rows, start, rows_of(rest)) == outcome(fold_more, start, rest)
    whole = [*events, event]
    assert outcome(fold_rows, SessionState(), rows_of(whole)) == outcome(fold_session, whole)


@given(valid_logs(), st.sampled_from(sorted(MUTATIONS)), st.integers(0, 40), st.integers(0, 40))
@settings(max_examples=min(settings().max_examples, 300))
def test_fold_rows_agrees_with_fold_more_on_mutated_goal_logs(
    log: list[Event], name: str, where: int, cut: int
) -> None:
    mutant = MUTATIONS[name](log, where % len(log)) if log else None
    events = log if mutant is None else mutant
    cut = min(cut, len(events))
    note(f"mutation {name}, cut at {cut}")
    assert outcome(fold_rows, SessionState(), rows_of(events)) == outcome(fold_session, events)
    start = outcome(fold_session, events[:cut])
    if start[0] == "state":
        assert outcome(fold_rows, start[1], rows_of(events[cut:])) == outcome(fold_more, start[1], events[cut:])


def test_fold_rows_keeps_the_last_row_as_the_last_event() -> None:
    builder = build_log(FULL_SCRIPT)
    events = builder.events
    state = fold_rows(SessionState(), rows_of(events))
    assert state == fold_session(events) and state.last == events[-1]
    assert fold_rows(state, []) == state


def test_a_batch_that_ends_in_a_run_of_rounds_builds_the_goal_with_its_count() -> None:
    builder = build_log(("goal:create",))
    goal = builder.state.goal.current
    assert goal is not None
    rounds = [
        Event(builder.state.last_seq + n, USER_MESSAGE, builder.clock,
              {"text": "go", "source": {"type": "goal", "goal_id": goal.id, "revision": goal.revision, "round": n}})
        for n in (1, 2, 3)
    ]
    state = fold_more(builder.state, rounds)
    assert state.goal.current is not None and state.goal.current.rounds_started == 3
    assert state == reference_fold(builder.state, rounds)
    assert state.last == rounds[-1]


@pytest.mark.parametrize(
    ("kind", "payload", "rule"),
    [
        (USER_MESSAGE, {"text": "hi", "source": {"type": "goal", "goal_id": "nope", "revision": 1, "round": 1}},
         "goal-mismatch"),
        (USER_MESSAGE, {"text": 5, "source": None}, "malformed-payload"),
        (ASSISTANT_MESSAGE, {"text": "hi", "source": None, "x": 1}, "malformed-payload"),
        (REQUEST_HEADER, {"turn": 9, "step": 1, "plan_mode": True}, "header-mismatch"),
        (TURN_START, {"turn": 1}, "transition-not-allowed"),
        (TOOL_CALL, {"call_id": "c", "tool": "t", "arguments": {}}, "tool-outside-turn"),
        (TOOL_RESULT, {"call_id": "c", "tool": "t", "ok": 1, "output": ""}, "malformed-payload"),
        (GOAL_CHANGE, {"version": 2, "operation": "create"}, "unknown-version"),
    ],
)
def test_each_route_reports_what_the_reducers_report(kind: str, payload: dict[str, Any], rule: str) -> None:
    state = build_log(FULL_SCRIPT).state
    event = Event(state.last_seq + 1, kind, state.last.at if state.last else 0, payload)
    got = outcome(apply_session_event, state, event)
    assert got == outcome(reference_apply, state, event)
    assert got[0] == "replay" and got[1][1] == rule  # type: ignore[index]
    assert outcome(fold_more, state, [event]) == got


def test_the_message_reader_and_its_fast_form_agree_on_a_plugin_source() -> None:
    payload: dict[str, Any] = {"text": "note", "source": {"type": "plugin", "plugin": "lint"}}
    assert read_message_round(payload) is None
    assert read_message(payload)[1].plugin == "lint"


# --------------------------------------------------------------------------
# The fast readers read the common shapes themselves (a stricter fast check
# would give the same answers, only slower: these tests pin the speed-up)


def _refuse(*args: object) -> object:
    raise AssertionError("the long way round was taken")


@pytest.mark.parametrize(
    "source",
    [None, {"type": "goal", "goal_id": "g1", "revision": 3, "round": 2}],
)
def test_plain_messages_are_read_without_read_message(monkeypatch: pytest.MonkeyPatch, source: Any) -> None:
    monkeypatch.setattr(kernel_log, "read_message", _refuse)
    expected = None if source is None else ("g1", 3, 2)
    assert read_message_round({"text": "go", "source": source}) == expected


@pytest.mark.parametrize("phase", ["active", "paused", "complete"])
@pytest.mark.parametrize("operation", ["create", "edit", "pause", "resume", "complete"])
def test_plain_snapshots_are_read_without_read_goal_change(
    monkeypatch: pytest.MonkeyPatch, phase: Any, operation: Any
) -> None:
    payload = dict(snapshot_payload(operation, GoalSnapshot("g9", "ship it", phase, None, 1, 1, 0, 0, 0)))
    expected = read_goal_change(payload)
    monkeypatch.setattr(goal_fold, "read_goal_change", _refuse)
    assert _read_change(payload) == expected
