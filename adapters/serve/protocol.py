"""The ``planfold serve`` protocol: every method, its params and its result.

Theory of operation
-------------------
A host runtime (written in any language) drives one or more sessions through
JSON-RPC 2.0 methods. Each method's params and result are one frozen
dataclass here; the kernel's own values (``GoalRef``, ``GoalSnapshot``,
``PlanArtifact``, ``ViewRequest``, ``ViewChoice``, ``PromptSection``,
``Refused``, ``PendingChoice``) appear in them as they are. The server
structures params straight into these classes with the exact converter of
``adapters.structuring`` (which enforces their ``msgspec.Meta`` limits), and
the OpenRPC document in ``specs/`` is generated from them, so the wire
shapes are written once.

``METHODS`` lists every method in the order a host meets them in a session;
each row says what the method does. Params are by name (a JSON object);
unknown keys are refused like wrong types (``-32602``).

A host drives a session in this order (the server refuses anything else with
``out-of-order``, and a step's calls must be answered one by one, in order):

1. ``session/open``; ``user/command`` for each human input (``/plan``,
   ``/plan off``, ``/goal …``; anything else is a message that starts a turn);
2. ``turn/start``; then per step: ``step/begin`` (the pre-step: the pending
   plan-mode choice is flushed, an approved plan starts, the request header
   is recorded), ``step/context`` (the prompt sections and the tools to
   offer), the model call (the host's own), ``step/reply`` (the reply and
   every tool call, checked by the gate);
3. for each call of the reply, in order, ``tool/dispatch``: the server says
   what to do (``refused``: send the output to the model; ``done``: the
   runtime handled it; ``execute``: run it, then ``tool/result``; ``review``:
   show the plan to a human, then ``review/answer``);
4. ``turn/end``; between turns ``goal/should_continue`` and the goal
   operations, each against a compare-and-set ``GoalRef``.

The server appends every event; a host only asks. ``events/append`` records
facts that decide nothing (assistant messages, request headers, human
messages), checked by the strict fold like everything else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from msgspec import Meta

from ...kernel.goal.command import GoalVerb
from ...kernel.goal.continuation import StopReason
from ...kernel.goal.values import BlockedReason, GoalRef, GoalSnapshot
from ...kernel.phase import AgentMode, RuntimePhase
from ...kernel.plan.artifact import PlanArtifact
from ...kernel.plan.context import (
    DEFAULT_BUILD_OVERLAY,
    DEFAULT_PLAN_OVERLAY,
    PromptSection,
    ViewChoice,
    ViewRequest,
)
from ...kernel.plan.mode import ChoiceOutcome, PendingChoice, StepVerdict
from ...kernel.tools.gate import Refused
from ..runtime.prompt import DEFAULT_BASE_PROMPT, DEFAULT_PLAN_POLICY

__all__ = [
    "JSONRPC_ERRORS",
    "MAX_TEXT",
    "METHODS",
    "PROTOCOL_VERSION",
    "AppendParams",
    "Appended",
    "CallVerdict",
    "ChoiceResult",
    "ChooseParams",
    "CommandParams",
    "CommandResult",
    "ContextParams",
    "ContinueResult",
    "DispatchParams",
    "ForkParams",
    "Forked",
    "GateConfig",
    "GateRule",
    "GoalBlockParams",
    "GoalCreateParams",
    "GoalEditParams",
    "GoalRefParams",
    "GoalResult",
    "Method",
    "ModelToolCall",
    "PromptConfigParams",
    "RecordedEvent",
    "ReplyParams",
    "ReplyRecorded",
    "RequestContext",
    "ReviewAnswerParams",
    "ReviewInfo",
    "SessionClosed",
    "SessionInfo",
    "SessionOpenParams",
    "SessionParams",
    "Stage",
    "StepBeginParams",
    "StepBegun",
    "ToolAction",
    "ToolAnswered",
    "ToolDecl",
    "ToolInfo",
    "ToolResultParams",
    "TurnEnded",
    "TurnStartParams",
    "TurnStarted",
]

#: The protocol's version (the OpenRPC document's ``info.version``).
PROTOCOL_VERSION = "2.1.0"

SessionId = Annotated[
    str, Meta(min_length=1, max_length=256, pattern="^[^\\x00]+$", description="the session's id in the store (no NUL)")
]
#: The longest text any method takes, in characters (every string of every
#: method's params, ``events/append`` payloads included).
MAX_TEXT = 1_000_000
Text = Annotated[str, Meta(max_length=MAX_TEXT)]
Name = Annotated[str, Meta(min_length=1, max_length=64)]
CallId = Annotated[str, Meta(min_length=1, max_length=256, description="the id the model gave the call")]
Count = Annotated[int, Meta(ge=0)]
Positive = Annotated[int, Meta(ge=1, le=2**53 - 1)]

#: Where a session's host is in its step: ``idle`` (no turn open), ``turn``
#: (a turn is open, no step in flight), ``step`` (a step's header is recorded
#: and its reply is awaited), ``calls`` (the reply's calls wait for
#: ``tool/dispatch``), ``execute`` (a call runs in the host: ``tool/result``
#: is awaited; the log is sealed), ``review`` (a plan is before a human:
#: ``review/answer`` is awaited).
Stage = Literal["idle", "turn", "step", "calls", "execute", "review"]


# --------------------------------------------------------------------------
# Sessions


@dataclass(frozen=True, slots=True)
class ToolDecl:
    """One tool of the host: what the model is shown and what it declares.
    The gate reads only the declarations (``effect``, ``origin``,
    ``read_only_hint``, ``category``); the plan's scope reads
    ``target_args`` (a write that declares none fails closed under a scope
    with paths); the runtime-owned tools are always added by the server and
    may not be declared."""

    name: Name
    description: Text
    parameters: Annotated[dict[str, Any], Meta(description="the JSON Schema of the tool's arguments")]
    effect: Literal["read", "write", "unknown"]
    origin: Literal["builtin", "mcp", "shell"] = "builtin"
    read_only_hint: bool | None = None
    category: Literal["memory-write", "task-state", "plan-state"] | None = None
    target_args: Annotated[
        tuple[str, ...], Meta(description="the arguments that name the paths a call acts on (the plan's scope)")
    ] = ()


@dataclass(frozen=True, slots=True)
class GateRule:
    """A deployment's allow or deny rule: a case-sensitive glob over tool
    names, in ``phases`` (every phase when omitted)."""

    action: Literal["allow", "deny"]
    pattern: Annotated[str, Meta(min_length=1, max_length=256)]
    phases: tuple[RuntimePhase, ...] | None = None


@dataclass(frozen=True, slots=True)
class GateConfig:
    """How the gate runs for this session (``kernel.tools.gate.GatePolicy``)."""

    catalog: Literal["filtered", "stable"] = "filtered"
    enforcement: Literal["hard", "advisory"] = "hard"
    rules: tuple[GateRule, ...] = ()
    default_action: Literal["allow", "deny"] = "allow"


@dataclass(frozen=True, slots=True)
class PromptConfigParams:
    """The deployment's prompt texts; ``plan_policy`` null renders no
    ``plan:policy`` section."""

    base: Text = DEFAULT_BASE_PROMPT
    plan_overlay: Text = DEFAULT_PLAN_OVERLAY
    build_overlay: Text = DEFAULT_BUILD_OVERLAY
    plan_policy: Text | None = DEFAULT_PLAN_POLICY.section


@dataclass(frozen=True, slots=True)
class SessionOpenParams:
    """Open (or create) a session of the store in this process. Process
    state starts fresh: no pending choice, the goal disarmed. A reply's calls
    past ``max_tool_calls`` are refused in one notice."""

    session: SessionId
    tools: tuple[ToolDecl, ...] = ()
    gate: GateConfig = field(default_factory=GateConfig)
    prompt: PromptConfigParams = field(default_factory=PromptConfigParams)
    max_tool_calls: Annotated[int, Meta(ge=0, le=10_000, description="calls of one reply taken")] = 32


@dataclass(frozen=True, slots=True)
class SessionParams:
    """Names an open session."""

    session: SessionId


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """Where a session stands: the fold of its log (mode, phase, turn, plan,
    goal, last seq) and this process's state (the pending plan-mode choice,
    whether the goal is armed, the host's stage and the call awaited)."""

    session: str
    last_seq: int
    mode: AgentMode
    phase: RuntimePhase
    turn: int
    turn_open: bool
    plan: PlanArtifact | None
    goal: GoalSnapshot | None
    pending: PendingChoice | None
    armed: bool
    stage: Stage
    awaiting: str | None
    next_step: int = 1


