"""The conformance cases: small session logs, valid and invalid, built with
the kernel's own builders.

Theory of operation
-------------------
Each case is a log (event lines as JSON objects) and what it is meant to
show: a valid history, or a history whose last line breaks one named replay
rule of one machine (``machine`` names the kernel module family that owns the
rule: ``log`` for the envelope and turns, ``session``, ``plan_mode``,
``goal``, ``plan``, ``tools``). A valid prefix is built with the same
builders the runtime uses (``kernel.goal_ops``, ``kernel.plan_events``,
``kernel.plan_mode``, ``kernel.tool_events``) and folded as it grows, so a
prefix cannot be wrong by accident; the bad line is then written by hand.
``adapters.vectors`` folds every case again, checks that the fold agrees with
the declared rule and position, and writes the files.

Times are ``1000 * seq`` unless a case is about time; ids and texts are
fixed, so the output is byte-stable.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, replace

from kernel import goal_ops, plan_events
from kernel.goal import DISARMED, BlockedReason, GoalRef
from kernel.log import (
    GOAL_CHANGE,
    PLAN_ARTIFACT,
    PLAN_MODE,
    REQUEST_HEADER,
    TOOL_CALL,
    TOOL_REFUSED,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
    Event,
)
from kernel.payload import JSON, JSONObject
from kernel.plan_mode import choice_events
from kernel.plan_spec import PlanSpec, Todo
from kernel.session import SessionState, apply_session_event
from kernel.tool_events import tool_result_payload

__all__ = ["Case", "cases"]


@dataclass(frozen=True, slots=True)
class Case:
    """One conformance case. ``rule`` and ``position`` are ``None`` for a
    valid log; otherwise the fold must stop at seq ``position`` with ``rule``."""

    name: str
    machine: str
    description: str
    lines: tuple[Mapping[str, JSON], ...]
    rule: str | None = None
    position: int | None = None


SPEC = PlanSpec(
    goal="Add a config parser",
    steps=("Write the parser", "Test it"),
    constraints=("No new dependencies",),
    verify=("The test suite passes",),
    todos=(Todo("t1", "Write the parser"), Todo("t2", "Add tests")),
)
SPEC_2 = replace(SPEC, steps=(*SPEC.steps, "Document it"))


class _Log:
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
        self.lines.append(_line(event.seq, event.kind, event.at, copy.deepcopy(dict(event.payload))))
        return event

    def add(self, kind: str, payload: JSONObject) -> Event:
        return self.append(Event(self.seq, kind, self.at, payload))

    def raw(self, kind: str, payload: JSON, *, seq: JSON = None, at: JSON = None) -> None:
        """Append a line without folding it: the case's bad event."""
        self.lines.append(_line(self.seq if seq is None else seq, kind, self.at if at is None else at, payload))

    # -- turns, requests and plan mode
    def turn(self) -> _Log:
        self.add(TURN_START, {"turn": self.state.turns.turn + 1})
        return self

    def end(self) -> _Log:
        self.add(TURN_END, {"turn": self.state.turns.turn})
        return self

    def header(self) -> _Log:
        turns = self.state.turns
        self.add(REQUEST_HEADER, {"turn": turns.turn, "step": turns.step + 1, "plan_mode": self.state.plan_mode})
        return self

    def mode(self, active: bool) -> _Log:
        for event in choice_events(self.events, active, self.at):
            self.append(event)
        return self

    # -- goals
    @property
    def goal(self) -> GoalRef:
        current = self.state.goal.current
        assert current is not None
        return current.ref

    def create(self, goal_id: str = "g1", max_rounds: int | None = None) -> _Log:
        g = self.state.goal
        self.append(goal_ops.create(g, goal_id, "Ship the parser", max_rounds, actor="user", seq=self.seq, at=self.at))
        return self

    def round(self, number: int | None = None) -> _Log:
        current = self.state.goal.current
        assert current is not None
        self.add(USER_MESSAGE, _round(current.id, current.revision, number or current.rounds_started + 1))
        return self

    def op(self, name: str) -> _Log:
        g, ref, seq, at = self.state.goal, self.goal, self.seq, self.at
        if name == "block":
            reason = BlockedReason("needs-review", "Waiting for a review")
            self.append(goal_ops.block(g, ref, reason, actor="model", seq=seq, at=at))
        elif name == "resume":
            self.append(goal_ops.resume(g, ref, DISARMED, actor="user", seq=seq, at=at))
        else:
            operation = {"pause": goal_ops.pause, "complete": goal_ops.complete, "clear": goal_ops.clear}[name]
            self.append(operation(g, ref, actor="user", seq=seq, at=at))
        return self

    # -- plans
    def draft(self, plan_id: str = "p1", spec: PlanSpec = SPEC) -> _Log:
        self.append(plan_events.draft_event(self.state, plan_id, spec, None, self.at))
        return self

    def plan(self, action: str) -> _Log:
        s, at = self.state, self.at
        current = s.plan.current
        assert current is not None
        events = {
            "approve": lambda: plan_events.approve_event(s, current.ref, at),
            "start": lambda: plan_events.start_event(s, current.ref, at),
            "rewrite": lambda: plan_events.rewrite_event(s, SPEC_2, None, at),
            "todo": lambda: plan_events.todo_event(s, "t1", "done", at),
            "verify": lambda: plan_events.verify_event(s, at),
            "verify-fail": lambda: plan_events.verify_fail_event(s, "a test failed", at),
            "complete": lambda: plan_events.complete_event(s, at),
            "supersede": lambda: plan_events.supersede_event(s, at),
            "reject": lambda: plan_events.reject_event(s, current.ref, "Split step one", at),
        }
        self.append(events[action]())
        return self

    def last_payload(self) -> dict[str, JSON]:
        """A deep copy of the last line's payload, to corrupt."""
        payload = copy.deepcopy(self.lines[-1]["payload"])
        assert isinstance(payload, dict)
        return payload


