"""The graph values, the renderers (machines as state diagrams and SVG by
Graphviz, the tool gate as a decision table), the section of docs/how-it-works.md, and the
freshness check: what is committed in specs/ is exactly what the code
generates."""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from xml.etree import ElementTree

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planfold.adapters.specgen.diagrams import (
    DECISION_TABLES,
    END_MARKER,
    HEADING,
    START_MARKER,
    dot,
    gate_table,
    main,
    mermaid,
    readme_section,
    update_readme,
    write_all,
)
from planfold.kernel.graph import RULE_TEXT, Edge, GraphError, all_graphs, make_graph
from planfold.kernel.phase import RUNTIME_PHASES
from planfold.kernel.tools.gate import TOOL_CLASSES, VERDICT_TABLE
from tests.system_programs import graphviz

ROOT = Path(__file__).resolve().parents[3]
SPECS = ROOT / "specs"
README = ROOT / "docs" / "how-it-works.md"
FIX = (
    "regenerate with `make diagrams` (python -m planfold.adapters.specgen.diagrams specs) "
    "and commit specs/ and docs/how-it-works.md"
)

#: Hand-written files in specs/ (not generated) and files only made where
#: Graphviz is installed (never compared).
HANDWRITTEN = frozenset({"README.md"})


def _generated_files(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.name not in HANDWRITTEN and path.suffix != ".svg"
    }


# --------------------------------------------------------------------------
# CI freshness


def test_committed_specs_are_what_the_code_generates(tmp_path: Path) -> None:
    write_all(tmp_path, svg=False)
    fresh, committed = _generated_files(tmp_path), _generated_files(SPECS)
    for name in sorted(fresh.keys() | committed.keys()):
        assert name in committed, f"specs/{name} is missing: {FIX}"
        assert name in fresh, f"specs/{name} is no longer generated: delete it, or {FIX}"
        assert committed[name] == fresh[name], f"specs/{name} differs from what the code generates: {FIX}"


def test_the_how_it_works_page_embeds_the_current_diagrams() -> None:
    text = README.read_text(encoding="utf-8")
    fresh = update_readme(text, readme_section(all_graphs(), "../specs"))
    assert fresh == text, f"docs/how-it-works.md's diagrams are stale: {FIX}"
    assert text.index(HEADING) < text.index(START_MARKER) < text.index(END_MARKER)


# --------------------------------------------------------------------------
# Graph values


def test_graphs_are_normalised_and_deduplicated() -> None:
    edges = [Edge("b", "a", "x"), Edge("a", "b", "y", "note"), Edge("a", "b", "y", "note")]
    graph = make_graph("g", "G", "a", edges, ["c"])
    assert graph.states == ("a", "b", "c")
    assert graph.edges == (Edge("a", "b", "y"), Edge("b", "a", "x"))
    assert graph.edges[0].note == "note"


@pytest.mark.parametrize(
    ("name", "edges", "why"),
    [
        ("Bad-Name", [Edge("a", "b", "x")], "lower_snake_case"),
        ("g", [Edge("a", "b", "x: y")], "printable"),
        ("g", [Edge("a", "b\n", "x")], "printable"),
        ("g", [Edge("a", "b", 'say "hi"')], "printable"),
        ("g", [Edge("a", "b", "x", "one"), Edge("a", "b", "x", "two")], "two notes"),
        ("g", [Edge("a", "b", "")], "printable"),
    ],
)
def test_a_graph_that_cannot_be_drawn_is_refused(name: str, edges: list[Edge], why: str) -> None:
    with pytest.raises(GraphError, match=why) as caught:
        make_graph(name, "G", "a", edges)
    assert caught.value.code == "invalid-graph"


def test_every_machine_is_drawn_with_its_source() -> None:
    graphs = all_graphs()
    assert [g.name for g in graphs] == ["plan_mode", "plan_status", "runtime_phase", "gate", "goal"]
    assert all(g.source.startswith("planfold.kernel.") and g.edges for g in graphs)
    assert next(g for g in graphs if g.name == "gate").initial is None


# --------------------------------------------------------------------------
# Renderers

labels = st.text(alphabet="abc xyz-()/", min_size=1, max_size=6).map(str.strip).filter(bool)
edge_lists = st.lists(st.builds(Edge, st.sampled_from(["s1", "s 2", "s-3"]), st.sampled_from(["s1", "s 2"]), labels),
                      min_size=1, max_size=8)


