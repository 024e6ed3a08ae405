"""The turn rules: what a reply means, what closes a turn a stopped process
left open, and what answers a call outside the plan's scope.

Theory of operation
-------------------
A runtime's turn is a conversation between the model, the tools and the
log. Every rule that decides what goes into the log is here, as a pure
function over the session state that returns the drafts to append (the log
numbers and stamps them); the runtime's step machine only asks these
functions and carries out what they say.

- ``record_reply``: a model's reply is recorded whatever it holds, with
  what its call cost (latency and tokens) on the assistant message. Text,
  tool names and call ids that are not Unicode (lone surrogates) are
  recorded escaped (``\\udc80`` as six characters); arguments the log
  cannot hold (not finite, nested deeper than the gate allows, not Unicode)
  are recorded as the raw text the model sent, and the gate refuses the
  call as ``malformed-call``. Only the first ``max_tool_calls`` calls are
  taken; the rest are refused together in one notice. A reply is the
  model's final word only when it finished normally: ``UNFINISHED`` says,
  row by row, what a reply cut off, filtered or refused gets (the refusal
  code of its calls, how the turn ends, what the notice says).
- ``interrupted_calls`` and ``abandoned_turn``: a call recorded and never
  answered by a process that stopped gets a failed ``tool/result``
  (``call-interrupted``: whether it ran is unknown), and the turn it left
  open ends before the next one starts.
- ``scope_refusal``: an executor call whose effects (resolved by the
  runtime to where they really land) fall outside the executing plan's
  scope records the realignment and a failed result; the call does not run.
- ``unrecordable``: what a writer that decides nothing (a ``planfold
  serve`` host) may append as a fact is only what its model said, what its
  human typed and the header of a request it made (``RECORDABLE_KINDS``);
  every other kind is decided by these rules, and a user message attributed
  to a goal is a goal round, which only the goal's ``should_continue``
  admits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from .decisions import decide_scope, tool_error_text
from .errors import PayloadError
from .log import (
    ASSISTANT_MESSAGE,
    REQUEST_HEADER,
    TOOL_CALL,
    TOOL_REFUSED,
    TOOL_RESULT,
    TURN_START,
    USER_MESSAGE,
    Draft,
    Event,
    GoalSource,
    ModelUsage,
    PluginSource,
    assistant_message,
    read_message,
    turn_end,
    user_message,
)
from .payload import JSON, JSONObject
from .phase import RuntimePhase
from .plan.scope import Effect
from .session import SessionState
from .tools.events import read_tool_call, read_tool_notice, read_tool_result, tool_result_payload, verdict_events
from .tools.gate import GatePolicy, Refused, Verdict, check_call
from .tools.spec import ToolCall, ToolRegistry, argument_problem, is_json

__all__ = [
    "CALL_INTERRUPTED",
    "RECORDABLE_KINDS",
    "REPLY_NOTICE_SOURCE",
    "UNFINISHED",
    "RecordedReply",
    "Reply",
    "ReplyOutcome",
    "Unfinished",
    "Unrecordable",
    "abandoned_turn",
    "failed_result",
    "interrupted_calls",
    "record_reply",
    "scope_refusal",
    "unrecordable",
]

#: The code of the answer given to a call its runtime stopped before answering.
CALL_INTERRUPTED = "call-interrupted"

#: The source of the runtime's notices about a reply (cut off, filtered,
#: refused, too many calls).
REPLY_NOTICE_SOURCE = PluginSource("plugin", "reply-check")


@dataclass(frozen=True, slots=True)
class Unfinished:
    """How a reply that is not the model's final word is treated: the
    refusal ``code`` its calls get, how the turn ends (``ended_by``; None:
    it goes on with the next step) and what the notice says happened."""

    code: str
    ended_by: str | None
    what: str


#: Why a reply is not the model's final word -> how it is treated.
UNFINISHED: Mapping[str, Unfinished] = {
    "length": Unfinished("reply-cut-off", None, "was cut off at the length limit"),
    "content_filter": Unfinished("reply-filtered", "content-filter", "was stopped by a content filter"),
    "refusal": Unfinished("reply-refused", "refused", "was a refusal"),
}


@dataclass(frozen=True, slots=True)
class Reply:
    """The model's reply: its text (None: none), its calls, the server's
    ``finish_reason``, the model's ``refusal`` text when it declined and
    what the call cost (``usage``: measured and reported by the model
    adapter, None when unknown; recorded on the assistant message). Its
    ``calls`` are the model port's own ``ToolCall`` values, which the gate
    checks and the executor receives as they are."""

    text: str | None
    calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    refusal: str | None = None
    usage: ModelUsage | None = None


ReplyOutcome = Literal["calls", "final", "again", "stop"]


@dataclass(frozen=True, slots=True)
class RecordedReply:
    """How one reply goes into the log: append ``batch`` (the assistant
    message and every call taken); then, for each call in order, append its
    gate ``notices`` and answer it when its ``verdict`` allows it; then
    append each of ``trailing`` on its own. ``outcome``: ``calls`` (the reply
    made calls), ``final`` (it finished without calls), ``again`` (it was
    cut off: the turn goes on) or ``stop`` (the turn ends, ``ended_by`` and
    ``error`` say why)."""

    text: str | None
    batch: tuple[Draft, ...]
    calls: tuple[ToolCall, ...]
    verdicts: tuple[Verdict, ...]
    notices: tuple[tuple[Draft, ...], ...]
    trailing: tuple[Draft, ...]
    outcome: ReplyOutcome
    ended_by: str | None = None
    error: str | None = None


def _text(value: str) -> str:
    """``value`` as the log can hold it: lone surrogates escaped."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


