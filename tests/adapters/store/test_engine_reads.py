"""What an append looks at in the events it is given before and after the
fold (``adapters.store.engine``): the goal ids they create and whether they
start a goal round, each payload read by its kind's reader."""

from __future__ import annotations

from planfold.adapters.store.contract_logs import FULL_SCRIPT, build_log
from planfold.adapters.store.engine import created_goal_ids, starts_a_round
from planfold.kernel.log import GOAL_CHANGE, USER_MESSAGE, Event, GoalSource, PluginSource, user_message

LOG = build_log(FULL_SCRIPT).events


def test_the_goal_ids_created_are_the_creates_among_the_events_with_their_seqs() -> None:
    assert created_goal_ids(LOG) == [("g1", 17)]  # its pause and resume create nothing
    assert created_goal_ids([e for e in LOG if e.kind != GOAL_CHANGE]) == []


def test_a_goal_change_that_does_not_read_creates_nothing_before_the_fold_refuses_it() -> None:
    half = Event(1, GOAL_CHANGE, 1, {"version": 1, "operation": "create", "goal": {"id": "g1"}})
    assert created_goal_ids([half]) == []
    assert created_goal_ids([Event(1, GOAL_CHANGE, 1, [])]) == []  # type: ignore[arg-type]


def test_only_a_user_message_a_goal_sent_starts_a_round() -> None:
    assert not starts_a_round(LOG)  # humans and a plugin speak in it, never a goal
    goal_round = Event(99, USER_MESSAGE, 99, user_message("Continue.", GoalSource("goal", "g1", 1, 1)).payload)
    plugin = Event(99, USER_MESSAGE, 99, user_message("Note.", PluginSource("plugin", "lint")).payload)
    assert starts_a_round([*LOG[:3], goal_round])
    assert not starts_a_round([plugin])
