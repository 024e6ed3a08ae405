"""The step machine: one session's turns, steps and tool calls, with no I/O
of the model, the tools or the human.

Theory of operation
-------------------
The synchronous ``Runtime`` and ``planfold serve``'s host sessions each
drive one ``StepMachine``; the asyncio ``AsyncRuntime`` drives the same
reducer itself, through what every driver shares here (``DriverCore``,
``decide``), with its I/O awaited. The machine holds the session log and the process state a
turn needs (the pending plan-mode choice, the turn's plan-view request, the
reply's calls still to answer, the review waiting for a human) and answers
one question, "what next?" (``next_action``), with one of four actions:

- ``AskModel``: send this request to the model, then ``reply`` with its
  answer, or ``model_failed`` with the ``ModelError`` it raised;
- ``RunTool``: run this call's executor, then ``tool_result``;
- ``Review``: put this plan before a human, then ``review_answer``;
- ``TurnOver``: the turn ended; the report says how.

The machine's own I/O is its session log (the store) and, before an
executor call runs, the tool runner's resolver, which finds where the call's
writes really land so that the kernel's scope check decides on that (a real
directory's resolver reads the file system; the in-memory workspace's does
not).

Everything between those answers is decided here, always in the same order,
by the kernel's rules (``kernel.turn``: what a reply means, the calls a
stopped process left unanswered, the scope refusal; ``kernel.decisions``:
the pre-step flush, the request header, the plan lifecycle; the gate). A
driver never decides anything: it carries out the action and hands the
answer back. ``serve`` calls the same operations one by one (``begin_step``,
``request``, ``reply``, ``dispatch``, ``tool_result``, ``review_answer``,
``end_turn``) in the order its host chooses; where a call does not fit the
machine's ``stage`` it is refused (``OutOfOrderError``) and nothing happens.

An answer that does not fit the action asked for (a tool result for another
call, a review answer while a tool runs) is refused the same way and changes
nothing.

Stages: ``idle`` (no turn open), ``turn`` (a turn is open between steps),
``step`` (a request header is recorded; the model is asked), ``calls`` (a
reply's calls wait to be answered, in order), ``execute`` (a call's executor
runs; the log is sealed meanwhile), ``review`` (a plan waits for a human).

Failed appends
--------------
One append per transition: each transition of the reducer asks for at most
one append, and the machine writes it (one compare-and-set append) before it
takes the process value after it. An operation that runs several
transitions (``next_action`` answering a reply's refused calls one by one,
say) writes one append for each, in order, and stops at the first that
fails: the appends before it stand (the store and the machine both have
them), the failed one's value is not taken, and the append's own error
propagates (with its outcome: ``not-applied`` or ``unknown``), so the
machine never runs ahead of the store, whether or not the store can be
reached afterwards. The reducer takes some failures itself: a failed
pre-step flush of a pending plan-mode choice keeps the choice pending, and
the step goes on as a request of the recorded state. After an append whose
outcome is unknown, or a conflict (the store is ahead), the machine reads
the session again and finds out whether the append is in the log: it then
takes the reducer's value after it, or keeps the one before. While the
store does not answer, the next operation asks it first; a turn abandoned
meanwhile (``abandon``) stays abandoned whichever the answer is.

Only ``atomic`` (``planfold serve``'s goal operations, typed commands and
recorded facts) is one unit: its appends are held (``UnitStore``) and
written in one compare-and-set append when it returns; when anything in it
fails, the log's in-memory state is put back as it was before (and read
again when the store may be ahead).

The log is the only durable state: a machine built from a session's log at
any point (after a crash, a kill, a cancelled task) knows everything the log
knows. A turn left open by a process that stopped is closed as the next turn
opens (``kernel.turn.abandoned_turn``: its unanswered calls are answered as
``call-interrupted``, then it ends); a step begun on it first answers such
calls, so that the model's transcript answers every call.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Literal, TypeVar

from ...kernel import step
from ...kernel.decisions import ReviewDecision
from ...kernel.errors import ConflictError, PlanfoldError
from ...kernel.log import Event, MessageSource
from ...kernel.plan.context import ViewRequest
from ...kernel.plan.mode import ChoiceOutcome, PendingChoice, PlanModeView, StepVerdict
from ...kernel.plan.review import ReviewAnswer, ReviewRequest
from ...kernel.plan.scope import Effect
from ...kernel.session import SessionState
from ...kernel.turn import RecordedReply
from ..delegation import Delegated
from ..errors import AdapterError
from ..llm import model
from ..provenance import ForkProvenance
from ..store.base import (
    AppendRequest,
    AppendResult,
    Folded,
    ForwardingStore,
    InvalidRequestError,
    Lease,
    Store,
)
from ..store.fork import fork_at_turn
from ..store.session_log import Clock, LogSealedError, SessionLog, system_clock
from .prompt import Conversation, PreparedRequest, PromptConfig, prepare_request
from .resolve import ResolverError, resolved_effects
from .tool_runner import ToolRunner, reply_of

__all__ = [
    "ANSWERS",
    "DRIVERS",
    "RECOVERABLE_MODEL_ERRORS",
    "Action",
    "AskModel",
    "Dispatched",
    "DriverCore",
    "OutOfOrderError",
    "ProposedStep",
    "Review",
    "RunTool",
    "Stage",
    "Stamp",
    "StepBegun",
    "StepListener",
    "StepMachine",
    "Transitions",
    "TurnOver",
    "TurnReport",
    "UnitStore",
    "attempt_budget",
    "decide",
    "failed",
    "recoverable",
    "refusal",
    "report_of",
    "resume",
    "store_may_be_ahead",
    "written",
]

T = TypeVar("T")

#: Model failures after which the same step is proposed again.
RECOVERABLE_MODEL_ERRORS: frozenset[str] = step.RECOVERABLE_MODEL_ERRORS

Stage = Literal["idle", "turn", "step", "calls", "execute", "review"]


class OutOfOrderError(AdapterError):
    """The call does not fit the machine's ``stage`` (the driver's fault):
    ``unexpected-call`` names a call other than the one answered next,
    ``session-open`` opens a session that is open already. Nothing changed."""

    code = "out-of-order"
    codes = frozenset({"unexpected-call", "session-open"})

    def __init__(self, message: str, stage: Stage, *, code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.stage = stage


# --------------------------------------------------------------------------
# Actions and reports


#: A step the machine is about to request (the kernel's value): ``attempt``
#: is 0 for the first proposal and counts same-step retries.
ProposedStep = step.ProposedStep

StepListener = Callable[[ProposedStep], StepVerdict]


@dataclass(frozen=True, slots=True)
class TurnReport(step.Tally):
    """What one turn did: the machine's tally (its first and last seq, the
    steps it requested, the same-step retries, the assistant's last text,
    how it ended: ``reply``, ``step-rejected``, ``model-error``,
    ``max-steps``, ``content-filter``, ``refused``; the error that ended it
    early, the flushes whose append failed, and the turn an earlier process
    had left open, closed just before this one, ``None`` when there was
    none) and the requests the driver derived for it."""

    requests: list[PreparedRequest] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class AskModel:
    """Send ``request`` to the model (step ``step``, same-step retry
    ``attempt``); answer with ``reply`` or ``model_failed``."""

    request: model.ChatRequest
    prepared: PreparedRequest
    step: int
    attempt: int
    #: the step's retries already spent (its budget's ``used``)
    retries_used: int = 0

    def budget(self, size: model.RetryBudget) -> model.RetryBudget:
        """This attempt's budget (``attempt_budget``), ``retries_used`` of
        ``size``'s retries spent."""
        return attempt_budget(size, self.retries_used)


