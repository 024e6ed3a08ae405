"""Unit tests for the plan-mode fold, the choice table, the notice and the
pre-step flush, as the kernel decides them over a session state."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import pytest

from planfold.kernel.decisions import PlanChoice, PreStep, decide_plan_choice, decide_pre_step, decide_request_header
from planfold.kernel.errors import ReplayError
from planfold.kernel.log import (
    PLAN_MODE,
    REQUEST_HEADER,
    TURN_START,
    USER_MESSAGE,
    Draft,
    Event,
    TurnState,
    number_drafts,
    read_message,
)
from planfold.kernel.payload import object_of
from planfold.kernel.plan.mode import (
    CHOICE_TABLE,
    NOTICE_SOURCE,
    PendingChoice,
    PendingRelation,
    fold_plan_mode,
    get_plan_mode,
    notice_due,
    notice_text,
    plan_mode_set,
)
from planfold.kernel.plan_events import approve_event
from planfold.kernel.session import SessionState, fold_session
from tests.plan_helpers import Session, current_ref, drafted, executing
from tests.plan_mode_helpers import append, end_turn, header, mode, start_turn


def decide(folded: bool, pending: PendingChoice | None, turn_open: bool, target: bool) -> PlanChoice:
    """The kernel's choice in a session recorded at ``folded``, in a turn or between turns."""
    return decide_plan_choice(SessionState(turns=TurnState(1, turn_open), plan_mode=folded), [], pending, target)


def record(log: Sequence[Event], target: bool, *, silent: bool = False) -> tuple[Draft, ...]:
    """What records a change to ``target`` after ``log``: at once between
    turns, by the next accepted pre-step inside one."""
    state = fold_session(log)
    assert target != state.plan_mode
    if state.turns.open:
        return decide_pre_step(state, log, PendingChoice(target, silent), "accepted").drafts
    assert not silent
    return decide_plan_choice(state, log, None, target).drafts


def flush(log: Sequence[Event], pending: PendingChoice | None, verdict: Any) -> PreStep:
    return decide_pre_step(fold_session(log), log, pending, verdict)


# -- the fold ---------------------------------------------------------------


def test_fold_of_empty_log_is_inactive() -> None:
    assert fold_plan_mode([]) is False


def test_fold_is_the_last_plan_mode_event() -> None:
    log = mode(mode(mode([], True), False), True)
    assert fold_plan_mode(log) is True
    assert fold_plan_mode(log[:2]) is False


def test_fold_end_is_an_exclusive_seq_bound() -> None:
    log = mode(mode([], True), False)  # seq 1 True, seq 2 False
    assert fold_plan_mode(log, end=1) is False
    assert fold_plan_mode(log, end=2) is True
    assert fold_plan_mode(log, end=3) is False
    assert fold_plan_mode(log, end=None) is False


def test_fold_ignores_other_kinds() -> None:
    log = start_turn(mode([], True), 1)
    assert fold_plan_mode(log) is True


@pytest.mark.parametrize(
    "payload",
    [{}, {"active": 1}, {"active": "true"}, {"active": True, "extra": 1}, {"on": True}],
)
def test_fold_rejects_a_malformed_plan_mode_payload(payload: dict[str, object]) -> None:
    log = [Event(1, PLAN_MODE, 0, payload)]  # type: ignore[arg-type]
    with pytest.raises(ReplayError) as err:
        fold_plan_mode(log)
    assert (err.value.position, err.value.rule) == (1, "malformed-payload")


# -- the choice table -----------------------------------------------------------


def pending_for(relation: PendingRelation, target: bool) -> PendingChoice | None:
    if relation is PendingRelation.NONE:
        return None
    return PendingChoice(target if relation is PendingRelation.SAME else not target)


def test_choice_table_is_total() -> None:
    keys = set(itertools.product(PendingRelation, (False, True), (False, True)))
    assert set(CHOICE_TABLE) == keys


