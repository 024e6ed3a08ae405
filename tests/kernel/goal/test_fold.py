"""The strict goal fold: one case per replay rule and what each refusal
says, rounds, the resume guard, the incremental fold, and agreement with the
session fold."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from types import MappingProxyType

import pytest
from hypothesis import event as record_event
from hypothesis import given, settings

from planfold.kernel.errors import ReplayError
from planfold.kernel.goal import fold as goal_fold
from planfold.kernel.goal.fold import (
    GOAL_REPLAY_RULES,
    GoalFold,
    GoalState,
    advance_goal_fold,
    event_ref,
    fold_goal,
    with_rounds,
)
from planfold.kernel.goal.ops import clear, complete, edit, pause, resume
from planfold.kernel.goal.values import (
    DISARMED,
    TRANSITION_TABLE,
    BlockedReason,
    GoalOperation,
    GoalPhase,
    GoalRef,
    GoalSnapshot,
    SnapshotOperation,
    Transition,
    clear_payload,
    snapshot_payload,
)
from planfold.kernel.idset import IdSet
from planfold.kernel.log import ASSISTANT_MESSAGE, GOAL_CHANGE, PLAN_MODE, TURN_START, USER_MESSAGE, Event
from planfold.kernel.payload import JSON
from planfold.kernel.session import fold_session
from tests.goal_helpers import REASON, GoalLog, goal_in
from tests.goal_logs import MUTATIONS, valid_logs


def goal_source(goal_id: str, revision: int, round_: int) -> dict[str, JSON]:
    return {"type": "goal", "goal_id": goal_id, "revision": revision, "round": round_}


def next_snapshot(log: GoalLog, **changes: object) -> GoalSnapshot:
    """The current goal one revision on, stamped at the next tick."""
    goal = log.goal
    stamped = replace(goal, revision=goal.revision + 1, updated_at=log.clock + 10)
    return replace(stamped, **changes)  # type: ignore[arg-type]


def append_change(log: GoalLog, operation: str, goal: GoalSnapshot) -> None:
    log.append(GOAL_CHANGE, dict(snapshot_payload(operation, goal)))  # type: ignore[arg-type]


def with_recorded_pause(start: str, /, **changes: object) -> GoalLog:
    """A goal in phase ``start`` and, last, a recorded pause whose snapshot is
    the right one but for ``changes``."""
    log = goal_in(start)
    append_change(log, "pause", next_snapshot(log, **changes))
    return log


def with_round(log: GoalLog, revision: int, round_: int) -> GoalLog:
    """``log`` and, last, a round of goal g1 at ``revision`` numbered ``round_``."""
    log.append(USER_MESSAGE, {"text": "go", "source": goal_source("g1", revision, round_)})
    return log


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
    return with_recorded_pause("active", id="g2", phase="paused")


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
    return with_recorded_pause("active", revision=3, phase="paused")


def rule_transition_not_allowed() -> GoalLog:
    return with_recorded_pause("paused")


def rule_rounds_mismatch() -> GoalLog:
    return with_recorded_pause("active", phase="paused", rounds_started=1)


def rule_timestamp_mismatch() -> GoalLog:
    log = goal_in("active")
    append_change(log, "pause", next_snapshot(log, phase="paused", updated_at=log.clock))
    return log


def rule_round_not_positive() -> GoalLog:
    return with_round(goal_in("active"), 1, 0)


def rule_round_while_stopped() -> GoalLog:
    return with_round(goal_in("paused"), 2, 1)


def rule_round_over_cap() -> GoalLog:
    return with_round(goal_in("active", max_rounds=1, rounds=1), 1, 2)


def rule_round_gap() -> GoalLog:
    return with_round(goal_in("active"), 1, 2)


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
# What each refusal says: rule, position and detail. These logs are written
# event by event from snapshots, so each can be exactly as wrong as needed.

#: Goal g1 as created at seq 1, at 10, with a cap of two rounds.
G1 = GoalSnapshot("g1", "ship the importer", "active", None, 2, 1, 0, 10, 10)


def change(seq: int, at: int, operation: SnapshotOperation, goal: GoalSnapshot) -> Event:
    """A goal/change snapshot event recording ``goal`` (stamped ``at``)."""
    return Event(seq, GOAL_CHANGE, at, snapshot_payload(operation, replace(goal, updated_at=at)))


def round_event(seq: int, at: int, goal_id: str, revision: int, round_: int) -> Event:
    return Event(seq, USER_MESSAGE, at, {"text": "continue", "source": goal_source(goal_id, revision, round_)})


def created() -> list[Event]:
    return [change(1, 10, "create", G1)]


def refusal(events: list[Event]) -> tuple[int, str, str]:
    """The position, rule and detail the strict fold refuses ``events`` with."""
    with pytest.raises(ReplayError) as caught:
        fold_goal(events)
    err = caught.value
    assert str(err) == f"invalid log at seq {err.position} [{err.rule}]: {err.detail}"
    return err.position, err.rule, err.detail


def test_a_create_reusing_a_cleared_id_is_refused_naming_the_id() -> None:
    log = [*created(), Event(2, GOAL_CHANGE, 20, clear_payload(GoalRef("g1", 2), 20)), change(3, 30, "create", G1)]
    assert refusal(log) == (3, "id-reused", "goal id 'g1' was already used in this log")


def test_a_create_not_at_revision_one_is_refused_with_its_revision() -> None:
    log = [change(1, 10, "create", replace(G1, revision=2))]
    assert refusal(log) == (1, "revision-gap", "a create must be revision 1, not 2")


def test_a_create_of_a_paused_goal_from_nothing_is_refused_saying_no_goal() -> None:
    log = [change(1, 10, "create", replace(G1, phase="paused"))]
    assert refusal(log) == (1, "transition-not-allowed", "create from no goal to paused is not allowed")


def test_a_create_over_an_active_goal_is_refused_naming_its_phase() -> None:
    log = [*created(), change(2, 20, "create", replace(G1, id="g2", created_at=20))]
    assert refusal(log) == (2, "transition-not-allowed", "create from active to active is not allowed")


def test_a_create_with_rounds_already_started_is_refused() -> None:
    log = [change(1, 10, "create", replace(G1, rounds_started=1))]
    assert refusal(log) == (1, "rounds-mismatch", "a new goal starts with rounds_started 0")


def test_a_change_without_a_current_goal_is_refused_saying_so() -> None:
    log = [change(1, 10, "pause", replace(G1, phase="paused", revision=2))]
    assert refusal(log) == (1, "goal-mismatch", "the change names goal 'g1', but no current goal")


def test_a_change_naming_another_goal_is_refused_naming_the_current_one() -> None:
    log = [*created(), change(2, 20, "pause", replace(G1, id="g2", phase="paused", revision=2))]
    assert refusal(log) == (2, "goal-mismatch", "the change names goal 'g2', but the current goal is 'g1'")


def test_a_change_at_the_current_revision_is_refused_as_stale() -> None:
    log = [*created(), change(2, 20, "pause", replace(G1, phase="paused"))]
    assert refusal(log) == (2, "stale-revision", "revision 1 is not above the current revision 1")


def test_a_change_skipping_a_revision_is_refused_naming_the_next_one() -> None:
    log = [*created(), change(2, 20, "pause", replace(G1, phase="paused", revision=3))]
    assert refusal(log) == (2, "revision-gap", "revision 3 skips past the next revision 2")


def test_a_change_to_the_wrong_phase_is_refused_naming_both_phases() -> None:
    log = [*created(), change(2, 20, "pause", replace(G1, phase="complete", revision=2))]
    assert refusal(log) == (2, "transition-not-allowed", "pause from active to complete is not allowed")


def test_an_edit_that_changes_the_blocked_reason_is_refused() -> None:
    blocked = replace(G1, phase="blocked", blocked_reason=REASON, revision=2)
    other = BlockedReason("needs-review", "look at the schema first")
    edited = replace(blocked, blocked_reason=other, revision=3)
    log = [*created(), change(2, 20, "block", blocked), change(3, 30, "edit", edited)]
    assert refusal(log) == (3, "transition-not-allowed", "an edit cannot change the blocked reason")


def test_a_change_with_a_wrong_round_count_is_refused_with_both_counts() -> None:
    log = [*created(), change(2, 20, "pause", replace(G1, phase="paused", revision=2, rounds_started=3))]
    assert refusal(log) == (2, "rounds-mismatch", "rounds_started 3 differs from the folded 0")


def test_a_clear_stamped_at_another_time_is_refused_with_the_event_time() -> None:
    log = [*created(), Event(2, GOAL_CHANGE, 20, clear_payload(GoalRef("g1", 2), 19))]
    assert refusal(log) == (2, "timestamp-mismatch", "cleared_at must equal the event's at 20")


def test_a_clear_at_revision_zero_is_a_malformed_payload_in_the_fold() -> None:
    log = [*created(), Event(2, GOAL_CHANGE, 20, clear_payload(GoalRef("g1", 0), 20))]
    assert refusal(log) == (2, "malformed-payload", "payload.cleared.revision: must be >= 1, got 0")


def test_a_recorded_resume_with_every_round_started_is_refused() -> None:
    spent_and_paused = [
        *created(),
        round_event(2, 20, "g1", 1, 1),
        round_event(3, 30, "g1", 1, 2),
        change(4, 40, "pause", replace(G1, phase="paused", revision=2, rounds_started=2)),
    ]
    resumed = replace(G1, revision=3, rounds_started=2)
    log = [*spent_and_paused, change(5, 50, "resume", resumed)]
    assert refusal(log) == (5, "transition-not-allowed", "resume with no rounds left (2/2)")


def test_a_recorded_resume_with_a_round_left_is_accepted() -> None:
    log = [
        *created(),
        round_event(2, 20, "g1", 1, 1),
        change(3, 30, "pause", replace(G1, phase="paused", revision=2, rounds_started=1)),
        change(4, 40, "resume", replace(G1, revision=3, rounds_started=1)),
    ]
    goal = fold_goal(log).current
    assert goal is not None
    assert (goal.phase, goal.revision, goal.rounds_started) == ("active", 3, 1)


EDITED = replace(G1, objective="ship the exporter", revision=2)

# A round that does not fit the goal, by the behaviour it pins: the log and
# the position, rule and detail the fold refuses it with.
ROUND_REFUSALS: dict[str, tuple[list[Event], tuple[int, str, str]]] = {
    "a_round_without_a_goal_is_refused_saying_so": (
        [round_event(1, 10, "g1", 1, 1)],
        (1, "goal-mismatch", "a round names goal 'g1', but no current goal"),
    ),
    "a_round_of_another_goal_is_refused_naming_the_current_one": (
        [*created(), round_event(2, 20, "g2", 1, 1)],
        (2, "goal-mismatch", "a round names goal 'g2', but the current goal is 'g1'"),
    ),
    "a_round_of_an_earlier_revision_is_refused_with_both_revisions": (
        [*created(), change(2, 20, "edit", EDITED), round_event(3, 30, "g1", 1, 1)],
        (3, "stale-revision", "a round at revision 1, the goal is at 2"),
    ),
    "a_round_of_a_later_revision_is_refused_with_both_revisions": (
        [*created(), round_event(2, 20, "g1", 2, 1)],
        (2, "revision-gap", "a round at revision 2, the goal is only at 1"),
    ),
    "a_round_of_a_paused_goal_is_refused_naming_the_phase": (
        [*created(), change(2, 20, "pause", replace(G1, phase="paused", revision=2)), round_event(3, 30, "g1", 2, 1)],
        (3, "round-while-stopped", "a round while the goal is paused"),
    ),
    "a_round_that_skips_one_is_refused_with_both_numbers": (
        [*created(), round_event(2, 20, "g1", 1, 2)],
        (2, "round-gap", "round 2 does not follow round 0"),
    ),
}


@pytest.mark.parametrize(("log", "refused"), ROUND_REFUSALS.values(), ids=list(ROUND_REFUSALS))
def test_a_round_that_does_not_fit_the_goal_is_refused_with_its_rule(
    log: list[Event], refused: tuple[int, str, str]
) -> None:
    assert refusal(log) == refused


def test_a_round_beyond_the_cap_is_refused_naming_the_cap() -> None:
    log = [*created(), round_event(2, 20, "g1", 1, 1), round_event(3, 30, "g1", 1, 2), round_event(4, 40, "g1", 1, 3)]
    assert fold_goal(log[:-1]).current == replace(G1, rounds_started=2)
    assert refusal(log) == (4, "round-over-cap", "round 3 exceeds max_rounds 2")


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
    assert state == GoalState(None, GoalRef("g1", 3)) and state.used_ids == {"g1"}


def test_event_ref_of_a_bad_payload_is_a_replay_error() -> None:
    with pytest.raises(ReplayError) as info:
        event_ref(Event(4, GOAL_CHANGE, 0, {"version": 9, "operation": "clear"}))
    assert (info.value.position, info.value.rule) == (4, "unknown-version")


def test_event_ref_of_an_unknown_version_reports_the_payload_error() -> None:
    event = Event(7, GOAL_CHANGE, 70, {"version": 2, "operation": "create"})
    with pytest.raises(ReplayError) as caught:
        event_ref(event)
    err = caught.value
    assert (err.position, err.rule) == (7, "unknown-version")
    assert err.detail.startswith("payload.version: must be one of [1], got 2; payload.goal: required field is missing")


def test_with_rounds_keeps_the_blocked_reason_of_a_blocked_goal() -> None:
    blocked = replace(G1, phase="blocked", blocked_reason=REASON, revision=2, rounds_started=1)
    state = GoalState(blocked, blocked.ref, IdSet(["g1"]))
    counted = with_rounds(state, 2)
    assert counted.current == replace(blocked, rounds_started=2)
    assert (counted.last_ref, counted.used_ids) == (state.last_ref, state.used_ids)


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


# --------------------------------------------------------------------------
# Safe integers: every integer a JSON reader using doubles reads exactly

UNSAFE = 2**53


@pytest.mark.parametrize("cap", [UNSAFE, 2**63])
def test_a_goal_whose_round_cap_is_not_a_safe_integer_is_refused_at_its_seq_on_replay(cap: int) -> None:
    events = [change(1, 10, "create", replace(G1, max_rounds=cap))]
    position, rule, detail = refusal(events)
    assert (position, rule) == (1, "malformed-payload")
    assert detail == f"payload.goal.max_rounds: must be <= {UNSAFE - 1} (the largest safe integer), got {cap}"
    assert fold_goal([change(1, 10, "create", replace(G1, max_rounds=UNSAFE - 1))]).current is not None


@pytest.mark.parametrize(
    ("field", "value"), [("revision", UNSAFE), ("round", UNSAFE), ("revision", -UNSAFE), ("round", -UNSAFE)]
)
def test_a_round_numbered_beyond_the_safe_integers_is_malformed_not_judged(field: str, value: int) -> None:
    source = {**goal_source("g1", 1, 1), field: value}
    events = [*created(), Event(2, USER_MESSAGE, 20, {"text": "continue", "source": source})]
    position, rule, _ = refusal(events)
    assert (position, rule) == (2, "malformed-payload")


# --------------------------------------------------------------------------
# The transition table, as the fold reads it


_Key = tuple[GoalOperation, GoalPhase | None]


class CountingTable(Mapping[_Key, Transition]):
    """A transition table that records every row asked of it."""

    def __init__(self, table: Mapping[_Key, Transition]) -> None:
        self.table = table
        self.reads: list[_Key] = []

    def __getitem__(self, key: _Key) -> Transition:
        self.reads.append(key)
        return self.table[key]

    def __iter__(self) -> Iterator[_Key]:
        return iter(self.table)

    def __len__(self) -> int:
        return len(self.table)


def test_the_fold_reads_the_transition_table_once_per_operation_and_phase(monkeypatch: pytest.MonkeyPatch) -> None:
    log = goal_in("active", max_rounds=9)
    for _ in range(3):
        log.run(pause, log.ref, actor="user")
        log.run(resume, log.ref, DISARMED, actor="user")
    expected = fold_goal(log.events)
    table = CountingTable(TRANSITION_TABLE)
    monkeypatch.setattr(goal_fold, "TRANSITION_TABLE", table)
    assert fold_goal(log.events) == expected
    assert sorted(table.reads, key=repr) == [("create", None), ("pause", "active"), ("resume", "paused")]


def test_the_fold_follows_a_transition_table_replaced_after_it_ran(monkeypatch: pytest.MonkeyPatch) -> None:
    log = goal_in("paused")
    assert fold_goal(log.events).current == log.goal
    without = MappingProxyType({key: row for key, row in TRANSITION_TABLE.items() if key != ("pause", "active")})
    monkeypatch.setattr(goal_fold, "TRANSITION_TABLE", without)
    with pytest.raises(ReplayError) as caught:
        fold_goal(log.events)
    assert (caught.value.position, caught.value.rule) == (2, "transition-not-allowed")
