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

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from ..errors import PayloadError, ReplayError, is_kebab_case
from ..log import TOOL_CALL, TOOL_REFUSED, TOOL_RESULT, TOOL_WARNING, Event
from ..payload import JSON, JSONObject, check_keys, read_bool, read_str
from ..phase import RUNTIME_PHASES, RuntimePhase
from .gate import Allowed, Refused, Verdict
from .spec import ToolCall, freeze_json, is_json, thaw_json

__all__ = [
    "TOOL_KINDS",
    "ToolNotice",
    "ToolResult",
    "check_tool_event",
    "read_tool_call",
    "read_tool_notice",
    "read_tool_result",
    "tool_call_payload",
    "tool_notice_payload",
    "tool_result_payload",
    "verdict_events",
]

TOOL_KINDS: frozenset[str] = frozenset({TOOL_CALL, TOOL_RESULT, TOOL_REFUSED, TOOL_WARNING})

_CALL_KEYS = frozenset({"call_id", "tool", "arguments"})
_RESULT_KEYS = frozenset({"call_id", "tool", "ok", "output"})
_NOTICE_KEYS = frozenset({"call_id", "tool", "code", "reason", "phase"})
_NOTICE_OPTIONAL = frozenset({"hint"})


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a call that ran returned: ``ok`` false for a tool's own failure."""

    call_id: str
    tool: str
    ok: bool
    output: str


@dataclass(frozen=True, slots=True)
class ToolNotice:
    """The body of ``tool/refused`` and ``tool/warning``: why the gate
    refused (or, in advisory mode, would have refused) a call."""

    call_id: str
    tool: str
    code: str
    reason: str
    phase: RuntimePhase
    hint: str | None = None


# --------------------------------------------------------------------------
# Readers


def read_tool_call(payload: JSONObject) -> ToolCall:
    """Read a ``tool/call`` payload; raise ``PayloadError`` on a bad shape."""
    body = check_keys(payload, _CALL_KEYS, where="tool/call payload")
    call_id = read_str(body, "call_id", non_empty=True)
    tool = read_str(body, "tool")
    arguments = body["arguments"]
    if not is_json(arguments):
        raise PayloadError("'arguments' must be a JSON value")
    return ToolCall(call_id=call_id, tool=tool, arguments=freeze_json(arguments))


def read_tool_result(payload: JSONObject) -> ToolResult:
    """Read a ``tool/result`` payload; raise ``PayloadError`` on a bad shape."""
    body = check_keys(payload, _RESULT_KEYS, where="tool/result payload")
    return ToolResult(
        call_id=read_str(body, "call_id", non_empty=True),
        tool=read_str(body, "tool"),
        ok=read_bool(body, "ok"),
        output=read_str(body, "output"),
    )


def read_tool_notice(payload: JSONObject, kind: str = TOOL_REFUSED) -> ToolNotice:
    """Read a ``tool/refused`` or ``tool/warning`` payload; raise
    ``PayloadError`` on a bad shape, a code that is not kebab-case, an empty
    reason or an unknown phase."""
    body = check_keys(payload, _NOTICE_KEYS, _NOTICE_OPTIONAL, where=f"{kind} payload")
    code = read_str(body, "code")
    if not is_kebab_case(code):
        raise PayloadError(f"'code' must be kebab-case, got {code!r}")
    phase = read_str(body, "phase")
    if phase not in RUNTIME_PHASES:
        raise PayloadError(f"'phase' must be one of {list(RUNTIME_PHASES)}, got {phase!r}")
    hint = None
    if "hint" in body:
        hint = read_str(body, "hint")
    return ToolNotice(
        call_id=read_str(body, "call_id", non_empty=True),
        tool=read_str(body, "tool"),
        code=code,
        reason=read_str(body, "reason", non_empty=True),
        phase=phase,
        hint=hint,
    )


# --------------------------------------------------------------------------
# Builders


def tool_call_payload(call: ToolCall) -> JSONObject:
    """The ``tool/call`` payload for ``call``; ``PayloadError`` when the call
    has no id or its arguments are not JSON."""
    if not is_json(call.arguments):
        raise PayloadError("'arguments' must be a JSON value")
    payload: dict[str, JSON] = {
        "call_id": call.call_id,
        "tool": call.tool,
        "arguments": thaw_json(call.arguments),
    }
    read_tool_call(payload)
    return payload


def tool_result_payload(call_id: str, tool: str, *, ok: bool, output: str) -> JSONObject:
    """The ``tool/result`` payload; ``PayloadError`` on a bad field."""
    payload: dict[str, JSON] = {"call_id": call_id, "tool": tool, "ok": ok, "output": output}
    read_tool_result(payload)
    return payload


def tool_notice_payload(call_id: str, refused: Refused, kind: str = TOOL_REFUSED) -> JSONObject:
    """The ``tool/refused`` (or ``tool/warning``) payload for ``refused``."""
    payload: dict[str, JSON] = {
        "call_id": call_id,
        "tool": refused.tool,
        "code": refused.code,
        "reason": refused.reason,
        "phase": refused.phase,
    }
    if refused.hint:
        payload["hint"] = refused.hint
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

def _read_refused(payload: JSONObject) -> ToolNotice:
    return read_tool_notice(payload, TOOL_REFUSED)


def _read_warning(payload: JSONObject) -> ToolNotice:
    return read_tool_notice(payload, TOOL_WARNING)


_READERS: Mapping[str, Callable[[JSONObject], object]] = MappingProxyType(
    {
        TOOL_CALL: read_tool_call,
        TOOL_RESULT: read_tool_result,
        TOOL_REFUSED: _read_refused,
        TOOL_WARNING: _read_warning,
    }
)


def check_tool_event(event: Event, *, turn_open: bool) -> None:
    """Check one event for the strict session fold (other kinds pass).

    Raises ``PayloadError`` for a malformed tool payload (the fold reports it
    as ``malformed-payload``) and ``ReplayError`` rule ``tool-outside-turn``
    for a tool event while no turn is open.
    """
    reader = _READERS.get(event.kind)
    if reader is None:
        return
    if not isinstance(event.payload, Mapping):
        raise PayloadError(f"{event.kind} payload must be an object")
    reader(event.payload)
    if not turn_open:
        raise ReplayError(event.seq, "tool-outside-turn", f"{event.kind} while no turn is open")
