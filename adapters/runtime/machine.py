"""The step machine: one session's turns, steps and tool calls, with no I/O
of the model, the tools or the human.

Theory of operation
-------------------
Every loop that runs planfold turns (the synchronous ``Runtime``, the
asyncio ``AsyncRuntime`` and ``planfold serve``'s host sessions) drives one
``StepMachine``. The machine holds the session log and the process state a
turn needs (the pending plan-mode choice, the turn's plan-view request, the
reply's calls still to answer, the review waiting for a human) and answers
one question, "what next?" (``next_action``), with one of four actions:

- ``AskModel``: send this request to the model, then ``reply`` with its
  answer, or ``model_failed`` with the ``ModelError`` it raised;
- ``RunTool``: run this call's executor, then ``tool_result``;
- ``Review``: put this plan before a human, then ``review_answer``;
- ``TurnOver``: the turn ended; the report says how.

The machine's own I/O is its session log (the store) and, before an
executor call runs, the tool runner's resolver, which finds where the call's
writes really land so that the kernel's scope check decides on that (a real
directory's resolver reads the file system; the in-memory workspace's does
not).

Everything between those answers is decided here, always in the same order,
by the kernel's rules (``kernel.turn``: what a reply means, the calls a
stopped process left unanswered, the scope refusal; ``kernel.decisions``:
the pre-step flush, the request header, the plan lifecycle; the gate). A
driver never decides anything: it carries out the action and hands the
answer back. ``serve`` calls the same operations one by one (``begin_step``,
``request``, ``reply``, ``dispatch``, ``tool_result``, ``review_answer``,
``end_turn``) in the order its host chooses; where a call does not fit the
machine's ``stage`` it is refused (``OutOfOrderError``) and nothing happens.

An answer that does not fit the action asked for (a tool result for another
call, a review answer while a tool runs) is refused the same way and changes
nothing.

Stages: ``idle`` (no turn open), ``turn`` (a turn is open between steps),
``step`` (a request header is recorded; the model is asked), ``calls`` (a
reply's calls wait to be answered, in order), ``execute`` (a call's executor
runs; the log is sealed meanwhile), ``review`` (a plan waits for a human).

Failed appends
--------------
Each operation is atomic: its appends are held (``UnitStore``) and written in
one compare-and-set append when it returns. When anything in it fails
(a refusal, a conflict with another writer, a storage fault), the log's
in-memory state and the process state are put back exactly as they were
before the operation, without asking the store again, and the operation's
own error propagates (with its outcome: ``not-applied`` or ``unknown``):
the machine never runs ahead of the store, whether or not the store can be
reached afterwards. After a conflict, where the store is known to be ahead,
the log is read again when the store answers. Only the pre-step flush of a
pending plan-mode choice is its own unit: when it fails the choice stays
pending and the step goes on as a request of the recorded state.

The log is the only durable state: a machine built from a session's log at
any point (after a crash, a kill, a cancelled task) knows everything the log
knows. A turn left open by a process that stopped is closed as the next turn
opens (``kernel.turn.abandoned_turn``: its unanswered calls are answered as
``call-interrupted``, then it ends); a step begun on it first answers such
calls, so that the model's transcript answers every call.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, TypeVar

from ...kernel.decisions import (
    PendingReview,
    ReviewDecision,
    decide_after_final_reply,
    decide_before_request,
    decide_plan_choice,
    decide_pre_step,
    decide_request_header,
    decide_review_answer,
    decide_tool_call,
)
from ...kernel.errors import ConflictError, PlanfoldError
from ...kernel.log import Draft, Event, MessageSource, turn_start, user_message
from ...kernel.plan.context import ViewRequest, plan_to_start, runtime_phase
from ...kernel.plan.mode import ChoiceOutcome, PendingChoice, PlanModeView, StepVerdict
from ...kernel.plan.review import ReviewAnswer, ReviewRequest
from ...kernel.plan_events import fold_drafts
from ...kernel.session import SessionState
from ...kernel.tools.events import verdict_events
from ...kernel.tools.gate import Allowed, Refused, Verdict, check_call
from ...kernel.turn import RecordedReply, abandoned_turn, interrupted_calls, record_reply, scope_refusal
from ..delegation import Delegated
from ..errors import AdapterError
from ..llm import model
from ..provenance import ForkProvenance
from ..store.base import (
    AppendResult,
    Folded,
    FoldedAppend,
    ForwardingStore,
    InvalidRequestError,
    Store,
    TakesFold,
    append_to,
)
from ..store.fork import fork_at_turn
from ..store.session_log import Clock, LogSealedError, SessionLog, system_clock
from .prompt import Conversation, PreparedRequest, PromptConfig, prepare_request
from .resolve import resolved_effects
from .tool_runner import (
    ToolRunner,
    answer_of,
    error_output,
    from_reply_call,
    kernel_call,
    reply_of,
    result_draft,
)

__all__ = [
    "ANSWERS",
    "DRIVERS",
    "RECOVERABLE_MODEL_ERRORS",
    "Action",
    "AskModel",
    "Dispatched",
    "OutOfOrderError",
    "ProposedStep",
    "Review",
    "RunTool",
    "Stage",
    "StepBegun",
    "StepListener",
    "StepMachine",
    "TurnOver",
    "TurnReport",
    "UnitStore",
]

T = TypeVar("T")

#: Model failures after which the same step is proposed again.
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

Stage = Literal["idle", "turn", "step", "calls", "execute", "review"]


class OutOfOrderError(AdapterError):
    """The call does not fit the machine's ``stage`` (the driver's fault):
    ``unexpected-call`` names a call other than the one answered next,
    ``session-open`` opens a session that is open already. Nothing changed."""

    code = "out-of-order"
    codes = frozenset({"unexpected-call", "session-open"})

    def __init__(self, message: str, stage: Stage, *, code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.stage = stage


# --------------------------------------------------------------------------
# Actions and reports


@dataclass(frozen=True, slots=True)
class ProposedStep:
    """A step the machine is about to request: ``attempt`` is 0 for the first
    proposal and counts same-step retries."""

    turn: int
    step: int
    attempt: int


StepListener = Callable[[ProposedStep], StepVerdict]


@dataclass
class TurnReport:
    """What one turn did: its first and last seq, the steps it requested,
    the same-step retries, the assistant's last text, how it ended
    (``reply``, ``step-rejected``, ``model-error``, ``max-steps``,
    ``content-filter``, ``refused``), the error that ended it early, the
    flushes whose append failed, and the turn an earlier process had left
    open, closed just before this one (``None`` when there was none)."""

    turn: int
    first_seq: int
    last_seq: int = 0
    steps: int = 0
    retries: int = 0
    reply: str | None = None
    error: str | None = None
    ended_by: str = "reply"
    flush_failures: int = 0
    requests: list[PreparedRequest] = field(default_factory=list)
    closed_turn: int | None = None


@dataclass(frozen=True, slots=True)
class AskModel:
    """Send ``request`` to the model (step ``step``, same-step retry
    ``attempt``); answer with ``reply`` or ``model_failed``."""

    request: model.ChatRequest
    prepared: PreparedRequest
    step: int
    attempt: int


@dataclass(frozen=True, slots=True)
class RunTool:
    """Run ``call``'s executor with the log sealed; answer with ``tool_result``."""

    call: model.ToolCall


