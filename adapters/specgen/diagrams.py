"""Render the machines' graphs and write everything ``specs/`` holds.

Theory of operation
-------------------
``kernel.graph`` reads each machine's transition table into a ``Graph``.
This module only prints them: ``mermaid`` and ``dot`` are separate pure
renderers whose output depends on nothing but the graph (states and edges
come sorted, so the text is stable), and ``readme_section`` embeds them in
the documentation page ``docs/how-it-works.md`` between the markers
``<!-- diagrams:start -->`` and ``<!-- diagrams:end -->``, under the
"## State diagrams and decision tables" heading.

A machine with states (plan mode, plan status, runtime phase, goal) is drawn
as a state diagram. A decision table is not a machine: the tool gate's
verdicts (phase x tool class -> verdict and basis, ``VERDICT_TABLE``) have
no states to move between, and drawn as a graph they are a tangle of
crossing edges, so ``DECISION_TABLES`` renders them as a Markdown table
(``gate_table``) in ``specs/gate.md`` and in that page instead.

``write_all(out_dir)`` writes every generated file of ``specs/``: one
``.mmd`` and one ``.dot`` per machine, and its ``.svg`` rendered by
Graphviz's ``dot`` where it is installed (CI installs it; the page links
the committed SVGs, which the freshness check leaves alone because their
bytes vary with the Graphviz version); one ``.md`` per decision table; the
event schema ``events.schema.json``, the OpenRPC document of ``planfold
serve`` (``rpc.openrpc.json``), the table of errors (``errors.md``) and the
conformance vectors in ``vectors/``. It removes generated files that no
longer correspond to anything, so a removed machine or vector cannot linger.
``python -m adapters.specgen.diagrams specs`` runs it and also refreshes the page's
sections; the CI freshness test regenerates into a temporary directory and
compares.

The report's diagrams are laid out here too, once, when the package is
built, never when a report is made: ``report_dot`` writes a machine's graph
(its table's edges and the edges a log can take off the table,
``report.machines.known_extras``) with a stable element id on every state and
edge (``report.machines.state_id`` and ``edge_id``, read from the names and
labels), and ``write_report_diagrams`` has Graphviz lay each out as SVG into
``adapters/report/diagrams/`` (``--report-diagrams DIR``; ``make diagrams``
does it), which the package ships. The report only marks, by id, the edges a
session took (``report.diagram``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import get_args

from ...kernel.graph import RULE_TEXT, Edge, Graph, all_graphs
from ...kernel.phase import RUNTIME_PHASES, RuntimePhase
from ...kernel.tools.gate import TOOL_CLASSES, VERDICT_TABLE, PhaseRule, ToolClass
from ..codec.schema import schema_text
from ..report.machines import MACHINES, edge_id, known_extras, machine_graphs, state_id
from ..runtime.machine import ANSWERS, DRIVERS, Stage
from ..serve.openrpc import OPENRPC_FILE, openrpc_text
from .errors_table import error_table
from .vectors import VECTOR_DIR, write_vectors

__all__ = [
    "DECISION_TABLES",
    "END_MARKER",
    "HEADING",
    "REPORT_DIAGRAMS",
    "SCHEMA_FILE",
    "START_MARKER",
    "dot",
    "gate_table",
    "main",
    "mermaid",
    "readme_section",
    "report_dot",
    "update_readme",
    "write_all",
    "write_report_diagrams",
]

START_MARKER = "<!-- diagrams:start -->"
END_MARKER = "<!-- diagrams:end -->"
HEADING = "## State diagrams and decision tables"
SCHEMA_FILE = "events.schema.json"
ERRORS_FILE = "errors.md"
_NOTICE = "Generated from the transition tables by `make diagrams`; do not edit by hand."


def _edge_text(edge: Edge) -> str:
    return f"{edge.label} {edge.note}" if edge.note else edge.label


def _ids(graph: Graph) -> dict[str, str]:
    """A Mermaid identifier per state: lower-case words joined by ``_``."""
    ids: dict[str, str] = {}
    for state in graph.states:
        ident = "".join(ch if ch.isalnum() else " " for ch in state.lower()).split()
        name = "_".join(ident)
        if name in ids.values():
            raise ValueError(f"{graph.name}: states {state!r} and another share the id {name!r}")
        ids[state] = name
    return ids


def mermaid(graph: Graph) -> str:
    """A Mermaid ``stateDiagram-v2`` of ``graph``."""
    ids = _ids(graph)
    lines = ["stateDiagram-v2", f"    %% {graph.title}. {_NOTICE}", "    direction LR"]
    lines += [f'    state "{state}" as {ids[state]}' for state in graph.states]
    if graph.initial is not None:
        lines.append(f"    [*] --> {ids[graph.initial]}")
    lines += [f"    {ids[e.source]} --> {ids[e.target]} : {_edge_text(e)}" for e in graph.edges]
    return "\n".join(lines) + "\n"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def dot(graph: Graph) -> str:
    """A Graphviz ``digraph`` of ``graph``."""
    lines = [
        f"// {graph.title}. {_NOTICE}",
        f"digraph {_quote(graph.name)} {{",
        f"  label={_quote(graph.title)};",
        "  labelloc=t;",
        "  rankdir=LR;",
        '  node [shape=box, style=rounded, fontname="Helvetica"];',
        '  edge [fontname="Helvetica", fontsize=10];',
    ]
    if graph.initial is not None:
        lines.append('  "__start__" [shape=point, label=""];')
    lines += [f"  {_quote(state)};" for state in graph.states]
    if graph.initial is not None:
        lines.append(f'  "__start__" -> {_quote(graph.initial)};')
    lines += [
        f"  {_quote(e.source)} -> {_quote(e.target)} [label={_quote(_edge_text(e))}];" for e in graph.edges
    ]
    lines.append("}")
    return "\n".join(lines) + "\n"


#: Where the package keeps the report's diagrams, from the repository's top.
REPORT_DIAGRAMS = Path("adapters") / "report" / "diagrams"


def report_dot(machine: str) -> str:
    """The Graphviz ``digraph`` of ``machine`` as the report shows it: every
    state and edge with its stable id and class (``table`` or ``extra``)."""
    graph = machine_graphs()[machine]
    edges = (*graph.edges, *(e for e in known_extras(machine) if e not in set(graph.edges)))
    ids = [edge_id(machine, e) for e in edges] + [state_id(machine, s) for s in graph.states]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{machine}: two states or edges share an element id")
    lines = [
        f"// {graph.title}: the report's diagram. {_NOTICE}",
        f"digraph {_quote(machine)} {{",
        f"  id={_quote(machine + '-graph')};",
        "  rankdir=LR; nodesep=0.35; ranksep=0.7; pad=0.15;",
        '  node [shape=box, style="rounded,filled", fillcolor="#ffffff", fontname="Helvetica", fontsize=12, '
        "margin=\"0.18,0.06\"];",
        '  edge [fontname="Helvetica", fontsize=10, arrowsize=0.7];',
    ]
    if graph.initial is not None:
        lines.append(f'  "__start__" [shape=point, width=0.12, id={_quote(machine + "-start")}, class="start"];')
    lines += [f"  {_quote(s)} [id={_quote(state_id(machine, s))}, class=\"state\"];" for s in graph.states]
    if graph.initial is not None:
        lines.append(f'  "__start__" -> {_quote(graph.initial)} [id={_quote(machine + "-initial")}, class="initial"];')
    table = set(graph.edges)
    for e in edges:
        kind = "table" if e in table else "extra"
        # a label wider than Graphviz measures it in a browser's font still fits its place
        label = f" {e.label} "
        lines.append(
            f"  {_quote(e.source)} -> {_quote(e.target)} [id={_quote(edge_id(machine, e))}, class={_quote(kind)}, "
            f"label={_quote(label)}];"
        )
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_report_diagrams(directory: Path, program: str | None = None) -> tuple[Path, ...]:
    """Lay out every machine of the report with Graphviz's ``dot`` as
    ``directory/<machine>.svg``; ``FileNotFoundError`` without Graphviz."""
    found = program or shutil.which("dot")
    if found is None:
        raise FileNotFoundError("Graphviz's dot is not installed: the report's diagrams are laid out by it")
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for machine in MACHINES:
        target = directory / f"{machine}.svg"
        done = subprocess.run([found, "-Tsvg"], input=report_dot(machine).encode("utf-8"), capture_output=True,
                              check=True)
        # Graphviz writes every "-" as a character reference; the report finds its ids as they are
        # and names the XLink namespace, which nothing in the picture uses
        text = done.stdout.replace(b"&#45;", b"-").replace(b' xmlns:xlink="http://www.w3.org/1999/xlink"', b"")
        target.write_bytes(text)
        written.append(target)
    return tuple(written)


def gate_table(table: Mapping[tuple[RuntimePhase, ToolClass], PhaseRule] = VERDICT_TABLE) -> str:
    """The tool gate's verdicts as a Markdown decision table: a row per tool
    class, a column per runtime phase, each cell the verdict and the code a
    refusal carries."""
    lines = [
        "| tool class | " + " | ".join(f"`{phase}`" for phase in RUNTIME_PHASES) + " |",
        "|---|" + "---|" * len(RUNTIME_PHASES),
    ]
    for tool_class in TOOL_CLASSES:
        cells = []
        for phase in RUNTIME_PHASES:
            row = table[(phase, tool_class)]
            cells.append(RULE_TEXT[row.rule] + (f" (`{row.code}`)" if row.code else ""))
        lines.append(f"| `{tool_class}` | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


#: The graphs that are decision tables, not machines, and their renderers.
DECISION_TABLES: Mapping[str, Callable[[], str]] = {"gate": gate_table}


def _table_file(graph: Graph) -> str:
    """The Markdown file of a decision table."""
    lines = [f"# {graph.title}", "", f"<!-- {_NOTICE} -->", "", f"From `{graph.source}`.", ""]
    return "\n".join([*lines, DECISION_TABLES[graph.name]()])


def readme_section(graphs: Iterable[Graph], specs: str = "specs") -> str:
    """The page text between (and including) the two markers; ``specs`` is
    where the page finds the SVG files."""
    parts = [START_MARKER, f"<!-- {_NOTICE} -->", ""]
    for graph in graphs:
        parts += [f"### {graph.title}", ""]
        table = DECISION_TABLES.get(graph.name)
        source = f"From `{graph.source}`" if graph.source else ""
        if table is not None:
            parts += [f"{source}, a decision table (not a machine).", "", table().rstrip("\n"), ""]
            continue
        parts += [f"{source} ([SVG]({specs}/{graph.name}.svg)).", ""]
        parts += ["```mermaid", mermaid(graph).rstrip("\n"), "```", ""]
    parts.append(END_MARKER)
    return "\n".join(parts)


def update_readme(text: str, section: str) -> str:
    """``text`` with its diagrams section replaced by ``section``.

    Without the markers, the section goes right under the "## State
    diagrams" heading, or under a new heading at the end. Raises
    ``ValueError`` when the markers are out of order or repeated.
    """
    start, end = text.find(START_MARKER), text.find(END_MARKER)
    if start >= 0 or end >= 0:
        if start < 0 or end < start or text.count(START_MARKER) != 1 or text.count(END_MARKER) != 1:
            raise ValueError("the page's diagram markers must appear once each, start before end")
        return text[:start] + section + text[end + len(END_MARKER) :]
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines):
        if line.rstrip() == HEADING:
            return "".join([*lines[: index + 1], "\n", section, "\n", *lines[index + 1 :]])
    prefix = text if not text or text.endswith("\n") else text + "\n"
    return f"{prefix}\n{HEADING}\n\n{section}\n"


RUNTIME_START = "<!-- runtime:start -->"
RUNTIME_END = "<!-- runtime:end -->"


def runtime_picture() -> str:
    """A Mermaid flowchart of the step machine and its drivers, drawn from
    ``adapters.runtime.machine``'s ``DRIVERS`` and ``ANSWERS`` tables and
    its ``Stage`` values."""
    lines = ["flowchart LR", '  subgraph drivers["drivers: the I/O"]']
    lines += [f'    {cls}["{cls}<br/>({how})"]' for _, cls, how in DRIVERS]
    stages = ", ".join(get_args(Stage))
    lines += [
        "  end",
        f'  machine(["StepMachine<br/>no I/O but its log<br/>stages: {stages}"])',
        '  kernel[["kernel: turn rules, plan decisions,<br/>tool gate, strict folds"]]',
        '  store[("session log<br/>memory, SQLite, PostgreSQL")]',
        '  drivers -- "next_action()" --> machine',
    ]
    for action, answers in ANSWERS.items():
        answer = "answered by " + " or ".join(f"{name}()" for name in answers) if answers else "with its report"
        lines.append(f'  machine -. "{action.__name__}, {answer}" .-> drivers')
    lines += [
        '  machine -- "state, what happened" --> kernel',
        '  kernel -- "drafts" --> machine',
        '  machine -- "one atomic append per operation" --> store',
    ]
    return "\n".join(lines) + "\n"


def runtime_section() -> str:
    """The page text between (and including) the runtime picture's markers."""
    body = ["```mermaid", runtime_picture().rstrip("\n"), "```"]
    return "\n".join([RUNTIME_START, f"<!-- {_NOTICE} -->", "", *body, "", RUNTIME_END])


