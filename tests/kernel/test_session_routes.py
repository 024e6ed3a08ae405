"""The session fold's dispatch table: every step does what its reducers do.

``kernel.session.REDUCERS`` defines the machines; ``ROUTES`` sends each kind
to the reducers that read it and runs a fused step instead. The reference
here is the plain fold (every reducer, in order, for every event, then
``last``), and the steps, ``apply_session_event``, the batch ``fold_more`` and
``fold_rows`` must agree with it on valid logs, on single mutations of them
and on hostile payloads: the same state, or the same error at the same
position with the same rule and detail.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from planfold.kernel.log import (
    ASSISTANT_MESSAGE,
    GOAL_CHANGE,
    KNOWN_KINDS,
    REQUEST_HEADER,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_START,
    USER_MESSAGE,
    Event,
)
from planfold.kernel.session import (
    REDUCERS,
    ROUTES,
    SessionState,
    apply_session_event,
    fold_more,
    fold_rows,
    fold_session,
)
from tests.goal_logs import MUTATIONS, valid_logs
from tests.session_cases import hostile_case, outcome, reference_apply, reference_fold, rows_of
from tests.storage_helpers import FULL_SCRIPT, build_log, logs

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