def attempt_budget(size: model.RetryBudget, used: int) -> model.RetryBudget:
    """A model call's budget: ``size``'s retries, ``used`` of them spent by
    the step already. Bind it (``RetryBudget.spending``) around the call, so
    that a client shared by many sessions spends this turn's retries, then
    hand its ``used`` back with the answer."""
    budget = model.RetryBudget(size.retries)
    budget.open()
    budget.used = used
    return budget


@dataclass(frozen=True, slots=True)
class RunTool:
    """Run ``call``'s executor with the log sealed; answer with ``tool_result``."""

    call: model.ToolCall


@dataclass(frozen=True, slots=True)
class Review:
    """Put ``request`` (the rendered plan of ``call``) before a human; answer
    with ``review_answer``."""

    call: model.ToolCall
    request: ReviewRequest


@dataclass(frozen=True, slots=True)
class TurnOver:
    """The turn ended (``turn/end`` is recorded)."""

    report: TurnReport


Action = AskModel | RunTool | Review | TurnOver

#: Each action and the machine operations that answer it (the README's
#: picture of the machine is drawn from this table and ``DRIVERS``).
ANSWERS: Mapping[type[Action], tuple[str, ...]] = {
    AskModel: ("reply", "model_failed"),
    RunTool: ("tool_result",),
    Review: ("review_answer",),
    TurnOver: (),
}

