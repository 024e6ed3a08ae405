"""The strict session fold: envelope rules and the incremental fold."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planfold.kernel.errors import ReplayError
from planfold.kernel.log import PLAN_MODE, TURN_END, TURN_START, USER_MESSAGE, Event
from planfold.kernel.session import SessionState, fold_more, fold_session


def ev(seq: int, kind: str, payload: dict[str, object], at: int = 0) -> Event:
    return Event(seq, kind, at, payload)  # type: ignore[arg-type]


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
