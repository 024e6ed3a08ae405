"""Views of a plan: the summary that goes into ordinary requests and the full
markdown a human reads. Both derive from one ``PlanSpec`` and never the other
way round.

Theory of operation
-------------------
The model may send a ``summary_candidate`` together with its plan.
``adopt_summary`` takes it when it passes ``validate_summary_candidate`` and
the runtime's own ``build_summary_view(spec)`` otherwise, keeping the reasons
the candidate was rejected. There is never a retry and never a second model
call. ``summary_derives_from`` is the same structural check applied to a
stored summary.

A summary is refreshed only at the first save, at a formal rewrite (both make
a new one) and when a key todo changes status: ``refresh_summary`` then brings
the summary's todo references up to the spec's active todos and leaves the
rest as it was. A status change that leaves the active set as it was (pending
to in progress) is not a key change and returns the very same summary.

``render_plan_content`` is the full view; it starts with a ``# `` heading, as a
plan put before a human reviewer must.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from .spec import (
    PlanSpec,
    SpecProblem,
    SummarySource,
    SummaryView,
    active_todo_ids,
    validate_summary_candidate,
)

__all__ = [
    "SummaryAdoption",
    "adopt_summary",
    "build_summary_view",
    "refresh_summary",
    "render_plan_content",
    "summary_derives_from",
]


def build_summary_view(spec: PlanSpec) -> SummaryView:
    """The runtime's normalised summary of ``spec`` (deterministic)."""
    return SummaryView(
        goal=spec.goal.strip(),
        key_steps=tuple(step.strip() for step in spec.steps),
        constraints=tuple(item.strip() for item in spec.constraints),
        verify=tuple(item.strip() for item in spec.verify),
        active_todo_ids=active_todo_ids(spec),
    )


def refresh_summary(summary: SummaryView, spec: PlanSpec) -> SummaryView:
    """``summary`` with its todo references brought up to ``spec``'s active
    todos; the same object when they already match (not a key change)."""
    active = active_todo_ids(spec)
    return summary if summary.active_todo_ids == active else replace(summary, active_todo_ids=active)


@dataclass(frozen=True, slots=True)
class SummaryAdoption:
    """The summary a plan is saved with, where it came from, and why a
    candidate was rejected (empty when the model's candidate was adopted)."""

    summary: SummaryView
    source: SummarySource
    rejected: tuple[SpecProblem, ...] = ()

    @property
    def reason(self) -> str | None:
        """The kept rejection reason, one line, or ``None``."""
        if not self.rejected:
            return None
        return "; ".join(f"{p.where}: {p.message}" for p in self.rejected)


def _summary_from_candidate(candidate: Mapping[object, object]) -> SummaryView:
    def items(key: str, *, strip: bool = True) -> tuple[str, ...]:
        value = candidate[key]
        assert isinstance(value, Sequence)
        return tuple(str(item).strip() if strip else str(item) for item in value)

    return SummaryView(
        goal=str(candidate["goal"]).strip(),
        key_steps=items("key_steps"),
        constraints=items("constraints"),
        verify=items("verify"),
        # Todo ids are references, kept exactly as the spec spells them.
        active_todo_ids=items("active_todo_ids", strip=False),
    )


def adopt_summary(candidate: object | None, spec: PlanSpec) -> SummaryAdoption:
    """Adopt the model's candidate if it passes the structural check, else use
    ``build_summary_view(spec)`` and keep the reasons. ``None`` means the model
    sent no candidate. Never retries, never raises."""
    if candidate is None:
        missing = SpecProblem("missing-candidate", "summary_candidate", "the model sent none")
        return SummaryAdoption(build_summary_view(spec), "runtime", (missing,))
    problems = validate_summary_candidate(candidate, spec)
    if problems or not isinstance(candidate, Mapping):
        return SummaryAdoption(build_summary_view(spec), "runtime", problems)
    return SummaryAdoption(_summary_from_candidate(candidate), "model")


def summary_derives_from(summary: SummaryView, spec: PlanSpec) -> bool:
    """Whether ``summary`` is a legitimate view of ``spec``: it passes the
    candidate check against ``spec``."""
    as_candidate = {
        "goal": summary.goal,
        "key_steps": list(summary.key_steps),
        "constraints": list(summary.constraints),
        "verify": list(summary.verify),
        "active_todo_ids": list(summary.active_todo_ids),
    }
    return not validate_summary_candidate(as_candidate, spec)


# --------------------------------------------------------------------------
# The full view


def render_plan_content(spec: PlanSpec) -> str:
    """The full markdown view of ``spec`` for a human; starts with ``# ``."""
    title = (spec.goal.strip().splitlines() or ["(no goal)"])[0]
    out = [f"# Plan: {title}", "", "## Goal", "", spec.goal.strip() or "(none)", "", "## Steps", ""]
    out += [f"{i}. {step.strip()}" for i, step in enumerate(spec.steps, 1)]
    if spec.constraints:
        out += ["", "## Constraints", ""]
        out += [f"- {item.strip()}" for item in spec.constraints]
    out += ["", "## Verify", ""]
    out += [f"- {item.strip()}" for item in spec.verify]
    out += ["", "## Todos", ""]
    for todo in spec.todos:
        mark = "x" if todo.status == "done" else " "
        out.append(f"- [{mark}] `{todo.id}` {todo.text.strip()} ({todo.status})")
    if spec.open_questions:
        out += ["", "## Open questions", ""]
        out += [f"- {'(blocking) ' if q.blocking else ''}{q.text.strip()}" for q in spec.open_questions]
    if spec.scope is not None:
        out += ["", "## Scope", ""]
        out += [f"- path: `{path}`" for path in spec.scope.paths]
        out += [f"- effect: {effect}" for effect in spec.scope.effects]
    return "\n".join(out) + "\n"
