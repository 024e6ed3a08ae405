"""The tables are the behaviour.

For every machine, drive the real reducers and decision functions from the
initial state over every input (bounded: small argument domains, states
deduplicated by what matters to the machine), collect the transitions
actually taken, and compare them with the graph read from the table, both
ways. Then prove the check has teeth: a table copy with a row removed, and a
code path patched to take a transition its table lacks, are both reported,
edge for edge.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import replace
from functools import partial
from types import MappingProxyType
from typing import TypeVar

import pytest

from planfold.kernel import plan_events
from planfold.kernel.decisions import PlanChoice, decide_plan_choice
from planfold.kernel.errors import KernelError
from planfold.kernel.goal import fold as goal_fold
from planfold.kernel.goal import ops as goal_ops
from planfold.kernel.goal.fold import GoalState, apply_goal_event
from planfold.kernel.goal.values import (
    DISARMED,
    TRANSITION_TABLE,
    TRANSITIONS,
    Activation,
    BlockedReason,
    Transition,
    activation_after,
    session_started,
)
from planfold.kernel.graph import (
    MODE_OFF,
    MODE_ON,
    RULE_TEXT,
    Edge,
    Graph,
    compare,
    gate_graph,
    goal_graph,
    goal_phase_state,
    plan_action_label,
    plan_mode_graph,
    plan_mode_label,
    plan_mode_state,
    plan_status_graph,
    plan_status_state,
    reachable,
    runtime_phase_graph,
)
from planfold.kernel.log import PLAN_MODE, USER_MESSAGE, Draft, Event, TurnState, number_drafts
from planfold.kernel.payload import JSONObject
from planfold.kernel.phase import RUNTIME_PHASES
from planfold.kernel.plan import mode as plan_mode
from planfold.kernel.plan.context import runtime_phase
from planfold.kernel.plan.mode import CHOICE_TABLE, PendingChoice, PendingRelation, plan_mode_set
from planfold.kernel.plan.payload import PLAN_ACTIONS
from planfold.kernel.plan.spec import PlanSpec, Todo
from planfold.kernel.plan.status import TRANSITIONS as PLAN_TRANSITIONS
from planfold.kernel.plan_events import fold_drafts
from planfold.kernel.session import SessionState, apply_session_event
from planfold.kernel.tools import gate
from planfold.kernel.tools.gate import Allowed, DeploymentRule, GatePolicy, Refused, RuleKind, decide, tool_class
from planfold.kernel.tools.spec import RUNTIME_TOOLS, CallClassifier, Classification, ToolCall, ToolSpec

# --------------------------------------------------------------------------
# A bounded breadth-first search


S = TypeVar("S")


def bfs(initial: S, key: Callable[[S], Hashable], steps: Callable[[S], Iterable[tuple[Edge | None, S]]]) -> set[Edge]:
    """Every edge taken from every state reachable from ``initial``;
    ``steps`` yields (edge or None for an unrecorded step, next state)."""
    seen = {key(initial)}
    queue = deque([initial])
    taken: set[Edge] = set()
    while queue:
        state = queue.popleft()
        for edge, after in steps(state):
            if edge is not None:
                taken.add(edge)
            k = key(after)
            if k not in seen:
                seen.add(k)
                queue.append(after)
    return taken


# --------------------------------------------------------------------------
# Plan-mode choices

Decide = Callable[[bool, PendingChoice | None, bool, bool], PlanChoice]
PlanModeState = tuple[bool, PendingChoice | None]


def kernel_choice(folded: bool, pending: PendingChoice | None, turn_open: bool, target: bool) -> PlanChoice:
    """The kernel's decision in a session recorded at ``folded``, in a turn or between turns."""
    state = SessionState(turns=TurnState(1, turn_open), plan_mode=folded)
    return decide_plan_choice(state, [], pending, target)


def explore_plan_mode(decide: Decide = kernel_choice) -> set[Edge]:
    def steps(state: PlanModeState) -> Iterator[tuple[Edge | None, PlanModeState]]:
        folded, pending = state
        for target in (False, True):
            for turn_open in (False, True):
                decision = decide(folded, pending, turn_open, target)
                after = folded
                if decision.drafts:
                    after = plan_mode.fold_plan_mode(number_drafts(decision.drafts, 0, 0))
                source = plan_mode_state(folded, None if pending is None else pending.target)
                pend = decision.pending
                target_state = plan_mode_state(after, None if pend is None else pend.target)
                label = plan_mode_label(target, turn_open, decision.outcome)
                yield Edge(source, target_state, label), (after, pend)

    initial: PlanModeState = (False, None)
    return bfs(initial, lambda state: state, steps)


# --------------------------------------------------------------------------
# Goal phases

GoalWorld = tuple[GoalState, Activation]


