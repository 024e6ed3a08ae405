"""What the next request is told about the plan: the runtime phase, the plan
view (none, summary or full) and the prompt as ordered sections.

Theory of operation
-------------------
``runtime_phase`` derives what the runtime is doing from the session fold:
``plan`` while plan mode is active; in build mode ``build_execute`` when the
current plan is approved, implicit or executing (the runtime appends
``start`` for an approved or implicit plan before it writes, see
``plan_to_start``), ``verify`` inside an executing plan's verify phase, and
``build_bootstrap`` otherwise: no plan, a draft (awaiting approval or
realignment), or a finished one. A draft never gives ``build_execute``.

The full plan is a stored object, not a per-request burden. ``VIEW_RULES`` is
the one ordered table that decides the plan view: the first row whose mode
matches and whose condition holds wins. Without a live plan nothing is
injected. In both modes the full view goes in when the user asked for it or
the runtime judged the summary insufficient; in plan mode also while the plan
is being rewritten; in build mode also for a new plan or a rewritten one that
no build-mode request has carried to the model yet (derived from the log:
the fold's ``unseen`` flag, cleared by the first build-mode reply, so a
request that failed and is retried carries it again) and for the first
alignment after a resume. Otherwise the summary goes in.

``compose_prompt`` orders the prompt: the shared base, the plan or build
overlay, the ``plan:policy`` section, then the plan view. The overlay and the
policy section follow the recorded plan state only (``state.plan_mode``, the
state the step's ``request/header`` records), never a pending choice: a
choice reaches a request only by being appended before its header, so a
choice whose append failed leaves the whole request in the recorded state,
never half old, half new.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from ..phase import AgentMode, RuntimePhase
from .artifact import PlanArtifact, PlanFacts, PlanRef, PlanState
from .review import PlanPolicy
from .views import render_plan_content

__all__ = [
    "DEFAULT_BUILD_OVERLAY",
    "DEFAULT_PLAN_OVERLAY",
    "VIEW_RULES",
    "PlanView",
    "PromptParts",
    "PromptSection",
    "ViewChoice",
    "ViewRequest",
    "ViewRule",
    "choose_plan_view",
    "compose_prompt",
    "plan_to_start",
    "render_plan_view",
    "render_summary",
    "runtime_phase",
]


def runtime_phase(state: PlanFacts) -> RuntimePhase:
    """The runtime phase the session fold gives. Never raises."""
    if state.plan_mode:
        return "plan"
    status = state.plan.status
    if status == "executing":
        return "verify" if state.plan.verifying else "build_execute"
    if status in ("approved", "implicit"):
        return "build_execute"
    return "build_bootstrap"


def plan_to_start(state: PlanFacts) -> PlanRef | None:
    """The exact version the runtime should ``start`` before build execution
    writes anything, or ``None`` when nothing waits to start."""
    cur = state.plan.current
    if state.plan_mode or cur is None or cur.status not in ("approved", "implicit"):
        return None
    return cur.ref


# --------------------------------------------------------------------------
# The plan view

PlanView = Literal["none", "summary", "full"]


@dataclass(frozen=True, slots=True)
class ViewRequest:
    """What the runtime knows about the next request that the log does not:
    the user asked for the full plan, the summary is judged not enough, the
    task at hand is rewriting the plan, or this is the first request since
    the session was resumed."""

    user_asked_full: bool = False
    summary_insufficient: bool = False
    rewriting: bool = False
    first_since_resume: bool = False


#: The request the runtime knows nothing particular about (the default).
_NO_FACTS = ViewRequest()


@dataclass(frozen=True, slots=True)
class ViewChoice:
    """The plan view for one request and the kebab-case rule that chose it."""

    view: PlanView
    reason: str


@dataclass(frozen=True, slots=True)
class ViewRule:
    """One row: in ``modes``, when ``condition`` holds, inject ``view``."""

    reason: str
    modes: frozenset[AgentMode]
    condition: str
    view: PlanView


_BOTH: frozenset[AgentMode] = frozenset({"plan", "build"})
_PLAN: frozenset[AgentMode] = frozenset({"plan"})
_BUILD: frozenset[AgentMode] = frozenset({"build"})

#: The rules of the plan view, first match wins; the last row always matches.
VIEW_RULES: tuple[ViewRule, ...] = (
    ViewRule("no-plan", _BOTH, "no live plan", "none"),
    ViewRule("user-asked", _BOTH, "the user asked for the full plan", "full"),
    ViewRule("summary-insufficient", _BOTH, "the summary is not enough", "full"),
    ViewRule("rewriting", _PLAN, "the plan is being rewritten", "full"),
    ViewRule("new-plan", _BUILD, "a new plan no build request has carried", "full"),
    ViewRule("rewritten", _BUILD, "a rewrite no build request has carried", "full"),
    ViewRule("resumed", _BUILD, "first alignment after a resume", "full"),
    ViewRule("default", _BOTH, "ordinary request", "summary"),
)

_CONDITIONS: Mapping[str, Callable[[PlanState, ViewRequest], bool]] = MappingProxyType(
    {
        "no-plan": lambda plan, _: not plan.live,
        "user-asked": lambda _, req: req.user_asked_full,
        "summary-insufficient": lambda _, req: req.summary_insufficient,
        "rewriting": lambda _, req: req.rewriting,
        "new-plan": lambda plan, _: plan.unseen and plan.current is not None and plan.current.revision == 1,
        "rewritten": lambda plan, _: plan.unseen and plan.current is not None and plan.current.revision > 1,
        "resumed": lambda _, req: req.first_since_resume,
        "default": lambda _, __: True,
    }
)


def choose_plan_view(state: PlanFacts, request: ViewRequest = _NO_FACTS) -> ViewChoice:
    """The plan view for the next request by ``VIEW_RULES``. Never raises."""
    mode = state.agent_mode
    for row in VIEW_RULES:
        if mode in row.modes and _CONDITIONS[row.reason](state.plan, request):
            return ViewChoice(row.view, row.reason)
    raise AssertionError("VIEW_RULES ends with a row that always matches")


def _bullets(items: tuple[str, ...]) -> list[str]:
    return [f"- {item}" for item in items] or ["- (none)"]


def render_summary(artifact: PlanArtifact) -> str:
    """The summary view as prompt text, naming the active todos."""
    summary = artifact.summary
    texts = {todo.id: todo for todo in artifact.spec.todos}
    lines = [
        f"## Current plan (summary): {artifact.id}, revision {artifact.revision}, {artifact.status}",
        "",
        f"Goal: {summary.goal}",
        "",
        "Key steps:",
        *_bullets(summary.key_steps),
        "",
        "Constraints:",
        *_bullets(summary.constraints),
        "",
        "Verify:",
        *_bullets(summary.verify),
        "",
        "Active todos:",
    ]
    active = [f"- `{tid}` {texts[tid].text} ({texts[tid].status})" for tid in summary.active_todo_ids if tid in texts]
    lines += active or ["- (none)"]
    return "\n".join(lines) + "\n"


def render_plan_view(state: PlanFacts, choice: ViewChoice) -> str | None:
    """The plan-view section text for ``choice``, or ``None`` for no view."""
    cur = state.plan.current
    if choice.view == "none" or cur is None:
        return None
    text = render_plan_content(cur.spec) if choice.view == "full" else render_summary(cur)
    if choice.view == "full":
        text += f"\n(plan {cur.id}, revision {cur.revision}, {cur.status})\n"
    if state.plan.realign is not None:
        text += f"\nRealignment needed before execution continues: {state.plan.realign}\n"
    return text


# --------------------------------------------------------------------------
# Prompt composition

DEFAULT_PLAN_OVERLAY = (
    "You are in plan mode. Read, search, research and ask questions; do not change "
    "anything. Converge on a complete plan and submit it with exit_plan_mode as a "
    "structured plan_spec (goal, steps, constraints, verify, todos with stable ids, "
    "open questions), and you may add a summary_candidate (goal, key_steps, "
    "constraints, verify, active_todo_ids)."
)
DEFAULT_BUILD_OVERLAY = (
    "You are in build mode. Work from the current plan. If there is no plan yet, "
    "research with read-only tools and record a minimal plan with bootstrap_plan "
    "before changing anything. Work from the plan summary and look at the full plan "
    "only when you need it. Small deviations are allowed when you say why. Report "
    "each todo's progress with update_todo; once every todo is done or dropped and "
    "you stop, verification starts: check the plan's verify list and report the "
    "result with report_verification."
)


@dataclass(frozen=True, slots=True)
class PromptParts:
    """The deployment's prompt texts: one shared base and the two overlays."""

    base: str
    plan_overlay: str = DEFAULT_PLAN_OVERLAY
    build_overlay: str = DEFAULT_BUILD_OVERLAY


@dataclass(frozen=True, slots=True)
class PromptSection:
    """One named section: ``base``, ``overlay:plan`` or ``overlay:build``,
    ``plan:policy``, ``plan:view``."""

    name: str
    text: str


def compose_prompt(
    parts: PromptParts,
    state: PlanFacts,
    choice: ViewChoice,
    policy: PlanPolicy | None = None,
) -> tuple[PromptSection, ...]:
    """The prompt's sections in order: base, overlay, plan:policy (when a
    policy is configured and the recorded state is plan mode), plan view."""
    planning = state.plan_mode
    sections = [
        PromptSection("base", parts.base),
        PromptSection("overlay:plan", parts.plan_overlay)
        if planning
        else PromptSection("overlay:build", parts.build_overlay),
    ]
    if policy is not None and planning:
        sections.append(PromptSection("plan:policy", policy.section))
    view = render_plan_view(state, choice)
    if view is not None:
        sections.append(PromptSection("plan:view", view))
    return tuple(sections)
