"""The runtime loop: turns, steps, the pre-step flush and the model call.

Theory of operation
-------------------
A turn starts with ``turn/start`` and its first ``user/message`` (a human's,
or one attributed to a goal round), and ends with ``turn/end``. Inside it the
runtime proposes steps 1, 2, 3 … Each proposed step goes through the
*pre-step listener*, the one place where a pending plan-mode choice is
appended:

1. the downstream step listeners are asked first (``step_listeners``); any
   ``rejected`` or ``aborted`` verdict stops the step and ends the turn;
2. ``decide_pre_step`` decides what to append for the pending choice (nothing
   unless the step was accepted inside an open turn; nothing when the choice
   nets out). A failed append keeps the choice pending and the step goes on;
3. the plan lifecycle gets its say (``PlanRunner.before_request``: in build
   mode an approved plan starts executing, bound to its exact version);
4. ``decide_request_header`` records the request header: turn, step, and the
   plan state the fold gives at that point.

Only then is the request derived (``assemble_request``) and sent. When the
model call fails with a recoverable error, the same step is proposed again
(same step number, a fresh header): a choice made in the meantime lands at
that retry's pre-step, before its header, and the retry carries the same plan
view (a plan is "seen" only once a build-mode request was answered). Retries
come out of one budget per step (``RetryBudget``): the model client's own when
it has one (``retry_budget``), so the client's retries and the runtime's
same-step retries together never exceed it, else ``step_retries``. An error
the client says is not worth another attempt (``retryable`` false) is not
retried.

Replies are recorded as ``assistant/message`` and ``tool/call`` events; every
call is checked by the gate (``ToolRunner.check``) against the tools offered
with that request; a refusal is recorded as ``tool/refused`` and returned to
the model as a structured error, an advisory warning as ``tool/warning``.
Allowed calls are answered in order:

- a runtime-owned tool goes to the ``PlanRunner`` (``exit_plan_mode``,
  ``bootstrap_plan``, ``update_todo``, ``report_verification``);
- when such a call moved the runtime phase, every later call of the same
  reply is checked by the gate again, at the phase it would now run in
  (after ``report_verification`` completes a plan, a write is refused);
- before an executor runs, a plan that became executable starts, and the
  call's effects, resolved through links, are checked against the executing
  plan's scope: an effect outside it records ``realign`` (the plan goes back
  to draft, writes stop until it is realigned) and the call does not run;
- the executor runs with the log sealed, so it cannot append anything.

A step with no tool calls ends the turn, unless it ends the execution (no
todo open): then ``verify`` is recorded and one more step asks the model to
report the verification (``report_verification``).

A reply is recorded whatever it holds. Text, tool names and call ids that
are not Unicode (lone surrogates) are recorded with those characters escaped
(``\udc80`` as six characters); arguments the log cannot hold (not finite,
nested deeper than the gate allows, not Unicode) are recorded as the raw text
the model sent, and the gate refuses the call as ``malformed-call``. Only the
first ``max_tool_calls`` calls of a reply are recorded and answered; the rest
are refused together in one notice, so no reply can flood the log.

A reply is the model's final word only when it finished normally. One that
was cut off (``finish_reason`` ``length``), stopped by a content filter
(``content_filter``) or refused (a ``refusal`` text, recorded as the
assistant's words) is recorded, its tool calls are refused without running
(``reply-cut-off``, ``reply-filtered``, ``reply-refused``), and a notice
(``user/message`` from ``REPLY_NOTICE_SOURCE``) records the finish reason and
any refusal text. A cut-off reply is never taken as the end of execution: the
turn goes on with the next step. A filtered or refused one ends the turn
visibly (``ended_by`` ``content-filter`` or ``refused``, with ``error``); the
plan does not advance on either.

Every decision is one call into the kernel (``kernel.plan.decisions``), which
returns drafts; every append goes through ``SessionLog``, which numbers and
stamps them (strict fold first, then a compare-and-set append); the runtime
keeps only process state of its own: the
pending plan-mode choice. ``plan_mode`` reads the mode as the user sees it
(recorded and pending). A request is derived from the recorded state alone:
the pending choice is never an input of ``assemble_request``, so when a
flush's append fails the whole request (overlay, ``plan:policy``, plan view,
phase, tools) is the state its header records, and the choice waits for the
next accepted pre-step. While a tool runs the log is sealed against the
tool; a user's choice made meanwhile is queued, never appended, and the
runtime records it at the next accepted pre-step.

A runtime is its session's only writer (a goal driver holds the goal lease
for that). A turn left open by an earlier process that stopped mid-turn
(killed, crashed, its machine gone) is closed before the next turn opens, in
the same append (``abandoned_turn``): every call of that turn that was
recorded and never answered gets a failed ``tool/result``
(``call-interrupted``: whether it ran is unknown, so the model is told to
check before repeating it), then the turn ends. Without this a session would
refuse every later turn (``turn/start`` while a turn is open), and the
model's transcript would hold calls without answers, which chat-completion
servers refuse.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ...kernel.log import (
    ASSISTANT_MESSAGE,
    TOOL_CALL,
    TOOL_REFUSED,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
    Draft,
    Event,
)
from ...kernel.payload import JSONObject
from ...kernel.plan.context import ViewRequest, runtime_phase
from ...kernel.plan.decisions import decide_plan_choice, decide_pre_step, decide_request_header, decide_scope
from ...kernel.plan.mode import ChoiceOutcome, PendingChoice, PlanModeView, StepVerdict
from ...kernel.plan.review import PlanCommand, ReviewOutcome, parse_plan_command
from ...kernel.session import SessionState
from ...kernel.tools.events import read_tool_call, verdict_events
from ...kernel.tools.gate import Allowed, Refused, Verdict
from ...kernel.tools.spec import is_json
from ..llm.model import ChatResponse, ModelClient, ModelError, RetryBudget, ToolCall
from ..store.session_log import SessionLog
from .plan_runner import PlanRunner
from .prompt import Conversation, PreparedRequest, PromptConfig, prepare_request
from .resolve import resolved_effects
from .tool_runner import ToolRunner, error_output, kernel_call, result_draft

__all__ = [
    "CALL_INTERRUPTED",
    "RECOVERABLE_MODEL_ERRORS",
    "REPLY_NOTICE_SOURCE",
    "ProposedStep",
    "RecordedReply",
    "ReplyOutcome",
    "Runtime",
    "StepListener",
    "TurnReport",
    "abandoned_turn",
    "interrupted_calls",
    "record_reply",
    "refuse_outside_scope",
    "scope_refusal",
    "with_attachments",
]

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


#: The source of the runtime's notices about a reply (cut off, filtered,
#: refused, too many calls).
REPLY_NOTICE_SOURCE: JSONObject = {"type": "plugin", "plugin": "reply-check"}

#: How a reply that is not the model's final word is treated: the refusal
#: code its tool calls get, how the turn ends (None: it goes on) and what
#: the notice says happened.
_UNFINISHED: dict[str, tuple[str, str | None, str]] = {
    "length": ("reply-cut-off", None, "was cut off at the length limit"),
    "content_filter": ("reply-filtered", "content-filter", "was stopped by a content filter"),
    "refusal": ("reply-refused", "refused", "was a refusal"),
}


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
    if not is_json(value):
        return False
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _text(item) is not item:
                return False
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return True


def _recorded_call(call: ToolCall, index: int) -> ToolCall:
    """``call`` as the log can hold it (see the module docstring)."""
    call_id = _text(call.id) or f"call-{index}"
    name = _text(call.name)
    raw = _text(call.arguments_json)
    if call.arguments is not None and _recordable(call.arguments):
        if (call_id, name) == (call.id, call.name):
            return call
        return ToolCall(call_id, name, call.arguments_json, call.arguments)
    problem = call.arguments_error or "the arguments hold a value the log cannot record"
    return ToolCall(call_id, name, raw, None, problem)


def _unfinished(response: ChatResponse) -> str | None:
    """Why ``response`` is not the model's final word, or None when it is."""
    if response.refusal:
        return "refusal"
    if response.finish_reason in ("length", "content_filter"):
        return response.finish_reason
    return None