#: The loops that drive the kernel's turn reducer: module, class, and how it
#: runs (``AsyncRuntime`` drives it itself, the others through a ``StepMachine``).
DRIVERS: tuple[tuple[str, str, str], ...] = (
    ("adapters.runtime.loop", "Runtime", "synchronous"),
    ("adapters.runtime.aio", "AsyncRuntime", "asyncio"),
    ("adapters.serve.host", "HostSession", "planfold serve, JSON-RPC"),
)


#: A pre-step's outcome (the kernel's value): whether the step was accepted,
#: whether a pending choice was recorded, whether a plan started, and the
#: header's seq.
StepBegun = step.StepBegun

#: How a call was answered up to where a driver takes over (the kernel's
#: value): ``refused`` or ``done`` (its answer is in the log: ``ok``,
#: ``output``), ``execute`` (run it) or ``review`` (ask a human: ``review``).
Dispatched = step.DispatchResult


# --------------------------------------------------------------------------
# A unit of work over a store


class UnitStore(ForwardingStore):
    """A ``Store`` that, inside a unit, holds one session's appends and
    writes them at ``commit`` in one compare-and-set append; outside a unit
    it passes everything through. Reads see the held events; closing it
    leaves the shared store open (only its owner closes it). The folds the
    held appends came with, when each was made on the one before's result,
    join into one fold of all of them for the store (see ``base.Folded``);
    a lease they came with goes with it."""

    def __init__(self, inner: Store, session_id: str) -> None:
        super().__init__(inner)
        self.session_id = session_id
        self._open = False
        self._base = 0
        self._held: list[Event] = []
        self._folded: Folded | None = None
        self._lease: Lease | None = None

    @property
    def held(self) -> tuple[Event, ...]:
        return tuple(self._held)

    def begin(self) -> None:
        self._open, self._held, self._folded, self._lease = True, [], None, None

    def commit(self) -> None:
        """Write what the unit holds (may raise; the unit is closed either way)."""
        held, folded, lease = tuple(self._held), self._folded, self._lease
        self.discard()
        if held:
            self.inner.append(AppendRequest(self.session_id, self._base, held, None, folded, lease))

    def discard(self) -> None:
        self._open, self._held, self._folded, self._lease = False, [], None, None

    def append(self, request: AppendRequest) -> AppendResult:
        session_id, expected_seq, folded = request.session_id, request.expected_seq, request.folded
        if not self._open or session_id != self.session_id:
            return self.inner.append(request)
        head = self._base + len(self._held) if self._held else expected_seq
        if expected_seq != head:
            raise ConflictError(session_id, expected_seq, head)
        if not self._held:
            self._base, self._folded = expected_seq, folded
        elif self._folded is not None and folded is not None and folded.before is self._folded.after:
            self._folded = Folded(self._folded.before, folded.after)
        else:
            self._folded = None  # an append without a fold, or on another state: the store folds the unit
        self._held.extend(request.events)
        self._lease = request.lease or self._lease
        return AppendResult(session_id, expected_seq + 1, expected_seq + len(request.events))

    def head(self, session_id: str) -> int:
        held = self._held if session_id == self.session_id else []
        return held[-1].seq if held else self.inner.head(session_id)

    def read(self, session_id: str, after: int = 0) -> tuple[Event, ...]:
        held = self._held if session_id == self.session_id else []
        return self.inner.read(session_id, after) + tuple(e for e in held if e.seq > after)

    def close(self) -> None:
        """The shared store stays open."""


# --------------------------------------------------------------------------
# The synchronous driver of the kernel's turn machine


def written(events: Sequence[Event], append: step.Append) -> bool:
    """Whether ``append``'s events are in the log ``events`` (read again
    after an append whose outcome was unknown)."""
    start, count = append.expected_seq, len(append.events)
    return len(events) >= start + count and tuple(events[start : start + count]) == tuple(append.events)


