"""A machine's graph as inline SVG, laid out here (no Graphviz at report time).

Theory of operation
-------------------
The four machines the report draws have four to seven states, so a circular
layout reads well and needs nothing outside the standard library: the states
sit on an ellipse in the machine's lifecycle order (``ORDER``; the initial
state first, at the top), every edge is a quadratic curve between the two
boxes, bent away from the straight line by its place among the edges that
join the same two states (so edges in opposite directions and parallel
edges never lie on one another), and an edge from a state to itself is a
loop drawn outwards, away from the centre. Each curve ends on the border of
its boxes, with an arrow head.

What the session did is drawn on top of the table: an edge it took is
heavier (the more often, the heavier, up to a bound) and labelled with its
count; an edge it never took is thin and dashed; an edge no log can show (a
plan-mode choice that appends nothing) is dotted and faint; an edge taken
that is not in the table is drawn in its own colour. Only the edges taken
carry their label in the picture (a table has up to thirty edges, whose
labels would cover one another); every edge names itself in its ``title``
(a tooltip) and in the page's table. Each edge is a ``g``
element with ``data-edge`` naming the row of the page's transition table
that lists its events, which the page's script shows when it is chosen.

Every text that goes into the markup is escaped; the names come from the
kernel's tables, which allow only a small character set, but nothing here
relies on that.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from html import escape

from ...kernel.graph import Edge, Graph

__all__ = ["ORDER", "DrawnEdge", "layout_edges", "render_svg"]

#: The states of each machine in lifecycle order, around the ellipse.
ORDER: Mapping[str, tuple[str, ...]] = {
    "plan_mode": ("build", "build (plan pending)", "plan", "plan (build pending)"),
    "plan_status": ("no plan", "draft", "approved", "executing", "completed", "superseded", "implicit"),
    "runtime_phase": ("build_bootstrap", "plan", "build_execute", "verify"),
    "goal": ("no goal", "active", "paused", "blocked", "complete"),
}

_CHAR = 7.4  # average width of a character of the state font, in px
_BOX_H = 28


@dataclass(frozen=True, slots=True)
class DrawnEdge:
    """An edge to draw: its id (the page's row), the edge, how often it was
    taken, and its style: ``taken``, ``never``, ``hidden`` (no log can show
    it) or ``extra`` (taken, not in the table)."""

    ident: str
    edge: Edge
    count: int
    style: str


def layout_edges(
    graph: Graph, counts: Mapping[Edge, int], extra: Sequence[Edge], observable: Callable[[Edge], bool], prefix: str
) -> tuple[DrawnEdge, ...]:
    """Every edge of ``graph`` and every ``extra`` edge, with its count and
    style, numbered ``{prefix}-e0``, ``{prefix}-e1`` …"""
    drawn: list[DrawnEdge] = []
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
        drawn.append(DrawnEdge(f"{prefix}-e{len(drawn)}", edge, count, style))
    return tuple(drawn)


def _positions(graph: Graph, key: str, width: float, height: float) -> dict[str, tuple[float, float]]:
    states = [s for s in ORDER.get(key, ()) if s in graph.states]
    states += [s for s in graph.states if s not in states]
    cx, cy = width / 2, height / 2
    rx, ry = width / 2 - 130, height / 2 - 95
    out = {}
    for i, state in enumerate(states):
        angle = -math.pi / 2 + 2 * math.pi * i / len(states)
        out[state] = (cx + rx * math.cos(angle), cy + ry * math.sin(angle))
    return out


def _half(state: str) -> tuple[float, float]:
    return len(state) * _CHAR / 2 + 10, _BOX_H / 2


def _border(centre: tuple[float, float], toward: tuple[float, float], state: str) -> tuple[float, float]:
    """Where the line from ``centre`` toward ``toward`` leaves the state's box."""
    (x, y), (tx, ty) = centre, toward
    dx, dy = tx - x, ty - y
    hw, hh = _half(state)
    if dx == 0 and dy == 0:
        return centre
    t = min(hw / abs(dx) if dx else math.inf, hh / abs(dy) if dy else math.inf)
    return x + dx * t, y + dy * t


def _f(value: float) -> str:
    return f"{value:.1f}"


def _width(count: int) -> float:
    return 1.6 + min(4.5, math.log2(count + 1) * 1.2)


def render_svg(graph: Graph, key: str, edges: Sequence[DrawnEdge], visited: frozenset[str]) -> str:
    """The SVG element of ``graph`` with ``edges`` drawn in their styles;
    ``visited`` states are drawn as visited."""
    longest = max((len(s) for s in graph.states), default=8)
    width = max(640.0, 320 + longest * _CHAR * 3)
    height = 460.0 if len(graph.states) <= 5 else 600.0
    pos = _positions(graph, key, width, height)
    cx, cy = width / 2, height / 2
    pairs: dict[tuple[str, str], list[DrawnEdge]] = {}
    for drawn in edges:
        a, b = drawn.edge.source, drawn.edge.target
        pairs.setdefault((min(a, b), max(a, b)), []).append(drawn)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="machine" viewBox="0 0 {_f(width)} {_f(height)}" '
        f'role="img" aria-labelledby="{escape(key)}-svg-title">',
        f'<title id="{escape(key)}-svg-title">{escape(graph.title)}</title>',
        "<defs>",
        *(
            f'<marker id="{escape(key)}-arrow-{style}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
            f'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="head-{style}"/>'
            "</marker>"
            for style in ("taken", "never", "hidden", "extra")
        ),
        "</defs>",
    ]
    labels: list[str] = []
    for (a, b), group in sorted(pairs.items()):
        for index, drawn in enumerate(group):
            edge = drawn.edge
            if a == b:
                path, lx, ly = _loop(pos[a], (cx, cy), a, index)
            else:
                path, lx, ly = _curve(pos, edge, (a, b), (index, len(group)))
            title = f"{edge.source} → {edge.target}: {edge.label}"
            if edge.note:
                title += f" {edge.note}"
            state_text = {
                "taken": f"taken {drawn.count}×",
                "never": "never taken",
                "hidden": "appends nothing, so no log shows it",
                "extra": f"taken {drawn.count}×, not in the table",
            }
            title += f" ({state_text[drawn.style]})"
            stroke = f' stroke-width="{_f(_width(drawn.count))}"' if drawn.count else ""
            parts.append(
                f'<g class="edge {drawn.style}" data-edge="{escape(drawn.ident)}" tabindex="0" role="button" '
                f'aria-label="{escape(title)}"><title>{escape(title)}</title>'
                f'<path class="hit" d="{path}"/>'
                f'<path class="line" d="{path}"{stroke} marker-end="url(#{escape(key)}-arrow-{drawn.style})"/></g>'
            )
            if not drawn.count:  # named in its title and the table: the picture stays legible
                continue
            text = f"{edge.label} ×{drawn.count}"
            labels.append(
                f'<text class="label {drawn.style}" data-edge="{escape(drawn.ident)}" x="{_f(lx)}" y="{_f(ly)}" '
                f'text-anchor="middle">{escape(text)}</text>'
            )
    for state, (x, y) in pos.items():
        hw, hh = _half(state)
        cls = "state" + (" visited" if state in visited else "") + (" initial" if state == graph.initial else "")
        parts.append(
            f'<g class="{cls}"><rect x="{_f(x - hw)}" y="{_f(y - hh)}" width="{_f(2 * hw)}" height="{_f(2 * hh)}" '
            f'rx="8"/><text x="{_f(x)}" y="{_f(y + 4)}" text-anchor="middle">{escape(state)}</text></g>'
        )
    parts.extend(labels)
    parts.append("</svg>")
    return "".join(parts)


