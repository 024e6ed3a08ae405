"""A replay keeps the goal ids a log has used off its states (in memory up to
a bound, then on disk) and still refuses a reused id exactly where and as the
whole strict fold refuses it."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from planfold.adapters.cli.main import main
from planfold.adapters.codec import encode_jsonl
from planfold.adapters.store import spill
from planfold.adapters.store.spill import SpillingFold
from planfold.kernel.errors import ReplayError
from planfold.kernel.goal.fold import GoalState, apply_goal_event
from planfold.kernel.goal.ops import complete, create
from planfold.kernel.idset import IdSet
from planfold.kernel.log import Draft, Event
from planfold.kernel.session import SessionState, apply_session_event, fold_session
from tests.goal_logs import MUTATIONS, valid_logs


def goals_then(count: int, reused: str | None = None) -> list[Event]:
    """``count`` goals ``goal-1`` … created and completed in turn, then, with
    ``reused``, a create of that id made by a state that never saw it."""
    state, events = GoalState(), list[Event]()

    def take(draft: Draft) -> None:
        nonlocal state
        seq = len(events) + 1
        event = draft.numbered(seq, 10 * seq)
        state = apply_goal_event(state, event)
        events.append(event)

    for index in range(1, count + 1):
        take(create(state, f"goal-{index}", f"objective {index}", 1, actor="user", at=10 * (len(events) + 1)))
        assert state.current is not None
        take(complete(state, state.current.ref, actor="model", at=10 * (len(events) + 1)))
    if reused is not None:
        seq = len(events) + 1
        forgetful = replace(state, used_ids=IdSet())
        events.append(create(forgetful, reused, "again", 1, actor="user", at=10 * seq).numbered(seq, 10 * seq))
    return events


def whole_fold_outcome(events: list[Event]) -> tuple[int, str, str] | SessionState:
    try:
        return fold_session(events)
    except ReplayError as err:
        return err.position, err.rule, err.detail


def spilling_outcome(events: list[Event], keep: int) -> tuple[int, str, str] | SessionState:
    state = SessionState()
    with SpillingFold(keep) as fold:
        try:
            for event in events:
                state = fold.fold(state, event)
                assert not state.goal.used_ids, "a state handed back holds ids"
                assert fold.in_memory() <= keep
        except ReplayError as err:
            return err.position, err.rule, err.detail
    return state


@pytest.mark.parametrize("keep", [1, 2, 3, 1000])
def test_an_id_reused_after_the_replay_moved_it_to_disk_is_refused_as_the_whole_fold_refuses_it(keep: int) -> None:
    log = goals_then(5, reused="goal-1")
    expected = whole_fold_outcome(log)
    assert expected == (11, "id-reused", "goal id 'goal-1' was already used in this log")
    assert spilling_outcome(log, keep) == expected


@pytest.mark.parametrize("reused", ["goal-1", "goal-4", "goal-7"])
def test_every_id_the_replay_has_seen_is_refused_whether_on_disk_or_in_memory(reused: str) -> None:
    log = goals_then(7, reused=reused)
    assert spilling_outcome(log, keep=3) == whole_fold_outcome(log)
    assert whole_fold_outcome(log) == (15, "id-reused", f"goal id {reused!r} was already used in this log")


def test_a_fresh_id_after_many_moved_ones_is_accepted_and_every_id_is_held_once() -> None:
    log = goals_then(9, reused="goal-10")
    with SpillingFold(keep=4) as fold:
        state = SessionState()
        for event in log:
            state = fold.fold(state, event)
        assert fold.held() == 10 and fold.in_memory() == 10 - 8
    assert state == fold_session(log)
    assert state.goal.current is not None and state.goal.current.id == "goal-10"


def test_a_closed_fold_holds_nothing() -> None:
    fold = SpillingFold(keep=1)
    state = SessionState()
    for event in goals_then(3):
        state = fold.fold(state, event)
    assert fold.held() == 3
    fold.close()
    assert fold.held() == 0 and fold.in_memory() == 0


@pytest.mark.parametrize("keep", [0, -1])
def test_a_fold_that_would_keep_no_ids_in_memory_is_refused(keep: int) -> None:
    with pytest.raises(ValueError, match="keep must be at least 1"):
        SpillingFold(keep)


@given(valid_logs(max_steps=14), st.integers(1, 3), st.data())
def test_the_spilling_fold_agrees_with_the_whole_fold_on_every_log_and_mutant(
    log: list[Event], keep: int, data: st.DataObject
) -> None:
    assert spilling_outcome(log, keep) == whole_fold_outcome(log)
    if not log:
        return
    position = data.draw(st.integers(0, len(log) - 1), label="position")
    name = data.draw(st.sampled_from(sorted(MUTATIONS)), label="mutation")
    mutant = MUTATIONS[name](log, position)
    if mutant is not None:
        outcome = whole_fold_outcome(mutant)
        note(f"{name} at {position}: {outcome if isinstance(outcome, tuple) else 'accepted'}")
        assert spilling_outcome(mutant, keep) == outcome


def test_each_state_equals_the_whole_folds_at_the_same_event() -> None:
    log = goals_then(6, reused="goal-7")
    whole, spilled = SessionState(), SessionState()
    with SpillingFold(keep=2) as fold:
        for event in log:
            whole, spilled = apply_session_event(whole, event), fold.fold(spilled, event)
            assert spilled == whole and not spilled.goal.used_ids
    assert len(whole.goal.used_ids) == 7


def test_a_json_lines_replay_refuses_an_id_reused_after_it_was_moved_to_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(spill, "KEEP", 2)
    path = tmp_path / "goals.jsonl"
    path.write_bytes(encode_jsonl(goals_then(6, reused="goal-2")))
    out, err = io.StringIO(), io.StringIO()
    assert main(["replay", "--db", str(path), "--json"], out=out, err=err, stdin=io.BytesIO()) == 1
    (session,) = json.loads(out.getvalue())["sessions"]
    assert session["error"] == {
        "position": 13, "line": 13, "rule": "id-reused", "detail": "goal id 'goal-2' was already used in this log",
    }
    assert session["events"] == 12 and session["ok"] is False
