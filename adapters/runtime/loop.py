"""The synchronous runtime: a thin driver of the step machine.

Theory of operation
-------------------
``Runtime`` runs whole turns in the calling thread. Every decision is the
step machine's (``adapters.runtime.machine``); the runtime only carries out
its actions: it sends ``AskModel`` requests to the model client (a
``ModelError`` goes back as ``model_failed``, which decides whether the same
step is proposed again), runs ``RunTool`` calls through the deployment's
executors with the log sealed (so a tool cannot change the session), and
puts ``Review`` requests to the review port (fail closed: no port, or one
that raises, is a lost channel). ``TurnOver`` ends the turn.

When something other than the model fails mid-turn (the store, a step
listener, a bug), the runtime tries to close the turn (``end_turn``: the
calls it left unanswered are answered as ``call-interrupted``) and lets the
error propagate; if even that fails, the next turn closes it, as it closes
the turn of a process that was killed.

``/plan`` and the user's choice of plan mode go through the same machine:
recorded at once between turns, queued for the next accepted pre-step
inside one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from ...kernel.payload import JSONObject
from ...kernel.plan.context import ViewRequest
from ...kernel.plan.mode import ChoiceOutcome, PlanModeView
from ...kernel.plan.review import PlanCommand, ReviewAnswer, parse_plan_command
from ..llm.model import ModelClient, ModelError, RetryBudget
from ..store.base import Store
from ..store.session_log import Clock, SessionLog, system_clock
from .machine import (
    RECOVERABLE_MODEL_ERRORS,
    AskModel,
    ProposedStep,
    Review,
    RunTool,
    StepListener,
    StepMachine,
    TurnOver,
    TurnReport,
)
from .prompt import PromptConfig
from .review import ReviewPort, ask
from .tool_runner import ToolRunner

__all__ = [
    "RECOVERABLE_MODEL_ERRORS",
    "ProposedStep",
    "Runtime",
    "StepListener",
    "TurnReport",
    "with_attachments",
]


def with_attachments(text: str, attachments: Sequence[str]) -> str:
    """The text of a user message with the names of its attachments listed
    after it (the message as recorded and sent to the model)."""
    if not attachments:
        return text
    listed = "\n".join(f"- {name}" for name in attachments)
    return f"{text}\n\nAttachments:\n{listed}" if text else f"Attachments:\n{listed}"


def plan_turn_view(machine: StepMachine, command: PlanCommand, view: ViewRequest | None) -> ViewRequest:
    """The view of the turn a ``/plan <message>`` runs: with a live plan that
    turn is about rewriting it, so it carries the full plan."""
    base = view or ViewRequest()
    rewriting = base.rewriting or machine.state.plan.live
    return ViewRequest(base.user_asked_full, base.summary_insufficient, rewriting, base.first_since_resume)


class Runtime:
    """One session's synchronous runtime: the step machine, the model, the
    executors and the review port. ``retry_budget`` is the retries of one
    step (by default the model client's ``retry_budget``, else one of
    ``step_retries``); ``max_tool_calls`` caps the calls of one reply.
    Raises ``ReplayError`` when the stored log does not fold strictly."""

    def __init__(
        self,
        store: Store,
        session_id: str,
        model: ModelClient,
        tools: ToolRunner,
        review: ReviewPort | None = None,
        *,
        clock: Clock = system_clock,
        prompt: PromptConfig | None = None,
        max_steps: int = 16,
        step_retries: int = 2,
        max_tool_calls: int = 32,
        retry_budget: RetryBudget | None = None,
    ) -> None:
        shared = getattr(model, "retry_budget", None)
        budget = retry_budget or (shared if isinstance(shared, RetryBudget) else RetryBudget(step_retries))
        self.model = model
        self.review = review
        self.machine = StepMachine(
            store, session_id, tools, clock=clock, prompt=prompt, max_steps=max_steps,
            max_tool_calls=max_tool_calls, retry_budget=budget, review_available=self._review_available,
        )

    def _review_available(self) -> bool:
        return self.review is not None and bool(self.review.available)

    # -- what the machine holds ----------------------------------------------

    @property
    def log(self) -> SessionLog:
        return self.machine.log

    @property
    def tools(self) -> ToolRunner:
        return self.machine.tools

    @property
    def retry_budget(self) -> RetryBudget:
        return self.machine.retry_budget

    @property
    def step_listeners(self) -> list[StepListener]:
        return self.machine.step_listeners

    @property
    def max_tool_calls(self) -> int:
        return self.machine.max_tool_calls

    @max_tool_calls.setter
    def max_tool_calls(self, value: int) -> None:
        self.machine.max_tool_calls = value

    @property
    def resumed(self) -> bool:
        return self.machine.resumed

    @property
    def shown(self) -> list[str]:
        """The plans put before the review port, in order."""
        return self.machine.shown

    # -- plan mode: the user's choice and /plan ----------------------------

    @property
    def plan_mode(self) -> PlanModeView:
        """The mode as the user sees it: recorded, and pending (``None``: none)."""
        return self.machine.plan_mode

    def choose_plan_mode(self, target: bool) -> ChoiceOutcome:
        """The user chooses plan mode on or off: appended now between turns,
        queued for the next pre-step in a turn or while a tool runs."""
        return self.machine.choose(target)

    def plan_command(self, command: PlanCommand) -> ChoiceOutcome:
        """Apply a parsed ``/plan``: choose the mode (``/plan off`` also drops
        a pending entry that no request has seen yet)."""
        return self.choose_plan_mode(command.target)

    def submit(
        self, text: str, view: ViewRequest | None = None, attachments: Sequence[str] = ()
    ) -> TurnReport | ChoiceOutcome:
        """A human's input, with the names of any files attached to it:
        ``/plan`` commands are applied (``/plan <message>`` then runs a turn
        with the message); anything else runs a turn. ``/plan off`` takes no
        attachments: raises ``PlanCommandError`` (``attachments-with-off``)
        and changes nothing."""
        command = parse_plan_command(text, attachments)
        if command is None:
            return self.run_turn(with_attachments(text, attachments), view=view)
        outcome = self.plan_command(command)
        if command.message is None and not command.attachments:
            return outcome
        message = with_attachments(command.message or "", command.attachments)
        return self.run_turn(message, view=plan_turn_view(self.machine, command, view))

    # -- turns ----------------------------------------------------------------

    def run_turn(self, text: str, source: JSONObject | None = None, view: ViewRequest | None = None) -> TurnReport:
        """Run one whole turn opened by ``text`` from ``source`` (``None``: a
        human). Model failures end the turn cleanly; the report says how it
        ended. A turn an earlier process left open is closed first."""
        machine = self.machine
        machine.start_turn(text, source, view)
        try:
            while True:
                action = machine.next_action()
                if isinstance(action, TurnOver):
                    return action.report
                self._carry_out(action)
        except Exception:
            _close_quietly(machine)
            raise

    def _carry_out(self, action: AskModel | RunTool | Review) -> None:
        machine = self.machine
        if isinstance(action, AskModel):
            try:
                response = self.model.complete(action.request)
            except ModelError as exc:
                machine.model_failed(exc)
                return
            machine.reply(response)
        elif isinstance(action, RunTool):
            call = action.call
            with machine.log.sealed(f"tool {call.name}"):
                ok, output = self.tools.execute(call)
            machine.tool_result(call.id, ok, output)
        else:
            answer: ReviewAnswer = ask(self.review, action.request)
            machine.review_answer(action.call.id, answer)


def _close_quietly(machine: StepMachine) -> None:
    """Close the machine's open turn after a failure (its unanswered calls
    answered as interrupted); when that fails too, the next turn closes it,
    as a stopped process's."""
    machine.abandon()
    if machine.stage == "turn":
        with contextlib.suppress(Exception):  # the original error is the one to report
            machine.end_turn()