@dataclass(frozen=True, slots=True)
class SessionClosed:
    """The session's process state is gone; its log stays in the store."""

    session: str
    last_seq: int


@dataclass(frozen=True, slots=True)
class ForkParams:
    """Fork the session: a new session whose log is the first ``at`` events
    of this one, or the events before turn ``turn`` started (give one)."""

    session: SessionId
    new_session: SessionId
    at: Positive | None = None
    turn: Positive | None = None


@dataclass(frozen=True, slots=True)
class Forked:
    """The new session's provenance: its source, the seq it was forked at and
    the SHA-256 of that prefix as an export writes it."""

    session: str
    source: str
    seq: int
    prefix_sha256: str


# --------------------------------------------------------------------------
# User choices


@dataclass(frozen=True, slots=True)
class ChooseParams:
    """The user chooses plan mode on or off."""

    session: SessionId
    active: bool


@dataclass(frozen=True, slots=True)
class ChoiceResult:
    """``committed`` (appended now, between turns), ``queued`` (appended at
    the next accepted pre-step), ``cancelled`` or ``noop``."""

    outcome: ChoiceOutcome
    pending: PendingChoice | None
    last_seq: int


@dataclass(frozen=True, slots=True)
class CommandParams:
    """One line a human typed, with the names of any files attached to it
    (``/plan off`` takes none)."""

    session: SessionId
    text: Text
    attachments: tuple[Annotated[str, Meta(max_length=4096)], ...] = ()


