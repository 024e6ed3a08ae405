"""The ``goal/change`` payloads: builders and strict readers agree, and every
shape problem is a typed error naming its rule and saying what is wrong."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planfold.kernel.errors import PayloadError, is_kebab_case
from planfold.kernel.goal.values import (
    GOAL_CHANGE_VERSION,
    OPERATIONS,
    PHASES,
    TRANSITIONS,
    BlockedReason,
    ClearChange,
    GoalRef,
    GoalSnapshot,
    SnapshotChange,
    change_ref,
    clear_payload,
    read_goal_change,
    snapshot_payload,
)
from planfold.kernel.payload import JSON, JSONObject

kebab = st.from_regex(r"\A[a-z][a-z0-9]{0,5}(-[a-z0-9]{1,4}){0,2}\Z")
trimmed = st.text(min_size=1, max_size=12).map(str.strip).filter(bool)
ints = st.integers(min_value=0, max_value=10**12)


@st.composite
def snapshots(draw: st.DrawFn) -> GoalSnapshot:
    phase = draw(st.sampled_from(PHASES))
    reason = BlockedReason(draw(kebab), draw(trimmed)) if phase == "blocked" else None
    created = draw(ints)
    return GoalSnapshot(
        id=draw(st.text(min_size=1, max_size=8)),
        objective=draw(trimmed),
        phase=phase,
        blocked_reason=reason,
        max_rounds=draw(st.integers(1, 1000)),
        revision=draw(st.integers(1, 10**6)),
        rounds_started=draw(st.integers(0, 1000)),
        created_at=created,
        updated_at=created + draw(ints),
    )


@given(snapshots(), st.sampled_from([op for op in OPERATIONS if op != "clear"]))
def test_snapshot_payload_round_trips(goal: GoalSnapshot, operation: str) -> None:
    payload = snapshot_payload(operation, goal)  # type: ignore[arg-type]
    assert read_goal_change(payload) == SnapshotChange.of(operation, goal)  # type: ignore[arg-type]
    assert read_goal_change(payload).snapshot == goal  # type: ignore[union-attr]
    assert change_ref(read_goal_change(payload)) == goal.ref


@given(st.text(min_size=1, max_size=8), st.integers(1, 10**6), ints)
def test_clear_payload_round_trips(goal_id: str, revision: int, at: int) -> None:
    payload = clear_payload(GoalRef(goal_id, revision), at)
    assert read_goal_change(payload) == ClearChange(1, "clear", GoalRef(goal_id, revision), at)


SNAPSHOT = snapshot_payload(
    "block",
    GoalSnapshot("g1", "ship it", "blocked", BlockedReason("needs-input", "which?"), 5, 3, 1, 10, 20),
)
CLEAR = clear_payload(GoalRef("g1", 4), 30)


def mutated(base: Any, path: tuple[str, ...], value: object = None, *, delete: bool = False) -> Any:
    payload = copy.deepcopy(base)
    target = payload
    for key in path[:-1]:
        target = target[key]
    if delete:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return payload


def keys_of(base: Any) -> list[tuple[str, ...]]:
    paths: list[tuple[str, ...]] = []
    for key, value in base.items():
        paths.append((key,))
        if isinstance(value, dict):
            paths.extend((key, inner) for inner in value)
    return paths


@pytest.mark.parametrize("path", keys_of(SNAPSHOT) + keys_of(CLEAR), ids="/".join)
def test_a_missing_key_is_refused(path: tuple[str, ...]) -> None:
    base = SNAPSHOT if path[0] in SNAPSHOT else CLEAR
    with pytest.raises(PayloadError) as info:
        read_goal_change(mutated(base, path, delete=True))
    assert info.value.code == "malformed-payload"


@pytest.mark.parametrize(
    "path", [("extra",), ("goal", "extra"), ("goal", "blocked_reason", "extra"), ("cleared", "x")]
)
def test_an_extra_key_is_refused(path: tuple[str, ...]) -> None:
    base = CLEAR if path[0] == "cleared" else SNAPSHOT
    with pytest.raises(PayloadError) as info:
        read_goal_change(mutated(base, path, True))
    assert info.value.code == "malformed-payload"


@pytest.mark.parametrize("version", [0, 2, "1", True, 1.0, None])
def test_an_unknown_version_is_refused(version: object) -> None:
    for base in (SNAPSHOT, CLEAR):
        with pytest.raises(PayloadError) as info:
            read_goal_change(mutated(base, ("version",), version))
        assert info.value.code == "unknown-version"


@pytest.mark.parametrize("operation", ["archive", "Create", "", None, 3, ["clear"]])
def test_an_unknown_operation_is_refused(operation: object) -> None:
    with pytest.raises(PayloadError) as info:
        read_goal_change(mutated(SNAPSHOT, ("operation",), operation))
    assert info.value.code == "unknown-operation"


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("goal", "phase"), "done"),
        (("goal", "phase"), "active"),  # a reason without the blocked phase
        (("goal", "blocked_reason"), None),  # the blocked phase without a reason
        (("goal", "blocked_reason", "code"), "Needs Input"),
        (("goal", "blocked_reason", "message"), "  padded "),
        (("goal", "blocked_reason", "message"), ""),
        (("goal", "objective"), " ship it"),
        (("goal", "objective"), ""),
        (("goal", "id"), ""),
        (("goal", "id"), 7),
        (("goal", "revision"), 0),
        (("goal", "revision"), True),
        (("goal", "max_rounds"), 0),
        (("goal", "max_rounds"), 2.0),
        (("rounds_started",), -1),
        (("created_at",), -5),
        (("updated_at",), "20"),
        (("goal",), "g1"),
    ],
)
def test_a_bad_value_is_refused(path: tuple[str, ...], value: object) -> None:
    with pytest.raises(PayloadError) as info:
        read_goal_change(mutated(SNAPSHOT, path, value))
    assert info.value.code == "malformed-payload"


def test_a_payload_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(PayloadError) as info:
        read_goal_change(["version", 1])  # type: ignore[arg-type]
    assert info.value.code == "malformed-payload"


def payload_refusal(payload: JSONObject) -> tuple[str, str]:
    """The code and message ``read_goal_change`` refuses ``payload`` with."""
    with pytest.raises(PayloadError) as caught:
        read_goal_change(payload)
    return caught.value.code, str(caught.value)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            ("goal", "blocked_reason"),
            {"code": "Needs Input", "message": "which database?"},
            "payload.goal.blocked_reason.code: must be kebab-case, got 'Needs Input'",
        ),
        (
            ("goal", "blocked_reason"),
            {"code": "needs-input", "message": " which database? "},
            "payload.goal.blocked_reason.message: must be non-blank text without surrounding space",
        ),
        (
            ("goal", "phase"),
            "active",
            "payload.goal.blocked_reason: must be an object exactly when the phase is blocked",
        ),
    ],
    ids=["code-not-kebab-case", "padded-message", "reason-on-an-active-goal"],
)
def test_a_bad_blocked_reason_is_refused_saying_what_is_wrong(
    path: tuple[str, ...], value: object, message: str
) -> None:
    assert payload_refusal(mutated(SNAPSHOT, path, value)) == ("malformed-payload", message)


def test_an_unknown_version_is_refused_naming_it() -> None:
    assert payload_refusal({"version": 3, "operation": "clear"}) == (
        "unknown-version",
        "payload.version: must be one of [1], got 3; payload.cleared: required field is missing; "
        "payload.cleared_at: required field is missing",
    )


def clear_with(**fields: JSON) -> JSONObject:
    return {**CLEAR, **fields}


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (
            {"version": 1, "operation": "clear", "cleared": {"id": "g1", "revision": 2}},
            "payload.cleared_at: required field is missing",
        ),
        (clear_with(cleared={"id": "g1"}), "payload.cleared.revision: required field is missing"),
        (clear_with(cleared={"id": "", "revision": 2}), "payload.cleared.id: must not be empty"),
        (clear_with(cleared={"id": "g1", "revision": 0}), "payload.cleared.revision: must be >= 1, got 0"),
        (clear_with(cleared_at=-1), "payload.cleared_at: must be >= 0, got -1"),
    ],
    ids=["missing-cleared-at", "cleared-without-revision", "empty-id", "revision-zero", "negative-time"],
)
def test_a_malformed_clear_tombstone_is_refused_naming_the_fault(payload: JSONObject, message: str) -> None:
    assert payload_refusal(payload) == ("malformed-payload", message)


def test_payloads_have_version_one() -> None:
    assert SNAPSHOT["version"] == CLEAR["version"] == GOAL_CHANGE_VERSION == 1


# --------------------------------------------------------------------------
# The table's shape (its content is checked against the issue in test_goal_ops)


def test_every_row_is_reachable_and_named_in_kebab_case() -> None:
    for row in TRANSITIONS:
        assert row.operation in OPERATIONS
        assert row.source is None or row.source in PHASES
        assert row.target is None or row.target in PHASES
        assert all(is_kebab_case(guard) for guard in row.guards)
    assert {row.operation for row in TRANSITIONS} == set(OPERATIONS)


def test_each_operation_has_one_activation_effect() -> None:
    for operation in OPERATIONS:
        effects = {row.activation for row in TRANSITIONS if row.operation == operation}
        assert len(effects) == 1, operation
