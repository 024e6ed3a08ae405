"""The goal service: the goal kernel put to work in one process.

Theory of operation
-------------------
The durable goal lives in the session log as ``goal/change`` events and
goal-attributed ``user/message`` rounds; the kernel decides every operation in
one call (``kernel.goal.ops.decide_goal``: the draft to append, the
activation after it, the change) and folds it (``kernel.goal.fold``); the
session log numbers the draft and appends it with compare-and-set, deciding
again on fresh state after a conflict. This service adds
the three things that exist only in a running process:

- **Activation.** Whether this process may start goal rounds on its own. It
  starts disarmed at every session start (``GoalService`` is created per
  session start and calls ``session_started``), follows the transition
  table's activation column after each accepted operation, and is never
  written anywhere. After a restart a human ``resume`` re-arms it.
- **Notifications.** Every accepted change is first appended (the fact), then
  broadcast as a ``GoalChanged`` to the listeners subscribed for this agent
  only. A listener that raises is recorded in ``listener_failures`` and the
  other listeners still run; the committed change is never undone or hidden.
- **The round driver.** ``drive`` asks the kernel's ``should_continue`` before
  every round. Each round is one turn whose first message is attributed to
  the goal (``round_message``: goal id, revision, round number), so only
  these turns spend the budget. When the budget is spent the system blocks
  the goal (``budget_block``), which disarms it; ``block_spent`` is that
  block for a caller that starts its rounds itself (a ``planfold serve``
  host).

Two faces share every decision (``_Goals``: identity, activation,
notifications, the kernel's decisions and the round plan) and differ only
in how the append is made: ``GoalService`` over a synchronous
``SessionLog``; ``AsyncGoalService`` over an asyncio runtime's log
(``AsyncRuntime.goal_log``), whose appends and rounds are awaited on the
loop: with no thread over a native ``AsyncStore``, one thread hop per store
call over a synchronous store the runtime adapts (``ThreadedStore``)
(``goal_lease_aio`` drives it under the session's lease).

The service is bound to one live agent. Every call names the agent handle it
was given; a handle from a replaced agent raises ``StaleAgentError`` so an
out-of-date caller cannot change the goal.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Generic, Protocol, TypeVar

from ...kernel.goal import ops as goal_ops
from ...kernel.goal.continuation import (
    ContinueDecision,
    ContinueFacts,
    StopReason,
    decide_budget_block,
    round_source,
    should_continue,
)
from ...kernel.goal.fold import GoalState
from ...kernel.goal.ops import GoalDecision, GoalRequest
from ...kernel.goal.values import (
    DISARMED,
    Activation,
    BlockedReason,
    GoalOperation,
    GoalRef,
    GoalSnapshot,
    session_started,
)
from ...kernel.log import Draft, Event, GoalSource, MessageSource
from ...kernel.session import SessionState
from ..errors import AdapterError
from ..store.base import Lease
from ..store.session_log import SessionLog

__all__ = [
    "AgentHandle",
    "AsyncGoalLog",
    "AsyncGoalService",
    "AsyncRoundRunner",
    "DriveReport",
    "GoalChanged",
    "GoalListener",
    "GoalLog",
    "GoalService",
    "GoalView",
    "ListenerFailure",
    "RoundRunner",
    "StaleAgentError",
    "round_text",
]


def round_text(number: int) -> str:
    """The message that opens goal round ``number``."""
    return f"Continue the goal (round {number})."


class StaleAgentError(AdapterError):
    """The caller holds the handle of an agent that is no longer the live one."""

    code = "stale-agent"


@dataclass(frozen=True, slots=True, eq=False)
class AgentHandle:
    """The identity of one live agent instance (compared by identity)."""

    agent_id: str
    instance: int


@dataclass(frozen=True, slots=True)
class GoalView:
    """The folded goal plus this process's activation."""

    goal: GoalSnapshot
    armed: bool

    @property
    def rounds_left(self) -> int:
        return max(0, self.goal.max_rounds - self.goal.rounds_started)


@dataclass(frozen=True, slots=True)
class GoalChanged:
    """An accepted goal change, as broadcast. ``goal`` is ``None`` for clear."""

    agent_id: str
    operation: GoalOperation
    ref: GoalRef
    seq: int
    goal: GoalSnapshot | None


GoalListener = Callable[[GoalChanged], None]


@dataclass(frozen=True, slots=True)
class ListenerFailure:
    """A listener raised while being told about the change at ``seq``."""

    agent_id: str
    seq: int
    error: str


