"""The plan lifecycle in the runtime: the runtime-owned tools (exit_plan_mode
and its review, bootstrap_plan, update_todo, report_verification), starting
the approved version, and the end of execution.

Theory of operation
-------------------
The runtime never writes plan state directly and no tool executor can (the
log is sealed while one runs). Every decision is the kernel's, one call each
(``kernel.plan.decisions``): the runner hands it the session's state and what
happened, appends the drafts it returns through the session log (the one
place that numbers events) and does the I/O the decision asks for. The gate
routes each runtime-owned tool here only in its phases.

``handle`` decides one runtime-owned call (``decide_tool_call``:
``exit_plan_mode``, ``bootstrap_plan``, ``update_todo``,
``report_verification``) and appends what it returns, which ends with the
call's ``tool/result`` (a failed one, with a structured error, for anything
the kernel refused). For ``exit_plan_mode`` that recorded a plan (a draft, or
the rewrite of a live plan whose substance changed) the decision asks for a
review instead: the rendered plan is put to the review port (fail closed: no
port, or one that raises, is a lost channel), and the answer is decided
(``decide_review_answer``): exactly one clean approval records ``approve``
bound to the plan's id, revision and content hash, and queues the silent exit
(appended at the next accepted pre-step, so plan guidance stays on for the
rest of this tool batch); the call returns ``{approved: true}``, with the
reviewer's typed ``notes`` when there are any. "Keep planning" records
``reject`` with the typed feedback; every other answer leaves the draft as it
is. Those calls fail with the corrective message.

Before each request (``before_request``), and before an executor runs, an
approved or implicit plan that is waiting starts executing, bound to its
exact version (``decide_before_request``): a draft never starts. When the
model ends a step without tool calls, ``after_final_reply`` records
``verify`` if that ended the execution (``decide_after_final_reply``) and
asks for one more step, in which the model is offered
``report_verification``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ...kernel.errors import PlanfoldError
from ...kernel.log import Draft
from ...kernel.plan.decisions import (
    decide_after_final_reply,
    decide_before_request,
    decide_review_answer,
    decide_tool_call,
)
from ...kernel.plan.review import ReviewOutcome
from ..llm import model
from ..store.session_log import SessionLog
from .review import ReviewPort, ask
from .tool_runner import error_output, kernel_call, result_draft

__all__ = ["PlanRunner", "QueueExit"]

#: Queues the silent exit from plan mode an approved review asks for.
QueueExit = Callable[[ReviewOutcome], None]

#: The runtime-owned tools that may make a new plan (and so need an id).
_MAKES_A_PLAN = frozenset({"exit_plan_mode", "bootstrap_plan"})


@dataclass
class PlanRunner:
    """Plan-lifecycle decisions for one session's runtime, appended to ``log``."""

    log: SessionLog
    review: ReviewPort | None
    new_plan_id: Callable[[], str]
    shown: list[str] = field(default_factory=list)
    outcomes: list[ReviewOutcome] = field(default_factory=list)

    # -- around requests ----------------------------------------------------

    def before_request(self) -> None:
        """Start the approved (or implicit) version waiting to run, if any."""
        self.log.append(decide_before_request(self.log.state))

    def after_final_reply(self) -> bool:
        """The model ended a step without tool calls. When that ends the
        execution (no todo open): enter verify and ask for another step
        (True). Otherwise the turn ends (False)."""
        drafts = decide_after_final_reply(self.log.state)
        self.log.append(drafts)
        return bool(drafts)

    # -- the runtime-owned tools ------------------------------------------

    def handle(self, call: model.ToolCall, queue_exit: QueueExit) -> None:
        """Handle one call of a runtime-owned tool the gate routed here;
        always ends with its ``tool/result``."""
        decision = decide_tool_call(
            self.log.state,
            kernel_call(call),
            new_plan_id=self.new_plan_id() if call.name in _MAKES_A_PLAN else "",
            review_available=self.review is not None and bool(self.review.available),
        )
        if not self._record(call, decision.drafts) or decision.review is None:
            return
        pending = decision.review
        self.shown.append(pending.request.plan)
        reviewed = decide_review_answer(self.log.state, pending, ask(self.review, pending.request))
        self.outcomes.append(reviewed.outcome)
        if self._record(call, reviewed.drafts) and reviewed.exit is not None:
            queue_exit(reviewed.outcome)

    def _record(self, call: model.ToolCall, drafts: Sequence[Draft]) -> bool:
        """Append a decision's drafts; when the log refuses them (another
        writer came first …) the call fails with that error instead."""
        try:
            self.log.append(drafts)
        except PlanfoldError as exc:
            self.log.append((result_draft(call.id, call.name, ok=False, output=error_output(exc.code, exc.message)),))
            return False
        return True
