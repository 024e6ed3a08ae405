"""The wire types of every event payload, and the JSON Schema made from them.

Theory of operation
-------------------
The kernel reads payloads with strict hand-written readers (exact key sets,
exact types, ``true`` is not an integer). This module states the same
contract as msgspec ``Struct`` types, so that other languages get it as a
JSON Schema (``specs/events.schema.json``) and Python code can decode into
typed values; ``tests/test_event_schema.py`` checks that the types and the
readers accept and reject the same payloads.

Where a reader checks more than a type, the type carries a constraint: a
``minimum``, a ``minLength``, or a regular expression for text that must be
non-blank, trimmed or kebab-case. The expressions list the whitespace that
``str.strip`` removes and avoid ``$``, so they mean the same in Python and in
ECMA-262 (JSON Schema's dialect). Variants are tagged unions on the field
the kernel dispatches on: ``type`` of a message source, ``operation`` of a
``goal/change``, ``phase`` of a goal snapshot (``blocked_reason`` is an
object exactly when blocked), ``action`` of a ``plan/artifact``. An event
line ``{seq, kind, at, payload}`` is a tagged union on ``kind``.
"""

from __future__ import annotations

import functools
import json
import operator
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

from planfold.kernel import log
from planfold.kernel.phase import RuntimePhase
from planfold.kernel.plan.spec import TodoStatus

__all__ = [
    "EVENT_TYPES",
    "PAYLOAD_TYPES",
    "WHITESPACE",
    "EventLine",
    "decode_typed",
    "event_schema",
    "schema_text",
]

#: Every character ``str.isspace`` accepts (what ``str.strip()`` removes).
WHITESPACE: str = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
_WS = "".join(f"\\u{ord(ch):04x}" for ch in WHITESPACE)
#: Contains a character that is not whitespace (``read_str(non_empty=True)``).
NON_BLANK = f"[^{_WS}]"
#: Non-empty, and starts and ends with a non-whitespace character.
TRIMMED = f"^[^{_WS}](?![\\s\\S]*[{_WS}]$)"
#: ``kernel.errors.KEBAB_CASE``, anchored at the true end of the text.
KEBAB = r"^[a-z][a-z0-9]*(-[a-z0-9]+)*(?![\s\S])"

Count = Annotated[int, Meta(ge=0)]
Positive = Annotated[int, Meta(ge=1)]
Time = Annotated[int, Meta(ge=0, description="integer milliseconds")]
Id = Annotated[str, Meta(min_length=1)]
NonBlank = Annotated[str, Meta(pattern=NON_BLANK)]
Trimmed = Annotated[str, Meta(pattern=TRIMMED)]
Kebab = Annotated[str, Meta(pattern=KEBAB)]


class _Payload(Struct, forbid_unknown_fields=True):
    """Base: exact key sets."""


def _union(*types: Any) -> Any:
    """``A | B | …`` of types only known at import time."""
    return functools.reduce(operator.or_, types)


# --------------------------------------------------------------------------
# turns, requests, messages, plan mode


class TurnPayload(_Payload):
    """``turn/start`` and ``turn/end``: the turn number."""

    turn: Positive


class RequestHeaderPayload(_Payload):
    """``request/header``: one model request and the plan state it was derived with."""

    turn: Positive
    step: Positive
    plan_mode: bool


class PluginSource(_Payload, tag_field="type", tag="plugin"):
    """A message from a plugin (for example the plan-mode notice)."""

    plugin: Id


class GoalSource(_Payload, tag_field="type", tag="goal"):
    """A goal continuation: a round of ``goal_id`` at ``revision``."""

    goal_id: Id
    revision: int
    round: int


class MessagePayload(_Payload):
    """``user/message`` and ``assistant/message``; ``source`` null means a human."""

    text: str
    source: PluginSource | GoalSource | None


class PlanModePayload(_Payload):
    """``plan/mode``: the recorded plan-mode state."""

    active: bool


# --------------------------------------------------------------------------
# goal/change


class BlockedReasonBody(_Payload):
    """Why a goal is blocked."""

    code: Kebab
    message: Trimmed


class _GoalBody(_Payload, tag_field="phase"):
    id: Id
    revision: Positive
    objective: Trimmed
    max_rounds: Positive