@dataclass(frozen=True, slots=True)
class CommandResult:
    """What the line was. ``plan``: ``/plan``, ``/plan <message>`` or
    ``/plan off`` was applied (``outcome``); when ``message`` is set the host
    starts a turn with it, passing ``rewriting`` in the turn's view.
    ``goal``: a ``/goal`` command was applied (``verb``; ``goal`` is the goal
    after it, ``seq`` the event appended). ``message``: not a command; the
    host starts a turn with ``message`` (the text, attachments listed after
    it)."""

    kind: Literal["plan", "goal", "message"]
    outcome: ChoiceOutcome | None = None
    message: str | None = None
    rewriting: bool = False
    verb: GoalVerb | None = None
    goal: GoalSnapshot | None = None
    seq: int | None = None
    last_seq: int = 0


# --------------------------------------------------------------------------
# Turns and steps


@dataclass(frozen=True, slots=True)
class TurnStartParams:
    """Open a turn with its first user message. ``goal_round`` attributes it
    to the current goal (a round of its budget), which ``goal/should_continue``
    must allow right now; ``view`` is what the host knows about the plan view
    this turn needs."""

    session: SessionId
    text: Text
    goal_round: bool = False
    view: ViewRequest = field(default_factory=ViewRequest)


@dataclass(frozen=True, slots=True)
class TurnStarted:
    turn: int
    first_seq: int
    last_seq: int
    round: int | None


@dataclass(frozen=True, slots=True)
class TurnEnded:
    turn: int
    last_seq: int


@dataclass(frozen=True, slots=True)
class StepBeginParams:
    """The pre-step of a proposed step: ``step`` counts 1, 2, 3 … per turn
    (a same-step retry after a failed model call repeats it); ``verdict`` is
    what the host's own step listeners said."""

    session: SessionId
    step: Positive
    verdict: StepVerdict = "accepted"