def _recordable(value: object) -> bool:
    """Whether decoded arguments can go into the log as they are: JSON the
    gate accepts (finite numbers, its depth limit) with Unicode text only."""
    return is_json(value) and argument_problem(value) is None


def _recorded_call(call: ToolCall, index: int) -> ToolCall:
    """``call`` as the log can hold it (see the module docstring): the very
    value the model port made whenever the log can hold it as it is."""
    call_id = _text(call.id) or f"call-{index}"
    tool = _text(call.name)
    if call.arguments is not None and _recordable(call.arguments):
        if (call_id, tool) == (call.id, call.name):
            return call
        return ToolCall(call_id, tool, call.arguments_json, call.arguments)
    problem = call.arguments_error or "the arguments hold a value the log cannot record"
    return ToolCall(call_id, tool, _text(call.arguments_json), None, problem)


def _unfinished(reply: Reply) -> str | None:
    """Why ``reply`` is not the model's final word (a key of ``UNFINISHED``),
    or None when it is."""
    if reply.refusal:
        return "refusal"
    if reply.finish_reason in ("length", "content_filter"):
        return reply.finish_reason
    return None


def _notice(text: str) -> Draft:
    """A notice about the last reply, for the model to read."""
    return user_message(text, REPLY_NOTICE_SOURCE)


def record_reply(
    reply: Reply,
    registry: ToolRegistry,
    policy: GatePolicy,
    phase: RuntimePhase,
    offered: Sequence[str],
    *,
    max_tool_calls: int,
) -> RecordedReply:
    """Decide how ``reply`` to a request made in ``phase`` that offered the
    tools ``offered`` is recorded (see the module docstring): the calls taken
    with the gate's verdicts, every call of a reply that is not the model's
    final word refused, and the notices that say so. Never raises."""
    text = _text(reply.text if reply.text is not None else reply.refusal or "")
    shown = text if reply.text is not None or reply.refusal else None
    calls = tuple(_recorded_call(call, i) for i, call in enumerate(reply.calls[: max(0, max_tool_calls)]))
    why = _unfinished(reply)
    row = None if why is None else UNFINISHED[why]
    if row is None:
        verdicts: tuple[Verdict, ...] = tuple(
            check_call(registry, phase, policy, call, tuple(offered)) for call in calls
        )
    else:
        reason = f"nothing in this reply ran: it {row.what} (finish_reason: {reply.finish_reason})"
        hint = "Send the call again in a complete reply."
        verdicts = tuple(Refused(row.code, reason, call.name, phase, hint) for call in calls)
    batch = [assistant_message(text, reply.usage)]
    notices: list[tuple[Draft, ...]] = []
    for call, verdict in zip(calls, verdicts, strict=True):
        (call_kind, call_payload), *rest = verdict_events(call, verdict)
        batch.append(Draft(call_kind, call_payload))
        notices.append(tuple(Draft(kind, payload) for kind, payload in rest))
    trailing: list[Draft] = []
    if len(reply.calls) > len(calls):
        trailing.append(
            _notice(
                f"Your reply made {len(reply.calls)} tool calls; only the first {len(calls)} were taken "
                f"(at most {max_tool_calls} per reply) and the other {len(reply.calls) - len(calls)} "
                "were refused without running. Send fewer calls per reply."
            )
        )
    if row is None:
        outcome: ReplyOutcome = "calls" if calls else "final"
        return RecordedReply(shown, tuple(batch), calls, verdicts, tuple(notices), tuple(trailing), outcome)
    said = f"Your last reply {row.what} (finish_reason: {reply.finish_reason})"
    if reply.refusal:
        said += f": {_text(reply.refusal)!r}"
    if row.ended_by is None:
        trailing.append(_notice(f"{said}. It was not taken as your final answer and nothing in it ran; continue."))
        return RecordedReply(shown, tuple(batch), calls, verdicts, tuple(notices), tuple(trailing), "again")
    trailing.append(_notice(f"{said}. Nothing in it ran, and the runtime ended the turn."))
    error = f"[{row.code}] the model's reply {row.what} (finish_reason: {reply.finish_reason})"
    return RecordedReply(
        shown, tuple(batch), calls, verdicts, tuple(notices), tuple(trailing), "stop", row.ended_by, error
    )