def store_may_be_ahead(exc: BaseException) -> bool:
    """Whether the store may hold more than a driver whose append raised
    ``exc``: an ``unknown`` outcome, another writer first (a conflict), or
    anything that is not a typed refusal (a crash, a cancellation)."""
    if isinstance(exc, ConflictError):
        return True
    if isinstance(exc, PlanfoldError):
        return getattr(exc, "outcome", "not-applied") != "not-applied"
    return True


class _LazyEvents(Sequence[Event]):
    """The log's events, read from the store only when a decision reads them."""

    __slots__ = ("_log", "_view")

    def __init__(self, log: SessionLog) -> None:
        self._log = log
        self._view: Sequence[Event] | None = None

    def _events(self) -> Sequence[Event]:
        if self._view is None:
            self._view = self._log.events
        return self._view

    def __len__(self) -> int:
        return len(self._events())

    def __getitem__(self, index):  # type: ignore[no-untyped-def]
        return self._events()[index]

    def __iter__(self) -> Iterator[Event]:
        return iter(self._events())


def report_of(tally: step.Tally, requests: Sequence[PreparedRequest]) -> TurnReport:
    """A driver's report of a turn: the machine's ``tally`` and the requests it derived."""
    carried = {f.name: getattr(tally, f.name) for f in fields(tally)}
    return TurnReport(**carried, requests=list(requests))


class Stamp:
    """A driver's clock as an input's ``at`` (``step.At``): read the first
    time a transition stamps an append, then the same time for the rest of
    that transition; never read for a transition that appends nothing."""

    __slots__ = ("_at", "_clock")

    def __init__(self, clock: Callable[[], int]) -> None:
        self._clock = clock
        self._at: int | None = None

    def __call__(self) -> int:
        if self._at is None:
            self._at = self._clock()
        return self._at


def decide(process: step.Process, log: step.Log, event: step.Input, now: Callable[[], int]) -> step.Transition:
    """The reducer's answer to ``event`` as every driver asks it, once: the
    input's time is ``now`` (a ``Stamp``), which the transition reads only
    if it appends. A refusal is raised as the driver's typed error
    (``refusal``); nothing changed."""
    if hasattr(event, "at"):
        event = replace(event, at=Stamp(now))  # type: ignore[arg-type]
    try:
        return step.advance(process, log, event)
    except step.StageError as exc:
        raise refusal(exc, process) from None


def refusal(exc: step.StageError, process: step.Process) -> Exception:
    """The driver's error for the reducer's refusal ``exc``: ``LogSealedError``
    while a tool runs (nothing may change the session then), otherwise
    ``OutOfOrderError`` with the reducer's code (``unexpected-call`` names a
    call other than the one answered next)."""
    if exc.stage in ("resolve", "execute") and exc.code == "out-of-order" and process.current is not None:
        return LogSealedError(f"tool {process.current.call.name}")
    code = exc.code if exc.code != "out-of-order" else None
    return OutOfOrderError(exc.message, "execute" if exc.stage == "resolve" else exc.stage, code=code)


#: The reducer's transitions as a driver runs them (``DriverCore._transitions``).
Transitions = Generator[tuple[step.Append, step.Process], bool | None, list[step.Action]]


def resume(transitions: Transitions, written: bool | None) -> tuple[step.Append, step.Process] | list[step.Action]:
    """Hand ``transitions`` whether the last append is in the log (``None``
    to start): the next append to write and the value after it, or the
    actions left once the reducer is done."""
    try:
        return transitions.send(written)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


def recoverable(append: step.Append, applied: bool | None) -> bool:
    """Whether a driver goes on after ``append`` failed: it was written after
    all (``applied``), or it was not and the reducer takes the failure
    (``on_failure``); otherwise the append's error is the operation's."""
    return bool(applied) or (applied is False and append.on_failure is not None)


def failed(append: step.Append) -> step.AppendFailed:
    """The input that hands a failed ``append`` back to the process before it."""
    assert append.on_failure is not None
    return step.AppendFailed(append.on_failure, 0, append.detail)


