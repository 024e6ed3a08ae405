"""A session log under construction, for the conformance cases.

``LogBuilder`` appends events made by the kernel's own builders
(``kernel.goal.ops``, ``kernel.plan.events``, ``kernel.plan.mode``) and folds
each one with the strict session fold as it goes, so a prefix it builds is
valid by construction. ``raw`` appends a line that is not folded: the bad
event of an invalid case. ``corrupt_goal`` and ``corrupt_plan`` build a valid
change on a scratch copy and append it with some fields changed;
``replay_last`` appends a line that was valid in another log.

Times are ``1000 * seq`` unless given; ids and texts are fixed, so whatever
is built from here is byte-stable.
"""

from __future__ import annotations

import copy
from dataclasses import replace

from ...kernel import plan_events
from ...kernel.decisions import decide_plan_choice, decide_pre_step, decide_request_header
from ...kernel.goal import ops as goal_ops
from ...kernel.goal.values import DISARMED, BlockedReason, GoalRef
from ...kernel.log import (
    GOAL_CHANGE,
    PLAN_ARTIFACT,
    Draft,
    Event,
    GoalSource,
    number_drafts,
    turn_end,
    turn_start,
    user_message,
)
from ...kernel.payload import JSON, JSONObject
from ...kernel.plan.mode import PendingChoice
from ...kernel.plan.spec import PlanSpec, Todo
from ...kernel.session import SessionState, apply_session_event

__all__ = ["SPEC", "SPEC_2", "LogBuilder", "corrupt_goal", "corrupt_plan", "goal_round", "replay_last"]

SPEC = PlanSpec(
    goal="Add a config parser",
    steps=("Write the parser", "Test it"),
    constraints=("No new dependencies",),
    verify=("The test suite passes",),
    todos=(Todo("t1", "Write the parser"), Todo("t2", "Add tests")),
)
SPEC_2 = replace(SPEC, steps=(*SPEC.steps, "Document it"))


