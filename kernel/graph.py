"""State machines as small graph values, read straight from their tables.

Theory of operation
-------------------
Every machine in planfold keeps its transitions in one table (data) that its
reducer or decision function looks up. This module turns each table into a
``Graph``: the states, the initial state and the labelled edges. The
extractors read the table's rows and nothing else; they never run a reducer,
so a diagram drawn from a ``Graph`` shows what the table says.

Whether the table *is* the behaviour is a separate question, answered by the
exploration tests: they drive the real reducers from the initial state over
every input (bounded), collect the transitions actually taken, and hand both
sides to ``compare``, which reports the edges missing on either side.

An edge is identified by ``(source, target, label)``; ``note`` is extra text
for the picture (guards, effects) that takes no part in equality. Graphs are
normalised on construction (states and edges sorted, duplicates dropped) so
that everything rendered from them is stable. Names and labels are limited to
a small character set that every renderer can print without escaping.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .errors import KernelError
from .goal.values import TRANSITIONS as GOAL_TRANSITIONS
from .goal.values import Transition as GoalTransition
from .phase import RUNTIME_PHASES, RuntimePhase
from .plan import status as plan_status
from .plan.artifact import PLAN_STATUSES, PlanArtifact, PlanState, PlanStatus
from .plan.context import runtime_phase
from .plan.mode import CHOICE_TABLE, ChoiceRow, PendingRelation
from .plan.spec import PlanSpec, SummaryView, Todo
from .session import SessionState
from .tools.gate import VERDICT_TABLE, PhaseRule, RuleKind, ToolClass

__all__ = [
    "GOAL_NONE",
    "MODE_OFF",
    "MODE_ON",
    "PLAN_NONE",
    "RULE_TEXT",
    "Edge",
    "Graph",
    "GraphDiff",
    "GraphError",
    "all_graphs",
    "compare",
    "gate_graph",
    "goal_graph",
    "goal_phase_state",
    "make_graph",
    "phase_of",
    "plan_action_label",
    "plan_mode_graph",
    "plan_mode_label",
    "plan_mode_state",
    "plan_status_graph",
    "plan_status_state",
    "reachable",
    "runtime_phase_graph",
]

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_TEXT = re.compile(r"^[A-Za-z0-9 _\-/,.()\[\]+=]+$")


class GraphError(KernelError):
    """A graph that cannot be drawn: a bad name or label, an edge to an
    undeclared state, or two edges that differ only in their note. Always a
    bug in an extractor or in the table it read."""

    code = "invalid-graph"


@dataclass(frozen=True, slots=True, order=True)
class Edge:
    """One labelled transition; ``note`` is shown but not compared."""

    source: str
    target: str
    label: str
    note: str = field(default="", compare=False)


@dataclass(frozen=True, slots=True)
class Graph:
    """A machine: ``name`` (a file stem), a human ``title``, the ``initial``
    state (``None`` for a decision table, which has none), every state
    (sorted), every edge (sorted, unique) and the ``source`` table it was
    read from."""

    name: str
    title: str
    initial: str | None
    states: tuple[str, ...]
    edges: tuple[Edge, ...]
    source: str = ""


def make_graph(
    name: str,
    title: str,
    initial: str | None,
    edges: Iterable[Edge],
    states: Iterable[str] = (),
    *,
    source: str = "",
) -> Graph:
    """A normalised ``Graph``; the states are ``states`` plus every edge end.

    Raises ``GraphError`` for a bad name, state or label, or two edges with
    the same identity and different notes.
    """
    if not _NAME.fullmatch(name):
        raise GraphError(f"graph name {name!r} must be lower_snake_case")
    _check_text(title, name)
    unique: dict[Edge, Edge] = {}
    for edge in edges:
        for text in (edge.source, edge.target, edge.label):
            _check_text(text, name)
        if edge.note:
            _check_text(edge.note, name)
        seen = unique.get(edge)
        if seen is not None and seen.note != edge.note:
            raise GraphError(f"{name}: edge {edge.source} -> {edge.target} [{edge.label}] has two notes")
        unique[edge] = edge
    all_states = set(states) if initial is None else {initial, *states}
    for edge in unique:
        all_states.update((edge.source, edge.target))
    for state in all_states:
        _check_text(state, name)
    if source:
        _check_text(source, name)
    return Graph(name, title, initial, tuple(sorted(all_states)), tuple(sorted(unique)), source)


def _check_text(text: str, graph: str) -> None:
    if not isinstance(text, str) or not _TEXT.fullmatch(text) or text != text.strip():
        raise GraphError(f"{graph}: {text!r} is not a printable state name or label")


def reachable(graph: Graph) -> frozenset[str]:
    """The states reachable from the initial state along the edges (none
    for a graph without an initial state)."""
    if graph.initial is None:
        return frozenset()
    seen = {graph.initial}
    frontier = [graph.initial]
    while frontier:
        state = frontier.pop()
        for edge in graph.edges:
            if edge.source == state and edge.target not in seen:
                seen.add(edge.target)
                frontier.append(edge.target)
    return frozenset(seen)


@dataclass(frozen=True, slots=True)
class GraphDiff:
    """How observed behaviour differs from a table: ``missing`` edges are in
    the table but were never taken, ``extra`` edges were taken but are not in
    the table. Both sorted."""

    missing: tuple[Edge, ...]
    extra: tuple[Edge, ...]

    @property
    def ok(self) -> bool:
        return not self.missing and not self.extra

    def describe(self) -> str:
        lines = [f"in the table, never taken: {e.source} -> {e.target} [{e.label}]" for e in self.missing]
        lines += [f"taken, not in the table: {e.source} -> {e.target} [{e.label}]" for e in self.extra]
        return "\n".join(lines) or "the table and the behaviour agree"


def compare(table: Graph, taken: Iterable[Edge]) -> GraphDiff:
    """Compare the edges of ``table`` with the edges a reducer ``taken``."""
    expected = set(table.edges)
    observed = set(taken)
    return GraphDiff(tuple(sorted(expected - observed)), tuple(sorted(observed - expected)))


# --------------------------------------------------------------------------
# Plan-mode choices (kernel.plan.mode.CHOICE_TABLE)


def plan_mode_state(folded: bool, pending: bool | None) -> str:
    """The diagram name of a plan-mode state: the recorded mode and the
    pending target, if any."""
    mode = "plan" if folded else "build"
    if pending is None:
        return mode
    return f"{mode} ({'plan' if pending else 'build'} pending)"


def _mode(active: bool) -> str:
    return "plan" if active else "build"


def plan_mode_label(target: bool, turn_open: bool, outcome: str) -> str:
    """The edge label of a choice: the target, idle or in a turn, the outcome."""
    return f"{_mode(target)} ({'in turn' if turn_open else 'idle'}) / {outcome}"


def plan_mode_graph(table: Mapping[tuple[PendingRelation, bool, bool], ChoiceRow] = CHOICE_TABLE) -> Graph:
    """The plan-mode choice machine: states are (recorded mode, pending
    target); every choice of either target, idle or in a turn, from every
    such state is an edge given by its table row. Keys missing from ``table``
    give no edge."""
    edges: list[Edge] = []
    for folded in (False, True):
        for pending in (None, not folded):
            for target in (False, True):
                if pending is None:
                    relation = PendingRelation.NONE
                else:
                    relation = PendingRelation.SAME if pending == target else PendingRelation.OPPOSITE
                for turn_open in (False, True):
                    row = table.get((relation, target == folded, turn_open))
                    if row is None:
                        continue
                    after_folded = target if row.append_now else folded
                    after_pending = {"keep": pending, "set": target, "drop": None}[row.pending]
                    edges.append(
                        Edge(
                            plan_mode_state(folded, pending),
                            plan_mode_state(after_folded, after_pending),
                            plan_mode_label(target, turn_open, row.outcome),
                        )
                    )
    return make_graph(
        "plan_mode",
        "Plan-mode choices",
        plan_mode_state(False, None),
        edges,
        source="planfold.kernel.plan.mode.CHOICE_TABLE",

    )


# --------------------------------------------------------------------------
# Goal phases (kernel.goal.TRANSITIONS)

#: The goal diagram's name for "no current goal" (before create, after clear).
GOAL_NONE = "no goal"


def goal_phase_state(phase: str | None) -> str:
    return GOAL_NONE if phase is None else phase


def goal_graph(transitions: Iterable[GoalTransition] = GOAL_TRANSITIONS) -> Graph:
    """The goal lifecycle: one edge per row, labelled with the operation and
    noted with its guards and activation effect."""
    edges = []
    for row in transitions:
        guards = f"[{', '.join(row.guards)}] " if row.guards else ""
        edges.append(
            Edge(
                goal_phase_state(row.source),
                goal_phase_state(row.target),
                row.operation,
                f"{guards}/ {row.activation}",
            )
        )
    return make_graph("goal", "Goal phases", GOAL_NONE, edges, source="planfold.kernel.goal.values.TRANSITIONS")


# --------------------------------------------------------------------------
# Plan status (plan.status.TRANSITIONS)

#: The plan diagram's name for "no plan yet".
PLAN_NONE = "no plan"


def plan_status_state(status: str | None) -> str:
    return PLAN_NONE if status is None else status


def plan_action_label(action: str, mode: str | None) -> str:
    """An action, with the only mode it is allowed in (if it is restricted)."""
    return action if mode is None else f"{action} ({mode})"


def plan_status_graph(transitions: Iterable[plan_status.Transition] = plan_status.TRANSITIONS) -> Graph:
    """The plan lifecycle: one edge per row, labelled with the action (and
    its mode when the row names one), noted with the row's checks."""
    edges = [
        Edge(
            plan_status_state(row.source),
            plan_status_state(row.target),
            plan_action_label(row.action, row.mode),
            f"[{', '.join(row.checks)}]" if row.checks else "",
        )
        for row in transitions
    ]
    return make_graph(
        "plan_status",
        "Plan status",
        PLAN_NONE,
        edges,
        PLAN_STATUSES,
        source="planfold.kernel.plan.status.TRANSITIONS",
    )


