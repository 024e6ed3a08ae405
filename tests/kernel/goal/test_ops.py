"""Goal operations: each transition, each error code, and the authority rule."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import pytest

from planfold.kernel.goal.command import parse_goal_command
from planfold.kernel.goal.fold import fold_goal
from planfold.kernel.goal.ops import (
    ACTORS,
    AUTHORITY,
    BUDGET_BLOCK_CODE,
    GOAL_ERROR_CODES,
    Actor,
    GoalAuthorityError,
    GoalError,
    GoalOperationError,
    GoalRequest,
    authorize,
    block,
    clear,
    complete,
    create,
    decide_goal,
    edit,
    pause,
    resume,
)
from planfold.kernel.goal.values import (
    ARMED,
    DEFAULT_MAX_ROUNDS,
    DISARMED,
    OPERATIONS,
    PHASES,
    TRANSITION_TABLE,
    BlockedReason,
    ClearChange,
    GoalOperation,
    GoalRef,
    SnapshotChange,
    activation_after,
    read_goal_change,
)
from planfold.kernel.log import Event
from tests.goal_helpers import REASON, GoalLog, goal_in
from tests.goal_model import ALLOWED_FROM, RESULT_PHASE

SOURCES: tuple[str | None, ...] = (None, *PHASES)


def apply(log: GoalLog, operation: str, actor: Actor = "user") -> Event:
    """Run ``operation`` on the log's current goal with valid arguments."""
    ref = log.state.current.ref if log.state.current is not None else GoalRef("g1", 1)
    if operation == "create":
        return log.run(create, f"g{len(log.events) + 2}", "write the docs", None, actor=actor)
    if operation == "edit":
        return log.run(edit, ref, objective="write better docs", actor=actor)
    if operation == "pause":
        return log.run(pause, ref, actor=actor)
    if operation == "resume":
        return log.run(resume, ref, DISARMED, actor=actor)
    if operation == "complete":
        return log.run(complete, ref, actor=actor)
    if operation == "block":
        return log.run(block, ref, REASON, actor=actor)
    return log.run(clear, ref, actor=actor)


ALLOWED_PAIRS = [(op, src) for op in OPERATIONS for src in SOURCES if src in ALLOWED_FROM[op]]
REFUSED_PAIRS = [(op, src) for op in OPERATIONS for src in SOURCES if src not in ALLOWED_FROM[op]]


def pair_id(pair: tuple[str, str | None]) -> str:
    return f"{pair[0]}-from-{pair[1] or 'no-goal'}"


def test_the_kernel_table_is_the_issue_table() -> None:
    assert set(TRANSITION_TABLE) == set(ALLOWED_PAIRS)
    for (operation, _), row in TRANSITION_TABLE.items():
        assert row.target == RESULT_PHASE.get(operation, row.source)


@pytest.mark.parametrize("pair", ALLOWED_PAIRS, ids=pair_id)
def test_transition_allowed(pair: tuple[str, str | None]) -> None:
    operation, source = pair
    log = goal_in(source)
    before = log.state
    event = apply(log, operation)
    after = fold_goal(log.events)  # the fold accepts what the operation returned
    change = read_goal_change(event.payload)
    if operation == "clear":
        assert isinstance(change, ClearChange)
        assert before.current is not None
        assert change.cleared == GoalRef(before.current.id, before.current.revision + 1)
        assert after.current is None
        assert after.last_ref == change.cleared
        return
    assert isinstance(change, SnapshotChange)
    assert change.operation == operation
    assert after.current == change.snapshot
    expected_phase = RESULT_PHASE.get(operation, source)
    assert after.current.phase == expected_phase
    if operation == "create":
        assert after.current.revision == 1
    else:
        assert before.current is not None
        assert after.current.revision == before.current.revision + 1
        assert after.current.created_at == before.current.created_at
        assert after.current.rounds_started == before.current.rounds_started
    assert after.current.updated_at == event.at


@pytest.mark.parametrize("pair", REFUSED_PAIRS, ids=pair_id)
def test_transition_refused(pair: tuple[str, str | None]) -> None:
    operation, source = pair
    log = goal_in(source)
    events = list(log.events)
    with pytest.raises(GoalOperationError) as info:
        apply(log, operation)
    expected = {"create": "already-exists"}.get(operation, "invalid-transition")
    if source is None:
        expected = "not-found"
    assert info.value.code == expected
    assert info.value.operation == operation
    assert log.events == events


# --------------------------------------------------------------------------
# Each error code


def error_not_found() -> None:
    log = GoalLog()
    log.run(pause, GoalRef("g1", 1), actor="user")


def error_already_exists() -> None:
    log = goal_in("active")
    log.run(create, "g2", "another goal", None, actor="user")