class DriverCore:
    """What every driver of the reducer keeps and does the same way: the
    reducer's configuration (made again only when a setting changed), the
    step listeners' verdict, and carrying on after a transition (its
    continuations queued, where a call's effects land resolved, the other
    actions handed back). A driver supplies ``_view`` (the log as it holds it
    now) and ``_now`` (the clock an append is stamped with)."""

    tools: ToolRunner
    max_steps: int
    max_tool_calls: int
    retry_budget: model.RetryBudget
    step_listeners: list[StepListener]
    prompt: PromptConfig
    _conversation: Conversation
    _p: step.Process
    #: an append in doubt and the value after it (see ``_lost_track``)
    _behind: tuple[step.Append, step.Process] | None

    def _view(self) -> step.Log:
        raise NotImplementedError

    def _now(self) -> int:
        raise NotImplementedError

    def _config(self) -> step.TurnConfig:
        """The reducer's configuration, made again only when a setting changed."""
        tools = self.tools
        key = (tools.registry, tools.policy, self.max_steps, self.max_tool_calls, self.retry_budget.retries)
        made = getattr(self, "_configured", None)
        if made is None or any(a is not b for a, b in zip(made[0], key, strict=True)):
            made = (key, step.TurnConfig(*key))
            self._configured = made
        return made[1]

    def _configure(self) -> None:
        """The process value with the configuration as the settings are now."""
        config = self._config()
        if config is not self._p.config:
            self._p = replace(self._p, config=config)

    def _decide(self, event: step.Input) -> step.Transition:
        return decide(self._p, self._view(), event, self._now)

    def _transitions(self, event: step.Input) -> Transitions:
        """Feed ``event`` (and the continuations it asks for) to the reducer;
        yield each append with the process value after it for the driver to
        write, and take back whether it is in the log (False: it failed and
        the reducer takes the failure); return the actions left for the
        caller (results, model, tool, review, turn over). The process value
        moves on only past what the store holds."""
        self._configure()
        queue: list[step.Input] = [event]
        left: list[step.Action] = []
        while queue:
            moved = self._decide(queue.pop(0))
            actions = moved.actions
            if actions and isinstance(actions[0], step.Append):
                append = actions[0]
                if not (yield append, moved.process):
                    queue.insert(0, failed(append))
                    continue
                actions = actions[1:]
            self._p = moved.process
            self._carry_on(actions, queue, left)
        return left

    def _settle_doubt(self, events: Sequence[Event]) -> bool:
        """With the session read again (``events``), whether the append in
        doubt was written: the value after it is taken when it was."""
        assert self._behind is not None
        append, after = self._behind
        self._behind = None
        if not written(events, append):
            return False
        self._p = after
        return True

    def abandon(self) -> None:
        """Forget the process state of the open turn, as a process that stops
        does (the log keeps the turn open; the next turn closes it). An append
        still in doubt is abandoned with it: when the store turns out to hold
        it, the value after it is taken without the turn."""
        self._p = self._p.abandoned()
        if self._behind is not None:
            append, after = self._behind
            self._behind = (append, after.abandoned())

    @property
    def resumed(self) -> bool:
        return self._p.resumed

    @property
    def in_doubt(self) -> bool:
        """Whether an append's outcome is unknown still (the store did not
        answer since): the next operation asks the store first."""
        return self._behind is not None

    @property
    def pending(self) -> PendingChoice | None:
        """The plan-mode choice waiting for the next accepted pre-step."""
        return self._p.pending

    @property
    def plan_mode(self) -> PlanModeView:
        """The mode as the user sees it: the recorded state, and the chosen
        state waiting for the next accepted pre-step (``None``: nothing)."""
        pending = self._p.pending
        return PlanModeView(self._view().state.plan_mode, None if pending is None else pending.target)

    def _carry_on(self, actions: Sequence[step.Action], queue: list[step.Input], left: list[step.Action]) -> None:
        """Queue ``actions``' continuations and resolved paths; keep the rest in ``left``."""
        for action in actions:
            if isinstance(action, step.Then):
                queue.append(action.event)
            elif isinstance(action, step.ResolvePaths):
                call = action.call
                queue.append(step.Resolved(call.id, self._resolved(call), 0))
            else:
                left.append(action)

    def _resolved(self, call: model.ToolCall) -> tuple[Effect, ...]:
        """Where ``call``'s effects land. A resolver that raises (its port
        forbids it) is its supplier's fault: the turn is abandoned, so that
        the driver can close it, and ``ResolverError`` is raised; the call
        never runs."""
        try:
            return resolved_effects(self.tools.registry, self.tools.resolver, call)
        except Exception as exc:
            self.abandon()
            raise ResolverError(call, exc) from exc

    def _derive(self, basis: step.RequestBasis) -> PreparedRequest:
        """The request of a step, derived from ``basis`` (the conversation's
        messages are kept between steps)."""
        return prepare_request(
            basis.state, basis.events, basis.view, first_request=basis.first_request, tools=self.tools,
            config=self.prompt, messages=self._conversation,
        )

    def _verdict(self, proposed: ProposedStep) -> StepVerdict:
        verdict: StepVerdict = "accepted"
        for listener in self.step_listeners:
            verdict = listener(proposed)
            if verdict != "accepted":
                break
        return verdict