class RoundRunner(Protocol):
    """Runs one whole turn whose first message is ``text`` from ``source``."""

    def run_turn(self, text: str, source: MessageSource | None = None) -> object: ...


class AsyncRoundRunner(Protocol):
    """Runs one whole turn as a coroutine (the asyncio runtime)."""

    async def run_turn(self, text: str, source: MessageSource | None = None) -> object: ...


@dataclass(frozen=True, slots=True)
class DriveReport:
    """What ``drive`` did: the rounds it ran and why it stopped (``None``
    when it stopped at its own ``limit``); ``blocked_at`` is the seq of the
    budget block it appended, if any."""

    rounds: tuple[int, ...]
    stopped: StopReason | None
    blocked_at: int | None = None


_instances = itertools.count(1)


class GoalLog(Protocol):
    """What the goal decisions read of a session log: its strict fold."""

    @property
    def session_id(self) -> str: ...

    @property
    def state(self) -> SessionState: ...


class AsyncGoalLog(GoalLog, Protocol):
    """A session log whose appends are awaited (the asyncio runtime's over an
    ``AsyncStore``): ``append_decided`` as ``SessionLog.append_decided``;
    every append carries ``lease()``'s lease when there is one (a leased
    goal driver's fence)."""

    lease: Callable[[], Lease | None]

    async def append_decided(
        self, decide: Callable[[SessionState, int], Sequence[Draft]], *, attempts: int = 3
    ) -> tuple[Event, ...]: ...


#: The session log a goal service appends through.
L = TypeVar("L", bound=GoalLog)
#: What an operation returns: the change, or (the asyncio face) an awaitable of it.
R = TypeVar("R")


