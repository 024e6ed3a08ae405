"""The strict session fold: every machine folded together in one pass.

Theory of operation
-------------------
``apply_session_event`` checks the envelope (gapless seq, time never going
backwards, a known kind), then hands the event to each machine's reducer in
``REDUCERS`` order. Each reducer is pure and raises a positioned
``ReplayError`` for a bad event; the fold stops at the first one and reports
the same position however often it is asked. ``fold_session`` folds a whole
log; ``fold_more`` continues from a stored state (an incremental open).

The session row kept by a store is ``project(state)``; an audit proves it
equals the projection of the fold of the log.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Literal

from kernel.errors import PayloadError, ReplayError
from kernel.goal_fold import GoalState, apply_goal_event
from kernel.log import (
    ASSISTANT_MESSAGE,
    REQUEST_HEADER,
    USER_MESSAGE,
    Event,
    TurnState,
    apply_turn_event,
    check_envelope,
    read_message,
    read_request_header,
)
from kernel.plan_mode import apply_plan_mode_event
from kernel.plan_status import PlanState, apply_plan_event
from kernel.tool_events import check_tool_event

__all__ = [
    "REDUCERS",
    "AgentMode",
    "SessionState",
    "apply_session_event",
    "fold_more",
    "fold_session",
]

AgentMode = Literal["plan", "build"]


@dataclass(frozen=True, slots=True)
class SessionState:
    """Everything the log determines about a session. An empty log is an old
    or new session: build mode, no plan, no goal."""

    last: Event | None = None
    turns: TurnState = field(default_factory=TurnState)
    plan_mode: bool = False
    goal: GoalState = field(default_factory=GoalState)
    plan: PlanState = field(default_factory=PlanState)

    @property
    def last_seq(self) -> int:
        return 0 if self.last is None else self.last.seq

    @property
    def agent_mode(self) -> AgentMode:
        return "plan" if self.plan_mode else "build"


def _turns(state: SessionState, event: Event) -> SessionState:
    turns = apply_turn_event(state.turns, event)
    return state if turns is state.turns else replace(state, turns=turns)


def _plan_mode(state: SessionState, event: Event) -> SessionState:
    active = apply_plan_mode_event(state.plan_mode, event)
    return state if active == state.plan_mode else replace(state, plan_mode=active)


def _header_matches_fold(state: SessionState, event: Event) -> SessionState:
    # Invariant of the turn-boundary flush: a request header records the plan
    # state the fold gives just before it. A log that says otherwise was torn.
    if event.kind == REQUEST_HEADER:
        header = read_request_header(event.payload)
        if header.plan_mode != state.plan_mode:
            raise ReplayError(
                event.seq,
                "header-mismatch",
                f"request header says plan_mode={header.plan_mode}, "
                f"but the log before it says {state.plan_mode}",
            )
    return state


def _messages(state: SessionState, event: Event) -> SessionState:
    if event.kind in (USER_MESSAGE, ASSISTANT_MESSAGE):
        read_message(event.payload)
    return state


def _goal(state: SessionState, event: Event) -> SessionState:
    # goal/change and goal-attributed user/message, exactly as fold_goal does.
    goal = apply_goal_event(state.goal, event)
    return state if goal is state.goal else replace(state, goal=goal)


def _plan(state: SessionState, event: Event) -> SessionState:
    # plan/artifact strictly (the table in kernel.plan_status), with the plan
    # mode just before the event; an answered build-mode request (its
    # assistant/message) marks the plan content as seen.
    plan = apply_plan_event(state.plan, event, state.plan_mode)
    return state if plan is state.plan else replace(state, plan=plan)


def _tool_events(state: SessionState, event: Event) -> SessionState:
    # tool/call, tool/result, tool/refused, tool/warning: exact payload shapes
    # (kernel.tool_events), and only inside an open turn.
    check_tool_event(event, turn_open=state.turns.open)
    return state


Reducer = Callable[[SessionState, Event], SessionState]

#: The machines, in the order each event visits them.
REDUCERS: tuple[Reducer, ...] = (
    _header_matches_fold,
    _turns,
    _plan_mode,
    _messages,
    _goal,
    _plan,
    _tool_events,
)


def apply_session_event(state: SessionState, event: Event) -> SessionState:
    """Fold one event strictly; raise ``ReplayError`` at a bad one."""
    check_envelope(state.last, event)
    try:
        for reducer in REDUCERS:
            state = reducer(state, event)
    except PayloadError as exc:
        raise ReplayError(event.seq, "malformed-payload", exc.message) from exc
    return replace(state, last=event)


def fold_more(state: SessionState, events: Iterable[Event]) -> SessionState:
    """Continue a strict fold from ``state`` (for example a stored projection)."""
    for event in events:
        state = apply_session_event(state, event)
    return state


def fold_session(events: Iterable[Event]) -> SessionState:
    """The strict fold of a whole log."""
    return fold_more(SessionState(), events)
