"""The session log: the event envelope, the kinds, and the turn fold.

Theory of operation
-------------------
A session is an append-only list of events. Each event has a ``seq`` (1, 2, 3
… with no gap), a namespaced ``kind``, a caller-supplied time ``at`` in integer
milliseconds that never goes backwards, and a JSON-shaped ``payload``. The log
is the only durable truth: every other state is a fold of it.

Everything a session does happens inside a turn. ``turn/start`` opens turn
``n`` (numbered 1, 2, 3 …) and ``turn/end`` closes the same turn; whether a
turn is open is derived from those two kinds only, never from a status field
elsewhere. A ``request/header`` records one model request (turn, step, and the
plan state it was derived with) and may only appear inside an open turn, with
steps numbered 1, 2, 3 … per turn (a retry of the same step repeats its
number).

An ``assistant/message`` may carry what the model call behind it cost
(``usage``, a ``ModelUsage``): its latency, as the runtime's model adapter
measured it around the call, and the tokens the server reported (prompt,
completion, cached). The kernel has no clock of its own; these are inputs like
``at`` (which the turn reducer takes as a number or as the driver's clock,
read once when a transition appends: ``step.At``).
The usage record is versioned (``version`` 1, ``USAGE_VERSION``; any other
is refused as ``unknown-version``) and optional, so a log written before it
existed reads as it always did: an assistant message without the key has
no usage.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence  # noqa: F401  # Mapping: resolves Event's annotations
from dataclasses import dataclass
from typing import Annotated, Literal

from .errors import PayloadError, ReplayError
from .payload import (  # noqa: F401  # JSON: resolves Event's annotations at run time
    JSON,
    MAX_SAFE_INTEGER,
    NONE_IS_ABSENT,
    Code,
    Count,
    JSONObject,
    NonEmpty,
    Positive,
    SafeInt,
    object_of,
    read_as,
)

__all__ = [
    "ASSISTANT_MESSAGE",
    "GOAL_CHANGE",
    "KNOWN_KINDS",
    "PLAN_ARTIFACT",
    "PLAN_MODE",
    "REQUEST_HEADER",
    "TOOL_CALL",
    "TOOL_REFUSED",
    "TOOL_RESULT",
    "TOOL_WARNING",
    "TURN_END",
    "TURN_START",
    "USAGE_VERSION",
    "USER_MESSAGE",
    "AssistantPayload",
    "Draft",
    "Event",
    "GoalSource",
    "Message",
    "MessageSource",
    "ModelUsage",
    "PluginSource",
    "RequestHeader",
    "TurnPayload",
    "TurnState",
    "apply_request_header",
    "apply_turn_event",
    "assistant_message",
    "check_envelope",
    "check_next",
    "close_turn",
    "fold_turns",
    "last_seq",
    "number_drafts",
    "open_turn",
    "read_assistant_message",
    "read_message",
    "read_request_header",
    "turn_end",
    "turn_start",
    "user_message",
]

TURN_START = "turn/start"
TURN_END = "turn/end"
REQUEST_HEADER = "request/header"
USER_MESSAGE = "user/message"
ASSISTANT_MESSAGE = "assistant/message"
PLAN_MODE = "plan/mode"
PLAN_ARTIFACT = "plan/artifact"
GOAL_CHANGE = "goal/change"
TOOL_CALL = "tool/call"
TOOL_RESULT = "tool/result"
TOOL_REFUSED = "tool/refused"
TOOL_WARNING = "tool/warning"

#: Every kind a strict session fold accepts; anything else is ``unknown-kind``.
KNOWN_KINDS: frozenset[str] = frozenset(
    {
        TURN_START,
        TURN_END,
        REQUEST_HEADER,
        USER_MESSAGE,
        ASSISTANT_MESSAGE,
        PLAN_MODE,
        PLAN_ARTIFACT,
        GOAL_CHANGE,
        TOOL_CALL,
        TOOL_RESULT,
        TOOL_REFUSED,
        TOOL_WARNING,
    }
)


@dataclass(frozen=True, slots=True)
class Event:
    """One record of the session log. ``payload`` is never mutated."""

    seq: int
    kind: str
    at: int
    payload: JSONObject


@dataclass(frozen=True, slots=True)
class Draft:
    """An event before the log numbers it: what a decision returns. The
    session log gives it its ``seq`` (the next of the log) and its time when
    it appends it (``number_drafts``); nothing else numbers events.
    ``payload`` is the event's JSON payload."""

    kind: str
    payload: JSONObject

    def numbered(self, seq: int, at: int) -> Event:
        """This draft as the event at ``seq``, stamped ``at``."""
        return Event(seq, self.kind, at, self.payload)


