"""The asyncio runtime: the step machine driven from an event loop.

Theory of operation
-------------------
``AsyncRuntime`` is ``Runtime`` for asyncio programs: the same step machine
(``adapters.runtime.machine``) decides everything, and the runtime carries
out its actions with awaits. The model port is awaited (``AsyncModelClient``:
``async def complete``); an executor of ``async_executors`` is awaited and
any other runs in a worker thread; the review port is awaited, or run in a
worker thread when it is synchronous. Every operation of the machine (each
one may append to the store) runs in a worker thread, so the store's I/O
never blocks the event loop; one operation runs at a time.

Cancellation: a task cancelled mid-turn lets the machine operation that is
running finish (so the machine stays exactly where the store is), forgets
the turn's process state and re-raises. It appends nothing more: the log
keeps the turn open, and the next turn closes it as it closes the turn of a
process that was killed (its unanswered calls answered as
``call-interrupted``). Any other failure closes the turn first, as
``Runtime`` does.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, TypeVar, runtime_checkable

from ...kernel.payload import JSONObject
from ...kernel.plan.context import ViewRequest
from ...kernel.plan.mode import ChoiceOutcome, PlanModeView
from ...kernel.plan.review import parse_plan_command
from ..llm.model import ChatRequest, ChatResponse, ModelClient, ModelError, RetryBudget
from ..store.base import Store
from ..store.session_log import Clock, SessionLog, system_clock
from .loop import plan_turn_view, with_attachments
from .machine import AskModel, Review, RunTool, StepListener, StepMachine, TurnOver, TurnReport
from .prompt import PromptConfig
from .review import AsyncReviewPort, ReviewPort, ask_async
from .tool_runner import AsyncExecutor, ToolRunner

__all__ = ["AsyncModelClient", "AsyncRuntime", "InThread"]

T = TypeVar("T")


@runtime_checkable
class AsyncModelClient(Protocol):
    """Anything that can answer a chat request as a coroutine."""

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer ``request``; raises a ``ModelError`` subclass on failure."""
        ...


class AsyncRuntime:
    """One session's asyncio runtime (see the module doc). The arguments are
    ``Runtime``'s, with an async model port, optional awaited executors and
    a review port that may be async. Construct it in a worker thread
    (``await asyncio.to_thread(AsyncRuntime, ...)``) when opening the
    session's log must not block the loop; raises ``ReplayError`` when the
    stored log does not fold strictly."""

    def __init__(
        self,
        store: Store,
        session_id: str,
        model: AsyncModelClient,
        tools: ToolRunner,
        review: AsyncReviewPort | ReviewPort | None = None,
        *,
        async_executors: Mapping[str, AsyncExecutor] | None = None,
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
        self.async_executors = dict(async_executors or {})
        self.machine = StepMachine(
            store, session_id, tools, clock=clock, prompt=prompt, max_steps=max_steps,
            max_tool_calls=max_tool_calls, retry_budget=budget, review_available=self._review_available,
        )
        self._lock = asyncio.Lock()

    def _review_available(self) -> bool:
        return self.review is not None and bool(self.review.available)

    @property
    def log(self) -> SessionLog:
        return self.machine.log

    @property
    def step_listeners(self) -> list[StepListener]:
        return self.machine.step_listeners

    @property
    def plan_mode(self) -> PlanModeView:
        return self.machine.plan_mode

    async def _op(self, operation: Callable[..., T], *args: object) -> T:
        """One machine operation in a worker thread; when the task is
        cancelled meanwhile, the operation still finishes first."""
        running = asyncio.ensure_future(asyncio.to_thread(operation, *args))
        try:
            return await asyncio.shield(running)
        except asyncio.CancelledError:
            with contextlib.suppress(BaseException):
                await running
            raise

    async def choose_plan_mode(self, target: bool) -> ChoiceOutcome:
        """The user chooses plan mode on or off (``Runtime.choose_plan_mode``)."""
        return await self._op(self.machine.choose, target)

    async def submit(
        self, text: str, view: ViewRequest | None = None, attachments: Sequence[str] = ()
    ) -> TurnReport | ChoiceOutcome:
        """A human's input (``Runtime.submit``): ``/plan`` commands, or a turn."""
        command = parse_plan_command(text, attachments)
        if command is None:
            return await self.run_turn(with_attachments(text, attachments), view=view)
        outcome = await self.choose_plan_mode(command.target)
        if command.message is None and not command.attachments:
            return outcome
        message = with_attachments(command.message or "", command.attachments)
        return await self.run_turn(message, view=plan_turn_view(self.machine, command, view))

    async def run_turn(
        self, text: str, source: JSONObject | None = None, view: ViewRequest | None = None
    ) -> TurnReport:
        """Run one whole turn (``Runtime.run_turn``), one at a time."""
        async with self._lock:
            machine = self.machine
            await self._op(machine.start_turn, text, source, view)
            try:
                while True:
                    action = await self._op(machine.next_action)
                    if isinstance(action, TurnOver):
                        return action.report
                    await self._carry_out(action)
            except asyncio.CancelledError:
                machine.abandon()
                raise
            except Exception:
                machine.abandon()
                if machine.stage == "turn":
                    with contextlib.suppress(Exception):  # the original error is the one to report
                        await self._op(machine.end_turn)
                raise

    async def _carry_out(self, action: AskModel | RunTool | Review) -> None:
        machine = self.machine
        if isinstance(action, AskModel):
            try:
                response = await self.model.complete(action.request)
            except ModelError as exc:
                await self._op(machine.model_failed, exc)
                return
            await self._op(machine.reply, response)
        elif isinstance(action, RunTool):
            call = action.call
            with machine.log.sealed(f"tool {call.name}"):
                ok, output = await machine.tools.execute_async(call, self.async_executors)
            await self._op(machine.tool_result, call.id, ok, output)
        else:
            answer = await ask_async(self.review, action.request)
            await self._op(machine.review_answer, action.call.id, answer)


class InThread:
    """A synchronous model client as an ``AsyncModelClient``: each request
    runs in a worker thread (its retry budget is the client's)."""

    def __init__(self, client: ModelClient) -> None:
        self.client = client
        self.retry_budget = getattr(client, "retry_budget", None)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        return await asyncio.to_thread(self.client.complete, request)
