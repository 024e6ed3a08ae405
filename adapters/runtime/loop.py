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
listener, a resolver that raises: ``ResolverError``, a bug), the runtime tries to close the turn (``end_turn``: the
calls it left unanswered are answered as ``call-interrupted``) and lets the
error propagate; if even that fails, the next turn closes it, as it closes
the turn of a process that was killed. An interruption that is not an
error (``KeyboardInterrupt``, ``SystemExit``) appends nothing more: the
runtime forgets the turn and re-raises, and the next turn closes it, as
``AsyncRuntime`` does with a cancelled task.

``/plan`` and the user's choice of plan mode go through the same machine:
recorded at once between turns, queued for the next accepted pre-step
inside one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from ...kernel.log import MessageSource
from ...kernel.plan.context import ViewRequest
from ...kernel.plan.mode import ChoiceOutcome
from ...kernel.plan.review import PlanCommand, ReviewAnswer
from ..llm.model import ModelClient, ModelError
from .driver import Driver, human_input, turn_view
from .machine import (
    AskModel,
    Review,
    RunTool,
    StepMachine,
    TurnOver,
    TurnReport,
)
from .review import ReviewPort, ask

__all__ = ["Runtime"]


class Runtime(Driver[ModelClient, ReviewPort]):
    """One session's synchronous runtime: the step machine, the model, the
    executors and the review port (``Driver`` has the arguments)."""

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
        """A human's input, with the names of any files attached to it
        (``human_input``): ``/plan`` commands are applied (``/plan <message>``
        then runs a turn with the message); anything else runs a turn."""
        asked = human_input(self.machine.state, text, attachments)
        outcome = None if asked.plan_mode is None else self.choose_plan_mode(asked.plan_mode)
        if asked.message is None:
            assert outcome is not None
            return outcome
        return self.run_turn(asked.message, view=turn_view(asked, view))

    # -- turns ----------------------------------------------------------------

    def run_turn(self, text: str, source: MessageSource | None = None, view: ViewRequest | None = None) -> TurnReport:
        """Run one whole turn opened by ``text`` from ``source`` (``None``: a
        human). Model failures end the turn cleanly; the report says how it
        ended. A turn an earlier process left open is closed first."""
        machine = self.machine
        try:
            machine.start_turn(text, source, view)
        except BaseException as exc:  # not a refusal: the turn may be open in the log, the next one closes it
            if machine.in_doubt or not isinstance(exc, Exception):
                machine.abandon()
            raise
        try:
            while True:
                action = machine.next_action()
                if isinstance(action, TurnOver):
                    return action.report
                self._carry_out(action)
        except BaseException as exc:
            machine.abandon()
            if isinstance(exc, Exception):
                _close_quietly(machine)
            raise

    def _carry_out(self, action: AskModel | RunTool | Review) -> None:
        machine = self.machine
        if isinstance(action, AskModel):
            budget = action.budget(machine.retry_budget)
            try:
                with budget.spending():
                    response = self.model.complete(action.request)
            except ModelError as exc:
                machine.model_failed(exc, budget.used)
                return
            machine.reply(response, budget.used)
        elif isinstance(action, RunTool):
            call = action.call
            with machine.log.sealed(f"tool {call.name}"):
                ok, output = self.tools.execute(call)
            machine.tool_result(call.id, ok, output)
        else:
            answer: ReviewAnswer = ask(self.review, action.request)
            machine.review_answer(action.call.id, answer)


def _close_quietly(machine: StepMachine) -> None:
    """Close the open turn the machine abandoned after a failure (its
    unanswered calls answered as interrupted); when that fails too, the next
    turn closes it, as a stopped process's."""
    if machine.stage == "turn":
        with contextlib.suppress(Exception):  # the original error is the one to report
            machine.end_turn()
