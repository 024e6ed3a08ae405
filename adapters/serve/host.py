"""One session driven step by step by a host runtime.

Theory of operation
-------------------
``Runtime`` (``adapters.runtime.loop``) runs a whole turn itself: it calls
the model, runs the executors and asks the review port. A runtime written in
another language does those three things itself and asks planfold for
everything else, one step at a time. ``HostSession`` is that runtime cut at
the three places where the host takes over; everything between the cuts is
the same code in the same order (the same kernel decisions, the same
``PlanRunner``, ``ToolRunner`` and ``GoalService``, the same clock readings),
so a host that drives the demo's conversation gets the very log ``planfold
demo`` writes (a test holds this).

The cuts:

- the model call: ``begin_step`` is the pre-step (flush, plan start,
  request header), ``context`` is the request derived from it, and
  ``reply`` records what the model answered (``record_reply``: the gate's
  verdicts, the cap on calls, a cut-off, filtered or refused reply); the
  notices owed after a reply's calls are appended when its last call is
  answered;
- the executor: ``dispatch`` answers the reply's calls one by one, in order,
  and says ``execute`` for a call the host runs; ``tool_result`` records its
  output. Until then the session is sealed (``log-sealed``), as the log is
  while an executor runs in-process;
- the review: for ``exit_plan_mode`` ``dispatch`` has the kernel decide the
  call (``decide_tool_call``), appends the draft it records and returns the
  rendered plan; ``review_answer`` decides the human's answer
  (``decide_review_answer``) and appends the approval or rejection and the
  call's result, exactly the two appends ``PlanRunner.handle`` makes around
  its review port.

Process state (the pending plan-mode choice, the turn's plan-view request,
the calls still to answer, the goal's activation) lives here and never in
the log. Where a call does not fit the host's ``stage`` it is refused
(``out-of-order``) and nothing happens.

Every operation is atomic: its appends are held by ``UnitStore`` and written
in one compare-and-set append when it returns, so a refusal, a conflict with
another writer or a storage failure leaves the log and the process state as
they were (after a failed write the log is reloaded from the store).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from ...kernel.errors import ConflictError
from ...kernel.goal.command import parse_goal_command
from ...kernel.goal.continuation import round_message
from ...kernel.goal.values import BlockedReason, GoalRef
from ...kernel.log import ASSISTANT_MESSAGE, TURN_START, USER_MESSAGE, Draft, Event
from ...kernel.payload import JSONObject
from ...kernel.plan.context import ViewRequest, plan_to_start, runtime_phase
from ...kernel.plan.decisions import (
    PendingReview,
    decide_plan_choice,
    decide_pre_step,
    decide_request_header,
    decide_review_answer,
    decide_tool_call,
)
from ...kernel.plan.mode import PendingChoice, StepVerdict
from ...kernel.plan.review import ReviewAnswer, ReviewOutcome
from ...kernel.plan.review import parse_plan_command as parse_plan
from ...kernel.session import SessionState
from ...kernel.tools.events import read_tool_result, verdict_events
from ...kernel.tools.gate import Allowed, GatePolicy, Refused, Verdict
from ...kernel.tools.spec import ToolRegistry, ToolSpec
from ..errors import AdapterError
from ..llm import model
from ..llm.openai_wire import encode_message, plain_json
from ..runtime.goal_service import GoalChanged, GoalService
from ..runtime.loop import (
    abandoned_turn,
    interrupted_calls,
    record_reply,
    refuse_outside_scope,
    with_attachments,
)
from ..runtime.plan_runner import PlanRunner
from ..runtime.prompt import Conversation, PreparedRequest, PromptConfig, prepare_request
from ..runtime.tool_runner import (
    ToolRunner,
    kernel_call,
    result_draft,
    tool_message_text,
)
from ..runtime.toolset import BOOTSTRAP_PLAN, EXIT_PLAN_MODE, REPORT_VERIFICATION, UPDATE_TODO
from ..store.base import AppendResult, ForwardingStore, Store
from ..store.session_log import Clock, LogSealedError, SessionLog
from .protocol import (
    Appended,
    CallVerdict,
    ChoiceResult,
    CommandResult,
    ContinueResult,
    GoalResult,
    ReplyRecorded,
    RequestContext,
    ReviewInfo,
    SessionInfo,
    Stage,
    StepBegun,
    ToolAction,
    ToolAnswered,
    ToolInfo,
    TurnEnded,
    TurnStarted,
)

__all__ = [
    "HostConfig",
    "HostSession",
    "NotRecordableError",
    "OutOfOrderError",
    "RoundNotAdmittedError",
    "ServeError",
    "UnitStore",
    "runtime_registry",
]

T = TypeVar("T")


class ServeError(AdapterError):
    """A request the session cannot take (the host's fault); nothing changed."""

    code = "serve-error"


class OutOfOrderError(ServeError):
    """The call does not fit where the session's host is (``stage``):
    ``unexpected-call`` names a call other than the one answered next,
    ``session-open`` opens a session that is open already."""

    code = "out-of-order"
    codes = frozenset({"unexpected-call", "session-open"})

    def __init__(self, message: str, stage: Stage, *, code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.stage = stage


class NotRecordableError(ServeError):
    """``events/append`` of an event that planfold decides (a plan, mode,
    goal, turn or tool event, or a goal round)."""

    code = "not-recordable"


class RoundNotAdmittedError(ServeError):
    """``turn/start`` as a goal round when ``should_continue`` says stop."""

    code = "round-not-admitted"

    def __init__(self, reason: str) -> None:
        super().__init__(f"the goal may not start a round now: {reason}")
        self.reason = reason


def runtime_registry(tools: Sequence[ToolSpec]) -> ToolRegistry:
    """The host's tools, then the runtime-owned ones. Raises ``ToolSpecError``
    for a clash, a runtime-owned name or an invalid declaration."""
    return ToolRegistry.of(*tools, EXIT_PLAN_MODE, BOOTSTRAP_PLAN, UPDATE_TODO, REPORT_VERIFICATION)


@dataclass(frozen=True, slots=True)
class HostConfig:
    """The host's tools, its gate policy, its prompt texts and how many calls
    of one reply are taken (``Runtime.max_tool_calls``)."""

    tools: tuple[ToolSpec, ...] = ()
    policy: GatePolicy = field(default_factory=GatePolicy)
    prompt: PromptConfig = field(default_factory=PromptConfig)
    max_tool_calls: int = 32


# --------------------------------------------------------------------------
# A unit of work over a store


class UnitStore(ForwardingStore):
    """A ``Store`` that, inside a unit, holds one session's appends and
    writes them at ``commit`` in one compare-and-set append; outside a unit
    it passes everything through. Reads see the held events; closing it
    leaves the shared store open (only its owner closes it)."""

    def __init__(self, inner: Store, session_id: str) -> None:
        super().__init__(inner)
        self.session_id = session_id
        self._open = False
        self._base = 0
        self._held: list[Event] = []

    @property
    def held(self) -> tuple[Event, ...]:
        return tuple(self._held)

    def begin(self) -> None:
        self._open, self._held = True, []

    def commit(self) -> None:
        """Write what the unit holds (may raise; the unit is closed either way)."""
        held, self._open, self._held = tuple(self._held), False, []
        if held:
            self.inner.append(self.session_id, self._base, held)

    def discard(self) -> None:
        self._open, self._held = False, []

    def append(
        self, session_id: str, expected_seq: int, events: Sequence[Event], idempotency_key: str | None = None
    ) -> AppendResult:
        if not self._open or session_id != self.session_id:
            return self.inner.append(session_id, expected_seq, events, idempotency_key)
        if not self._held:
            self._base = expected_seq
        head = self._base + len(self._held)
        if expected_seq != head:
            raise ConflictError(session_id, expected_seq, head)
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
    """Everything a session keeps outside the log (copied before each
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
    goal_id: str | None = None


class _NoRounds:
    """A round runner for ``GoalService.drive`` when no round may start."""

    def run_turn(self, text: str, source: JSONObject | None = None) -> object:
        raise AssertionError("no round may start here")


# --------------------------------------------------------------------------
# The session


class HostSession:
    """One session of ``store`` driven by a host (see the module doc)."""

    def __init__(self, store: Store, session_id: str, clock: Clock, config: HostConfig | None = None) -> None:
        config = config or HostConfig()
        self.unit = UnitStore(store, session_id)
        self.log = SessionLog(self.unit, session_id, clock)
        self.tools = ToolRunner(runtime_registry(config.tools), config.policy)
        self.prompt = config.prompt
        self.max_tool_calls = config.max_tool_calls
        self.plans = PlanRunner(self.log, None, lambda: f"plan-{self.log.last_seq + 1}")
        self.goals = GoalService(self.log, "host", self._new_goal_id)
        self.resumed = self.log.last_seq > 0
        self._p = _Process()
        self._conversation = Conversation()

    @property
    def session_id(self) -> str:
        return self.log.session_id

    def _new_goal_id(self) -> str:
        return self._p.goal_id or f"goal-{self.log.last_seq + 1}"

    # -- atomic operations and stages -------------------------------------

    def _atomic(self, operation: Callable[[], T]) -> T:
        saved, activation = copy.copy(self._p), self.goals.activation

        def undo(reload: bool) -> None:
            self.unit.discard()
            self._p, self.goals.activation = saved, activation
            if reload:  # the log's state ran ahead of the store
                self.log.reload()

        self.unit.begin()
        try:
            result = operation()
        except BaseException:
            undo(bool(self.unit.held))
            raise
        try:
            self.unit.commit()
        except BaseException:
            undo(True)
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

    def _require(self, what: str, *stages: Stage) -> None:
        stage = self.stage
        if stage in stages:
            return
        if stage == "execute" and self._p.current is not None:
            raise LogSealedError(f"tool {self._p.current.call.name}")
        wanted = " or ".join(stages)
        raise OutOfOrderError(f"{what} needs the session's host at {wanted}, but it is at {stage}", stage)

    def _expect_call(self, call_id: str, stage: Stage) -> _Call:
        self._require(f"answering call {call_id!r}", stage)
        p = self._p
        head = p.current if stage != "calls" else p.calls[0]
        assert head is not None
        if head.call.id != call_id:
            raise OutOfOrderError(
                f"call {head.call.id!r} is answered next, not {call_id!r}", self.stage, code="unexpected-call"
            )
        return head

    # -- reading ----------------------------------------------------------

    def info(self) -> SessionInfo:
        state = self.log.state
        p = self._p
        awaiting = p.current.call.id if p.current is not None else (p.calls[0].call.id if p.calls else None)
        return SessionInfo(
            self.session_id, state.last_seq, state.agent_mode, runtime_phase(state), state.turns.turn,
            state.turns.open, state.plan.current, state.goal.current, p.pending, self.goals.activation.armed,
            self.stage, awaiting,
        )

    # -- user choices -----------------------------------------------------

    def choose(self, active: bool) -> ChoiceResult:
        """The user's plan-mode choice (``Runtime.choose_plan_mode``): inside a
        turn (a tool running in the host included) it is queued."""
        return self._atomic(lambda: self._choose(active))

    def _choose(self, active: bool) -> ChoiceResult:
        choice = decide_plan_choice(self.log.state, self.log.events, self._p.pending, active)
        self.log.append(choice.drafts)
        self._p.pending = choice.pending
        return ChoiceResult(choice.outcome, choice.pending, self.log.last_seq)

    def command(self, text: str, attachments: Sequence[str] = ()) -> CommandResult:
        """A line a human typed, with the names of any files attached to it:
        ``/plan`` (``Runtime.submit``), ``/goal`` or a message. ``message`` is
        the text to start a turn with (attachments listed after it)."""
        return self._atomic(lambda: self._command(text, tuple(attachments)))

    def _command(self, text: str, attachments: tuple[str, ...]) -> CommandResult:
        plan = parse_plan(text, attachments)
        if plan is not None:
            outcome = self._choose(plan.target).outcome
            if plan.message is None and not plan.attachments:
                return CommandResult("plan", outcome, last_seq=self.log.last_seq)
            message = with_attachments(plan.message or "", plan.attachments)
            rewriting = self.log.state.plan.live
            return CommandResult("plan", outcome, message, rewriting, last_seq=self.log.last_seq)
        goal = parse_goal_command(text)
        if goal is None:
            return CommandResult("message", message=with_attachments(text, attachments), last_seq=self.log.last_seq)
        if goal.verb == "show":
            return CommandResult("goal", verb="show", goal=self.log.state.goal.current, last_seq=self.log.last_seq)
        self._require(f"/goal {goal.verb}", "idle", "turn", "step")
        agent, goals = self.goals.agent, self.goals
        changes: dict[str, Callable[[], GoalChanged]] = {
            "create": lambda: goals.create(agent, goal.objective or ""),
            "edit": lambda: goals.edit(agent, objective=goal.objective),
            "pause": lambda: goals.pause(agent),
            "resume": lambda: goals.resume(agent),
            "complete": lambda: goals.complete(agent),
            "clear": lambda: goals.clear(agent),
        }
        change = changes[goal.verb]()
        return CommandResult("goal", verb=goal.verb, goal=change.goal, seq=change.seq, last_seq=self.log.last_seq)

    # -- turns ------------------------------------------------------------

    def start_turn(self, text: str, *, goal_round: bool = False, view: ViewRequest | None = None) -> TurnStarted:
        """Open a turn (``Runtime.run_turn``'s first append); a goal round is
        attributed to the goal when ``should_continue`` allows it now."""
        return self._atomic(lambda: self._start_turn(text, goal_round, view or ViewRequest()))

    def _start_turn(self, text: str, goal_round: bool, view: ViewRequest) -> TurnStarted:
        self._require("turn/start", "idle")
        source: JSONObject | None = None
        number: int | None = None
        if goal_round:
            decision = self.goals.decide()
            if not decision.proceed:
                raise RoundNotAdmittedError(decision.reason or "stop")
            attributed = round_message(self.log.state.goal, text).payload["source"]
            assert isinstance(attributed, dict)
            source, number = attributed, decision.next_round
        turn = self.log.state.turns.turn + 1
        opened = self.log.append(
            (Draft(TURN_START, {"turn": turn}), Draft(USER_MESSAGE, {"text": text, "source": source}))
        )
        self._p.view, self._p.step_open, self._p.prepared = view, False, None
        return TurnStarted(turn, opened[0].seq, self.log.last_seq, number)

    def end_turn(self) -> TurnEnded:
        """Close the open turn. A call of it still unanswered in the log was
        recorded by another process (this host answers its own before the
        turn can end), which is taken to have stopped, as a session has one
        writer: it is answered as ``call-interrupted`` first
        (``abandoned_turn``)."""
        return self._atomic(self._end_turn)

    def _end_turn(self) -> TurnEnded:
        self._require("turn/end", "turn", "step")
        turn = self.log.state.turns.turn
        self.log.append(abandoned_turn(self.log.state, self.log.events))
        self._p.step_open, self._p.prepared = False, None
        return TurnEnded(turn, self.log.last_seq)

    # -- steps ------------------------------------------------------------

    def begin_step(self, step: int, verdict: StepVerdict = "accepted") -> StepBegun:
        """The pre-step (``Runtime._pre_step`` after the step listeners):
        the flush, the plan lifecycle, the request header. A call of the turn
        left unanswered by a process that stopped is answered first, as in
        ``end_turn``."""
        return self._atomic(lambda: self._begin_step(step, verdict))

    def _begin_step(self, step: int, verdict: StepVerdict) -> StepBegun:
        self._require("step/begin", "turn", "step")
        # Calls another process recorded in this turn and never answered
        # (see ``end_turn``) are answered before the step, so that its
        # request's transcript answers every call.
        self.log.append(interrupted_calls(self.log.state, self.log.events))
        p = self._p
        flush = decide_pre_step(self.log.state, self.log.events, p.pending, verdict)
        self.log.append(flush.drafts)
        p.pending = flush.pending_after_success
        if verdict != "accepted":
            p.step_open, p.prepared = False, None
            return StepBegun(False, bool(flush.drafts), False, None, runtime_phase(self.log.state), self.log.last_seq)
        started = plan_to_start(self.log.state) is not None
        self.plans.before_request()
        p.view_state = self.log.state
        (header,) = self.log.append((decide_request_header(self.log.state, step),))
        p.step_open, p.prepared = True, None
        return StepBegun(True, bool(flush.drafts), started, header.seq, runtime_phase(p.view_state), header.seq)

    def _prepared(self) -> PreparedRequest:
        """The step's request, derived once (``Runtime._prepare``)."""
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
        return p.prepared

    def context(self, conversation: bool = False) -> RequestContext:
        """What the step's request is made of."""
        return self._atomic(lambda: self._context(conversation))

    def _context(self, conversation: bool) -> RequestContext:
        self._require("step/context", "step")
        prepared = self._prepared()
        state = self._p.view_state or self.log.state
        tools = tuple(
            ToolInfo(t.name, t.description, dict(plain_json(t.parameters)))  # type: ignore[call-overload]
            for t in prepared.request.tools
        )
        messages: tuple[dict[str, Any], ...] | None = None
        if conversation:
            messages = tuple(encode_message(m) for m in prepared.request.messages if m.role != "system")
        return RequestContext(prepared.phase, state.agent_mode, prepared.view, prepared.sections, tools, messages)

    def reply(self, response: model.ChatResponse) -> ReplyRecorded:
        """Record the model's reply (``record_reply``, as ``Runtime`` does):
        the assistant message and the calls taken, each with the gate's
        verdict; a reply cut off, filtered or refused has its calls refused.
        The notices owed after the calls are appended once the last call is
        answered (at once when there are none)."""
        return self._atomic(lambda: self._reply(response))

    def _reply(self, response: model.ChatResponse) -> ReplyRecorded:
        self._require("step/reply", "step")
        prepared = self._prepared()
        recorded = record_reply(response, self.tools, prepared, self.max_tool_calls)
        self.log.append(recorded.batch)
        p = self._p
        p.step_open = False
        answers = zip(recorded.calls, recorded.verdicts, recorded.notices, strict=True)
        p.calls = tuple(_Call(call, verdict, notices) for call, verdict, notices in answers)
        p.trailing = recorded.trailing
        self._settle()
        follow: Literal["continue", "end"] = "end" if recorded.outcome == "stop" else "continue"
        if recorded.outcome == "final" and not self.plans.after_final_reply():
            follow = "end"
        verdicts = tuple(_verdict(c, v) for c, v in zip(recorded.calls, recorded.verdicts, strict=True))
        return ReplyRecorded(verdicts, follow, recorded.ended_by, recorded.error, self.log.last_seq)

    def _settle(self) -> None:
        """Once every call of the reply is answered, append the notices owed
        after them, each on its own (``Runtime._record_reply``)."""
        p = self._p
        if p.calls or p.current is not None:
            return
        for notice in p.trailing:
            self.log.append((notice,))
        p.trailing = ()

    # -- answering the calls ------------------------------------------------

    def dispatch(self, call_id: str, *, review_available: bool = True) -> ToolAction:
        """Answer the reply's next call (``Runtime._answer``), up to where the
        host takes over."""
        return self._atomic(lambda: self._dispatch(call_id, review_available))

    def _dispatch(self, call_id: str, review_available: bool) -> ToolAction:
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
                verdict = self.tools.check(call, phase, prepared.offered)
                again = verdict_events(kernel_call(call), verdict)[1:]
                self.log.append([Draft(kind, payload) for kind, payload in again])
        if isinstance(verdict, Refused):
            return self._action(call, "refused")
        if verdict.route == "runtime":
            if call.name == EXIT_PLAN_MODE.name:
                return self._present(entry, review_available)
            self.plans.handle(call, self._queue_exit)
            return self._action(call, "done")
        self.plans.before_request()  # a plan made executable in this reply
        if refuse_outside_scope(self.log, self.tools, call):  # realigned: nothing runs
            return self._action(call, "done")
        p.current, p.awaiting = entry, "execute"
        return ToolAction(call.id, call.name, "execute", None, None, None, len(p.calls), self.log.last_seq)

    def _action(self, call: model.ToolCall, action: Literal["refused", "done"]) -> ToolAction:
        """The answer the log holds for ``call`` (its refusal or its result),
        once the notices owed after the reply's last call are appended."""
        answer = self.log.state.last
        assert answer is not None
        ok = False if action == "refused" else read_tool_result(answer.payload).ok
        output = tool_message_text(answer)
        self._settle()
        return ToolAction(call.id, call.name, action, ok, output, None, len(self._p.calls), self.log.last_seq)

    def _present(self, entry: _Call, available: bool) -> ToolAction:
        """``exit_plan_mode`` (``PlanRunner.handle``, cut where the human
        answers): the kernel decides the call and its drafts are appended (the
        draft, or the rewrite, of the plan); the rendered plan goes to the
        host's human. A call the kernel answered at once (bad arguments, no
        review channel) is done."""
        call = entry.call
        decision = decide_tool_call(
            self.log.state, kernel_call(call), new_plan_id=self.plans.new_plan_id(), review_available=available
        )
        self.log.append(decision.drafts)
        if decision.review is None:
            return self._action(call, "done")
        p = self._p
        p.current, p.awaiting, p.review = entry, "review", decision.review
        request = decision.review.request
        review = ReviewInfo(request.plan, request.options)
        return ToolAction(call.id, call.name, "review", None, None, review, len(p.calls), self.log.last_seq)

    def _queue_exit(self, outcome: ReviewOutcome) -> None:
        """An approved review queues its silent exit for the next pre-step."""
        self._p.pending = outcome.pending

    def tool_result(self, call_id: str, ok: bool, output: str) -> ToolAnswered:
        """Record what the host's executor returned for an ``execute`` call."""
        return self._atomic(lambda: self._tool_result(call_id, ok, output))

    def _tool_result(self, call_id: str, ok: bool, output: str) -> ToolAnswered:
        entry = self._expect_call(call_id, "execute")
        call = entry.call
        (written,) = self.log.append((result_draft(call.id, call.name, ok=ok, output=output),))
        self._p.current, self._p.awaiting = None, None
        self._settle()
        return ToolAnswered(call.id, ok, output, written.seq, len(self._p.calls))

    def review_answer(self, call_id: str, answer: ReviewAnswer) -> ToolAnswered:
        """The human's answer to the plan review of an ``exit_plan_mode`` call
        (``decide_review_answer``): the approval (which queues the silent
        exit) or the rejection, and the call's result."""
        return self._atomic(lambda: self._review_answer(call_id, answer))

    def _review_answer(self, call_id: str, answer: ReviewAnswer) -> ToolAnswered:
        entry = self._expect_call(call_id, "review")
        p = self._p
        assert p.review is not None
        reviewed = decide_review_answer(self.log.state, p.review, answer)
        written = self.log.append(reviewed.drafts)
        if reviewed.exit is not None:
            p.pending = reviewed.exit
        p.current, p.awaiting, p.review = None, None, None
        self._settle()
        result, status = reviewed.result, reviewed.outcome.status
        return ToolAnswered(entry.call.id, result.ok, result.output, written[-1].seq, len(p.calls), status)

    # -- goals --------------------------------------------------------------

    def goal_create(self, objective: str, max_rounds: int | None = None, goal_id: str | None = None) -> GoalResult:
        def create() -> GoalChanged:
            self._p.goal_id = goal_id
            try:
                return self.goals.create(self.goals.agent, objective, max_rounds)
            finally:
                self._p.goal_id = None

        return self._goal(create)

    def goal_edit(self, ref: GoalRef, objective: str | None = None, max_rounds: int | None = None) -> GoalResult:
        return self._goal(lambda: self.goals.edit(self.goals.agent, ref, objective=objective, max_rounds=max_rounds))

    def goal_pause(self, ref: GoalRef) -> GoalResult:
        return self._goal(lambda: self.goals.pause(self.goals.agent, ref))

    def goal_resume(self, ref: GoalRef) -> GoalResult:
        return self._goal(lambda: self.goals.resume(self.goals.agent, ref))

    def goal_complete(self, ref: GoalRef) -> GoalResult:
        return self._goal(lambda: self.goals.complete(self.goals.agent, ref))

    def goal_block(self, ref: GoalRef, reason: BlockedReason) -> GoalResult:
        return self._goal(lambda: self.goals.block(self.goals.agent, reason, ref))

    def goal_clear(self, ref: GoalRef) -> GoalResult:
        return self._goal(lambda: self.goals.clear(self.goals.agent, ref))

    def _goal(self, change: Callable[[], GoalChanged]) -> GoalResult:
        def run() -> GoalResult:
            self._require("a goal operation", "idle", "turn", "step")
            done = change()
            return GoalResult(done.operation, done.seq, done.ref, done.goal, self.goals.activation.armed)

        return self._atomic(run)

    def should_continue(self) -> ContinueResult:
        """``GoalService.decide``; when the budget is spent the goal is blocked
        (``GoalService.drive``'s budget block)."""
        return self._atomic(self._should_continue)

    def _should_continue(self) -> ContinueResult:
        decision = self.goals.decide()
        blocked_at = None
        if decision.reason == "budget-spent":
            self._require("the budget block", "idle", "turn", "step")
            blocked_at = self.goals.drive(self.goals.agent, _NoRounds(), limit=1).blocked_at
        armed = self.goals.activation.armed
        goal = self.log.state.goal.current
        return ContinueResult(decision.proceed, decision.reason, decision.next_round, blocked_at, goal, armed)

    # -- recorded facts -------------------------------------------------------

    def append_events(self, events: Sequence[tuple[str, JSONObject]]) -> Appended:
        """Record facts that decide nothing: seq and time are the log's; the
        strict fold checks them. A goal round is never recordable (rounds are
        admitted by ``turn/start``)."""
        return self._atomic(lambda: self._append_events(tuple(events)))

    def _append_events(self, events: tuple[tuple[str, JSONObject], ...]) -> Appended:
        self._require("events/append", "idle", "turn", "step")
        for kind, payload in events:
            if kind not in (ASSISTANT_MESSAGE, USER_MESSAGE, "request/header"):
                raise NotRecordableError(f"{kind} events are decided by planfold, not recorded")
            source = payload.get("source")
            if kind == USER_MESSAGE and isinstance(source, dict) and source.get("type") == "goal":
                raise NotRecordableError("a goal round is admitted by turn/start, not recorded")
        written = self.log.append([Draft(kind, payload) for kind, payload in events])
        return Appended(written[0].seq, written[-1].seq)


def _verdict(call: model.ToolCall, verdict: Verdict) -> CallVerdict:
    if isinstance(verdict, Refused):
        return CallVerdict(call.id, call.name, verdict.phase, False, None, verdict)
    return CallVerdict(call.id, call.name, verdict.phase, True, verdict.route, verdict.warning)
