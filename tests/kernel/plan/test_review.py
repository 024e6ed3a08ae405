"""exit_plan_mode review outcomes, /plan parsing and the plan:policy config."""

from __future__ import annotations

import pytest

from planfold.kernel.decisions import decide_plan_choice, decide_pre_step
from planfold.kernel.errors import is_kebab_case
from planfold.kernel.log import TurnState
from planfold.kernel.plan.mode import PendingChoice
from planfold.kernel.plan.review import (
    APPROVE,
    KEEP_PLANNING,
    ChannelLost,
    Custom,
    Dismissed,
    ExitPlanError,
    PlanCommand,
    PlanCommandError,
    PlanPolicyConfigError,
    ReviewOutcome,
    ReviewRequest,
    Selected,
    decide_review,
    load_plan_policy,
    parse_plan_command,
    start_review,
)
from planfold.kernel.session import SessionState, fold_session
from tests.plan_mode_helpers import header, mode, start_turn

PLAN = "# Refactor the parser\n\n1. Read it.\n2. Split it.\n"

# -- starting a review ---------------------------------------------------------------


def test_review_starts_in_plan_mode_with_a_channel_and_a_heading() -> None:
    request = start_review(True, True, PLAN)
    assert request.plan == PLAN
    assert request.options == (APPROVE, KEEP_PLANNING)


@pytest.mark.parametrize(
    ("active", "channel", "plan", "code"),
    [
        (False, True, PLAN, "not-in-plan-mode"),
        (True, False, PLAN, "no-review-channel"),
        (True, True, "", "invalid-plan"),
        (True, True, "   \n", "invalid-plan"),
        (True, True, "Refactor the parser", "invalid-plan"),
        (True, True, "## Not a top heading", "invalid-plan"),
        (True, True, "#No space", "invalid-plan"),
    ],
)
def test_review_refusals(active: bool, channel: bool, plan: str, code: str) -> None:
    with pytest.raises(ExitPlanError) as err:
        start_review(active, channel, plan)
    assert err.value.code == code
    assert is_kebab_case(err.value.code)


def test_outside_plan_mode_is_checked_before_the_channel() -> None:
    with pytest.raises(ExitPlanError) as err:
        start_review(False, False, "")
    assert err.value.code == "not-in-plan-mode"


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
def test_an_exit_that_cannot_be_reviewed_is_refused_with_the_text_the_model_is_shown(
    active: bool, channel: bool, plan: str, code: str, message: str
) -> None:
    with pytest.raises(ExitPlanError) as caught:
        start_review(active, channel, plan)
    assert (caught.value.code, str(caught.value)) == (code, message)


def test_a_reviewable_plan_offers_approve_and_keep_planning() -> None:
    assert start_review(True, True, "# Plan\n- step") == ReviewRequest("# Plan\n- step", ("Approve", "Keep planning"))


# -- review answers ------------------------------------------------------------------


def test_exactly_one_clean_approve_approves_and_queues_a_silent_exit() -> None:
    outcome = decide_review(Selected((APPROVE,)))
    assert outcome.approved and not outcome.tool_error
    assert outcome.pending == PendingChoice(False, silent=True)


def test_keep_planning_keeps_planning() -> None:
    outcome = decide_review(Selected((KEEP_PLANNING,)))
    assert outcome.status == "keep-planning"
    assert outcome.tool_error and outcome.pending is None
    assert "keep planning" in outcome.message


def test_a_bare_keep_planning_records_no_feedback() -> None:
    outcome = decide_review(Selected((KEEP_PLANNING,)))
    assert outcome.status == "keep-planning" and outcome.feedback is None
    assert outcome.message == (
        "The user wants to keep planning. Revise the plan and present it again with exit_plan_mode."
    )


def test_keep_planning_with_typed_text_records_the_text_as_feedback() -> None:
    outcome = decide_review(Selected((KEEP_PLANNING,), "  split step 2  "))
    assert (outcome.status, outcome.feedback) == ("keep-planning", "split step 2")
    assert "Their feedback: split step 2" in outcome.message


def test_an_approval_may_carry_typed_notes() -> None:
    outcome = decide_review(Selected((APPROVE,), "  keep the old flag working "))
    assert outcome.approved and outcome.pending == PendingChoice(False, silent=True)
    assert outcome.feedback == "keep the old flag working"
    assert outcome.message == "The user approved the plan. Their notes: keep the old flag working"


def test_a_selected_label_that_was_not_offered_comes_before_the_typed_text_in_the_feedback() -> None:
    outcome = decide_review(Selected((KEEP_PLANNING, "Split it up", " "), "  start with step 2 "))
    assert outcome.feedback == "Split it up, start with step 2"


