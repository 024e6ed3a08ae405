"""A host session's goal: ``goal/*``, ``goal/should_continue``, a ``/goal``
command and the admission of a goal round, over the goal service that
``Runtime`` embeddings use (``adapters.runtime.goal_service``).

Theory of operation
-------------------
A host runs its goal rounds itself, so it asks one piece at a time for what
``GoalService.drive`` does in one process: whether a round may start now
(``should_continue``, which blocks a spent budget as ``drive`` does) and the
source that attributes a round's turn to the goal (``admit``, for
``turn/start``). Every operation is the user's request, applied by
``GoalService.apply``.

The goal changes only between steps (the step machine's stages ``idle``,
``turn`` and ``step``); anywhere else the change is refused
(``OutOfOrderError``) and nothing happens. The activation is this process's
own state, so every unit of the session's machine puts it back when it
fails (``unit``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ...kernel.goal.command import GoalCommand
from ...kernel.goal.continuation import round_source
from ...kernel.goal.ops import GoalRequest
from ...kernel.log import GoalSource
from ..runtime.goal_service import GoalChanged, GoalService
from ..runtime.machine import StepMachine
from . import protocol as p
from .errors import RoundNotAdmittedError

__all__ = ["HostGoals"]

T = TypeVar("T")


class HostGoals:
    """The goal service of the host session driven through ``machine``."""

    def __init__(self, machine: StepMachine) -> None:
        self.machine = machine
        log = machine.log
        self.service = GoalService(log, "host", lambda: f"goal-{log.last_seq + 1}")

    @property
    def armed(self) -> bool:
        """Whether this process may start goal rounds."""
        return self.service.activation.armed

    def unit(self, operation: Callable[[], T]) -> T:
        """``operation`` as one unit of the machine that also puts the
        activation back when it fails."""
        return self.machine.atomic(operation, self.service)

    def goal(self, request: GoalRequest) -> p.GoalResult:
        """A goal operation (``GoalService.apply``); one with a ``ref`` is
        compare-and-set."""
        return self.unit(lambda: self._result(self._change(request)))

    def _result(self, done: GoalChanged) -> p.GoalResult:
        return p.GoalResult(done.operation, done.seq, done.ref, done.goal, self.armed)

    def command(self, command: GoalCommand) -> p.CommandResult:
        """A ``/goal`` command a human typed (inside a unit): the goal, or
        the user's operation of its verb."""
        log = self.machine.log
        if command.verb == "show":
            return p.CommandResult("goal", verb="show", goal=log.state.goal.current, last_seq=log.last_seq)
        done = self._change(GoalRequest(command.verb, "user", objective=command.objective))
        return p.CommandResult("goal", verb=command.verb, goal=done.goal, seq=done.seq, last_seq=log.last_seq)

    def _change(self, request: GoalRequest) -> GoalChanged:
        self.machine.require(f"goal {request.operation}", "idle", "turn", "step")
        return self.service.apply(self.service.agent, request)

    def should_continue(self) -> p.ContinueResult:
        """``GoalService.decide``; when the budget is spent the goal is
        blocked (``GoalService.block_spent``)."""
        return self.unit(self._should_continue)

    def _should_continue(self) -> p.ContinueResult:
        decision = self.service.decide()
        blocked_at = None
        if decision.reason == "budget-spent":
            self.machine.require("the budget block", "idle", "turn", "step")
            blocked_at = self.service.block_spent(self.service.agent).seq
        goal = self.machine.log.state.goal.current
        return p.ContinueResult(decision.proceed, decision.reason, decision.next_round, blocked_at, goal, self.armed)

    def admit(self) -> tuple[GoalSource, int | None]:
        """The source and number of the goal round a turn opened now would
        be; raises ``RoundNotAdmittedError`` when ``should_continue`` says
        stop, and ``OutOfOrderError`` while a turn is open."""
        self.machine.require("turn/start", "idle")
        decision = self.service.decide()
        if not decision.proceed:
            raise RoundNotAdmittedError(decision.reason or "stop")
        return round_source(self.machine.log.state.goal), decision.next_round
