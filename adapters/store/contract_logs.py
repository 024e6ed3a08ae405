"""Valid session logs for testing stores: the events of the published
contract suite (``adapters.store.contract``) and of planfold's own storage
tests.

Theory of operation
-------------------
``LogBuilder`` grows a log by *moves* (a turn, a plan-mode flip, a plan
action, a goal operation, ...); each move asks the kernel to decide and fold
its events, and a move the machines refuse right now appends nothing, so
every builder holds a log that strict replay accepts. ``FULL_SCRIPT`` reaches
every machine; ``logs()`` draws builders from random moves. ``event_at(seq)``
is the event at ``seq`` of an endless valid log of turns, messages and
plan-mode flips: a pure function of its seq, so writers that race or die can
never disagree on content.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import cast

from hypothesis import strategies as st

from ...kernel.errors import KernelError
from ...kernel.goal import ops as goal_ops
from ...kernel.goal.values import ARMED, BlockedReason
from ...kernel.log import (
    ASSISTANT_MESSAGE,
    PLAN_ARTIFACT,
    PLAN_MODE,
    REQUEST_HEADER,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
    Event,
)
from ...kernel.payload import JSONObject
from ...kernel.plan.payload import PlanAction, PlanActionName, plan_action_payload
from ...kernel.plan.spec import OpenQuestion, PlanScope, PlanSpec, Todo, spec_hash
from ...kernel.plan.views import build_summary_view
from ...kernel.session import SessionState, apply_session_event

__all__ = ["FULL_SCRIPT", "MOVES", "LogBuilder", "batch_after", "build_log", "event_at", "logs"]


def event_at(seq: int) -> Event:
    """The event at ``seq`` in an endless valid log (turn, message, plan-mode
    flip, turn end), so racing or dying writers can never disagree on content."""
    n, phase = divmod(seq - 1, 4)
    kind, payload = (
        (TURN_START, {"turn": n + 1}),
        (USER_MESSAGE, {"text": f"message {seq}", "source": None}),
        (PLAN_MODE, {"active": n % 2 == 0}),
        (TURN_END, {"turn": n + 1}),
    )[phase]
    return Event(seq, kind, seq * 10, payload)


def batch_after(head: int, size: int) -> list[Event]:
    """The ``size`` events that follow seq ``head``."""
    return [event_at(head + i) for i in range(1, size + 1)]


@dataclass
class LogBuilder:
    """A log under construction; every move either appends valid events or,
    when the machines do not allow it right now, appends nothing."""

    events: list[Event] = field(default_factory=list)
    state: SessionState = field(default_factory=SessionState)
    clock: int = 1  # so that an event at 0 always goes back in time
    plans: int = 0
    goals: int = 0

    def _try(self, make: Callable[[int, int], Sequence[Event]], dt: int = 1) -> bool:
        seq, at = self.state.last_seq + 1, self.clock + dt
        try:
            new = list(make(seq, at))
            state = self.state
            for event in new:
                state = apply_session_event(state, event)
        except KernelError:
            return False
        self.events += new
        self.state, self.clock = state, max(at, self.clock)
        return True

    def prefix(self, at: int) -> LogBuilder:
        """A builder holding the first ``at`` events (a fork's log), whose
        later moves make fresh plan and goal ids as this one's would."""
        events = self.events[:at]
        state = SessionState()
        for event in events:
            state = apply_session_event(state, event)
        return LogBuilder(list(events), state, self.clock, self.plans, self.goals)

    def turn(self, text: str = "hello") -> bool:
        """A whole turn; a turn left open (a fork's prefix may end inside
        one) ends first, as a runtime closes a stopped process's turn."""
        n = self.state.turns.turn + 1
        mode = self.state.plan_mode
        closing: list[tuple[str, JSONObject]] = [(TURN_END, {"turn": n - 1})] if self.state.turns.open else []
        kinds: list[tuple[str, JSONObject]] = [
            *closing,
            (TURN_START, {"turn": n}),
            (REQUEST_HEADER, {"turn": n, "step": 1, "plan_mode": mode}),
            (USER_MESSAGE, {"text": text, "source": None}),
            (ASSISTANT_MESSAGE, {"text": text[::-1], "source": None}),
            (TURN_END, {"turn": n}),
        ]
        return self._try(lambda s, at: [Event(s + i, kind, at, payload) for i, (kind, payload) in enumerate(kinds)])

    def plugin_note(self, text: str = "note") -> bool:
        source = {"type": "plugin", "plugin": "lint"}
        return self._try(lambda s, at: [Event(s, USER_MESSAGE, at, {"text": text, "source": source})], dt=0)

    def mode(self) -> bool:
        active = not self.state.plan_mode
        return self._try(lambda s, at: [Event(s, PLAN_MODE, at, {"active": active})])

    def _plan(self, act: PlanAction) -> bool:
        return self._try(lambda s, at: [Event(s, PLAN_ARTIFACT, at, plan_action_payload(act))])

    def new_plan(self, goal: str = "ship it") -> bool:
        self.plans += 1
        spec = PlanSpec(
            goal=goal,
            steps=("read", "write"),
            constraints=("no new deps",),
            verify=("tests pass",),
            todos=(Todo("t1", "first"), Todo("t2", "second", "in_progress")),
            open_questions=(OpenQuestion("which name?"),),
            scope=PlanScope(("src/",), ("write",)) if self.plans % 2 else None,
        )
        action: PlanActionName = "draft" if self.state.plan_mode else "bootstrap"
        act = PlanAction(action, f"p{self.plans}", 1, spec, build_summary_view(spec), "runtime", ())
        return self._plan(act)

    def plan_step(self, action: PlanActionName) -> bool:
        current = self.state.plan.current
        if current is None:
            return False
        base = PlanAction("approve", current.id, current.revision)
        h = spec_hash(current.spec)
        if action == "rewrite":
            spec = replace(current.spec, goal=current.spec.goal + "!")
            act = PlanAction("rewrite", current.id, current.revision + 1, spec, build_summary_view(spec), "runtime", ())
        elif action in ("approve", "start"):
            act = replace(base, action=action, spec_hash=h)
        elif action == "todo":
            act = replace(base, action="todo", todo_id="t1", todo_status="done")
        elif action == "supersede":
            act = replace(base, action="supersede", note="replaced")
        else:
            act = replace(base, action=action)
        return self._plan(act)

    def goal(self, operation: str) -> bool:
        state = self.state.goal
        ref = None if state.current is None else state.current.ref

        def make(s: int, at: int) -> list[Event]:
            if operation == "create":
                self.goals += 1
                made = goal_ops.create(state, f"g{self.goals}", "finish the work", 8, actor="user", at=at)
                return [made.numbered(s, at)]
            if ref is None:
                raise KernelError("no goal")
            if operation == "block":
                reason = BlockedReason("needs-input", "waiting for the user")
                return [goal_ops.block(state, ref, reason, actor="user", at=at).numbered(s, at)]
            if operation == "resume":
                return [goal_ops.resume(state, ref, ARMED, actor="user", at=at).numbered(s, at)]
            op = getattr(goal_ops, operation)
            return [op(state, ref, actor="user", at=at).numbered(s, at)]

        return self._try(make)

    def apply(self, move: str) -> bool:
        if move in ("turn", "plugin_note", "mode", "new_plan"):
            return bool(getattr(self, move)())
        kind, _, name = move.partition(":")
        return self.plan_step(cast(PlanActionName, name)) if kind == "plan" else self.goal(name)


MOVES: tuple[str, ...] = (
    "turn",
    "plugin_note",
    "mode",
    "new_plan",
    *(f"plan:{a}" for a in ("approve", "start", "todo", "verify", "complete", "rewrite", "supersede")),
    *(f"goal:{o}" for o in ("create", "pause", "resume", "block", "complete", "clear")),
)

#: A script that reaches every machine: plan mode, a drafted, approved,
#: executed and completed plan, a goal, turns and a plugin note.
FULL_SCRIPT: tuple[str, ...] = (
    "turn", "mode", "new_plan", "plan:approve", "turn", "mode", "plan:start", "plan:todo",
    "goal:create", "turn", "plugin_note", "goal:pause", "plan:verify", "plan:complete", "goal:resume",
    "new_plan", "plan:rewrite", "turn",
)  # fmt: skip


def build_log(moves: Sequence[str]) -> LogBuilder:
    builder = LogBuilder()
    for move in moves:
        builder.apply(move)
    return builder


def logs(max_moves: int = 25) -> st.SearchStrategy[LogBuilder]:
    """Valid logs built from random moves (moves the machines refuse are skipped)."""
    return st.lists(st.sampled_from(MOVES), max_size=max_moves).map(build_log)
