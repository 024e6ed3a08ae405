"""The strict session fold: every machine folded together in one pass.

Theory of operation
-------------------
``apply_session_event`` checks the envelope (gapless seq, time never going
backwards, a known kind), then runs the machines that read the event's kind.
Each machine is a reducer in ``REDUCERS``, a pure ``(SessionState, Event) ->
SessionState`` that passes the kinds it does not read through unchanged, and
``REDUCERS`` is the order an event visits them. A reducer raises a positioned
``ReplayError`` for a bad event; the fold stops at the first one and reports
the same position however often it is asked. ``fold_session`` folds a whole
log; ``fold_more`` continues from a stored state (an incremental open).

``ROUTES`` is the dispatch table: for every known kind, the reducers that read
it (in ``REDUCERS`` order) and a *step* that does exactly what those reducers
do one after the other, in one pass: it reads the payload once (a user
message is both checked and counted as a goal round from one reading) and
changes only the parts of the state that the kind can change. The reducers
are the definition; the steps are what the fold runs, and a test holds every
step to the composition of its reducers, errors included.

A step works on the parts of a state (turns, plan mode, goal, the current
goal's round count, plan) rather than on a ``SessionState``, so that a batch
builds one ``SessionState`` at its end instead of several per event. The
round count is kept apart from the goal snapshot because rounds are most of a
goal's events and change nothing else: the snapshot is rebuilt with the count
(``with_rounds``) only when a goal change needs it and at the end.
``fold_rows`` is ``fold_more`` over ``(seq, kind, at, payload)`` rows as a
store reads them; the kinds whose step needs only the seq, time and payload
(user messages, goal changes) get no ``Event``, and the last row becomes the
state's ``last``.

The session row kept by a store is ``project(state)``; an audit proves it
equals the projection of the fold of the log.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from .errors import PayloadError, ReplayError
from .goal.fold import GoalState, apply_goal_change, apply_goal_event, check_goal_round, with_rounds
from .log import (
    ASSISTANT_MESSAGE,
    GOAL_CHANGE,
    KNOWN_KINDS,
    PLAN_ARTIFACT,
    PLAN_MODE,
    REQUEST_HEADER,
    TOOL_CALL,
    TOOL_REFUSED,
    TOOL_RESULT,
    TOOL_WARNING,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
    Event,
    TurnState,
    apply_request_header,
    apply_turn_event,
    check_envelope,
    read_message,
    read_message_round,
    read_request_header,
)
from .payload import JSONObject
from .phase import AgentMode
from .plan.artifact import PlanState
from .plan.mode import apply_plan_mode_event
from .plan.status import apply_plan_event
from .tools.events import check_tool_event

__all__ = [
    "REDUCERS",
    "ROUTES",
    "Route",
    "Row",
    "SessionState",
    "apply_session_event",
    "fold_more",
    "fold_rows",
    "fold_session",
]



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


# --------------------------------------------------------------------------
# The machines (the definition)


def _turns(state: SessionState, event: Event) -> SessionState:
    turns = apply_turn_event(state.turns, event)
    return state if turns is state.turns else replace(state, turns=turns)


def _plan_mode(state: SessionState, event: Event) -> SessionState:
    active = apply_plan_mode_event(state.plan_mode, event)
    return state if active == state.plan_mode else replace(state, plan_mode=active)


def _header_mismatch(seq: int, header_mode: bool, folded: bool) -> ReplayError:
    return ReplayError(
        seq,
        "header-mismatch",
        f"request header says plan_mode={header_mode}, but the log before it says {folded}",
    )


def _header_matches_fold(state: SessionState, event: Event) -> SessionState:
    # Invariant of the turn-boundary flush: a request header records the plan
    # state the fold gives just before it. A log that says otherwise was torn.
    if event.kind == REQUEST_HEADER:
        header = read_request_header(event.payload)
        if header.plan_mode != state.plan_mode:
            raise _header_mismatch(event.seq, header.plan_mode, state.plan_mode)
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


# --------------------------------------------------------------------------
# The steps (what the fold runs)

#: A state taken apart: turns, plan mode, goal, the current goal's round
#: count (which may be ahead of the goal snapshot's), plan.
Parts = tuple[TurnState, bool, GoalState, int, PlanState]
Step = Callable[[Parts, Event], Parts]


def _turn_step(parts: Parts, event: Event) -> Parts:
    turns, mode, goal, rounds, plan = parts
    return apply_turn_event(turns, event), mode, goal, rounds, plan


def _header_step(parts: Parts, event: Event) -> Parts:
    turns, mode, goal, rounds, plan = parts
    header = read_request_header(event.payload)
    if header.plan_mode != mode:
        raise _header_mismatch(event.seq, header.plan_mode, mode)
    return apply_request_header(turns, header, event.seq), mode, goal, rounds, plan


def _plan_mode_step(parts: Parts, event: Event) -> Parts:
    turns, mode, goal, rounds, plan = parts
    return turns, apply_plan_mode_event(mode, event), goal, rounds, plan


def _user_message_step(parts: Parts, event: Event) -> Parts:
    return _user_message_row(parts, event.seq, event.at, event.payload)


def _user_message_row(parts: Parts, seq: int, at: int, payload: JSONObject) -> Parts:
    # The user/message step needs no Event: see fold_rows.
    attributed = read_message_round(payload)
    if attributed is None:
        return parts
    turns, mode, goal, rounds, plan = parts
    check_goal_round(goal.current, rounds, seq, attributed)
    return turns, mode, goal, attributed[2], plan


def _assistant_message_step(parts: Parts, event: Event) -> Parts:
    read_message_round(event.payload)
    turns, mode, goal, rounds, plan = parts
    return turns, mode, goal, rounds, apply_plan_event(plan, event, mode)


def _goal_change_step(parts: Parts, event: Event) -> Parts:
    return _goal_change_row(parts, event.seq, event.at, event.payload)


def _goal_change_row(parts: Parts, seq: int, at: int, payload: JSONObject) -> Parts:
    turns, mode, goal, rounds, plan = parts
    goal = apply_goal_change(goal, seq, at, payload, rounds)
    return turns, mode, goal, _rounds_of(goal), plan


def _plan_step(parts: Parts, event: Event) -> Parts:
    turns, mode, goal, rounds, plan = parts
    return turns, mode, goal, rounds, apply_plan_event(plan, event, mode)


def _tool_step(parts: Parts, event: Event) -> Parts:
    check_tool_event(event, turn_open=parts[0].open)
    return parts


@dataclass(frozen=True, slots=True)
class Route:
    """How one kind is folded: ``reducers`` (from ``REDUCERS``, in order) are
    the machines that read it; ``step`` does what they do, in one pass."""

    reducers: tuple[Reducer, ...]
    step: Step


#: Every known kind -> its route. Reducers not listed pass the kind through.
ROUTES: Mapping[str, Route] = MappingProxyType(
    {
        TURN_START: Route((_turns,), _turn_step),
        TURN_END: Route((_turns,), _turn_step),
        REQUEST_HEADER: Route((_header_matches_fold, _turns), _header_step),
        PLAN_MODE: Route((_plan_mode,), _plan_mode_step),
        USER_MESSAGE: Route((_messages, _goal), _user_message_step),
        ASSISTANT_MESSAGE: Route((_messages, _plan), _assistant_message_step),
        GOAL_CHANGE: Route((_goal,), _goal_change_step),
        PLAN_ARTIFACT: Route((_plan,), _plan_step),
        TOOL_CALL: Route((_tool_events,), _tool_step),
        TOOL_RESULT: Route((_tool_events,), _tool_step),
        TOOL_REFUSED: Route((_tool_events,), _tool_step),
        TOOL_WARNING: Route((_tool_events,), _tool_step),
    }
)
_STEPS: Mapping[str, Step] = {kind: route.step for kind, route in ROUTES.items()}
#: Steps that work on a row's seq and payload alone (``fold_rows`` makes no
#: Event for them); each is what its kind's step does with the event's.
_ROW_STEPS: Mapping[str, Callable[[Parts, int, int, JSONObject], Parts]] = {
    USER_MESSAGE: _user_message_row,
    GOAL_CHANGE: _goal_change_row,
}
assert set(ROUTES) == KNOWN_KINDS, "every known kind needs a route"


def _rounds_of(goal: GoalState) -> int:
    return 0 if goal.current is None else goal.current.rounds_started


def _parts(state: SessionState) -> Parts:
    return state.turns, state.plan_mode, state.goal, _rounds_of(state.goal), state.plan


def _state(last: Event | None, parts: Parts) -> SessionState:
    turns, mode, goal, rounds, plan = parts
    return SessionState(last, turns, mode, with_rounds(goal, rounds), plan)


# --------------------------------------------------------------------------
# The folds


def apply_session_event(state: SessionState, event: Event) -> SessionState:
    """Fold one event strictly; raise ``ReplayError`` at a bad one."""
    check_envelope(state.last, event)
    try:
        parts = _STEPS[event.kind](_parts(state), event)
    except PayloadError as exc:
        raise ReplayError(event.seq, "malformed-payload", exc.message) from exc
    return _state(event, parts)


def _next_after(last: Event | None) -> tuple[int, int]:
    """The seq the next event must have and the earliest time it may have,
    for the folds' fast envelope check. Times are never negative, even after
    a stored state whose last one is."""
    return (1, 0) if last is None else (last.seq + 1, max(last.at, 0))


def fold_more(state: SessionState, events: Iterable[Event]) -> SessionState:
    """Continue a strict fold from ``state`` (for example a stored projection);
    raise ``ReplayError`` at the first bad event."""
    last = state.last
    # The envelope rules for the common case (exact ints, in order, a known
    # kind); anything else goes to check_envelope, which decides and words it.
    expected, not_before = _next_after(last)
    parts = _parts(state)
    steps = _STEPS
    for event in events:
        seq, at, kind = event.seq, event.at, event.kind
        if not (
            type(seq) is int and seq == expected and type(at) is int and at >= not_before
            and type(kind) is str and kind in steps
        ):
            check_envelope(last, event)
        try:
            parts = steps[kind](parts, event)
        except PayloadError as exc:
            raise ReplayError(seq, "malformed-payload", exc.message) from exc
        last, expected, not_before = event, seq + 1, at
    return _state(last, parts)


#: A stored event as a store reads it: ``(seq, kind, at, payload)``.
Row = tuple[int, str, int, JSONObject]


def fold_rows(state: SessionState, rows: Iterable[Row]) -> SessionState:
    """``fold_more`` over rows rather than events: the same rules, the same
    errors, the same state. Making an ``Event`` of each row costs about as much
    as folding a goal round, so only rows whose step needs an event get one
    (and the last row, which the state keeps)."""
    last = state.last
    expected, not_before = _next_after(last)
    parts = _parts(state)
    steps, row_steps = _STEPS, _ROW_STEPS
    previous: Row | None = None
    for row in rows:
        seq, kind, at, payload = row
        if not (
            type(seq) is int and seq == expected and type(at) is int and at >= not_before
            and type(kind) is str and kind in steps
        ):
            check_envelope(last if previous is None else Event(*previous), Event(seq, kind, at, payload))
        try:
            row_step = row_steps.get(kind)
            if row_step is None:
                parts = steps[kind](parts, Event(seq, kind, at, payload))
            else:
                parts = row_step(parts, seq, at, payload)
        except PayloadError as exc:
            raise ReplayError(seq, "malformed-payload", exc.message) from exc
        previous, expected, not_before = row, seq + 1, at
    return _state(last if previous is None else Event(*previous), parts)


def fold_session(events: Iterable[Event]) -> SessionState:
    """The strict fold of a whole log."""
    return fold_more(SessionState(), events)