class BlockedGoal(_GoalBody, tag="blocked"):
    """A goal snapshot in phase ``blocked``: the only one with a reason."""

    blocked_reason: BlockedReasonBody


_UNBLOCKED = tuple(
    msgspec.defstruct(
        f"{phase.capitalize()}Goal",
        [("blocked_reason", None)],
        bases=(_GoalBody,),
        module=__name__,
        namespace={"__doc__": f"A goal snapshot in phase ``{phase}``."},
        tag=phase,
        forbid_unknown_fields=True,
    )
    for phase in ("active", "paused", "complete")
)
GoalBody: Any = _union(*_UNBLOCKED, BlockedGoal)


class _GoalChange(_Payload, tag_field="operation"):
    version: Literal[1]


class _Snapshot(_GoalChange):
    goal: GoalBody
    rounds_started: Count
    created_at: Time
    updated_at: Time


def _variant(base: type[Struct], tag: str, doc: str, fields: list[tuple[str, Any]] | None = None) -> Any:
    """A subclass of ``base`` tagged ``tag``, named after its kind and tag
    (``GoalCreate``, ``PlanVerifyFail``), made at import time."""
    prefix = "Goal" if issubclass(base, _GoalChange) else "Plan"
    name = prefix + "".join(word.capitalize() for word in tag.split("-"))
    return msgspec.defstruct(
        name, fields or [], bases=(base,), module=__name__, namespace={"__doc__": doc}, tag=tag,
        forbid_unknown_fields=True,
    )


_SNAPSHOTS = tuple(
    _variant(_Snapshot, op, f"``goal/change`` recording a {op}.")
    for op in ("create", "edit", "pause", "resume", "complete", "block")
)


class ClearedRef(_Payload):
    """The goal a tombstone clears, at the tombstone's own revision."""

    id: Id
    revision: Positive


class GoalClear(_GoalChange, tag="clear"):
    """``goal/change`` tombstone clearing the current goal."""

    cleared: ClearedRef
    cleared_at: Time


GoalChangePayload: Any = _union(*_SNAPSHOTS, GoalClear)


# --------------------------------------------------------------------------
# plan/artifact


class TodoBody(_Payload):
    """One todo of a stored plan spec."""

    id: str
    text: str
    status: TodoStatus


class OpenQuestionBody(_Payload):
    """An open question of a stored plan spec."""

    text: str
    blocking: bool


class ScopeBody(_Payload):
    """Where execution may act."""

    paths: list[str]
    effects: list[str]


class PlanSpecBody(_Payload):
    """A stored plan spec: every key always present."""

    goal: str
    steps: list[str]
    constraints: list[str]
    verify: list[str]
    todos: list[TodoBody]
    open_questions: list[OpenQuestionBody]
    scope: ScopeBody | None


class SummaryBody(_Payload):
    """A stored summary view."""

    goal: str
    key_steps: list[str]
    constraints: list[str]
    verify: list[str]
    active_todo_ids: list[str]


class _PlanAction(_Payload, tag_field="action"):
    plan_id: NonBlank
    revision: Positive


class _PlanContent(_PlanAction):
    spec: PlanSpecBody
    summary: SummaryBody
    summary_source: Literal["model", "runtime"]
    summary_rejected: list[str]


_NOTE: list[tuple[str, Any]] = [("note", str | None)]
_HASH: list[tuple[str, Any]] = [("spec_hash", NonBlank)]
_PLAN_ACTIONS = (
    _variant(_PlanContent, "draft", "``plan/artifact``: a plan recorded from exit_plan_mode."),
    _variant(_PlanContent, "bootstrap", "``plan/artifact``: a minimal implicit plan made in build mode."),
    _variant(_PlanContent, "rewrite", "``plan/artifact``: a substantive change of the current plan."),
    _variant(_PlanAction, "approve", "``plan/artifact``: the user approved this exact version.", _HASH),
    _variant(_PlanAction, "reject", "``plan/artifact``: the reviewer sent it back.", [*_HASH, *_NOTE]),
    _variant(_PlanAction, "start", "``plan/artifact``: execution starts at this exact version.", _HASH),
    _variant(
        _PlanAction, "todo", "``plan/artifact``: a todo's progress.", [("todo_id", NonBlank), ("status", TodoStatus)]
    ),
    _variant(_PlanAction, "verify", "``plan/artifact``: execution enters verify."),
    _variant(_PlanAction, "verify-fail", "``plan/artifact``: verify failed; back to execution.", _NOTE),
    _variant(_PlanAction, "complete", "``plan/artifact``: verified and finished."),
    _variant(_PlanAction, "realign", "``plan/artifact``: to be realigned before it runs again.", _NOTE),
    _variant(_PlanAction, "supersede", "``plan/artifact``: no longer guides the session.", _NOTE),
)
PlanArtifactPayload: Any = _union(*_PLAN_ACTIONS)


