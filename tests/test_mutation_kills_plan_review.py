"""Tests that pin what mutation testing found unpinned in the plan review:
the exact refusal of each ``exit_plan_mode`` failure (the text the model is
shown), and the exact outcome of each review answer."""

from __future__ import annotations

import pytest

from planfold.kernel.plan.mode import PendingChoice
from planfold.kernel.plan.review import (
    ChannelLost,
    Custom,
    Dismissed,
    ExitPlanError,
    ReviewOutcome,
    ReviewRequest,
    Selected,
    decide_review,
    start_review,
)

NOT_IN_PLAN = "exit_plan_mode was called outside plan mode; there is nothing to exit"
NO_CHANNEL = "no review channel is available to show the plan to a human; the user can leave plan mode with /plan off"
NOT_MARKDOWN = "the plan must be complete markdown that starts with a '# ' heading"


@pytest.mark.parametrize(
    ("active", "channel", "plan", "code", "message"),
    [
        (False, True, "# Plan", "not-in-plan-mode", NOT_IN_PLAN),
        (True, False, "# Plan", "no-review-channel", NO_CHANNEL),
        (True, True, "Plan without a heading", "invalid-plan", NOT_MARKDOWN),
        (True, True, "   ", "invalid-plan", NOT_MARKDOWN),
    ],
)
def test_an_exit_that_cannot_be_reviewed_is_refused_exactly(
    active: bool, channel: bool, plan: str, code: str, message: str
) -> None:
    with pytest.raises(ExitPlanError) as caught:
        start_review(active, channel, plan)
    assert (caught.value.code, str(caught.value)) == (code, message)


def test_a_reviewable_plan_offers_approve_and_keep_planning() -> None:
    assert start_review(True, True, "# Plan\n- step") == ReviewRequest("# Plan\n- step", ("Approve", "Keep planning"))


@pytest.mark.parametrize(
    ("answer", "outcome"),
    [
        (
            Selected(("Approve",)),
            ReviewOutcome("approved", "The user approved the plan.", None, PendingChoice(False, silent=True)),
        ),
        (
            ChannelLost(),
            ReviewOutcome(
                "channel-lost",
                "The review channel closed before the user answered; the plan was not approved. Plan mode stays on.",
            ),
        ),
        (
            Dismissed(),
            ReviewOutcome(
                "dismissed", "The user dismissed the review to speak instead. Keep planning and wait for them."
            ),
        ),
        (
            Custom("  add a rollback step "),
            ReviewOutcome(
                "keep-planning",
                "The user wants to keep planning. Their feedback: add a rollback step "
                "Revise the plan and present it again with exit_plan_mode.",
                "add a rollback step",
            ),
        ),
        (
            Selected(("Keep planning",)),
            ReviewOutcome(
                "keep-planning",
                "The user wants to keep planning. Revise the plan and present it again with exit_plan_mode.",
            ),
        ),
        (
            Selected(()),
            ReviewOutcome(
                "keep-planning",
                "The user wants to keep planning. Revise the plan and present it again with exit_plan_mode.",
            ),
        ),
        (
            Selected(("Approve", "Keep planning")),
            ReviewOutcome(
                "keep-planning",
                "The user wants to keep planning. Revise the plan and present it again with exit_plan_mode.",
            ),
        ),
    ],
)
def test_each_review_answer_has_its_exact_outcome(answer: object, outcome: ReviewOutcome) -> None:
    decided = decide_review(answer)  # type: ignore[arg-type]
    assert decided == outcome
    assert decided.approved is (outcome.status == "approved")
    assert decided.tool_error is (outcome.status != "approved")