@dataclass(frozen=True, slots=True)
class StepBegun:
    """``accepted`` false: nothing was appended and the host ends the turn.
    Otherwise ``flushed`` says whether a pending choice was appended,
    ``started`` whether an approved plan started, and ``header_seq`` is the
    request header's seq."""

    accepted: bool
    flushed: bool
    started: bool
    header_seq: int | None
    phase: RuntimePhase
    last_seq: int


@dataclass(frozen=True, slots=True)
class ContextParams:
    """``conversation`` true also returns the conversation rebuilt from the
    log (OpenAI chat-completions message objects)."""

    session: SessionId
    conversation: bool = False


@dataclass(frozen=True, slots=True)
class ToolInfo:
    """A tool to offer the model (its arguments' JSON Schema in ``parameters``)."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True, slots=True)
class RequestContext:
    """What the step's request is derived from: the prompt sections in
    order (send each as one system message), the plan view chosen and why,
    and exactly the tools to offer (a call of any other is refused)."""

    phase: RuntimePhase
    mode: AgentMode
    view: ViewChoice
    sections: tuple[PromptSection, ...]
    tools: tuple[ToolInfo, ...]
    messages: tuple[dict[str, Any], ...] | None = None


@dataclass(frozen=True, slots=True)
class ModelToolCall:
    """One tool call as the model sent it: ``arguments`` decoded, or
    ``arguments_json`` the raw text (broken JSON is recorded and refused)."""

    id: CallId
    name: Annotated[str, Meta(max_length=1024)]
    arguments: Any = None
    arguments_json: Text | None = None


@dataclass(frozen=True, slots=True)
class ReplyParams:
    """The model's reply to the step's request, with the server's
    ``finish_reason`` (``stop``, ``tool_calls``, ``length``,
    ``content_filter`` …) and the model's ``refusal`` text, if any: a reply
    cut off, filtered or refused is never taken as the model's final word."""

    session: SessionId
    text: Text | None = None
    tool_calls: Annotated[tuple[ModelToolCall, ...], Meta(max_length=10_000)] = ()
    finish_reason: Annotated[str, Meta(max_length=64)] | None = None
    refusal: Text | None = None


@dataclass(frozen=True, slots=True)
class CallVerdict:
    """The gate's verdict on one call: ``allowed`` with its ``route``
    (``executor``: the host runs it; ``runtime``: planfold handles it), or
    refused with ``refusal`` (code, reason, hint). In advisory mode an
    allowed call may carry the refusal hard mode would have made."""

    call_id: str
    tool: str
    phase: RuntimePhase
    allowed: bool
    route: Literal["executor", "runtime"] | None
    refusal: Refused | None


@dataclass(frozen=True, slots=True)
class ReplyRecorded:
    """The calls taken, each with the gate's verdict: answer every one with
    ``tool/dispatch``, in order. ``next`` is what follows once they are
    answered: ``continue`` (begin the next step: the reply made calls, was
    cut off, or ended the plan's execution so verification starts) or
    ``end`` (end the turn; when the reply was filtered or refused,
    ``ended_by`` and ``error`` say so)."""

    verdicts: tuple[CallVerdict, ...]
    next: Literal["continue", "end"]
    ended_by: str | None
    error: str | None
    last_seq: int


@dataclass(frozen=True, slots=True)
class DispatchParams:
    """Ask what to do with the next call of the reply. ``review_available``
    says whether a human can review a plan right now (``exit_plan_mode``
    fails closed without one)."""

    session: SessionId
    call_id: CallId
    review_available: bool = True


@dataclass(frozen=True, slots=True)
class ReviewInfo:
    """The plan to show a human (markdown) and the answers on offer."""

    plan: str
    options: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ToolAction:
    """What the host does with the call. ``refused``: send ``output`` to the
    model as the call's tool message. ``done``: the runtime handled it (its
    result is recorded): send ``output``. ``execute``: run it and report with
    ``tool/result``. ``review``: show ``review`` to a human and report with
    ``review/answer``. ``remaining`` counts the calls still to dispatch."""

    call_id: str
    tool: str
    action: Literal["refused", "done", "execute", "review"]
    ok: bool | None
    output: str | None
    review: ReviewInfo | None
    remaining: int
    last_seq: int


