"""The goal service: the goal kernel put to work in one process.

Theory of operation
-------------------
The durable goal lives in the session log as ``goal/change`` events and
goal-attributed ``user/message`` rounds; the kernel decides every change
(``kernel.goal_ops``) and folds it (``kernel.goal_fold``). This service adds
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
  the goal (``budget_block``), which disarms it.

The service is bound to one live agent. Every call names the agent handle it
was given; a handle from a replaced agent raises ``StaleAgentError`` so an
out-of-date caller cannot change the goal.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from planfold.adapters.errors import AdapterError
from planfold.adapters.store.session_log import SessionLog
from planfold.kernel.goal import ops as goal_ops
from planfold.kernel.goal.continuation import (
    ContinueDecision,
    ContinueFacts,
    StopReason,
    budget_block,
    round_message,
    should_continue,
)
from planfold.kernel.goal.fold import GoalState
from planfold.kernel.goal.values import (
    DISARMED,
    Activation,
    BlockedReason,
    ClearChange,
    GoalOperation,
    GoalRef,
    GoalSnapshot,
    activation_after,
    read_goal_change,
    session_started,
)
from planfold.kernel.log import Event
from planfold.kernel.payload import JSONObject
from planfold.kernel.session import SessionState

__all__ = [
    "AgentHandle",
    "DriveReport",
    "GoalChanged",
    "GoalListener",
    "GoalService",
    "GoalView",
    "ListenerFailure",
    "RoundRunner",
    "StaleAgentError",
]


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

    def run_turn(self, text: str, source: JSONObject | None = None) -> object: ...


@dataclass(frozen=True, slots=True)
class DriveReport:
    """What ``drive`` did: the rounds it ran and why it stopped (``None``
    when it stopped at its own ``limit``); ``blocked_at`` is the seq of the
    budget block it appended, if any."""

    rounds: tuple[int, ...]
    stopped: StopReason | None
    blocked_at: int | None = None


_instances = itertools.count(1)


@dataclass
class GoalService:
    """Goal operations for one session and one live agent."""

    log: SessionLog
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

    # -- operations -------------------------------------------------------

    def _apply(
        self, operation: GoalOperation, decide: Callable[[GoalState, int, int], Event]
    ) -> GoalChanged:
        def decision(state: SessionState, _: Sequence[Event], seq: int, at: int) -> Sequence[Event]:
            return (decide(state.goal, seq, at),)

        (event,) = self.log.append_decided(decision)
        change = read_goal_change(event.payload)
        self.activation = activation_after(self.activation, operation)
        if isinstance(change, ClearChange):
            notice = GoalChanged(self.agent_id, operation, change.cleared, event.seq, None)
        else:
            notice = GoalChanged(self.agent_id, operation, change.goal.ref, event.seq, change.goal)
        self._notify(notice)
        return notice

    def _ref(self) -> GoalRef:
        current = self.state().current
        return GoalRef("", 0) if current is None else current.ref

    def create(
        self, agent: AgentHandle, objective: str, max_rounds: int | None = None
    ) -> GoalChanged:
        self._check(agent)
        goal_id = self.new_goal_id()
        return self._apply(
            "create",
            lambda s, seq, at: goal_ops.create(
                s, goal_id, objective, max_rounds, actor="user", seq=seq, at=at
            ),
        )

    def edit(
        self,
        agent: AgentHandle,
        ref: GoalRef | None = None,
        *,
        objective: str | None = None,
        max_rounds: int | None = None,
    ) -> GoalChanged:
        self._check(agent)
        target = ref or self._ref()
        return self._apply(
            "edit",
            lambda s, seq, at: goal_ops.edit(
                s, target, objective=objective, max_rounds=max_rounds, actor="user", seq=seq, at=at
            ),
        )

    def pause(self, agent: AgentHandle, ref: GoalRef | None = None) -> GoalChanged:
        self._check(agent)
        target = ref or self._ref()
        return self._apply("pause", lambda s, seq, at: goal_ops.pause(s, target, actor="user", seq=seq, at=at))

    def resume(self, agent: AgentHandle, ref: GoalRef | None = None) -> GoalChanged:
        """A human's resume: re-arms this process (after a restart too)."""
        self._check(agent)
        target = ref or self._ref()
        activation = self.activation
        return self._apply(
            "resume",
            lambda s, seq, at: goal_ops.resume(s, target, activation, actor="user", seq=seq, at=at),
        )

    def complete(
        self, agent: AgentHandle, ref: GoalRef | None = None, *, actor: goal_ops.Actor = "user"
    ) -> GoalChanged:
        self._check(agent)
        target = ref or self._ref()
        return self._apply(
            "complete", lambda s, seq, at: goal_ops.complete(s, target, actor=actor, seq=seq, at=at)
        )

    def block(
        self,
        agent: AgentHandle,
        reason: BlockedReason,
        ref: GoalRef | None = None,
        *,
        actor: goal_ops.Actor = "user",
    ) -> GoalChanged:
        self._check(agent)
        target = ref or self._ref()
        return self._apply(
            "block", lambda s, seq, at: goal_ops.block(s, target, reason, actor=actor, seq=seq, at=at)
        )

    def clear(self, agent: AgentHandle, ref: GoalRef | None = None) -> GoalChanged:
        self._check(agent)
        target = ref or self._ref()
        return self._apply("clear", lambda s, seq, at: goal_ops.clear(s, target, actor="user", seq=seq, at=at))

    # -- the round driver -------------------------------------------------

    def decide(self) -> ContinueDecision:
        """Whether this process may start the next round now."""
        state = self.log.state
        facts = ContinueFacts(plan_mode=state.plan_mode, turn_open=state.turns.open)
        return should_continue(self.state().current, self.activation, facts)

    def drive(
        self,
        agent: AgentHandle,
        runner: RoundRunner,
        *,
        text: Callable[[int], str] = lambda n: f"Continue the goal (round {n}).",
        limit: int = 1_000,
    ) -> DriveReport:
        """Run goal rounds until the kernel says stop or ``limit`` rounds ran.

        Each round is one turn of ``runner`` whose first message is attributed
        to the goal. When the budget is spent, the system's block is appended
        (and broadcast) and the activation is disarmed.
        """
        self._check(agent)
        rounds: list[int] = []
        while len(rounds) < limit:
            decision = self.decide()
            if not decision.proceed:
                blocked_at = self._block_spent() if decision.reason == "budget-spent" else None
                return DriveReport(tuple(rounds), decision.reason, blocked_at)
            number = decision.next_round or 0
            message = round_message(self.state(), text(number), seq=0, at=0)
            source = message.payload["source"]
            assert isinstance(source, dict)
            runner.run_turn(text(number), source)
            rounds.append(number)
        return DriveReport(tuple(rounds), None)

    def _block_spent(self) -> int | None:
        def decide(state: GoalState, seq: int, at: int) -> Event:
            event = budget_block(state, seq=seq, at=at)
            if event is None:
                raise goal_ops.GoalOperationError(
                    "the goal's budget is not spent", code="invalid-transition",
                    operation="block", current=None if state.current is None else state.current.ref,
                )
            return event

        return self._apply("block", decide).seq
