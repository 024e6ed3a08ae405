"""The conformance cases: small session logs, valid and invalid, built with
the kernel's own builders.

Theory of operation
-------------------
Each case is a log (event lines as JSON objects) and what it is meant to
show: a valid history, or a history whose last line breaks one named replay
rule of one machine (``machine`` names the kernel module family that owns the
rule: ``log`` for the envelope and turns, ``session``, ``plan_mode``,
``goal``, ``plan``, ``tools``). A valid prefix is built with the kernel's own
builders and folded as it grows (``adapters.specgen.vector_log``), so a prefix cannot
be wrong by accident; the bad line is then written by hand.
``adapters.specgen.vectors`` folds every case again, checks that the fold agrees with
the declared rule and position, and writes the files.

Times are ``1000 * seq`` unless a case is about time; ids and texts are
fixed, so the output is byte-stable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from ...kernel import plan_events
from ...kernel.log import (
    ASSISTANT_MESSAGE,
    GOAL_CHANGE,
    PLAN_ARTIFACT,
    PLAN_MODE,
    REQUEST_HEADER,
    TOOL_CALL,
    TOOL_REFUSED,
    TURN_END,
    TURN_START,
    USAGE_VERSION,
    USER_MESSAGE,
    ModelUsage,
    assistant_message,
)
from ...kernel.payload import JSON
from ...kernel.tools.events import tool_call_payload, tool_notice_payload, tool_result_payload
from ...kernel.tools.gate import Refused
from ...kernel.tools.spec import ToolCall
from .vector_log import SPEC, LogBuilder, corrupt_goal, corrupt_plan, goal_round, replay_last

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


def _valid(name: str, description: str, log: LogBuilder) -> Case:
    return Case(f"valid.{name}", "valid", description, tuple(log.lines))


def _bad(machine: str, name: str, rule: str, description: str, log: LogBuilder, *, position: int | None = None) -> Case:
    seq = log.lines[-1]["seq"]
    where = position if position is not None else seq if isinstance(seq, int) else len(log.lines)
    return Case(f"{machine}.{name}", machine, description, tuple(log.lines), rule, where)


def _executing() -> LogBuilder:
    return LogBuilder().mode(True).draft().plan("approve").mode(False).plan("start")


def _valid_cases() -> list[Case]:
    plan_mode = LogBuilder().turn().header().mode(True).header().end().mode(False).mode(True).turn().header().end()
    lifecycle = (
        LogBuilder().mode(True).draft().plan("reject").plan("rewrite").plan("approve").mode(False).plan("start")
        .plan("todo").plan("verify").plan("verify-fail").plan("verify").plan("complete")
    )
    bootstrap = LogBuilder()
    bootstrap.put(plan_events.bootstrap_event(bootstrap.state, "p1", SPEC, None))
    bootstrap.plan("start").plan("rewrite")
    goals = LogBuilder().create("g1", 3).round().round().op("pause").op("resume").round().op("block")
    cleared = LogBuilder().create().op("complete").op("clear").create("g2")
    tools = LogBuilder().turn().header()
    tools.add(TOOL_CALL, tool_call_payload(ToolCall.of("c1", "read_file", {"path": "README.md"})))
    tools.add("tool/result", tool_result_payload("c1", "read_file", ok=True, output="# planfold"))
    tools.add(TOOL_CALL, tool_call_payload(ToolCall.of("c2", "write_file", {"path": "x", "text": ""})))
    reason = "write_file writes, and build_bootstrap is read-only"
    refused = Refused("write-in-read-only-phase", reason, "write_file", "build_bootstrap", "")
    tools.add(TOOL_REFUSED, tool_notice_payload("c2", refused))
    warned = replace(refused, hint="Write a minimal plan first.")
    tools.add("tool/warning", tool_notice_payload("c2", warned, "tool/warning"))
    tools.end()
    usage = LogBuilder().turn().header()
    usage.put(assistant_message("Reading first.", ModelUsage(USAGE_VERSION, 840, 1200, 35, 1024)))
    usage.header()
    usage.put(assistant_message("Done.", ModelUsage(USAGE_VERSION, 95)))
    usage.add(ASSISTANT_MESSAGE, {"text": "A message written before usage was recorded.", "source": None})
    usage.end()
    return [
        _valid("empty", "An empty log: an old or new session, build mode, no plan, no goal.", LogBuilder()),
        _valid("plan-mode", "Plan mode switched inside and between turns, with notices.", plan_mode),
        _valid("plan-lifecycle", "A plan drafted, rejected, rewritten, approved, run, verified, completed.",
               lifecycle),
        _valid("plan-bootstrap", "An implicit plan started, then rewritten during execution.", bootstrap),
        _valid("goal-lifecycle", "A goal with rounds, a pause, a resume and a block.", goals),
        _valid("goal-cleared", "A goal completed and cleared, then a new goal.", cleared),
        _valid("tools", "A turn with a tool call and result, a refusal and a warning.", tools),
        _valid("usage", "Assistant messages with what their model call cost (latency, prompt, completion and "
               "cached tokens), with latency only, and one without usage as logs before version 1 of it.", usage),
    ]


def _log_cases() -> list[Case]:
    out = []
    log = LogBuilder().turn()
    log.raw(TURN_END, {"turn": 1}, seq=3)
    out.append(_bad("log", "seq-gap", "seq-gap", "The second event has seq 3.", log))
    log = LogBuilder()
    log.raw(TURN_START, {"turn": 1}, seq=2)
    out.append(_bad("log", "seq-gap-first", "seq-gap", "The first event has seq 2.", log))
    log = LogBuilder().turn()
    log.raw(TURN_END, {"turn": 1}, seq="2")
    out.append(_bad("log", "seq-gap-string", "seq-gap", "A seq written as a string.", log, position=2))
    log = LogBuilder().turn()
    log.raw(TURN_END, {"turn": 1}, seq=2.0)
    out.append(_bad("log", "seq-gap-fraction", "seq-gap", "A seq written as 2.0 is not an integer.", log, position=2))
    log = LogBuilder().turn()
    log.raw(TURN_END, {"turn": 1}, at=999)
    out.append(_bad("log", "time-regressed", "time-regressed", "at goes backwards.", log))
    log = LogBuilder().turn()
    log.raw("plan/archive", {})
    out.append(_bad("log", "unknown-kind", "unknown-kind", "A kind no machine knows.", log))
    log = LogBuilder()
    log.raw(TURN_START, {"turn": 1}, at=-1)
    out.append(_bad("log", "malformed-payload-at", "malformed-payload", "A negative at.", log))
    log = LogBuilder()
    log.raw(TURN_START, {"turn": True})
    out.append(_bad("log", "malformed-payload", "malformed-payload", "A turn number that is a boolean.", log))
    log = LogBuilder().turn()
    log.raw(TURN_START, {"turn": 2})
    out.append(_bad("log", "transition-not-allowed", "transition-not-allowed", "A turn opened twice.", log))
    log = LogBuilder().turn().end()
    log.raw(TURN_END, {"turn": 1})
    out.append(_bad("log", "transition-not-allowed-end", "transition-not-allowed", "A closed turn closed.", log))
    log = LogBuilder()
    log.raw(REQUEST_HEADER, {"turn": 1, "step": 1, "plan_mode": False})
    out.append(_bad("log", "transition-not-allowed-header", "transition-not-allowed",
                    "A request header outside a turn.", log))
    log = LogBuilder().turn().header()
    log.raw(REQUEST_HEADER, {"turn": 1, "step": 3, "plan_mode": False})
    out.append(_bad("log", "transition-not-allowed-step", "transition-not-allowed", "A step skipped.", log))
    log = LogBuilder().turn().header()
    log.raw(ASSISTANT_MESSAGE, {"text": "Done.", "source": None, "usage": {"version": 2, "latency_ms": 5}})
    out.append(_bad("log", "unknown-version", "unknown-version",
                    "An assistant message's usage of a version this reader does not know.", log))
    return out


def _session_cases() -> list[Case]:
    log = LogBuilder().turn().mode(True)
    log.raw(REQUEST_HEADER, {"turn": 1, "step": 1, "plan_mode": False})
    header = _bad("session", "header-mismatch", "header-mismatch",
                  "A request header that disagrees with the plan-mode fold.", log)
    log = LogBuilder()
    log.raw(USER_MESSAGE, {"text": "hi", "source": {"type": "plugin", "plugin": ""}})
    message = _bad("session", "malformed-payload", "malformed-payload", "A message from a nameless plugin.", log)
    log = LogBuilder()
    log.raw(PLAN_MODE, {"active": 1})
    mode = _bad("plan_mode", "malformed-payload", "malformed-payload", "plan/mode active is 1, not a boolean.", log)
    log2 = LogBuilder()
    log2.raw(TOOL_CALL, {"call_id": "c1", "tool": "read_file", "arguments": {}})
    log3 = LogBuilder().turn()
    log3.raw(TOOL_REFUSED, {"call_id": "c1", "tool": "x", "code": "Bad Code", "reason": "no", "phase": "plan"})
    return [
        header,
        message,
        mode,
        _bad("tools", "tool-outside-turn", "tool-outside-turn", "A tool call outside any turn.", log2),
        _bad("tools", "malformed-payload", "malformed-payload", "A refusal whose code is not kebab-case.", log3),
    ]


def _goal_cases() -> list[Case]:
    def g(name: str, rule: str, description: str, log: LogBuilder) -> Case:
        return _bad("goal", name, rule, description, log)

    out = []
    log = LogBuilder()
    log.raw(GOAL_CHANGE, {"version": 1, "operation": "create"})
    out.append(g("malformed-payload", "malformed-payload", "A create without a goal.", log))
    out.append(g("unknown-version", "unknown-version", "Version 2.",
                 corrupt_goal(LogBuilder().create(), "pause", version=2)))
    out.append(g("unknown-operation", "unknown-operation", "An operation goals do not have.",
                 corrupt_goal(LogBuilder().create(), "pause", operation="archive")))
    out.append(g("goal-mismatch", "goal-mismatch", "A pause naming another goal.",
                 corrupt_goal(LogBuilder().create(), "pause", id="g9")))
    log = LogBuilder().create()
    log.raw(USER_MESSAGE, goal_round("g9", 1, 1))
    out.append(g("goal-mismatch-round", "goal-mismatch", "A round naming another goal.", log))
    log = LogBuilder().create().op("clear")
    log.raw(GOAL_CHANGE, LogBuilder().create().last_payload() | {"created_at": log.at, "updated_at": log.at})
    out.append(g("id-reused", "id-reused", "A create reusing a cleared goal's id.", log))
    out.append(g("stale-revision", "stale-revision", "A pause at the current revision.",
                 corrupt_goal(LogBuilder().create(), "pause", revision=1)))
    log = LogBuilder().create().op("pause").op("resume")
    log.raw(USER_MESSAGE, goal_round("g1", 1, 1))
    out.append(g("stale-revision-round", "stale-revision", "A round attributed to an old revision.", log))
    out.append(g("revision-gap", "revision-gap", "A pause skipping a revision.",
                 corrupt_goal(LogBuilder().create(), "pause", revision=3)))
    out.append(g("transition-not-allowed", "transition-not-allowed", "A paused goal paused again.",
                 corrupt_goal(LogBuilder().create().op("pause"), "resume", operation="pause", phase="paused")))
    out.append(g("rounds-mismatch", "rounds-mismatch", "A pause that changes the round count.",
                 corrupt_goal(LogBuilder().create(), "pause", rounds_started=5)))
    log = LogBuilder().create()
    out.append(g("timestamp-mismatch", "timestamp-mismatch", "updated_at is not the event's at.",
                 corrupt_goal(log, "pause", updated_at=log.at + 1)))
    log = LogBuilder().create()
    log.raw(USER_MESSAGE, goal_round("g1", 1, 0))
    out.append(g("round-not-positive", "round-not-positive", "Round 0.", log))
    log = LogBuilder().create().op("pause")
    log.raw(USER_MESSAGE, goal_round("g1", 2, 1))
    out.append(g("round-while-stopped", "round-while-stopped", "A round of a paused goal.", log))
    log = LogBuilder().create("g1", 1).round()
    log.raw(USER_MESSAGE, goal_round("g1", 1, 2))
    out.append(g("round-over-cap", "round-over-cap", "Round 2 of a goal capped at 1.", log))
    log = LogBuilder().create()
    log.raw(USER_MESSAGE, goal_round("g1", 1, 2))
    out.append(g("round-gap", "round-gap", "Round 2 before round 1.", log))
    return out


def _plan_cases() -> list[Case]:
    def p(name: str, rule: str, description: str, log: LogBuilder) -> Case:
        return _bad("plan", name, rule, description, log)

    bad_hash = "0" * 64
    return [
        p("malformed-payload", "malformed-payload", "A draft without a summary.",
          corrupt_plan(LogBuilder().mode(True), "draft", summary=None)),
        p("transition-not-allowed", "transition-not-allowed", "An approval with no plan.",
          replay_last(LogBuilder(), LogBuilder().mode(True).draft().plan("approve"))),
        p("transition-not-allowed-verify", "transition-not-allowed", "Verify entered twice.",
          replay_last(_executing().plan("verify"), _executing().plan("verify"))),
        p("wrong-mode", "wrong-mode", "A draft recorded in build mode.",
          replay_last(LogBuilder(), LogBuilder().mode(True).draft())),
        p("id-reused", "id-reused", "A new draft reusing a superseded plan's id.",
          replay_last(LogBuilder().mode(True).draft().plan("supersede"), LogBuilder().mode(True).draft())),
        p("plan-mismatch", "plan-mismatch", "A rejection naming another plan.",
          corrupt_plan(LogBuilder().mode(True).draft(), "reject", plan_id="p2")),
        p("stale-revision", "stale-revision", "A rejection of an older revision.",
          corrupt_plan(LogBuilder().mode(True).draft().plan("rewrite"), "reject", revision=1)),
        p("revision-gap", "revision-gap", "A rewrite skipping a revision.",
          corrupt_plan(LogBuilder().mode(True).draft(), "rewrite", revision=3)),
        p("approval-mismatch", "approval-mismatch", "An approval of other content.",
          corrupt_plan(LogBuilder().mode(True).draft(), "approve", spec_hash=bad_hash)),
        p("hash-mismatch", "hash-mismatch", "A rejection of other content.",
          corrupt_plan(LogBuilder().mode(True).draft(), "reject", spec_hash=bad_hash)),
        p("invalid-spec", "invalid-spec", "A draft whose plan has no steps.", _invalid_spec()),
        p("invalid-summary", "invalid-summary", "A runtime summary that is not the runtime's own.",
          _invalid_summary()),
        p("rewrite-without-change", "rewrite-without-change", "A rewrite that changes nothing.", _same_rewrite()),
        p("unknown-todo", "unknown-todo", "Progress on a todo the plan does not have.",
          corrupt_plan(_executing(), "todo", todo_id="t9")),
        p("todo-unchanged", "todo-unchanged", "Progress that changes nothing.",
          corrupt_plan(_executing(), "todo", status="pending")),
    ]


def _same_rewrite() -> LogBuilder:
    log = LogBuilder().mode(True).draft()
    draft = log.last_payload()
    payload = LogBuilder().mode(True).draft().plan("rewrite").last_payload()
    payload.update(spec=draft["spec"], summary=draft["summary"])
    log.raw(PLAN_ARTIFACT, payload)
    return log


def _invalid_spec() -> LogBuilder:
    log = LogBuilder().mode(True)
    payload = LogBuilder().mode(True).draft().last_payload()
    spec, summary = payload["spec"], payload["summary"]
    assert isinstance(spec, dict) and isinstance(summary, dict)
    spec["steps"], summary["key_steps"] = [], []
    log.raw(PLAN_ARTIFACT, payload)
    return log


def _invalid_summary() -> LogBuilder:
    log = LogBuilder().mode(True)
    payload = LogBuilder().mode(True).draft().last_payload()
    summary = payload["summary"]
    assert isinstance(summary, dict)
    summary["goal"] = "Something else"
    log.raw(PLAN_ARTIFACT, payload)
    return log


def cases() -> tuple[Case, ...]:
    """Every case, sorted by name."""
    found = [*_valid_cases(), *_log_cases(), *_session_cases(), *_goal_cases(), *_plan_cases()]
    return tuple(sorted(found, key=lambda case: case.name))