def error_stale_revision() -> None:
    log = goal_in("active")
    stale = log.ref
    log.run(edit, stale, objective="new words", actor="user")
    log.run(pause, stale, actor="user")


def error_goal_mismatch() -> None:
    log = goal_in("active")
    log.run(pause, GoalRef("g2", log.ref.revision), actor="user")


def error_not_authorized() -> None:
    log = goal_in("active")
    log.run(pause, log.ref, actor="model")


def error_missing_objective() -> None:
    parse_goal_command("/goal edit")


def error_unexpected_argument() -> None:
    parse_goal_command("/goal pause now")


def error_invalid_objective() -> None:
    GoalLog().run(create, "g1", "   ", None, actor="user")


def error_invalid_max_rounds() -> None:
    GoalLog().run(create, "g1", "ship it", 0, actor="user")


def error_invalid_block_reason() -> None:
    log = goal_in("active")
    log.run(block, log.ref, BlockedReason("Needs Input", "help"), actor="model")


def error_invalid_edit() -> None:
    log = goal_in("active")
    log.run(edit, log.ref, actor="user")


def error_invalid_transition() -> None:
    log = goal_in("paused")
    log.run(pause, log.ref, actor="user")


def error_invalid_id() -> None:
    GoalLog().run(create, "", "ship it", None, actor="user")


ERROR_CASES: dict[str, Callable[[], None]] = {
    "not-found": error_not_found,
    "already-exists": error_already_exists,
    "goal-mismatch": error_goal_mismatch,
    "stale-revision": error_stale_revision,
    "not-authorized": error_not_authorized,
    "missing-objective": error_missing_objective,
    "unexpected-argument": error_unexpected_argument,
    "invalid-objective": error_invalid_objective,
    "invalid-max-rounds": error_invalid_max_rounds,
    "invalid-block-reason": error_invalid_block_reason,
    "invalid-edit": error_invalid_edit,
    "invalid-transition": error_invalid_transition,
    "invalid-id": error_invalid_id,
}


def test_every_error_code_has_a_case() -> None:
    assert set(ERROR_CASES) == set(GOAL_ERROR_CODES)


@pytest.mark.parametrize("code", GOAL_ERROR_CODES)
def test_every_goal_error_code_is_raised_as_a_goal_error(code: str) -> None:
    with pytest.raises(GoalError) as info:
        ERROR_CASES[code]()
    assert info.value.code == code


@pytest.mark.parametrize("objective", ["", "   ", "\n\t", 7, None])
def test_error_invalid_objective_on_create_and_edit(objective: object) -> None:
    with pytest.raises(GoalOperationError) as info:
        GoalLog().run(create, "g1", objective, None, actor="user")
    assert info.value.code == "invalid-objective"
    if objective is None:
        return  # for edit, None means "keep the objective"
    log = goal_in("active")
    with pytest.raises(GoalOperationError) as info:
        log.run(edit, log.ref, objective=objective, actor="user")
    assert info.value.code == "invalid-objective"


@pytest.mark.parametrize("cap", [0, -1, True, 1.5, "3"])
def test_error_invalid_max_rounds_on_create_and_edit(cap: object) -> None:
    with pytest.raises(GoalOperationError) as info:
        GoalLog().run(create, "g1", "ship it", cap, actor="user")
    assert info.value.code == "invalid-max-rounds"
    log = goal_in("active")
    with pytest.raises(GoalOperationError) as info:
        log.run(edit, log.ref, max_rounds=cap, actor="user")
    assert info.value.code == "invalid-max-rounds"


@pytest.mark.parametrize(
    "reason",
    [
        BlockedReason("", "why"),
        BlockedReason("-leading", "why"),
        BlockedReason("double--dash", "why"),
        BlockedReason("needs-input", ""),
        BlockedReason("needs-input", "  \n "),
        BlockedReason("needs-input", cast(str, 5)),
        "needs-input",
    ],
)
def test_error_invalid_block_reason(reason: object) -> None:
    log = goal_in("active")
    with pytest.raises(GoalOperationError) as info:
        log.run(block, log.ref, reason, actor="model")
    assert info.value.code == "invalid-block-reason"
    assert log.goal.phase == "active"


@pytest.mark.parametrize(
    ("ref", "code"),
    [(GoalRef("g1", 0), "stale-revision"), (GoalRef("g1", 2), "stale-revision"), (GoalRef("g2", 1), "goal-mismatch")],
    ids=["older", "newer", "other-id"],
)
def test_a_stale_or_foreign_ref_is_refused_as_replay_spells_it_and_names_the_current_goal(
    ref: GoalRef, code: str
) -> None:
    log = goal_in("active")
    with pytest.raises(GoalOperationError) as info:
        log.run(complete, ref, actor="user")
    assert info.value.code == code and info.value.operation == "complete"
    assert info.value.current == GoalRef("g1", 1)
    assert "g1" in str(info.value)