@dataclass(frozen=True, slots=True)
class Review:
    """Put ``request`` (the rendered plan of ``call``) before a human; answer
    with ``review_answer``."""

    call: model.ToolCall
    request: ReviewRequest


@dataclass(frozen=True, slots=True)
class TurnOver:
    """The turn ended (``turn/end`` is recorded)."""

    report: TurnReport


Action = AskModel | RunTool | Review | TurnOver

#: Each action and the machine operations that answer it (the README's
#: picture of the machine is drawn from this table and ``DRIVERS``).
ANSWERS: Mapping[type[Action], tuple[str, ...]] = {
    AskModel: ("reply", "model_failed"),
    RunTool: ("tool_result",),
    Review: ("review_answer",),
    TurnOver: (),
}

#: The loops that drive a step machine: module, class, and how it runs.
DRIVERS: tuple[tuple[str, str, str], ...] = (
    ("adapters.runtime.loop", "Runtime", "synchronous"),
    ("adapters.runtime.aio", "AsyncRuntime", "asyncio"),
    ("adapters.serve.host", "HostSession", "planfold serve, JSON-RPC"),
)


@dataclass(frozen=True, slots=True)
class StepBegun:
    """A pre-step's outcome: whether the step was accepted, whether a pending
    choice was recorded, whether a plan started, and the header's seq."""

    accepted: bool
    flushed: bool
    started: bool
    header_seq: int | None