def _goal_key(world: GoalWorld) -> Hashable:
    state, activation = world
    cur = state.current
    goal = None if cur is None else (cur.id, cur.phase, cur.rounds_started, cur.max_rounds, cur.objective)
    return goal, activation.armed, state.used_ids


def _goal_attempts(state: GoalState, activation: Activation) -> Iterator[tuple[str, Callable[[], Draft]]]:
    """Every operation with a small domain of arguments: both ids, both
    caps, every actor, the current ref and a stale one."""
    for goal_id in ("g1", "g2"):
        for cap in (1, 2):
            yield "create", partial(goal_ops.create, state, goal_id, "Ship", cap, actor="user", at=1)
    cur = state.current
    if cur is None:
        return
    objective = "Ship it all" if cur.objective == "Ship" else "Ship"
    reason = BlockedReason("needs-input", "Which file?")
    for ref in (cur.ref, replace(cur.ref, revision=cur.revision - 1)):
        for actor in goal_ops.ACTORS:
            yield "edit", partial(goal_ops.edit, state, ref, objective=objective, actor=actor, at=1)
            cap = 3 - cur.max_rounds
            yield "edit", partial(goal_ops.edit, state, ref, max_rounds=cap, actor=actor, at=1)
            yield "pause", partial(goal_ops.pause, state, ref, actor=actor, at=1)
            yield "resume", partial(goal_ops.resume, state, ref, activation, actor=actor, at=1)
            yield "complete", partial(goal_ops.complete, state, ref, actor=actor, at=1)
            yield "block", partial(goal_ops.block, state, ref, reason, actor=actor, at=1)
            yield "clear", partial(goal_ops.clear, state, ref, actor=actor, at=1)


def explore_goal() -> set[Edge]:
    def steps(world: GoalWorld) -> Iterator[tuple[Edge | None, GoalWorld]]:
        state, activation = world
        cur = state.current
        before = goal_phase_state(None if cur is None else cur.phase)
        for operation, attempt in _goal_attempts(state, activation):
            try:
                event = attempt().numbered(1, 1)
            except KernelError:
                continue
            after = apply_goal_event(state, event)
            phase = None if after.current is None else after.current.phase
            edge = Edge(before, goal_phase_state(phase), operation)
            yield edge, (after, activation_after(activation, operation))  # type: ignore[arg-type]
        # The environment: a goal round, and a process restart.
        if cur is not None:
            source: JSONObject = {"type": "goal", "goal_id": cur.id, "revision": cur.revision,
                                  "round": cur.rounds_started + 1}
            round_ = Event(1, USER_MESSAGE, 1, {"text": "go", "source": source})
            with contextlib.suppress(KernelError):
                yield None, (apply_goal_event(state, round_), activation)
        yield None, (state, session_started(activation))

    initial: GoalWorld = (GoalState(), DISARMED)
    return bfs(initial, _goal_key, steps)


# --------------------------------------------------------------------------
# Plan status and runtime phases: one search over session states

SPEC_A = PlanSpec("Parse configs", ("Write it",), (), ("Tests pass",), (Todo("t1", "Write"), Todo("t2", "Test")))
SPEC_B = replace(SPEC_A, steps=("Write it", "Document it"))


def _session_key(s: SessionState) -> Hashable:
    cur = s.plan.current
    plan = None if cur is None else (cur.id, cur.status, cur.spec, s.plan.approval is not None)
    return s.plan_mode, s.plan.verifying, plan, s.plan.used_ids


def _plan_attempts(s: SessionState) -> Iterator[tuple[str, Callable[[], Draft]]]:
    cur = s.plan.current
    for plan_id in ("p1", "p2"):
        yield "draft", partial(plan_events.draft_event, s, plan_id, SPEC_A, None)
        yield "bootstrap", partial(plan_events.bootstrap_event, s, plan_id, SPEC_A, None)
    if cur is None:
        return
    other = SPEC_B if cur.spec == SPEC_A else SPEC_A
    yield "rewrite", lambda: plan_events.rewrite_event(s, other, None)
    yield "rewrite", lambda: plan_events.rewrite_event(s, cur.spec, None)
    for ref in (cur.ref, replace(cur.ref, spec_hash="0" * 64)):
        yield "approve", partial(plan_events.approve_event, s, ref)
        yield "reject", partial(plan_events.reject_event, s, ref, "no")
        yield "start", partial(plan_events.start_event, s, ref)
    done = next(t.status for t in cur.spec.todos if t.id == "t1") == "done"
    yield "todo", lambda: plan_events.todo_event(s, "t1", "pending" if done else "done")
    yield "verify", lambda: plan_events.verify_event(s)
    yield "verify-fail", lambda: plan_events.verify_fail_event(s, None)
    yield "complete", lambda: plan_events.complete_event(s)
    yield "realign", lambda: plan_events.realign_event(s, "scope")
    yield "supersede", lambda: plan_events.supersede_event(s)