# (pending relation, target == folded, turn open, outcome), in the order the
# design gives the rules.
CHOICE_ROWS = [
    # always first: the pending target again is a no-op, whatever else holds ...
    *((PendingRelation.SAME, same, turn_open, "noop") for same in (True, False) for turn_open in (False, True)),
    # ... and so is the folded state again when nothing is pending
    *((PendingRelation.NONE, True, turn_open, "noop") for turn_open in (False, True)),
    # idle: the opposite of a pending choice drops it; anything else is appended now
    (PendingRelation.NONE, False, False, "committed"),
    (PendingRelation.OPPOSITE, False, False, "committed"),
    (PendingRelation.OPPOSITE, True, False, "cancelled"),
    # turn open: the target becomes the pending one, cancelled when it is the folded state
    (PendingRelation.NONE, False, True, "queued"),
    (PendingRelation.OPPOSITE, False, True, "queued"),
    (PendingRelation.OPPOSITE, True, True, "cancelled"),
]


def test_the_choice_rows_cover_the_whole_table_once() -> None:
    rows = [(relation, same, turn_open) for relation, same, turn_open, _ in CHOICE_ROWS]
    assert len(rows) == len(set(rows)) == len(CHOICE_TABLE)


@pytest.mark.parametrize(("relation", "same_as_folded", "turn_open", "outcome"), CHOICE_ROWS)
@pytest.mark.parametrize("target", [False, True])
def test_choice_row(
    relation: PendingRelation, same_as_folded: bool, turn_open: bool, outcome: str, target: bool
) -> None:
    folded = target if same_as_folded else not target
    pending = pending_for(relation, target)
    decision = decide(folded, pending, turn_open, target)
    assert decision.outcome == outcome
    assert bool(decision.drafts) == (outcome == "committed")
    if outcome == "noop":
        assert decision.pending == pending
    elif outcome == "queued":
        assert decision.pending == PendingChoice(target)
    else:
        assert decision.pending is None


def test_idle_choice_commits_and_appends_now() -> None:
    decision = decide(folded=False, pending=None, turn_open=False, target=True)
    assert (decision.outcome, decision.pending, decision.drafts) == ("committed", None, (plan_mode_set(True),))


def test_in_turn_choice_is_queued_then_cancelled_by_the_opposite() -> None:
    first = decide(folded=False, pending=None, turn_open=True, target=True)
    assert (first.outcome, first.pending) == ("queued", PendingChoice(True))
    second = decide(folded=False, pending=first.pending, turn_open=True, target=False)
    assert (second.outcome, second.pending) == ("cancelled", None)


def test_repeating_a_pending_choice_is_a_noop() -> None:
    pending = PendingChoice(True)
    decision = decide(folded=False, pending=pending, turn_open=True, target=True)
    assert (decision.outcome, decision.pending) == ("noop", pending)


def test_plan_off_cancels_a_pending_entry() -> None:
    # /plan off while an entry is queued in the turn: nothing will be appended.
    decision = decide(folded=False, pending=PendingChoice(True), turn_open=True, target=False)
    assert (decision.outcome, decision.pending) == ("cancelled", None)


def test_get_returns_recorded_state_and_pending_target() -> None:
    log = mode([], True)
    assert get_plan_mode(log, None).active is True
    view = get_plan_mode(log, PendingChoice(False))
    assert (view.active, view.pending) == (True, False)


# -- appending, the notice rule ----------------------------------------------------


def kinds(events: Sequence[Event | Draft]) -> list[str]:
    return [e.kind for e in events]


def test_no_notice_before_the_first_header() -> None:
    assert record([], True) == (Draft(PLAN_MODE, {"active": True}),)


def test_notice_when_last_header_described_the_other_state() -> None:
    log = end_turn(header(start_turn([], 1), 1, 1, False), 1)
    drafts = record(log, True)
    assert kinds(drafts) == [PLAN_MODE, USER_MESSAGE]
    assert read_message(drafts[1].payload).source == NOTICE_SOURCE


def test_no_notice_when_last_header_already_described_the_target() -> None:
    # on -> header(on) -> off (notice) -> back on before any header: no notice
    log = header(start_turn(mode([], True), 1), 1, 1, True)
    log = [*log, *number_drafts(record(log, False), len(log), 0)]
    assert kinds(log[-2:]) == [PLAN_MODE, USER_MESSAGE]
    assert kinds(record(log, True)) == [PLAN_MODE]


def test_silent_choice_has_no_notice() -> None:
    log = header(start_turn(mode([], True), 1), 1, 1, True)
    assert kinds(record(log, False, silent=True)) == [PLAN_MODE]