def number_drafts(drafts: Iterable[Draft], after: int, at: int) -> tuple[Event, ...]:
    """``drafts`` as the events that follow seq ``after`` (``after + 1``,
    ``after + 2`` …), all stamped ``at``: how the log numbers what it appends."""
    return tuple(draft.numbered(after + i, at) for i, draft in enumerate(drafts, 1))


def last_seq(events: Sequence[Event]) -> int:
    """The seq of the last event, 0 for an empty log."""
    return events[-1].seq if events else 0


def check_envelope(prev: Event | None, event: Event) -> None:
    """Raise ``ReplayError`` unless ``event`` may follow ``prev``.

    Rules: ``seq-gap`` (seq must be prev + 1, starting at 1),
    ``malformed-payload`` (``at`` must be an integer from 0 to
    ``MAX_SAFE_INTEGER``), ``time-regressed`` (``at`` never below the
    previous one), ``unknown-kind``.
    """
    if prev is None:
        check_next(0, 0, event.seq, event.kind, event.at)
    else:
        check_next(prev.seq, prev.at, event.seq, event.kind, event.at)


def check_next(last: int, last_at: int, seq: object, kind: object, at: object) -> None:
    """``check_envelope`` for an event given by its parts, after an event
    ``last`` at ``last_at`` (``0, 0`` for the first event of a log)."""
    if (
        type(seq) is int and seq == last + 1 and type(at) is int and 0 <= at <= MAX_SAFE_INTEGER and at >= last_at
        and type(kind) is str and kind in KNOWN_KINDS
    ):
        return
    expected = last + 1
    if isinstance(seq, bool) or not isinstance(seq, int) or seq != expected:
        raise ReplayError(
            seq if isinstance(seq, int) else expected, "seq-gap", f"expected seq {expected}, found {seq!r}"
        )
    if isinstance(at, bool) or not isinstance(at, int) or at < 0:
        raise ReplayError(seq, "malformed-payload", f"'at' must be a non-negative integer, got {at!r}")
    if at > MAX_SAFE_INTEGER:
        raise ReplayError(
            seq, "malformed-payload", f"'at' must be <= {MAX_SAFE_INTEGER} (the largest safe integer), got {at}"
        )
    if at < last_at:
        raise ReplayError(seq, "time-regressed", f"at={at} is earlier than the previous event's at={last_at}")
    if not isinstance(kind, str) or kind not in KNOWN_KINDS:
        raise ReplayError(seq, "unknown-kind", f"unknown event kind {kind!r}")


# --------------------------------------------------------------------------
# Turns and request headers


@dataclass(frozen=True, slots=True)
class TurnPayload:
    """The payload of ``turn/start`` and ``turn/end``: the turn's number."""

    turn: Positive


@dataclass(frozen=True, slots=True)
class RequestHeader:
    """The payload of ``request/header``: one model request, and the plan
    state it was derived with."""

    turn: Positive
    step: Positive
    plan_mode: bool