def _line(seq: JSON, kind: str, at: JSON, payload: JSON) -> dict[str, JSON]:
    return {"seq": seq, "kind": kind, "at": at, "payload": payload}


def _round(goal_id: str, revision: int, number: int) -> JSONObject:
    return {"text": "Continue the goal.", "source": {"type": "goal", "goal_id": goal_id, "revision": revision,
                                                    "round": number}}


def _valid(name: str, description: str, log: _Log) -> Case:
    return Case(f"valid.{name}", "valid", description, tuple(log.lines))


def _bad(machine: str, name: str, rule: str, description: str, log: _Log, *, position: int | None = None) -> Case:
    seq = log.lines[-1]["seq"]
    where = position if position is not None else seq if isinstance(seq, int) else len(log.lines)
    return Case(f"{machine}.{name}", machine, description, tuple(log.lines), rule, where)


def _goal_corrupt(log: _Log, build: str, **changes: JSON) -> _Log:
    """Build operation ``build`` on a scratch copy, then append it with
    ``changes`` to its payload (or to its goal, for the goal's own keys)."""
    scratch = _Log()
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


def _plan_corrupt(log: _Log, action: str, **changes: JSON) -> _Log:
    """Build ``action`` on a scratch copy, then append it with ``changes``."""
    scratch = _Log()
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


def _executing() -> _Log:
    return _Log().mode(True).draft().plan("approve").mode(False).plan("start")