@dataclass(frozen=True, slots=True)
class Dispatched:
    """How a call was answered up to where a driver takes over: ``refused``
    or ``done`` (its answer is in the log: ``ok``, ``output``), ``execute``
    (run it) or ``review`` (ask a human: ``review``)."""

    call: model.ToolCall
    action: Literal["refused", "done", "execute", "review"]
    ok: bool | None = None
    output: str | None = None
    review: ReviewRequest | None = None


# --------------------------------------------------------------------------
# A unit of work over a store


class UnitStore(TakesFold, ForwardingStore):
    """A ``Store`` that, inside a unit, holds one session's appends and
    writes them at ``commit`` in one compare-and-set append; outside a unit
    it passes everything through. Reads see the held events; closing it
    leaves the shared store open (only its owner closes it). The folds the
    held appends came with, when each was made on the one before's result,
    join into one fold of all of them for the store (see ``base.Folded``)."""

    def __init__(self, inner: Store, session_id: str) -> None:
        super().__init__(inner)
        self.session_id = session_id
        self._open = False
        self._base = 0
        self._held: list[Event] = []
        self._folded: Folded | None = None

    @property
    def held(self) -> tuple[Event, ...]:
        return tuple(self._held)

    def begin(self) -> None:
        self._open, self._held, self._folded = True, [], None

    def commit(self) -> None:
        """Write what the unit holds (may raise; the unit is closed either way)."""
        held, folded = tuple(self._held), self._folded
        self.discard()
        if held:
            append_to(self.inner, FoldedAppend(self.session_id, self._base, held, None, folded))

    def discard(self) -> None:
        self._open, self._held, self._folded = False, [], None

    def append_folded(self, request: FoldedAppend) -> AppendResult:
        session_id, expected_seq, events, _, folded = request
        if not self._open or session_id != self.session_id:
            return append_to(self.inner, request)
        head = self._base + len(self._held) if self._held else expected_seq
        if expected_seq != head:
            raise ConflictError(session_id, expected_seq, head)
        if not self._held:
            self._base, self._folded = expected_seq, folded
        elif self._folded is not None and folded is not None and folded.before is self._folded.after:
            self._folded = Folded(self._folded.before, folded.after)
        else:
            self._folded = None  # an append without a fold, or on another state: the store folds the unit
        self._held.extend(events)
        return AppendResult(session_id, expected_seq + 1, expected_seq + len(events))

    def head(self, session_id: str) -> int:
        held = self._held if session_id == self.session_id else []
        return held[-1].seq if held else self.inner.head(session_id)

    def read(self, session_id: str, after: int = 0) -> tuple[Event, ...]:
        held = self._held if session_id == self.session_id else []
        return self.inner.read(session_id, after) + tuple(e for e in held if e.seq > after)

    def close(self) -> None:
        """The shared store stays open."""


# --------------------------------------------------------------------------
# Process state


@dataclass(frozen=True, slots=True)
class _Call:
    """A recorded call still to answer: its gate verdict and the notices
    (``tool/refused`` or ``tool/warning``) recorded when it is dispatched."""

    call: model.ToolCall
    verdict: Verdict
    notices: tuple[Draft, ...]


@dataclass
class _Process:
    """Everything the machine keeps outside the log (copied before each
    operation and put back when it fails)."""

    pending: PendingChoice | None = None
    view: ViewRequest = field(default_factory=ViewRequest)
    requests: int = 0
    view_state: SessionState | None = None
    step_open: bool = False
    prepared: PreparedRequest | None = None
    calls: tuple[_Call, ...] = ()
    current: _Call | None = None
    awaiting: Literal["execute", "review"] | None = None
    review: PendingReview | None = None
    trailing: tuple[Draft, ...] = ()
    #: whether this machine opened the turn that is open (False: a stopped
    #: process left it open, or none is)
    turn_mine: bool = False
    #: the step to propose next, its same-step retry, and whether the turn
    #: goes on after the last reply
    step: int = 1
    attempt: int = 0
    follow: Literal["continue", "end"] = "continue"
    report: TurnReport | None = None
    over: TurnReport | None = None


