"""Plan mode, driven by Hypothesis against a small model of the seed's rules.

The machine drives user choices, approved plan reviews, turn starts and ends,
pre-steps (accepted, rejected, aborted, failed append, same-step retries) and
process restarts through the real kernel functions, and keeps a model written
straight from the rules in lockstep. Each accepted step also derives its
request's plan parts (runtime phase, overlay, ``plan:policy``, tools on offer)
from the log alone, and they must be the state the step's header records,
also when the flush's append failed and the choice is still pending.

Every choice, pre-step and header is decided twice: by the whole-log forms
of ``tests.plan_mode_helpers`` and by the kernel's decisions over the
session state (``decide_plan_choice``, ``decide_pre_step``,
``decide_request_header``), which must decide the very same drafts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from planfold.kernel.decisions import decide_plan_choice, decide_pre_step, decide_request_header
from planfold.kernel.log import PLAN_MODE, REQUEST_HEADER, TURN_END, TURN_START, USER_MESSAGE, Draft, Event
from planfold.kernel.payload import object_of
from planfold.kernel.plan.context import PromptParts, choose_plan_view, compose_prompt, runtime_phase
from planfold.kernel.plan.mode import NOTICE_SOURCE, PendingChoice, fold_plan_mode
from planfold.kernel.plan.review import APPROVE, PlanPolicy, Selected, decide_review
from planfold.kernel.session import fold_session
from planfold.kernel.tools.gate import GatePolicy, list_available_specs
from planfold.kernel.tools.spec import ToolRegistry, ToolSpec
from tests.plan_mode_helpers import choice_events, decide_choice, derive_request_header, flush_pre_step

PARTS = PromptParts("base")


def drafts_of(events: Sequence[Event]) -> tuple[Draft, ...]:
    """What the log appended as ``events``, before it numbered them."""
    return tuple(Draft(event.kind, event.payload) for event in events)


POLICY = PlanPolicy("Plan before you change anything.")
TOOLS = ToolRegistry.of(
    ToolSpec("read_file", "", {}, "read", "builtin"),
    ToolSpec("write_file", "", {}, "write", "builtin"),
    ToolSpec("exit_plan_mode", "", {}, "unknown", "builtin"),
    ToolSpec("bootstrap_plan", "", {}, "unknown", "builtin"),
)


@dataclass
class Model:
    """The rules, written as plainly as possible."""

    recorded: bool = False
    pending: bool | None = None
    silent: bool = False
    turn_open: bool = False
    last_header: bool | None = None
    noticed_since_header: set[bool] = field(default_factory=set)
    notices: int = 0

    def record(self, target: bool, silent: bool) -> None:
        self.recorded = target
        if (
            not silent
            and self.last_header is not None
            and self.last_header != target
            and target not in self.noticed_since_header
        ):
            self.noticed_since_header.add(target)
            self.notices += 1

    def choose(self, target: bool) -> str:
        if self.pending == target or (self.pending is None and target == self.recorded):
            return "noop"
        if not self.turn_open:
            self.pending = None
            if target == self.recorded:
                return "cancelled"
            self.record(target, silent=False)
            return "committed"
        if target == self.recorded:
            self.pending = None
            return "cancelled"
        self.pending, self.silent = target, False
        return "queued"


class PlanModeMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.log: list[Event] = []
        self.pending: PendingChoice | None = None
        self.model = Model()
        self.turn = 0
        self.step = 0
        self.clock = 0

    def tick(self) -> int:
        self.clock += 1
        return self.clock

    def append(self, kind: str, payload: dict[str, object]) -> None:
        self.log.append(Event(len(self.log) + 1, kind, self.tick(), payload))  # type: ignore[arg-type]

    # -- rules -----------------------------------------------------------------

    @rule(wanted=st.booleans())
    def choose(self, wanted: bool) -> None:
        decision = decide_choice(
            fold_plan_mode(self.log), self.pending, self.model.turn_open, wanted
        )
        expected = self.model.choose(wanted)
        note(f"choose({wanted}) -> {decision.outcome}, model says {expected}")
        assert decision.outcome == expected
        chosen = choice_events(self.log, wanted, self.tick()) if decision.append_now else ()
        # The kernel's decision over the session state decides the very same choice.
        kernel = decide_plan_choice(fold_session(self.log), self.log, self.pending, wanted)
        assert (kernel.outcome, kernel.pending) == (decision.outcome, decision.pending)
        assert kernel.drafts == drafts_of(chosen)
        self.log.extend(chosen)
        self.pending = decision.pending

    @precondition(lambda self: self.model.turn_open and self.model.recorded)
    @rule()
    def approve_plan_review(self) -> None:
        outcome = decide_review(Selected((APPROVE,)))
        note("exit_plan_mode approved: a silent exit is queued")
        self.pending = outcome.pending
        self.model.pending, self.model.silent = False, True

    @precondition(lambda self: not self.model.turn_open)
    @rule()
    def start_turn(self) -> None:
        self.turn += 1
        self.step = 0
        note(f"turn {self.turn} starts")
        self.append(TURN_START, {"turn": self.turn})
        self.model.turn_open = True

    @precondition(lambda self: self.model.turn_open)
    @rule()
    def end_turn(self) -> None:
        note(f"turn {self.turn} ends")
        self.append(TURN_END, {"turn": self.turn})
        self.model.turn_open = False

    @precondition(lambda self: self.model.turn_open)
    @rule(
        verdict=st.sampled_from(["accepted", "rejected", "aborted"]),
        append_fails=st.booleans(),
        retry=st.booleans(),
    )
    def pre_step(self, verdict: str, append_fails: bool, retry: bool) -> None:
        flush = flush_pre_step(self.log, self.pending, verdict, self.tick())  # type: ignore[arg-type]
        note(f"pre-step {verdict} (append fails: {append_fails}) appends {len(flush.events)}")
        # The runtime's decision, taken from the session state's folds
        # instead of folding the log again, decides the very same flush.
        decided = decide_pre_step(fold_session(self.log), self.log, self.pending, verdict)  # type: ignore[arg-type]
        assert decided.drafts == drafts_of(flush.events)
        assert (decided.pending_after_success, decided.pending_after_failure) == (
            flush.pending_after_success,
            flush.pending_after_failure,
        )
        if verdict != "accepted":
            assert flush.events == ()
            assert flush.pending_after_success == self.pending
            return
        if append_fails:
            self.pending = flush.pending_after_failure
        else:
            self.log.extend(flush.events)
            self.pending = flush.pending_after_success
            if self.model.pending is not None:
                if self.model.pending != self.model.recorded:
                    self.model.record(self.model.pending, self.model.silent)
                self.model.pending = None
        step = self.step if retry and self.step else self.step + 1
        header = derive_request_header(self.log, step, self.tick())
        assert (decide_request_header(fold_session(self.log), step),) == drafts_of((header,))
        self.log.append(header)
        self.step = step
        self.model.last_header = self.model.recorded
        self.model.noticed_since_header = set()
        self.check_request(append_fails)

    def check_request(self, append_failed: bool) -> None:
        """The request of the step just headed, derived from the log alone,
        is the recorded state's in every part."""
        state = fold_session(self.log)
        planning = self.model.recorded
        sections = [s.name for s in compose_prompt(PARTS, state, choose_plan_view(state), POLICY)]
        phase = runtime_phase(state)
        offered = {t.name for t in list_available_specs(TOOLS, phase, GatePolicy())}
        note(f"request: phase {phase}, sections {sections}, tools {sorted(offered)}, append failed {append_failed}")
        assert self.log[-1].payload["plan_mode"] is planning
        assert (phase == "plan") is planning
        assert sections[1] == ("overlay:plan" if planning else "overlay:build")
        assert ("plan:policy" in sections) is planning
        assert ("exit_plan_mode" in offered) is planning
        assert ("bootstrap_plan" in offered) is not planning

    @rule()
    def restart_process(self) -> None:
        note("the process restarts: the pending choice is gone, the log stays")
        self.pending = None
        self.model.pending = None
        if self.model.turn_open:  # the interrupted turn is closed on recovery
            self.append(TURN_END, {"turn": self.turn})
            self.model.turn_open = False

    # -- invariants -------------------------------------------------------------

    @invariant()
    def fold_equals_model(self) -> None:
        assert fold_plan_mode(self.log) == self.model.recorded
        state = fold_session(self.log)  # the log is always strictly valid
        assert state.plan_mode == self.model.recorded
        assert state.turns.open == self.model.turn_open

    @invariant()
    def pending_is_never_lost(self) -> None:
        assert (None if self.pending is None else self.pending.target) == self.model.pending

    @invariant()
    def every_header_records_the_fold_before_it(self) -> None:
        for event in self.log:
            if event.kind == REQUEST_HEADER:
                assert event.payload["plan_mode"] == fold_plan_mode(self.log, end=event.seq)

    @invariant()
    def notices_follow_the_rule(self) -> None:
        seen_header: bool | None = None
        noticed: set[bool] = set()
        count = 0
        for index, event in enumerate(self.log):
            if event.kind == REQUEST_HEADER:
                seen_header = bool(event.payload["plan_mode"])
                noticed = set()
            elif event.kind == USER_MESSAGE and event.payload["source"] == object_of(NOTICE_SOURCE):
                count += 1
                before = self.log[index - 1]
                assert before.kind == PLAN_MODE, "a notice follows its plan/mode event"
                state = bool(before.payload["active"])
                assert seen_header is not None, "no notice before the first header"
                assert seen_header != state, "a notice only when the header said otherwise"
                assert state not in noticed, "never the same notice twice between headers"
                noticed.add(state)
        assert count == self.model.notices


TestPlanModeMachine = PlanModeMachine.TestCase