def _valid_cases() -> list[Case]:
    plan_mode = _Log().turn().header().mode(True).header().end().mode(False).mode(True).turn().header().end()
    lifecycle = (
        _Log().mode(True).draft().plan("reject").plan("rewrite").plan("approve").mode(False).plan("start")
        .plan("todo").plan("verify").plan("verify-fail").plan("verify").plan("complete")
    )
    bootstrap = _Log()
    bootstrap.append(plan_events.bootstrap_event(bootstrap.state, "p1", SPEC, None, bootstrap.at))
    bootstrap.plan("start").plan("rewrite")
    goals = _Log().create("g1", 3).round().round().op("pause").op("resume").round().op("block")
    cleared = _Log().create().op("complete").op("clear").create("g2")
    tools = _Log().turn().header()
    tools.add(TOOL_CALL, {"call_id": "c1", "tool": "read_file", "arguments": {"path": "README.md"}})
    tools.add("tool/result", tool_result_payload("c1", "read_file", ok=True, output="# planfold"))
    tools.add(TOOL_CALL, {"call_id": "c2", "tool": "write_file", "arguments": {"path": "x", "text": ""}})
    notice = {"call_id": "c2", "tool": "write_file", "code": "write-in-read-only-phase",
              "reason": "write_file writes, and build_bootstrap is read-only", "phase": "build_bootstrap"}
    tools.add(TOOL_REFUSED, notice)
    tools.add("tool/warning", {**notice, "hint": "Write a minimal plan first."})
    tools.end()
    return [
        _valid("empty", "An empty log: an old or new session, build mode, no plan, no goal.", _Log()),
        _valid("plan-mode", "Plan mode switched inside and between turns, with notices.", plan_mode),
        _valid("plan-lifecycle", "A plan drafted, rejected, rewritten, approved, run, verified, completed.",
               lifecycle),
        _valid("plan-bootstrap", "An implicit plan started, then rewritten during execution.", bootstrap),
        _valid("goal-lifecycle", "A goal with rounds, a pause, a resume and a block.", goals),
        _valid("goal-cleared", "A goal completed and cleared, then a new goal.", cleared),
        _valid("tools", "A turn with a tool call and result, a refusal and a warning.", tools),
    ]


def _log_cases() -> list[Case]:
    out = []
    log = _Log().turn()
    log.raw(TURN_END, {"turn": 1}, seq=3)
    out.append(_bad("log", "seq-gap", "seq-gap", "The second event has seq 3.", log))
    log = _Log()
    log.raw(TURN_START, {"turn": 1}, seq=2)
    out.append(_bad("log", "seq-gap-first", "seq-gap", "The first event has seq 2.", log))
    log = _Log().turn()
    log.raw(TURN_END, {"turn": 1}, seq="2")
    out.append(_bad("log", "seq-gap-string", "seq-gap", "A seq written as a string.", log, position=2))
    log = _Log().turn()
    log.raw(TURN_END, {"turn": 1}, seq=2.0)
    out.append(_bad("log", "seq-gap-fraction", "seq-gap", "A seq written as 2.0 is not an integer.", log, position=2))
    log = _Log().turn()
    log.raw(TURN_END, {"turn": 1}, at=999)
    out.append(_bad("log", "time-regressed", "time-regressed", "at goes backwards.", log))
    log = _Log().turn()
    log.raw("plan/archive", {})
    out.append(_bad("log", "unknown-kind", "unknown-kind", "A kind no machine knows.", log))
    log = _Log()
    log.raw(TURN_START, {"turn": 1}, at=-1)
    out.append(_bad("log", "malformed-payload-at", "malformed-payload", "A negative at.", log))
    log = _Log()
    log.raw(TURN_START, {"turn": True})
    out.append(_bad("log", "malformed-payload", "malformed-payload", "A turn number that is a boolean.", log))
    log = _Log().turn()
    log.raw(TURN_START, {"turn": 2})
    out.append(_bad("log", "transition-not-allowed", "transition-not-allowed", "A turn opened twice.", log))
    log = _Log().turn().end()
    log.raw(TURN_END, {"turn": 1})
    out.append(_bad("log", "transition-not-allowed-end", "transition-not-allowed", "A closed turn closed.", log))
    log = _Log()
    log.raw(REQUEST_HEADER, {"turn": 1, "step": 1, "plan_mode": False})
    out.append(_bad("log", "transition-not-allowed-header", "transition-not-allowed",
                    "A request header outside a turn.", log))
    log = _Log().turn().header()
    log.raw(REQUEST_HEADER, {"turn": 1, "step": 3, "plan_mode": False})
    out.append(_bad("log", "transition-not-allowed-step", "transition-not-allowed", "A step skipped.", log))
    return out