@given(edge_lists, st.randoms(use_true_random=False))
def test_rendering_ignores_the_order_edges_come_in(edges: list[Edge], rnd: random.Random) -> None:
    shuffled = list(edges)
    rnd.shuffle(shuffled)
    one, two = make_graph("g", "G", "s1", edges), make_graph("g", "G", "s1", shuffled)
    assert mermaid(one) == mermaid(two) and dot(one) == dot(two)
    assert mermaid(one).count(" --> ") == len(one.edges) + 1
    assert dot(one).count(" -> ") == len(one.edges) + 1


def test_mermaid_declares_every_state_and_draws_every_edge() -> None:
    graph = make_graph("g", "Title", "no goal", [Edge("no goal", "active", "create", "[fresh-id] / arm")])
    lines = mermaid(graph).splitlines()
    assert lines[1].startswith("    %% Title.")
    assert lines[:1] + lines[2:] == [
        "stateDiagram-v2",
        "    direction LR",
        '    state "active" as active',
        '    state "no goal" as no_goal',
        "    [*] --> no_goal",
        "    no_goal --> active : create [fresh-id] / arm",
    ]


def test_dot_quotes_names_and_marks_the_start() -> None:
    graph = make_graph("g", "Title", "no goal", [Edge("no goal", "active", "create")])
    text = dot(graph)
    assert text.splitlines()[1] == 'digraph "g" {'
    assert '  "__start__" -> "no goal";' in text and '  "no goal" -> "active" [label="create"];' in text
    assert text.endswith("}\n")


def test_a_decision_table_has_no_start() -> None:
    graph = make_graph("t", "T", None, [Edge("plan", "refused", "write")])
    assert "[*]" not in mermaid(graph) and "__start__" not in dot(graph)


def test_states_whose_ids_collide_are_refused() -> None:
    graph = make_graph("g", "G", "a b", [Edge("a b", "a-b", "x")])
    with pytest.raises(ValueError, match="share the id"):
        mermaid(graph)


# --------------------------------------------------------------------------
# The README section

SECTION = f"{START_MARKER}\nnew\n{END_MARKER}"


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            f"# x\n\n{HEADING}\n\n{START_MARKER}\nold\n{END_MARKER}\n\n## y\n",
            f"# x\n\n{HEADING}\n\n{SECTION}\n\n## y\n",
        ),
        (f"# x\n\n{HEADING}\n\n## y\n", f"# x\n\n{HEADING}\n\n{SECTION}\n\n## y\n"),
        ("# x\n\ntext", f"# x\n\ntext\n\n{HEADING}\n\n{SECTION}\n"),
        ("", f"\n{HEADING}\n\n{SECTION}\n"),
    ],
)
def test_the_section_goes_between_the_markers_under_the_heading(before: str, after: str) -> None:
    assert update_readme(before, SECTION) == after
    assert update_readme(after, SECTION) == after


@pytest.mark.parametrize(
    "broken",
    [f"{END_MARKER}\n{START_MARKER}\n", f"{START_MARKER}\n", f"{START_MARKER}{END_MARKER}{START_MARKER}{END_MARKER}"],
)
def test_broken_markers_are_refused(broken: str) -> None:
    with pytest.raises(ValueError, match="markers"):
        update_readme(broken, SECTION)


def test_the_section_embeds_every_machine_as_a_diagram_linked_to_its_svg_and_the_gate_as_a_table() -> None:
    section = readme_section(all_graphs())
    assert section.startswith(START_MARKER) and section.endswith(END_MARKER)
    machines = [graph for graph in all_graphs() if graph.name not in DECISION_TABLES]
    assert [graph.name for graph in machines] == ["plan_mode", "plan_status", "runtime_phase", "goal"]
    for graph in all_graphs():
        assert f"### {graph.title}" in section
    for graph in machines:
        assert mermaid(graph).rstrip("\n") in section
        assert f"([SVG](specs/{graph.name}.svg))" in section
    assert section.count("```mermaid") == len(machines)
    assert gate_table() in section and "stateDiagram" not in section.split("### Tool-gate verdicts")[1].split("###")[0]


