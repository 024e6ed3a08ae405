"""Tests that pin what mutation testing found unpinned in the goal fold, the
goal payload readers, the goal operations and the payload helpers: the exact
detail of every replay refusal (rule, position and sentence), the exact
message of every malformed goal/change payload, the resume guard of the fold,
and the blocked reason that a round count must not drop."""

from __future__ import annotations

from dataclasses import replace

import pytest

from planfold.kernel.errors import PayloadError, ReplayError
from planfold.kernel.goal.fold import GoalState, event_ref, fold_goal, with_rounds
from planfold.kernel.goal.ops import GoalOperationError, complete
from planfold.kernel.goal.values import (
    BlockedReason,
    GoalOperation,
    GoalRef,
    GoalSnapshot,
    clear_payload,
    read_goal_change,
    snapshot_payload,
)
from planfold.kernel.log import GOAL_CHANGE, USER_MESSAGE, Event
from planfold.kernel.payload import JSON, JSONObject, check_keys, read_optional_str, read_str

REASON = BlockedReason("needs-input", "which database should it use?")
#: Goal g1 as created at seq 1, at 10, with a cap of two rounds.
G1 = GoalSnapshot("g1", "ship the importer", "active", None, 2, 1, 0, 10, 10)


def change(seq: int, at: int, operation: GoalOperation, goal: GoalSnapshot) -> Event:
    """A goal/change snapshot event recording ``goal`` (stamped ``at``)."""
    return Event(seq, GOAL_CHANGE, at, snapshot_payload(operation, replace(goal, updated_at=at)))


def round_event(seq: int, at: int, goal_id: str, revision: int, round_: int) -> Event:
    source: dict[str, JSON] = {"type": "goal", "goal_id": goal_id, "revision": revision, "round": round_}
    return Event(seq, USER_MESSAGE, at, {"text": "continue", "source": source})


def created() -> list[Event]:
    return [change(1, 10, "create", G1)]


def refusal(events: list[Event]) -> tuple[int, str, str]:
    """The position, rule and detail the strict fold refuses ``events`` with."""
    with pytest.raises(ReplayError) as caught:
        fold_goal(events)
    err = caught.value
    assert str(err) == f"invalid log at seq {err.position} [{err.rule}]: {err.detail}"
    return err.position, err.rule, err.detail


def payload_refusal(payload: JSONObject) -> tuple[str, str]:
    """The code and message ``read_goal_change`` refuses ``payload`` with."""
    with pytest.raises(PayloadError) as caught:
        read_goal_change(payload)
    return caught.value.code, str(caught.value)


# --------------------------------------------------------------------------
# The fold: creates


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


# --------------------------------------------------------------------------
# The fold: other changes


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


# --------------------------------------------------------------------------
# The fold: the resume guard (a recorded resume with no rounds left)


def spent_and_paused() -> list[Event]:
    """g1 (cap 2) after both its rounds, then paused at revision 2."""
    return [
        *created(),
        round_event(2, 20, "g1", 1, 1),
        round_event(3, 30, "g1", 1, 2),
        change(4, 40, "pause", replace(G1, phase="paused", revision=2, rounds_started=2)),
    ]


def test_a_recorded_resume_with_every_round_started_is_refused() -> None:
    resumed = replace(G1, revision=3, rounds_started=2)
    log = [*spent_and_paused(), change(5, 50, "resume", resumed)]
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


# --------------------------------------------------------------------------
# The fold: rounds


def test_a_round_without_a_goal_is_refused_saying_so() -> None:
    assert refusal([round_event(1, 10, "g1", 1, 1)]) == (
        1,
        "goal-mismatch",
        "a round names goal 'g1', but no current goal",
    )


def test_a_round_of_another_goal_is_refused_naming_the_current_one() -> None:
    assert refusal([*created(), round_event(2, 20, "g2", 1, 1)]) == (
        2,
        "goal-mismatch",
        "a round names goal 'g2', but the current goal is 'g1'",
    )


def test_a_round_of_an_earlier_revision_is_refused_with_both_revisions() -> None:
    edited = replace(G1, objective="ship the exporter", revision=2)
    log = [*created(), change(2, 20, "edit", edited), round_event(3, 30, "g1", 1, 1)]
    assert refusal(log) == (3, "stale-revision", "a round at revision 1, the goal is at 2")


def test_a_round_of_a_later_revision_is_refused_with_both_revisions() -> None:
    assert refusal([*created(), round_event(2, 20, "g1", 2, 1)]) == (
        2,
        "revision-gap",
        "a round at revision 2, the goal is only at 1",
    )


def test_a_round_of_a_paused_goal_is_refused_naming_the_phase() -> None:
    log = [*created(), change(2, 20, "pause", replace(G1, phase="paused", revision=2)), round_event(3, 30, "g1", 2, 1)]
    assert refusal(log) == (3, "round-while-stopped", "a round while the goal is paused")


def test_a_round_that_skips_one_is_refused_with_both_numbers() -> None:
    assert refusal([*created(), round_event(2, 20, "g1", 1, 2)]) == (
        2,
        "round-gap",
        "round 2 does not follow round 0",
    )


# --------------------------------------------------------------------------
# event_ref and with_rounds


