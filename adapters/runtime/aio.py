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
from collections.abc import Callable, Sequence
from typing import TypeVar

from ...kernel.log import MessageSource
from ...kernel.plan.context import ViewRequest
from ...kernel.plan.mode import ChoiceOutcome
from ..llm.model import AsyncModelClient, ChatRequest, ChatResponse, ModelClient, ModelError
from .driver import Driver, human_input, turn_view
from .machine import AskModel, Review, RunTool, TurnOver, TurnReport
from .review import AsyncReviewPort, ReviewPort, ask_async

__all__ = ["AsyncRuntime", "InThread"]

T = TypeVar("T")


class AsyncRuntime(Driver[AsyncModelClient, AsyncReviewPort | ReviewPort]):
    """One session's asyncio runtime (see the module doc). ``Driver`` has the
    arguments, with an async model port and a review port that may be async
    (the tool runner's ``async_executors`` are awaited). Construct it in a worker thread
    (``await asyncio.to_thread(AsyncRuntime, ...)``) when opening the
    session's log must not block the loop."""

    _lock: asyncio.Lock | None = None

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
        asked = human_input(self.machine, text, attachments)
        outcome = None if asked.plan_mode is None else await self.choose_plan_mode(asked.plan_mode)
        if asked.message is None:
            assert outcome is not None
            return outcome
        return await self.run_turn(asked.message, view=turn_view(asked, view))

    async def run_turn(
        self, text: str, source: MessageSource | None = None, view: ViewRequest | None = None
    ) -> TurnReport:
        """Run one whole turn (``Runtime.run_turn``), one at a time."""
        if self._lock is None:
            self._lock = asyncio.Lock()
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
                ok, output = await machine.tools.execute_async(call)
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
