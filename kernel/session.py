"""The strict session fold: every machine folded together in one pass.

Theory of operation
-------------------
Each known kind has a payload type and a reducer (``KINDS``). Folding an
event checks its envelope (gapless seq, a time in range that never goes
backwards, a known kind: ``kernel.log.check_next``), reads its payload once
into the kind's type (``kernel.payload``; a bad shape is
``malformed-payload``, or the code a field declares), then runs the kind's
reducer, which runs every machine that reads the kind, in a fixed order: a
request header is checked against the recorded plan mode before the turn
machine takes it; a user message is a goal round when a goal sent it; an
assistant message tells the plan machine that a build-mode request was
answered; goal changes, plan artifacts and tool events go to their machines
(``kernel.goal.fold``, ``kernel.plan.status``, ``kernel.tools.events``). A
reducer raises a positioned ``ReplayError`` for a bad event; the fold stops
at the first one and reports the same position however often it is asked.

There is one fold, and everything runs it: ``fold_session`` folds a whole
log, ``fold_more`` continues from a stored state (an incremental open),
``apply_session_event`` folds one event (every decision proves its event with
it), and ``fold_rows`` folds ``(seq, kind, at, payload)`` rows as a store
reads them, where a payload may also be a value a store's decoder already
read into the kind's type (it is then not read again).

The fold is pure from the outside: it takes a ``SessionState`` and returns a
new one. Inside one call it accumulates into a working copy of the state's
parts, so a batch builds one ``SessionState`` at its end rather than one per
event; the current goal's round count is kept apart from its snapshot for the
same reason (rounds are most of a goal's events and change nothing else; see
``kernel.goal.fold.with_rounds``).

The session row kept by a store is ``project(state)``; an audit proves it
equals the projection of the fold of the log.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from operator import attrgetter
from types import MappingProxyType
from typing import Any

from .errors import ReplayError
from .goal.fold import GoalState, apply_goal_change, check_goal_round, with_rounds
from .goal.values import GoalChange
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
    AssistantPayload,
    Event,
    GoalSource,
    Message,
    RequestHeader,
    TurnPayload,
    TurnState,
    apply_request_header,
    check_next,
    close_turn,
    open_turn,
)
from .payload import Unreadable, maker, object_of, reader_of, shape_of
from .phase import AgentMode
from .plan.artifact import PlanState
from .plan.mode import PlanModePayload
from .plan.payload import PlanPayload, action_of
from .plan.status import apply_plan_action, mark_answered
from .record import field, record
from .tools.events import TOOL_PAYLOADS, check_tool_turn

__all__ = [
    "KINDS",
    "PAYLOAD_TYPES",
    "REDUCERS",
    "Kind",
    "Row",
    "SessionState",
    "apply_session_event",
    "fold_more",
    "fold_rows",
    "fold_session",
]



@record
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


class _Working:
    """The parts of a ``SessionState`` one fold call works on (never shared:
    made from the state a call starts from, and made into a new state at its
    end). ``rounds`` is the current goal's round count, which may be ahead of
    the goal snapshot's."""

    __slots__ = ("goal", "plan", "plan_mode", "rounds", "turns")

    def __init__(self, state: SessionState) -> None:
        self.turns = state.turns
        self.plan_mode = state.plan_mode
        self.goal = state.goal
        self.rounds = _rounds_of(state.goal)
        self.plan = state.plan

    def state(self, last: Event | None) -> SessionState:
        # Made without __init__ (kernel.payload.maker): an append folds its
        # events in one call, so this and the last event are made per append.
        made: SessionState = maker(SessionState)(
            last, self.turns, self.plan_mode, with_rounds(self.goal, self.rounds), self.plan
        )
        return made


def _rounds_of(goal: GoalState) -> int:
    return 0 if goal.current is None else goal.current.rounds_started


# --------------------------------------------------------------------------
# The reducers: what each kind does to the session


def _turn_start(work: _Working, seq: int, at: int, body: TurnPayload) -> None:
    work.turns = open_turn(work.turns, seq, body)


def _turn_end(work: _Working, seq: int, at: int, body: TurnPayload) -> None:
    work.turns = close_turn(work.turns, seq, body)


def _request_header(work: _Working, seq: int, at: int, header: RequestHeader) -> None:
    # Invariant of the turn-boundary flush: a request header records the plan
    # state the fold gives just before it. A log that says otherwise was torn.
    if header.plan_mode != work.plan_mode:
        raise ReplayError(
            seq,
            "header-mismatch",
            f"request header says plan_mode={header.plan_mode}, but the log before it says {work.plan_mode}",
        )
    work.turns = apply_request_header(work.turns, header, seq)


def _plan_mode(work: _Working, seq: int, at: int, body: PlanModePayload) -> None:
    work.plan_mode = body.active


def _user_message(work: _Working, seq: int, at: int, message: Message) -> None:
    # A goal continuation is a round of the current goal.
    source = message.source
    if type(source) is GoalSource:
        check_goal_round(work.goal.current, work.rounds, seq, source)
        work.rounds = source.round


def _assistant_message(work: _Working, seq: int, at: int, message: AssistantPayload) -> None:
    # An answered build-mode request has shown the model the plan's content.
    work.plan = mark_answered(work.plan, work.plan_mode)