def test_blank_typed_text_adds_nothing_to_an_answer() -> None:
    assert decide_review(Selected((APPROVE,), "  \n")) == decide_review(Selected((APPROVE,)))
    assert decide_review(Selected((KEEP_PLANNING,), " ")).feedback is None


def test_custom_text_is_returned_as_feedback() -> None:
    outcome = decide_review(Custom("  split step 2 into two  "))
    assert outcome.status == "keep-planning"
    assert outcome.feedback == "split step 2 into two"
    assert "split step 2 into two" in outcome.message


def test_custom_text_saying_approve_is_not_a_clean_approval() -> None:
    assert decide_review(Custom(APPROVE)).status == "keep-planning"


@pytest.mark.parametrize(
    "options",
    [(APPROVE, APPROVE), (APPROVE, KEEP_PLANNING), (), ("approve",), (" Approve",)],
)
def test_anything_but_one_clean_approve_keeps_planning(options: tuple[str, ...]) -> None:
    outcome = decide_review(Selected(options))
    assert outcome.status == "keep-planning"
    assert outcome.pending is None


def test_dismissed_review_says_the_user_wants_to_speak() -> None:
    outcome = decide_review(Dismissed())
    assert outcome.status == "dismissed" and outcome.tool_error
    assert "dismissed the review to speak" in outcome.message


def test_lost_channel_fails_closed() -> None:
    outcome = decide_review(ChannelLost())
    assert outcome.status == "channel-lost"
    assert outcome.tool_error and outcome.pending is None


def test_approved_exit_is_appended_silently_at_the_flush() -> None:
    log = header(start_turn(mode([], True), 1), 1, 1, True)
    pending = decide_review(Selected((APPROVE,))).pending
    state = fold_session(log)
    flushed = decide_pre_step(state, log, pending, "accepted")
    assert [d.kind for d in flushed.drafts] == ["plan/mode"]
    own = decide_pre_step(state, log, PendingChoice(False), "accepted")
    assert len(own.drafts) == 2  # a user's own exit would notify


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


# -- /plan -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/plan", PlanCommand(True)),
        ("  /plan  ", PlanCommand(True)),
        ("/plan off", PlanCommand(False)),
        ("/plan OFF", PlanCommand(False)),
        ("/plan   off  ", PlanCommand(False)),
        ("/plan refactor the parser", PlanCommand(True, "refactor the parser")),
        ("/plan offload the cache", PlanCommand(True, "offload the cache")),
        ("/plan\nmulti\nline", PlanCommand(True, "multi\nline")),
    ],
)
def test_plan_command(text: str, expected: PlanCommand) -> None:
    assert parse_plan_command(text) == expected


@pytest.mark.parametrize("text", ["", "plan", "/planner", "/plans off", "hello /plan", "/goal x"])
def test_not_a_plan_command(text: str) -> None:
    assert parse_plan_command(text) is None


def test_plan_message_keeps_attachments() -> None:
    assert parse_plan_command("/plan look", ["a.png"]) == PlanCommand(True, "look", ("a.png",))


def test_plan_off_with_attachments_is_an_error() -> None:
    with pytest.raises(PlanCommandError) as err:
        parse_plan_command("/plan off", ["a.png"])
    assert err.value.code == "attachments-with-off"


def test_plan_off_cancels_a_pending_entry_through_the_choice_table() -> None:
    command = parse_plan_command("/plan off")
    assert command is not None
    in_a_turn = SessionState(turns=TurnState(1, True))
    decision = decide_plan_choice(in_a_turn, [], PendingChoice(True), command.target)
    assert (decision.outcome, decision.pending) == ("cancelled", None)


# -- plan:policy ---------------------------------------------------------------------


def test_policy_config_loads() -> None:
    policy = load_plan_policy({"section": "Plan first."})
    assert policy.section == "Plan first."
    assert policy.order == 50


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        ({}, "missing 'section'"),
        ({"section": ""}, "blank"),
        ({"section": "  \n"}, "blank"),
        ({"section": 3}, "must be a string"),
        ({"section": None}, "must be a string"),
        ({"section": "x", "sectoin": "y"}, "unknown key(s) ['sectoin']"),
        ({"sectoin": "x"}, "unknown key(s) ['sectoin']"),
        ("Plan first.", "must be an object"),
        (None, "must be an object"),
    ],
)
def test_policy_config_failures(config: object, fragment: str) -> None:
    with pytest.raises(PlanPolicyConfigError) as err:
        load_plan_policy(config)
    assert fragment in str(err.value)
    assert err.value.code == "invalid-plan-policy"