def test_error_already_exists_for_an_id_used_before_even_after_clear() -> None:
    log = goal_in("active")
    log.run(clear, log.ref, actor="user")
    with pytest.raises(GoalOperationError) as info:
        log.run(create, "g1", "ship it again", None, actor="user")
    assert info.value.code == "already-exists"
    log.run(create, "g2", "ship it again", None, actor="user")
    assert log.goal.id == "g2"


def test_error_invalid_transition_resume_with_no_rounds_left() -> None:
    log = goal_in("active", max_rounds=2, rounds=2)
    log.run(pause, log.ref, actor="user")
    with pytest.raises(GoalOperationError) as info:
        log.run(resume, log.ref, DISARMED, actor="user")
    assert info.value.code == "invalid-transition"
    log.run(edit, log.ref, max_rounds=3, actor="user")
    log.run(resume, log.ref, DISARMED, actor="user")
    assert log.goal.phase == "active"


def test_error_invalid_transition_resume_of_an_active_armed_goal() -> None:
    log = goal_in("active")
    with pytest.raises(GoalOperationError) as info:
        log.run(resume, log.ref, ARMED, actor="user")
    assert info.value.code == "invalid-transition"
    log.run(resume, log.ref, DISARMED, actor="user")
    assert log.goal.revision == 2


# --------------------------------------------------------------------------
# What each operation records


def test_create_defaults_and_trims() -> None:
    log = GoalLog()
    event = log.run(create, "g1", "  ship the importer  ", None, actor="user")
    goal = log.goal
    assert (goal.objective, goal.phase, goal.max_rounds) == ("ship the importer", "active", 256)
    assert DEFAULT_MAX_ROUNDS == 256
    assert (goal.revision, goal.rounds_started, goal.blocked_reason) == (1, 0, None)
    assert goal.created_at == goal.updated_at == event.at


def test_edit_keeps_phase_reason_and_rounds() -> None:
    log = goal_in("blocked", rounds=1)
    before = log.goal
    log.run(edit, log.ref, max_rounds=9, actor="user")
    after = log.goal
    assert (after.phase, after.blocked_reason, after.rounds_started) == ("blocked", REASON, 1)
    assert (after.objective, after.max_rounds) == (before.objective, 9)
    assert after.created_at == before.created_at


def test_block_trims_the_message_and_resume_drops_the_reason() -> None:
    log = goal_in("active")
    log.run(block, log.ref, BlockedReason("dependency-conflict", "  pin v2  "), actor="model")
    assert log.goal.blocked_reason == BlockedReason("dependency-conflict", "pin v2")
    log.run(resume, log.ref, DISARMED, actor="user")
    assert log.goal.blocked_reason is None


def test_refusal_carries_its_context() -> None:
    log = goal_in("complete")
    with pytest.raises(GoalOperationError) as info:
        log.run(pause, log.ref, actor="user")
    assert (info.value.operation, info.value.current) == ("pause", log.ref)


def test_completing_a_complete_goal_lists_the_phases_it_is_allowed_from() -> None:
    log = goal_in("complete")
    with pytest.raises(GoalOperationError) as caught:
        log.run(complete, GoalRef("g1", 2), actor="user")
    err = caught.value
    assert (err.code, err.operation, err.current) == ("invalid-transition", "complete", GoalRef("g1", 2))
    assert str(err) == "cannot complete goal 'g1' while it is complete (allowed from: active, paused, blocked)"


# --------------------------------------------------------------------------
# Authority


@pytest.mark.parametrize("actor", ACTORS)
@pytest.mark.parametrize("operation", OPERATIONS)
def test_authority(actor: Actor, operation: str) -> None:
    source = "complete" if operation == "create" else "active"
    log = goal_in(source)
    may = {
        "user": set(OPERATIONS),
        "model": {"complete", "block"},
        "system": {"block"},
    }[actor]
    assert AUTHORITY[actor] == may
    events = list(log.events)
    if operation in may:
        apply(log, operation, actor)
        assert len(log.events) == len(events) + 1
    else:
        with pytest.raises(GoalAuthorityError) as info:
            apply(log, operation, actor)
        assert info.value.code == "not-authorized"
        assert (info.value.actor, info.value.operation) == (actor, operation)
        assert log.events == events


@pytest.mark.parametrize("actor", ["user", "model"])
def test_only_the_system_may_record_a_budget_block(actor: Actor) -> None:
    log = goal_in("active")
    reason = BlockedReason(BUDGET_BLOCK_CODE, "out of rounds")
    with pytest.raises(GoalAuthorityError):
        log.run(block, log.ref, reason, actor=actor)
    log.run(block, log.ref, reason, actor="system")
    assert log.goal.blocked_reason == reason


def test_authority_is_checked_before_the_state() -> None:
    with pytest.raises(GoalAuthorityError):
        GoalLog().run(pause, GoalRef("nothing", 1), actor="model")