def with_attachments(text: str, attachments: Sequence[str]) -> str:
    """The text of a user message with the names of its attachments listed
    after it (the message as recorded and sent to the model)."""
    if not attachments:
        return text
    listed = "\n".join(f"- {name}" for name in attachments)
    return f"{text}\n\nAttachments:\n{listed}" if text else f"Attachments:\n{listed}"


ReplyOutcome = Literal["calls", "final", "again", "stop"]


@dataclass(frozen=True, slots=True)
class RecordedReply:
    """How one reply goes into the log (``record_reply``): append ``batch``
    (the assistant message and every call taken); then, for each call in
    order, append its gate ``notices`` and answer it when its ``verdict``
    allows it; then append each of ``trailing`` on its own (the notice of
    calls past the cap, the notice of a reply that was not the model's final
    word). ``outcome``: ``calls`` (the reply made calls), ``final`` (it
    finished without calls), ``again`` (it was cut off: the turn goes on) or
    ``stop`` (the turn ends, ``ended_by`` and ``error`` say why)."""

    text: str | None
    batch: tuple[Draft, ...]
    calls: tuple[ToolCall, ...]
    verdicts: tuple[Verdict, ...]
    notices: tuple[tuple[Draft, ...], ...]
    trailing: tuple[Draft, ...]
    outcome: ReplyOutcome
    ended_by: str | None = None
    error: str | None = None


