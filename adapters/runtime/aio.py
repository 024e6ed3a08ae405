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

Where the appends go: always to an ``AsyncStore``, awaited on the loop (the
runtime has one path and never hops to a thread itself). ``AsyncRuntime.open``
takes a native async store (the memory, SQLite and PostgreSQL async stores of
``adapters.store``: the way to run it). The constructor takes a synchronous
``Store``, reads the session there and then, and adapts the store at its
boundary (``adapters.store.aio_threaded.ThreadedStore``: one thread hop per
store call), so the store's I/O never blocks the loop.

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

The runtime asks the reducer through the drivers' shared helpers
(``machine.DriverCore``, ``machine.decide``), so it refuses what
``StepMachine`` refuses with the same typed errors. The session log has one
writer at a time: the runtime's transitions hold it from the reducer's
decision until its appends have answered, and so does a goal operation
through ``goal_log``; a plan-mode choice or a goal operation from another
task meanwhile waits for them and decides on what they wrote (it never
waits for a model call, a tool or a review). While a tool runs the
session log is sealed: an append through ``goal_log`` raises
``LogSealedError``, and so does a turn started from inside the running
turn's own task (it is refused, not left waiting for itself).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Unpack

from ...kernel import step
from ...kernel.errors import ConflictError
from ...kernel.log import Draft, Event, MessageSource, number_drafts
from ...kernel.plan.context import ViewRequest
from ...kernel.plan.mode import ChoiceOutcome
from ...kernel.plan.review import PlanCommand
from ...kernel.session import SessionState, fold_more
from ..llm.model import AsyncModelClient, ChatRequest, ChatResponse, ModelClient, ModelError
from ..store.aio import AsyncStore, settled
from ..store.aio_threaded import ThreadedStore
from ..store.base import AppendRequest, Folded, Lease, Store
from ..store.session_log import Clock, LogSealedError, system_clock
from .driver import DriverOptions, human_input, step_budget, turn_view
from .goal_service import AsyncGoalLog
from .machine import (
    DriverCore,
    StepListener,
    TurnReport,
    attempt_budget,
    recoverable,
    report_of,
    resume,
    store_may_be_ahead,
)
from .prompt import Conversation, PreparedRequest, PromptConfig
from .review import AsyncReviewPort, ReviewPort, ask_async, reachable
from .tool_runner import ToolRunner, reply_of

__all__ = ["AsyncRuntime", "InThread"]