def failed_result(call_id: str, tool: str, code: str, message: str, **extra: JSON) -> Draft:
    """The failed ``tool/result`` of a call, with a structured error."""
    output = tool_error_text(code, message, **extra)
    return Draft(TOOL_RESULT, tool_result_payload(call_id, tool, ok=False, output=output))


def interrupted_calls(state: SessionState, events: Sequence[Event]) -> tuple[Draft, ...]:
    """A failed ``tool/result`` (``call-interrupted``) for each call of the
    open turn of ``events`` (folded to ``state``) that was never answered
    (no ``tool/result`` or ``tool/refused``), in the order the calls were
    made; nothing when no turn is open. Only the open turn's events are read
    (back to its ``turn/start``)."""
    if not state.turns.open:
        return ()
    start = len(events)
    while start > 0 and events[start - 1].kind != TURN_START:
        start -= 1
    unanswered: dict[str, str] = {}
    for event in events[start:]:
        if event.kind == TOOL_CALL:
            call = read_tool_call(event.payload)
            unanswered[call.id] = call.name
        elif event.kind == TOOL_RESULT:
            unanswered.pop(read_tool_result(event.payload).call_id, None)
        elif event.kind == TOOL_REFUSED:
            unanswered.pop(read_tool_notice(event.payload).call_id, None)
    return tuple(
        failed_result(
            call_id,
            tool,
            CALL_INTERRUPTED,
            "the runtime stopped before this call was answered, so whether it ran is unknown",
            hint="Check its effects before making the call again.",
        )
        for call_id, tool in unanswered.items()
    )



def abandoned_turn(state: SessionState, events: Sequence[Event]) -> tuple[Draft, ...]:
    """What closes the turn an earlier process left open in ``events``
    (folded to ``state``): ``interrupted_calls``, then its ``turn/end``;
    nothing when no turn is open."""
    if not state.turns.open:
        return ()
    return (*interrupted_calls(state, events), turn_end(state.turns.turn))


def scope_refusal(
    state: SessionState, call: ToolCall, effects: Sequence[Effect]
) -> tuple[tuple[Draft, ...], Draft] | None:
    """When ``effects``, what ``call`` would do (with each path resolved to
    where it really lands: the runtime resolves, the kernel decides), fall
    outside the executing plan's scope (``decide_scope``): the realignment
    to record, then the call's failed result (append each on its own);
    ``None`` when the call may run."""
    verdict, realign = decide_scope(state, effects)
    if not realign:
        return None
    result = failed_result(
        call.id,
        call.name,
        "outside-plan-scope",
        f"nothing ran: {verdict.reason}; execution stops until the plan is realigned",
        violations=[{"code": v.code, "message": v.message} for v in verdict.violations],
        hint="Tell the user what you need; the plan must be presented and approved again.",
    )
    return realign, result


#: The kinds of event a writer that decides nothing may append as facts.
RECORDABLE_KINDS: frozenset[str] = frozenset({ASSISTANT_MESSAGE, USER_MESSAGE, REQUEST_HEADER})

#: Why an event is not a fact to record: planfold decides its kind
#: (``decided``), or it is a goal round (``goal-round``).
Unrecordable = Literal["decided", "goal-round"]


def unrecordable(kind: str, payload: JSONObject) -> Unrecordable | None:
    """Why the event ``kind`` with ``payload`` may not be appended as a fact,
    or ``None`` when it may: a kind outside ``RECORDABLE_KINDS`` is
    ``decided``; a ``user/message`` whose ``source`` is of type ``goal`` is
    a ``goal-round``. Whether the payload is well formed is the strict
    fold's to say: a message that does not read is not a goal round here,
    and the fold refuses it at its seq."""
    if kind not in RECORDABLE_KINDS:
        return "decided"
    if kind != USER_MESSAGE:
        return None
    try:
        source = read_message(payload).source
    except PayloadError:
        return None
    return "goal-round" if isinstance(source, GoalSource) else None