# --------------------------------------------------------------------------
# The machine


class StepMachine:
    """One session's step machine over ``store`` (see the module doc).

    ``tools`` is the registry, gate policy and executors (the machine only
    asks the gate; a driver runs executors); ``max_steps`` caps a turn's
    steps, ``max_tool_calls`` the calls of one reply; ``retry_budget`` is
    the retries of one step (shared with the model client's own retries when
    it has one). ``review_available`` says whether a human can be asked now
    (``exit_plan_mode`` fails closed without one). Raises ``ReplayError``
    when the stored log does not fold strictly.
    """

    def __init__(
        self,
        store: Store,
        session_id: str,
        tools: ToolRunner,
        *,
        clock: Clock = system_clock,
        prompt: PromptConfig | None = None,
        max_steps: int = 16,
        max_tool_calls: int = 32,
        retry_budget: model.RetryBudget | None = None,
        step_listeners: Sequence[StepListener] = (),
        review_available: Callable[[], bool] = lambda: True,
    ) -> None:
        self.unit = UnitStore(store, session_id)
        self.log = SessionLog(self.unit, session_id, clock)
        self.tools = tools
        self.prompt = prompt or PromptConfig()
        self.max_steps = max_steps
        self.max_tool_calls = max_tool_calls
        self.retry_budget = retry_budget or model.RetryBudget(2)
        self.step_listeners = list(step_listeners)
        self.review_available = review_available
        self.resumed = self.log.last_seq > 0
        #: the plans put before a human, and what each answer meant
        self.shown: list[str] = []
        self._p = _Process()
        self._conversation = Conversation()
        self._budget_open = False

    session_id = Delegated[str]("log")
    state = Delegated[SessionState]("log")

    def new_plan_id(self) -> str:
        return f"plan-{self.log.last_seq + 1}"

    # -- atomic operations and stages -------------------------------------

    def atomic(self, operation: Callable[[], T], *extra: object) -> T:
        """Run ``operation`` as one unit (see "Failed appends"); ``extra``
        objects with a ``__dict__`` are put back too when it fails."""
        saved = copy.copy(self._p)
        kept = [(obj, dict(vars(obj))) for obj in extra]
        mark = self.log.mark()

        def undo(conflict: bool) -> None:
            self.unit.discard()
            self._p = saved
            for obj, attrs in kept:
                vars(obj).update(attrs)
            if self.log.last_seq != mark.last_seq:
                self.log.restore(mark)
                self._conversation = Conversation()
            if conflict:  # another writer is ahead: catch up when the store answers
                with contextlib.suppress(Exception):
                    self.log.reload()

        self.unit.begin()
        try:
            result = operation()
            self.unit.commit()
        except BaseException as exc:
            undo(isinstance(exc, ConflictError))
            raise
        return result

    @property
    def stage(self) -> Stage:
        p = self._p
        if p.awaiting is not None:
            return p.awaiting
        if p.calls:
            return "calls"
        if not self.log.state.turns.open:
            return "idle"
        return "step" if p.step_open else "turn"

    @property
    def awaiting_call(self) -> str | None:
        """The id of the call answered next, if any."""
        p = self._p
        if p.current is not None:
            return p.current.call.id
        return p.calls[0].call.id if p.calls else None

    @property
    def pending(self) -> PendingChoice | None:
        """The plan-mode choice waiting for the next accepted pre-step."""
        return self._p.pending

    @property
    def calls_left(self) -> tuple[model.ToolCall, ...]:
        """The reply's calls still to dispatch, in order."""
        return tuple(entry.call for entry in self._p.calls)

    @property
    def follow(self) -> Literal["continue", "end"]:
        """Whether the turn goes on after the last reply."""
        return self._p.follow

    @property
    def next_step(self) -> int:
        """The step number a driver proposes next: this machine's own count in
        a turn it opened; in a turn a stopped process left open, the one after
        that turn's last header; 1 between turns."""
        turns = self.log.state.turns
        if not turns.open:
            return 1
        return self._p.step if self._p.turn_mine else turns.step + 1

    @property
    def request_state(self) -> SessionState:
        """The fold the open step's request is derived from (its header's)."""
        return self._p.view_state or self.log.state

    def require(self, what: str, *stages: Stage) -> None:
        """Refuse ``what`` (``OutOfOrderError``; ``LogSealedError`` while a tool
        runs) unless the machine is at one of ``stages``."""
        stage = self.stage
        if stage in stages:
            return
        if stage == "execute" and self._p.current is not None:
            raise LogSealedError(f"tool {self._p.current.call.name}")
        wanted = " or ".join(stages)
        raise OutOfOrderError(f"{what} needs the session at {wanted}, but it is at {stage}", stage)

    def _expect_call(self, call_id: str, stage: Stage) -> _Call:
        self.require(f"answering call {call_id!r}", stage)
        p = self._p
        head = p.current if stage != "calls" else p.calls[0]
        assert head is not None
        if head.call.id != call_id:
            raise OutOfOrderError(
                f"call {head.call.id!r} is answered next, not {call_id!r}", self.stage, code="unexpected-call"
            )
        return head

    # -- the user's plan-mode choice ----------------------------------------

    @property
    def plan_mode(self) -> PlanModeView:
        """The mode as the user sees it: the recorded state, and the chosen
        state waiting for the next accepted pre-step (``None``: nothing)."""
        pending = self._p.pending
        return PlanModeView(self.log.state.plan_mode, None if pending is None else pending.target)

    def choose(self, target: bool) -> ChoiceOutcome:
        """The user chooses plan mode on or off: appended now between turns,
        queued for the next accepted pre-step in a turn (a tool running
        included: the sealed log stops the tool, not the user)."""
        return self.atomic(lambda: self._choose(target))

    def _choose(self, target: bool) -> ChoiceOutcome:
        choice = decide_plan_choice(
            self.log.state, self.log.events, self._p.pending, target, tool_running=self._p.awaiting == "execute"
        )
        self.log.append(choice.drafts)
        self._p.pending = choice.pending
        return choice.outcome

    # -- turns ------------------------------------------------------------

    def start_turn(self, text: str, source: MessageSource | None = None, view: ViewRequest | None = None) -> TurnReport:
        """Open a turn with ``text`` from ``source`` (``None``: a human). A turn
        an earlier process left open is closed first, in the same append
        (``abandoned_turn``). Refused (``OutOfOrderError``) while this
        machine's own turn is open."""
        return self.atomic(lambda: self._start_turn(text, source, view or ViewRequest()))

    def _start_turn(self, text: str, source: MessageSource | None, view: ViewRequest) -> TurnReport:
        if self._p.turn_mine:
            self.require("turn/start", "idle")
        state = self.log.state
        closing = abandoned_turn(state, self.log.events) if state.turns.open else ()
        number = state.turns.turn + 1
        opened = self.log.append((*closing, turn_start(number), user_message(text, source)))
        report = TurnReport(number, opened[len(closing)].seq, closed_turn=state.turns.turn if closing else None)
        self._p = replace(
            self._p, view=view, step_open=False, prepared=None, turn_mine=True, step=1, attempt=0,
            follow="continue", report=report, over=None, calls=(), current=None, awaiting=None, review=None,
            trailing=(),
        )
        return report

    def end_turn(self) -> TurnReport | None:
        """Close the open turn; calls of it still unanswered in the log (a
        process that stopped recorded them) are answered as
        ``call-interrupted`` first. The turn's report, when this machine
        opened it."""
        return self.atomic(self._end_turn)

    def _end_turn(self) -> TurnReport | None:
        self.require("turn/end", "turn", "step")
        self.log.append(abandoned_turn(self.log.state, self.log.events))
        p = self._p
        report = p.report
        if report is not None:
            report.last_seq = self.log.last_seq
        p.step_open, p.prepared, p.turn_mine, p.report, p.over = False, None, False, None, report
        self._close_budget()
        return report

    # -- steps ------------------------------------------------------------

    def begin_step(self, step: int, verdict: StepVerdict = "accepted") -> StepBegun:
        """The pre-step of ``step`` with the listeners' ``verdict``: calls a
        stopped process left unanswered in the turn are answered; the pending
        choice is flushed (its own unit: a failed flush keeps it pending and
        the step goes on); then, for an accepted step, an approved plan
        starts and the request header is recorded."""
        self.require("step/begin", "turn", "step")
        if verdict == "accepted":  # a header the log would refuse is refused before anything is written
            fold_drafts(self.log.state, (decide_request_header(self.log.state, step),))
        flushed = self._flush(verdict)
        return self.atomic(lambda: self._begin_step(step, verdict, flushed))

    def _flush(self, verdict: StepVerdict) -> bool:
        """The pre-step flush, as its own unit; whether it recorded anything."""
        p = self._p

        def flush() -> bool:
            self.log.append(interrupted_calls(self.log.state, self.log.events))
            decided = decide_pre_step(self.log.state, self.log.events, p.pending, verdict)
            self.log.append(decided.drafts)
            p.pending = decided.pending_after_success
            return bool(decided.drafts)

        try:
            return self.atomic(flush)
        except Exception:  # the choice stays pending; the step goes on
            if p.report is not None:
                p.report.flush_failures += 1
            return False

    def _begin_step(self, step: int, verdict: StepVerdict, flushed: bool) -> StepBegun:
        p = self._p
        if verdict != "accepted":
            p.step_open, p.prepared = False, None
            return StepBegun(False, flushed, False, None)
        started = plan_to_start(self.log.state) is not None
        self.log.append(decide_before_request(self.log.state))
        # The plan view is chosen from the fold the header describes; a new
        # plan counts as seen only once a build-mode reply is recorded, so a
        # retry of this step carries the same view.
        p.view_state = self.log.state
        (header,) = self.log.append((decide_request_header(self.log.state, step),))
        p.step_open, p.prepared = True, None
        return StepBegun(True, flushed, started, header.seq)

    def request(self) -> PreparedRequest:
        """The open step's request, derived once from the recorded state."""
        self.require("step/context", "step")
        p = self._p
        if p.prepared is None:
            p.prepared = prepare_request(
                p.view_state or self.log.state,
                self.log.events,
                p.view,
                first_request=self.resumed and p.requests == 0,
                tools=self.tools,
                config=self.prompt,
                messages=self._conversation,
            )
            p.requests += 1
            if p.report is not None:
                p.report.requests.append(p.prepared)
                p.report.steps += 1
        return p.prepared

    def model_failed(self, error: model.ModelError) -> bool:
        """The model call of the open step failed: propose the same step again
        when the error is recoverable and the step's budget lasts (True);
        otherwise the turn ends with the error (False)."""
        self.require("a model failure", "step")
        p = self._p
        retry = error.retryable is not False and error.code in RECOVERABLE_MODEL_ERRORS
        p.step_open, p.prepared = False, None
        if retry and self.retry_budget.take():
            p.attempt += 1
            if p.report is not None:
                p.report.retries += 1
            return True
        p.follow = "end"
        if p.report is not None:
            p.report.error, p.report.ended_by = f"[{error.code}] {error.message}", "model-error"
        self._close_budget()
        return False

    def reply(self, response: model.ChatResponse) -> RecordedReply:
        """Record the model's reply to the open step (``kernel.turn.record_reply``):
        the assistant message and the calls taken, each with the gate's
        verdict. The notices owed after the calls are appended once the last
        call is answered (at once when there are none)."""
        return self.atomic(lambda: self._reply(response))

    def _reply(self, response: model.ChatResponse) -> RecordedReply:
        self.require("step/reply", "step")
        prepared = self.request()
        tools = self.tools
        recorded = record_reply(
            reply_of(response), tools.registry, tools.policy, prepared.phase, prepared.offered,
            max_tool_calls=self.max_tool_calls,
        )
        self.log.append(recorded.batch)
        p = self._p
        p.step_open = False
        answers = zip(recorded.calls, recorded.verdicts, recorded.notices, strict=True)
        p.calls = tuple(_Call(from_reply_call(call), verdict, notices) for call, verdict, notices in answers)
        p.trailing = recorded.trailing
        self._settle()
        follow: Literal["continue", "end"] = "end" if recorded.outcome == "stop" else "continue"
        if recorded.outcome == "final":
            verify = decide_after_final_reply(self.log.state)
            self.log.append(verify)
            if not verify:
                follow = "end"
        p.follow, p.step, p.attempt = follow, p.step + 1, 0
        if p.report is not None:
            p.report.reply = recorded.text
            if recorded.ended_by is not None:
                p.report.error, p.report.ended_by = recorded.error, recorded.ended_by
        self._close_budget()
        return recorded

    def _settle(self) -> None:
        """Once every call of the reply is answered, append the notices owed
        after them, each on its own."""
        p = self._p
        if p.calls or p.current is not None:
            return
        for notice in p.trailing:
            self.log.append((notice,))
        p.trailing = ()

    # -- answering the calls ------------------------------------------------

    def dispatch(self, call_id: str, *, review_available: bool | None = None) -> Dispatched:
        """Answer the reply's next call up to where a driver takes over: the
        gate's notices; the gate asked again when an earlier call of the
        reply moved the phase; a runtime-owned call decided by the kernel
        (``exit_plan_mode`` then asks for a review); an executor call checked
        against the executing plan's scope, then handed to the driver."""
        available = self.review_available() if review_available is None else review_available
        return self.atomic(lambda: self._dispatch(call_id, available))

    def _dispatch(self, call_id: str, review_available: bool) -> Dispatched:
        entry = self._expect_call(call_id, "calls")
        p = self._p
        p.calls = p.calls[1:]
        prepared = p.prepared
        assert prepared is not None
        self.log.append(entry.notices)
        call, verdict = entry.call, entry.verdict
        if isinstance(verdict, Allowed):
            phase = runtime_phase(self.log.state)
            if phase != prepared.phase:
                # An earlier call of this reply moved the phase: ask the gate
                # again, at the phase this call would now run in.
                tools = self.tools
                gate_call = kernel_call(call)
                verdict = check_call(tools.registry, phase, tools.policy, gate_call, prepared.offered)
                again = verdict_events(gate_call, verdict)[1:]
                self.log.append([Draft(kind, payload) for kind, payload in again])
        if isinstance(verdict, Refused):
            return self._answered(call, "refused")
        if verdict.route == "runtime":
            return self._runtime_call(entry, review_available)
        self.log.append(decide_before_request(self.log.state))  # a plan made executable in this reply
        refusal = scope_refusal(self.log.state, kernel_call(call), resolved_effects(self.tools, call))
        if refusal is not None:  # realigned: nothing runs
            realign, result = refusal
            self.log.append(realign)
            self.log.append((result,))
            return self._answered(call, "done")
        p.current, p.awaiting = entry, "execute"
        return Dispatched(call, "execute")

    def _answered(self, call: model.ToolCall, action: Literal["refused", "done"]) -> Dispatched:
        """The answer the log holds for ``call``, once the notices owed after
        the reply's last call are appended."""
        ok, output = answer_of(self.log.state.last, refused=action == "refused")
        self._settle()
        return Dispatched(call, action, ok, output)

    def _runtime_call(self, entry: _Call, review_available: bool) -> Dispatched:
        """A runtime-owned call, decided by the kernel (``decide_tool_call``);
        ``exit_plan_mode`` that recorded a plan waits for a review."""
        call = entry.call
        makes_plan = call.name in ("exit_plan_mode", "bootstrap_plan")
        decision = decide_tool_call(
            self.log.state,
            kernel_call(call),
            new_plan_id=self.new_plan_id() if makes_plan else "",
            review_available=review_available,
        )
        self._record_or_fail(call, decision.drafts)
        if decision.review is None:
            return self._answered(call, "done")
        p = self._p
        p.current, p.awaiting, p.review = entry, "review", decision.review
        self.shown.append(decision.review.request.plan)
        return Dispatched(call, "review", review=decision.review.request)

    def _record_or_fail(self, call: model.ToolCall, drafts: Sequence[Draft]) -> None:
        """Append a decision's drafts; when the log refuses them the call
        fails with that error instead."""
        mark = self.log.mark()
        try:
            self.log.append(drafts)
        except PlanfoldError as exc:
            if self.log.last_seq != mark.last_seq:
                raise
            output = error_output(exc.code, exc.message)
            self.log.append((result_draft(call.id, call.name, ok=False, output=output),))

    def tool_result(self, call_id: str, ok: bool, output: str) -> Event:
        """Record what the executor returned for the call being run."""
        return self.atomic(lambda: self._tool_result(call_id, ok, output))

    def _tool_result(self, call_id: str, ok: bool, output: str) -> Event:
        entry = self._expect_call(call_id, "execute")
        call = entry.call
        self._p.awaiting = None  # the log is no longer sealed for the tool
        (written,) = self.log.append((result_draft(call.id, call.name, ok=ok, output=output),))
        self._p.current = None
        self._settle()
        return written

    def review_answer(self, call_id: str, answer: ReviewAnswer) -> tuple[ReviewDecision, int]:
        """The human's answer to the review of an ``exit_plan_mode`` call
        (``decide_review_answer``): the approval (which queues the silent
        exit) or the rejection, and the call's result; with the seq of that
        result."""
        return self.atomic(lambda: self._review_answer(call_id, answer))

    def _review_answer(self, call_id: str, answer: ReviewAnswer) -> tuple[ReviewDecision, int]:
        self._expect_call(call_id, "review")
        p = self._p
        assert p.review is not None
        reviewed = decide_review_answer(self.log.state, p.review, answer)
        p.current, p.awaiting, p.review = None, None, None
        written = self.log.append(reviewed.drafts)
        if reviewed.exit is not None:
            p.pending = reviewed.exit
        self._settle()
        return reviewed, written[-1].seq

    # -- what next -------------------------------------------------------------

    def next_action(self) -> Action:
        """What the driver must do next (see the module doc). Between the
        actions, the machine proposes steps (asking the step listeners),
        answers calls it can answer itself and ends the turn. Raises
        ``OutOfOrderError`` when no turn was started."""
        while True:
            p = self._p
            stage = self.stage
            if stage == "execute":
                assert p.current is not None
                return RunTool(p.current.call)
            if stage == "review":
                assert p.current is not None and p.review is not None
                return Review(p.current.call, p.review.request)
            if stage == "step":
                prepared = self.request()
                return AskModel(prepared.request, prepared, p.step, p.attempt)
            if stage == "calls":
                self.dispatch(p.calls[0].call.id)
                continue
            if stage == "idle":
                if p.over is None:
                    raise OutOfOrderError("no turn was started", stage)
                return TurnOver(p.over)
            if not p.turn_mine:
                raise OutOfOrderError("the open turn was left by a process that stopped; start a turn", stage)
            if p.follow == "end" or p.step > self.max_steps:
                if p.follow != "end" and p.report is not None:
                    p.report.ended_by = "max-steps"
                self.end_turn()
                continue
            self._propose()

    def _propose(self) -> None:
        """Propose the next step to the listeners, then begin it."""
        p = self._p
        assert p.report is not None
        if not self._budget_open:
            self._budget_open = True
            self.retry_budget.open()
        proposed = ProposedStep(p.report.turn, p.step, p.attempt)
        verdict: StepVerdict = "accepted"
        for listener in self.step_listeners:
            verdict = listener(proposed)
            if verdict != "accepted":
                break
        begun = self.begin_step(p.step, verdict)
        if not begun.accepted:
            self._p.follow = "end"
            if self._p.report is not None:
                self._p.report.ended_by = "step-rejected"

    def fork(self, new_session: str, *, at: int | None = None, turn: int | None = None) -> ForkProvenance:
        """A new session whose log is this one's first ``at`` events, or the
        events before turn ``turn`` started (a rewind to that turn); give
        exactly one. The store writes it atomically with its provenance and
        this session is unchanged; a fork inside an open turn is closed by
        the new session's next turn as a stopped process's turn is. Refused
        while an operation's appends are held (never the case between
        operations). Raises ``InvalidRequestError`` for neither or both,
        and the store's typed refusals (``fork-seq-missing``,
        ``fork-turn-missing``, ``session-exists``)."""
        if (at is None) == (turn is None):
            raise InvalidRequestError("fork at a seq or at a turn's start: give exactly one of at and turn")
        store = self.unit.inner
        if turn is not None:
            return fork_at_turn(store, self.session_id, turn, new_session)
        assert at is not None
        return store.fork(self.session_id, at, new_session)

    def abandon(self) -> None:
        """Forget the process state of the open turn, as a process that stops
        does (the log keeps the turn open; the next turn closes it)."""
        self._p = _Process(pending=self._p.pending, requests=self._p.requests)
        self._close_budget()

    def _close_budget(self) -> None:
        if self._budget_open:
            self._budget_open = False
            self.retry_budget.close()