def _goal_change(work: _Working, seq: int, at: int, change: GoalChange) -> None:
    work.goal = apply_goal_change(work.goal, seq, at, change, work.rounds)
    work.rounds = _rounds_of(work.goal)


def _plan_artifact(work: _Working, seq: int, at: int, body: PlanPayload) -> None:
    work.plan = apply_plan_action(work.plan, action_of(body), seq, at, work.plan_mode)


def _tool_event(kind: str) -> Callable[[_Working, int, int, object], None]:
    def reduce(work: _Working, seq: int, at: int, body: object) -> None:
        # Tool events happen inside a step, so only inside an open turn.
        check_tool_turn(kind, seq, work.turns.open)

    reduce.__qualname__ = reduce.__name__ = f"_tool_event_{kind.rsplit('/', 1)[1]}"
    return reduce


#: Per kind: its reader, its reducer, and the classes of a payload already
#: read (the record's, or each record member's of a union).
_STEPS: dict[str, tuple[Callable[[object], Any], Reducer, frozenset[type]]] = {}


def _steps() -> dict[str, tuple[Callable[[object], Any], Reducer, frozenset[type]]]:
    if not _STEPS:
        # Built aside and put in with one update, so that a thread folding at
        # the same time never sees some kinds and not others.
        built = {}
        for kind, entry in KINDS.items():
            shape: Any = shape_of(entry.payload)  # Any: a record member's cls is a class, not None
            classes = frozenset(member.cls for member in shape.members or (shape,) if member.kind == "record")
            built[kind] = (reader_of(entry.payload), entry.reduce, classes)
        _STEPS.update(built)
    return _STEPS


# --------------------------------------------------------------------------
# The fold

#: A stored event as a store reads it: ``(seq, kind, at, payload)``; the
#: payload is a JSON object, or a value already read into the kind's type.
Row = tuple[int, str, int, Any]


def fold_rows(state: SessionState, rows: Iterable[Row]) -> SessionState:
    """Continue a strict fold from ``state`` over ``rows``; raise
    ``ReplayError`` at the first bad one. A row's payload is read into its
    kind's type unless it already is a value of that type."""
    work = _Working(state)
    last = state.last
    last_seq, last_at = (0, 0) if last is None else (last.seq, last.at)
    steps = _steps()
    row: Row | None = None
    for row in rows:
        seq, kind, at, payload = row
        check_next(last_seq, last_at, seq, kind, at)
        read, reduce, classes = steps[kind]
        if type(payload) in classes:
            body = payload
        else:
            try:
                body = read(payload)
            except Unreadable as exc:
                error = exc.error()
                raise ReplayError(seq, error.code, error.message) from None
        reduce(work, seq, at, body)
        last_seq, last_at = seq, at
    if row is not None:
        seq, kind, at, payload = row
        last = maker(Event)(seq, kind, at, payload if isinstance(payload, Mapping) else object_of(payload))
    return work.state(last)


_ROW = attrgetter("seq", "kind", "at", "payload")


def fold_more(state: SessionState, events: Iterable[Event]) -> SessionState:
    """Continue a strict fold from ``state`` (for example a stored
    snapshot); raise ``ReplayError`` at the first bad event."""
    return fold_rows(state, map(_ROW, events))


def apply_session_event(state: SessionState, event: Event) -> SessionState:
    """Fold one event strictly; raise ``ReplayError`` at a bad one."""
    return fold_rows(state, (_ROW(event),))


def fold_session(events: Iterable[Event]) -> SessionState:
    """The strict fold of a whole log."""
    return fold_more(SessionState(), events)


Reducer = Callable[[_Working, int, int, Any], None]


@record
class Kind:
    """How one kind is folded: its payload's type and its reducer."""

    payload: object
    reduce: Reducer


#: Every known kind: the type its payload is read into, and its reducer.
KINDS: Mapping[str, Kind] = MappingProxyType(
    {
        TURN_START: Kind(TurnPayload, _turn_start),
        TURN_END: Kind(TurnPayload, _turn_end),
        REQUEST_HEADER: Kind(RequestHeader, _request_header),
        PLAN_MODE: Kind(PlanModePayload, _plan_mode),
        USER_MESSAGE: Kind(Message, _user_message),
        ASSISTANT_MESSAGE: Kind(AssistantPayload, _assistant_message),
        GOAL_CHANGE: Kind(GoalChange, _goal_change),
        PLAN_ARTIFACT: Kind(PlanPayload, _plan_artifact),
        **{kind: Kind(TOOL_PAYLOADS[kind], _tool_event(kind)) for kind in (TOOL_CALL, TOOL_RESULT, TOOL_REFUSED,
                                                                          TOOL_WARNING)},
    }
)
assert set(KINDS) == KNOWN_KINDS, "every known kind needs a payload type and a reducer"

#: The payload type of every kind (for the schema and the stores' decoders).
PAYLOAD_TYPES: Mapping[str, object] = MappingProxyType({kind: entry.payload for kind, entry in KINDS.items()})
#: Every reducer, in the order of ``KINDS``.
REDUCERS: tuple[Reducer, ...] = tuple(dict.fromkeys(entry.reduce for entry in KINDS.values()))