def test_event_ref_of_an_unknown_version_reports_the_payload_error() -> None:
    event = Event(7, GOAL_CHANGE, 70, {"version": 2, "operation": "create"})
    with pytest.raises(ReplayError) as caught:
        event_ref(event)
    err = caught.value
    assert (err.position, err.rule, err.detail) == (7, "unknown-version", "unknown goal/change version 2")


def test_with_rounds_keeps_the_blocked_reason_of_a_blocked_goal() -> None:
    blocked = replace(G1, phase="blocked", blocked_reason=REASON, revision=2, rounds_started=1)
    state = GoalState(blocked, blocked.ref, frozenset({"g1"}))
    counted = with_rounds(state, 2)
    assert counted.current == replace(blocked, rounds_started=2)
    assert (counted.last_ref, counted.used_ids) == (state.last_ref, state.used_ids)


# --------------------------------------------------------------------------
# goal/change readers


def snapshot_with(**goal: JSON) -> JSONObject:
    payload = snapshot_payload("block", replace(G1, phase="blocked", blocked_reason=REASON, revision=2))
    body = payload["goal"]
    assert isinstance(body, dict)
    return {**payload, "goal": {**body, **goal}}


def test_a_blocked_reason_with_a_code_that_is_not_kebab_case_is_refused() -> None:
    payload = snapshot_with(blocked_reason={"code": "Needs Input", "message": "which database?"})
    assert payload_refusal(payload) == (
        "malformed-payload",
        "goal 'blocked_reason' 'code' must be a kebab-case string",
    )


def test_a_blocked_reason_with_a_padded_message_is_refused() -> None:
    payload = snapshot_with(blocked_reason={"code": "needs-input", "message": " which database? "})
    assert payload_refusal(payload) == (
        "malformed-payload",
        "goal 'blocked_reason' 'message' must be a non-empty string without surrounding space",
    )


def test_a_blocked_reason_on_an_active_goal_is_refused() -> None:
    payload = snapshot_with(phase="active")
    assert payload_refusal(payload) == (
        "malformed-payload",
        "goal 'blocked_reason' must be an object exactly when the phase is blocked",
    )


def test_an_unknown_version_is_refused_naming_it() -> None:
    assert payload_refusal({"version": 3, "operation": "clear"}) == (
        "unknown-version",
        "unknown goal/change version 3",
    )


def clear_with(**fields: JSON) -> JSONObject:
    return {**clear_payload(GoalRef("g1", 2), 20), **fields}


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (
            {"version": 1, "operation": "clear", "cleared": {"id": "g1", "revision": 2}},
            "goal/change clear payload is missing key(s) ['cleared_at']",
        ),
        (clear_with(cleared={"id": "g1"}), "goal/change 'cleared' is missing key(s) ['revision']"),
        (clear_with(cleared={"id": "", "revision": 2}), "cleared 'id' must be a non-empty string"),
        (clear_with(cleared={"id": "g1", "revision": 0}), "'revision' must be >= 1, got 0"),
        (clear_with(cleared_at=-1), "'cleared_at' must be >= 0, got -1"),
    ],
    ids=["missing-cleared-at", "cleared-without-revision", "empty-id", "revision-zero", "negative-time"],
)
def test_a_malformed_clear_tombstone_is_refused_naming_the_fault(payload: JSONObject, message: str) -> None:
    assert payload_refusal(payload) == ("malformed-payload", message)


def test_a_clear_at_revision_zero_is_a_malformed_payload_in_the_fold() -> None:
    log = [*created(), Event(2, GOAL_CHANGE, 20, clear_payload(GoalRef("g1", 0), 20))]
    assert refusal(log) == (2, "malformed-payload", "'revision' must be >= 1, got 0")


# --------------------------------------------------------------------------
# Goal operations


def test_completing_a_complete_goal_lists_the_phases_it_is_allowed_from() -> None:
    log = [*created(), change(2, 20, "complete", replace(G1, phase="complete", revision=2))]
    state = fold_goal(log)
    with pytest.raises(GoalOperationError) as caught:
        complete(state, GoalRef("g1", 2), actor="user", seq=3, at=30)
    err = caught.value
    assert (err.code, err.operation, err.current) == ("invalid-transition", "complete", GoalRef("g1", 2))
    assert str(err) == "cannot complete goal 'g1' while it is complete (allowed from: active, paused, blocked)"


# --------------------------------------------------------------------------
# Payload helpers


def test_check_keys_names_the_payload_when_not_told_where() -> None:
    with pytest.raises(PayloadError) as caught:
        check_keys({"a": 1}, frozenset({"a", "b"}))
    assert str(caught.value) == "payload is missing key(s) ['b']"


def test_read_optional_str_refuses_a_number_naming_the_key() -> None:
    with pytest.raises(PayloadError) as caught:
        read_optional_str({"note": 3}, "note")
    assert str(caught.value) == "'note' must be a string or null"


def test_read_str_refuses_an_empty_string_when_told_to() -> None:
    assert read_str({"id": ""}, "id") == ""
    with pytest.raises(PayloadError) as caught:
        read_str({"id": ""}, "id", non_empty=True)
    assert str(caught.value) == "'id' must not be empty"
