"""The report's diagrams: laid out by Graphviz when the package is built,
shipped with a stable id on every state and edge of the tables, and only
marked by id when a report is made."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path
from xml.etree import ElementTree

import pytest

from planfold.adapters.report import diagram
from planfold.adapters.report.diagram import DiagramMissingError, marked_svg, marks, shipped_svg
from planfold.adapters.report.machines import (
    MACHINES,
    edge_id,
    known_extras,
    machine_graphs,
    observable,
    state_id,
)
from planfold.adapters.specgen.diagrams import report_dot, write_report_diagrams
from planfold.kernel.graph import Edge
from tests.system_programs import graphviz

SVG = "{http://www.w3.org/2000/svg}"
SHIPPED = Path(diagram.__file__).parent / "diagrams"
FIX = "regenerate with `make diagrams`"


def _ids(svg_text: str, kind: str) -> set[str]:
    root = ElementTree.fromstring(svg_text)
    return {g.get("id", "") for g in root.iter(f"{SVG}g") if kind in (g.get("class") or "").split()}


@pytest.mark.parametrize("machine", MACHINES)
def test_the_shipped_diagram_holds_every_state_and_edge_of_the_table_by_its_id(machine: str) -> None:
    graph = machine_graphs()[machine]
    text = (SHIPPED / f"{machine}.svg").read_text(encoding="utf-8")
    edges = {edge_id(machine, e) for e in (*graph.edges, *known_extras(machine))}
    assert _ids(text, "edge") == edges | {f"{machine}-initial"}, f"{machine}.svg is stale: {FIX}"
    assert _ids(text, "node") == {state_id(machine, s) for s in graph.states} | {f"{machine}-start"}, FIX


def test_every_id_is_stable_and_read_from_names_and_labels() -> None:
    edge = Edge("draft", "approved", "approve")
    assert edge_id("plan_status", edge) == "plan_status-e-draft-approved-approve"
    assert state_id("plan_status", "no plan") == "plan_status-s-no-plan"
    for machine in MACHINES:
        dot = report_dot(machine)
        assert dot == report_dot(machine) and "__start__" in dot


@pytest.mark.parametrize("machine", MACHINES)
def test_graphviz_lays_out_the_shipped_diagrams_again_with_the_same_ids(machine: str, tmp_path: Path) -> None:
    graphviz()  # skipped without Graphviz, failed where the run requires it
    written = write_report_diagrams(tmp_path)
    assert sorted(p.name for p in written) == sorted(f"{m}.svg" for m in MACHINES)
    fresh = (tmp_path / f"{machine}.svg").read_text(encoding="utf-8")
    shipped = (SHIPPED / f"{machine}.svg").read_text(encoding="utf-8")
    assert "&#45;" not in fresh
    for kind in ("node", "edge"):
        assert _ids(fresh, kind) == _ids(shipped, kind)


def test_without_graphviz_the_diagrams_are_refused_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(FileNotFoundError, match="Graphviz's dot is not installed"):
        write_report_diagrams(tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_marking_changes_only_the_marked_groups_and_never_the_layout() -> None:
    machine = "plan_status"
    graph = machine_graphs()[machine]
    first = graph.edges[0]
    drawn = marks(machine, graph, Counter({first: 3}), [], lambda e: observable(machine, e))
    svg = marked_svg(machine, graph.title, drawn, frozenset({first.source}), graph)
    shipped = shipped_svg(machine)
    geometry = re.compile(r' (?:d|points|x|y|cx|cy)="[^"]*"')
    assert geometry.findall(svg) == geometry.findall(shipped)  # no coordinate moved
    ident = edge_id(machine, first)
    assert f'class="edge table taken w2" data-edge="{ident}"' in svg and f'<a href="#{ident}-row">' in svg
    assert "taken 3×" in svg and svg.count(' class="edge table never"') == len(graph.edges) - 1
    assert f'id="{state_id(machine, first.source)}" class="node state visited"' in svg
    assert svg.startswith('<svg class="machine" role="img"') and 'width="' not in svg.split(">", 1)[0]


def test_a_taken_edge_off_the_table_is_drawn_only_when_the_picture_has_it() -> None:
    machine = "plan_mode"
    graph = machine_graphs()[machine]
    flush = known_extras(machine)[1]
    unknown = Edge("build", "plan", "from nowhere")
    drawn = marks(machine, graph, Counter({flush: 2, unknown: 1}), [flush, unknown], lambda e: observable(machine, e))
    svg = marked_svg(machine, graph.title, drawn, frozenset(), graph)
    assert f'class="edge extra extra w2" data-edge="{edge_id(machine, flush)}"' in svg
    assert edge_id(machine, unknown) not in svg  # listed in the page's table only
    assert 'class="edge extra"' in svg  # the extras not taken stay in the picture, hidden by the style sheet


def test_a_package_without_its_diagrams_is_refused_as_incomplete(monkeypatch: pytest.MonkeyPatch) -> None:
    shipped_svg.cache_clear()
    monkeypatch.setattr(diagram, "__package__", "planfold.kernel")
    try:
        with pytest.raises(DiagramMissingError, match="installation is incomplete") as caught:
            shipped_svg("goal")
        assert caught.value.code == "report-diagram-missing"
    finally:
        monkeypatch.undo()
        shipped_svg.cache_clear()