def _reply_notice(text: str) -> Draft:
    """A notice about the last reply, for the model to read."""
    return Draft(USER_MESSAGE, {"text": text, "source": REPLY_NOTICE_SOURCE})


def record_reply(
    response: ChatResponse, tools: ToolRunner, prepared: PreparedRequest, max_tool_calls: int
) -> RecordedReply:
    """Decide how ``response`` to ``prepared`` is recorded (see the module
    docstring): the calls taken (at most ``max_tool_calls``, each as the log
    can hold it) with the gate's verdicts against the tools offered, every
    call of a reply that is not the model's final word refused, and the
    notices that say so."""
    text = _text(response.text if response.text is not None else response.refusal or "")
    shown = text if response.text is not None or response.refusal else None
    offered = response.tool_calls
    calls = tuple(_recorded_call(call, i) for i, call in enumerate(offered[: max(0, max_tool_calls)]))
    unfinished = _unfinished(response)
    if unfinished is None:
        verdicts: tuple[Verdict, ...] = tuple(tools.check(call, prepared.phase, prepared.offered) for call in calls)
    else:
        code, _, what = _UNFINISHED[unfinished]
        why = f"nothing in this reply ran: it {what} (finish_reason: {response.finish_reason})"
        hint = "Send the call again in a complete reply."
        verdicts = tuple(Refused(code, why, call.name, prepared.phase, hint) for call in calls)
    batch = [Draft(ASSISTANT_MESSAGE, {"text": text, "source": None})]
    notices: list[tuple[Draft, ...]] = []
    for call, verdict in zip(calls, verdicts, strict=True):
        (call_kind, call_payload), *rest = verdict_events(kernel_call(call), verdict)
        batch.append(Draft(call_kind, call_payload))
        notices.append(tuple(Draft(kind, payload) for kind, payload in rest))
    trailing: list[Draft] = []
    if len(offered) > len(calls):
        trailing.append(
            _reply_notice(
                f"Your reply made {len(offered)} tool calls; only the first {len(calls)} were taken "
                f"(at most {max_tool_calls} per reply) and the other {len(offered) - len(calls)} "
                "were refused without running. Send fewer calls per reply."
            )
        )
    if unfinished is None:
        outcome: ReplyOutcome = "calls" if calls else "final"
        return RecordedReply(shown, tuple(batch), calls, verdicts, tuple(notices), tuple(trailing), outcome)
    code, ended_by, what = _UNFINISHED[unfinished]
    said = f"Your last reply {what} (finish_reason: {response.finish_reason})"
    if response.refusal:
        said += f": {_text(response.refusal)!r}"
    if ended_by is None:
        going_on = f"{said}. It was not taken as your final answer and nothing in it ran; continue."
        trailing.append(_reply_notice(going_on))
        return RecordedReply(shown, tuple(batch), calls, verdicts, tuple(notices), tuple(trailing), "again")
    trailing.append(_reply_notice(f"{said}. Nothing in it ran, and the runtime ended the turn."))
    error = f"[{code}] the model's reply {what} (finish_reason: {response.finish_reason})"
    return RecordedReply(
        shown, tuple(batch), calls, verdicts, tuple(notices), tuple(trailing), "stop", ended_by, error
    )