@dataclass
class _Goals(Generic[L, R]):
    """What the synchronous and the asyncio goal services share: the agent's
    identity, the activation, the notifications, the operations as the user
    names them and every decision but the append itself (which each face
    does its own way, in ``apply`` and ``_block_spent``)."""

    log: L
    agent_id: str
    new_goal_id: Callable[[], str]
    activation: Activation = DISARMED
    listener_failures: list[ListenerFailure] = field(default_factory=list)
    _listeners: list[tuple[str, GoalListener]] = field(default_factory=list)
    _agent: AgentHandle = field(init=False)

    def __post_init__(self) -> None:
        self._agent = AgentHandle(self.agent_id, next(_instances))
        self.session_started()

    # -- identity and activation ------------------------------------------

    @property
    def agent(self) -> AgentHandle:
        """The live agent's handle."""
        return self._agent

    def replace_agent(self) -> AgentHandle:
        """A new live agent instance; the old handle becomes stale."""
        self._agent = AgentHandle(self.agent_id, next(_instances))
        return self._agent

    def _check(self, agent: AgentHandle) -> None:
        if agent is not self._agent:
            raise StaleAgentError(
                f"agent handle {agent.agent_id}#{agent.instance} is not the live agent "
                f"{self._agent.agent_id}#{self._agent.instance}"
            )

    def session_started(self) -> None:
        """The session-start edge: activation is disarmed."""
        self.activation = session_started(self.activation)

    def disarm(self, agent: AgentHandle) -> None:
        """Withdraw this process's right to continue; the goal is unchanged."""
        self._check(agent)
        self.activation = DISARMED

    # -- reading ----------------------------------------------------------

    def state(self) -> GoalState:
        """The goal fold of the session log (kept by the session fold)."""
        return self.log.state.goal

    def get(self, agent: AgentHandle) -> GoalView | None:
        """The current goal and activation, or ``None`` when there is none."""
        self._check(agent)
        current = self.state().current
        return None if current is None else GoalView(current, self.activation.armed)

    # -- notifications ----------------------------------------------------

    def subscribe(self, agent_id: str, listener: GoalListener) -> Callable[[], None]:
        """Receive this agent's goal changes; returns the unsubscribe function."""
        entry = (agent_id, listener)
        self._listeners.append(entry)

        def unsubscribe() -> None:
            if entry in self._listeners:
                self._listeners.remove(entry)

        return unsubscribe

    def _notify(self, change: GoalChanged) -> None:
        for scope, listener in tuple(self._listeners):
            if scope != change.agent_id:
                continue
            try:
                listener(change)
            except Exception as exc:  # a listener never affects the fact
                self.listener_failures.append(
                    ListenerFailure(change.agent_id, change.seq, f"{type(exc).__name__}: {exc}")
                )

    # -- deciding (shared by both faces) ------------------------------------

    def _decider(
        self, agent: AgentHandle, request: GoalRequest
    ) -> tuple[list[GoalDecision], Callable[[SessionState, int], Sequence[Draft]]]:
        """The decision of ``request`` as the log's ``append_decided`` calls
        it, and the list its decisions are kept in (see ``apply``)."""
        self._check(agent)
        if request.operation == "create":
            request = replace(request, goal_id=request.goal_id or self.new_goal_id())
        else:
            request = replace(request, ref=self._ref(request.ref))
        decided: list[GoalDecision] = []

        def decision(state: SessionState, at: int) -> Sequence[Draft]:
            decided.append(goal_ops.decide_goal(state.goal, request, self.activation, at))
            return (decided[-1].draft,)

        return decided, decision

    def _block_decider(self) -> tuple[list[GoalDecision], Callable[[SessionState, int], Sequence[Draft]]]:
        decided: list[GoalDecision] = []

        def decision(state: SessionState, at: int) -> Sequence[Draft]:
            decided.append(decide_budget_block(state.goal, self.activation, at))
            return (decided[-1].draft,)

        return decided, decision

    def _plan_round(self, rounds: list[int], limit: int, abandoned: bool) -> tuple[str, GoalSource] | DriveReport:
        """The text and source of the next round (counted in ``rounds``), or
        the drive's report when it stops (a ``budget-spent`` stop still
        needs its block appended by the caller)."""
        if len(rounds) >= limit:
            return DriveReport(tuple(rounds), None)
        decision = self._decide(self.log.state.turns.open and not abandoned)
        if not decision.proceed:
            return DriveReport(tuple(rounds), decision.reason)
        number = decision.next_round or 0
        rounds.append(number)
        return round_text(number), round_source(self.state())

    def _rounds(
        self, agent: AgentHandle, limit: int, ended: list[DriveReport]
    ) -> Iterator[tuple[str, GoalSource]]:
        """A drive's rounds (each round's text and source), each planned once
        the one before has run; the drive's report goes into ``ended`` when
        they end (a ``budget-spent`` stop still needs its block appended)."""
        self._check(agent)
        rounds: list[int] = []
        abandoned = self.log.state.turns.open  # until the first round's turn closes it
        while not isinstance(planned := self._plan_round(rounds, limit, abandoned), DriveReport):
            yield planned
            abandoned = False
        ended.append(planned)

    def _record(self, written: Sequence[Event], decision: GoalDecision) -> GoalChanged:
        (event,) = written
        self.activation = decision.activation
        notice = GoalChanged(self.agent_id, decision.operation, decision.ref, event.seq, decision.goal)
        self._notify(notice)
        return notice

    def _ref(self, ref: GoalRef | None) -> GoalRef:
        if ref is not None:
            return ref
        current = self.state().current
        return GoalRef("", 0) if current is None else current.ref

    # -- operations (shorthands of ``apply``) --------------------------------

    def create(self, agent: AgentHandle, objective: str, max_rounds: int | None = None) -> R:
        return self.apply(agent, GoalRequest("create", "user", objective=objective, max_rounds=max_rounds))

    def edit(
        self,
        agent: AgentHandle,
        ref: GoalRef | None = None,
        *,
        objective: str | None = None,
        max_rounds: int | None = None,
    ) -> R:
        return self.apply(agent, GoalRequest("edit", "user", ref, objective=objective, max_rounds=max_rounds))

    def pause(self, agent: AgentHandle, ref: GoalRef | None = None) -> R:
        return self.apply(agent, GoalRequest("pause", "user", ref))

    def resume(self, agent: AgentHandle, ref: GoalRef | None = None) -> R:
        """A human's resume: re-arms this process (after a restart too)."""
        return self.apply(agent, GoalRequest("resume", "user", ref))

    def complete(self, agent: AgentHandle, ref: GoalRef | None = None, *, actor: goal_ops.Actor = "user") -> R:
        return self.apply(agent, GoalRequest("complete", actor, ref))

    def block(
        self,
        agent: AgentHandle,
        reason: BlockedReason,
        ref: GoalRef | None = None,
        *,
        actor: goal_ops.Actor = "user",
    ) -> R:
        return self.apply(agent, GoalRequest("block", actor, ref, reason=reason))

    def clear(self, agent: AgentHandle, ref: GoalRef | None = None) -> R:
        return self.apply(agent, GoalRequest("clear", "user", ref))

    def block_spent(self, agent: AgentHandle) -> R:
        """The system's block of the goal whose rounds are all started (what
        ``drive`` appends when it stops for ``budget-spent``); it disarms
        this process. Raises ``GoalOperationError`` (``invalid-transition``)
        when the budget is not spent."""
        self._check(agent)
        return self._block_spent()

    def apply(self, agent: AgentHandle, request: GoalRequest) -> R:
        """Any operation, as a ``GoalRequest`` names it (the methods above are
        its shorthands for the user's); each face appends it its own way."""
        raise NotImplementedError

    def _block_spent(self) -> R:
        raise NotImplementedError

    # -- the round driver's decision ----------------------------------------

    def decide(self) -> ContinueDecision:
        """Whether this process may start the next round now."""
        return self._decide(self.log.state.turns.open)

    def _decide(self, turn_open: bool) -> ContinueDecision:
        state = self.log.state
        facts = ContinueFacts(plan_mode=state.plan_mode, turn_open=turn_open)
        return should_continue(self.state().current, self.activation, facts)