def explore_sessions() -> list[tuple[SessionState, str, SessionState]]:
    """Every (state, step, state after) the real fold takes: each plan
    action through its builder, and both plan-mode switches."""
    found: list[tuple[SessionState, str, SessionState]] = []

    def steps(s: SessionState) -> Iterator[tuple[Edge | None, SessionState]]:
        for action, attempt in _plan_attempts(s):
            assert action in PLAN_ACTIONS
            try:
                draft = attempt()
            except KernelError:
                continue
            after = fold_drafts(s, (draft,))
            found.append((s, action, after))
            yield None, after
        switch = Event(s.last_seq + 1, PLAN_MODE, 1, {"active": not s.plan_mode})
        after = apply_session_event(s, switch)
        found.append((s, MODE_OFF if s.plan_mode else MODE_ON, after))
        yield None, after

    bfs(SessionState(), _session_key, steps)
    return found


def plan_status_edges(found: list[tuple[SessionState, str, SessionState]]) -> set[Edge]:
    modes: dict[tuple[str, str, str], set[str]] = {}
    for before, step, after in found:
        if step in (MODE_ON, MODE_OFF):
            continue
        key = (plan_status_state(before.plan.status), plan_status_state(after.plan.status), step)
        modes.setdefault(key, set()).add(before.agent_mode)
    return {
        Edge(source, target, plan_action_label(action, None if len(seen) == 2 else next(iter(seen))))
        for (source, target, action), seen in modes.items()
    }


def runtime_phase_edges(found: list[tuple[SessionState, str, SessionState]]) -> set[Edge]:
    edges = {Edge(runtime_phase(before), runtime_phase(after), step) for before, step, after in found}
    return {edge for edge in edges if edge.source != edge.target}


@pytest.fixture(scope="module")
def sessions() -> list[tuple[SessionState, str, SessionState]]:
    return explore_sessions()


# --------------------------------------------------------------------------
# Tool-gate verdicts

TOOLS = (
    *(ToolSpec(name, "", {}, "unknown", "builtin") for name in RUNTIME_TOOLS),
    ToolSpec("read_file", "", {}, "read", "builtin"),
    ToolSpec("write_file", "", {}, "write", "builtin"),
    ToolSpec("remember", "", {}, "unknown", "builtin", category="memory-write"),
    ToolSpec("set_task", "", {}, "write", "builtin", category="task-state"),
    ToolSpec("set_plan", "", {}, "write", "builtin", category="plan-state"),
    ToolSpec("lookup", "", {}, "unknown", "builtin"),
    ToolSpec("mcp_search", "", {}, "read", "mcp", read_only_hint=True),
    ToolSpec("bash", "", {}, "unknown", "shell"),
)
_YES = CallClassifier("says-yes", lambda tool: True, lambda tool, args: Classification(True, "read-only", "ok"))


def observed_rule(phase: str, tool: ToolSpec) -> RuleKind:
    """Which rule the gate applies, judged from its verdicts alone."""
    call = ToolCall.of("c1", tool.name, {})

    def ask(policy: GatePolicy) -> object:
        catalog, run = decide(phase, policy, tool, None), decide(phase, policy, tool, call)  # type: ignore[arg-type]
        assert type(catalog) is type(run) or isinstance(run, Allowed), (catalog, run)
        return run

    hard = ask(GatePolicy())
    if isinstance(hard, Allowed) and hard.route == "runtime":
        return "runtime"
    if isinstance(hard, Allowed):
        denied = ask(GatePolicy(rules=(DeploymentRule("deny", tool.name),)))
        assert isinstance(denied, Refused) and denied.code == "denied-by-deployment"
        return "deployment"
    assert isinstance(hard, Refused)
    if isinstance(ask(GatePolicy(classifiers=(_YES,))), Allowed):
        return "classify"
    advisory = ask(GatePolicy(enforcement="advisory"))
    if isinstance(advisory, Allowed) and advisory.warning is not None:
        return "deny"
    assert isinstance(advisory, Refused)
    return "never"


def explore_gate() -> set[Edge]:
    return {
        Edge(phase, RULE_TEXT[observed_rule(phase, tool)], tool_class(tool))
        for phase in RUNTIME_PHASES
        for tool in TOOLS
    }


# --------------------------------------------------------------------------
# The check passes for every machine


def assert_agrees(table: Graph, taken: set[Edge]) -> None:
    diff = compare(table, taken)
    assert diff.ok, f"{table.name}: the table and the code disagree:\n{diff.describe()}"