# --------------------------------------------------------------------------
# Runtime phases (plan status rows and plan-mode switches, classified by
# kernel.plan_context.runtime_phase)

#: Labels of the two plan-mode switches in the runtime-phase diagram.
MODE_ON = "plan mode on"
MODE_OFF = "plan mode off"

_PHASE_SPEC = PlanSpec("phase", ("step",), (), ("check",), (Todo("t", "todo", "pending"),))
_PHASE_SUMMARY = SummaryView("phase", ("step",), (), ("check",), ("t",))


def phase_of(plan_mode: bool, status: PlanStatus | None, verifying: bool) -> RuntimePhase:
    """The runtime phase of one cell (mode, plan status, verify sub-phase),
    as ``runtime_phase`` classifies a session in that cell."""
    current = None
    if status is not None:
        current = PlanArtifact("p", 1, status, _PHASE_SPEC, _PHASE_SUMMARY, 0, 0)
    plan = PlanState(current=current, verifying=verifying)
    return runtime_phase(SessionState(plan_mode=plan_mode, plan=plan))


def _verifying_after(row: plan_status.Transition, verifying: bool) -> bool:
    # A row that demands "not-verifying" enters the verify sub-phase; a row
    # that stays in execution without a verify check keeps it; any other row
    # leaves it.
    if "not-verifying" in row.checks:
        return True
    stays = row.source == row.target == "executing" and "verifying" not in row.checks
    return verifying and stays


