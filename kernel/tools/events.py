"""Tool events in the session log: payload shapes, builders, strict readers.

Theory of operation
-------------------
Every call the model makes is recorded before anything runs: ``tool/call``
``{call_id, tool, arguments}`` holds the call exactly as the model sent it
(``tool`` may be a name no tool has; ``arguments`` any JSON value, since a
malformed call is recorded and then refused). The gate's verdict decides what
follows (``verdict_events``):

- ``Refused``: ``tool/refused`` ``{call_id, tool, code, reason, phase}``
  (plus an optional ``hint``); nothing runs.
- ``Allowed`` with a warning (advisory mode): ``tool/warning`` with the same
  shape, then the call runs.
- ``Allowed``: the call runs.

A call that ran ends with ``tool/result`` ``{call_id, tool, ok, output}``.
Tool events happen inside a step, so only inside an open turn.

Builders check what they build with the same readers the fold uses, so a
builder cannot produce a payload the strict fold would reject; they raise
``PayloadError`` (the caller's fault). ``check_tool_event`` is what the
session fold runs for every event: a malformed tool event, or one outside an
open turn, is a ``ReplayError`` at its seq.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Annotated, cast

from ..errors import PayloadError, ReplayError
from ..log import TOOL_CALL, TOOL_REFUSED, TOOL_RESULT, TOOL_WARNING, Event
from ..payload import JSON, NONE_IS_ABSENT, JSONObject, Kebab, NonBlank, Opaque, object_of, read_as
from ..phase import RuntimePhase
from .gate import Allowed, Refused, Verdict
from .spec import ToolCall, freeze_json, is_json

__all__ = [
    "TOOL_KINDS",
    "TOOL_PAYLOADS",
    "ToolCallPayload",
    "ToolNotice",
    "ToolResult",
    "check_tool_event",
    "check_tool_turn",
    "read_tool_call",
    "read_tool_notice",
    "read_tool_result",
    "tool_call_payload",
    "tool_notice_payload",
    "tool_result_payload",
    "verdict_events",
]

TOOL_KINDS: frozenset[str] = frozenset({TOOL_CALL, TOOL_RESULT, TOOL_REFUSED, TOOL_WARNING})


@dataclass(frozen=True, slots=True)
class ToolCallPayload:
    """The payload of ``tool/call``: the call exactly as the model sent it
    (``tool`` may name no tool; ``arguments`` is any JSON value)."""

    call_id: NonBlank
    tool: str
    arguments: Annotated[object, Opaque(is_json, freeze_json)]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The payload of ``tool/result``: what a call that ran returned
    (``ok`` false for a tool's own failure)."""

    call_id: NonBlank
    tool: str
    ok: bool
    output: str


@dataclass(frozen=True, slots=True)
class ToolNotice:
    """The payload of ``tool/refused`` and ``tool/warning``: why the gate
    refused (or, in advisory mode, would have refused) a call, and what the
    model may do instead (``hint``, left out when there is none)."""

    call_id: NonBlank
    tool: str
    code: Kebab
    reason: NonBlank
    phase: RuntimePhase
    hint: Annotated[str | None, NONE_IS_ABSENT] = None


# --------------------------------------------------------------------------
# Readers


def read_tool_call(payload: JSONObject) -> ToolCall:
    """Read a ``tool/call`` payload; raise ``PayloadError`` on a bad shape."""
    body: ToolCallPayload = read_as(ToolCallPayload, payload)
    return ToolCall(call_id=body.call_id, tool=body.tool, arguments=cast(JSON, body.arguments))


def read_tool_result(payload: JSONObject) -> ToolResult:
    """Read a ``tool/result`` payload; raise ``PayloadError`` on a bad shape."""
    result: ToolResult = read_as(ToolResult, payload)
    return result


def read_tool_notice(payload: JSONObject, kind: str = TOOL_REFUSED) -> ToolNotice:
    """Read a ``tool/refused`` or ``tool/warning`` payload; raise
    ``PayloadError`` on a bad shape, a code that is not kebab-case, an empty
    reason or an unknown phase."""
    del kind  # both kinds have the one shape
    notice: ToolNotice = read_as(ToolNotice, payload)
    return notice


# --------------------------------------------------------------------------
# Builders


def tool_call_payload(call: ToolCall) -> JSONObject:
    """The ``tool/call`` payload for ``call``; ``PayloadError`` when the call
    has no id or its arguments are not JSON."""
    if not is_json(call.arguments):
        raise PayloadError("payload.arguments: must be a JSON value")
    payload = object_of(ToolCallPayload(call.call_id, call.tool, call.arguments))
    read_tool_call(payload)
    return payload


def tool_result_payload(call_id: str, tool: str, *, ok: bool, output: str) -> JSONObject:
    """The ``tool/result`` payload; ``PayloadError`` on a bad field."""
    payload = object_of(ToolResult(call_id, tool, ok, output))
    read_tool_result(payload)
    return payload


def tool_notice_payload(call_id: str, refused: Refused, kind: str = TOOL_REFUSED) -> JSONObject:
    """The ``tool/refused`` (or ``tool/warning``) payload for ``refused``."""
    notice = ToolNotice(call_id, refused.tool, refused.code, refused.reason, refused.phase, refused.hint or None)
    payload = object_of(notice)
    read_tool_notice(payload, kind)
    return payload


def verdict_events(call: ToolCall, verdict: Verdict) -> tuple[tuple[str, JSONObject], ...]:
    """The (kind, payload) pairs to append, in order, when the gate answered
    ``verdict`` for ``call``; the ``tool/result`` of a call that runs is
    appended later by whoever ran it. Raises ``PayloadError`` for a call
    that cannot be recorded (no id, non-JSON arguments)."""
    recorded = (TOOL_CALL, tool_call_payload(call))
    if isinstance(verdict, Refused):
        return (recorded, (TOOL_REFUSED, tool_notice_payload(call.call_id, verdict)))
    if isinstance(verdict, Allowed) and verdict.warning is not None:
        warning = tool_notice_payload(call.call_id, verdict.warning, TOOL_WARNING)
        return (recorded, (TOOL_WARNING, warning))
    return (recorded,)


# --------------------------------------------------------------------------
# The fold's check

#: The payload type of each tool kind.
TOOL_PAYLOADS: Mapping[str, type] = MappingProxyType(
    {TOOL_CALL: ToolCallPayload, TOOL_RESULT: ToolResult, TOOL_REFUSED: ToolNotice, TOOL_WARNING: ToolNotice}
)


def check_tool_turn(kind: str, seq: int, turn_open: bool) -> None:
    """Raise ``ReplayError`` rule ``tool-outside-turn`` for a tool event (its
    payload already read) while no turn is open."""
    if not turn_open:
        raise ReplayError(seq, "tool-outside-turn", f"{kind} while no turn is open")


def check_tool_event(event: Event, *, turn_open: bool) -> None:
    """Check one event for the strict session fold (other kinds pass).

    Raises ``PayloadError`` for a malformed tool payload (the fold reports it
    as ``malformed-payload``) and ``ReplayError`` rule ``tool-outside-turn``
    for a tool event while no turn is open.
    """
    payload_type = TOOL_PAYLOADS.get(event.kind)
    if payload_type is None:
        return
    read_as(payload_type, event.payload)
    check_tool_turn(event.kind, event.seq, turn_open)
