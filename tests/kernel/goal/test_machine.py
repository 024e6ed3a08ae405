"""The goal lifecycle, driven by Hypothesis against a plain model.

The machine runs every operation with right and stale refs and with each
actor, goal rounds, budget blocks, continuation decisions and session
restarts through the real kernel functions, appending only what they accept.
A model written straight from the rules predicts each outcome (the new
snapshot or the error code). After every step the strict fold of the log must
equal the model, the session fold must agree with it, and every accepted
change must have raised the revision by exactly one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import event as record_event
from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from planfold.kernel.errors import KernelError
from planfold.kernel.goal.continuation import ContinueFacts, budget_block, round_message, should_continue
from planfold.kernel.goal.fold import GoalFold, advance_goal_fold, event_ref, fold_goal
from planfold.kernel.goal.ops import ACTORS, Actor, block, clear, complete, create, edit, pause, resume
from planfold.kernel.goal.values import DISARMED, Activation, BlockedReason, GoalRef, session_started
from planfold.kernel.log import GOAL_CHANGE, Draft, Event
from planfold.kernel.session import fold_session
from tests.goal_helpers import GoalLog
from tests.goal_model import ALLOWED_FROM, Model, check_log, same_goal_state, to_state

# Weighted towards what gets accepted, so that long lifecycles happen; every
# value still comes up often.
ACTOR = st.sampled_from(("user", "user", "user", *ACTORS))
REF = st.sampled_from(["current", "current", "current", "stale", "future", "other-id"])
OBJECTIVE = st.sampled_from(["ship it", "ship it", "  padded goal  ", "", "   "])
CAP = st.sampled_from([None, 1, 2, 2, 3, 3, 0, -1])
REASON = st.sampled_from(
    [
        BlockedReason("needs-input", "which database?"),
        BlockedReason("needs-input", "  spaced  "),
        BlockedReason("Not-Kebab", "bad code"),
        BlockedReason("needs-input", "   "),
        BlockedReason("round-limit", "pretending to be the budget"),
    ]
)
MAY = {
    "user": {"create", "edit", "pause", "resume", "complete", "block", "clear"},
    "model": {"complete", "block"},
    "system": {"block"},
}


def good_text(text: str | None) -> bool:
    return text is not None and text.strip() != ""


def good_cap(cap: int | None) -> bool:
    return cap is not None and cap >= 1


class GoalMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.journal = GoalLog()
        self.fold = GoalFold()
        self.activation: Activation = DISARMED
        self.model = Model()
        self.armed = False
        self.next_id = 1
        self.accepted = 0

    # -- helpers -----------------------------------------------------------

    def ref(self, kind: str) -> GoalRef:
        goal = self.model.goal
        if goal is None:
            return GoalRef("g-missing", 1)
        gid, rev = goal["id"], goal["revision"]
        return {
            "current": GoalRef(gid, rev),
            "stale": GoalRef(gid, rev - 1),
            "future": GoalRef(gid, rev + 1),
            "other-id": GoalRef(gid + "-other", rev),
        }[kind]

    def attempt(self, expected: str, run: Callable[[], Event]) -> Event | None:
        """Run a kernel decision; it must raise ``expected`` or (for "ok")
        return an event, which is appended."""
        before = list(self.journal.events)
        record_event(f"expected {expected}")
        try:
            event = run()
        except KernelError as exc:
            note(f"refused: {exc.code}: {exc}")
            assert exc.code == expected, f"expected {expected}, got {exc.code}: {exc}"
            assert self.journal.events == before
            return None
        assert expected == "ok", f"expected {expected}, but the kernel accepted"
        note(f"append {event.kind} {dict(event.payload)}")
        self.journal.events.append(event)
        self.fold = advance_goal_fold(self.fold, [event])
        return event

    def refusal(self, operation: str, actor: Actor, ref: GoalRef) -> str | None:
        """The authority, not-found, goal-mismatch and stale-revision checks
        every ref-taking operation makes first (spelled as the fold spells them)."""
        if operation not in MAY[actor]:
            return "not-authorized"
        goal = self.model.goal
        if goal is None:
            return "not-found"
        if ref.id != goal["id"]:
            return "goal-mismatch"
        if ref.revision != goal["revision"]:
            return "stale-revision"
        if goal["phase"] not in ALLOWED_FROM[operation]:
            return "invalid-transition"
        return None

    def accept(self, event: Event | None, operation: str, **changes: Any) -> None:
        """Apply an accepted change to the model and check the revision step."""
        if event is None:
            return
        self.accepted += 1
        goal = self.model.goal
        assert goal is not None
        assert event_ref(event).revision == goal["revision"] + 1
        if operation == "clear":
            self.model.last_ref = (goal["id"], goal["revision"] + 1)
            self.model.goal = None
        else:
            goal.update(changes, revision=goal["revision"] + 1, updated=event.at)
            self.model.last_ref = (goal["id"], goal["revision"])
        self.armed = {"resume": True, "edit": self.armed}.get(operation, False)
        self.activation = Activation(self.armed)

    def by_ref(self, operation: str, decide: Callable[..., Draft], actor: Actor, which: str, **changes: Any) -> None:
        """An operation that takes only a ref: refused by the checks every
        such operation makes first, or accepted with ``changes``."""
        ref = self.ref(which)
        expected = self.refusal(operation, actor, ref) or "ok"
        at = self.journal.tick()
        event = self.attempt(
            expected, lambda: decide(self.fold.state, ref, actor=actor, at=at).numbered(self.journal.seq, at)
        )
        self.accept(event, operation, **changes)

    # -- operations --------------------------------------------------------

    @rule(actor=ACTOR, fresh=st.booleans(), objective=OBJECTIVE, cap=CAP)
    def do_create(self, actor: Actor, fresh: bool, objective: str, cap: int | None) -> None:
        used = sorted(self.model.used)
        gid = f"g{self.next_id}" if fresh or not used else used[0]
        goal = self.model.goal
        if "create" not in MAY[actor]:
            expected = "not-authorized"
        elif not good_text(objective):
            expected = "invalid-objective"
        elif cap is not None and not good_cap(cap):
            expected = "invalid-max-rounds"
        elif (goal is not None and goal["phase"] != "complete") or gid in self.model.used:
            expected = "already-exists"
        else:
            expected = "ok"
        at = self.journal.tick()
        event = self.attempt(
            expected,
            lambda: create(self.fold.state, gid, objective, cap, actor=actor, at=at).numbered(self.journal.seq, at),
        )
        if event is not None:
            self.next_id += 1
            self.accepted += 1
            assert event_ref(event) == GoalRef(gid, 1)
            self.model.goal = {
                "id": gid,
                "objective": objective.strip(),
                "phase": "active",
                "reason": None,
                "max_rounds": 256 if cap is None else cap,
                "revision": 1,
                "rounds": 0,
                "created": at,
                "updated": at,
            }
            self.model.used.add(gid)
            self.model.last_ref = (gid, 1)
            self.armed = True
            self.activation = Activation(True)

    @rule(actor=ACTOR, which=REF, objective=st.none() | OBJECTIVE, cap=CAP)
    def do_edit(self, actor: Actor, which: str, objective: str | None, cap: int | None) -> None:
        ref = self.ref(which)
        expected = self.refusal("edit", actor, ref)
        if expected is None:
            if objective is None and cap is None:
                expected = "invalid-edit"
            elif objective is not None and not good_text(objective):
                expected = "invalid-objective"
            elif cap is not None and not good_cap(cap):
                expected = "invalid-max-rounds"
        at = self.journal.tick()
        event = self.attempt(
            expected or "ok",
            lambda: edit(
                self.fold.state, ref, objective=objective, max_rounds=cap,
                actor=actor, at=at,
            ).numbered(self.journal.seq, at),
        )
        changes: dict[str, Any] = {}
        if objective is not None:
            changes["objective"] = objective.strip()
        if cap is not None:
            changes["max_rounds"] = cap
        self.accept(event, "edit", **changes)

    @rule(actor=ACTOR, which=REF)
    def do_pause(self, actor: Actor, which: str) -> None:
        self.by_ref("pause", pause, actor, which, phase="paused")

    @rule(actor=ACTOR, which=REF)
    def do_resume(self, actor: Actor, which: str) -> None:
        ref = self.ref(which)
        expected = self.refusal("resume", actor, ref)
        goal = self.model.goal
        if expected is None and goal is not None:
            spent = goal["rounds"] >= goal["max_rounds"]
            if spent or (goal["phase"] == "active" and self.armed):
                expected = "invalid-transition"
        at = self.journal.tick()
        event = self.attempt(
            expected or "ok",
            lambda: resume(
                self.fold.state, ref, self.activation, actor=actor, at=at
            ).numbered(self.journal.seq, at),
        )
        self.accept(event, "resume", phase="active", reason=None)

    @rule(actor=ACTOR, which=REF)
    def do_complete(self, actor: Actor, which: str) -> None:
        self.by_ref("complete", complete, actor, which, phase="complete", reason=None)

    @rule(actor=ACTOR, which=REF, reason=REASON)
    def do_block(self, actor: Actor, which: str, reason: BlockedReason) -> None:
        ref = self.ref(which)
        if actor != "system" and reason.code == "round-limit" and "block" in MAY[actor]:
            expected: str | None = "not-authorized"
        else:
            expected = self.refusal("block", actor, ref)
        if expected is None and (reason.code != reason.code.lower() or not reason.message.strip()):
            expected = "invalid-block-reason"
        at = self.journal.tick()
        event = self.attempt(
            expected or "ok",
            lambda: block(self.fold.state, ref, reason, actor=actor, at=at).numbered(self.journal.seq, at),
        )
        self.accept(event, "block", phase="blocked", reason=(reason.code, reason.message.strip()))

    @rule(actor=ACTOR, which=REF)
    def do_clear(self, actor: Actor, which: str) -> None:
        self.by_ref("clear", clear, actor, which)

    # -- the same operations, well-formed, so that long lifecycles happen -----

    @precondition(lambda self: self.model.goal is None or self.model.goal["phase"] == "complete")
    @rule(cap=st.sampled_from([None, 1, 2, 3]))
    def user_creates(self, cap: int | None) -> None:
        self.do_create("user", True, "ship it", cap)

    @precondition(lambda self: self.model.goal is not None)
    @rule(
        step=st.sampled_from(
            ["edit", "pause", "resume", "complete", "block", "clear", "round", "round", "round"]
        )
    )
    def user_steps(self, step: str) -> None:
        if step == "edit":
            self.do_edit("user", "current", "next objective", 3)
        elif step == "pause":
            self.do_pause("user", "current")
        elif step == "resume":
            self.do_resume("user", "current")
        elif step == "complete":
            self.do_complete("model", "current")
        elif step == "block":
            self.do_block("model", "current", BlockedReason("needs-input", "which one?"))
        elif step == "clear":
            self.do_clear("user", "current")
        else:
            self.start_round()

    # -- rounds, budget, continuation, restarts -------------------------------

    @rule()
    def start_round(self) -> None:
        goal = self.model.goal
        if goal is None:
            expected = "not-found"
        elif goal["phase"] != "active" or goal["rounds"] >= goal["max_rounds"]:
            expected = "invalid-transition"
        else:
            expected = "ok"
        at = self.journal.tick()
        event = self.attempt(
            expected, lambda: round_message(self.fold.state, "continue").numbered(self.journal.seq, at)
        )
        if event is not None and goal is not None:
            goal["rounds"] += 1

    @rule()
    def enforce_budget(self) -> None:
        goal = self.model.goal
        due = goal is not None and goal["phase"] == "active" and goal["rounds"] >= goal["max_rounds"]
        at = self.journal.tick()
        draft = budget_block(self.fold.state, at=at)
        event = None if draft is None else draft.numbered(self.journal.seq, at)
        assert (event is not None) == due
        if event is not None:
            self.attempt("ok", lambda: event)
            reason = self.fold.state.current.blocked_reason if self.fold.state.current else None
            assert reason is not None
            assert reason.code == "round-limit"
            self.accept(event, "block", phase="blocked", reason=(reason.code, reason.message))

    @rule(plan_mode=st.booleans(), turn_open=st.booleans())
    def drive(self, plan_mode: bool, turn_open: bool) -> None:
        goal = self.model.goal
        decision = should_continue(
            self.fold.state.current, self.activation, ContinueFacts(plan_mode, turn_open)
        )
        note(f"should_continue -> {decision}")
        may = (
            goal is not None
            and goal["phase"] == "active"
            and self.armed
            and goal["rounds"] < goal["max_rounds"]
            and not plan_mode
            and not turn_open
        )
        assert decision.proceed == may
        if decision.proceed:
            assert goal is not None
            assert decision.next_round == goal["rounds"] + 1
            self.start_round()
        elif decision.reason == "budget-spent":
            self.enforce_budget()

    @rule()
    def restart(self) -> None:
        # A new process: the log is re-read, activation starts disarmed.
        self.activation = session_started(self.activation)
        self.armed = False
        self.fold = advance_goal_fold(GoalFold(), self.journal.events)

    @rule()
    def disarm_only(self) -> None:
        # Unloading a driver disarms without touching the log.
        self.activation = DISARMED
        self.armed = False

    # -- invariants --------------------------------------------------------

    def teardown(self) -> None:
        record_event(f"log length {len(self.journal.events) // 10 * 10}+")

    @invariant()
    def fold_equals_model(self) -> None:
        assert same_goal_state(fold_goal(self.journal.events), to_state(self.model))

    @invariant()
    def incremental_fold_equals_whole(self) -> None:
        assert self.fold.failure is None
        assert same_goal_state(self.fold.state, fold_goal(self.journal.events))

    @invariant()
    def session_fold_agrees(self) -> None:
        assert fold_session(self.journal.events).goal == fold_goal(self.journal.events)

    @invariant()
    def log_model_agrees(self) -> None:
        model, failure = check_log(self.journal.events)
        assert failure is None
        assert same_goal_state(to_state(model), to_state(self.model))

    @invariant()
    def activation_matches(self) -> None:
        assert self.activation.armed == self.armed
        if self.model.goal is None or self.model.goal["phase"] != "active":
            assert not self.armed

    @invariant()
    def each_change_raises_the_revision_by_one(self) -> None:
        last: dict[str, int] = {}
        for event in self.journal.events:
            if event.kind == GOAL_CHANGE:
                ref = event_ref(event)
                assert ref.revision == last.get(ref.id, 0) + 1
                last[ref.id] = ref.revision

    @invariant()
    def revisions_count_accepted_changes(self) -> None:
        changes = sum(1 for event in self.journal.events if event.kind == GOAL_CHANGE)
        assert changes == self.accepted


test_goal_lifecycle_machine = GoalMachine.TestCase