def scope_refusal(state: SessionState, tools: ToolRunner, call: ToolCall) -> tuple[tuple[Draft, ...], Draft] | None:
    """When ``call``'s effects fall outside the executing plan's scope
    (``decide_scope``): the realignment to record, then the call's failed
    result (append each on its own); ``None`` when the call may run."""
    spec = tools.registry.get(call.name)
    if spec is None:
        return None
    verdict, realign = decide_scope(state, resolved_effects(tools, call))
    if not realign:
        return None
    output = error_output(
        "outside-plan-scope",
        f"nothing ran: {verdict.reason}; execution stops until the plan is realigned",
        violations=[{"code": v.code, "message": v.message} for v in verdict.violations],
        hint="Tell the user what you need; the plan must be presented and approved again.",
    )
    return tuple(realign), result_draft(call.id, call.name, ok=False, output=output)


def refuse_outside_scope(log: SessionLog, tools: ToolRunner, call: ToolCall) -> bool:
    """Append ``scope_refusal``'s realignment and failed result, each on its
    own, when ``call`` falls outside the executing plan's scope; whether it
    did (then nothing may run)."""
    refusal = scope_refusal(log.state, tools, call)
    if refusal is None:
        return False
    realign, result = refusal
    log.append(realign)
    log.append((result,))
    return True


#: The code of the answer given to a call its runtime stopped before answering.
CALL_INTERRUPTED = "call-interrupted"


def abandoned_turn(state: SessionState, events: Sequence[Event]) -> tuple[Draft, ...]:
    """What closes the turn an earlier process left open in ``events`` (folded
    to ``state``): ``interrupted_calls``, then its ``turn/end``; nothing when
    no turn is open."""
    if not state.turns.open:
        return ()
    return (*interrupted_calls(state, events), Draft(TURN_END, {"turn": state.turns.turn}))


def interrupted_calls(state: SessionState, events: Sequence[Event]) -> tuple[Draft, ...]:
    """A failed ``tool/result`` (``call-interrupted``) for each call of the
    open turn of ``events`` (folded to ``state``) that was never answered (no
    ``tool/result`` or ``tool/refused``), in the order the calls were made;
    nothing when no turn is open. Only the open turn's events are read (back
    to its ``turn/start``)."""
    if not state.turns.open:
        return ()
    start = len(events)
    while start > 0 and events[start - 1].kind != TURN_START:
        start -= 1
    unanswered: dict[str, str] = {}
    for event in events[start:]:
        if event.kind == TOOL_CALL:
            call = read_tool_call(event.payload)
            unanswered[call.call_id] = call.tool
        elif event.kind in (TOOL_RESULT, TOOL_REFUSED):
            unanswered.pop(str(event.payload["call_id"]), None)
    output = error_output(
        CALL_INTERRUPTED,
        "the runtime stopped before this call was answered, so whether it ran is unknown",
        hint="Check its effects before making the call again.",
    )
    return tuple(result_draft(call_id, tool, ok=False, output=output) for call_id, tool in unanswered.items())


@dataclass(frozen=True, slots=True)
class ProposedStep:
    """A step the runtime is about to request: ``attempt`` is 0 for the first
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
    open, closed just before this one (``abandoned_turn``; ``None`` when
    there was none)."""

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