@dataclass(frozen=True, slots=True)
class ToolResultParams:
    """What the host's executor returned for an ``execute`` call."""

    session: SessionId
    call_id: CallId
    ok: bool
    output: Text


@dataclass(frozen=True, slots=True)
class ReviewAnswerParams:
    """The human's answer to a plan review: ``selected`` options (exactly
    ``["Approve"]`` approves), with any ``text`` they typed (notes on an
    approval, feedback otherwise); a ``custom`` text (keep planning, with it
    as feedback); ``dismissed`` (they want to talk instead) or
    ``channel-lost``."""

    session: SessionId
    call_id: CallId
    answer: Literal["selected", "custom", "dismissed", "channel-lost"]
    options: tuple[Annotated[str, Meta(max_length=1024)], ...] = ()
    text: Text | None = None


@dataclass(frozen=True, slots=True)
class ToolAnswered:
    """The call's recorded result (send ``output`` to the model); ``last_seq``
    is the seq of the last event the answer appended. ``review`` is the
    review's outcome for ``review/answer``."""

    call_id: str
    ok: bool
    output: str
    last_seq: int
    remaining: int
    review: Literal["approved", "keep-planning", "dismissed", "channel-lost"] | None = None


# --------------------------------------------------------------------------
# Goals


@dataclass(frozen=True, slots=True)
class GoalCreateParams:
    """A new goal (its id defaults to ``goal-<seq>``)."""

    session: SessionId
    objective: Text
    max_rounds: Positive | None = None
    goal_id: Annotated[str, Meta(min_length=1, max_length=256)] | None = None


@dataclass(frozen=True, slots=True)
class GoalEditParams:
    """Change the objective or the round cap of the goal at ``ref``."""

    session: SessionId
    ref: GoalRef
    objective: Text | None = None
    max_rounds: Positive | None = None


@dataclass(frozen=True, slots=True)
class GoalRefParams:
    """An operation on the goal at ``ref`` (compare-and-set: a stale ref is
    refused)."""

    session: SessionId
    ref: GoalRef


@dataclass(frozen=True, slots=True)
class GoalBlockParams(GoalRefParams):
    """Block the goal at ``ref`` for ``reason`` (kebab-case code, message)."""

    reason: BlockedReason


@dataclass(frozen=True, slots=True)
class GoalResult:
    """The accepted change: its seq, the new ref (the cleared one for
    ``clear``), the goal after it (null after ``clear``) and whether this
    process is armed to run rounds."""

    operation: Literal["create", "edit", "pause", "resume", "complete", "block", "clear"]
    seq: int
    ref: GoalRef
    goal: GoalSnapshot | None
    armed: bool


@dataclass(frozen=True, slots=True)
class ContinueResult:
    """Whether this process may start the goal's next round now
    (``next_round``), or why not. When the budget is spent the server has
    blocked the goal (``blocked_at`` is that event's seq)."""

    proceed: bool
    reason: StopReason | None
    next_round: int | None
    blocked_at: int | None
    goal: GoalSnapshot | None
    armed: bool


# --------------------------------------------------------------------------
# Recorded facts


@dataclass(frozen=True, slots=True)
class RecordedEvent:
    """An event to record: the server assigns seq and time."""

    kind: Literal["assistant/message", "user/message", "request/header"]
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class AppendParams:
    """Facts to record, in order, in one compare-and-set append."""

    session: SessionId
    events: Annotated[tuple[RecordedEvent, ...], Meta(min_length=1, max_length=1000)]


@dataclass(frozen=True, slots=True)
class Appended:
    first_seq: int
    last_seq: int


# --------------------------------------------------------------------------
# The method table


@dataclass(frozen=True, slots=True)
class Method:
    """One method: its params and result types and what it does."""

    name: str
    params: type
    result: type
    summary: str
    appends: bool


def _method(name: str, params: type, result: type, summary: str, *, appends: bool = True) -> Method:
    return Method(name, params, result, summary, appends)


