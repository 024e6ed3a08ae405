"""The graph values behind the state diagrams: a graph refuses text it
cannot print and says which graph; reachability and table diffs say exactly
what they find; and each generator draws whatever table it is given (rows
missing, rows without checks, empty tables). That the real tables are the
real behaviour is ``test_graph_exploration``'s subject."""

from __future__ import annotations

import pytest

from planfold.kernel.graph import (
    PLAN_NONE,
    Edge,
    GraphDiff,
    GraphError,
    compare,
    gate_graph,
    make_graph,
    plan_mode_graph,
    plan_status_graph,
    reachable,
    runtime_phase_graph,
)
from planfold.kernel.phase import RUNTIME_PHASES
from planfold.kernel.plan.artifact import PLAN_STATUSES
from planfold.kernel.plan.mode import CHOICE_TABLE, PendingRelation
from planfold.kernel.plan.status import Transition
from planfold.kernel.tools.gate import PhaseRule

# --------------------------------------------------------------------------
# Graphs


def test_a_graph_made_without_a_source_has_none() -> None:
    assert make_graph("g", "A graph", "a", [Edge("a", "b", "go")]).source == ""


@pytest.mark.parametrize("edge", [Edge("a b;", "b", "go"), Edge("a", " b", "go"), Edge("a", "b", "go!")])
def test_a_bad_edge_end_or_label_is_refused_naming_the_graph(edge: Edge) -> None:
    with pytest.raises(GraphError) as caught:
        make_graph("my_graph", "Title", "a", [edge])
    assert str(caught.value).startswith("my_graph: ")


@pytest.mark.parametrize(
    ("title", "edge", "states", "source"),
    [
        ("bad\ttitle", Edge("a", "b", "go"), (), ""),
        ("Title", Edge("a", "b", "go", "bad\nnote"), (), ""),
        ("Title", Edge("a", "b", "go"), ("bad;state",), ""),
        ("Title", Edge("a", "b", "go"), (), "bad source!"),
    ],
)
def test_a_bad_text_is_refused_naming_the_graph(title: str, edge: Edge, states: tuple[str, ...], source: str) -> None:
    with pytest.raises(GraphError) as caught:
        make_graph("my_graph", title, "a", [edge], states, source=source)
    assert str(caught.value).startswith("my_graph: ")
    assert str(caught.value).endswith(" is not a printable state name or label")


def test_reachable_follows_edges_from_the_initial_state_only() -> None:
    graph = make_graph("g", "G", "a", [Edge("a", "b", "x"), Edge("b", "c", "y"), Edge("d", "e", "z")])
    assert reachable(graph) == frozenset({"a", "b", "c"})


def test_a_table_diff_lists_missing_then_extra_edges() -> None:
    table = make_graph("g", "G", "a", [Edge("a", "b", "x"), Edge("a", "c", "y")])
    diff = compare(table, [Edge("a", "b", "x"), Edge("c", "a", "w")])
    assert diff.describe() == "in the table, never taken: a -> c [y]\ntaken, not in the table: c -> a [w]"
    assert GraphDiff((), ()).describe() == "the table and the behaviour agree"


# --------------------------------------------------------------------------
# The generators


def test_an_empty_gate_table_still_shows_every_phase() -> None:
    assert gate_graph({}).states == tuple(sorted(RUNTIME_PHASES))
    one = gate_graph({("plan", "read"): PhaseRule("deployment")})
    assert one.edges == (Edge("plan", "allowed unless the deployment denies it", "read"),)


def test_an_empty_plan_table_still_shows_every_status() -> None:
    assert plan_status_graph(()).states == tuple(sorted((PLAN_NONE, *PLAN_STATUSES)))


def test_a_row_without_checks_has_no_note_and_a_row_with_checks_lists_them() -> None:
    rows = (
        Transition("start", "approved", "executing", "build", ()),
        Transition("complete", "executing", "completed", None, ("plan-ref", "verifying")),
    )
    notes = {edge.label: edge.note for edge in plan_status_graph(rows).edges}
    assert notes == {"start (build)": "", "complete": "[plan-ref, verifying]"}


def test_a_choice_missing_from_the_table_drops_only_its_own_edge() -> None:
    full = plan_mode_graph()
    missing = (PendingRelation.NONE, False, False)
    partial = plan_mode_graph({key: row for key, row in CHOICE_TABLE.items() if key != missing})
    assert len(full.edges) - len(partial.edges) == 2  # that row is reached from both recorded modes
    assert set(partial.edges) < set(full.edges)


def test_runtime_phases_follow_a_verify_entry_row_from_outside_execution() -> None:
    # A custom row that enters the verify sub-phase from "approved" ends in
    # verify only when applied from a cell that is not verifying.
    rows = (Transition("verify", "approved", "executing", "build", ("not-verifying",)),)
    graph = runtime_phase_graph(rows)
    assert Edge("build_execute", "verify", "verify") in graph.edges


def test_runtime_phases_skip_a_row_whose_verify_check_fails() -> None:
    rows = (Transition("complete", "executing", "completed", "build", ("verifying",)),)
    edges = runtime_phase_graph(rows).edges
    assert Edge("verify", "build_bootstrap", "complete") in edges
    assert Edge("build_execute", "build_bootstrap", "complete") not in edges


def test_a_row_that_needs_the_plan_not_verifying_is_drawn_from_execution_only() -> None:
    rows = (Transition("supersede", "executing", "completed", "build", ("not-verifying",)),)
    edges = runtime_phase_graph(rows).edges
    assert Edge("build_execute", "build_bootstrap", "supersede") in edges
    assert Edge("verify", "build_bootstrap", "supersede") not in edges


def test_only_execution_has_a_verify_sub_phase() -> None:
    # A row that needs the verify sub-phase never fits a plan that is not
    # executing, because only execution has that sub-phase.
    rows = (Transition("complete", "approved", "completed", "build", ("verifying",)),)
    assert not [edge for edge in runtime_phase_graph(rows).edges if edge.label == "complete"]
