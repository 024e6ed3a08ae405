"""The plan lifecycle in the runtime: the runtime-owned tools (exit_plan_mode
and its review, bootstrap_plan, update_todo, report_verification), starting
the approved version, and the end of execution.

Theory of operation
-------------------
The runtime never writes plan state directly and no tool executor can (the
log is sealed while one runs); this runner appends ``plan/artifact`` events
built by ``kernel.plan_events`` and decided by ``kernel.plan_tools`` (each
builder proves its event against the real fold) and the session fold derives
the plan. The gate routes each runtime-owned tool here only in its phases;
``handle`` dispatches by name, turns every ``PlanfoldError`` into a structured
error for the model, and always ends with one ``tool/result``.

``exit_plan_mode(plan_spec, summary_candidate)``, in order: the call must be
made in plan mode; its arguments are decoded and checked, and every problem
is reported to the model at once; the plan is rendered as markdown and a
review channel must be available (fail closed); then the draft (or, for a
live plan whose substance changed, the rewrite) is recorded, and the rendered
plan is put to the review port. Exactly one clean approval records
``approve`` bound to the plan's id, revision and content hash, and queues the
silent exit (appended at the next accepted pre-step, so plan guidance stays
on for the rest of this tool batch); the call returns ``{approved: true}``,
with the reviewer's typed ``notes`` when there are any. "Keep planning"
records ``reject`` with the typed feedback (none for a bare "Keep planning");
every other answer leaves the draft as it is. Those calls fail with the
corrective message.

``bootstrap_plan(plan_spec, summary_candidate)`` (build mode, no executable
plan) records a minimal ``implicit`` plan; ``update_todo(todo_id, status)``
records todo progress and says whether the summary was refreshed;
``report_verification(passed, notes)`` completes the plan, or records the
failed verification and sends it back to execution.

Before each request (``before_request``), and before an executor runs, an
approved or implicit plan that is waiting starts executing, bound to its
exact version (``plan_to_start``): a draft never starts. When the model ends
a step without tool calls, ``after_final_reply`` records ``verify`` if that
ended the execution (``execution_end_event``: no todo open) and asks for one
more step, in which the model is offered ``report_verification``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from planfold.adapters.llm import model
from planfold.adapters.runtime.review import ReviewPort, ask
from planfold.adapters.runtime.tool_runner import error_output, result_event
from planfold.adapters.store.session_log import SessionLog
from planfold.kernel.errors import PlanfoldError
from planfold.kernel.log import Event
from planfold.kernel.payload import JSON
from planfold.kernel.plan.context import plan_to_start
from planfold.kernel.plan.events import (
    approve_event,
    bootstrap_event,
    exit_plan_events,
    reject_event,
    start_event,
    todo_event,
)
from planfold.kernel.plan.review import ReviewOutcome, decide_review, start_review
from planfold.kernel.plan.spec import PlanSpecError, SpecProblem
from planfold.kernel.plan.spec_json import decode_exit_plan_args
from planfold.kernel.plan.tools import (
    ToolArgumentsError,
    decode_todo_update,
    decode_verification,
    execution_end_event,
    open_todo_ids,
    summary_refreshed,
    verification_event,
)
from planfold.kernel.plan.views import render_plan_content

__all__ = ["Append", "PlanRunner"]

Append = Callable[[tuple[Event, ...] | list[Event]], tuple[Event, ...]]
QueueExit = Callable[[ReviewOutcome], None]


def _failure(exc: PlanfoldError) -> str:
    if isinstance(exc, PlanSpecError | ToolArgumentsError):
        problems: list[JSON] = [{"code": p.code, "where": p.where, "message": p.message} for p in exc.problems]
        return error_output(exc.code, exc.message, problems=problems)
    return error_output(exc.code, exc.message)


def _ok(body: dict[str, JSON]) -> tuple[bool, str]:
    return True, json.dumps(body, sort_keys=True)


def _arguments(call: model.ToolCall) -> object:
    """The decoded arguments; the gate refuses undecodable ones before this."""
    if call.arguments is None:
        problem = SpecProblem("bad-json", "arguments", call.arguments_error or "arguments did not decode")
        raise ToolArgumentsError(call.name, [problem])
    return call.arguments


@dataclass
class PlanRunner:
    """Plan-lifecycle decisions for one session's runtime."""

    log: SessionLog
    review: ReviewPort | None
    new_plan_id: Callable[[], str]
    shown: list[str] = field(default_factory=list)
    outcomes: list[ReviewOutcome] = field(default_factory=list)

    # -- around requests ----------------------------------------------------

    def before_request(self, append: Append) -> None:
        """Start the approved (or implicit) version waiting to run, if any."""
        ref = plan_to_start(self.log.state)
        if ref is not None:
            append((start_event(self.log.state, ref, self.log.now()),))

    def after_final_reply(self, append: Append) -> bool:
        """The model ended a step without tool calls. When that ends the
        execution (no todo open): enter verify and ask for another step
        (True). Otherwise the turn ends (False)."""
        event = execution_end_event(self.log.state, self.log.now())
        if event is None:
            return False
        append((event,))
        return True

    # -- the runtime-owned tools ------------------------------------------

    def handle(self, call: model.ToolCall, append: Append, queue_exit: QueueExit) -> None:
        """Handle one call of a runtime-owned tool the gate routed here;
        always ends with its ``tool/result``."""
        handlers: dict[str, Callable[[], tuple[bool, str]]] = {
            "exit_plan_mode": lambda: self._exit(call, append, queue_exit),
            "bootstrap_plan": lambda: self._bootstrap(call, append),
            "update_todo": lambda: self._todo(call, append),
            "report_verification": lambda: self._verification(call, append),
        }
        handler = handlers.get(call.name)
        try:
            if handler is None:
                ok, output = False, error_output("no-runtime-handler", f"the runtime does not handle {call.name}")
            else:
                ok, output = handler()
        except PlanfoldError as exc:
            ok, output = False, _failure(exc)
        append((result_event(self.log.last_seq + 1, self.log.now(), call.id, call.name, ok=ok, output=output),))

    def _exit(self, call: model.ToolCall, append: Append, queue_exit: QueueExit) -> tuple[bool, str]:
        state = self.log.state
        if not state.plan_mode:
            start_review(False, True, "")  # raises not-in-plan-mode
        args = decode_exit_plan_args(_arguments(call))
        rendered = render_plan_content(args.spec)
        available = self.review is not None and bool(self.review.available)
        request = start_review(True, available, rendered)
        append(exit_plan_events(state, args, self.new_plan_id(), self.log.now()))
        artifact = self.log.state.plan.current
        assert artifact is not None
        ref = artifact.ref
        self.shown.append(rendered)
        outcome = decide_review(ask(self.review, request))
        self.outcomes.append(outcome)
        if outcome.approved:
            append((approve_event(self.log.state, ref, self.log.now()),))
            queue_exit(outcome)
            body: dict[str, JSON] = {"approved": True, "plan_id": ref.plan_id, "revision": ref.revision}
            if outcome.feedback is not None:
                body["notes"] = outcome.feedback
            return _ok(body)
        if outcome.status == "keep-planning":
            append((reject_event(self.log.state, ref, outcome.feedback, self.log.now()),))
        return False, error_output(outcome.status, outcome.message)

    def _bootstrap(self, call: model.ToolCall, append: Append) -> tuple[bool, str]:
        """Record a minimal implicit plan; it starts before the next request.
        Raises ``PlanSpecError`` (every problem) or ``PlanError``."""
        args = decode_exit_plan_args(_arguments(call))
        state = self.log.state
        append((bootstrap_event(state, self.new_plan_id(), args.spec, args.summary_candidate, self.log.now()),))
        artifact = self.log.state.plan.current
        assert artifact is not None
        return _ok(
            {
                "plan_id": artifact.id,
                "revision": artifact.revision,
                "status": artifact.status,
                "next": "the plan starts executing with your next step",
            }
        )

    def _todo(self, call: model.ToolCall, append: Append) -> tuple[bool, str]:
        """Record one todo's progress. Raises ``ToolArgumentsError`` or
        ``PlanError`` (``unknown-todo``, ``todo-unchanged``, ``no-plan`` …)."""
        update = decode_todo_update(_arguments(call))
        state = self.log.state
        before = None if state.plan.current is None else state.plan.current.summary
        append((todo_event(state, update.todo_id, update.status, self.log.now()),))
        after = self.log.state
        assert before is not None  # todo_event refuses without a plan
        return _ok(
            {
                "todo_id": update.todo_id,
                "status": update.status,
                "summary_refreshed": summary_refreshed(before, after),
                "open_todos": list(open_todo_ids(after)),
            }
        )

    def _verification(self, call: model.ToolCall, append: Append) -> tuple[bool, str]:
        """Record the verification result. Raises ``ToolArgumentsError`` or
        ``PlanError`` (not verifying)."""
        report = decode_verification(_arguments(call))
        state = self.log.state
        append((verification_event(state, report, self.log.now()),))
        cur = self.log.state.plan.current
        assert cur is not None
        if report.passed:
            return _ok({"passed": True, "plan_id": cur.id, "status": cur.status})
        body: dict[str, JSON] = {
            "passed": False,
            "plan_id": cur.id,
            "status": cur.status,
            "next": "execution continues: fix what failed, then stop again to verify",
        }
        return _ok(body)
