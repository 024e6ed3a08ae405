"""The strict goal fold: one case per replay rule, rounds, the incremental
fold, and agreement with the session fold."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
from hypothesis import event as record_event
from hypothesis import given, settings

from planfold.kernel.errors import ReplayError
from planfold.kernel.goal.fold import (
    GOAL_REPLAY_RULES,
    GoalFold,
    GoalState,
    advance_goal_fold,
    event_ref,
    fold_goal,
)
from planfold.kernel.goal.ops import clear, complete, edit, pause
from planfold.kernel.goal.values import BlockedReason, GoalRef, GoalSnapshot, snapshot_payload
from planfold.kernel.log import ASSISTANT_MESSAGE, GOAL_CHANGE, PLAN_MODE, TURN_START, USER_MESSAGE, Event
from planfold.kernel.session import fold_session
from tests.goal_helpers import GoalLog, goal_in
from tests.goal_logs import MUTATIONS, valid_logs


def goal_source(goal_id: str, revision: int, round_: int) -> dict[str, object]:
    return {"type": "goal", "goal_id": goal_id, "revision": revision, "round": round_}


def next_snapshot(log: GoalLog, **changes: object) -> GoalSnapshot:
    """The current goal one revision on, stamped at the next tick."""
    goal = log.goal
    stamped = replace(goal, revision=goal.revision + 1, updated_at=log.clock + 10)
    return replace(stamped, **changes)  # type: ignore[arg-type]


def append_change(log: GoalLog, operation: str, goal: GoalSnapshot) -> None:
    log.append(GOAL_CHANGE, dict(snapshot_payload(operation, goal)))  # type: ignore[arg-type]


# --------------------------------------------------------------------------
# One log per rule; the last event of each is the bad one.


def rule_seq_gap() -> GoalLog:
    log = goal_in("active")
    log.events.append(Event(log.seq + 1, TURN_START, log.tick(), {"turn": 1}))
    return log


def rule_time_regressed() -> GoalLog:
    log = goal_in("active")
    log.events.append(Event(log.seq, TURN_START, log.clock - 1, {"turn": 1}))
    return log


def rule_unknown_kind() -> GoalLog:
    log = goal_in("active")
    log.append("goal/archive", {})
    return log


def rule_malformed_payload() -> GoalLog:
    log = goal_in("active")
    payload = dict(snapshot_payload("pause", next_snapshot(log, phase="paused")))
    del payload["updated_at"]
    log.append(GOAL_CHANGE, payload)
    return log


def rule_unknown_version() -> GoalLog:
    log = goal_in("active")
    payload = dict(snapshot_payload("pause", next_snapshot(log, phase="paused")))
    log.append(GOAL_CHANGE, {**payload, "version": 2})
    return log


def rule_unknown_operation() -> GoalLog:
    log = goal_in("active")
    payload = dict(snapshot_payload("pause", next_snapshot(log, phase="paused")))
    log.append(GOAL_CHANGE, {**payload, "operation": "archive"})
    return log


def rule_goal_mismatch() -> GoalLog:
    log = goal_in("active")
    append_change(log, "pause", next_snapshot(log, id="g2", phase="paused"))
    return log


def rule_id_reused() -> GoalLog:
    log = goal_in("complete")
    goal = GoalSnapshot("g1", "again", "active", None, 3, 1, 0, log.clock + 10, log.clock + 10)
    append_change(log, "create", goal)
    return log


def rule_stale_revision() -> GoalLog:
    log = goal_in("active")
    log.run(edit, log.ref, objective="new words", actor="user")
    append_change(log, "pause", next_snapshot(log, revision=2, phase="paused"))
    return log


def rule_revision_gap() -> GoalLog:
    log = goal_in("active")
    append_change(log, "pause", next_snapshot(log, revision=3, phase="paused"))
    return log


def rule_transition_not_allowed() -> GoalLog:
    log = goal_in("paused")
    append_change(log, "pause", next_snapshot(log))
    return log


def rule_rounds_mismatch() -> GoalLog:
    log = goal_in("active")
    append_change(log, "pause", next_snapshot(log, phase="paused", rounds_started=1))
    return log


def rule_timestamp_mismatch() -> GoalLog:
    log = goal_in("active")
    append_change(log, "pause", next_snapshot(log, phase="paused", updated_at=log.clock))
    return log


def rule_round_not_positive() -> GoalLog:
    log = goal_in("active")
    log.append(USER_MESSAGE, {"text": "go", "source": goal_source("g1", 1, 0)})
    return log


def rule_round_while_stopped() -> GoalLog:
    log = goal_in("paused")
    log.append(USER_MESSAGE, {"text": "go", "source": goal_source("g1", 2, 1)})
    return log


def rule_round_over_cap() -> GoalLog:
    log = goal_in("active", max_rounds=1, rounds=1)
    log.append(USER_MESSAGE, {"text": "go", "source": goal_source("g1", 1, 2)})
    return log


def rule_round_gap() -> GoalLog:
    log = goal_in("active")
    log.append(USER_MESSAGE, {"text": "go", "source": goal_source("g1", 1, 2)})
    return log


RULE_CASES: dict[str, Callable[[], GoalLog]] = {
    "seq-gap": rule_seq_gap,
    "time-regressed": rule_time_regressed,
    "unknown-kind": rule_unknown_kind,
    "malformed-payload": rule_malformed_payload,
    "unknown-version": rule_unknown_version,
    "unknown-operation": rule_unknown_operation,
    "goal-mismatch": rule_goal_mismatch,
    "id-reused": rule_id_reused,
    "stale-revision": rule_stale_revision,
    "revision-gap": rule_revision_gap,
    "transition-not-allowed": rule_transition_not_allowed,
    "rounds-mismatch": rule_rounds_mismatch,
    "timestamp-mismatch": rule_timestamp_mismatch,
    "round-not-positive": rule_round_not_positive,
    "round-while-stopped": rule_round_while_stopped,
    "round-over-cap": rule_round_over_cap,
    "round-gap": rule_round_gap,
}


def test_every_replay_rule_has_a_case() -> None:
    assert set(RULE_CASES) == set(GOAL_REPLAY_RULES)


@pytest.mark.parametrize("rule", list(GOAL_REPLAY_RULES))
def test_replay_rule(rule: str) -> None:
    events = RULE_CASES[rule]().events
    fold_goal(events[:-1])  # the prefix is valid
    with pytest.raises(ReplayError) as info:
        fold_goal(events)
    assert (info.value.position, info.value.rule) == (events[-1].seq, rule)
    with pytest.raises(ReplayError) as session:
        fold_session(events)
    assert (session.value.position, session.value.rule) == (events[-1].seq, rule)


@pytest.mark.parametrize(
    "payload",
    [
        ["not", "an", "object"],
        {"version": 1},
        {"version": True, "operation": "clear", "cleared": {"id": "g1", "revision": 2}, "cleared_at": 0},
        {"version": 1, "operation": "clear", "cleared": {"id": "g1", "revision": 2}},
        {"version": 1, "operation": "clear", "cleared": {"id": "", "revision": 2}, "cleared_at": 0},
    ],
)
def test_malformed_change_payloads_are_refused(payload: object) -> None:
    log = goal_in("active")
    log.append(GOAL_CHANGE, payload)  # type: ignore[arg-type]
    with pytest.raises(ReplayError) as info:
        fold_goal(log.events)
    assert info.value.position == log.events[-1].seq
    assert info.value.rule in ("malformed-payload", "unknown-version")


# --------------------------------------------------------------------------
# Rounds and other kinds


def test_only_goal_attributed_rounds_spend_the_budget() -> None:
    log = goal_in("active", max_rounds=2)
    log.append(USER_MESSAGE, {"text": "why did that fail?", "source": None})
    log.append(USER_MESSAGE, {"text": "notice", "source": {"type": "plugin", "plugin": "plan-mode"}})
    log.append(ASSISTANT_MESSAGE, {"text": "because", "source": None})
    assert log.goal.rounds_started == 0
    log.round()
    log.round()
    assert log.goal.rounds_started == 2


def test_rounds_do_not_touch_revision_or_updated_at() -> None:
    log = goal_in("active")
    before = log.goal
    log.round()
    assert log.goal == replace(before, rounds_started=1)


def test_other_kinds_pass_through() -> None:
    log = goal_in("active")
    state = log.state
    log.append(TURN_START, {"turn": 1})
    log.append(PLAN_MODE, {"active": True})
    assert log.state == state


def test_a_round_of_a_cleared_goal_is_refused() -> None:
    log = goal_in("active")
    log.run(clear, log.ref, actor="user")
    log.append(USER_MESSAGE, {"text": "go", "source": goal_source("g1", 1, 1)})
    with pytest.raises(ReplayError) as info:
        fold_goal(log.events)
    assert info.value.rule == "goal-mismatch"


def test_clear_records_a_tombstone_and_the_history_stays() -> None:
    log = goal_in("blocked", rounds=1)
    event = log.run(clear, log.ref, actor="user")
    assert event_ref(event) == GoalRef("g1", 3)
    state = log.state
    assert state == GoalState(None, GoalRef("g1", 3), frozenset({"g1"}))


def test_event_ref_of_a_bad_payload_is_a_replay_error() -> None:
    with pytest.raises(ReplayError) as info:
        event_ref(Event(4, GOAL_CHANGE, 0, {"version": 9, "operation": "clear"}))
    assert (info.value.position, info.value.rule) == (4, "unknown-version")


# --------------------------------------------------------------------------
# The incremental fold


def test_incremental_fold_sticks_at_the_first_bad_event() -> None:
    log = goal_in("active")
    log.run(complete, log.ref, actor="model")
    good = list(log.events)
    log.run(edit, log.ref, objective="after completion", actor="user")
    bad = replace(log.events[-1], at=0)
    events = [*good, bad, *log.events[len(good) + 1 :]]
    fold = advance_goal_fold(GoalFold(), events)
    assert fold.failure is not None
    assert (fold.failure.position, fold.failure.rule) == (bad.seq, "time-regressed")
    assert fold.state == fold_goal(good)
    assert fold.last == good[-1]
    for _ in range(3):
        with pytest.raises(ReplayError) as info:
            fold.result()
        assert (info.value.position, info.value.rule) == (bad.seq, "time-regressed")
    assert advance_goal_fold(fold, [Event(99, TURN_START, 10**9, {"turn": 1})]) == fold


def test_incremental_fold_in_pieces_equals_the_whole() -> None:
    log = goal_in("active", rounds=2)
    log.run(pause, log.ref, actor="user")
    log.run(edit, log.ref, max_rounds=5, actor="user")
    fold = GoalFold()
    for event in log.events:
        fold = advance_goal_fold(fold, [event])
    assert fold.result() == fold_goal(log.events)


def test_blocked_reason_survives_the_fold() -> None:
    log = goal_in("blocked")
    assert log.goal.blocked_reason == BlockedReason("needs-input", "which database should it use?")


# --------------------------------------------------------------------------
# The session fold agrees with fold_goal


def _agree(events: list[Event]) -> str:
    try:
        session = fold_session(events)
    except ReplayError as exc:
        # The session fold checks more kinds, so it may stop earlier, never later.
        fold = advance_goal_fold(GoalFold(), events)
        if fold.failure is not None:
            assert exc.position <= fold.failure.position
        return "session stops first" if fold.failure is None else "both stop"
    assert session.goal == fold_goal(events)
    return "both accept"


@settings(max_examples=min(settings().max_examples, 50))
@given(valid_logs(max_steps=12))
def test_session_fold_agrees_with_fold_goal(log: list[Event]) -> None:
    record_event(_agree(log))
    for position in range(len(log)):
        for mutation in MUTATIONS.values():
            mutant = mutation(log, position)
            if mutant is not None:
                record_event(f"mutant: {_agree(mutant)}")
