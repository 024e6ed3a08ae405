"""The session log numbers what decisions return: seq and time in one place."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence

import pytest

from planfold.adapters.store.memory import MemoryStore
from planfold.adapters.store.session_log import LogSealedError, SessionLog
from planfold.kernel.errors import ConflictError
from planfold.kernel.goal.ops import GoalRequest, decide_goal
from planfold.kernel.goal.values import DISARMED
from planfold.kernel.log import TURN_END, TURN_START, USER_MESSAGE, Draft, Event
from planfold.kernel.session import SessionState


def ticks(start: int = 100) -> Iterator[int]:
    at = start
    while True:
        yield at
        at += 10


def open_log(store: MemoryStore) -> SessionLog:
    clock = ticks()
    return SessionLog(store, "s", lambda: next(clock))


def turn(number: int, text: str = "hi") -> tuple[Draft, ...]:
    return (
        Draft(TURN_START, {"turn": number}),
        Draft(USER_MESSAGE, {"text": text, "source": None}),
        Draft(TURN_END, {"turn": number}),
    )


def test_the_log_numbers_drafts_after_its_last_event_and_stamps_them_with_one_time() -> None:
    store = MemoryStore()
    log = open_log(store)
    first = log.append(turn(1))
    second = log.append(turn(2), at=500)
    assert [(e.seq, e.at) for e in first] == [(1, 100), (2, 100), (3, 100)]
    assert [(e.seq, e.at) for e in second] == [(4, 500), (5, 500), (6, 500)]
    assert store.read("s") == first + second and log.state.last_seq == 6
    assert log.append(()) == ()  # nothing to append is never an error


def test_a_sealed_log_refuses_drafts_and_writes_nothing() -> None:
    store = MemoryStore()
    log = open_log(store)
    with log.sealed("tool read_file"), pytest.raises(LogSealedError):
        log.append(turn(1))
    assert store.read("s") == ()


def test_a_decision_is_made_again_on_fresh_state_after_a_conflict_and_carries_its_time() -> None:
    store = MemoryStore()
    log = open_log(store)
    other = open_log(store)
    other.append(turn(1, "another writer"))  # after ours opened: our head is stale
    seen: list[tuple[int, int]] = []

    def create(state: SessionState, at: int) -> Sequence[Draft]:
        seen.append((state.last_seq, at))
        request = GoalRequest("create", "user", goal_id="g1", objective="Ship")
        return (decide_goal(state.goal, request, DISARMED, at).draft,)

    (event,) = log.append_decided(create)
    assert [last for last, _ in seen] == [0, 3]  # refused at 0, decided again after the other's turn
    assert event.seq == 4 and event.at == seen[-1][1]
    assert log.state.goal.current is not None and log.state.goal.current.created_at == event.at


def _losing_every_race() -> tuple[MemoryStore, SessionLog, Callable[[SessionState, int], Sequence[Draft]]]:
    """A store, a log of it, and a decision that another writer's turn beats
    to the store on every attempt."""
    store = MemoryStore()
    log = open_log(store)
    other = open_log(store)

    def racing(state: SessionState, at: int) -> Sequence[Draft]:
        other.reload()
        other.append(turn(other.state.turns.turn + 1, "again"))  # another writer wins every time
        return turn(state.turns.turn + 1)

    return store, log, racing


def test_a_conflict_that_outlasts_the_attempts_is_raised_and_nothing_is_written() -> None:
    store, log, racing = _losing_every_race()
    with pytest.raises(ConflictError):
        log.append_decided(racing, attempts=2)
    assert all(isinstance(e, Event) and e.payload.get("text") != "hi" for e in store.read("s"))


def test_the_logs_events_are_a_view_that_later_appends_do_not_change() -> None:
    log = open_log(MemoryStore())
    log.append(turn(1))
    before = log.events
    log.append(turn(2, "again"))
    after = log.events
    assert len(before) == 3 and len(after) == 6
    assert before == after[:3] == tuple(after)[:3] and before != after
    assert [e.seq for e in before] == [1, 2, 3] and [e.seq for e in reversed(after)] == [6, 5, 4, 3, 2, 1]
    assert before[-1] is after[2] and before[0].seq == 1 and after[-6].seq == 1
    assert before[1:] == tuple(before)[1:] and after[::2] == tuple(after)[::2] and before[5:] == ()
    for index in (3, -4):
        with pytest.raises(IndexError):
            before[index]
    assert before.index(after[1]) == 1 and after[4] not in before


def test_a_reload_reads_the_events_again_and_earlier_views_keep_theirs() -> None:
    store = MemoryStore()
    log, other = open_log(store), open_log(store)
    log.append(turn(1))
    seen = log.events
    other.reload()
    other.append(turn(2))
    log.reload()
    assert len(seen) == 3 and [e.seq for e in log.events] == [1, 2, 3, 4, 5, 6]
    assert log.events == store.read("s")


def test_each_conflict_of_a_decided_append_is_logged_and_the_last_one_as_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    _, log, racing = _losing_every_race()
    with caplog.at_level(logging.INFO, logger="planfold.adapters.store.session_log"), pytest.raises(ConflictError):
        log.append_decided(racing, attempts=3)
    records = [r for r in caplog.records if r.name == "planfold.adapters.store.session_log"]
    assert [r.levelname for r in records] == ["INFO", "INFO", "WARNING"]
    assert "conflict on attempt 1 of 3" in records[0].getMessage() and "decide again" in records[0].getMessage()
    assert "conflict on attempt 3 of 3, giving up" in records[2].getMessage()