def after_a_turn(plan_mode: bool) -> list[Event]:
    """Turn 1, closed, whose one request header said ``plan_mode``."""
    return end_turn(header(start_turn([], 1), 1, 1, plan_mode), 1)


def test_a_silent_plan_mode_choice_does_not_count_as_noticed() -> None:
    # The approved review's exit was silent; choosing build mode again still
    # owes the model the notice, since the last header said plan mode.
    log = mode(after_a_turn(True), False)
    assert notice_due(log, False)


def test_a_human_message_after_a_plan_mode_choice_is_not_its_notice() -> None:
    log = mode(after_a_turn(False), True)
    log = append(log, USER_MESSAGE, {"text": "go on", "source": None})
    log = mode(log, False)
    assert kinds(record(log, True)) == [PLAN_MODE, USER_MESSAGE]


def test_a_notice_after_another_kind_does_not_count_as_a_notice_of_a_choice() -> None:
    log = append(after_a_turn(True), USER_MESSAGE, {"text": notice_text(False), "source": object_of(NOTICE_SOURCE)})
    assert notice_due(log, False)


def test_a_notice_given_for_a_choice_is_not_repeated() -> None:
    log = mode(after_a_turn(True), False)
    log = append(log, USER_MESSAGE, {"text": notice_text(False), "source": object_of(NOTICE_SOURCE)})
    log = mode(log, True)
    assert not notice_due(log, False)


def test_a_message_that_does_not_read_after_a_choice_is_not_its_notice() -> None:
    log = mode(after_a_turn(True), False)
    log = append(log, USER_MESSAGE, {"source": object_of(NOTICE_SOURCE)})  # no text
    assert notice_due(log, False)


def test_a_malformed_header_is_refused_when_deciding_a_notice() -> None:
    log = append(start_turn([], 1), REQUEST_HEADER, {"turn": 1, "step": 1})
    with pytest.raises(ReplayError) as caught:
        notice_due(log, True)
    err = caught.value
    assert (err.position, err.rule, err.detail) == (
        2,
        "malformed-payload",
        "payload.plan_mode: required field is missing",
    )


def _off_notice(s: Session) -> str:
    """The notice a user's own exit from plan mode gets after ``s`` (one
    plan-mode request was answered, so a notice is due)."""
    s.request()
    drafts = record(s.log, False)
    assert kinds(drafts) == [PLAN_MODE, USER_MESSAGE]
    return read_message(drafts[1].payload).text


@pytest.mark.parametrize("plan", ["none", "draft"])
def test_the_off_notice_is_neutral_without_an_approved_plan(plan: str) -> None:
    s = drafted() if plan == "draft" else Session()
    if plan == "none":
        s.mode(True)
    text = _off_notice(s)
    assert text.startswith("Plan mode is now off")
    assert "approved" not in text and "carry out" not in text
    assert text == notice_text(False)


def test_the_off_notice_names_the_approved_plan_when_one_exists() -> None:
    s = drafted()
    s.add(approve_event(s.state, current_ref(s)))
    assert _off_notice(s) == notice_text(False, "approved")
    assert "approved plan" in notice_text(False, "approved")


def test_the_off_notice_names_the_executing_plan_when_one_runs() -> None:
    s = executing()
    s.mode(True)  # plan mode turned on again while the plan executes
    text = _off_notice(s)
    assert text == notice_text(False, "executing")
    assert "executing" in text and "approved" not in text


def test_each_notice_reads_as_written() -> None:
    assert notice_text(True) == (
        "Plan mode is now active: research, read and ask questions, then present a "
        "complete plan with exit_plan_mode before changing anything."
    )
    assert notice_text(False) == "Plan mode is now off: you are in build mode again."
    assert notice_text(False, "approved") == "Plan mode is now off: carry out the approved plan."
    assert notice_text(False, "executing") == "Plan mode is now off: continue the plan that is executing."


# -- the pre-step flush ---------------------------------------------------------


@pytest.mark.parametrize("verdict", ["rejected", "aborted"])
def test_rejected_or_aborted_step_appends_nothing_and_keeps_pending(verdict: str) -> None:
    log = start_turn([], 1)
    flushed = flush(log, PendingChoice(True), verdict)
    assert flushed.drafts == ()
    assert flushed.pending_after_success == PendingChoice(True)