def _session_cases() -> list[Case]:
    log = _Log().turn().mode(True)
    log.raw(REQUEST_HEADER, {"turn": 1, "step": 1, "plan_mode": False})
    header = _bad("session", "header-mismatch", "header-mismatch",
                  "A request header that disagrees with the plan-mode fold.", log)
    log = _Log()
    log.raw(USER_MESSAGE, {"text": "hi", "source": {"type": "plugin", "plugin": ""}})
    message = _bad("session", "malformed-payload", "malformed-payload", "A message from a nameless plugin.", log)
    log = _Log()
    log.raw(PLAN_MODE, {"active": 1})
    mode = _bad("plan_mode", "malformed-payload", "malformed-payload", "plan/mode active is 1, not a boolean.", log)
    log2 = _Log()
    log2.raw(TOOL_CALL, {"call_id": "c1", "tool": "read_file", "arguments": {}})
    log3 = _Log().turn()
    log3.raw(TOOL_REFUSED, {"call_id": "c1", "tool": "x", "code": "Bad Code", "reason": "no", "phase": "plan"})
    return [
        header,
        message,
        mode,
        _bad("tools", "tool-outside-turn", "tool-outside-turn", "A tool call outside any turn.", log2),
        _bad("tools", "malformed-payload", "malformed-payload", "A refusal whose code is not kebab-case.", log3),
    ]


def _goal_cases() -> list[Case]:
    def g(name: str, rule: str, description: str, log: _Log) -> Case:
        return _bad("goal", name, rule, description, log)

    out = []
    log = _Log()
    log.raw(GOAL_CHANGE, {"version": 1, "operation": "create"})
    out.append(g("malformed-payload", "malformed-payload", "A create without a goal.", log))
    out.append(g("unknown-version", "unknown-version", "Version 2.",
                 _goal_corrupt(_Log().create(), "pause", version=2)))
    out.append(g("unknown-operation", "unknown-operation", "An operation goals do not have.",
                 _goal_corrupt(_Log().create(), "pause", operation="archive")))
    out.append(g("goal-mismatch", "goal-mismatch", "A pause naming another goal.",
                 _goal_corrupt(_Log().create(), "pause", id="g9")))
    log = _Log().create()
    log.raw(USER_MESSAGE, _round("g9", 1, 1))
    out.append(g("goal-mismatch-round", "goal-mismatch", "A round naming another goal.", log))
    log = _Log().create().op("clear")
    log.raw(GOAL_CHANGE, _Log().create().last_payload() | {"created_at": log.at, "updated_at": log.at})
    out.append(g("id-reused", "id-reused", "A create reusing a cleared goal's id.", log))
    out.append(g("stale-revision", "stale-revision", "A pause at the current revision.",
                 _goal_corrupt(_Log().create(), "pause", revision=1)))
    log = _Log().create().op("pause").op("resume")
    log.raw(USER_MESSAGE, _round("g1", 1, 1))
    out.append(g("stale-revision-round", "stale-revision", "A round attributed to an old revision.", log))
    out.append(g("revision-gap", "revision-gap", "A pause skipping a revision.",
                 _goal_corrupt(_Log().create(), "pause", revision=3)))
    out.append(g("transition-not-allowed", "transition-not-allowed", "A paused goal paused again.",
                 _goal_corrupt(_Log().create().op("pause"), "resume", operation="pause", phase="paused")))
    out.append(g("rounds-mismatch", "rounds-mismatch", "A pause that changes the round count.",
                 _goal_corrupt(_Log().create(), "pause", rounds_started=5)))
    log = _Log().create()
    out.append(g("timestamp-mismatch", "timestamp-mismatch", "updated_at is not the event's at.",
                 _goal_corrupt(log, "pause", updated_at=log.at + 1)))
    log = _Log().create()
    log.raw(USER_MESSAGE, _round("g1", 1, 0))
    out.append(g("round-not-positive", "round-not-positive", "Round 0.", log))
    log = _Log().create().op("pause")
    log.raw(USER_MESSAGE, _round("g1", 2, 1))
    out.append(g("round-while-stopped", "round-while-stopped", "A round of a paused goal.", log))
    log = _Log().create("g1", 1).round()
    log.raw(USER_MESSAGE, _round("g1", 1, 2))
    out.append(g("round-over-cap", "round-over-cap", "Round 2 of a goal capped at 1.", log))
    log = _Log().create()
    log.raw(USER_MESSAGE, _round("g1", 1, 2))
    out.append(g("round-gap", "round-gap", "Round 2 before round 1.", log))
    return out