def _curve(
    pos: Mapping[str, tuple[float, float]], edge: Edge, pair: tuple[str, str], place: tuple[int, int]
) -> tuple[str, float, float]:
    (a, b), (index, count) = pair, place
    (ax, ay), (bx, by) = pos[a], pos[b]
    length = math.hypot(bx - ax, by - ay) or 1.0
    nx, ny = -(by - ay) / length, (bx - ax) / length  # normal of the a -> b line (a, b sorted)
    offset = (index - (count - 1) / 2) * 56 if count > 1 else 24.0
    mx, my = (ax + bx) / 2 + nx * offset, (ay + by) / 2 + ny * offset
    (sx, sy), (tx, ty) = pos[edge.source], pos[edge.target]
    start = _border((sx, sy), (mx, my), edge.source)
    end = _border((tx, ty), (mx, my), edge.target)
    lx = (start[0] + 2 * mx + end[0]) / 4
    ly = (start[1] + 2 * my + end[1]) / 4
    path = f"M{_f(start[0])},{_f(start[1])} Q{_f(mx)},{_f(my)} {_f(end[0])},{_f(end[1])}"
    return path, lx, ly - 3


def _loop(at: tuple[float, float], centre: tuple[float, float], state: str, index: int) -> tuple[str, float, float]:
    x, y = at
    dx, dy = x - centre[0], y - centre[1]
    length = math.hypot(dx, dy) or 1.0
    ux, uy = dx / length, dy / length  # outwards
    px, py = -uy, ux
    reach = 46 + 26 * index
    spread = 16 + 4 * index
    sx, sy = _border(at, (x + ux * 100 + px * 30, y + uy * 100 + py * 30), state)
    ex, ey = _border(at, (x + ux * 100 - px * 30, y + uy * 100 - py * 30), state)
    c1 = (sx + ux * reach + px * spread, sy + uy * reach + py * spread)
    c2 = (ex + ux * reach - px * spread, ey + uy * reach - py * spread)
    path = (f"M{_f(sx)},{_f(sy)} C{_f(c1[0])},{_f(c1[1])} {_f(c2[0])},{_f(c2[1])} {_f(ex)},{_f(ey)}")
    lx = (sx + ex) / 2 + ux * reach * 0.78
    ly = (sy + ey) / 2 + uy * reach * 0.78
    return path, lx, ly + 4
