"""What a plan change may be: the refusal of a change the plan's state does
not allow, and how two versions of a plan differ.

The builders of ``plan/artifact`` drafts fold through the whole session, so
they live above it (``kernel.plan_events``); this module holds what they and
a runtime share with the plan machine: ``PlanChangeError``, whose ``code`` is
the rule the plan fold would have broken, and ``classify_change(old, new)``:
``none`` (identical), ``progress`` (only todo statuses differ) or
``substantive`` (anything else).
"""

from __future__ import annotations

from typing import Literal

from ..errors import PlanError
from .spec import PlanSpec, spec_hash

__all__ = ["ChangeKind", "PlanChangeError", "classify_change"]


class PlanChangeError(PlanError):
    """The runtime asked for a plan change the plan's state does not allow.

    ``code`` is the broken rule (kebab-case, the same as a replay would
    report, or ``no-plan`` when there is no current plan); ``action`` is what
    was asked for and ``detail`` says why it was refused.
    """

    #: ``no-plan``, and every rule of the plan fold (``plan.status``).
    codes = frozenset(
        {
            "no-plan",
            "malformed-payload",
            "transition-not-allowed",
            "wrong-mode",
            "id-reused",
            "plan-mismatch",
            "stale-revision",
            "revision-gap",
            "approval-mismatch",
            "hash-mismatch",
            "invalid-spec",
            "invalid-summary",
            "rewrite-without-change",
            "unknown-todo",
            "todo-unchanged",
        }
    )

    def __init__(self, action: str, code: str, detail: str) -> None:
        super().__init__(f"cannot {action} the plan: {detail}", code=code)
        self.action = action
        self.detail = detail


ChangeKind = Literal["none", "progress", "substantive"]


def classify_change(old: PlanSpec, new: PlanSpec) -> ChangeKind:
    """How ``new`` differs from ``old``. Todo statuses alone are progress;
    anything the content hash covers is substantive."""
    if old == new:
        return "none"
    if spec_hash(old) != spec_hash(new):
        return "substantive"
    return "progress"