class LogBuilder:
    """A log under construction, folded as it grows."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.lines: list[dict[str, JSON]] = []
        self.state = SessionState()

    @property
    def seq(self) -> int:
        return len(self.lines) + 1

    @property
    def at(self) -> int:
        return 1000 * self.seq

    def append(self, event: Event) -> Event:
        self.state = apply_session_event(self.state, event)
        self.events.append(event)
        self.lines.append(line(event.seq, event.kind, event.at, copy.deepcopy(dict(event.payload))))
        return event

    def add(self, kind: str, payload: JSONObject) -> Event:
        return self.append(Event(self.seq, kind, self.at, payload))

    def put(self, draft: Draft) -> Event:
        """Append ``draft`` as the next event."""
        return self.append(draft.numbered(self.seq, self.at))

    def raw(self, kind: str, payload: JSON, *, seq: JSON = None, at: JSON = None) -> None:
        """Append a line without folding it: the case's bad event."""
        self.lines.append(line(self.seq if seq is None else seq, kind, self.at if at is None else at, payload))

    # -- turns, requests and plan mode
    def turn(self) -> LogBuilder:
        self.put(turn_start(self.state.turns.turn + 1))
        return self

    def end(self) -> LogBuilder:
        self.put(turn_end(self.state.turns.turn))
        return self

    def header(self) -> LogBuilder:
        self.put(decide_request_header(self.state, self.state.turns.step + 1))
        return self

    def mode(self, active: bool) -> LogBuilder:
        """Record a choice of plan mode ``active`` (a change): at once between
        turns, by the next pre-step inside one."""
        if self.state.turns.open:
            drafts = decide_pre_step(self.state, self.events, PendingChoice(active), "accepted").drafts
        else:
            drafts = decide_plan_choice(self.state, self.events, None, active).drafts
        assert drafts, "a choice that changes the recorded plan mode"
        for event in number_drafts(drafts, self.seq - 1, self.at):  # one append: one time
            self.append(event)
        return self

    # -- goals
    @property
    def goal(self) -> GoalRef:
        current = self.state.goal.current
        assert current is not None
        return current.ref

    def create(self, goal_id: str = "g1", max_rounds: int | None = None) -> LogBuilder:
        g = self.state.goal
        draft = goal_ops.create(g, goal_id, "Ship the parser", max_rounds, actor="user", at=self.at)
        self.append(draft.numbered(self.seq, self.at))
        return self

    def round(self, number: int | None = None) -> LogBuilder:
        current = self.state.goal.current
        assert current is not None
        number = number or current.rounds_started + 1
        self.put(user_message("Continue the goal.", _round(current.id, current.revision, number)))
        return self

    def op(self, name: str) -> LogBuilder:
        g, ref, seq, at = self.state.goal, self.goal, self.seq, self.at
        if name == "block":
            reason = BlockedReason("needs-review", "Waiting for a review")
            self.append(goal_ops.block(g, ref, reason, actor="model", at=at).numbered(seq, at))
        elif name == "resume":
            self.append(goal_ops.resume(g, ref, DISARMED, actor="user", at=at).numbered(seq, at))
        else:
            operation = {"pause": goal_ops.pause, "complete": goal_ops.complete, "clear": goal_ops.clear}[name]
            self.append(operation(g, ref, actor="user", at=at).numbered(seq, at))
        return self

    # -- plans
    def draft(self, plan_id: str = "p1", spec: PlanSpec = SPEC) -> LogBuilder:
        self.put(plan_events.draft_event(self.state, plan_id, spec, None))
        return self

    def plan(self, action: str) -> LogBuilder:
        s = self.state
        current = s.plan.current
        assert current is not None
        drafts = {
            "approve": lambda: plan_events.approve_event(s, current.ref),
            "start": lambda: plan_events.start_event(s, current.ref),
            "rewrite": lambda: plan_events.rewrite_event(s, SPEC_2, None),
            "todo": lambda: plan_events.todo_event(s, "t1", "done"),
            "verify": lambda: plan_events.verify_event(s),
            "verify-fail": lambda: plan_events.verify_fail_event(s, "a test failed"),
            "complete": lambda: plan_events.complete_event(s),
            "supersede": lambda: plan_events.supersede_event(s),
            "reject": lambda: plan_events.reject_event(s, current.ref, "Split step one"),
        }
        self.put(drafts[action]())
        return self

    def last_payload(self) -> dict[str, JSON]:
        """A deep copy of the last line's payload, to corrupt."""
        payload = copy.deepcopy(self.lines[-1]["payload"])
        assert isinstance(payload, dict)
        return payload


def line(seq: JSON, kind: str, at: JSON, payload: JSON) -> dict[str, JSON]:
    return {"seq": seq, "kind": kind, "at": at, "payload": payload}


def _round(goal_id: str, revision: int, number: int) -> GoalSource:
    return GoalSource("goal", goal_id, revision, number)


def goal_round(goal_id: str, revision: int, number: int) -> JSONObject:
    """The payload of round ``number`` of goal ``goal_id`` at ``revision``."""
    return user_message("Continue the goal.", _round(goal_id, revision, number)).payload


def corrupt_goal(log: LogBuilder, build: str, **changes: JSON) -> LogBuilder:
    """Build operation ``build`` on a scratch copy, then append it with
    ``changes`` to its payload (or to its goal, for the goal's own keys)."""
    scratch = LogBuilder()
    for event in log.events:
        scratch.append(event)
    scratch.op(build)
    payload = scratch.last_payload()
    goal = payload["goal"]
    assert isinstance(goal, dict)
    for key, value in changes.items():
        (goal if key in goal else payload)[key] = value
    log.raw(GOAL_CHANGE, payload)
    return log


def corrupt_plan(log: LogBuilder, action: str, **changes: JSON) -> LogBuilder:
    """Build ``action`` on a scratch copy, then append it with ``changes``."""
    scratch = LogBuilder()
    for event in log.events:
        scratch.append(event)
    if action == "draft":
        scratch.draft()
    else:
        scratch.plan(action)
    payload = scratch.last_payload()
    payload.update(changes)
    log.raw(PLAN_ARTIFACT, payload)
    return log


def replay_last(log: LogBuilder, donor: LogBuilder) -> LogBuilder:
    """``log`` followed by the last line of ``donor``, valid there but not here."""
    log.raw(PLAN_ARTIFACT, donor.last_payload())
    return log