# --------------------------------------------------------------------------
# tool events


class ToolCallPayload(_Payload):
    """``tool/call``: the call exactly as the model sent it (any JSON arguments)."""

    call_id: NonBlank
    tool: str
    arguments: Any


class ToolResultPayload(_Payload):
    """``tool/result``: what a call that ran returned."""

    call_id: NonBlank
    tool: str
    ok: bool
    output: str


class ToolNoticePayload(_Payload):
    """``tool/refused`` and ``tool/warning``: why the gate refused (or would have)."""

    call_id: NonBlank
    tool: str
    code: Kebab
    reason: NonBlank
    phase: RuntimePhase
    hint: str | UnsetType = UNSET


#: The payload type of every kind, by kind.
PAYLOAD_TYPES: Mapping[str, Any] = {
    log.TURN_START: TurnPayload,
    log.TURN_END: TurnPayload,
    log.REQUEST_HEADER: RequestHeaderPayload,
    log.USER_MESSAGE: MessagePayload,
    log.ASSISTANT_MESSAGE: MessagePayload,
    log.PLAN_MODE: PlanModePayload,
    log.GOAL_CHANGE: GoalChangePayload,
    log.PLAN_ARTIFACT: PlanArtifactPayload,
    log.TOOL_CALL: ToolCallPayload,
    log.TOOL_RESULT: ToolResultPayload,
    log.TOOL_REFUSED: ToolNoticePayload,
    log.TOOL_WARNING: ToolNoticePayload,
}


def decode_typed(kind: str, payload: bytes) -> object:
    """Decode a JSON payload of ``kind`` into its type.

    Raises ``KeyError`` for a kind without a type and ``msgspec.ValidationError``
    (or ``msgspec.DecodeError``) for a payload the kernel would not accept.
    """
    return msgspec.json.decode(payload, type=PAYLOAD_TYPES[kind])


# --------------------------------------------------------------------------
# Event lines


class _Event(Struct, forbid_unknown_fields=True, tag_field="kind"):
    seq: Positive
    at: Time


def _event_line(kind: str, payload: Any) -> type[Struct]:
    name = "".join(word.capitalize() for word in kind.replace("/", " ").split()) + "Event"
    return msgspec.defstruct(
        name,
        [("payload", payload)],
        bases=(_Event,),
        module=__name__,
        namespace={"__doc__": f"One ``{kind}`` line."},
        tag=kind,
        forbid_unknown_fields=True,
    )


#: One line type per kind, by kind (``TurnStartEvent``, ``PlanModeEvent`` …).
EVENT_TYPES: Mapping[str, type[Struct]] = {
    kind: _event_line(kind, payload) for kind, payload in sorted(PAYLOAD_TYPES.items())
}

#: Any event line: a tagged union on ``kind``.
EventLine: Any = _union(*EVENT_TYPES.values())


def event_schema() -> dict[str, Any]:
    """The JSON Schema (2020-12) of one event line, payloads included."""
    body = msgspec.json.schema(EventLine)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "planfold session event",
        "description": (
            "One line of a planfold session log (JSON Lines): seq, kind, at and a payload whose "
            "shape the kind fixes. Integers are written without a fraction or exponent. "
            "Generated from adapters/event_types.py; do not edit."
        ),
        **body,
    }


def schema_text() -> str:
    """``event_schema()`` as stable, sorted, indented JSON text."""
    return json.dumps(event_schema(), indent=2, sort_keys=True, ensure_ascii=True) + "\n"

