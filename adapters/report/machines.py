"""Which transition of each machine every event of a session took.

Theory of operation
-------------------
The report draws four machines from their own tables (``kernel.graph``): plan
mode, plan status, the runtime phase and the goal. ``taken(before, after,
event)`` says which edges of those graphs one event took, given the strict
fold's state just before it and just after it; it never decides anything
itself, it only names what the fold did in the graphs' own words:

- plan status: a ``plan/artifact`` event's row of ``kernel.plan.status``'s
  ``TRANSITIONS`` (found again with ``find_transition`` from the status and
  mode before it), as ``plan_status_graph`` labels it;
- goal: a ``goal/change`` from the phase before to the phase after, labelled
  with its operation (``goal_graph``);
- runtime phase: ``runtime_phase`` of the fold before and after any event
  that changes it (a plan action, or a plan-mode switch), labelled as
  ``runtime_phase_graph`` labels it;
- plan mode: the choice machine's states hold the pending choice, which
  lives only in a process, so the log shows a choice only by the
  ``plan/mode`` event it led to. Between turns that event is the choice
  itself (``committed``); inside a turn it is the flush, at a pre-step, of a
  choice that was ``queued`` earlier in the turn: the report counts the
  ``queued`` edge and a ``flush`` edge that is no row of the choice table.
  Choices that append nothing (``noop``, ``cancelled``) leave no trace in a
  log: ``observable`` says which edges a log can show at all.

An edge a session took that its machine's graph does not have (a flush, a
``plan/mode`` that repeats the recorded state) is kept as an extra edge with
a note saying why it is not in the table.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from types import MappingProxyType

from ...kernel.errors import PayloadError, ReplayError
from ...kernel.goal.values import read_goal_change
from ...kernel.graph import (
    MODE_OFF,
    MODE_ON,
    Edge,
    Graph,
    goal_graph,
    goal_phase_state,
    plan_action_label,
    plan_mode_graph,
    plan_mode_label,
    plan_mode_state,
    plan_status_graph,
    plan_status_state,
    runtime_phase_graph,
)
from ...kernel.log import GOAL_CHANGE, PLAN_ARTIFACT, PLAN_MODE, Event
from ...kernel.plan.context import runtime_phase
from ...kernel.plan.payload import PlanActionName, read_plan_action
from ...kernel.plan.status import Mode, find_transition
from ...kernel.session import SessionState

__all__ = [
    "FLUSH_LABEL",
    "MACHINES",
    "REPEAT_LABEL",
    "edge_id",
    "extra_note",
    "known_extras",
    "machine_graphs",
    "observable",
    "state_id",
    "taken",
]

#: The plan-mode edge of a pending choice appended at a pre-step.
FLUSH_LABEL = "flush at a pre-step"
#: The plan-mode edge of a ``plan/mode`` event that records the state again.
REPEAT_LABEL = "recorded again"

_NOTES = {
    FLUSH_LABEL: "the pending choice appended by the turn's next accepted pre-step (not a row of the choice table)",
    REPEAT_LABEL: "a plan/mode event equal to the recorded state (no choice appends one; the fold accepts it)",
}


#: The machines, in the order the report shows them.
MACHINES: tuple[str, ...] = ("plan_mode", "plan_status", "runtime_phase", "goal")


@functools.cache
def machine_graphs() -> Mapping[str, Graph]:
    """Each machine's graph, read from its table (once: graphs are values)."""
    return MappingProxyType({
        "plan_mode": plan_mode_graph(),
        "plan_status": plan_status_graph(),
        "runtime_phase": runtime_phase_graph(),
        "goal": goal_graph(),
    })


def _slug(text: str) -> str:
    return "-".join("".join(ch if ch.isalnum() else " " for ch in text.lower()).split()) or "x"


def state_id(machine: str, state: str) -> str:
    """The element id of ``state`` in ``machine``'s diagram: stable, read
    from the state's name (``plan_status-s-no-plan``)."""
    return f"{machine}-s-{_slug(state)}"


def edge_id(machine: str, edge: Edge) -> str:
    """The element id of ``edge`` in ``machine``'s diagram (and the stem of
    its row in the page's table): stable, read from the edge's source,
    target and label (``plan_status-e-draft-approved-approve``)."""
    return f"{machine}-e-{_slug(edge.source)}-{_slug(edge.target)}-{_slug(edge.label)}"