#: Every method, in the order a host meets them.
METHODS: Mapping[str, Method] = {
    m.name: m
    for m in (
        _method("session/open", SessionOpenParams, SessionInfo,
                "Open a session (strict replay of its log) with the host's tools, gate and prompt.", appends=False),
        _method("session/read", SessionParams, SessionInfo,
                "Where the session stands: mode, phase, plan, goal, last seq, pending choice.", appends=False),
        _method("session/close", SessionParams, SessionClosed,
                "Drop the session's process state (its log stays).", appends=False),
        _method("session/fork", ForkParams, Forked,
                "A new session whose log is this one's first N events (or those before turn K); both go on.",
                appends=False),
        _method("user/choose", ChooseParams, ChoiceResult,
                "The user chooses plan mode on or off: appended now between turns, queued inside one."),
        _method("user/command", CommandParams, CommandResult,
                "Apply a human's /plan, /plan off or /goal command, or say the line is a message."),
        _method("turn/start", TurnStartParams, TurnStarted,
                "Open a turn with its first user message (a human's, or a goal round's)."),
        _method("step/begin", StepBeginParams, StepBegun,
                "The pre-step: answer calls a stopped process left unanswered, flush the pending choice,"
                " start an approved plan, record the request header."),
        _method("step/context", ContextParams, RequestContext,
                "The request's prompt sections, plan view and the tools to offer.", appends=False),
        _method("step/reply", ReplyParams, ReplyRecorded,
                "Record the model's reply and its tool calls, each checked by the gate."),
        _method("tool/dispatch", DispatchParams, ToolAction,
                "What to do with the reply's next call: refused, done by the runtime, execute, or review."),
        _method("tool/result", ToolResultParams, ToolAnswered, "Record the host's result of an executed call."),
        _method("review/answer", ReviewAnswerParams, ToolAnswered,
                "Record a human's answer to the plan review of an exit_plan_mode call."),
        _method(
            "turn/end",
            SessionParams,
            TurnEnded,
            "Close the open turn. A call of it left unanswered by a process that stopped mid-turn is"
            " answered first, as a failed tool/result with the code call-interrupted.",
        ),
        _method("goal/create", GoalCreateParams, GoalResult, "Create a goal (arms this process)."),
        _method("goal/edit", GoalEditParams, GoalResult, "Edit the goal at a ref."),
        _method("goal/pause", GoalRefParams, GoalResult, "Pause the goal at a ref."),
        _method("goal/resume", GoalRefParams, GoalResult, "Resume the goal at a ref (arms this process)."),
        _method("goal/complete", GoalRefParams, GoalResult, "Complete the goal at a ref."),
        _method("goal/block", GoalBlockParams, GoalResult, "Block the goal at a ref, with a reason."),
        _method("goal/clear", GoalRefParams, GoalResult, "Clear the goal at a ref."),
        _method("goal/should_continue", SessionParams, ContinueResult,
                "Whether this process may start the goal's next round; blocks the goal when its budget is spent."),
        _method("events/append", AppendParams, Appended,
                "Record facts that decide nothing (assistant or human messages, request headers)."),
    )
}


#: The JSON-RPC error codes the server answers with, and what each means.
#: ``data.code`` always carries planfold's stable kebab-case code as well.
JSONRPC_ERRORS: Mapping[int, tuple[str, str]] = {
    -32700: ("Parse error", "the line is not JSON the server can read (or is too deep or too large)"),
    -32600: ("Invalid Request", "not a JSON-RPC 2.0 request object"),
    -32601: ("Method not found", "no such method"),
    -32602: ("Invalid params", "the params do not match the method's params type (data.detail says where)"),
    -32603: ("Internal error", "a bug in the server; nothing was written and it keeps serving"),
    -32000: ("Refused", "planfold refused the request (data.code says why); nothing was written"),
    -32001: ("Bad log", "the events would break a rule of the log (data.rule, data.position); nothing was written"),
    -32002: ("Conflict", "another writer appended first; the session was reloaded, nothing was written"),
    -32003: ("Out of order", "the call does not fit where the session's host is (data.stage); nothing was written"),
}