@pytest.mark.parametrize("verdict", ["rejected", "aborted"])
def test_a_step_that_is_not_accepted_keeps_the_pending_choice_either_way(verdict: Any) -> None:
    pending = PendingChoice(True)
    assert flush(start_turn([], 1), pending, verdict) == PreStep((), pending, pending)


def test_an_accepted_step_outside_a_turn_keeps_the_pending_choice_either_way() -> None:
    pending = PendingChoice(False, silent=True)
    closed = end_turn(start_turn([], 1), 1)
    assert flush(closed, pending, "accepted") == PreStep((), pending, pending)


def test_accepted_step_appends_pending_choice_before_the_header() -> None:
    log = start_turn([], 1)
    flushed = flush(log, PendingChoice(True), "accepted")
    assert kinds(flushed.drafts) == [PLAN_MODE]
    assert flushed.pending_after_success is None
    assert flushed.pending_after_failure == PendingChoice(True)
    log = [*log, *number_drafts(flushed.drafts, len(log), 3)]
    hdr = decide_request_header(fold_session(log), step=1)
    assert hdr.kind == REQUEST_HEADER
    assert hdr.payload == {"turn": 1, "step": 1, "plan_mode": True}
    fold_session([*log, *number_drafts((hdr,), len(log), 3)])  # the whole log is valid


def test_the_pre_step_flush_words_its_notice_from_the_plan_status() -> None:
    s = executing()
    s.mode(True)
    s.request()  # a plan-mode request was answered: leaving now owes a notice
    s.turn += 1
    s.raw(TURN_START, {"turn": s.turn})
    flushed = flush(s.log, PendingChoice(False), "accepted")
    assert kinds(flushed.drafts) == [PLAN_MODE, USER_MESSAGE]
    assert read_message(flushed.drafts[1].payload).text == notice_text(False, "executing")


def test_flush_outside_a_turn_appends_nothing() -> None:
    flushed = flush([], PendingChoice(True), "accepted")
    assert flushed.drafts == ()
    assert flushed.pending_after_success == PendingChoice(True)


def test_flush_of_a_netted_out_choice_appends_nothing_and_drops_it() -> None:
    log = start_turn(mode([], True), 1)
    flushed = flush(log, PendingChoice(True), "accepted")
    assert flushed.drafts == ()
    assert flushed.pending_after_success is None


def test_flush_without_pending_appends_nothing() -> None:
    flushed = flush(start_turn([], 1), None, "accepted")
    assert (flushed.drafts, flushed.pending_after_success) == ((), None)


def test_failed_append_keeps_the_choice_pending() -> None:
    log = start_turn([], 1)
    flushed = flush(log, PendingChoice(True, silent=True), "accepted")
    assert flushed.pending_after_failure == PendingChoice(True, silent=True)
    # the step goes on without the append: its header records the old state
    assert decide_request_header(fold_session(log), step=1) == Draft(
        REQUEST_HEADER, {"turn": 1, "step": 1, "plan_mode": False}
    )


def test_header_needs_an_open_turn() -> None:
    with pytest.raises(ReplayError) as err:
        decide_request_header(fold_session(end_turn(start_turn([], 1), 1)), step=1)
    assert (err.value.position, err.value.rule) == (3, "transition-not-allowed")


def test_session_fold_rejects_a_header_that_disagrees_with_the_fold() -> None:
    log = header(start_turn(mode([], True), 1), 1, 1, False)
    with pytest.raises(ReplayError) as err:
        fold_session(log)
    assert (err.value.position, err.value.rule) == (3, "header-mismatch")


def test_toggling_between_turns_does_not_repeat_the_notice() -> None:
    log = end_turn(header(start_turn([], 1), 1, 1, False), 1)
    log = [*log, *number_drafts(record(log, True), len(log), 0)]  # on, with a notice
    assert log[-1].kind == USER_MESSAGE
    log = [*log, *number_drafts(record(log, False), len(log), 0)]  # back to what the header said
    assert log[-1].kind == PLAN_MODE
    again = record(log, True)  # on again: already noticed since the header
    assert kinds(again) == [PLAN_MODE]
