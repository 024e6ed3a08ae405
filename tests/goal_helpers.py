"""A small log builder for the goal unit tests: it runs the real operations
against the fold of its own log and appends what they return."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from planfold.kernel.goal.continuation import round_message
from planfold.kernel.goal.fold import GoalState, fold_goal
from planfold.kernel.goal.ops import block, complete, create, pause
from planfold.kernel.goal.values import DISARMED, BlockedReason, GoalRef, GoalSnapshot
from planfold.kernel.log import Draft, Event, last_seq

REASON = BlockedReason("needs-input", "which database should it use?")


class GoalLog:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.clock = 1000

    @property
    def state(self) -> GoalState:
        return fold_goal(self.events)

    @property
    def goal(self) -> GoalSnapshot:
        current = self.state.current
        assert current is not None
        return current

    @property
    def ref(self) -> GoalRef:
        return self.goal.ref

    @property
    def seq(self) -> int:
        return last_seq(self.events) + 1

    def tick(self) -> int:
        self.clock += 10
        return self.clock

    def run(self, decide: Callable[..., Draft], *args: Any, **kwargs: Any) -> Event:
        """Decide with ``decide(state, *args, at=, **kwargs)`` and append the
        draft it returns, numbered to follow the log."""
        at = self.tick()
        event = decide(self.state, *args, at=at, **kwargs).numbered(self.seq, at)
        self.events.append(event)
        return event

    def append(self, kind: str, payload: dict[str, Any]) -> Event:
        event = Event(self.seq, kind, self.tick(), payload)
        self.events.append(event)
        return event

    def round(self) -> Event:
        event = round_message(self.state, "continue").numbered(self.seq, self.tick())
        self.events.append(event)
        return event


def goal_in(phase: str | None, *, max_rounds: int = 3, rounds: int = 0) -> GoalLog:
    """A log whose current goal ``g1`` is in ``phase`` (``None``: no goal)
    after ``rounds`` rounds."""
    log = GoalLog()
    if phase is None:
        return log
    log.run(create, "g1", "ship the importer", max_rounds, actor="user")
    for _ in range(rounds):
        log.round()
    if phase == "paused":
        log.run(pause, log.ref, actor="user")
    elif phase == "blocked":
        log.run(block, log.ref, REASON, actor="model")
    elif phase == "complete":
        log.run(complete, log.ref, actor="model")
    assert log.goal.phase == phase
    return log


__all__ = ["DISARMED", "REASON", "GoalLog", "goal_in"]
