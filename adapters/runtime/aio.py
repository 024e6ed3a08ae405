"""The asyncio runtime: the kernel's turn machine driven from an event loop.

Theory of operation
-------------------
``AsyncRuntime`` is ``Runtime`` for asyncio programs. The kernel's reducer
(``kernel.step``) decides everything; the runtime owns every I/O and awaits
it: the model port (``AsyncModelClient``), an executor of
``async_executors`` (any other runs in a worker thread), the review port
(a synchronous one runs in a worker thread) and the appends the reducer asks
for. The reducer itself is a pure function and runs on the loop: it never
waits.

Where the appends go:

- over an ``AsyncStore`` (``AsyncRuntime.open``: the memory, SQLite and
  PostgreSQL async stores of ``adapters.store``) every append is awaited on
  the loop; nothing hops to a thread;
- over a synchronous ``Store`` (the constructor, as before) the session is
  read when the runtime is made and each append (not each operation) runs in
  a worker thread, so the store's I/O never blocks the loop.

A failed append leaves the process value where it was (the reducer's value
from before the append), so the runtime never runs ahead of the store. An
append whose outcome is unknown (or refused because another writer is
ahead) is followed by a read of the session: the runtime finds out from the
store whether the append is in the log and takes the value after it or
keeps the one before; when the store does not answer, the next operation
asks again first (``StepMachine`` does the same).

Cancellation: a task cancelled mid-turn waits for an append that is in
flight to end (it is in the log or not, never left running on its own; the
runtime's value follows what the store answered, or the next operation asks
the store when the outcome was unknown), forgets the turn's process state
and re-raises. It appends
nothing more: the log keeps the turn open, and the next turn closes it as it
closes the turn of a process that was killed (its unanswered calls answered
as ``call-interrupted``). Any other failure closes the turn first, as
``Runtime`` does.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

from ...kernel import step
from ...kernel.errors import ConflictError
from ...kernel.log import Draft, Event, MessageSource, number_drafts
from ...kernel.plan.context import ViewRequest
from ...kernel.plan.mode import ChoiceOutcome, PendingChoice, PlanModeView, StepVerdict
from ...kernel.plan.review import PlanCommand
from ...kernel.session import SessionState, fold_more
from ..llm.model import AsyncModelClient, ChatRequest, ChatResponse, ModelClient, ModelError, RetryBudget
from ..store.aio import AsyncStore
from ..store.base import AppendRequest, Folded, Lease, Store
from ..store.session_log import Clock, SessionLog, system_clock
from .driver import human_input, turn_view
from .goal_service import AsyncGoalLog
from .machine import OutOfOrderError, ProposedStep, StepListener, TurnReport, report_of, store_may_be_ahead, written
from .prompt import Conversation, PreparedRequest, PromptConfig, prepare_request
from .resolve import resolved_effects
from .review import AsyncReviewPort, ReviewPort, ask_async
from .tool_runner import ToolRunner, from_reply_call, reply_of

__all__ = ["AsyncRuntime", "InThread"]


class _Log(Protocol):
    """What the runtime reads of its session log."""

    @property
    def state(self) -> SessionState: ...

    @property
    def events(self) -> Sequence[Event]: ...

    @property
    def last_seq(self) -> int: ...

    def now(self) -> int: ...


class _AsyncLog:
    """A session's fold and events in memory, appended through an ``AsyncStore``."""

    def __init__(
        self, store: AsyncStore, session_id: str, clock: Clock, state: SessionState, events: list[Event]
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.clock = clock
        self._state = state
        self._events = events
        #: the lease every append carries while a goal driver holds one
        self.lease: Callable[[], Lease | None] = lambda: None

    @property
    def state(self) -> SessionState:
        return self._state

    @property
    def events(self) -> Sequence[Event]:
        from ..views import Prefix  # noqa: PLC0415 (a view of the list as it is now)

        return Prefix(self._events, len(self._events))

    @property
    def last_seq(self) -> int:
        return self._state.last_seq

    def now(self) -> int:
        at = int(self.clock())
        last = self._state.last
        return at if last is None or at >= last.at else last.at

    async def append(self, append: step.Append) -> None:
        if append.before is not self._state:
            raise ConflictError(self.session_id, append.expected_seq, self.last_seq)
        await self._append_events(append.before, append.events, append.state)

    async def append_decided(
        self, decide: Callable[[SessionState, int], Sequence[Draft]], *, attempts: int = 3
    ) -> tuple[Event, ...]:
        """``SessionLog.append_decided`` awaited: append what
        ``decide(state, at)`` returns, stamped ``at``, deciding again on the
        store's state after a conflict (at most ``attempts`` times); with
        ``lease()``'s lease when there is one (a goal driver's fence)."""
        for attempt in range(1, attempts + 1):
            at = self.now()
            drafts = decide(self._state, at)
            if not drafts:
                return ()
            before = self._state
            events = number_drafts(drafts, before.last_seq, at)
            state = fold_more(before, events)
            try:
                await self._append_events(before, events, state)
            except ConflictError:
                if attempt == attempts:
                    raise
                await self.reload()
                continue
            return events
        raise AssertionError("unreachable")

    async def _append_events(self, before: SessionState, events: Sequence[Event], state: SessionState) -> None:
        folded, lease = Folded(before, state), self.lease()
        await self.store.append(AppendRequest(self.session_id, before.last_seq, events, folded=folded, lease=lease))
        self._events.extend(events)
        self._state = state

    async def reload(self) -> None:
        self._state = await self.store.load(self.session_id, incremental=True)
        self._events = list((await self.store.read(self.session_id))[: self._state.last_seq])


class AsyncRuntime:
    """One session's asyncio runtime (see the module doc): ``store``'s
    session ``session_id``, an async ``model`` port, the ``tools`` (the tool
    runner's ``async_executors`` are awaited) and a ``review`` port that may
    be async. ``retry_budget`` sizes the retries of one step (by default the
    model client's ``retry_budget``, else ``step_retries``); each turn spends
    its own. The constructor reads ``store`` (a synchronous ``Store``):
    call it in a worker thread when that must not block the loop, or use
    ``AsyncRuntime.open`` with an ``AsyncStore``. Raises ``ReplayError``
    when the stored log does not fold strictly."""

    def __init__(
        self,
        store: Store,
        session_id: str,
        model: AsyncModelClient,
        tools: ToolRunner,
        review: AsyncReviewPort | ReviewPort | None = None,
        *,
        clock: Clock = system_clock,
        prompt: PromptConfig | None = None,
        max_steps: int = 16,
        step_retries: int = 2,
        max_tool_calls: int = 32,
        retry_budget: RetryBudget | None = None,
        _log: _AsyncLog | None = None,
    ) -> None:
        shared = getattr(model, "retry_budget", None)
        self.retry_budget = retry_budget or (shared if isinstance(shared, RetryBudget) else RetryBudget(step_retries))
        self.model = model
        self.review = review
        self.tools = tools
        self.prompt = prompt or PromptConfig()
        self.max_steps = max_steps
        self.max_tool_calls = max_tool_calls
        self.step_listeners: list[StepListener] = []
        #: the plans put before the review port, in order
        self.shown: list[str] = []
        self._async_log = _log
        self._log: SessionLog | _AsyncLog = _log if _log is not None else SessionLog(store, session_id, clock)
        self.session_id = session_id
        self._p = step.Process.opened(self._config(), self._view())
        self._conversation = Conversation()
        self._requests: list[PreparedRequest] = []
        self._lock: asyncio.Lock | None = None
        #: an append in doubt and the value after it (see ``_lost_track``)
        self._behind: tuple[step.Append, step.Process] | None = None

    @classmethod
    async def open(
        cls,
        store: AsyncStore,
        session_id: str,
        model: AsyncModelClient,
        tools: ToolRunner,
        review: AsyncReviewPort | ReviewPort | None = None,
        *,
        clock: Clock = system_clock,
        prompt: PromptConfig | None = None,
        max_steps: int = 16,
        step_retries: int = 2,
        max_tool_calls: int = 32,
        retry_budget: RetryBudget | None = None,
    ) -> AsyncRuntime:
        """A runtime over an ``AsyncStore``: the session is read with awaits
        (its snapshot and what follows), and every append is awaited on the
        loop. Raises ``ReplayError`` when the stored log does not fold."""
        state = await store.load(session_id, incremental=True)
        events = list((await store.read(session_id))[: state.last_seq])
        log = _AsyncLog(store, session_id, clock, state, events)
        return cls(
            None,  # type: ignore[arg-type]
            session_id, model, tools, review, clock=clock, prompt=prompt, max_steps=max_steps,
            step_retries=step_retries, max_tool_calls=max_tool_calls, retry_budget=retry_budget, _log=log,
        )

    # -- the session as the user sees it ----------------------------------------

    @property
    def log(self) -> SessionLog:
        """The synchronous session log of a runtime over a ``Store`` (a goal
        service appends through it). Raises ``TypeError`` for a runtime over
        an ``AsyncStore``, whose log is read with awaits (``store.read``)."""
        if not isinstance(self._log, SessionLog):
            raise TypeError("a runtime over an AsyncStore has no synchronous log: await the store's read and load")
        return self._log

    @property
    def goal_log(self) -> AsyncGoalLog:
        """The session log of a runtime over an ``AsyncStore``, as an
        ``AsyncGoalService`` appends through it (awaited, no thread). Raises
        ``TypeError`` for a runtime over a synchronous ``Store`` (its
        ``log`` serves a ``GoalService``)."""
        if self._async_log is None:
            raise TypeError("a runtime over a synchronous Store has no async log: use its log with a GoalService")
        return self._async_log

    @property
    def state(self) -> SessionState:
        return self._log.state

    @property
    def resumed(self) -> bool:
        return self._p.resumed

    @property
    def in_doubt(self) -> bool:
        """Whether an append's outcome is unknown still (``StepMachine.in_doubt``)."""
        return self._behind is not None

    @property
    def pending(self) -> PendingChoice | None:
        return self._p.pending

    @property
    def plan_mode(self) -> PlanModeView:
        """The mode as the user sees it: recorded, and pending (``None``: none)."""
        pending = self._p.pending
        return PlanModeView(self._log.state.plan_mode, None if pending is None else pending.target)

    @property
    def stage(self) -> step.Stage:
        return step.stage_of(self._p, self._view())

    def _config(self) -> step.TurnConfig:
        """The reducer's configuration, made again only when a setting changed."""
        tools = self.tools
        key = (tools.registry, tools.policy, self.max_steps, self.max_tool_calls, self.retry_budget.retries)
        made = getattr(self, "_configured", None)
        if made is None or any(a is not b for a, b in zip(made[0], key, strict=True)):
            made = (key, step.TurnConfig(*key))
            self._configured = made
        return made[1]

    def _view(self) -> step.Log:
        return step.Log(self._log.state, self._log.events)

    def _review_available(self) -> bool:
        return self.review is not None and bool(getattr(self.review, "available", False))

    # -- carrying out the reducer's actions -------------------------------------

    async def _write(self, append: step.Append) -> None:
        if self._async_log is not None:
            await self._async_log.append(append)
            return
        log = self._log
        assert isinstance(log, SessionLog)
        await asyncio.to_thread(log.append_folded, append.events, append.before, append.state)

    async def _advance(self, event: step.Input) -> list[step.Action]:
        """``StepMachine._advance`` awaited: feed ``event`` and its
        continuations, carry out appends and path resolutions, return the
        actions left. A failed append keeps the value from before it."""
        if self._behind is not None:
            await self._catch_up()
        config = self._config()
        if config is not self._p.config:
            self._p = replace(self._p, config=config)
        queue: list[step.Input] = [event]
        left: list[step.Action] = []
        while queue:
            current = queue.pop(0)
            try:
                moved = step.advance(self._p, self._view(), current)
                if moved.actions and isinstance(moved.actions[0], step.Append) and hasattr(current, "at"):
                    current = replace(current, at=self._log.now())  # type: ignore[arg-type]
                    moved = step.advance(self._p, self._view(), current)
            except step.StageError as exc:
                raise OutOfOrderError(exc.message, "execute" if exc.stage == "resolve" else exc.stage) from None
            actions = moved.actions
            if actions and isinstance(actions[0], step.Append):
                append = actions[0]
                write = asyncio.ensure_future(self._write(append))
                try:
                    await _settled(write)
                except asyncio.CancelledError:
                    failed = None if write.cancelled() else write.exception()
                    if failed is not None and store_may_be_ahead(failed):
                        # the next operation asks the store; the cancelled turn is abandoned either way
                        self._behind = (append, moved.process.abandoned())
                    elif self._log.last_seq == append.events[-1].seq:
                        self._p = moved.process
                    raise
                except Exception as exc:
                    applied = await self._lost_track(append, moved.process) if store_may_be_ahead(exc) else False
                    if applied is None or (not applied and append.on_failure is None):
                        raise
                    if not applied:
                        assert append.on_failure is not None
                        queue.insert(0, step.AppendFailed(append.on_failure, self._log.now(), append.detail))
                        continue
                actions = actions[1:]
            self._p = moved.process
            for action in actions:
                if isinstance(action, step.Then):
                    queue.append(action.event)
                elif isinstance(action, step.ResolvePaths):
                    call = from_reply_call(action.call)
                    queue.append(step.Resolved(call.id, tuple(resolved_effects(self.tools, call)), 0))
                else:
                    left.append(action)
        return left

    async def _lost_track(self, append: step.Append, after: step.Process) -> bool | None:
        """``StepMachine._lost_track``: ask the store whether the append in
        doubt is in the log (``None``: the store did not answer; the next
        operation asks again)."""
        self._behind = (append, after)
        with contextlib.suppress(Exception):  # the append's own error is the one to report
            return await self._catch_up()
        return None

    async def _catch_up(self) -> bool:
        assert self._behind is not None
        append, after = self._behind
        log = self._log
        if isinstance(log, _AsyncLog):
            await log.reload()
        else:
            await asyncio.to_thread(log.reload)  # over a synchronous store, as its appends are
        self._behind = None
        if not written(log.events, append):
            return False
        self._p = after
        return True

    async def _result(self, event: step.Input) -> object:
        for action in await self._advance(event):
            if isinstance(action, step.Result):
                return action.value
        return None

    # -- what a user does -------------------------------------------------------

    async def choose_plan_mode(self, target: bool) -> ChoiceOutcome:
        """The user chooses plan mode on or off (``Runtime.choose_plan_mode``)."""
        outcome = await self._result(step.Choose(target, 0))
        assert isinstance(outcome, str)
        return outcome  # type: ignore[return-value]

    async def plan_command(self, command: PlanCommand) -> ChoiceOutcome:
        """Apply a parsed ``/plan`` (``Runtime.plan_command``)."""
        return await self.choose_plan_mode(command.target)

    async def submit(
        self, text: str, view: ViewRequest | None = None, attachments: Sequence[str] = ()
    ) -> TurnReport | ChoiceOutcome:
        """A human's input (``Runtime.submit``): ``/plan`` commands, or a turn."""
        asked = human_input(self._log.state, text, attachments)
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
            try:
                await self._advance(step.StartTurn(text, source, view or ViewRequest(), 0))
            except asyncio.CancelledError:  # the turn may be open in the log: the next one closes it
                self._p = self._p.abandoned()
                raise
            self._requests = []
            try:
                return await self._drive()
            except asyncio.CancelledError:
                self._p = self._p.abandoned()
                raise
            except Exception:
                self._p = self._p.abandoned()
                if self.stage == "turn":
                    with contextlib.suppress(Exception):  # the original error is the one to report
                        await self._advance(step.EndTurn(0))
                raise

    async def _drive(self) -> TurnReport:
        event: step.Input = step.Next(0, self._review_available())
        while True:
            actions = await self._advance(event)
            event = step.Next(0, self._review_available())
            for action in actions:
                if isinstance(action, step.TurnOver):
                    return report_of(action.tally, self._requests)
                if isinstance(action, step.ProposeStep):
                    event = step.StepVerdictIn(self._verdict(action.step), 0)
                elif isinstance(action, step.AskModel):
                    event = await self._ask(action)
                elif isinstance(action, step.RunTool):
                    call = from_reply_call(action.call)
                    if isinstance(self._log, SessionLog):
                        with self._log.sealed(f"tool {call.name}"):
                            ok, output = await self.tools.execute_async(call)
                    else:
                        ok, output = await self.tools.execute_async(call)
                    event = step.ToolDone(call.id, ok, output, 0)
                elif isinstance(action, step.AskReview):
                    self.shown.append(action.request.plan)
                    answer = await ask_async(self.review, action.request)
                    event = step.ReviewAnswered(action.call.call_id, answer, 0)

    async def _ask(self, action: step.AskModel) -> step.Input:
        basis = action.basis
        prepared = prepare_request(
            basis.state, basis.events, basis.view, first_request=basis.first_request, tools=self.tools,
            config=self.prompt, messages=self._conversation,
        )
        await self._advance(step.Asked())
        self._requests.append(prepared)
        budget = RetryBudget(self.retry_budget.retries)
        budget.open()
        budget.used = action.retries_used
        try:
            with budget.spending():
                response = await self.model.complete(prepared.request)
        except ModelError as exc:
            return step.ModelFailed(exc.code, exc.message, exc.retryable, budget.used)
        return step.ReplyIn(reply_of(response), 0, budget.used)

    def _verdict(self, proposed: step.ProposedStep) -> StepVerdict:
        verdict: StepVerdict = "accepted"
        shown = ProposedStep(proposed.turn, proposed.step, proposed.attempt)
        for listener in self.step_listeners:
            verdict = listener(shown)
            if verdict != "accepted":
                break
        return verdict

    def abandon(self) -> None:
        """Forget the open turn's process state (the next turn closes it)."""
        self._p = self._p.abandoned()

    @property
    def sealed_by(self) -> str | None:
        return self._log.sealed_by if isinstance(self._log, SessionLog) else None


async def _settled(write: asyncio.Future[None]) -> None:
    """Await ``write`` to its end even when the awaiting task is cancelled
    meanwhile, so that an append is in the log or not and never left running
    on its own; then raise the cancellation (its error retrieved), or the
    write's own error."""
    cancelled = False
    while not write.done():
        try:
            await asyncio.shield(write)
        except asyncio.CancelledError:
            if write.cancelled():  # the write itself was cancelled: raised below
                break
            cancelled = True  # this task was: wait for the write, then raise it
        except BaseException:  # the write's own error: raised below
            break
    if cancelled:
        if not write.cancelled():
            write.exception()
        raise asyncio.CancelledError
    write.result()


class InThread:
    """A synchronous model client as an ``AsyncModelClient``: each request
    runs in a worker thread (its retry budget is the client's)."""

    def __init__(self, client: ModelClient) -> None:
        self.client = client
        self.retry_budget = getattr(client, "retry_budget", None)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        return await asyncio.to_thread(self.client.complete, request)

