"""The report's own SVG layout: every state and edge of each machine's table
is drawn inside the picture, each edge once and in its style, and the
picture depends on nothing but the graph and the counts."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from planfold.adapters.report.machines import MACHINES, machine_graphs, observable
from planfold.adapters.report.svg import layout_edges, render_svg
from planfold.kernel.graph import Edge


@pytest.mark.parametrize("machine", MACHINES)
def test_every_state_and_edge_is_drawn_inside_the_picture(machine: str) -> None:
    graph = machine_graphs()[machine]
    first = graph.edges[0]
    extra = Edge(graph.states[0], graph.states[-1], "off the table")
    drawn = layout_edges(graph, Counter({first: 3, extra: 1}), [extra], lambda e: observable(machine, e), machine)
    svg = render_svg(graph, machine, drawn, frozenset({first.source}))
    assert svg == render_svg(graph, machine, drawn, frozenset({first.source}))
    width, height = (float(v) for v in re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg).groups())  # type: ignore[union-attr]
    for x, y in re.findall(r'<rect x="([-\d.]+)" y="([-\d.]+)"', svg):
        assert 0 <= float(x) <= width and 0 <= float(y) <= height
    for path in re.findall(r'class="line" d="([^"]+)"', svg):
        numbers = [float(n) for n in re.findall(r"-?[\d.]+", path)]
        assert all(-1 <= n <= max(width, height) + 1 for n in numbers), path
    assert svg.count('<g class="edge ') == len(graph.edges) + 1
    assert svg.count('<g class="state') == len(graph.states)
    styles = Counter(d.style for d in drawn)
    assert styles["taken"] == 1 and styles["extra"] == 1
    assert f'data-edge="{machine}-e0"' in svg and "×3" in svg
    if machine == "plan_mode":
        assert styles["hidden"] > 0 and 'class="edge hidden"' in svg
