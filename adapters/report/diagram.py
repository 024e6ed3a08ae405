"""The machines' diagrams as the page shows them: laid out by Graphviz when
the package was built, marked here with what a session did.

Theory of operation
-------------------
``make diagrams`` lays out each machine once with Graphviz
(``specgen.diagrams.write_report_diagrams``) into ``diagrams/<machine>.svg``
beside this module, which the package ships; every state and edge there
carries a stable element id read from its name and label
(``machines.state_id``, ``machines.edge_id``). No layout runs when a report
is made: ``marked_svg`` reads the shipped picture and changes only the
opening tags of the states and edges by id, so the picture is exactly the
one Graphviz laid out, labels placed apart. An edge gets

- its style as a class: ``taken`` (with ``w1``-``w5``, heavier the more it
  was taken), ``never``, ``hidden`` (a plan-mode choice that appends
  nothing, so no log shows it) or ``extra`` (taken, but not a row of the
  table; the picture holds the edges a log can take off the table, shown
  only when a session takes one);
- its count and meaning as the ``title`` (a tooltip) and ``aria-label``;
- ``data-edge``, which the page's script uses to show the edge's events,
  and a link to its row of the page's table (its events, each a link), so
  the picture leads to the events without script too.

A state the session visited gets the class ``visited``. An edge taken that
is neither in the table nor drawn (none is known) is listed in the table
only. Nothing from a log goes into the picture but counts.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from importlib import resources

from ...kernel.graph import Edge, Graph
from ..errors import AdapterError
from .machines import edge_id, state_id

__all__ = ["DiagramMissingError", "Mark", "marked_svg", "marks", "shipped_svg"]


class DiagramMissingError(AdapterError):
    """The package holds no laid-out diagram of a machine: the installation
    is incomplete (``make diagrams`` writes them; the package ships them)."""

    code = "report-diagram-missing"


@dataclass(frozen=True, slots=True)
class Mark:
    """An edge as the page shows it: its id (the picture's element and the
    stem of the table's row), the edge, how often it was taken, and its
    style: ``taken``, ``never``, ``hidden`` or ``extra``."""

    ident: str
    edge: Edge
    count: int
    style: str


def marks(
    machine: str, graph: Graph, counts: Mapping[Edge, int], extra: Sequence[Edge], observable: Callable[[Edge], bool]
) -> tuple[Mark, ...]:
    """Every edge of ``graph`` and every ``extra`` edge taken, with its count and style."""
    out: list[Mark] = []
    for edge in (*graph.edges, *extra):
        count = counts.get(edge, 0)
        if edge in extra:
            style = "extra"
        elif count:
            style = "taken"
        elif not observable(edge):
            style = "hidden"
        else:
            style = "never"
        out.append(Mark(edge_id(machine, edge), edge, count, style))
    return tuple(out)


@functools.cache
def shipped_svg(machine: str) -> str:
    """The ``svg`` element Graphviz laid out for ``machine`` when the package
    was built; ``DiagramMissingError`` when the package has none."""
    try:
        text = (resources.files(__package__) / "diagrams" / f"{machine}.svg").read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise DiagramMissingError(
            f"the package has no laid-out diagram of {machine!r}: the installation is incomplete "
            "(make diagrams writes adapters/report/diagrams/)"
        ) from exc
    start = text.find("<svg")
    if start < 0:
        raise DiagramMissingError(f"the package's diagram of {machine!r} holds no svg element")
    return text[start:]


def _weight(count: int) -> int:
    return 1 + min(4, int(math.log2(count + 1) / 1.5))


_WORDS = {
    "taken": "taken {n:,}×",
    "never": "never taken",
    "hidden": "appends nothing, so no log shows it",
    "extra": "taken {n:,}×, not a row of the table",
}

_GROUP = re.compile(r'<g id="([^"]+)" class="(node|edge)([^"]*)">\n<title>[^<]*</title>(.*?)</g>', re.DOTALL)
_ROOT = re.compile(r'<svg width="[^"]*" height="[^"]*"')


def marked_svg(machine: str, title: str, drawn: Sequence[Mark], visited: frozenset[str], graph: Graph) -> str:
    """The shipped picture of ``machine`` with ``drawn``'s edges marked by
    id and the ``visited`` states of ``graph`` marked as visited."""
    by_id = {mark.ident: mark for mark in drawn}
    states = {state_id(machine, s): s for s in graph.states}

    def mark(match: re.Match[str]) -> str:
        ident, kind, classes, body = match.groups()
        if kind == "node":
            state = states.get(ident)
            more = " visited" if state is not None and state in visited else ""
            name = escape(state) if state is not None else ""
            return f'<g id="{ident}" class="node{classes}{more}">\n<title>{name}</title>{body}</g>'
        found = by_id.get(ident)
        if found is None:  # the initial arrow, or an extra edge this session did not take
            return f'<g id="{ident}" class="edge{classes}">{body}</g>'
        edge = found.edge
        said = f"{edge.source} → {edge.target}: {edge.label}"
        if edge.note:
            said += f" {edge.note}"
        said += f" ({_WORDS[found.style].format(n=found.count)})"
        weight = f" w{_weight(found.count)}" if found.count else ""
        return (
            f'<g id="{ident}" class="edge{classes} {found.style}{weight}" data-edge="{ident}" tabindex="0" '
            f'role="button" aria-label="{escape(said)}">\n<title>{escape(said)}</title>'
            f'<a href="#{ident}-row">{body}</a></g>'
        )

    svg = _GROUP.sub(mark, shipped_svg(machine))
    label = escape(f"{machine}-svg-title")
    return _ROOT.sub(
        f'<svg class="machine" role="img" aria-labelledby="{label}"', svg, count=1
    ).replace(">", f'><title id="{label}">{escape(title)}</title>', 1)
