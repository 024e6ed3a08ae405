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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .errors import PayloadError, ReplayError
from .payload import JSON, JSONObject, check_keys, read_bool, read_int  # JSON: resolves Event's annotations at run time

__all__ = [
    "ASSISTANT_MESSAGE",
    "GOAL_CHANGE",
    "HUMAN",
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
    "USER_MESSAGE",
    "Draft",
    "Event",
    "MessageSource",
    "RequestHeader",
    "TurnState",
    "apply_request_header",
    "apply_turn_event",
    "assistant_message",
    "check_envelope",
    "fold_turns",
    "last_seq",
    "next_event",
    "number_drafts",
    "read_message",
    "read_message_round",
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

    @classmethod
    def of(cls, event: Event) -> Draft:
        """The draft of a candidate ``event`` a decision built to check it
        against the fold."""
        return cls(event.kind, event.payload)

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


def next_event(events: Sequence[Event], kind: str, at: int, payload: JSONObject) -> Event:
    """The event that would follow ``events``, stamped with caller time ``at``."""
    return Event(seq=last_seq(events) + 1, kind=kind, at=at, payload=payload)


def check_envelope(prev: Event | None, event: Event) -> None:
    """Raise ``ReplayError`` unless ``event`` may follow ``prev``.

    Rules: ``seq-gap`` (seq must be prev + 1, starting at 1),
    ``time-regressed`` (``at`` must be a non-negative integer, never below the
    previous one), ``unknown-kind``.
    """
    expected = 1 if prev is None else prev.seq + 1
    if isinstance(event.seq, bool) or not isinstance(event.seq, int) or event.seq != expected:
        raise ReplayError(
            event.seq if isinstance(event.seq, int) else expected,
            "seq-gap",
            f"expected seq {expected}, found {event.seq!r}",
        )
    if isinstance(event.at, bool) or not isinstance(event.at, int) or event.at < 0:
        raise ReplayError(event.seq, "malformed-payload", f"'at' must be a non-negative integer, got {event.at!r}")
    if prev is not None and event.at < prev.at:
        raise ReplayError(
            event.seq, "time-regressed", f"at={event.at} is earlier than the previous event's at={prev.at}"
        )
    if not isinstance(event.kind, str) or event.kind not in KNOWN_KINDS:
        raise ReplayError(event.seq, "unknown-kind", f"unknown event kind {event.kind!r}")


# --------------------------------------------------------------------------
# Turns and request headers


@dataclass(frozen=True, slots=True)
class RequestHeader:
    """What one model request was derived with."""

    turn: int
    step: int
    plan_mode: bool


@dataclass(frozen=True, slots=True)
class TurnState:
    """The turn fold: the last turn number, whether it is open, its last step,
    and the last request header recorded anywhere in the log."""

    turn: int = 0
    open: bool = False
    step: int = 0
    last_header: RequestHeader | None = None


_TURN_KEYS = frozenset({"turn"})
_HEADER_KEYS = frozenset({"turn", "step", "plan_mode"})


def read_request_header(payload: JSONObject) -> RequestHeader:
    """Read a ``request/header`` payload; raise ``PayloadError`` on a bad shape."""
    body = check_keys(payload, _HEADER_KEYS, where="request/header payload")
    return RequestHeader(
        turn=read_int(body, "turn", minimum=1),
        step=read_int(body, "step", minimum=1),
        plan_mode=read_bool(body, "plan_mode"),
    )


def _read_turn(payload: JSONObject, kind: str) -> int:
    return read_int(check_keys(payload, _TURN_KEYS, where=f"{kind} payload"), "turn", minimum=1)


def apply_turn_event(state: TurnState, event: Event) -> TurnState:
    """Fold one event into the turn state (events of other kinds pass through).

    Raises ``ReplayError``: ``malformed-payload``, or
    ``transition-not-allowed`` for a turn opened twice, closed while not open,
    numbered out of order, or a request header outside its open turn or with a
    step that goes backwards or skips.
    """
    try:
        if event.kind == TURN_START:
            turn = _read_turn(event.payload, event.kind)
            if state.open:
                raise ReplayError(event.seq, "transition-not-allowed", f"turn {state.turn} is still open")
            if turn != state.turn + 1:
                raise ReplayError(
                    event.seq, "transition-not-allowed", f"expected turn {state.turn + 1}, found {turn}"
                )
            return TurnState(turn=turn, open=True, step=0, last_header=state.last_header)
        if event.kind == TURN_END:
            turn = _read_turn(event.payload, event.kind)
            if not state.open or turn != state.turn:
                raise ReplayError(event.seq, "transition-not-allowed", f"turn {turn} is not open")
            return TurnState(turn=state.turn, open=False, step=state.step, last_header=state.last_header)
        if event.kind == REQUEST_HEADER:
            return apply_request_header(state, read_request_header(event.payload), event.seq)
    except PayloadError as exc:
        raise ReplayError(event.seq, "malformed-payload", exc.message) from exc
    return state


def apply_request_header(state: TurnState, header: RequestHeader, seq: int) -> TurnState:
    """The turn state after a ``request/header`` (already read) at ``seq``.

    Raises ``ReplayError`` (``transition-not-allowed``) for a header outside
    its open turn or with a step that goes backwards or skips.
    """
    if not state.open or header.turn != state.turn:
        raise ReplayError(
            seq, "transition-not-allowed", f"request header for turn {header.turn} outside an open turn"
        )
    if header.step not in (state.step, state.step + 1) or header.step < 1:
        raise ReplayError(
            seq, "transition-not-allowed", f"request step {header.step} does not follow step {state.step}"
        )
    return TurnState(turn=state.turn, open=True, step=header.step, last_header=header)


def fold_turns(events: Iterable[Event]) -> TurnState:
    """The turn state after ``events`` (turn kinds only; no envelope checks)."""
    state = TurnState()
    for event in events:
        state = apply_turn_event(state, event)
    return state


# --------------------------------------------------------------------------
# Messages

_MESSAGE_KEYS = frozenset({"text", "source"})
_PLUGIN_SOURCE_KEYS = frozenset({"type", "plugin"})
_GOAL_SOURCE_KEYS = frozenset({"type", "goal_id", "revision", "round"})


@dataclass(frozen=True, slots=True)
class MessageSource:
    """Who sent a ``user/message``: a human (``kind == "human"``), a plugin
    notice, or a goal continuation attributed to ``goal_id`` at ``revision``
    as round ``round``."""

    kind: str
    plugin: str | None = None
    goal_id: str | None = None
    revision: int | None = None
    round: int | None = None


HUMAN = MessageSource("human")


def read_message(payload: JSONObject) -> tuple[str, MessageSource]:
    """Read a ``user/message`` or ``assistant/message`` payload:
    ``{text: str, source: null | {type: "plugin", plugin} |
    {type: "goal", goal_id, revision, round}}``."""
    body = check_keys(payload, _MESSAGE_KEYS, where="message payload")
    text = body["text"]
    if not isinstance(text, str):
        raise PayloadError("'text' must be a string")
    source = body["source"]
    if source is None:
        return text, HUMAN
    if not isinstance(source, Mapping):
        raise PayloadError("'source' must be null or an object")
    kind = source.get("type")
    if kind == "plugin":
        src = check_keys(source, _PLUGIN_SOURCE_KEYS, where="plugin source")
        plugin = src["plugin"]
        if not isinstance(plugin, str) or not plugin:
            raise PayloadError("'plugin' must be a non-empty string")
        return text, MessageSource("plugin", plugin=plugin)
    if kind == "goal":
        src = check_keys(source, _GOAL_SOURCE_KEYS, where="goal source")
        goal_id = src["goal_id"]
        if not isinstance(goal_id, str) or not goal_id:
            raise PayloadError("'goal_id' must be a non-empty string")
        return text, MessageSource(
            "goal",
            goal_id=goal_id,
            revision=read_int(src, "revision"),
            round=read_int(src, "round"),
        )
    raise PayloadError(f"unknown message source type {kind!r}")


def read_message_round(payload: JSONObject) -> tuple[str, int, int] | None:
    """Check a message payload exactly as ``read_message`` does (the same
    ``PayloadError`` for the same bad shape) and return its goal attribution
    ``(goal_id, revision, round)``, or ``None`` for a human or plugin message.

    Folds call this for every message, so the common shapes (plain dicts of
    exact types) are checked here directly; anything else is left to
    ``read_message``, which stays the one definition of the shape.
    """
    if type(payload) is dict and payload.keys() == _MESSAGE_KEYS and type(payload["text"]) is str:
        source = payload["source"]
        if source is None:
            return None
        if type(source) is dict and source.get("type") == "goal" and source.keys() == _GOAL_SOURCE_KEYS:
            goal_id, revision, round_ = source["goal_id"], source["revision"], source["round"]
            if type(goal_id) is str and goal_id and type(revision) is int and type(round_) is int:
                return goal_id, revision, round_
    _, found = read_message(payload)
    if found.kind != "goal" or found.goal_id is None or found.revision is None:
        return None
    return found.goal_id, found.revision, found.round if found.round is not None else 0


# --------------------------------------------------------------------------
# Builders: the drafts of the turn and message kinds, checked by their readers
# (the other kinds' builders live with their machines: ``plan.choice_events``,
# ``plan.events``, ``goal.ops``, ``tools.events``, ``plan.derive_request_header``).


def turn_start(turn: int) -> Draft:
    """The ``turn/start`` that opens turn ``turn`` (1, 2, 3 …). Raises
    ``PayloadError`` for a turn that is not a positive integer."""
    payload: JSONObject = {"turn": turn}
    _read_turn(payload, TURN_START)
    return Draft(TURN_START, payload)


def turn_end(turn: int) -> Draft:
    """The ``turn/end`` that closes turn ``turn``. Raises ``PayloadError`` for
    a turn that is not a positive integer."""
    payload: JSONObject = {"turn": turn}
    _read_turn(payload, TURN_END)
    return Draft(TURN_END, payload)


def _source_payload(source: MessageSource) -> JSON:
    if source.kind == "human":
        return None
    if source.kind == "plugin":
        return {"type": "plugin", "plugin": source.plugin}
    return {"type": "goal", "goal_id": source.goal_id, "revision": source.revision, "round": source.round}


def user_message(text: str, source: MessageSource = HUMAN) -> Draft:
    """A ``user/message`` from a human (the default), a plugin notice
    (``MessageSource("plugin", plugin=...)``) or a goal round. Raises
    ``PayloadError`` for text that is not a string or an incomplete source."""
    payload: JSONObject = {"text": text, "source": _source_payload(source)}
    read_message(payload)
    return Draft(USER_MESSAGE, payload)


def assistant_message(text: str) -> Draft:
    """An ``assistant/message``: the model's reply text. Raises
    ``PayloadError`` for text that is not a string."""
    payload: JSONObject = {"text": text, "source": None}
    read_message(payload)
    return Draft(ASSISTANT_MESSAGE, payload)
