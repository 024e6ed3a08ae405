"""The strict session fold: envelope rules, the request-header check, and the
incremental folds (``fold_more`` over events, ``fold_rows`` over stored rows)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planfold.kernel.errors import ReplayError
from planfold.kernel.log import PLAN_MODE, REQUEST_HEADER, TURN_END, TURN_START, USER_MESSAGE, Event, TurnState
from planfold.kernel.session import SessionState, apply_session_event, fold_more, fold_rows, fold_session


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
    ("events", "position", "detail"),
    [
        ([Event(1, TURN_END, 6, END)], 1, "expected seq 3, found 1"),
        ([Event(2, TURN_END, 6, END)], 2, "expected seq 3, found 2"),
        ([Event(4, TURN_END, 6, END)], 4, "expected seq 3, found 4"),
        ([Event(3, USER_MESSAGE, 6, USER), Event(2, TURN_END, 6, END)], 2, "expected seq 4, found 2"),
        ([Event(3, USER_MESSAGE, 6, USER), Event(5, TURN_END, 6, END)], 5, "expected seq 4, found 5"),
    ],
)
def test_a_continued_fold_refuses_a_seq_that_does_not_follow_the_stored_one(
    fold: Callable[[SessionState, list[Event]], SessionState], events: list[Event], position: int, detail: str
) -> None:
    err = replay_error(lambda: fold(started(), events))
    assert (err.position, err.rule, err.detail) == (position, "seq-gap", detail)


@pytest.mark.parametrize("fold", FOLDS)
@pytest.mark.parametrize(
    ("events", "position", "detail"),
    [
        ([Event(1, TURN_START, 0, {"turn": 1}), Event(0, TURN_END, 0, END)], 0, "expected seq 2, found 0"),
        ([Event(1.0, TURN_START, 0, {"turn": 1})], 1, "expected seq 1, found 1.0"),  # type: ignore[arg-type]
        ([Event(True, TURN_START, 0, {"turn": 1})], 1, "expected seq 1, found True"),
    ],
)
def test_a_fresh_fold_refuses_a_seq_that_is_not_the_next_integer(
    fold: Callable[[SessionState, list[Event]], SessionState], events: list[Event], position: int, detail: str
) -> None:
    err = replay_error(lambda: fold(SessionState(), events))
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