def runtime_phase_graph(
    transitions: Iterable[plan_status.Transition] = plan_status.TRANSITIONS,
) -> Graph:
    """The runtime phases and the changes between them: every plan-status
    row and both plan-mode switches, applied to every (mode, status, verify
    sub-phase) cell they fit, keeping only those that change the phase.
    Edges are labelled with the plan action (or the switch)."""
    rows = tuple(transitions)
    cells = [
        (mode, status, verifying)
        for mode in (False, True)
        for status in (None, *PLAN_STATUSES)
        for verifying in ((False, True) if status == "executing" else (False,))
    ]
    edges: list[Edge] = []
    for mode, status, verifying in cells:
        before = phase_of(mode, status, verifying)
        switched = phase_of(not mode, status, verifying)
        edges.append(Edge(before, switched, MODE_OFF if mode else MODE_ON))
        for row in rows:
            if row.source != status or row.mode not in (None, "plan" if mode else "build"):
                continue
            if ("verifying" in row.checks and not verifying) or ("not-verifying" in row.checks and verifying):
                continue
            after = phase_of(mode, row.target, _verifying_after(row, verifying))
            edges.append(Edge(before, after, row.action))
    changes = [edge for edge in edges if edge.source != edge.target]
    source = "planfold.kernel.plan.status.TRANSITIONS and planfold.kernel.plan.context.runtime_phase"
    initial = phase_of(False, None, False)
    return make_graph("runtime_phase", "Runtime phases", initial, changes, RUNTIME_PHASES, source=source)


# --------------------------------------------------------------------------
# Tool-gate verdicts by phase (kernel.gate.VERDICT_TABLE)

#: What each rule of the verdict table does, as shown in the diagram.
RULE_TEXT: Mapping[RuleKind, str] = {
    "runtime": "routed to the runtime",
    "never": "refused in every mode",
    "deny": "refused, a warning if advisory",
    "classify": "refused unless a classifier proves the call read-only",
    "deployment": "allowed unless the deployment denies it",
}


def gate_graph(table: Mapping[tuple[RuntimePhase, ToolClass], PhaseRule] = VERDICT_TABLE) -> Graph:
    """The gate's verdict table as a graph: an edge from each phase to the
    rule it applies, labelled with the tool class. A decision table, not a
    machine: it has no initial state and no transitions between phases."""
    edges = [Edge(phase, RULE_TEXT[row.rule], tool_class) for (phase, tool_class), row in table.items()]
    source = "planfold.kernel.tools.gate.VERDICT_TABLE"
    return make_graph("gate", "Tool-gate verdicts by phase", None, edges, RUNTIME_PHASES, source=source)


def all_graphs() -> tuple[Graph, ...]:
    """Every machine's graph, drawn from the tables as they are: plan-mode
    choices, plan status, runtime phases, tool-gate verdicts, goal phases."""
    return (plan_mode_graph(), plan_status_graph(), runtime_phase_graph(), gate_graph(), goal_graph())