def update_runtime_picture(text: str) -> str:
    """``text`` with the runtime picture between its markers redrawn (text
    without the markers is returned as it is)."""
    start, end = text.find(RUNTIME_START), text.find(RUNTIME_END)
    if start < 0 or end < start:
        return text
    return text[:start] + runtime_section() + text[end + len(RUNTIME_END) :]


def _write(path: Path, text: str, written: list[Path]) -> None:
    path.write_text(text, encoding="utf-8")
    written.append(path)


def _remove_stale(directory: Path, patterns: Sequence[str], keep: set[Path]) -> None:
    for pattern in patterns:
        for path in directory.glob(pattern):
            if path not in keep:
                path.unlink()


def write_all(out_dir: Path, readme: Path | None = None, *, svg: bool = True) -> tuple[Path, ...]:
    """Write every generated file into ``out_dir`` (diagrams, schema,
    vectors) and, when ``readme`` is given, refresh its diagrams section.
    Returns the paths written. ``svg`` False skips Graphviz even when it is
    installed."""
    out_dir.mkdir(parents=True, exist_ok=True)
    graphs = all_graphs()
    written: list[Path] = []
    program = shutil.which("dot") if svg else None
    for graph in graphs:
        if graph.name in DECISION_TABLES:
            _write(out_dir / f"{graph.name}.md", _table_file(graph), written)
            continue
        _write(out_dir / f"{graph.name}.mmd", mermaid(graph), written)
        _write(out_dir / f"{graph.name}.dot", dot(graph), written)
        if program is not None:
            target = out_dir / f"{graph.name}.svg"
            subprocess.run([program, "-Tsvg", "-o", str(target), str(out_dir / f"{graph.name}.dot")], check=True)
            written.append(target)
    machines = {graph.name for graph in graphs if graph.name not in DECISION_TABLES}
    keep = set(written) | {out_dir / f"{name}.svg" for name in machines}
    _remove_stale(out_dir, ("*.mmd", "*.dot", "*.svg"), keep)
    _remove_stale(out_dir, tuple(f"{name}.*" for name in DECISION_TABLES), keep)
    _write(out_dir / "runtime.mmd", runtime_picture(), written)
    _write(out_dir / SCHEMA_FILE, schema_text(), written)
    _write(out_dir / OPENRPC_FILE, openrpc_text(), written)
    _write(out_dir / ERRORS_FILE, error_table(), written)
    written += write_vectors(out_dir / VECTOR_DIR)
    if readme is not None:
        current = readme.read_text(encoding="utf-8") if readme.exists() else ""
        specs = Path(os.path.relpath(out_dir.resolve(), readme.resolve().parent)).as_posix()
        updated = update_runtime_picture(update_readme(current, readme_section(graphs, specs)))
        if updated != current:
            _write(readme, updated, written)
    return tuple(written)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m adapters.specgen.diagrams [OUT_DIR] [--readme PATH] [--no-svg] [--report-diagrams DIR]``."""
    parser = argparse.ArgumentParser(prog="python -m adapters.specgen.diagrams", description=main.__doc__)
    parser.add_argument("out_dir", nargs="?", default="specs", help="where to write (default: specs)")
    parser.add_argument(
        "--readme", help="the page to refresh (default: docs/how-it-works.md beside OUT_DIR)"
    )
    parser.add_argument("--no-svg", action="store_true", help="do not run Graphviz even if installed")
    parser.add_argument("--report-diagrams", metavar="DIR",
                        help="only lay out the report's diagrams into DIR (make diagrams: adapters/report/diagrams)")
    args = parser.parse_args(argv)
    if args.report_diagrams:
        done = write_report_diagrams(Path(args.report_diagrams))
        print(f"wrote {len(done)} diagrams under {args.report_diagrams}")
        return 0
    out_dir = Path(args.out_dir)
    readme = Path(args.readme) if args.readme else out_dir.resolve().parent / "docs" / "how-it-works.md"
    written = write_all(out_dir, readme, svg=not args.no_svg)
    print(f"wrote {len(written)} files under {out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