def test_plan_mode_table_is_the_behaviour() -> None:
    assert_agrees(plan_mode_graph(), explore_plan_mode())


def test_goal_table_is_the_behaviour() -> None:
    assert_agrees(goal_graph(), explore_goal())


def test_plan_status_table_is_the_behaviour(sessions: list[tuple[SessionState, str, SessionState]]) -> None:
    assert_agrees(plan_status_graph(), plan_status_edges(sessions))


def test_runtime_phase_graph_is_the_behaviour(sessions: list[tuple[SessionState, str, SessionState]]) -> None:
    assert_agrees(runtime_phase_graph(), runtime_phase_edges(sessions))


def test_gate_table_is_the_behaviour() -> None:
    assert_agrees(gate_graph(), explore_gate())


@pytest.mark.parametrize("graph", [plan_mode_graph(), goal_graph(), plan_status_graph(), runtime_phase_graph()])
def test_every_state_is_reachable_from_the_initial_state(graph: Graph) -> None:
    assert reachable(graph) == frozenset(graph.states)


def test_every_tool_class_is_probed_in_every_phase() -> None:
    assert {tool_class(tool) for tool in TOOLS} == set(gate.TOOL_CLASSES)


# --------------------------------------------------------------------------
# The check fails when code and table part ways


def test_a_row_missing_from_the_choice_table_is_reported() -> None:
    key = (PendingRelation.NONE, False, True)
    table = {k: row for k, row in CHOICE_TABLE.items() if k != key}
    diff = compare(plan_mode_graph(table), explore_plan_mode())
    assert diff.missing == ()
    assert diff.extra == (
        Edge("build", "build (plan pending)", "plan (in turn) / queued"),
        Edge("plan", "plan (build pending)", "build (in turn) / queued"),
    )


def test_a_row_missing_from_the_goal_table_is_reported() -> None:
    rows = [row for row in TRANSITIONS if (row.operation, row.source) != ("pause", "active")]
    diff = compare(goal_graph(rows), explore_goal())
    assert (diff.missing, diff.extra) == ((), (Edge("active", "paused", "pause"),))


def test_a_row_missing_from_the_plan_table_is_reported(sessions: list[tuple[SessionState, str, SessionState]]) -> None:
    rows = [row for row in PLAN_TRANSITIONS if row.action != "verify"]
    diff = compare(plan_status_graph(rows), plan_status_edges(sessions))
    assert (diff.missing, diff.extra) == ((), (Edge("executing", "executing", "verify (build)"),))


def test_rows_missing_from_the_phase_sources_are_reported(
    sessions: list[tuple[SessionState, str, SessionState]],
) -> None:
    rows = [row for row in PLAN_TRANSITIONS if row.action != "bootstrap"]
    diff = compare(runtime_phase_graph(rows), runtime_phase_edges(sessions))
    assert (diff.missing, diff.extra) == ((), (Edge("build_bootstrap", "build_execute", "bootstrap"),))


def test_a_row_missing_from_the_verdict_table_is_reported() -> None:
    table = {key: row for key, row in gate.VERDICT_TABLE.items() if key != ("plan", "write")}
    diff = compare(gate_graph(table), explore_gate())
    assert (diff.missing, diff.extra) == ((), (Edge("plan", RULE_TEXT["deny"], "write"),))


def test_code_taking_a_transition_its_table_lacks_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    # The goal code is patched to allow pausing a blocked goal; the table the
    # diagram is drawn from is not. The exploration finds exactly that edge.
    extra = Transition("pause", "blocked", "paused", "disarm")
    patched = MappingProxyType({**TRANSITION_TABLE, ("pause", "blocked"): extra})
    monkeypatch.setattr(goal_ops, "TRANSITION_TABLE", patched)
    monkeypatch.setattr(goal_fold, "TRANSITION_TABLE", patched)
    diff = compare(goal_graph(), explore_goal())
    assert (diff.missing, diff.extra) == ((), (Edge("blocked", "paused", "pause"),))
    assert "taken, not in the table: blocked -> paused [pause]" in diff.describe()


def test_a_decision_that_strays_from_its_table_is_reported() -> None:
    # A wrapper around the real decision that commits one choice the table
    # says is a no-op: the new edge is reported, and so is the one it hides.
    def strays(folded: bool, pending: PendingChoice | None, turn_open: bool, target: bool) -> PlanChoice:
        if (folded, pending, turn_open, target) == (False, None, False, False):
            return PlanChoice((plan_mode_set(False),), None, "committed")
        return kernel_choice(folded, pending, turn_open, target)

    diff = compare(plan_mode_graph(), explore_plan_mode(strays))
    assert diff.extra == (Edge("build", "build", "build (idle) / committed"),)
    assert diff.missing == (Edge("build", "build", "build (idle) / noop"),)