@dataclass(frozen=True, slots=True)
class TurnState:
    """The turn fold: the last turn number, whether it is open, its last step,
    and the last request header recorded anywhere in the log."""

    turn: int = 0
    open: bool = False
    step: int = 0
    last_header: RequestHeader | None = None


def read_request_header(payload: JSONObject) -> RequestHeader:
    """Read a ``request/header`` payload; raise ``PayloadError`` on a bad shape."""
    header: RequestHeader = read_as(RequestHeader, payload)
    return header


def open_turn(state: TurnState, seq: int, body: TurnPayload) -> TurnState:
    """The turn state after a ``turn/start`` (already read) at ``seq``.

    Raises ``ReplayError`` (``transition-not-allowed``) when a turn is still
    open or the number is not the next one."""
    if state.open:
        raise ReplayError(seq, "transition-not-allowed", f"turn {state.turn} is still open")
    if body.turn != state.turn + 1:
        raise ReplayError(seq, "transition-not-allowed", f"expected turn {state.turn + 1}, found {body.turn}")
    return TurnState(turn=body.turn, open=True, step=0, last_header=state.last_header)


def close_turn(state: TurnState, seq: int, body: TurnPayload) -> TurnState:
    """The turn state after a ``turn/end`` (already read) at ``seq``.

    Raises ``ReplayError`` (``transition-not-allowed``) unless it closes the
    open turn."""
    if not state.open or body.turn != state.turn:
        raise ReplayError(seq, "transition-not-allowed", f"turn {body.turn} is not open")
    return TurnState(turn=state.turn, open=False, step=state.step, last_header=state.last_header)


def apply_request_header(state: TurnState, header: RequestHeader, seq: int) -> TurnState:
    """The turn state after a ``request/header`` (already read) at ``seq``.

    Raises ``ReplayError`` (``transition-not-allowed``) for a header outside
    its open turn or with a step that goes backwards or skips.
    """
    if not state.open or header.turn != state.turn:
        raise ReplayError(
            seq, "transition-not-allowed", f"request header for turn {header.turn} outside an open turn"
        )
    if header.step not in (state.step, state.step + 1):
        raise ReplayError(
            seq, "transition-not-allowed", f"request step {header.step} does not follow step {state.step}"
        )
    return TurnState(turn=state.turn, open=True, step=header.step, last_header=header)


def apply_turn_event(state: TurnState, event: Event) -> TurnState:
    """Fold one event into the turn state (events of other kinds pass through).

    Raises ``ReplayError``: ``malformed-payload``, or
    ``transition-not-allowed`` for a turn opened twice, closed while not open,
    numbered out of order, or a request header outside its open turn or with a
    step that goes backwards or skips.
    """
    kind = event.kind
    if kind not in (TURN_START, TURN_END, REQUEST_HEADER):
        return state
    try:
        if kind == REQUEST_HEADER:
            return apply_request_header(state, read_request_header(event.payload), event.seq)
        body: TurnPayload = read_as(TurnPayload, event.payload)
    except PayloadError as exc:
        raise ReplayError(event.seq, "malformed-payload", exc.message) from exc
    return open_turn(state, event.seq, body) if kind == TURN_START else close_turn(state, event.seq, body)


def fold_turns(events: Iterable[Event]) -> TurnState:
    """The turn state after ``events`` (turn kinds only; no envelope checks)."""
    state = TurnState()
    for event in events:
        state = apply_turn_event(state, event)
    return state


# --------------------------------------------------------------------------
# Messages


@dataclass(frozen=True, slots=True)
class PluginSource:
    """A message a plugin sent (for example the plan-mode notice)."""

    type: Literal["plugin"]
    plugin: NonEmpty


@dataclass(frozen=True, slots=True)
class GoalSource:
    """A goal continuation: round ``round`` of goal ``goal_id`` at
    ``revision`` (the goal fold judges the numbers)."""

    type: Literal["goal"]
    goal_id: NonEmpty
    revision: SafeInt
    round: SafeInt


