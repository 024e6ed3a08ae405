"""The logs the benchmarks replay and append, made by the kernel's own operations.

Theory of operation
-------------------
Two generators produce valid session logs lazily (so a million events never
sit in memory at once), each event exactly what the strict fold accepts:

- ``goal_events(n)``: a goal-only log. Each goal is created with a cap of
  ``GOAL_CAP`` rounds, runs its rounds (goal-attributed ``user/message``
  events), is paused and resumed and edited along the way, and is completed
  when its rounds are spent; then the next goal is created. About four in five
  events are rounds and one in five is a ``goal/change``. Every change comes
  from ``kernel.goal_ops`` and every round from ``round_message``, so the log
  is what a real runtime writes.
- ``session_events(n)``: a coding-agent session. Each turn is ``turn/start``,
  a user message (a goal round while the goal may run, else a human one),
  ``request/header`` step 1, an assistant message, a tool call and its
  result, ``request/header`` step 2, an assistant message and ``turn/end``;
  plan mode flips now and then (before the turn's first header, as the
  pending-choice flush does), and goals are created with the default cap of
  256 rounds, paused, resumed, edited and completed between turns.

Both stop at exactly ``n`` events (possibly mid-turn, which is a valid log).
``GoalTracker`` follows the goal state with ``apply_goal_event`` only for the
events that can change it, so making a log costs far less than folding it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from planfold.kernel.goal.continuation import round_message
from planfold.kernel.goal.fold import GoalState, apply_goal_event
from planfold.kernel.goal.ops import complete, create, edit, pause, resume
from planfold.kernel.goal.values import DISARMED
from planfold.kernel.log import (
    ASSISTANT_MESSAGE,
    PLAN_MODE,
    REQUEST_HEADER,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
    Event,
)
from planfold.kernel.payload import JSONObject

__all__ = [
    "GOAL_CAP",
    "START_AT",
    "GoalTracker",
    "goal_events",
    "session_events",
]

#: Rounds per goal in the goal-only log.
GOAL_CAP = 40
#: The ``at`` of the first event (milliseconds; any non-negative start works).
START_AT = 1_700_000_000_000


@dataclass(slots=True)
class GoalTracker:
    """The generator's running goal state (mutable: it lives in one generator)."""

    state: GoalState
    seq: int = 0
    at: int = START_AT
    made: int = 0

    def stamp(self) -> tuple[int, int]:
        """The seq and time of the next event."""
        self.seq += 1
        self.at += 7
        return self.seq, self.at

    def take(self, event: Event) -> Event:
        """Follow ``event`` (a goal change or round) and hand it back."""
        self.state = apply_goal_event(self.state, event)
        return event

    def lifecycle(self, tick: int, cap: int | None) -> Event | None:
        """The goal change due at ``tick``, if any: create when there is no
        running goal, complete when its rounds are spent, resume a paused one,
        and now and then pause or edit an active one."""
        current = self.state.current
        if current is None or current.phase == "complete":
            self.made += 1
            seq, at = self.stamp()
            made = create(self.state, f"goal-{self.made}", f"objective {self.made}", cap, actor="user", at=at)
            return self.take(made.numbered(seq, at))
        if current.phase == "paused":
            seq, at = self.stamp()
            return self.take(resume(self.state, current.ref, DISARMED, actor="user", at=at).numbered(seq, at))
        if current.rounds_started >= current.max_rounds:
            seq, at = self.stamp()
            return self.take(complete(self.state, current.ref, actor="model", at=at).numbered(seq, at))
        if tick % 11 == 5:
            seq, at = self.stamp()
            return self.take(pause(self.state, current.ref, actor="user", at=at).numbered(seq, at))
        if tick % 13 == 7:
            seq, at = self.stamp()
            text = f"objective {self.made}, take {current.revision + 1}"
            return self.take(edit(self.state, current.ref, objective=text, actor="user", at=at).numbered(seq, at))
        return None

    def round(self, text: str) -> Event | None:
        """The next goal round, or ``None`` when the goal may not run one."""
        current = self.state.current
        if current is None or current.phase != "active" or current.rounds_started >= current.max_rounds:
            return None
        seq, at = self.stamp()
        return self.take(round_message(self.state, text).numbered(seq, at))


def goal_events(count: int) -> Iterator[Event]:
    """A goal-only log of exactly ``count`` events (see the module docstring)."""
    tracker = GoalTracker(GoalState())
    tick = 0
    while tracker.seq < count:
        tick += 1
        change = tracker.lifecycle(tick, GOAL_CAP)
        if change is not None:
            yield change
            continue
        event = tracker.round("keep going")
        if event is not None:
            yield event


def _plain(tracker: GoalTracker, kind: str, payload: JSONObject) -> Event:
    seq, at = tracker.stamp()
    return Event(seq, kind, at, payload)


def _turn(tracker: GoalTracker, turn: int, plan_mode: bool, flip: bool) -> Iterator[Event]:
    yield _plain(tracker, TURN_START, {"turn": turn})
    goal_round = tracker.round(f"continue the goal (turn {turn})")
    if goal_round is not None:
        yield goal_round
    else:
        yield _plain(tracker, USER_MESSAGE, {"text": f"please look at issue {turn}", "source": None})
    if flip:
        yield _plain(tracker, PLAN_MODE, {"active": plan_mode})
    call_id = f"call-{turn}"
    yield _plain(tracker, REQUEST_HEADER, {"turn": turn, "step": 1, "plan_mode": plan_mode})
    yield _plain(tracker, ASSISTANT_MESSAGE, {"text": "Let me read the file first.", "source": None})
    yield _plain(
        tracker, TOOL_CALL, {"call_id": call_id, "tool": "read_file", "arguments": {"path": f"src/mod_{turn % 97}.py"}}
    )
    yield _plain(
        tracker,
        TOOL_RESULT,
        {"call_id": call_id, "tool": "read_file", "ok": True, "output": "def main() -> None:\n    run()\n"},
    )
    yield _plain(tracker, REQUEST_HEADER, {"turn": turn, "step": 2, "plan_mode": plan_mode})
    yield _plain(tracker, ASSISTANT_MESSAGE, {"text": f"Done with step {turn}.", "source": None})
    yield _plain(tracker, TURN_END, {"turn": turn})


def session_events(count: int) -> Iterator[Event]:
    """A coding-agent session log of exactly ``count`` events (see the module docstring)."""
    tracker = GoalTracker(GoalState())
    plan_mode = False
    turn = 0
    while True:
        turn += 1
        change = tracker.lifecycle(turn, None)
        if change is not None:
            if change.seq > count:
                return
            yield change
        flip = turn % 29 == 0
        if flip:
            plan_mode = not plan_mode
        for event in _turn(tracker, turn, plan_mode, flip):
            if event.seq > count:
                return
            yield event
