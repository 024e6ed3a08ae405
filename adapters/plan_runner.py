"""The plan lifecycle in the runtime: exit_plan_mode and its review, build
bootstrap, execution of the approved version, verify and completion.

Theory of operation
-------------------
The runtime never writes plan state; it appends ``plan/artifact`` events
built by ``kernel.plan_events`` (each builder proves its event against the
real fold) and the session fold derives the plan.

``exit_plan_mode(plan_spec, summary_candidate)`` is routed here by the gate.
In order: the call must be made in plan mode; its arguments are decoded and
checked, and every problem is reported to the model at once; the plan is
rendered as markdown and a review channel must be available (fail closed);
then the draft (or, for a live plan whose substance changed, the rewrite) is
recorded, and the rendered plan is put to the review port. Exactly one clean
approval records ``approve`` bound to the plan's id, revision and content
hash, and queues the silent exit (appended at the next accepted pre-step, so
plan guidance stays on for the rest of this tool batch); the call returns
``{approved: true}``. "Keep planning" records ``reject`` with the feedback;
every other answer leaves the draft as it is. Those calls fail with the
corrective message. Every outcome ends with one ``tool/result``.

Before each request (``before_request``) an approved or implicit plan that is
waiting starts executing, bound to its exact version (``plan_to_start``): a
draft never starts. When the model ends a step without tool calls during
execution, ``after_final_reply`` moves the plan to verify and asks for one
more step; the final reply in verify completes the plan.

``bootstrap_plan(plan_spec, summary_candidate)`` is an ordinary tool (it
touches no file) whose executor records a minimal ``implicit`` plan when build
mode has none; it starts like an approved plan.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from adapters import model
from adapters.review import ReviewPort, ask
from adapters.session_log import SessionLog
from adapters.tool_runner import error_output, result_event
from adapters.workspace import Executor
from kernel.errors import KernelError
from kernel.log import Event
from kernel.payload import JSON
from kernel.plan_context import plan_to_start
from kernel.plan_events import (
    approve_event,
    bootstrap_event,
    complete_event,
    exit_plan_events,
    reject_event,
    start_event,
    verify_event,
)
from kernel.plan_json import decode_exit_plan_args
from kernel.plan_review import ReviewOutcome, decide_review, start_review
from kernel.plan_spec import PlanSpecError
from kernel.plan_views import render_plan_content

__all__ = ["Append", "PlanRunner"]

Append = Callable[[tuple[Event, ...] | list[Event]], tuple[Event, ...]]


def _failure(exc: KernelError) -> str:
    if isinstance(exc, PlanSpecError):
        problems: list[JSON] = [
            {"code": p.code, "where": p.where, "message": p.message} for p in exc.problems
        ]
        return error_output(exc.code, exc.message, problems=problems)
    return error_output(exc.code, exc.message)


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
        """The model ended a step without tool calls. During execution: enter
        verify and ask for another step (True); in verify: complete (False)."""
        state = self.log.state
        if state.plan_mode or state.plan.status != "executing":
            return False
        if not state.plan.verifying:
            append((verify_event(state, self.log.now()),))
            return True
        append((complete_event(state, self.log.now()),))
        return False

    # -- exit_plan_mode ---------------------------------------------------

    def exit_plan_mode(
        self, call: model.ToolCall, append: Append, queue_exit: Callable[[ReviewOutcome], None]
    ) -> None:
        """Handle one ``exit_plan_mode`` call; always ends with its ``tool/result``."""
        try:
            ok, output = self._exit(call, append, queue_exit)
        except KernelError as exc:
            ok, output = False, _failure(exc)
        append((result_event(self.log.last_seq + 1, self.log.now(), call.id, call.name, ok=ok, output=output),))

    def _exit(
        self, call: model.ToolCall, append: Append, queue_exit: Callable[[ReviewOutcome], None]
    ) -> tuple[bool, str]:
        state = self.log.state
        if not state.plan_mode:
            start_review(False, True, "")  # raises not-in-plan-mode
        if call.arguments is None:
            return False, error_output("bad-arguments", call.arguments_error or "arguments did not decode")
        args = decode_exit_plan_args(call.arguments)
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
            return True, json.dumps(body, sort_keys=True)
        if outcome.status == "keep-planning":
            append((reject_event(self.log.state, ref, outcome.feedback, self.log.now()),))
        return False, error_output(outcome.status, outcome.message)

    # -- build bootstrap --------------------------------------------------

    def bootstrap_executor(self) -> Executor:
        """The executor of ``bootstrap_plan``: records a minimal implicit plan.
        Raises ``PlanSpecError`` (every problem) or ``PlanError``."""

        def run(arguments: Mapping[str, object]) -> Mapping[str, JSON]:
            args = decode_exit_plan_args(arguments)
            event = bootstrap_event(
                self.log.state, self.new_plan_id(), args.spec, args.summary_candidate, self.log.now()
            )
            self.log.append((event,))
            artifact = self.log.state.plan.current
            assert artifact is not None
            return {"plan_id": artifact.id, "revision": artifact.revision, "status": artifact.status}

        return run
