"""The human side of plan mode: the ``exit_plan_mode`` review, ``/plan`` and
the ``plan:policy`` configuration.

Theory of operation
-------------------
``exit_plan_mode`` stays registered in every mode (entering or leaving plan
mode never changes the tool catalog), but calling it outside plan mode fails.
Inside plan mode it needs a complete markdown plan that starts with a ``# ``
heading and a review channel to put it before a human. Only exactly one clean
"Approve" answer approves: the call returns ``{approved: true}`` and queues a
*silent* pending exit, appended at the next accepted in-turn pre-step, so plan
guidance stays on for the rest of the assistant's current tool batch. Every
other answer keeps planning and fails the call with corrective feedback. A
review channel that is missing, or disappears mid-review, fails closed; the
manual way out is ``/plan off``.

An answer may carry a selection and typed text together (``Selected``): the
selection decides (exactly one "Approve" approves), the typed text is the
reviewer's feedback, passed to the model with an approval as notes and
recorded with a rejection. The labels of the offered options are never
feedback: a bare "Keep planning" keeps planning and records none, so the
next request does not treat the plan as being rewritten.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ..errors import PlanError
from .mode import PendingChoice

__all__ = [
    "APPROVE",
    "KEEP_PLANNING",
    "ChannelLost",
    "Custom",
    "Dismissed",
    "ExitPlanError",
    "PlanCommand",
    "PlanCommandError",
    "PlanPolicy",
    "PlanPolicyConfigError",
    "ReviewAnswer",
    "ReviewOutcome",
    "ReviewRequest",
    "Selected",
    "decide_review",
    "load_plan_policy",
    "parse_plan_command",
    "start_review",
]

APPROVE = "Approve"
KEEP_PLANNING = "Keep planning"


class ExitPlanError(PlanError):
    """``exit_plan_mode`` cannot start a review. Codes: ``not-in-plan-mode``
    (the model called it outside plan mode), ``no-review-channel`` (the
    deployment has no way to ask a human), ``invalid-plan`` (the model's plan
    is empty or does not start with a ``# `` heading)."""

    codes = frozenset({"not-in-plan-mode", "no-review-channel", "invalid-plan"})


@dataclass(frozen=True, slots=True)
class ReviewRequest:
    """A plan ready to be shown to a human, with the answers offered."""

    plan: str
    options: tuple[str, ...] = (APPROVE, KEEP_PLANNING)


def start_review(plan_mode_active: bool, channel_available: bool, plan: str) -> ReviewRequest:
    """Check an ``exit_plan_mode`` call; raise ``ExitPlanError`` when it fails."""
    if not plan_mode_active:
        raise ExitPlanError(
            "exit_plan_mode was called outside plan mode; there is nothing to exit",
            code="not-in-plan-mode",
        )
    if not channel_available:
        raise ExitPlanError(
            "no review channel is available to show the plan to a human; "
            "the user can leave plan mode with /plan off",
            code="no-review-channel",
        )
    if not plan.strip() or not plan.startswith("# "):
        raise ExitPlanError(
            "the plan must be complete markdown that starts with a '# ' heading",
            code="invalid-plan",
        )
    return ReviewRequest(plan)


@dataclass(frozen=True, slots=True)
class Selected:
    """The human picked one or more of the offered options, and may have
    typed ``text`` with them (notes on an approval, feedback otherwise)."""

    options: tuple[str, ...]
    text: str = ""


@dataclass(frozen=True, slots=True)
class Custom:
    """The human typed an answer of their own."""

    text: str


@dataclass(frozen=True, slots=True)
class Dismissed:
    """The human closed the review to speak instead."""


@dataclass(frozen=True, slots=True)
class ChannelLost:
    """The review channel went away while the review was open."""


ReviewAnswer = Selected | Custom | Dismissed | ChannelLost


@dataclass(frozen=True, slots=True)
class ReviewOutcome:
    """What a review answer means.

    ``approved`` only for exactly one clean "Approve"; then ``pending`` is the
    silent exit to queue and the tool result is ``{approved: true}``. Otherwise
    the call fails (``tool_error``) with ``message`` as corrective feedback and
    plan mode stays on. ``feedback`` is what the reviewer typed (stripped;
    ``None`` when nothing was): notes on an approval, or the feedback a
    rejection records.
    """

    status: Literal["approved", "keep-planning", "dismissed", "channel-lost"]
    message: str
    feedback: str | None = None
    pending: PendingChoice | None = None

    @property
    def approved(self) -> bool:
        return self.status == "approved"

    @property
    def tool_error(self) -> bool:
        return not self.approved


def _typed(answer: Selected | Custom) -> str | None:
    """What the reviewer typed with ``answer``: a ``Custom`` answer's text, or
    a selection's text and any selected label that was not offered. The
    offered labels ("Approve", "Keep planning") are choices, not feedback."""
    if isinstance(answer, Custom):
        parts = [answer.text]
    else:
        parts = [o for o in answer.options if o not in (APPROVE, KEEP_PLANNING)] + [answer.text]
    text = ", ".join(part.strip() for part in parts if part.strip())
    return text or None


def decide_review(answer: ReviewAnswer) -> ReviewOutcome:
    """Decide the outcome of a plan review. Never raises."""
    if isinstance(answer, ChannelLost):
        return ReviewOutcome(
            "channel-lost",
            "The review channel closed before the user answered; the plan was not approved. "
            "Plan mode stays on.",
        )
    if isinstance(answer, Dismissed):
        return ReviewOutcome(
            "dismissed",
            "The user dismissed the review to speak instead. Keep planning and wait for them.",
        )
    feedback = _typed(answer)
    if isinstance(answer, Selected) and answer.options == (APPROVE,):
        message = "The user approved the plan."
        if feedback is not None:
            message += f" Their notes: {feedback}"
        return ReviewOutcome("approved", message, feedback, PendingChoice(False, silent=True))
    message = "The user wants to keep planning."
    if feedback is not None:
        message += f" Their feedback: {feedback}"
    message += " Revise the plan and present it again with exit_plan_mode."
    return ReviewOutcome("keep-planning", message, feedback=feedback)


# --------------------------------------------------------------------------
# /plan


class PlanCommandError(PlanError):
    """A ``/plan`` command the user must correct. Code: ``attachments-with-off``."""

    codes = frozenset({"attachments-with-off"})


@dataclass(frozen=True, slots=True)
class PlanCommand:
    """A parsed ``/plan``: the target state and, for ``/plan <message>``, the
    message to steer into the conversation after selecting plan mode."""

    target: bool
    message: str | None = None
    attachments: tuple[str, ...] = ()


def parse_plan_command(text: str, attachments: Sequence[str] = ()) -> PlanCommand | None:
    """Parse ``/plan``, ``/plan <message>`` or ``/plan off``.

    Returns ``None`` when ``text`` is not a ``/plan`` command (``/planner`` is
    not). Raises ``PlanCommandError`` for ``/plan off`` with attachments.
    """
    stripped = text.strip()
    if stripped != "/plan" and not stripped.startswith(("/plan ", "/plan\t", "/plan\n")):
        return None
    rest = stripped[len("/plan") :].strip()
    if rest.lower() == "off":
        if attachments:
            raise PlanCommandError(
                "/plan off takes no attachments; send them as a message instead",
                code="attachments-with-off",
            )
        return PlanCommand(target=False)
    return PlanCommand(target=True, message=rest or None, attachments=tuple(attachments))


# --------------------------------------------------------------------------
# plan:policy


class PlanPolicyConfigError(PlanError):
    """The deployment's ``plan:policy`` config is wrong; raised at load time."""

    code = "invalid-plan-policy"


@dataclass(frozen=True, slots=True)
class PlanPolicy:
    """The deployment-owned text rendered as the ``plan:policy`` section."""

    section: str
    order: int = 50


def load_plan_policy(config: object) -> PlanPolicy:
    """Validate a ``plan:policy`` config: exactly ``{section: non-empty str}``.

    Raises ``PlanPolicyConfigError`` naming what is wrong.
    """
    if not isinstance(config, Mapping):
        raise PlanPolicyConfigError(
            f"plan:policy config must be an object, got {type(config).__name__}"
        )
    unknown = sorted(str(key) for key in config if key != "section")
    if unknown:
        raise PlanPolicyConfigError(f"plan:policy config has unknown key(s) {unknown}")
    if "section" not in config:
        raise PlanPolicyConfigError("plan:policy config is missing 'section'")
    section = config["section"]
    if not isinstance(section, str):
        raise PlanPolicyConfigError(
            f"plan:policy 'section' must be a string, got {type(section).__name__}"
        )
    if not section.strip():
        raise PlanPolicyConfigError("plan:policy 'section' must not be blank")
    return PlanPolicy(section)