def test_the_gate_is_a_decision_table_of_phase_and_tool_class() -> None:
    text = gate_table()
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert [row.split(" | ")[0] for row in rows] == [f"| `{name}`" for name in TOOL_CLASSES]
    header = next(line for line in text.splitlines() if line.startswith("| tool class"))
    assert header == "| tool class | " + " | ".join(f"`{phase}`" for phase in RUNTIME_PHASES) + " |"
    for row, tool_class in zip(rows, TOOL_CLASSES, strict=True):
        cells = [cell.strip() for cell in row.strip("|").split("|")][1:]
        for cell, phase in zip(cells, RUNTIME_PHASES, strict=True):
            rule = VERDICT_TABLE[(phase, tool_class)]
            assert cell.startswith(RULE_TEXT[rule.rule]), (phase, tool_class)
            assert (f"`{rule.code}`" in cell) == bool(rule.code), (phase, tool_class)


# --------------------------------------------------------------------------
# Writing


def test_write_all_refreshes_the_readme_and_removes_stale_files(tmp_path: Path) -> None:
    out, readme = tmp_path / "specs", tmp_path / "README.md"
    out.mkdir()
    readme.write_text(f"# p\n\n{HEADING}\n\nrest\n", encoding="utf-8")
    (out / "retired.mmd").write_text("old", encoding="utf-8")
    (out / "retired.svg").write_text("old", encoding="utf-8")
    (out / "README.md").write_text("hand-written", encoding="utf-8")
    written = write_all(out, readme, svg=False)
    assert not (out / "retired.mmd").exists() and not (out / "retired.svg").exists()
    assert (out / "README.md").read_text(encoding="utf-8") == "hand-written"
    assert readme in written and "rest" in readme.read_text(encoding="utf-8")
    assert readme not in write_all(out, readme, svg=False)  # unchanged the second time


def test_a_page_in_another_folder_links_the_svgs_relative_to_itself(tmp_path: Path) -> None:
    page = tmp_path / "docs" / "how-it-works.md"
    page.parent.mkdir()
    page.write_text(f"# p\n\n{HEADING}\n", encoding="utf-8")
    write_all(tmp_path / "specs", page, svg=False)
    assert "([SVG](../specs/plan_mode.svg))" in page.read_text(encoding="utf-8")


def test_the_entry_point_refreshes_the_how_it_works_page_beside_the_specs_folder(tmp_path: Path) -> None:
    page = tmp_path / "docs" / "how-it-works.md"
    page.parent.mkdir()
    page.write_text(f"# p\n\n{HEADING}\n", encoding="utf-8")
    assert main([str(tmp_path / "specs"), "--no-svg"]) == 0
    assert START_MARKER in page.read_text(encoding="utf-8") and not (tmp_path / "README.md").exists()


def _states_drawn(svg: Path) -> set[str]:
    root = ElementTree.parse(svg).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    return {"".join(node.itertext()) for node in root.iter("{http://www.w3.org/2000/svg}text")}


def test_graphviz_renders_an_svg_of_every_machine(tmp_path: Path) -> None:
    graphviz()  # skipped without Graphviz, failed under PLANFOLD_REQUIRE_GRAPHVIZ=1
    written = write_all(tmp_path / "with")
    svgs = sorted(path.name for path in written if path.suffix == ".svg")
    machines = [graph for graph in all_graphs() if graph.name not in DECISION_TABLES]
    assert svgs == sorted(f"{graph.name}.svg" for graph in machines)
    for graph in machines:
        assert set(graph.states) <= _states_drawn(tmp_path / "with" / f"{graph.name}.svg"), graph.name
    assert not (tmp_path / "with" / "gate.svg").exists() and (tmp_path / "with" / "gate.md").exists()


def test_without_graphviz_no_svg_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert not [path for path in write_all(tmp_path / "none") if path.suffix == ".svg"]
    assert not list((tmp_path / "none").glob("*.svg"))


def test_the_svgs_the_how_it_works_page_links_are_committed() -> None:
    for graph in all_graphs():
        svg = SPECS / f"{graph.name}.svg"
        if graph.name in DECISION_TABLES:
            assert not svg.exists() and not (SPECS / f"{graph.name}.mmd").exists()
            continue
        assert f"../specs/{graph.name}.svg" in README.read_text(encoding="utf-8")
        assert set(graph.states) <= _states_drawn(svg), f"specs/{graph.name}.svg is stale: {FIX}"


def test_the_entry_point_writes_everything(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# p\n", encoding="utf-8")
    assert main([str(tmp_path / "specs"), "--readme", str(readme), "--no-svg"]) == 0
    assert (tmp_path / "specs" / "events.schema.json").exists()
    assert (tmp_path / "specs" / "vectors" / "valid.empty.jsonl").exists()
    assert START_MARKER in readme.read_text(encoding="utf-8")
    assert "wrote" in capsys.readouterr().out