class StepMachine(DriverCore):
    """One session's turn machine over ``store``: the kernel's reducer
    (``kernel.step``) and the I/O it asks for (see the module doc).

    ``tools`` is the registry, gate policy and executors (the machine only
    asks the gate; a driver runs executors); ``max_steps`` caps a turn's
    steps, ``max_tool_calls`` the calls of one reply; ``retry_budget`` sizes
    the retries of one step (shared with the model client's own retries).
    ``review_available`` says whether a human can be asked now
    (``exit_plan_mode`` fails closed without one). Raises ``ReplayError``
    when the stored log does not fold strictly.
    """

    def __init__(
        self,
        store: Store,
        session_id: str,
        tools: ToolRunner,
        *,
        clock: Clock = system_clock,
        prompt: PromptConfig | None = None,
        max_steps: int = 16,
        max_tool_calls: int = 32,
        retry_budget: model.RetryBudget | None = None,
        step_listeners: Sequence[StepListener] = (),
        review_available: Callable[[], bool] = lambda: True,
    ) -> None:
        self.unit = UnitStore(store, session_id)
        self.log = SessionLog(self.unit, session_id, clock)
        self.tools = tools
        self.prompt = prompt or PromptConfig()
        self.max_steps = max_steps
        self.max_tool_calls = max_tool_calls
        self.retry_budget = retry_budget or model.RetryBudget(2)
        self.step_listeners = list(step_listeners)
        self.review_available = review_available
        #: the plans put before a human, in order
        self.shown: list[str] = []
        self._p = step.Process.opened(self._config(), self._view())
        self._conversation = Conversation()
        self._prepared: PreparedRequest | None = None
        self._requests: list[PreparedRequest] = []
        #: an append in doubt and the value after it (see ``_lost_track``)
        self._behind: tuple[step.Append, step.Process] | None = None

    session_id = Delegated[str]("log")
    state = Delegated[SessionState]("log")

    def _view(self) -> step.Log:
        return step.Log(self.log.state, _LazyEvents(self.log))

    def _now(self) -> int:
        return self.log.now()

    # -- carrying out the reducer's actions -----------------------------------

    def _advance(self, event: step.Input) -> list[step.Action]:
        """Run the reducer's transitions for ``event`` (``_transitions``),
        writing their appends; the actions left for the caller."""
        if self._behind is not None:
            self._catch_up()
        run = self._transitions(event)
        found = resume(run, None)
        while isinstance(found, tuple):
            found = resume(run, self._written(*found))
        return found

    def _written(self, append: step.Append, after: step.Process) -> bool:
        """Write ``append``: whether it is in the log (a failure the reducer
        does not take, or a store that does not answer, raises)."""
        try:
            self._write(append)
        except BaseException as exc:
            applied = self._lost_track(append, after) if store_may_be_ahead(exc) else False
            if not recoverable(append, applied) or not isinstance(exc, Exception):
                raise
            return bool(applied)
        return True

    def _lost_track(self, append: step.Append, after: step.Process) -> bool | None:
        """An append whose outcome is unknown, or refused because another
        writer is ahead: the machine asks the store where it stands (now, and
        before its next operation while the store does not answer) and
        whether the append is in the log. True: it is (the machine takes the
        value after it); False: it is not (the value before it stays);
        ``None``: the store did not answer."""
        self._behind = (append, after)
        with contextlib.suppress(Exception):  # the append's own error is the one to report
            return self._catch_up()
        return None

    def _catch_up(self) -> bool:
        """Read the session again and find out whether the append in doubt
        was written."""
        self.log.reload()
        return self._settle_doubt(self.log.events)

    def _write(self, append: step.Append) -> None:
        if append.expected_seq != self.log.last_seq:
            raise ConflictError(self.session_id, append.expected_seq, self.log.last_seq)
        self.log.append_folded(append.events, append.before, append.state)

    def _result(self, event: step.Input) -> object:
        for action in self._advance(event):
            if isinstance(action, step.Result):
                return action.value
        return None

    def atomic(self, operation: Callable[[], T], *extra: object) -> T:
        """Run ``operation`` (``planfold serve``'s goal operation, typed
        command or recorded facts) as one unit of appends; ``extra`` objects
        with a ``__dict__`` are put back when it fails, and so is the
        in-memory log."""
        kept = [(obj, dict(vars(obj))) for obj in extra]
        mark = self.log.mark()
        self.unit.begin()
        committing = False
        try:
            result = operation()
            committing = True
            self.unit.commit()
        except BaseException as exc:
            self.unit.discard()
            for obj, attrs in kept:
                vars(obj).update(attrs)
            if self.log.last_seq != mark.last_seq:
                self.log.restore(mark)
                self._conversation = Conversation()
            if isinstance(exc, ConflictError) or (committing and store_may_be_ahead(exc)):
                with contextlib.suppress(Exception):  # the unit's own error is the one to report
                    self.log.reload()
            raise
        return result

    # -- stages ---------------------------------------------------------------

    @property
    def stage(self) -> Stage:
        found = step.stage_of(self._p, self._view())
        return "execute" if found == "resolve" else found

    @property
    def awaiting_call(self) -> str | None:
        """The id of the call answered next, if any."""
        p = self._p
        if p.current is not None:
            return p.current.call.id
        return p.calls[0].call.id if p.calls else None

    @property
    def calls_left(self) -> tuple[model.ToolCall, ...]:
        """The reply's calls still to dispatch, in order."""
        return tuple(entry.call for entry in self._p.calls)

    @property
    def follow(self) -> Literal["continue", "end"]:
        """Whether the turn goes on after the last reply."""
        return self._p.follow

    @property
    def next_step(self) -> int:
        """The step number a driver proposes next: this machine's own count in
        a turn it opened; in a turn a stopped process left open, the one after
        that turn's last header; 1 between turns."""
        turns = self.log.state.turns
        if not turns.open:
            return 1
        return self._p.step if self._p.turn_mine else turns.step + 1

    @property
    def request_state(self) -> SessionState:
        """The fold the open step's request is derived from (its header's)."""
        return self._p.view_state or self.log.state

    def require(self, what: str, *stages: Stage) -> None:
        """Refuse ``what`` (``OutOfOrderError``; ``LogSealedError`` while a tool
        runs) unless the machine is at one of ``stages``."""
        stage = self.stage
        if stage in stages:
            return
        if stage == "execute" and self._p.current is not None:
            raise LogSealedError(f"tool {self._p.current.call.name}")
        wanted = " or ".join(stages)
        raise OutOfOrderError(f"{what} needs the session at {wanted}, but it is at {stage}", stage)

    # -- the operations -------------------------------------------------------

    def choose(self, target: bool) -> ChoiceOutcome:
        """The user chooses plan mode on or off: appended now between turns,
        queued for the next accepted pre-step in a turn (a tool running
        included: the sealed log stops the tool, not the user)."""
        outcome = self._result(step.Choose(target, 0))
        assert isinstance(outcome, str)
        return outcome  # type: ignore[return-value]

    def start_turn(self, text: str, source: MessageSource | None = None, view: ViewRequest | None = None) -> TurnReport:
        """Open a turn with ``text`` from ``source`` (``None``: a human). A turn
        an earlier process left open is closed first, in the same append.
        Refused (``OutOfOrderError``) while this machine's own turn is open."""
        tally = self._result(step.StartTurn(text, source, view or ViewRequest(), 0))
        assert isinstance(tally, step.Tally)
        self._requests, self._prepared = [], None
        return report_of(tally, self._requests)

    def end_turn(self) -> TurnReport | None:
        """Close the open turn; its unanswered calls are answered as
        ``call-interrupted`` first. The turn's report, when this machine
        opened it."""
        tally = self._result(step.EndTurn(0))
        self._prepared = None
        return None if tally is None else report_of(tally, self._requests)  # type: ignore[arg-type]

    def begin_step(self, number: int, verdict: StepVerdict = "accepted") -> StepBegun:
        """The pre-step of ``number`` with the listeners' ``verdict`` (see
        ``kernel.step``): the flush of a pending choice (its own append: a
        failed flush keeps it pending and the step goes on); then, for an
        accepted step, an approved plan starts and the header is recorded."""
        begun = self._result(step.BeginStep(number, verdict, 0))
        assert isinstance(begun, StepBegun)
        self._prepared = None
        return begun

    def request(self) -> PreparedRequest:
        """The open step's request, derived once from the recorded state."""
        if self.stage != "step":
            self.require("step/context", "step")
        if self._prepared is None:
            self._prepared = self._derive(step.basis(self._p, self._view()))
            self._advance(step.Asked())
            self._requests.append(self._prepared)
        return self._prepared

    def model_failed(self, error: model.ModelError, retries_used: int | None = None) -> bool:
        """The model call of the open step failed: propose the same step again
        when the error is recoverable and the step's budget lasts (True);
        otherwise the turn ends with the error (False)."""
        if self.stage != "step":
            self.require("a model failure", "step")
        self.request()
        used = self._p.retries_used if retries_used is None else retries_used
        failed = step.ModelFailed(error.code, error.message, error.retryable, used)
        retried = self._result(failed)
        self._prepared = None
        return bool(retried)

    def reply(self, response: model.ChatResponse, retries_used: int | None = None) -> RecordedReply:
        """Record the model's reply to the open step (``kernel.turn.record_reply``)."""
        if self.stage != "step":
            self.require("step/reply", "step")
        self.request()
        used = self._p.retries_used if retries_used is None else retries_used
        recorded = self._result(step.ReplyIn(reply_of(response), 0, used))
        self._prepared = None
        return step.recorded_reply(recorded)

    def dispatch(self, call_id: str, *, review_available: bool | None = None) -> Dispatched:
        """Answer the reply's next call up to where a driver takes over (see
        ``kernel.step``): refused, done (its answer is in the log), to
        execute, or to review."""
        available = self.review_available() if review_available is None else review_available
        result = self._result(step.Dispatch(call_id, 0, available))
        assert isinstance(result, Dispatched)
        if result.review is not None:
            self.shown.append(result.review.plan)
        return result

    def tool_result(self, call_id: str, ok: bool, output: str) -> Event:
        """Record what the executor returned for the call being run."""
        written = self._result(step.ToolDone(call_id, ok, output, 0))
        assert isinstance(written, Event)
        return written

    def review_answer(self, call_id: str, answer: ReviewAnswer) -> tuple[ReviewDecision, int]:
        """The human's answer to the review of an ``exit_plan_mode`` call:
        the decision and the seq of the call's result."""
        if self.stage == "execute":
            self.require(f"answering call {call_id!r}", "review")
        answered = self._result(step.ReviewAnswered(call_id, answer, 0))
        assert isinstance(answered, tuple)
        return answered

    # -- what next -------------------------------------------------------------

    def next_action(self) -> Action:
        """What the driver must do next (see the module doc). Raises
        ``OutOfOrderError`` when no turn was started."""
        event: step.Input = step.Next(0, self.review_available())
        while True:
            for action in self._advance(event):
                if isinstance(action, step.ProposeStep):
                    event = step.StepVerdictIn(self._verdict(action.step), 0)
                    break
                if isinstance(action, step.AskModel):
                    prepared = self.request()
                    return AskModel(prepared.request, prepared, action.step, action.attempt, action.retries_used)
                if isinstance(action, step.RunTool):
                    return RunTool(action.call)
                if isinstance(action, step.AskReview):
                    if not self.shown or self.shown[-1] is not action.request.plan:
                        self.shown.append(action.request.plan)
                    return Review(action.call, action.request)
                if isinstance(action, step.TurnOver):
                    return TurnOver(report_of(action.tally, self._requests))
            else:  # only results: ask again
                event = step.Next(0, self.review_available())

    def fork(self, new_session: str, *, at: int | None = None, turn: int | None = None) -> ForkProvenance:
        """A new session whose log is this one's first ``at`` events, or the
        events before turn ``turn`` started (a rewind to that turn); give
        exactly one. Raises ``InvalidRequestError`` for neither or both,
        and the store's typed refusals (``fork-seq-missing``,
        ``fork-turn-missing``, ``session-exists``)."""
        if (at is None) == (turn is None):
            raise InvalidRequestError("fork at a seq or at a turn's start: give exactly one of at and turn")
        store = self.unit.inner
        if turn is not None:
            return fork_at_turn(store, self.session_id, turn, new_session)
        assert at is not None
        return store.fork(self.session_id, at, new_session)

    def abandon(self) -> None:
        """``DriverCore.abandon``, and the open step's request with it."""
        super().abandon()
        self._prepared = None
