"""The strict session fold: envelope rules, the request-header check, each
kind's refusals, and the one fold behind every entry point
(``fold_session``, ``fold_more`` over events, ``fold_rows`` over stored rows,
``apply_session_event``): the same state, or the same error at the same
position with the same rule and detail."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from planfold.kernel import session as session_module
from planfold.kernel.errors import ReplayError
from planfold.kernel.log import (
    ASSISTANT_MESSAGE,
    GOAL_CHANGE,
    KNOWN_KINDS,
    PLAN_MODE,
    REQUEST_HEADER,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
    Event,
    TurnState,
    number_drafts,
    turn_start,
    user_message,
)
from planfold.kernel.payload import JSONObject, read_as, reader_of
from planfold.kernel.session import (
    KINDS,
    PAYLOAD_TYPES,
    REDUCERS,
    SessionState,
    apply_session_event,
    fold_more,
    fold_rows,
    fold_session,
)
from tests.goal_logs import MUTATIONS, valid_logs
from tests.session_cases import hostile_case, outcome, rows_of
from tests.storage_helpers import FULL_SCRIPT, build_log, logs


def ev(seq: int, kind: str, payload: dict[str, object], at: int = 0) -> Event:
    return Event(seq, kind, at, payload)  # type: ignore[arg-type]


def replay_error(fold: Callable[[], object]) -> ReplayError:
    with pytest.raises(ReplayError) as caught:
        fold()
    return caught.value


def test_empty_log_is_a_build_session_at_seq_zero() -> None:
    state = fold_session([])
    assert state == SessionState()
    assert (state.agent_mode, state.last_seq, state.plan_mode) == ("build", 0, False)


def test_plan_mode_makes_the_agent_mode_plan() -> None:
    assert fold_session([ev(1, PLAN_MODE, {"active": True})]).agent_mode == "plan"


@pytest.mark.parametrize(
    ("events", "position", "rule"),
    [
        ([ev(2, PLAN_MODE, {"active": True})], 2, "seq-gap"),
        ([ev(1, PLAN_MODE, {"active": True}), ev(1, PLAN_MODE, {"active": False})], 1, "seq-gap"),
        ([ev(1, PLAN_MODE, {"active": True}, 5), ev(2, PLAN_MODE, {"active": False}, 4)], 2, "time-regressed"),
        ([ev(1, "plan/other", {})], 1, "unknown-kind"),
        ([ev(1, PLAN_MODE, {"active": "yes"})], 1, "malformed-payload"),
        ([ev(1, USER_MESSAGE, {"text": "hi"})], 1, "malformed-payload"),
        ([ev(1, USER_MESSAGE, {"text": "hi", "source": {"type": "robot"}})], 1, "malformed-payload"),
        ([ev(1, TURN_END, {"turn": 1})], 1, "transition-not-allowed"),
        ([ev(1, TURN_START, {"turn": 2})], 1, "transition-not-allowed"),
        ([ev(1, TURN_START, {"turn": 1}), ev(2, TURN_START, {"turn": 2})], 2, "transition-not-allowed"),
        ([ev(1, TURN_START, {"turn": True})], 1, "malformed-payload"),
    ],
)
def test_first_bad_event_is_reported_with_its_rule(
    events: list[Event], position: int, rule: str
) -> None:
    with pytest.raises(ReplayError) as err:
        fold_session(events)
    assert (err.value.position, err.value.rule) == (position, rule)


def test_a_corrupt_record_is_reported_at_the_same_position_every_time() -> None:
    log = [ev(1, PLAN_MODE, {"active": True}), ev(2, PLAN_MODE, {"active": 1}), ev(3, "x", {})]
    positions = set()
    for _ in range(3):
        with pytest.raises(ReplayError) as err:
            fold_session(log)
        positions.add((err.value.position, err.value.rule))
    assert positions == {(2, "malformed-payload")}


@given(st.lists(st.booleans(), max_size=30), st.integers(min_value=0, max_value=30))
def test_incremental_fold_equals_whole_fold(flags: list[bool], cut: int) -> None:
    log = [ev(i + 1, PLAN_MODE, {"active": flag}, at=i) for i, flag in enumerate(flags)]
    cut = min(cut, len(log))
    assert fold_more(fold_session(log[:cut]), log[cut:]) == fold_session(log)


def test_a_header_that_disagrees_with_the_fold_says_both_states() -> None:
    header = {"turn": 1, "step": 1, "plan_mode": True}
    events = [Event(1, TURN_START, 0, {"turn": 1}), Event(2, REQUEST_HEADER, 0, header)]
    err = replay_error(lambda: fold_session(events))
    assert (err.position, err.rule, err.detail) == (
        2,
        "header-mismatch",
        "request header says plan_mode=True, but the log before it says False",
    )


# --------------------------------------------------------------------------
# Continuing a fold: fold_more (events) and fold_rows (stored rows) check the
# envelope of each event against the state they continue from.


def started() -> SessionState:
    """A session whose last event is seq 2 at time 5 (turn 1 is open)."""
    return fold_session([Event(1, TURN_START, 5, {"turn": 1}), Event(2, PLAN_MODE, 5, {"active": True})])


def more(state: SessionState, events: list[Event]) -> SessionState:
    return fold_more(state, events)


def rows(state: SessionState, events: list[Event]) -> SessionState:
    return fold_rows(state, [(e.seq, e.kind, e.at, e.payload) for e in events])


FOLDS: list[Callable[[SessionState, list[Event]], SessionState]] = [more, rows]
END = {"turn": 1}
USER = {"text": "hi", "source": None}


@pytest.mark.parametrize("fold", FOLDS)
@pytest.mark.parametrize(
    ("start", "events", "position", "detail"),
    [
        # a continued fold: the stored log ends at seq 2
        (started, [Event(1, TURN_END, 6, END)], 1, "expected seq 3, found 1"),
        (started, [Event(2, TURN_END, 6, END)], 2, "expected seq 3, found 2"),
        (started, [Event(4, TURN_END, 6, END)], 4, "expected seq 3, found 4"),
        (started, [Event(3, USER_MESSAGE, 6, USER), Event(2, TURN_END, 6, END)], 2, "expected seq 4, found 2"),
        (started, [Event(3, USER_MESSAGE, 6, USER), Event(5, TURN_END, 6, END)], 5, "expected seq 4, found 5"),
        # a fresh fold: a seq must be the next integer, from 1
        (
            SessionState,
            [Event(1, TURN_START, 0, {"turn": 1}), Event(0, TURN_END, 0, END)],
            0,
            "expected seq 2, found 0",
        ),
        (SessionState, [Event(1.0, TURN_START, 0, {"turn": 1})], 1, "expected seq 1, found 1.0"),  # type: ignore[arg-type]
        (SessionState, [Event(True, TURN_START, 0, {"turn": 1})], 1, "expected seq 1, found True"),
    ],
)
def test_a_fold_refuses_a_seq_that_is_not_the_next_integer_after_the_stored_one(
    fold: Callable[[SessionState, list[Event]], SessionState],
    start: Callable[[], SessionState],
    events: list[Event],
    position: int,
    detail: str,
) -> None:
    err = replay_error(lambda: fold(start(), events))
    assert (err.position, err.rule, err.detail) == (position, "seq-gap", detail)


@pytest.mark.parametrize("fold", FOLDS)
def test_a_continued_fold_refuses_an_unknown_kind(fold: Callable[[SessionState, list[Event]], SessionState]) -> None:
    err = replay_error(lambda: fold(started(), [Event(3, "turn/pause", 6, END)]))
    assert (err.position, err.rule, err.detail) == (3, "unknown-kind", "unknown event kind 'turn/pause'")


@pytest.mark.parametrize("fold", FOLDS)
def test_a_continued_fold_refuses_a_negative_time_even_after_a_stored_negative_one(
    fold: Callable[[SessionState, list[Event]], SessionState],
) -> None:
    # A stored state is input too: continuing from one whose last time is
    # negative must not let a negative time through, as apply_session_event
    # does not.
    stored = SessionState(last=Event(1, TURN_START, -5, {"turn": 1}), turns=TurnState(turn=1, open=True))
    event = Event(2, USER_MESSAGE, -3, USER)
    expected = replay_error(lambda: apply_session_event(stored, event))
    err = replay_error(lambda: fold(stored, [event]))
    assert (err.position, err.rule, err.detail) == (expected.position, expected.rule, expected.detail)
    assert (err.rule, err.detail) == ("malformed-payload", "'at' must be a non-negative integer, got -3")
    assert fold(stored, [Event(2, USER_MESSAGE, 0, USER)]).last == Event(2, USER_MESSAGE, 0, USER)


# --------------------------------------------------------------------------
# One fold: every entry point gives the same state, or the same error


@given(hostile_case())
@settings(max_examples=min(settings().max_examples, 300))
def test_folding_rows_answers_exactly_as_folding_events_on_hostile_logs(case: tuple[list[Event], Event]) -> None:
    events, event = case
    note(f"kind={event.kind} seq={event.seq} at={event.at} payload={event.payload!r}")
    whole = [*events, event]
    expected = outcome(fold_session, whole)
    assert outcome(fold_rows, SessionState(), rows_of(whole)) == expected
    cut = len(events) // 2
    start = fold_session(events[:cut])
    assert outcome(fold_rows, start, rows_of(whole[cut:])) == outcome(fold_more, start, whole[cut:])
    folded = fold_session(events)
    assert outcome(apply_session_event, folded, event) == outcome(fold_more, folded, [event])


@given(valid_logs(), st.sampled_from(sorted(MUTATIONS)), st.integers(0, 40), st.integers(0, 40))
@settings(max_examples=min(settings().max_examples, 300))
def test_an_incremental_fold_from_any_valid_prefix_reports_what_the_whole_fold_reports(
    log: list[Event], name: str, where: int, cut: int
) -> None:
    mutant = MUTATIONS[name](log, where % len(log)) if log else None
    events = log if mutant is None else mutant
    cut = min(cut, len(events))
    note(f"mutation {name} at {where % max(len(log), 1)}, cut at {cut}")
    expected = outcome(fold_session, events)
    start = outcome(fold_session, events[:cut])
    if start[0] == "state":
        assert outcome(fold_more, start[1], events[cut:]) == expected
        assert outcome(fold_rows, start[1], rows_of(events[cut:])) == expected


@given(logs(25), st.integers(0, 200))
def test_a_valid_session_log_folds_the_same_whole_or_continued(builder: Any, cut: int) -> None:
    events = builder.events
    cut = min(cut, len(events))
    whole = fold_session(events)
    assert fold_more(fold_session(events[:cut]), events[cut:]) == whole
    assert fold_rows(SessionState(), rows_of(events)) == whole


def test_fold_rows_keeps_the_last_row_as_the_last_event() -> None:
    events = build_log(FULL_SCRIPT).events
    state = fold_rows(SessionState(), rows_of(events))
    assert state == fold_session(events) and state.last == events[-1]
    assert fold_rows(state, []) == state


def test_a_row_whose_payload_is_already_read_is_not_read_again() -> None:
    events = build_log(FULL_SCRIPT).events
    typed = [(e.seq, e.kind, e.at, read_as(PAYLOAD_TYPES[e.kind], e.payload)) for e in events]
    assert fold_rows(SessionState(), typed) == fold_session(events)


def test_the_last_event_of_a_fold_holds_its_row_s_payload_object_as_given() -> None:
    # A JSON array may come as a tuple; the last event keeps the very object
    # the row carried rather than a JSON copy of it (where it would be a list).
    payload: JSONObject = {"call_id": "c1", "tool": "read", "arguments": {"paths": ("a.txt",)}}
    state = fold_rows(SessionState(), [(1, TURN_START, 0, {"turn": 1}), (2, TOOL_CALL, 3, payload)])
    assert state.last == Event(2, TOOL_CALL, 3, payload)
    assert state.last.payload is payload


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
    one_by_one = builder.state
    for event in rounds:
        one_by_one = apply_session_event(one_by_one, event)
    assert state == one_by_one
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
        (GOAL_CHANGE, {"version": 1, "operation": "archive"}, "unknown-operation"),
    ],
)
def test_each_kind_refuses_a_bad_event_with_its_machine_s_rule(kind: str, payload: dict[str, Any], rule: str) -> None:
    state = build_log(FULL_SCRIPT).state
    event = Event(state.last_seq + 1, kind, state.last.at if state.last else 0, payload)
    err = replay_error(lambda: apply_session_event(state, event))
    assert (err.position, err.rule) == (event.seq, rule)
    assert outcome(fold_more, state, [event]) == outcome(apply_session_event, state, event)


def test_every_known_kind_has_a_payload_type_and_a_reducer() -> None:
    assert set(KINDS) == set(PAYLOAD_TYPES) == KNOWN_KINDS
    assert all(entry.reduce in REDUCERS for entry in KINDS.values())


@pytest.mark.parametrize("at", [2**53, 2**63])
def test_a_time_beyond_the_safe_integers_is_malformed_at_its_seq(at: int) -> None:
    err = replay_error(lambda: fold_session([ev(1, PLAN_MODE, {"active": True}, at=at)]))
    assert (err.position, err.rule) == (1, "malformed-payload")
    assert err.detail == f"'at' must be <= {2**53 - 1} (the largest safe integer), got {at}"
    assert fold_session([ev(1, PLAN_MODE, {"active": True}, at=2**53 - 1)]).last_seq == 1


def test_a_fold_started_while_another_thread_prepares_the_readers_sees_every_kind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The first fold of a process prepares each kind's reader; a second thread
    # folding meanwhile must never find some kinds ready and others missing.
    monkeypatch.setattr(session_module, "_STEPS", {})
    real = reader_of
    second_kind, release = threading.Event(), threading.Event()
    made: list[object] = []

    def reader(tp: object) -> object:
        if threading.current_thread().name == "preparing":
            made.append(tp)
            if len(made) == 2:  # one kind is ready, the others are not
                second_kind.set()
                release.wait(10)
        return real(tp)

    monkeypatch.setattr(session_module, "reader_of", reader)
    log = (*number_drafts([turn_start(1), user_message("hi")], 0, 1),)
    preparing = threading.Thread(target=fold_session, args=(log,), name="preparing")
    preparing.start()
    try:
        assert second_kind.wait(10)
        assert fold_session(log).turns.turn == 1
    finally:
        release.set()
        preparing.join(10)