def test_unknown_actor_is_refused() -> None:
    with pytest.raises(GoalAuthorityError):
        authorize("plugin", "complete")  # type: ignore[arg-type]


# --------------------------------------------------------------------------
# Activation column


@pytest.mark.parametrize("operation", OPERATIONS)
def test_activation_after_each_operation(operation: str) -> None:
    expected = {
        "create": ARMED,
        "resume": ARMED,
        "pause": DISARMED,
        "complete": DISARMED,
        "block": DISARMED,
        "clear": DISARMED,
    }
    for before in (ARMED, DISARMED):
        after = activation_after(before, operation)  # type: ignore[arg-type]
        assert after == expected.get(operation, before)


# --------------------------------------------------------------------------
# One call per operation


@pytest.mark.parametrize(
    ("phase", "asked", "operation"),
    [
        (None, GoalRequest("create", "user", goal_id="g9", objective=" Ship "), "create"),
        ("active", GoalRequest("edit", "user", max_rounds=7), "edit"),
        ("active", GoalRequest("pause", "user"), "pause"),
        ("paused", GoalRequest("resume", "user"), "resume"),
        ("active", GoalRequest("complete", "model"), "complete"),
        ("active", GoalRequest("block", "model", reason=REASON), "block"),
        ("paused", GoalRequest("clear", "user"), "clear"),
    ],
)
def test_one_call_decides_an_operation_its_draft_the_activation_after_it_and_the_change(
    phase: str | None, asked: GoalRequest, operation: str
) -> None:
    log = goal_in(phase)
    at = log.tick()
    decision = decide_goal(log.state, asked, DISARMED, at)
    event = decision.draft.numbered(log.seq, at)
    log.events.append(event)
    change = read_goal_change(event.payload)
    assert decision.operation == operation
    assert decision.activation == activation_after(DISARMED, asked.operation)
    if isinstance(change, ClearChange):
        assert (decision.goal, decision.ref) == (None, change.cleared) and log.state.current is None
    else:
        assert isinstance(change, SnapshotChange)
        assert decision.goal == change.snapshot == log.state.current and decision.ref == change.snapshot.ref


def test_a_request_refused_by_its_operation_raises_as_the_operation_does() -> None:
    log = goal_in("active")
    stale = GoalRef(log.ref.id, log.ref.revision + 1)
    with pytest.raises(GoalOperationError) as caught:
        decide_goal(log.state, GoalRequest("pause", "user", stale), DISARMED, log.tick())
    assert caught.value.code == "stale-revision"
    with pytest.raises(GoalAuthorityError):
        decide_goal(log.state, GoalRequest("pause", "model"), DISARMED, log.tick())
    with pytest.raises(GoalOperationError) as missing:
        decide_goal(goal_in(None).state, GoalRequest("pause", "user"), DISARMED, log.tick())
    assert (missing.value.code, missing.value.operation, missing.value.current) == ("not-found", "pause", None)
    assert str(missing.value) == "there is no current goal to pause"


def test_a_create_request_without_an_objective_is_refused_as_an_empty_objective() -> None:
    with pytest.raises(GoalOperationError) as caught:
        decide_goal(goal_in(None).state, GoalRequest("create", "user", goal_id="g1"), DISARMED, 1)
    assert (caught.value.code, str(caught.value)) == ("invalid-objective", "the objective must be non-empty text")


def test_a_request_for_an_operation_there_is_not_is_refused_naming_it() -> None:
    log = goal_in("active")
    unknown = GoalRequest(cast(GoalOperation, "bogus"), "user")
    with pytest.raises(GoalOperationError) as caught:
        decide_goal(log.state, unknown, DISARMED, log.tick())
    err = caught.value
    assert (err.code, err.operation, err.current) == ("invalid-transition", "bogus", log.ref)
    assert str(err) == "unknown goal operation 'bogus'"


@pytest.mark.parametrize("cap", [2**53, 2**63])
def test_a_round_cap_beyond_the_safe_integers_is_refused_by_create_and_edit(cap: int) -> None:
    with pytest.raises(GoalOperationError) as info:
        GoalLog().run(create, "g1", "ship it", cap, actor="user")
    assert info.value.code == "invalid-max-rounds"
    assert str(info.value) == f"max_rounds must be an integer from 1 to {2**53 - 1}, got {cap}"
    log = goal_in("active")
    with pytest.raises(GoalOperationError) as edited:
        log.run(edit, log.ref, max_rounds=cap, actor="user")
    assert edited.value.code == "invalid-max-rounds"
    largest = GoalLog().run(create, "g1", "ship it", 2**53 - 1, actor="user")
    goal = largest.payload["goal"]
    assert isinstance(goal, dict) and goal["max_rounds"] == 2**53 - 1
