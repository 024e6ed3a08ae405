"""What the runtime asks the plan machines: one call per decision.

Theory of operation
-------------------
A runtime (the loop in ``adapters.runtime``, or a host in another language
over JSON-RPC) hands the kernel one thing that happened and gets back, in one
call, everything to do about it: the drafts to append (``kernel.log.Draft``;
the session log numbers and stamps them) and what to tell the model. The
entry points, each pure and total over its inputs:

- ``decide_tool_call(state, call, new_plan_id=, review_available=)``: a
  call of a runtime-owned tool (``exit_plan_mode``, ``bootstrap_plan``,
  ``update_todo``, ``report_verification``) that the gate routed to the
  runtime. Returns a ``ToolDecision``: append its ``drafts``; then either
  answer the model with ``result`` (the ``tool/result`` draft is already the
  last of the drafts), or, for an ``exit_plan_mode`` that recorded a plan,
  put ``review`` to a human and decide the answer with
  ``decide_review_answer``.
- ``decide_review_answer(state, review, answer)``: the human's answer to the
  review of ``exit_plan_mode``: ``approve`` or ``reject`` drafts, the
  ``tool/result``, and the outcome (whose ``pending`` is the silent exit to
  queue when the plan was approved).
- ``decide_plan_choice(state, events, pending, target, tool_running=)``: the
  user's choice of plan mode (``/plan``, a toggle), looked up in
  ``kernel.plan.mode.CHOICE_TABLE``: the drafts to append now (when nothing
  runs), the choice left pending, and the outcome.
- ``decide_pre_step(state, events, pending, verdict)``: the turn-boundary
  flush of a pending plan-mode choice for a proposed step;
  ``decide_before_request(state)``: the start of an approved or implicit plan
  waiting to run, bound to its exact version; ``decide_request_header(state,
  step)``: the header that records the request;
- ``decide_scope(state, effects)``: whether an executor call may run within
  the executing plan's scope, and the ``realign`` when it may not;
- ``decide_after_final_reply(state)``: ``verify`` when the model stopped and
  that ended the execution.

The model's mistakes are never raised: a refusal is a failed ``result`` with
a structured error (``{"error": {code, message, …}}``, with every problem of
bad arguments), exactly what the model is told. These functions raise only
for a programming error of the caller (a state that is not a fold).

Each decision proves its drafts as the plan builders (``kernel.plan_events``)
do: it folds them with the real reducer onto the state it is given, as the
events that would follow it (stamped with the state's last time, which the
log's own time never goes below), so a decision and a replay never disagree.

These decisions read the whole session (its turns, plan mode, plan and log),
so they live above the session fold; the plan machine (``kernel.plan``)
knows only plan state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .errors import PlanfoldError, ReplayError
from .log import REQUEST_HEADER, TOOL_RESULT, Draft, Event, RequestHeader, user_message
from .payload import JSON, object_of
from .plan.artifact import PlanRef, PlanStatus
from .plan.context import plan_to_start
from .plan.mode import (
    CHOICE_TABLE,
    NOTICE_SOURCE,
    ChoiceOutcome,
    PendingChoice,
    PendingRelation,
    StepVerdict,
    notice_due,
    notice_text,
    plan_mode_set,
)
from .plan.review import ReviewAnswer, ReviewOutcome, ReviewRequest, decide_review, start_review
from .plan.scope import Effect, ScopeVerdict, check_scope
from .plan.spec import PlanSpecError, SpecProblem, SummaryView
from .plan.spec_json import decode_exit_plan_args
from .plan.tools import ToolArgumentsError, decode_todo_update, decode_verification
from .plan.views import render_plan_content
from .plan_events import (
    approve_event,
    bootstrap_event,
    execution_end_event,
    exit_plan_events,
    fold_drafts,
    open_todo_ids,
    reject_event,
    scope_realign_event,
    start_event,
    todo_event,
    verification_event,
)
from .session import SessionState
from .tools.events import ToolResult, read_tool_notice, read_tool_result, tool_result_payload
from .tools.spec import ToolCall

__all__ = [
    "PendingReview",
    "PlanChoice",
    "PreStep",
    "ReviewDecision",
    "ToolDecision",
    "ToolResult",
    "decide_after_final_reply",
    "decide_before_request",
    "decide_plan_choice",
    "decide_pre_step",
    "decide_request_header",
    "decide_review_answer",
    "decide_scope",
    "decide_tool_call",
    "result_draft",
    "tool_error_text",
    "tool_message_text",
    "tool_ok_text",
]


def tool_error_text(code: str, message: str, **extra: JSON) -> str:
    """The text of a failed call as the model reads it: ``{"error": {code, message, …}}``."""
    body: dict[str, JSON] = {"code": code, "message": message, **extra}
    import json  # noqa: PLC0415 (json is imported on first use, not with the kernel)

    return json.dumps({"error": body}, ensure_ascii=False, sort_keys=True)


def tool_message_text(event: Event) -> str:
    """What the model was told about a recorded call: the output of its
    ``tool/result``, or the error text of its ``tool/refused`` notice."""
    if event.kind == TOOL_RESULT:
        return read_tool_result(event.payload).output
    notice = read_tool_notice(event.payload)
    return tool_error_text(notice.code, notice.reason, hint=notice.hint, phase=notice.phase, refused=True)


def tool_ok_text(body: dict[str, JSON]) -> str:
    """The text of a successful runtime-owned call as the model reads it."""
    import json  # noqa: PLC0415 (see tool_error_text)

    return json.dumps(body, sort_keys=True)


@dataclass(frozen=True, slots=True)
class PendingReview:
    """An ``exit_plan_mode`` call waiting for a human: the call, the request
    to show (the rendered plan and the answers offered) and the exact plan
    version under review."""

    call_id: str
    tool: str
    request: ReviewRequest
    ref: PlanRef


@dataclass(frozen=True, slots=True)
class ToolDecision:
    """What to do for one runtime-owned tool call: append ``drafts`` (in
    order), then answer the model with ``result``; or, when ``review`` is set
    (and ``result`` is ``None``), ask a human and decide the answer with
    ``decide_review_answer``."""

    drafts: tuple[Draft, ...]
    result: ToolResult | None
    review: PendingReview | None = None


@dataclass(frozen=True, slots=True)
class ReviewDecision:
    """What to do with a review answer: append ``drafts`` (the plan's
    ``approve`` or ``reject`` when there is one, then the ``tool/result``),
    answer the model with ``result``, and queue ``exit`` when it is set (the
    silent exit from plan mode after an approval). ``outcome`` is what the
    answer meant."""

    drafts: tuple[Draft, ...]
    result: ToolResult
    outcome: ReviewOutcome
    exit: PendingChoice | None = None


@dataclass(frozen=True, slots=True)
class PlanChoice:
    """A user's plan-mode choice decided: append ``drafts`` now (none when the
    choice waits for the next accepted pre-step), keep ``pending`` as the
    choice waiting (``None``: none), and report ``outcome``."""

    drafts: tuple[Draft, ...]
    pending: PendingChoice | None
    outcome: ChoiceOutcome


@dataclass(frozen=True, slots=True)
class PreStep:
    """The flush for a proposed step: append ``drafts`` (possibly none); the
    pending choice is then ``pending_after_success``, or stays
    ``pending_after_failure`` when the append fails (it is never lost)."""

    drafts: tuple[Draft, ...]
    pending_after_success: PendingChoice | None
    pending_after_failure: PendingChoice | None


# --------------------------------------------------------------------------
# Helpers


def result_draft(result: ToolResult) -> Draft:
    """The ``tool/result`` that records ``result``, for the log to number."""
    return Draft(TOOL_RESULT, tool_result_payload(result.call_id, result.tool, ok=result.ok, output=result.output))


def _failure(call_id: str, tool: str, exc: PlanfoldError) -> ToolResult:
    if isinstance(exc, PlanSpecError | ToolArgumentsError):
        problems: list[JSON] = [{"code": p.code, "where": p.where, "message": p.message} for p in exc.problems]
        return ToolResult(call_id, tool, False, tool_error_text(exc.code, exc.message, problems=problems))
    return ToolResult(call_id, tool, False, tool_error_text(exc.code, exc.message))


def _arguments(call: ToolCall) -> object:
    """The decoded arguments (an object); the gate refuses any other before this."""
    if not isinstance(call.arguments, Mapping):
        problem = SpecProblem("bad-json", "arguments", "the arguments did not decode to an object")
        raise ToolArgumentsError(call.name, [problem])
    return call.arguments


def _answer(call: ToolCall, drafts: Sequence[Draft], ok: bool, output: str) -> ToolDecision:
    result = ToolResult(call.id, call.name, ok, output)
    return ToolDecision((*drafts, result_draft(result)), result)


def _summary_refreshed(before: SummaryView, after: SessionState) -> bool:
    """Whether the current plan's summary differs from ``before`` (a key todo
    change refreshes it; other progress leaves it as it was)."""
    cur = after.plan.current
    return cur is not None and cur.summary != before


# --------------------------------------------------------------------------
# The runtime-owned tools


def decide_tool_call(
    state: SessionState, call: ToolCall, *, new_plan_id: str, review_available: bool
) -> ToolDecision:
    """Decide one call of a runtime-owned tool routed to the runtime by the
    gate. ``new_plan_id`` names a plan the call may create (``exit_plan_mode``
    with no live plan, ``bootstrap_plan``); ``review_available`` says whether
    a human can be asked (``exit_plan_mode`` fails closed without one).

    Never raises for the model's mistakes: those are a failed ``result``.
    """
    try:
        if call.name == "exit_plan_mode":
            return _exit(state, call, new_plan_id, review_available)
        if call.name == "bootstrap_plan":
            return _bootstrap(state, call, new_plan_id)
        if call.name == "update_todo":
            return _todo(state, call)
        if call.name == "report_verification":
            return _verification(state, call)
        output = tool_error_text("no-runtime-handler", f"the runtime does not handle {call.name}")
        result = ToolResult(call.id, call.name, False, output)
    except PlanfoldError as exc:
        result = _failure(call.id, call.name, exc)
    return ToolDecision((result_draft(result),), result)


def _exit(state: SessionState, call: ToolCall, new_plan_id: str, review_available: bool) -> ToolDecision:
    if not state.plan_mode:
        start_review(False, True, "")  # raises not-in-plan-mode
    args = decode_exit_plan_args(_arguments(call))
    rendered = render_plan_content(args.spec)
    request = start_review(True, review_available, rendered)
    drafts = exit_plan_events(state, args, new_plan_id)
    artifact = fold_drafts(state, drafts).plan.current
    assert artifact is not None  # a draft, a rewrite, or the live plan unchanged
    return ToolDecision(drafts, None, PendingReview(call.id, call.name, request, artifact.ref))


def _bootstrap(state: SessionState, call: ToolCall, new_plan_id: str) -> ToolDecision:
    args = decode_exit_plan_args(_arguments(call))
    draft = bootstrap_event(state, new_plan_id, args.spec, args.summary_candidate)
    artifact = fold_drafts(state, (draft,)).plan.current
    assert artifact is not None
    body: dict[str, JSON] = {
        "plan_id": artifact.id,
        "revision": artifact.revision,
        "status": artifact.status,
        "next": "the plan starts executing with your next step",
    }
    return _answer(call, (draft,), True, tool_ok_text(body))


def _todo(state: SessionState, call: ToolCall) -> ToolDecision:
    update = decode_todo_update(_arguments(call))
    draft = todo_event(state, update.todo_id, update.status)
    before = state.plan.current
    assert before is not None  # todo_event refuses without a plan
    after = fold_drafts(state, (draft,))
    body: dict[str, JSON] = {
        "todo_id": update.todo_id,
        "status": update.status,
        "summary_refreshed": _summary_refreshed(before.summary, after),
        "open_todos": list(open_todo_ids(after)),
    }
    return _answer(call, (draft,), True, tool_ok_text(body))


def _verification(state: SessionState, call: ToolCall) -> ToolDecision:
    report = decode_verification(_arguments(call))
    draft = verification_event(state, report)
    cur = fold_drafts(state, (draft,)).plan.current
    assert cur is not None
    body: dict[str, JSON] = {"passed": report.passed, "plan_id": cur.id, "status": cur.status}
    if not report.passed:
        body["next"] = "execution continues: fix what failed, then stop again to verify"
    return _answer(call, (draft,), True, tool_ok_text(body))


def decide_review_answer(state: SessionState, review: PendingReview, answer: ReviewAnswer) -> ReviewDecision:
    """Decide a human's ``answer`` to ``review``, on ``state`` (the session as
    it is once the drafts of the ``exit_plan_mode`` decision were appended).
    Exactly one clean approval records ``approve`` bound to the reviewed
    version and succeeds; "Keep planning" records ``reject`` with the typed
    feedback; any other answer records nothing. Every answer but an approval
    fails the call with the corrective message. Never raises for an answer."""
    outcome = decide_review(answer)
    drafts: tuple[Draft, ...] = ()
    try:
        if outcome.approved:
            drafts = (approve_event(state, review.ref),)
            body: dict[str, JSON] = {"approved": True, "plan_id": review.ref.plan_id, "revision": review.ref.revision}
            if outcome.feedback is not None:
                body["notes"] = outcome.feedback
            result = ToolResult(review.call_id, review.tool, True, tool_ok_text(body))
        else:
            if outcome.status == "keep-planning":
                drafts = (reject_event(state, review.ref, outcome.feedback),)
            result = ToolResult(review.call_id, review.tool, False, tool_error_text(outcome.status, outcome.message))
    except PlanfoldError as exc:
        failed = _failure(review.call_id, review.tool, exc)
        return ReviewDecision((result_draft(failed),), failed, outcome)
    drafts = (*drafts, result_draft(result))
    return ReviewDecision(drafts, result, outcome, outcome.pending)  # only an approval has a pending exit


# --------------------------------------------------------------------------
# Around requests


def decide_before_request(state: SessionState) -> tuple[Draft, ...]:
    """Before a request (and before an executor runs): ``start`` for the
    approved or implicit plan version waiting to run, else nothing. Never
    raises."""
    ref = plan_to_start(state)
    return () if ref is None else (start_event(state, ref),)


def decide_pre_step(
    state: SessionState, events: Sequence[Event], pending: PendingChoice | None, verdict: StepVerdict
) -> PreStep:
    """The turn-boundary flush for a proposed step with ``verdict`` in the
    session folded to ``state`` from ``events``: only an accepted step inside
    an open turn records the pending choice (with its notice when one is
    due); a choice equal to the recorded mode is dropped (the flips netted
    out). Only the events since the last request header are read (for the
    notice). Never raises."""
    if pending is None or verdict != "accepted" or not state.turns.open:
        return PreStep((), pending, pending)
    if pending.target == state.plan_mode:
        return PreStep((), None, None)
    chosen = _choice_drafts(events, pending.target, pending.silent, state.plan.status)
    return PreStep(chosen, None, pending)


def decide_request_header(state: SessionState, step: int) -> Draft:
    """The ``request/header`` of ``step`` in the open turn of the session
    folded to ``state``, recording its plan mode (the state the fold gives
    after any flush was appended). Raises ``ReplayError``
    (``transition-not-allowed``) when no turn is open."""
    if not state.turns.open:
        raise ReplayError(state.last_seq + 1, "transition-not-allowed", "a request header needs an open turn")
    return Draft(REQUEST_HEADER, object_of(RequestHeader(state.turns.turn, step, state.plan_mode)))


def decide_scope(state: SessionState, effects: Sequence[Effect]) -> tuple[ScopeVerdict, tuple[Draft, ...]]:
    """Check the effects an executor call is about to have against the
    executing plan's scope: the verdict, and the ``realign`` to append (the
    call must not run then); nothing when all is inside, or no plan is
    executing. Never raises."""
    cur = state.plan.current
    if state.plan_mode or cur is None or cur.status != "executing":
        return ScopeVerdict(), ()
    verdict = check_scope(cur.spec, effects)
    if not verdict.realign_needed:
        return verdict, ()
    realign = scope_realign_event(state, effects)
    return verdict, () if realign is None else (realign,)


def decide_after_final_reply(state: SessionState) -> tuple[Draft, ...]:
    """The model ended a step without tool calls: ``verify`` when that ended
    the execution (no todo open), else nothing (the turn ends). Never raises."""
    draft = execution_end_event(state)
    return () if draft is None else (draft,)


# --------------------------------------------------------------------------
# The user's choice of plan mode


def _choice_drafts(
    events: Sequence[Event], target: bool, silent: bool, plan_status: PlanStatus | None
) -> tuple[Draft, ...]:
    """What records a choice of ``target`` after ``events``: the
    ``plan/mode`` draft and, unless the choice is silent, a notice
    ``user/message`` when one is due (``notice_due``), worded from
    ``plan_status``, the current plan's status."""
    if silent or not notice_due(events, target):
        return (plan_mode_set(target),)
    return plan_mode_set(target), user_message(notice_text(target, plan_status), NOTICE_SOURCE)


def decide_plan_choice(
    state: SessionState,
    events: Sequence[Event],
    pending: PendingChoice | None,
    target: bool,
    *,
    tool_running: bool = False,
) -> PlanChoice:
    """The user chooses plan mode ``target`` (``/plan``, a toggle) in the
    session folded to ``state`` from ``events``, with ``pending`` the choice
    already waiting: the row of ``CHOICE_TABLE`` for how ``pending`` relates
    to ``target``, whether ``target`` is the recorded mode and whether the
    log is sealed. Between turns it is recorded now (with a notice when one
    is due); in a turn, or while a tool runs (the log is sealed then), it
    waits for the next accepted pre-step. Never raises."""
    sealed = state.turns.open or tool_running
    row = CHOICE_TABLE[(PendingRelation.of(pending, target), target == state.plan_mode, sealed)]
    if row.pending == "keep":
        after = pending
    elif row.pending == "set":
        after = PendingChoice(target)
    else:
        after = None
    drafts = _choice_drafts(events, target, False, state.plan.status) if row.append_now else ()
    return PlanChoice(drafts, after, row.outcome)
