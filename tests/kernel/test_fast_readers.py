"""The fold's fast readers answer exactly like the general readers.

``kernel.log.read_message_round`` and the goal fold's own reading of
``goal/change`` payloads read the common shapes (plain dicts of exact types)
themselves and leave everything else to ``read_message`` and
``read_goal_change``. Every near miss of every field of a valid payload must
get the same answer either way, in several states, through the whole fold;
and the common shapes must really take the short way (a stricter fast check
would answer the same, only slower).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest

from planfold.kernel import log as kernel_log
from planfold.kernel.errors import PayloadError
from planfold.kernel.goal import fold as goal_fold
from planfold.kernel.goal.fold import _read_change
from planfold.kernel.goal.values import GoalSnapshot, read_goal_change, snapshot_payload
from planfold.kernel.log import GOAL_CHANGE, Event, read_message, read_message_round
from planfold.kernel.session import apply_session_event, fold_more, fold_rows
from tests.session_cases import (
    contexts,
    get_path,
    near_misses,
    outcome,
    paths,
    reference_apply,
    templates_for,
    with_miss,
)


def test_the_fast_message_reader_answers_like_read_message() -> None:
    source: dict[str, Any] = {"type": "goal", "goal_id": "g1", "revision": 1, "round": 1}
    assert read_message_round({"text": "hi", "source": source}) == ("g1", 1, 1)
    assert read_message_round({"text": "hi", "source": None}) is None
    for key, bad in (("revision", True), ("round", 1.0), ("goal_id", "")):
        with pytest.raises(PayloadError) as err:
            read_message_round({"text": "hi", "source": {**source, key: bad}})
        with pytest.raises(PayloadError) as slow:
            read_message({"text": "hi", "source": {**source, key: bad}})
        assert err.value.message == slow.value.message


def test_the_message_reader_and_its_fast_form_agree_on_a_plugin_source() -> None:
    payload: dict[str, Any] = {"text": "note", "source": {"type": "plugin", "plugin": "lint"}}
    assert read_message_round(payload) is None
    assert read_message(payload)[1].plugin == "lint"


GOAL_SOURCE = {"type": "goal", "goal_id": "g1", "revision": 2, "round": 3}


@pytest.mark.parametrize(
    "payload",
    [
        MappingProxyType({"text": "continue", "source": GOAL_SOURCE}),
        {"text": "continue", "source": MappingProxyType(GOAL_SOURCE)},
    ],
)
def test_a_goal_round_read_from_any_mapping_names_its_goal_revision_and_round(payload: Any) -> None:
    assert read_message_round(payload) == ("g1", 2, 3)


@pytest.mark.parametrize(
    "source",
    [None, MappingProxyType({"type": "plugin", "plugin": "plan-mode"})],
)
def test_a_message_read_from_any_mapping_without_a_goal_has_no_round(source: Any) -> None:
    assert read_message_round(MappingProxyType({"text": "hi", "source": source})) is None


def test_every_near_miss_of_every_field_is_judged_like_the_reducers() -> None:
    checked = accepted = 0
    for state in contexts():
        seq, at = state.last_seq + 1, state.last.at if state.last else 0
        for kind, template in templates_for(state):
            for path in paths(template):
                for miss in near_misses(get_path(template, path)):
                    payload = with_miss(template, path, miss)
                    event = Event(seq, kind, at, payload)
                    want = outcome(reference_apply, state, event)
                    assert outcome(apply_session_event, state, event) == want, (kind, path, miss)
                    assert outcome(fold_more, state, [event]) == want, (kind, path, miss)
                    assert outcome(fold_rows, state, [(seq, kind, at, payload)]) == want, (kind, path, miss)
                    checked += 1
                    accepted += want[0] == "state"
    assert checked > 1000 and accepted > 50, (checked, accepted)


def test_the_goal_fold_reads_every_near_miss_of_a_goal_change_like_read_goal_change() -> None:
    # The goal fold reads the common snapshot shape itself (kernel.goal_fold
    # ._read_change) and leaves the rest to kernel.goal.read_goal_change.
    checked = 0
    for state in contexts():
        for kind, template in templates_for(state):
            if kind != GOAL_CHANGE:
                continue
            for path in paths(template):
                for miss in near_misses(get_path(template, path)):
                    payload = with_miss(template, path, miss)
                    assert outcome(_read_change, payload) == outcome(read_goal_change, payload), (path, miss)
                    checked += 1
    assert checked > 300, checked


# --------------------------------------------------------------------------
# The fast readers read the common shapes themselves (a stricter fast check
# would give the same answers, only slower: these tests pin the speed-up)


def _refuse(*args: object) -> object:
    raise AssertionError("the long way round was taken")


@pytest.mark.parametrize(
    "source",
    [None, {"type": "goal", "goal_id": "g1", "revision": 3, "round": 2}],
)
def test_plain_messages_are_read_without_read_message(monkeypatch: pytest.MonkeyPatch, source: Any) -> None:
    monkeypatch.setattr(kernel_log, "read_message", _refuse)
    expected = None if source is None else ("g1", 3, 2)
    assert read_message_round({"text": "go", "source": source}) == expected


@pytest.mark.parametrize("phase", ["active", "paused", "complete"])
@pytest.mark.parametrize("operation", ["create", "edit", "pause", "resume", "complete"])
def test_plain_snapshots_are_read_without_read_goal_change(
    monkeypatch: pytest.MonkeyPatch, phase: Any, operation: Any
) -> None:
    payload = dict(snapshot_payload(operation, GoalSnapshot("g9", "ship it", phase, None, 1, 1, 0, 0, 0)))
    expected = read_goal_change(payload)
    monkeypatch.setattr(goal_fold, "read_goal_change", _refuse)
    assert _read_change(payload) == expected
