"""The turn machine: one session's turns, steps and tool calls as a pure reducer.

Theory of operation
-------------------
A turn is a conversation between the model, the tools, a human and the log.
This module decides all of it and does none of it: ``advance(process, log,
event)`` takes the machine's process value, the session log as the driver
holds it now (its strict fold and its events) and one input (what the world
answered, or what a driver asks for), and returns the next process value and
the actions the world must carry out, in order. It reads no clock of its own
(the time an append is stamped with comes in with the input: a number, or the
driver's clock, which a transition calls only when it appends), touches no
store and calls nothing outside the kernel.

Actions:

- ``Append``: write these events at this expected seq (one compare-and-set
  append; the events are numbered and stamped, and ``state`` is their strict
  fold, so the store need not fold them again). The process value returned
  with it describes the world *after* the append: a driver adopts it only
  once the append is acknowledged. When the append fails the driver keeps
  the previous value (so the process never runs ahead of the store: there is
  nothing to undo) and, when the action says so (``on_failure``), hands the
  failure back to that previous value as ``AppendFailed``; otherwise the
  append's error is the operation's error.
- ``Then``: feed this input next (a continuation after an append).
- ``ProposeStep``: ask the deployment's step listeners about the step;
  answer ``StepVerdict``.
- ``AskModel``: send the request derived from ``basis``; answer ``Reply`` or
  ``ModelFailed``.
- ``ResolvePaths``: find where the call's effects really land; answer
  ``Resolved``.
- ``RunTool``: run the call's executor; answer ``ToolDone``.
- ``AskReview``: put the plan before a human; answer ``ReviewAnswered``.
- ``TurnOver``: the turn ended (``turn/end`` is recorded).
- ``Result``: what an operation asked by a driver returns to its caller
  (``planfold serve`` calls the operations one by one).

Which input each stage accepts is one literal table (``ACCEPTS``); an input
that does not fit is refused with ``StageError`` and changes nothing. The
rules themselves are the kernel's (``kernel.turn``: what a reply means and
what closes a turn a stopped process left open; ``kernel.decisions``: the
pre-step flush, the header, the plan lifecycle, the review; the gate).

Stages: ``idle`` (no turn open), ``turn`` (a turn is open between steps),
``step`` (a request header is recorded; the model is asked), ``calls`` (a
reply's calls wait to be answered, in order), ``resolve`` (a call waits for
where its effects land), ``execute`` (a call's executor runs), ``review``
(a plan waits for a human).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal

from .decisions import (
    PendingReview,
    ReviewDecision,
    decide_after_final_reply,
    decide_before_request,
    decide_plan_choice,
    decide_pre_step,
    decide_request_header,
    decide_review_answer,
    decide_tool_call,
    result_draft,
    tool_message_text,
)
from .errors import KernelError, PlanfoldError
from .log import Draft, Event, MessageSource, number_drafts, turn_start, user_message
from .phase import RuntimePhase
from .plan.context import ViewRequest, plan_to_start, runtime_phase
from .plan.mode import PendingChoice, StepVerdict
from .plan.review import ReviewAnswer, ReviewRequest
from .plan.scope import Effect
from .plan_events import fold_drafts
from .session import SessionState, fold_more
from .tools.events import ToolResult, read_tool_result, verdict_events
from .tools.gate import Allowed, GatePolicy, Refused, Verdict, check_call, list_available_specs
from .tools.spec import ToolCall, ToolRegistry
from .turn import RecordedReply, Reply, abandoned_turn, interrupted_calls, record_reply, scope_refusal

__all__ = [
    "ACCEPTS",
    "ANSWERED_BY",
    "RECOVERABLE_MODEL_ERRORS",
    "Action",
    "Append",
    "AppendFailed",
    "AskModel",
    "AskReview",
    "Asked",
    "At",
    "BeginStep",
    "CallEntry",
    "Choose",
    "Dispatch",
    "DispatchResult",
    "EndTurn",
    "Input",
    "Log",
    "ModelFailed",
    "Next",
    "Process",
    "ProposeStep",
    "ProposedStep",
    "ReplyIn",
    "RequestBasis",
    "ResolvePaths",
    "Resolved",
    "Result",
    "ReviewAnswered",
    "RunTool",
    "Stage",
    "StageError",
    "StartTurn",
    "StepBegun",
    "StepVerdictIn",
    "Tally",
    "Then",
    "ToolDone",
    "Transition",
    "TurnConfig",
    "TurnOver",
    "advance",
    "basis",
    "recorded_reply",
    "stage_of",
]

Stage = Literal["idle", "turn", "step", "calls", "resolve", "execute", "review"]

#: When an input happened, as its appends are stamped: a time in ms, or the
#: driver's clock, called only by a transition that appends (a driver that
#: hands its clock in reads it once per such transition, not per question).
At = int | Callable[[], int]

#: Model failures after which the same step is proposed again (while the
#: step's retry budget lasts).
RECOVERABLE_MODEL_ERRORS: frozenset[str] = frozenset(
    {
        "model-timeout",
        "model-unreachable",
        "model-rate-limited",
        "model-http-error",
        "model-retries-exhausted",
        "model-bad-response",
    }
)


class StageError(KernelError):
    """The input does not fit the machine's stage (the driver's fault):
    ``unexpected-call`` names a call other than the one answered next,
    ``out-of-order`` anything else. Nothing changed."""

    code = "out-of-order"
    codes = frozenset({"unexpected-call"})

    def __init__(self, message: str, stage: Stage, *, code: str = "out-of-order") -> None:
        super().__init__(message)
        self.code = code
        self.stage = stage


# --------------------------------------------------------------------------
# Values


@dataclass(frozen=True, slots=True)
class Log:
    """The session log as the driver holds it now: its strict fold and its
    events (an immutable sequence; ``events[i].seq == i + 1``)."""

    state: SessionState
    events: Sequence[Event]


@dataclass(frozen=True, slots=True)
class TurnConfig:
    """The deployment's limits and its tools: ``max_steps`` of a turn,
    ``max_tool_calls`` of one reply, ``step_retries`` (the retries of one
    step, shared with the model client's own), the registry and the gate
    policy."""

    registry: ToolRegistry
    policy: GatePolicy = field(default_factory=GatePolicy)
    max_steps: int = 16
    max_tool_calls: int = 32
    step_retries: int = 2


@dataclass(frozen=True, slots=True)
class Tally:
    """What one turn did so far (a driver's turn report is made from it)."""

    turn: int
    first_seq: int
    last_seq: int = 0
    steps: int = 0
    retries: int = 0
    reply: str | None = None
    error: str | None = None
    ended_by: str = "reply"
    flush_failures: int = 0
    closed_turn: int | None = None


@dataclass(frozen=True, slots=True)
class CallEntry:
    """A recorded call still to answer: its gate verdict and the notices
    recorded when it is dispatched."""

    call: ToolCall
    verdict: Verdict
    notices: tuple[Draft, ...]


@dataclass(frozen=True, slots=True)
class ProposedStep:
    """A step about to be requested: ``attempt`` counts same-step retries."""

    turn: int
    step: int
    attempt: int


@dataclass(frozen=True, slots=True)
class RequestBasis:
    """What a step's request is derived from: the fold its header describes,
    the events up to the request, the view asked, whether it is the first
    request of a resumed session, and the phase and tools on offer."""

    state: SessionState
    events: Sequence[Event]
    view: ViewRequest
    first_request: bool
    phase: RuntimePhase
    offered: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Process:
    """Everything the machine keeps outside the log. A value: a driver keeps
    the previous one when an append fails."""

    config: TurnConfig
    resumed: bool = False
    pending: PendingChoice | None = None
    view: ViewRequest = field(default_factory=ViewRequest)
    requests: int = 0
    view_state: SessionState | None = None
    step_open: bool = False
    asked: bool = False
    phase: RuntimePhase = "build_bootstrap"
    offered: tuple[str, ...] = ()
    calls: tuple[CallEntry, ...] = ()
    current: CallEntry | None = None
    awaiting: Literal["resolve", "execute", "review"] | None = None
    review: PendingReview | None = None
    trailing: tuple[Draft, ...] = ()
    #: whether this machine opened the open turn (False: a stopped process
    #: left it open, or none is)
    turn_mine: bool = False
    step: int = 1
    attempt: int = 0
    retries_used: int = 0
    follow: Literal["continue", "end"] = "continue"
    tally: Tally | None = None
    over: Tally | None = None

    @staticmethod
    def opened(config: TurnConfig, log: Log) -> Process:
        """A new process over ``log`` (a session resumed when it has events)."""
        return Process(config, resumed=log.state.last_seq > 0)

    def abandoned(self) -> Process:
        """The process after a driver forgot its turn, as a process that stops
        does (the log keeps the turn open; the next turn closes it)."""
        return Process(self.config, self.resumed, self.pending, requests=self.requests)


# --------------------------------------------------------------------------
# Inputs


@dataclass(frozen=True, slots=True)
class Choose:
    """The user chooses plan mode ``target``."""

    name: ClassVar[str] = "choose"
    target: bool
    at: At


@dataclass(frozen=True, slots=True)
class StartTurn:
    """Open a turn with ``text`` from ``source`` (None: a human)."""

    name: ClassVar[str] = "start-turn"
    text: str
    source: MessageSource | None
    view: ViewRequest
    at: At


@dataclass(frozen=True, slots=True)
class EndTurn:
    """Close the open turn."""

    name: ClassVar[str] = "end-turn"
    at: At


@dataclass(frozen=True, slots=True)
class Next:
    """What next? (a loop driver's one question between actions)"""

    name: ClassVar[str] = "next"
    at: At
    review_available: bool = True


@dataclass(frozen=True, slots=True)
class StepVerdictIn:
    """The step listeners' verdict on the proposed step."""

    name: ClassVar[str] = "step-verdict"
    verdict: StepVerdict
    at: At


@dataclass(frozen=True, slots=True)
class BeginStep:
    """The pre-step of ``step`` with the listeners' ``verdict``."""

    name: ClassVar[str] = "begin-step"
    step: int
    verdict: StepVerdict
    at: At
    flushed: bool | None = None
    #: proposed by the machine itself (``Next``): a rejected step ends the
    #: turn, and the driver is asked what next
    auto: bool = False


@dataclass(frozen=True, slots=True)
class Asked:
    """The open step's request was derived and handed out (counted once)."""

    name: ClassVar[str] = "asked"


@dataclass(frozen=True, slots=True)
class ReplyIn:
    """The model's reply to the open step; ``retries_used``: the step's
    retries spent so far, the model client's own included."""

    name: ClassVar[str] = "reply"
    reply: Reply
    at: At
    retries_used: int = 0


@dataclass(frozen=True, slots=True)
class ModelFailed:
    """The model call of the open step failed with ``code``."""

    name: ClassVar[str] = "model-failed"
    code: str
    message: str
    retryable: bool | None
    retries_used: int = 0


@dataclass(frozen=True, slots=True)
class Dispatch:
    """Answer the reply's next call up to where a driver takes over."""

    name: ClassVar[str] = "dispatch"
    call_id: str
    at: At
    review_available: bool = True


@dataclass(frozen=True, slots=True)
class Resolved:
    """Where the effects of the call waiting in ``resolve`` really land."""

    name: ClassVar[str] = "resolved"
    call_id: str
    effects: tuple[Effect, ...]
    at: At


@dataclass(frozen=True, slots=True)
class ToolDone:
    """What the executor returned for the call being run."""

    name: ClassVar[str] = "tool-done"
    call_id: str
    ok: bool
    output: str
    at: At


@dataclass(frozen=True, slots=True)
class ReviewAnswered:
    """A human's answer to the review of an ``exit_plan_mode`` call."""

    name: ClassVar[str] = "review-answer"
    call_id: str
    answer: ReviewAnswer
    at: At


@dataclass(frozen=True, slots=True)
class AppendFailed:
    """The append of ``purpose`` failed (fed to the process before it)."""

    name: ClassVar[str] = "append-failed"
    purpose: str
    at: At
    detail: tuple[object, ...] = ()


Input = (
    Choose | StartTurn | EndTurn | Next | StepVerdictIn | BeginStep | Asked | ReplyIn | ModelFailed
    | Dispatch | Resolved | ToolDone | ReviewAnswered | AppendFailed
)


# --------------------------------------------------------------------------
# Actions


@dataclass(frozen=True, slots=True)
class Append:
    """Append ``events`` at ``expected_seq``; ``before`` and ``state`` are
    the fold they follow and their strict fold. When it fails and
    ``on_failure`` is set, feed ``AppendFailed(on_failure, ...)`` to the
    previous process; otherwise the failure is the operation's."""

    expected_seq: int
    events: tuple[Event, ...]
    before: SessionState
    state: SessionState
    on_failure: str | None = None
    detail: tuple[object, ...] = ()


@dataclass(frozen=True, slots=True)
class Then:
    """Feed ``event`` next."""

    event: Input


@dataclass(frozen=True, slots=True)
class ProposeStep:
    """Ask the step listeners about ``step``; answer ``StepVerdictIn``."""

    step: ProposedStep


@dataclass(frozen=True, slots=True)
class AskModel:
    """Send the request derived from ``basis`` (step ``step``, same-step
    retry ``attempt``, ``retries_used`` of the step's budget already
    spent); answer ``ReplyIn`` or ``ModelFailed``."""

    basis: RequestBasis
    step: int
    attempt: int
    retries_used: int


@dataclass(frozen=True, slots=True)
class ResolvePaths:
    """Find where ``call``'s effects land; answer ``Resolved``."""

    call: ToolCall


@dataclass(frozen=True, slots=True)
class RunTool:
    """Run ``call``'s executor with the log sealed; answer ``ToolDone``."""

    call: ToolCall


@dataclass(frozen=True, slots=True)
class AskReview:
    """Put ``request`` (the rendered plan of ``call``) before a human;
    answer ``ReviewAnswered``."""

    call: ToolCall
    request: ReviewRequest


@dataclass(frozen=True, slots=True)
class TurnOver:
    """The turn ended (``turn/end`` is recorded)."""

    tally: Tally


@dataclass(frozen=True, slots=True)
class StepBegun:
    """A pre-step's outcome: accepted, whether a pending choice was recorded,
    whether a plan started, and the header's seq."""

    accepted: bool
    flushed: bool
    started: bool
    header_seq: int | None


@dataclass(frozen=True, slots=True)
class DispatchResult:
    """How a call was answered up to where a driver takes over: ``refused``
    or ``done`` (its answer is in the log: ``ok``, ``output``), ``execute``
    (run it) or ``review`` (ask a human: ``review``)."""

    call: ToolCall
    action: Literal["refused", "done", "execute", "review"]
    ok: bool | None = None
    output: str | None = None
    review: ReviewRequest | None = None


@dataclass(frozen=True, slots=True)
class Result:
    """What the operation returns to its caller."""

    value: object


Action = Append | Then | ProposeStep | AskModel | ResolvePaths | RunTool | AskReview | TurnOver | Result

#: Each action a driver carries out, and the inputs that answer it (an
#: acknowledged append is answered by carrying on with the actions after it).
ANSWERED_BY: Mapping[type, tuple[str, ...]] = {
    Append: ("append-failed",),
    Then: (),
    ProposeStep: ("step-verdict",),
    AskModel: ("reply", "model-failed"),
    ResolvePaths: ("resolved",),
    RunTool: ("tool-done",),
    AskReview: ("review-answer",),
    TurnOver: (),
    Result: (),
}


@dataclass(frozen=True, slots=True)
class Transition:
    """The next process value and the actions to carry out, in order."""

    process: Process
    actions: tuple[Action, ...]


# --------------------------------------------------------------------------
# The stage table

#: Each stage and the inputs it accepts (by their ``name``). ``choose`` is
#: accepted everywhere: a choice in a turn waits for the next pre-step.
ACCEPTS: Mapping[Stage, frozenset[str]] = {
    "idle": frozenset({"choose", "start-turn", "next", "append-failed"}),
    "turn": frozenset({"choose", "start-turn", "end-turn", "next", "step-verdict", "begin-step", "append-failed"}),
    "step": frozenset(
        {"choose", "end-turn", "next", "begin-step", "asked", "reply", "model-failed", "append-failed"}
    ),
    "calls": frozenset({"choose", "next", "dispatch", "append-failed"}),
    "resolve": frozenset({"choose", "resolved", "append-failed"}),
    "execute": frozenset({"choose", "tool-done", "append-failed"}),
    "review": frozenset({"choose", "next", "review-answer", "append-failed"}),
}


def stage_of(process: Process, log: Log) -> Stage:
    """The stage ``process`` is at over ``log``."""
    if process.awaiting is not None:
        return process.awaiting
    if process.calls:
        return "calls"
    if not log.state.turns.open:
        return "idle"
    return "step" if process.step_open else "turn"


# --------------------------------------------------------------------------
# A transition in the making


class _Work:
    """The appends of one transition, folded as they are decided (the events
    are numbered to follow the log and stamped ``at``)."""

    __slots__ = ("_at", "_time", "before", "events", "first", "state")

    def __init__(self, log: Log, at: At) -> None:
        self.before = log.state
        self.state = log.state
        self.first = log.state.last_seq
        self._time = at
        self._at: int | None = None
        self.events: list[Event] = []

    @property
    def at(self) -> int:
        """The time the events are stamped with (the input's, its clock read
        at the first append), never earlier than the log's last event."""
        if self._at is None:
            at = self._time if isinstance(self._time, int) else self._time()
            last = self.before.last
            self._at = at if last is None or at >= last.at else last.at
        return self._at

    def append(self, drafts: Sequence[Draft]) -> tuple[Event, ...]:
        if not drafts:
            return ()
        batch = number_drafts(drafts, self.state.last_seq, self.at)
        self.state = fold_more(self.state, batch)
        self.events.extend(batch)
        return batch

    def joined(self, log: Log) -> Sequence[Event]:
        """``log``'s events, then this transition's (a view for decisions that read events)."""
        return _Joined(log.events, tuple(self.events))

    def action(self, on_failure: str | None = None, detail: tuple[object, ...] = ()) -> tuple[Action, ...]:
        if not self.events:
            return ()
        return (Append(self.first, tuple(self.events), self.before, self.state, on_failure, detail),)


class _Joined(Sequence[Event]):
    """``head`` then ``tail`` as one immutable sequence."""

    __slots__ = ("_head", "_tail")

    def __init__(self, head: Sequence[Event], tail: tuple[Event, ...]) -> None:
        self._head, self._tail = head, tail

    def __len__(self) -> int:
        return len(self._head) + len(self._tail)

    def __getitem__(self, index):  # type: ignore[no-untyped-def]
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        size = len(self)
        position = index + size if index < 0 else index
        if not 0 <= position < size:
            raise IndexError("index out of range")
        head = len(self._head)
        return self._head[position] if position < head else self._tail[position - head]


#: What each input is called in a refusal.
_WHAT: Mapping[str, str] = {
    "start-turn": "turn/start",
    "end-turn": "turn/end",
    "begin-step": "step/begin",
    "asked": "step/context",
    "reply": "step/reply",
    "model-failed": "a model failure",
}


def _require(process: Process, log: Log, event: Input) -> Stage:
    stage = stage_of(process, log)
    if event.name not in ACCEPTS[stage]:
        call_id = getattr(event, "call_id", None)
        what = f"answering call {call_id!r}" if call_id is not None else _WHAT.get(event.name, event.name)
        wanted = tuple(s for s, names in ACCEPTS.items() if event.name in names)
        raise _refuse(what, stage, *wanted)
    return stage


def _refuse(what: str, stage: Stage, *stages: Stage) -> StageError:
    return StageError(f"{what} needs the session at {' or '.join(stages)}, but it is at {stage}", stage)


# --------------------------------------------------------------------------
# The reducer


def advance(process: Process, log: Log, event: Input) -> Transition:
    """The machine's answer to ``event`` (see the module docstring). Raises
    ``StageError`` when ``event`` does not fit the stage, and the kernel's
    typed errors when an append would break the log (``ReplayError``);
    either way nothing changed."""
    stage = _require(process, log, event)
    handler = _HANDLERS[event.name]
    return handler(process, log, event, stage)


def _choose(p: Process, log: Log, e: Choose, stage: Stage) -> Transition:
    choice = decide_plan_choice(log.state, log.events, p.pending, e.target, tool_running=stage == "execute")
    work = _Work(log, e.at)
    work.append(choice.drafts)
    return Transition(replace(p, pending=choice.pending), (*work.action(), Result(choice.outcome)))


def _start_turn(p: Process, log: Log, e: StartTurn, stage: Stage) -> Transition:
    if p.turn_mine:
        raise _refuse("turn/start", stage, "idle")
    state = log.state
    closing = abandoned_turn(state, log.events)  # nothing when no turn is open
    number = state.turns.turn + 1
    work = _Work(log, e.at)
    opened = work.append((*closing, turn_start(number), user_message(e.text, e.source)))
    tally = Tally(number, opened[len(closing)].seq, closed_turn=state.turns.turn if closing else None)
    after = replace(
        p, view=e.view, step_open=False, asked=False, turn_mine=True, step=1, attempt=0, retries_used=0,
        follow="continue", tally=tally, over=None, calls=(), current=None, awaiting=None, review=None, trailing=(),
    )
    return Transition(after, (*work.action(), Result(tally)))


def _end_turn(p: Process, log: Log, e: EndTurn, stage: Stage) -> Transition:
    work = _Work(log, e.at)
    work.append(abandoned_turn(log.state, log.events))
    tally = p.tally
    if tally is not None:
        tally = replace(tally, last_seq=work.state.last_seq)
    after = replace(p, step_open=False, asked=False, turn_mine=False, tally=None, over=tally)
    return Transition(after, (*work.action(), Result(tally)))


def _begin_step(p: Process, log: Log, e: BeginStep, stage: Stage) -> Transition:
    if e.verdict == "accepted":  # a header the log would refuse is refused before anything is written
        fold_drafts(log.state, (decide_request_header(log.state, e.step),))
    if e.flushed is None:
        # The pre-step flush, its own append: when it fails the choice stays
        # pending and the step goes on as a request of the recorded state.
        work = _Work(log, e.at)
        try:
            work.append(interrupted_calls(log.state, log.events))
            decided = decide_pre_step(work.state, work.joined(log), p.pending, e.verdict)
            work.append(decided.drafts)
        except PlanfoldError:
            return _flush_failed(p, log, e)
        if not work.events:
            return _begun(p, log, e)  # nothing flushed
        after = replace(p, pending=decided.pending_after_success)
        flushed = replace(e, flushed=bool(decided.drafts))
        return Transition(after, (*work.action("flush", (e,)), Then(flushed)))
    return _begun(p, log, e)


def _begun(p: Process, log: Log, e: BeginStep) -> Transition:
    flushed = bool(e.flushed)
    if e.verdict != "accepted":
        after = replace(p, step_open=False, asked=False)
        if not e.auto:
            return Transition(after, (Result(StepBegun(False, flushed, False, None)),))
        tally = after.tally if after.tally is None else replace(after.tally, ended_by="step-rejected")
        return Transition(replace(after, follow="end", tally=tally), (Then(Next(e.at)),))
    started = plan_to_start(log.state) is not None
    work = _Work(log, e.at)
    work.append(decide_before_request(log.state))
    view_state = work.state
    (header,) = work.append((decide_request_header(work.state, e.step),))
    phase = runtime_phase(view_state)
    offered = tuple(spec.name for spec in list_available_specs(p.config.registry, phase, p.config.policy))
    after = replace(p, step_open=True, asked=False, view_state=view_state, phase=phase, offered=offered)
    last: Action = Then(Next(e.at)) if e.auto else Result(StepBegun(True, flushed, started, header.seq))
    return Transition(after, (*work.action(), last))


def _append_failed(p: Process, log: Log, e: AppendFailed, stage: Stage) -> Transition:
    begin = e.detail[0] if e.purpose == "flush" and len(e.detail) == 1 else None
    if not isinstance(begin, BeginStep):
        raise StageError(f"no append of {e.purpose!r} can fail here", stage)
    return _flush_failed(p, log, begin)


def _flush_failed(p: Process, log: Log, begin: BeginStep) -> Transition:
    """The pre-step's flush failed: the choice stays pending (counted in the
    tally) and the step goes on as a request of the recorded state."""
    tally = p.tally if p.tally is None else replace(p.tally, flush_failures=p.tally.flush_failures + 1)
    return _begun(replace(p, tally=tally), log, replace(begin, flushed=False))


def basis(p: Process, log: Log) -> RequestBasis:
    """What the open step's request is derived from."""
    return RequestBasis(
        p.view_state or log.state, log.events, p.view, p.resumed and p.requests == 0, p.phase, p.offered
    )


def _asked(p: Process, log: Log, e: Asked, stage: Stage) -> Transition:
    if p.asked:
        return Transition(p, ())
    tally = p.tally if p.tally is None else replace(p.tally, steps=p.tally.steps + 1)
    return Transition(replace(p, asked=True, requests=p.requests + 1, tally=tally), ())


def _model_failed(p: Process, log: Log, e: ModelFailed, stage: Stage) -> Transition:
    p = _asked(p, log, Asked(), stage).process
    retry = e.retryable is not False and e.code in RECOVERABLE_MODEL_ERRORS
    used = max(p.retries_used, e.retries_used)
    p = replace(p, step_open=False, asked=False, retries_used=used)
    if retry and used < p.config.step_retries:
        tally = p.tally if p.tally is None else replace(p.tally, retries=p.tally.retries + 1)
        return Transition(replace(p, attempt=p.attempt + 1, retries_used=used + 1, tally=tally), (Result(True),))
    tally = p.tally
    if tally is not None:
        tally = replace(tally, error=f"[{e.code}] {e.message}", ended_by="model-error")
    return Transition(replace(p, follow="end", tally=tally), (Result(False),))


def _reply(p: Process, log: Log, e: ReplyIn, stage: Stage) -> Transition:
    p = _asked(p, log, Asked(), stage).process
    cfg = p.config
    recorded = record_reply(e.reply, cfg.registry, cfg.policy, p.phase, p.offered, max_tool_calls=cfg.max_tool_calls)
    work = _Work(log, e.at)
    work.append(recorded.batch)
    entries = tuple(
        CallEntry(call, verdict, notices)
        for call, verdict, notices in zip(recorded.calls, recorded.verdicts, recorded.notices, strict=True)
    )
    p = replace(p, step_open=False, asked=False, calls=entries, trailing=recorded.trailing, retries_used=0)
    p = _settle(p, work)
    follow: Literal["continue", "end"] = "end" if recorded.outcome == "stop" else "continue"
    if recorded.outcome == "final":
        verify = decide_after_final_reply(work.state)
        work.append(verify)
        if not verify:
            follow = "end"
    tally = p.tally
    if tally is not None:
        tally = replace(tally, reply=recorded.text)
        if recorded.ended_by is not None:
            tally = replace(tally, error=recorded.error, ended_by=recorded.ended_by)
    p = replace(p, follow=follow, step=p.step + 1, attempt=0, tally=tally)
    return Transition(p, (*work.action(), Result(recorded)))


def _settle(p: Process, work: _Work) -> Process:
    """Once every call of the reply is answered, append the notices owed after them."""
    if p.calls or p.current is not None:
        return p
    for notice in p.trailing:
        work.append((notice,))
    return replace(p, trailing=())


def _dispatch(p: Process, log: Log, e: Dispatch, stage: Stage) -> Transition:
    entry = _expect(p, stage, e.call_id)
    p = replace(p, calls=p.calls[1:])
    work = _Work(log, e.at)
    work.append(entry.notices)
    call, verdict = entry.call, entry.verdict
    if isinstance(verdict, Allowed):
        phase = runtime_phase(work.state)
        if phase != p.phase:
            # An earlier call of this reply moved the phase: ask the gate
            # again, at the phase this call would now run in.
            verdict = check_call(p.config.registry, phase, p.config.policy, call, p.offered)
            again = verdict_events(call, verdict)[1:]
            work.append([Draft(kind, payload) for kind, payload in again])
    if isinstance(verdict, Refused):
        return _answered(p, work, call, "refused")
    if verdict.route == "runtime":
        return _runtime_call(p, log, work, entry, e.review_available)
    work.append(decide_before_request(work.state))  # a plan made executable in this reply
    p = replace(p, current=entry, awaiting="resolve")
    return Transition(p, (*work.action(), ResolvePaths(call)))


def _resolved(p: Process, log: Log, e: Resolved, stage: Stage) -> Transition:
    entry = _expect(p, stage, e.call_id)
    call = entry.call
    refusal = scope_refusal(log.state, call, e.effects)
    if refusal is None:
        return Transition(replace(p, awaiting="execute"), (Result(DispatchResult(call, "execute")), RunTool(call)))
    realign, result = refusal  # realigned: nothing runs
    work = _Work(log, e.at)
    work.append(realign)
    work.append((result,))
    return _answered(replace(p, current=None, awaiting=None), work, call, "done")


def _answered(p: Process, work: _Work, call: ToolCall, action: Literal["refused", "done"]) -> Transition:
    last = work.events[-1] if work.events else None
    assert last is not None
    ok = False if action == "refused" else read_tool_result(last.payload).ok
    output = tool_message_text(last)
    p = _settle(p, work)
    return Transition(p, (*work.action(), Result(DispatchResult(call, action, ok, output))))


def _runtime_call(p: Process, log: Log, work: _Work, entry: CallEntry, review_available: bool) -> Transition:
    call = entry.call
    makes_plan = call.name in ("exit_plan_mode", "bootstrap_plan")
    new_plan_id = f"plan-{work.state.last_seq + 1}" if makes_plan else ""
    decision = decide_tool_call(work.state, call, new_plan_id=new_plan_id, review_available=review_available)
    # Decided on this very state by the fold's own rules (decide_tool_call folds
    # its drafts first and answers a refusal as the call's failed result), at a
    # time _Work never lets go backwards: the log takes them.
    work.append(decision.drafts)
    if decision.review is None:
        return _answered(p, work, call, "done")
    p = replace(p, current=entry, awaiting="review", review=decision.review)
    result = DispatchResult(call, "review", review=decision.review.request)
    return Transition(p, (*work.action(), Result(result)))


def _tool_done(p: Process, log: Log, e: ToolDone, stage: Stage) -> Transition:
    entry = _expect(p, stage, e.call_id)
    work = _Work(log, e.at)
    call = entry.call
    (written,) = work.append((result_draft(ToolResult(call.id, call.name, e.ok, e.output)),))
    p = _settle(replace(p, current=None, awaiting=None), work)
    return Transition(p, (*work.action(), Result(written)))


def _review_answer(p: Process, log: Log, e: ReviewAnswered, stage: Stage) -> Transition:
    _expect(p, stage, e.call_id)
    assert p.review is not None
    reviewed: ReviewDecision = decide_review_answer(log.state, p.review, e.answer)
    work = _Work(log, e.at)
    written = work.append(reviewed.drafts)
    pending = reviewed.exit if reviewed.exit is not None else p.pending
    p = _settle(replace(p, current=None, awaiting=None, review=None, pending=pending), work)
    return Transition(p, (*work.action(), Result((reviewed, written[-1].seq))))


def _expect(p: Process, stage: Stage, call_id: str) -> CallEntry:
    """The call the input at ``stage`` answers: the next one to dispatch, or
    the one being resolved, run or reviewed."""
    head = p.calls[0] if stage == "calls" else p.current
    assert head is not None
    if head.call.id != call_id:
        raise StageError(
            f"call {head.call.id!r} is answered next, not {call_id!r}", stage, code="unexpected-call"
        )
    return head


def _next(p: Process, log: Log, e: Next, stage: Stage) -> Transition:
    """What the driver must do next: ask the model, resolve, run, review,
    propose a step, or the turn is over; between them the machine answers
    what it can itself (a call, the end of the turn)."""
    if stage == "review":
        assert p.current is not None and p.review is not None
        return Transition(p, (AskReview(p.current.call, p.review.request),))
    if stage == "step":
        return Transition(p, (AskModel(basis(p, log), p.step, p.attempt, p.retries_used),))
    if stage == "calls":
        done = _dispatch(p, log, Dispatch(p.calls[0].call.id, e.at, e.review_available), stage)
        actions = tuple(a for a in done.actions if not isinstance(a, Result))
        if actions and isinstance(actions[-1], ResolvePaths):
            return Transition(done.process, actions)
        return Transition(done.process, (*actions, Then(e)))
    if stage == "idle":
        if p.over is None:
            raise StageError("no turn was started", stage)
        return Transition(p, (TurnOver(p.over),))
    if not p.turn_mine:
        raise StageError("the open turn was left by a process that stopped; start a turn", stage)
    if p.follow == "end" or p.step > p.config.max_steps:
        if p.follow != "end" and p.tally is not None:
            p = replace(p, tally=replace(p.tally, ended_by="max-steps"))
        ended = _end_turn(p, log, EndTurn(e.at), stage)
        actions = tuple(a for a in ended.actions if not isinstance(a, Result))
        return Transition(ended.process, (*actions, Then(e)))
    assert p.tally is not None
    return Transition(p, (ProposeStep(ProposedStep(p.tally.turn, p.step, p.attempt)),))


def _step_verdict(p: Process, log: Log, e: StepVerdictIn, stage: Stage) -> Transition:
    return _begin_step(p, log, BeginStep(p.step, e.verdict, e.at, auto=True), stage)


_Handler = Callable[[Process, Log, Any, Stage], Transition]

_HANDLERS: Mapping[str, _Handler] = {
    "choose": _choose,
    "start-turn": _start_turn,
    "end-turn": _end_turn,
    "next": _next,
    "step-verdict": _step_verdict,
    "begin-step": _begin_step,
    "asked": _asked,
    "reply": _reply,
    "model-failed": _model_failed,
    "dispatch": _dispatch,
    "resolved": _resolved,
    "tool-done": _tool_done,
    "review-answer": _review_answer,
    "append-failed": _append_failed,
}


def recorded_reply(result: object) -> RecordedReply:
    """The ``RecordedReply`` a reply's ``Result`` carries."""
    assert isinstance(result, RecordedReply)
    return result