class GoalService(_Goals[SessionLog, GoalChanged]):
    """Goal operations for one session and one live agent."""

    def apply(self, agent: AgentHandle, request: GoalRequest) -> GoalChanged:
        """Any operation, as a ``GoalRequest`` names it (``create``, ``edit``,
        ``pause``, ``resume``, ``complete``, ``block`` and ``clear`` are its
        shorthands for the user's): a create without a ``goal_id``
        gets ``new_goal_id()``'s; any other operation without a ``ref`` acts
        on the current goal as the caller sees it now (a decision retried
        after a conflict keeps that ref, so it cannot act on a goal the
        caller never saw). The kernel decides it on fresh state
        (``decide_goal``, one call); its draft is appended (decided again
        after a conflict), its activation taken and the change broadcast."""
        decided, decision = self._decider(agent, request)
        return self._record(self.log.append_decided(decision), decided[-1])

    def drive(self, agent: AgentHandle, runner: RoundRunner, *, limit: int = 1_000) -> DriveReport:
        """Run goal rounds until the kernel says stop or ``limit`` rounds ran.

        Each round is one turn of ``runner`` whose first message is attributed
        to the goal. When the budget is spent, the system's block is appended
        (and broadcast) and the activation is disarmed.

        A drive runs between this process's turns, so a turn open in the log
        when it starts was left by a process that stopped mid-turn (a session
        has one writer; a goal driver holds the lease): it does not stop the
        first round, whose turn closes it as it opens (the step machine's
        ``start_turn`` does; a runner of another kind must too).
        """
        ended: list[DriveReport] = []
        for text, source in self._rounds(agent, limit, ended):
            runner.run_turn(text, source)
        (report,) = ended
        return replace(report, blocked_at=self._block_spent().seq) if report.stopped == "budget-spent" else report

    def _block_spent(self) -> GoalChanged:
        decided, decision = self._block_decider()
        return self._record(self.log.append_decided(decision), decided[-1])


class AsyncGoalService(_Goals[AsyncGoalLog, Awaitable[GoalChanged]]):
    """``GoalService`` for the asyncio runtime: the same decisions, each
    append awaited on the loop through ``log`` (an ``AsyncRuntime``'s
    ``goal_log``; with no thread over a native ``AsyncStore``, one thread
    hop per store call over a synchronous store it adapts)."""

    async def apply(self, agent: AgentHandle, request: GoalRequest) -> GoalChanged:
        """``GoalService.apply``, its append awaited."""
        decided, decision = self._decider(agent, request)
        return self._record(await self.log.append_decided(decision), decided[-1])

    async def _block_spent(self) -> GoalChanged:
        decided, decision = self._block_decider()
        return self._record(await self.log.append_decided(decision), decided[-1])

    async def drive_async(
        self, agent: AgentHandle, runner: AsyncRoundRunner, *, limit: int = 1_000
    ) -> DriveReport:
        """``GoalService.drive`` on the loop: each round an awaited turn of
        ``runner``, the budget block an awaited append; nothing runs in a
        thread."""
        ended: list[DriveReport] = []
        for text, source in self._rounds(agent, limit, ended):
            await runner.run_turn(text, source)
        (report,) = ended
        spent = report.stopped == "budget-spent"
        return replace(report, blocked_at=(await self._block_spent()).seq) if spent else report
