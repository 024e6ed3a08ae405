"""Everything the kernel derives from a session, and every event it would
write next, for one folded log.

The replay target calls ``derived_views`` on the state its fold reached (the
whole log, or the prefix before the first bad event), so each replay corpus
input also pins the runtime phase, the plan view and prompt, the capsule,
the plan tools' answers, the plan-mode choices and flush, and every goal
operation's event or refusal, by every actor. Two properties are checked on
the way: an event the kernel writes for a state is accepted by the strict
fold of that state, and a capsule of the state matches the state.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from planfold.kernel.decisions import decide_plan_choice, decide_pre_step, decide_request_header, decide_scope
from planfold.kernel.errors import PlanfoldError, ReplayError
from planfold.kernel.goal.continuation import ContinueFacts, budget_block, round_message, should_continue
from planfold.kernel.goal.fold import event_ref
from planfold.kernel.goal.ops import block, clear, complete, create, edit, pause, resume
from planfold.kernel.goal.values import DISARMED, Activation, BlockedReason, GoalRef
from planfold.kernel.log import GOAL_CHANGE, Draft, Event, number_drafts
from planfold.kernel.plan.capsule import build_capsule, capsule_matches, render_capsule
from planfold.kernel.plan.context import (
    PromptParts,
    ViewRequest,
    choose_plan_view,
    compose_prompt,
    plan_to_start,
    render_plan_view,
    runtime_phase,
)
from planfold.kernel.plan.mode import PendingChoice, StepVerdict
from planfold.kernel.plan.review import PlanPolicy
from planfold.kernel.plan.scope import Effect, ScopeVerdict
from planfold.kernel.plan.spec_json import decode_exit_plan_args
from planfold.kernel.plan.tools import VerificationReport
from planfold.kernel.plan_events import (
    approve_event,
    complete_event,
    execution_end_event,
    exit_plan_events,
    open_todo_ids,
    realign_event,
    reject_event,
    start_event,
    supersede_event,
    todo_event,
    update_plan_events,
    verification_event,
    verify_event,
    verify_fail_event,
)
from planfold.kernel.session import SessionState, apply_session_event
from tests.fuzz.harness import FuzzFinding, expect, stable_repr
from tests.fuzz.seeds import EXIT_PLAN_ARGS

__all__ = ["derived_views"]

_REQUESTS = (
    ViewRequest(),
    ViewRequest(user_asked_full=True),
    ViewRequest(summary_insufficient=True),
    ViewRequest(rewriting=True),
    ViewRequest(first_since_resume=True),
)
_PARTS = PromptParts("You are a careful engineer.")
_POLICY = PlanPolicy("Plan before you write.")
_ARGS = tuple(decode_exit_plan_args(args) for args in EXIT_PLAN_ARGS)
_EFFECTS = (Effect("write", "src/importer.py"), Effect("write", "../outside"), Effect("network"))
_ACTORS = ("user", "model", "system")


class _Views:
    def __init__(self, events: Sequence[Event], state: SessionState) -> None:
        self.events, self.state = events, state
        self.seq, self.at = state.last_seq + 1, (state.last.at if state.last is not None else 0) + 1
        self.lines: list[str] = []

    def add(self, name: str, value: object) -> None:
        self.lines.append(f"{name}: {stable_repr(value)}")

    def attempt(self, name: str, make: Callable[[], object]) -> object | None:
        """Record what ``make`` returns or the refusal it raises; fold any
        event it writes onto the state, which must accept it."""
        try:
            value = make()
        except PlanfoldError as exc:
            self.add(name, exc)
            return None
        if isinstance(value, Draft):
            value = value.numbered(self.seq, self.at)  # as the log would append it next
        elif isinstance(value, tuple) and all(isinstance(item, Draft) for item in value):
            value = number_drafts(value, self.seq - 1, self.at)
        self.add(name, value)
        written = value if isinstance(value, tuple) else (value,)
        events = [item for item in written if isinstance(item, Event)]
        if events:
            state = self.state
            try:
                for event in events:
                    state = apply_session_event(state, event)
            except ReplayError as exc:
                raise FuzzFinding(f"{name} wrote an event the fold refuses: {exc}") from exc
        return value


def _context(v: _Views) -> None:
    state = v.state
    v.add("phase", runtime_phase(state))
    v.add("plan to start", plan_to_start(state))
    for request in _REQUESTS:
        choice = choose_plan_view(state, request)
        v.add("view", (choice, render_plan_view(state, choice)))
        v.add("prompt", compose_prompt(_PARTS, state, choice, _POLICY))
    capsule = build_capsule(state)
    expect(capsule_matches(capsule, state), "a capsule built from a state does not match it")
    v.add("capsule", (capsule, render_capsule(capsule)))


def _plan(v: _Views) -> None:
    state, seq, at = v.state, v.seq, v.at
    v.add("open todos", open_todo_ids(state))
    v.attempt("execution end", lambda: execution_end_event(state))
    for passed, notes in ((True, ""), (False, "a test failed")):
        v.attempt("verification", partial(verification_event, state, VerificationReport(passed, notes)))

    def scope() -> tuple[ScopeVerdict, Event | None]:
        verdict, realign = decide_scope(state, _EFFECTS)
        return verdict, realign[0].numbered(seq, at) if realign else None

    v.attempt("scope", scope)
    current = state.plan.current
    ref = current.ref if current is not None else None
    if ref is not None:
        v.attempt("approve", lambda: approve_event(state, ref))
        v.attempt("reject", lambda: reject_event(state, ref, "not yet"))
        v.attempt("start", lambda: start_event(state, ref))
        todos = current.spec.todos if current is not None else ()
        for todo in todos[:2]:
            v.attempt("todo", partial(todo_event, state, todo.id, "done"))
        v.attempt("todo unknown", lambda: todo_event(state, "missing", "done"))
    for name, make in (
        ("verify", lambda: verify_event(state)),
        ("verify fail", lambda: verify_fail_event(state, "it broke")),
        ("complete", lambda: complete_event(state)),
        ("realign", lambda: realign_event(state, "the goal moved")),
        ("supersede", lambda: supersede_event(state, "replaced")),
    ):
        v.attempt(name, make)
    for args in _ARGS:
        v.attempt("exit plan", partial(exit_plan_events, state, args, f"plan-{seq}"))
        v.attempt("update plan", partial(update_plan_events, state, args.spec, args.summary_candidate))


def _plan_mode(v: _Views) -> None:
    events, state = v.events, v.state
    for pending in (None, PendingChoice(True), PendingChoice(False, silent=True)):
        for target in (False, True):
            choice = decide_plan_choice(state, events, pending, target)
            v.add("choice", choice)
            v.attempt("choose", lambda c=choice: c.drafts)  # type: ignore[misc]
        verdicts: tuple[StepVerdict, ...] = ("accepted", "rejected")
        for verdict in verdicts:
            flush = decide_pre_step(state, events, pending, verdict)
            v.add("flush", flush)
            v.attempt("flushed", lambda f=flush: f.drafts)  # type: ignore[misc]
    v.attempt("header", lambda: decide_request_header(state, max(state.turns.step, 1)))


def _goals(v: _Views) -> None:
    state, seq, at = v.state.goal, v.seq, v.at
    goal = state.current
    refs = [goal.ref, GoalRef(goal.id, goal.revision + 1)] if goal is not None else [GoalRef("none", 1)]
    reason = BlockedReason("needs-input", " Which API? ")
    for actor in _ACTORS:
        stamp: dict[str, Any] = {"actor": actor, "at": at}
        v.attempt("create", partial(create, state, f"g{seq}", " New goal ", 3, **stamp))
        for ref in refs:
            v.attempt("pause", partial(pause, state, ref, **stamp))
            v.attempt("complete", partial(complete, state, ref, **stamp))
            v.attempt("clear", partial(clear, state, ref, **stamp))
            for activation in (DISARMED, Activation(True)):
                v.attempt("resume", partial(resume, state, ref, activation, **stamp))
            v.attempt("block", partial(block, state, ref, reason, **stamp))
            v.attempt("edit", partial(edit, state, ref, objective=" Edited ", max_rounds=5, **stamp))
            for bad_reason in (BlockedReason("Not Kebab", "x"), BlockedReason("round-limit", "spent")):
                v.attempt("block refused", partial(block, state, ref, bad_reason, **stamp))
            for change in ({}, {"objective": "  "}, {"max_rounds": 0}, {"max_rounds": True}, {"objective": "x"}):
                v.attempt("edit refused", partial(edit, state, ref, **change, **stamp))
        for goal_id, objective, rounds in (("", "x", 3), (f"g{seq}", "  ", 3), (f"g{seq}", "x", 0), ("g1", "x", None)):
            v.attempt("create refused", partial(create, state, goal_id, objective, rounds, **stamp))
    unknown: Any = "robot"
    v.attempt("unknown actor", partial(pause, state, refs[0], actor=unknown, at=at))
    for event in v.events:
        if event.kind == GOAL_CHANGE:
            v.attempt("goal ref", partial(event_ref, event))
    v.attempt("round", lambda: round_message(state, "continue"))
    v.attempt("budget block", lambda: budget_block(state, at=at))
    for armed in (False, True):
        for plan_mode in (False, True):
            for turn_open in (False, True):
                facts = ContinueFacts(plan_mode=plan_mode, turn_open=turn_open)
                v.add("continue", should_continue(goal, Activation(armed), facts))


def derived_views(events: Sequence[Event], state: SessionState) -> str:
    """Every derived view and next event for ``state`` (the fold of
    ``events``), as one stable text."""
    views = _Views(events, state)
    for part in (_context, _plan, _plan_mode, _goals):
        part(views)
    return "\n".join(views.lines)