@functools.cache
def known_extras(machine: str) -> tuple[Edge, ...]:
    """The edges a log can take that are no row of ``machine``'s table, as
    ``taken`` names them: a plan-mode choice flushed at a pre-step, and a
    ``plan/mode`` event that records the state again. The diagrams are laid
    out with them, shown only when a session takes one."""
    if machine != "plan_mode":
        return ()
    out = []
    for mode in (False, True):
        state = plan_mode_state(mode, None)
        out.append(Edge(state, state, REPEAT_LABEL, _NOTES[REPEAT_LABEL]))
        out.append(Edge(plan_mode_state(mode, not mode), plan_mode_state(not mode, None), FLUSH_LABEL,
                        _NOTES[FLUSH_LABEL]))
    return tuple(out)


def observable(machine: str, edge: Edge) -> bool:
    """Whether a log can show ``edge`` of ``machine`` at all: every edge but
    the plan-mode choices that append nothing (``noop``, ``cancelled``)."""
    if machine != "plan_mode":
        return True
    return edge.label.endswith(("/ committed", "/ queued"))


def extra_note(edge: Edge) -> str:
    """Why an edge a session took is not in its machine's table."""
    return _NOTES.get(edge.label, "taken by the log, not in the table")


def _plan_mode(before: SessionState, after: SessionState) -> tuple[Edge, ...]:
    folded, target = before.plan_mode, after.plan_mode
    if folded == target:
        state = plan_mode_state(folded, None)
        return (Edge(state, state, REPEAT_LABEL, _NOTES[REPEAT_LABEL]),)
    if not before.turns.open:
        return (Edge(plan_mode_state(folded, None), plan_mode_state(target, None),
                     plan_mode_label(target, False, "committed")),)
    pending = plan_mode_state(folded, target)
    return (
        Edge(plan_mode_state(folded, None), pending, plan_mode_label(target, True, "queued")),
        Edge(pending, plan_mode_state(target, None), FLUSH_LABEL, _NOTES[FLUSH_LABEL]),
    )


def _plan_action(event: Event) -> PlanActionName | None:
    """The action of a ``plan/artifact``, read by its kind's reader (the fold
    accepted it, so it reads; ``None`` otherwise, to stay total all the same)."""
    try:
        return read_plan_action(event.payload).action
    except PayloadError:
        return None


def _plan_status(before: SessionState, after: SessionState, event: Event) -> Edge | None:
    action = _plan_action(event)
    if action is None:
        return None
    mode: Mode = "plan" if before.plan_mode else "build"
    try:
        row = find_transition(before.plan.status, action, mode, event.seq)
    except ReplayError:  # the fold accepted it, so a row exists; stay total all the same
        return None
    return Edge(plan_status_state(before.plan.status), plan_status_state(after.plan.status),
                plan_action_label(row.action, row.mode))


def _goal(before: SessionState, after: SessionState, event: Event) -> Edge | None:
    try:
        operation = read_goal_change(event.payload).operation
    except PayloadError:  # the fold accepted it, so it reads; stay total all the same
        return None
    was = before.goal.current
    now = after.goal.current
    return Edge(goal_phase_state(None if was is None else was.phase),
                goal_phase_state(None if now is None else now.phase), operation)


def _runtime_phase(before: SessionState, after: SessionState, event: Event) -> Edge | None:
    was, now = runtime_phase(before), runtime_phase(after)
    if was == now:
        return None
    if event.kind == PLAN_MODE:
        label = MODE_ON if after.plan_mode else MODE_OFF
    else:
        action = _plan_action(event)
        label = event.kind if action is None else action
    return Edge(was, now, label)


def taken(before: SessionState, after: SessionState, event: Event) -> dict[str, tuple[Edge, ...]]:
    """The edges ``event`` took, per machine (machines it left alone are
    absent), given the strict fold just before it and just after it."""
    out: dict[str, tuple[Edge, ...]] = {}
    kind = event.kind
    if kind == PLAN_MODE:
        out["plan_mode"] = _plan_mode(before, after)
    elif kind == PLAN_ARTIFACT:
        edge = _plan_status(before, after, event)
        if edge is not None:
            out["plan_status"] = (edge,)
    elif kind == GOAL_CHANGE:
        edge = _goal(before, after, event)
        if edge is not None:
            out["goal"] = (edge,)
    if kind in (PLAN_MODE, PLAN_ARTIFACT):
        edge = _runtime_phase(before, after, event)
        if edge is not None:
            out["runtime_phase"] = (edge,)
    return out