#: Who sent a message other than a human or the model: a plugin or a goal round.
MessageSource = PluginSource | GoalSource


@dataclass(frozen=True, slots=True)
class Message:
    """The payload of ``user/message`` and ``assistant/message``: the text,
    and who sent it (``None``: a human, or the model)."""

    text: str
    source: PluginSource | GoalSource | None


def read_message(payload: JSONObject) -> Message:
    """Read a ``user/message`` payload; raise ``PayloadError`` on a bad shape."""
    message: Message = read_as(Message, payload)
    return message


#: The only version of an assistant message's ``usage`` this kernel reads and writes.
USAGE_VERSION: Literal[1] = 1


@dataclass(frozen=True, slots=True)
class ModelUsage:
    """What the model call behind an assistant message cost: ``latency_ms``,
    the call's duration as the model adapter measured it, and the tokens the
    server reported: ``prompt_tokens``, ``completion_tokens`` and
    ``cached_tokens`` (the part of the prompt the server had cached). A
    number nobody measured or reported is left out. ``version`` is 1."""

    version: Annotated[Literal[1], Code("unknown-version")]
    latency_ms: Annotated[Count | None, NONE_IS_ABSENT] = None
    prompt_tokens: Annotated[Count | None, NONE_IS_ABSENT] = None
    completion_tokens: Annotated[Count | None, NONE_IS_ABSENT] = None
    cached_tokens: Annotated[Count | None, NONE_IS_ABSENT] = None


@dataclass(frozen=True, slots=True)
class AssistantPayload:
    """The payload of ``assistant/message``: the model's text, who sent it
    (``None``: the model) and, when known, what the call cost (``usage``,
    left out when unknown)."""

    text: str
    source: PluginSource | GoalSource | None
    usage: Annotated[ModelUsage | None, NONE_IS_ABSENT] = None


def read_assistant_message(payload: JSONObject) -> AssistantPayload:
    """Read an ``assistant/message`` payload; raise ``PayloadError`` on a bad
    shape (``unknown-version`` for a usage record of another version)."""
    message: AssistantPayload = read_as(AssistantPayload, payload)
    return message


# --------------------------------------------------------------------------
# Builders: the drafts of the turn and message kinds, checked by their readers
# (the other kinds' builders live with their machines: ``plan.mode.plan_mode_set``,
# ``plan_events``, ``goal.ops``, ``tools.events``, ``decisions.decide_request_header``).


def _draft(kind: str, body: object) -> Draft:
    """The draft of ``kind`` carrying ``body``, once its kind's reader takes
    it; ``PayloadError`` (the caller's fault) otherwise."""
    payload = object_of(body)
    read_as(type(body), payload)
    return Draft(kind, payload)


def turn_start(turn: int) -> Draft:
    """The ``turn/start`` that opens turn ``turn`` (1, 2, 3 …). Raises
    ``PayloadError`` for a turn that is not a positive integer."""
    return _draft(TURN_START, TurnPayload(turn))


def turn_end(turn: int) -> Draft:
    """The ``turn/end`` that closes turn ``turn``. Raises ``PayloadError`` for
    a turn that is not a positive integer."""
    return _draft(TURN_END, TurnPayload(turn))


def user_message(text: str, source: PluginSource | GoalSource | None = None) -> Draft:
    """A ``user/message`` from a human (no source, the default), a plugin
    notice or a goal round. Raises ``PayloadError`` for text that is not a
    string or a source its type refuses."""
    return _draft(USER_MESSAGE, Message(text, source))


def assistant_message(text: str, usage: ModelUsage | None = None) -> Draft:
    """An ``assistant/message``: the model's reply text and, when known, what
    the call cost. Raises ``PayloadError`` for text that is not a string or
    a usage its type refuses (a negative count)."""
    return _draft(ASSISTANT_MESSAGE, AssistantPayload(text, None, usage))