@dataclass
class Runtime:
    """One session's runtime: the log, the model, the tools and the plan.

    ``resumed`` is true when the runtime opened a session that already had
    events: its first build-mode request then carries the full plan (the
    first alignment after a resume). ``retry_budget`` is the retries of one
    step (by default the model client's ``retry_budget``, else one of
    ``step_retries``); ``max_tool_calls`` caps the calls of one reply.
    """

    log: SessionLog
    model: ModelClient
    tools: ToolRunner
    plans: PlanRunner
    prompt: PromptConfig = field(default_factory=PromptConfig)
    max_steps: int = 16
    step_retries: int = 2
    max_tool_calls: int = 32
    retry_budget: RetryBudget | None = None
    step_listeners: list[StepListener] = field(default_factory=list)
    resumed: bool = False
    _view: ViewRequest = field(default_factory=ViewRequest)
    _requests: int = 0
    _view_state: SessionState | None = None
    _pending: PendingChoice | None = field(default=None, init=False)
    _conversation: Conversation = field(default_factory=Conversation, init=False)

    def __post_init__(self) -> None:
        self.resumed = self.resumed or self.log.last_seq > 0
        if self.retry_budget is None:
            shared = getattr(self.model, "retry_budget", None)
            self.retry_budget = shared if isinstance(shared, RetryBudget) else RetryBudget(self.step_retries)

    # -- plan mode: the user's choice and /plan ----------------------------

    @property
    def plan_mode(self) -> PlanModeView:
        """The mode as the user sees it (``get``): the recorded state the
        current step is assembled from, and the chosen state waiting for the
        next accepted pre-step (``None`` when nothing is pending)."""
        pending = self._pending
        return PlanModeView(self.log.state.plan_mode, None if pending is None else pending.target)

    def choose_plan_mode(self, target: bool) -> ChoiceOutcome:
        """The user chooses plan mode on or off (``set(agent, active)``):
        appended now between turns, queued for the next pre-step in a turn.
        While a tool runs the log is sealed (the tool cannot append); a
        choice made then is the user's and is queued like any in-turn choice,
        to be recorded by the runtime at the next accepted pre-step."""
        choice = decide_plan_choice(
            self.log.state, self.log.events, self._pending, target, tool_running=self.log.sealed_by is not None
        )
        self.log.append(choice.drafts)
        self._pending = choice.pending
        return choice.outcome

    def plan_command(self, command: PlanCommand) -> ChoiceOutcome:
        """Apply a parsed ``/plan``: choose the mode (``/plan off`` also drops
        a pending entry that no request has seen yet)."""
        return self.choose_plan_mode(command.target)

    def submit(
        self, text: str, view: ViewRequest | None = None, attachments: Sequence[str] = ()
    ) -> TurnReport | ChoiceOutcome:
        """A human's input, with the names of any files attached to it:
        ``/plan`` commands are applied (``/plan <message>`` then runs a turn
        with the message; with a live plan that turn is about rewriting it, so
        it carries the full plan); anything else runs a turn. Attachments go
        into the recorded message, listed after its text (a bare ``/plan``
        with attachments runs a turn with them). ``/plan off`` takes none:
        raises ``PlanCommandError`` (``attachments-with-off``) and changes
        nothing."""
        command = parse_plan_command(text, attachments)
        if command is None:
            return self.run_turn(with_attachments(text, attachments), view=view)
        outcome = self.plan_command(command)
        if command.message is None and not command.attachments:
            return outcome
        rewriting = self.log.state.plan.live
        base = view or ViewRequest()
        return self.run_turn(
            with_attachments(command.message or "", command.attachments),
            view=ViewRequest(
                base.user_asked_full, base.summary_insufficient, base.rewriting or rewriting,
                base.first_since_resume,
            ),
        )

    # -- turns and steps ----------------------------------------------------

    def run_turn(
        self, text: str, source: JSONObject | None = None, view: ViewRequest | None = None
    ) -> TurnReport:
        """Run one whole turn opened by ``text`` from ``source`` (``None``: a
        human). ``view`` says what the runtime knows about the plan view this
        turn needs (the user asked for the full plan …). Model failures end
        the turn cleanly; the report says how it ended. A turn an earlier
        process left open is closed first, in the same append
        (``abandoned_turn``)."""
        state = self.log.state
        closing = abandoned_turn(state, self.log.events)
        number = state.turns.turn + 1
        opened = self.log.append(
            (*closing, Draft(TURN_START, {"turn": number}), Draft(USER_MESSAGE, {"text": text, "source": source}))
        )
        self._view = view or ViewRequest()
        report = TurnReport(number, opened[len(closing)].seq, closed_turn=state.turns.turn if closing else None)
        try:
            self._steps(report)
        finally:
            self.log.append((Draft(TURN_END, {"turn": number}),))
            report.last_seq = self.log.last_seq
        return report

    def _steps(self, report: TurnReport) -> None:
        budget = self.retry_budget
        assert budget is not None
        for step in range(1, self.max_steps + 1):
            with budget.step():
                asked = self._ask(step, report, budget)
            if asked is None:
                return
            response, prepared = asked
            outcome = self._record_reply(response, prepared, report)
            if outcome == "stop" or (outcome == "final" and not self.plans.after_final_reply()):
                return
        report.ended_by = "max-steps"

    def _ask(
        self, step: int, report: TurnReport, budget: RetryBudget
    ) -> tuple[ChatResponse, PreparedRequest] | None:
        """Propose ``step`` and ask the model, proposing it again after a
        recoverable failure while the budget lasts; None when the turn ends
        (the report says why)."""
        attempt = 0
        while True:
            proposed = ProposedStep(report.turn, step, attempt)
            if not self._pre_step(proposed, report):
                report.ended_by = "step-rejected"
                return None
            prepared = self._prepare()
            report.requests.append(prepared)
            report.steps += 1
            try:
                return self.model.complete(prepared.request), prepared
            except ModelError as exc:
                retry = exc.retryable is not False and exc.code in RECOVERABLE_MODEL_ERRORS
                if retry and budget.take():
                    attempt += 1
                    report.retries += 1
                    continue
                report.error = f"[{exc.code}] {exc.message}"
                report.ended_by = "model-error"
                return None

    def _pre_step(self, proposed: ProposedStep, report: TurnReport) -> bool:
        """The pre-step listener: downstream listeners first, then the flush,
        then the plan lifecycle, then the request header. False when the
        step was not accepted (nothing is appended then)."""
        verdict: StepVerdict = "accepted"
        for listener in self.step_listeners:
            verdict = listener(proposed)
            if verdict != "accepted":
                break
        flush = decide_pre_step(self.log.state, self.log.events, self._pending, verdict)
        if flush.drafts:
            try:
                self.log.append(flush.drafts)
                self._pending = flush.pending_after_success
            except Exception:  # a failed append keeps the choice; the turn goes on
                self._pending = flush.pending_after_failure
                report.flush_failures += 1
        else:
            self._pending = flush.pending_after_success
        if verdict != "accepted":
            return False
        self.plans.before_request()
        # The plan view is chosen from the fold the header describes. A new
        # plan counts as seen only once a build-mode reply is recorded, so a
        # retry of this step carries the same view.
        self._view_state = self.log.state
        self.log.append((decide_request_header(self.log.state, proposed.step),))
        return True

    def _prepare(self) -> PreparedRequest:
        first = self.resumed and self._requests == 0
        prepared = prepare_request(
            self._view_state or self.log.state,
            self.log.events,
            self._view,
            first_request=first,
            tools=self.tools,
            config=self.prompt,
            messages=self._conversation,
        )
        self._requests += 1
        return prepared

    def _record_reply(self, response: ChatResponse, prepared: PreparedRequest, report: TurnReport) -> str:
        """Record the reply and answer each tool call through the gate
        (``record_reply``). The outcome: ``calls``, ``final``, ``again`` or
        ``stop`` (the report says why)."""
        recorded = record_reply(response, self.tools, prepared, self.max_tool_calls)
        report.reply = recorded.text
        self.log.append(recorded.batch)
        for call, verdict, rest in zip(recorded.calls, recorded.verdicts, recorded.notices, strict=True):
            self.log.append(rest)
            if isinstance(verdict, Allowed):
                self._answer(call, verdict, prepared)
        for notice in recorded.trailing:
            self.log.append((notice,))
        if recorded.ended_by is not None:
            report.error, report.ended_by = recorded.error, recorded.ended_by
        return recorded.outcome

    def _notices(self, notices: list[tuple[str, JSONObject]]) -> None:
        self.log.append([Draft(kind, payload) for kind, payload in notices])

    def _answer(self, call: ToolCall, verdict: Verdict, prepared: PreparedRequest) -> None:
        phase = runtime_phase(self.log.state)
        if phase != prepared.phase:
            # An earlier call of this reply moved the phase: ask the gate
            # again, at the phase this call would now run in.
            verdict = self.tools.check(call, phase, prepared.offered)
            self._notices(list(verdict_events(kernel_call(call), verdict)[1:]))
        if isinstance(verdict, Refused):
            return
        if verdict.route == "runtime":
            self.plans.handle(call, self._queue_exit)
            return
        self.plans.before_request()  # a plan made executable in this reply
        if self._outside_scope(call):
            return
        with self.log.sealed(f"tool {call.name}"):
            ok, output = self.tools.execute(call)
        self.log.append((result_draft(call.id, call.name, ok=ok, output=output),))

    def _outside_scope(self, call: ToolCall) -> bool:
        """Check the call's effects against the executing plan's scope; when
        any is outside, record the realignment and answer without running."""
        return refuse_outside_scope(self.log, self.tools, call)

    def _queue_exit(self, outcome: ReviewOutcome) -> None:
        """An approved review queues its silent exit for the next pre-step."""
        self._pending = outcome.pending