def _plan_cases() -> list[Case]:
    def p(name: str, rule: str, description: str, log: _Log) -> Case:
        return _bad("plan", name, rule, description, log)

    bad_hash = "0" * 64
    return [
        p("malformed-payload", "malformed-payload", "A draft without a summary.",
          _plan_corrupt(_Log().mode(True), "draft", summary=None)),
        p("transition-not-allowed", "transition-not-allowed", "An approval with no plan.",
          _replay(_Log(), _Log().mode(True).draft().plan("approve"))),
        p("transition-not-allowed-verify", "transition-not-allowed", "Verify entered twice.",
          _replay(_executing().plan("verify"), _executing().plan("verify"))),
        p("wrong-mode", "wrong-mode", "A draft recorded in build mode.", _replay(_Log(), _Log().mode(True).draft())),
        p("id-reused", "id-reused", "A new draft reusing a superseded plan's id.",
          _replay(_Log().mode(True).draft().plan("supersede"), _Log().mode(True).draft())),
        p("plan-mismatch", "plan-mismatch", "A rejection naming another plan.",
          _plan_corrupt(_Log().mode(True).draft(), "reject", plan_id="p2")),
        p("stale-revision", "stale-revision", "A rejection of an older revision.",
          _plan_corrupt(_Log().mode(True).draft().plan("rewrite"), "reject", revision=1)),
        p("revision-gap", "revision-gap", "A rewrite skipping a revision.",
          _plan_corrupt(_Log().mode(True).draft(), "rewrite", revision=3)),
        p("approval-mismatch", "approval-mismatch", "An approval of other content.",
          _plan_corrupt(_Log().mode(True).draft(), "approve", spec_hash=bad_hash)),
        p("hash-mismatch", "hash-mismatch", "A rejection of other content.",
          _plan_corrupt(_Log().mode(True).draft(), "reject", spec_hash=bad_hash)),
        p("invalid-spec", "invalid-spec", "A draft whose plan has no steps.", _invalid_spec()),
        p("invalid-summary", "invalid-summary", "A runtime summary that is not the runtime's own.",
          _invalid_summary()),
        p("rewrite-without-change", "rewrite-without-change", "A rewrite that changes nothing.", _same_rewrite()),
        p("unknown-todo", "unknown-todo", "Progress on a todo the plan does not have.",
          _plan_corrupt(_executing(), "todo", todo_id="t9")),
        p("todo-unchanged", "todo-unchanged", "Progress that changes nothing.",
          _plan_corrupt(_executing(), "todo", status="pending")),
    ]


def _replay(log: _Log, donor: _Log) -> _Log:
    """``log`` followed by the last line of ``donor``, valid there but not here."""
    log.raw(PLAN_ARTIFACT, donor.last_payload())
    return log


def _same_rewrite() -> _Log:
    log = _Log().mode(True).draft()
    draft = log.last_payload()
    payload = _Log().mode(True).draft().plan("rewrite").last_payload()
    payload.update(spec=draft["spec"], summary=draft["summary"])
    log.raw(PLAN_ARTIFACT, payload)
    return log


def _invalid_spec() -> _Log:
    log = _Log().mode(True)
    payload = _Log().mode(True).draft().last_payload()
    spec, summary = payload["spec"], payload["summary"]
    assert isinstance(spec, dict) and isinstance(summary, dict)
    spec["steps"], summary["key_steps"] = [], []
    log.raw(PLAN_ARTIFACT, payload)
    return log


def _invalid_summary() -> _Log:
    log = _Log().mode(True)
    payload = _Log().mode(True).draft().last_payload()
    summary = payload["summary"]
    assert isinstance(summary, dict)
    summary["goal"] = "Something else"
    log.raw(PLAN_ARTIFACT, payload)
    return log


def cases() -> tuple[Case, ...]:
    """Every case, sorted by name."""
    found = [*_valid_cases(), *_log_cases(), *_session_cases(), *_goal_cases(), *_plan_cases()]
    return tuple(sorted(found, key=lambda case: case.name))