class _LoopLock:
    """An ``asyncio.Lock`` of the running loop. A lock binds to the first loop
    that makes a task wait on it, so a new one is made when the runtime runs
    under another loop: one ``asyncio.run`` after another, each loop done
    before the next (nothing waits on the old lock by then)."""

    __slots__ = ("_lock", "_loop")

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = asyncio.Lock()

    def __call__(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop, self._lock = loop, asyncio.Lock()
        return self._lock


@dataclass
class _AsyncLog:
    """A session's fold and events in memory, appended through an ``AsyncStore``.

    One writer at a time: whoever decides on the fold and appends what it
    decided holds ``writing`` from the decision until the append has
    answered (the runtime's transitions, a goal operation), so that no
    append is decided on a fold another writer is changing meanwhile.
    ``append`` and ``reload`` are for a caller that holds it;
    ``append_decided`` takes it itself."""

    store: AsyncStore
    session_id: str
    clock: Clock
    _state: SessionState = field(default_factory=SessionState)
    _events: list[Event] = field(default_factory=list)
    #: what holds the log sealed right now (a running tool), or ``None``
    sealed_by: str | None = None

    def __post_init__(self) -> None:
        #: the lease every append carries while a goal driver holds one
        self.lease: Callable[[], Lease | None] = lambda: None
        #: the writer's lock (``writing()``: the running loop's)
        self.writing = _LoopLock()

    @contextmanager
    def sealed(self, holder: str) -> Iterator[None]:
        """Refuse every append (``LogSealedError``) while ``holder`` runs
        (``SessionLog.sealed``): a tool cannot change the session."""
        previous, self.sealed_by = self.sealed_by, holder
        try:
            yield
        finally:
            self.sealed_by = previous

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
        ``lease()``'s lease when there is one (a goal driver's fence). It
        waits for the writer before it (``writing``) and, cancelled while its
        append is in flight, holds it until the append answers (its events
        taken when written), then re-raises."""
        async with self.writing():
            for attempt in range(1, attempts + 1):
                at = self.now()
                drafts = decide(self._state, at)
                if not drafts:
                    return ()
                before = self._state
                events = number_drafts(drafts, before.last_seq, at)
                state = fold_more(before, events)
                try:
                    await settled(asyncio.ensure_future(self._append_events(before, events, state)))
                except ConflictError:
                    if attempt == attempts:
                        raise
                    await self.reload()
                    continue
                return events
        raise AssertionError("unreachable")

    async def _append_events(self, before: SessionState, events: Sequence[Event], state: SessionState) -> None:
        if self.sealed_by is not None:
            raise LogSealedError(self.sealed_by)
        folded, lease = Folded(before, state), self.lease()
        await self.store.append(AppendRequest(self.session_id, before.last_seq, events, folded=folded, lease=lease))
        self._events.extend(events)
        self._state = state

    @classmethod
    async def opened(cls, store: AsyncStore, session_id: str, clock: Clock) -> _AsyncLog:
        """The session as ``store`` holds it (its snapshot and a strict fold of
        what follows: raises ``ReplayError``)."""
        log = cls(store, session_id, clock)
        await log.reload()
        return log

    async def reload(self) -> None:
        """Read the session again: the fold and its events are taken together
        once both are read (a read that fails or is cancelled keeps both as
        they were)."""
        state = await self.store.load(self.session_id, incremental=True)
        events = list((await self.store.read(self.session_id))[: state.last_seq])
        self._state, self._events = state, events


class AsyncRuntime(DriverCore):
    """One session's asyncio runtime (see the module doc): ``store``'s
    session ``session_id``, an async ``model`` port, the ``tools`` (the tool
    runner's ``async_executors`` are awaited) and a ``review`` port that may
    be async; ``options`` as ``Driver``'s. Each turn spends its own retry
    budget. The constructor reads ``store`` (a synchronous ``Store``, adapted
    by ``ThreadedStore``): call it in a worker thread when that must not block
    the loop, or use ``AsyncRuntime.open`` with an ``AsyncStore``. Raises
    ``ReplayError`` when the stored log does not fold strictly."""

    def __init__(
        self,
        store: Store,
        session_id: str,
        model: AsyncModelClient,
        tools: ToolRunner,
        review: AsyncReviewPort | ReviewPort | None = None,
        *,
        _log: _AsyncLog | None = None,
        **options: Unpack[DriverOptions],
    ) -> None:
        clock = options.get("clock", system_clock)
        if _log is None:
            state = store.load(session_id, incremental=True)
            events = list(store.read(session_id)[: state.last_seq])
            _log = _AsyncLog(ThreadedStore(store), session_id, clock, state, events)
        self.retry_budget = step_budget(model, options)
        self.model = model
        self.review = review
        self.tools = tools
        self.prompt = options.get("prompt") or PromptConfig()
        self.max_steps = options.get("max_steps", 16)
        self.max_tool_calls = options.get("max_tool_calls", 32)
        self.step_listeners: list[StepListener] = []
        #: the plans put before the review port, in order
        self.shown: list[str] = []
        self._log = _log
        self.session_id = session_id
        self._p = step.Process.opened(self._config(), self._view())
        self._conversation = Conversation()
        self._requests: list[PreparedRequest] = []
        self._lock = _LoopLock()
        #: the task whose turn runs now
        self._turn_task: asyncio.Task[Any] | None = None
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
        **options: Unpack[DriverOptions],
    ) -> AsyncRuntime:
        """A runtime over an ``AsyncStore``: the session is read with awaits
        (its snapshot and what follows), and every append is awaited on the
        loop. Raises ``ReplayError`` when the stored log does not fold."""
        log = await _AsyncLog.opened(store, session_id, options.get("clock", system_clock))
        return cls(None, session_id, model, tools, review, _log=log, **options)  # type: ignore[arg-type]

    # -- the session as the user sees it ----------------------------------------

    @property
    def goal_log(self) -> AsyncGoalLog:
        """The session log as an ``AsyncGoalService`` appends through it
        (awaited: on the loop over a native async store, one thread hop per
        append over a synchronous one)."""
        return self._log

    @property
    def state(self) -> SessionState:
        return self._log.state

    @property
    def stage(self) -> step.Stage:
        return step.stage_of(self._p, self._view())

    def _view(self) -> step.Log:
        return step.Log(self._log.state, self._log.events)

    def _now(self) -> int:
        return self._log.now()

    # -- carrying out the reducer's actions -------------------------------------

    async def _write(self, append: step.Append) -> None:
        await self._log.append(append)

    async def _advance(self, event: step.Input) -> list[step.Action]:
        """``StepMachine._advance`` awaited: run the reducer's transitions for
        ``event``, awaiting their appends; the actions left. The runtime is
        the log's writer meanwhile (``_AsyncLog.writing``): another task's
        operation (a plan-mode choice, a goal operation) waits for these
        appends to answer, then decides on the value after them."""
        async with self._log.writing():
            if self._behind is not None:
                await self._catch_up()
            run = self._transitions(event)
            found = resume(run, None)
            while isinstance(found, tuple):
                found = resume(run, await self._written(*found))
            return found

    async def _written(self, append: step.Append, after: step.Process) -> bool:
        """Write ``append`` (``StepMachine._written``). A task cancelled
        meanwhile waits for the write to end, takes the value the store
        holds (or leaves the doubt to the next operation) and re-raises."""
        write = asyncio.ensure_future(self._write(append))
        try:
            await settled(write)
        except asyncio.CancelledError:
            failure = None if write.cancelled() else write.exception()
            if failure is not None and store_may_be_ahead(failure):
                # the next operation asks the store; the cancelled turn is abandoned either way
                self._behind = (append, after.abandoned())
            elif self._log.last_seq == append.events[-1].seq:
                self._p = after
            raise
        except Exception as exc:
            applied = await self._lost_track(append, after) if store_may_be_ahead(exc) else False
            if not recoverable(append, applied):
                raise
            return bool(applied)
        return True

    async def _lost_track(self, append: step.Append, after: step.Process) -> bool | None:
        """``StepMachine._lost_track``: ask the store whether the append in
        doubt is in the log (``None``: the store did not answer; the next
        operation asks again)."""
        self._behind = (append, after)
        with contextlib.suppress(Exception):  # the append's own error is the one to report
            return await self._catch_up()
        return None

    async def _catch_up(self) -> bool:
        await self._log.reload()
        return self._settle_doubt(self._log.events)

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
        start = step.StartTurn(text, source, view or ViewRequest(), 0)
        if self._turn_task is not None and self._turn_task is asyncio.current_task():
            # a turn started from inside this task's own turn (a tool's code):
            # the reducer refuses it as it refuses the synchronous runtime's
            # (``LogSealedError`` while the tool runs), instead of waiting for itself
            await self._advance(start)
        async with self._lock():
            self._turn_task = asyncio.current_task()
            try:
                return await self._turn(start)
            finally:
                self._turn_task = None

    async def _turn(self, start: step.StartTurn) -> TurnReport:
        try:
            await self._advance(start)
        except asyncio.CancelledError:  # the turn may be open in the log: the next one closes it
            self.abandon()
            raise
        except Exception:
            if self.in_doubt:  # the same: its start's append may be in the store
                self.abandon()
            raise
        self._requests = []
        try:
            return await self._drive()
        except asyncio.CancelledError:
            self.abandon()
            raise
        except Exception:
            self.abandon()
            if self.stage == "turn":
                with contextlib.suppress(Exception):  # the original error is the one to report
                    await self._advance(step.EndTurn(0))
            raise

    async def _drive(self) -> TurnReport:
        event: step.Input = step.Next(0, reachable(self.review))
        while True:
            actions = await self._advance(event)
            event = step.Next(0, reachable(self.review))
            for action in actions:
                if isinstance(action, step.TurnOver):
                    return report_of(action.tally, self._requests)
                if isinstance(action, step.ProposeStep):
                    event = step.StepVerdictIn(self._verdict(action.step), 0)
                elif isinstance(action, step.AskModel):
                    event = await self._ask(action)
                elif isinstance(action, step.RunTool):
                    call = action.call
                    with self._log.sealed(f"tool {call.name}"):
                        ok, output = await self.tools.execute_async(call)
                    event = step.ToolDone(call.id, ok, output, 0)
                elif isinstance(action, step.AskReview):
                    self.shown.append(action.request.plan)
                    answer = await ask_async(self.review, action.request)
                    event = step.ReviewAnswered(action.call.id, answer, 0)

    async def _ask(self, action: step.AskModel) -> step.Input:
        prepared = self._derive(action.basis)
        await self._advance(step.Asked())
        self._requests.append(prepared)
        budget = attempt_budget(self.retry_budget, action.retries_used)
        try:
            with budget.spending():
                response = await self.model.complete(prepared.request)
        except ModelError as exc:
            return step.ModelFailed(exc.code, exc.message, exc.retryable, budget.used)
        return step.ReplyIn(reply_of(response), 0, budget.used)

    @property
    def sealed_by(self) -> str | None:
        """What holds the session log sealed right now (a running tool), or ``None``."""
        return self._log.sealed_by


class InThread:
    """A synchronous model client as an ``AsyncModelClient``: each request
    runs in a worker thread (its retry budget is the client's)."""

    def __init__(self, client: ModelClient) -> None:
        self.client = client
        self.retry_budget = getattr(client, "retry_budget", None)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        return await asyncio.to_thread(self.client.complete, request)
