"""Tests that pin what mutation testing found unpinned in the session log,
the session fold, plan mode, the plan machine and its views: the exact
refusals (rule, position and detail) of bad turn, header and envelope
events, the fast envelope path of the incremental folds, the goal
attribution of messages read the slow way, when a plan-mode notice is due,
what each plan action clears, the placeholders of the plan views, and the
package's ``dir()``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import MappingProxyType
from typing import Any

import pytest

from planfold import kernel
from planfold.kernel.errors import PayloadError, ReplayError
from planfold.kernel.graph import Edge, GraphError, make_graph
from planfold.kernel.log import (
    PLAN_ARTIFACT,
    PLAN_MODE,
    REQUEST_HEADER,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
    Event,
    MessageSource,
    RequestHeader,
    TurnState,
    apply_turn_event,
    fold_turns,
    read_message,
    read_message_round,
    read_request_header,
)
from planfold.kernel.plan.artifact import PlanArtifact, PlanRef
from planfold.kernel.plan.context import render_summary
from planfold.kernel.plan.events import (
    PlanChangeError,
    approve_event,
    draft_event,
    realign_event,
    reject_event,
    rewrite_event,
    start_event,
    todo_event,
    verify_event,
)
from planfold.kernel.plan.mode import NOTICE_SOURCE, Flush, PendingChoice, choice_events, flush_pre_step, notice_text
from planfold.kernel.plan.spec import OpenQuestion, PlanSpec, Todo
from planfold.kernel.plan.views import build_summary_view, render_plan_content
from planfold.kernel.session import SessionState, apply_session_event, fold_more, fold_rows, fold_session
from tests.plan_helpers import GOOD_CANDIDATE, Session, spec

# --------------------------------------------------------------------------
# Turns and request headers


def _replay_error(fold: Callable[[], object]) -> ReplayError:
    with pytest.raises(ReplayError) as caught:
        fold()
    return caught.value


@pytest.mark.parametrize(
    ("event", "detail"),
    [
        (Event(1, TURN_START, 0, {"turn": 1, "x": 0}), "turn/start payload has unexpected key(s) ['x']"),
        (Event(1, TURN_START, 0, {}), "turn/start payload is missing key(s) ['turn']"),
        (Event(1, TURN_END, 0, {"turn": 1, "x": 0}), "turn/end payload has unexpected key(s) ['x']"),
        (Event(1, TURN_END, 0, []), "turn/end payload must be an object, got list"),  # type: ignore[arg-type]
    ],
)
def test_a_bad_turn_payload_is_refused_naming_its_kind(event: Event, detail: str) -> None:
    err = _replay_error(lambda: apply_turn_event(TurnState(turn=1, open=True), event))
    assert (err.position, err.rule, err.detail) == (1, "malformed-payload", detail)


def test_a_turn_started_while_one_is_open_names_the_open_turn() -> None:
    err = _replay_error(lambda: apply_turn_event(TurnState(turn=3, open=True), Event(9, TURN_START, 0, {"turn": 4})))
    assert (err.position, err.rule, err.detail) == (9, "transition-not-allowed", "turn 3 is still open")


def test_a_turn_ended_while_not_open_names_the_turn() -> None:
    err = _replay_error(lambda: apply_turn_event(TurnState(turn=2), Event(5, TURN_END, 0, {"turn": 2})))
    assert (err.position, err.rule, err.detail) == (5, "transition-not-allowed", "turn 2 is not open")


def test_a_new_turn_keeps_the_last_request_header_of_the_log() -> None:
    header = {"turn": 1, "step": 1, "plan_mode": True}
    events = [
        Event(1, TURN_START, 0, {"turn": 1}),
        Event(2, REQUEST_HEADER, 0, header),
        Event(3, TURN_END, 0, {"turn": 1}),
        Event(4, TURN_START, 0, {"turn": 2}),
    ]
    assert fold_turns(events) == TurnState(turn=2, open=True, step=0, last_header=RequestHeader(1, 1, True))
    assert fold_turns(events[:3]) == TurnState(turn=1, open=False, step=1, last_header=RequestHeader(1, 1, True))


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"turn": 0, "step": 1, "plan_mode": False}, "'turn' must be >= 1, got 0"),
        ({"turn": 1, "step": 0, "plan_mode": False}, "'step' must be >= 1, got 0"),
        ({"turn": 1, "step": -2, "plan_mode": False}, "'step' must be >= 1, got -2"),
    ],
)
def test_a_request_header_numbers_turns_and_steps_from_one(payload: dict[str, Any], message: str) -> None:
    with pytest.raises(PayloadError) as caught:
        read_request_header(payload)
    assert caught.value.message == message


# --------------------------------------------------------------------------
# Messages


def test_a_plugin_message_is_attributed_to_its_plugin() -> None:
    payload: dict[str, Any] = {"text": "hello", "source": {"type": "plugin", "plugin": "plan-mode"}}
    assert read_message(payload) == ("hello", MessageSource("plugin", plugin="plan-mode"))
    assert read_message(payload)[1].kind == "plugin"


GOAL_SOURCE = {"type": "goal", "goal_id": "g1", "revision": 2, "round": 3}


@pytest.mark.parametrize(
    "payload",
    [
        MappingProxyType({"text": "continue", "source": GOAL_SOURCE}),
        {"text": "continue", "source": MappingProxyType(GOAL_SOURCE)},
    ],
)
def test_a_goal_round_read_from_any_mapping_names_its_goal_revision_and_round(payload: Any) -> None:
    assert read_message_round(payload) == ("g1", 2, 3)


@pytest.mark.parametrize(
    "source",
    [None, MappingProxyType({"type": "plugin", "plugin": "plan-mode"})],
)
def test_a_message_read_from_any_mapping_without_a_goal_has_no_round(source: Any) -> None:
    assert read_message_round(MappingProxyType({"text": "hi", "source": source})) is None


# --------------------------------------------------------------------------
# The session fold


def test_a_header_that_disagrees_with_the_fold_says_both_states() -> None:
    header = {"turn": 1, "step": 1, "plan_mode": True}
    events = [Event(1, TURN_START, 0, {"turn": 1}), Event(2, REQUEST_HEADER, 0, header)]
    err = _replay_error(lambda: fold_session(events))
    assert (err.position, err.rule, err.detail) == (
        2,
        "header-mismatch",
        "request header says plan_mode=True, but the log before it says False",
    )


def _started() -> SessionState:
    """A session whose last event is seq 2 at time 5 (turn 1 is open)."""
    return fold_session([Event(1, TURN_START, 5, {"turn": 1}), Event(2, PLAN_MODE, 5, {"active": True})])


def _more(state: SessionState, events: list[Event]) -> SessionState:
    return fold_more(state, events)


def _rows(state: SessionState, events: list[Event]) -> SessionState:
    return fold_rows(state, [(e.seq, e.kind, e.at, e.payload) for e in events])


FOLDS: list[Callable[[SessionState, list[Event]], SessionState]] = [_more, _rows]
END = {"turn": 1}
USER = {"text": "hi", "source": None}


@pytest.mark.parametrize("fold", FOLDS)
@pytest.mark.parametrize(
    ("events", "position", "detail"),
    [
        ([Event(1, TURN_END, 6, END)], 1, "expected seq 3, found 1"),
        ([Event(2, TURN_END, 6, END)], 2, "expected seq 3, found 2"),
        ([Event(4, TURN_END, 6, END)], 4, "expected seq 3, found 4"),
        ([Event(3, USER_MESSAGE, 6, USER), Event(2, TURN_END, 6, END)], 2, "expected seq 4, found 2"),
        ([Event(3, USER_MESSAGE, 6, USER), Event(5, TURN_END, 6, END)], 5, "expected seq 4, found 5"),
    ],
)
def test_a_continued_fold_refuses_a_seq_that_does_not_follow_the_stored_one(
    fold: Callable[[SessionState, list[Event]], SessionState], events: list[Event], position: int, detail: str
) -> None:
    err = _replay_error(lambda: fold(_started(), events))
    assert (err.position, err.rule, err.detail) == (position, "seq-gap", detail)


@pytest.mark.parametrize("fold", FOLDS)
@pytest.mark.parametrize(
    ("events", "position", "detail"),
    [
        ([Event(1, TURN_START, 0, {"turn": 1}), Event(0, TURN_END, 0, END)], 0, "expected seq 2, found 0"),
        ([Event(1.0, TURN_START, 0, {"turn": 1})], 1, "expected seq 1, found 1.0"),  # type: ignore[arg-type]
        ([Event(True, TURN_START, 0, {"turn": 1})], 1, "expected seq 1, found True"),
    ],
)
def test_a_fresh_fold_refuses_a_seq_that_is_not_the_next_integer(
    fold: Callable[[SessionState, list[Event]], SessionState], events: list[Event], position: int, detail: str
) -> None:
    err = _replay_error(lambda: fold(SessionState(), events))
    assert (err.position, err.rule, err.detail) == (position, "seq-gap", detail)


@pytest.mark.parametrize("fold", FOLDS)
def test_a_fold_refuses_an_unknown_kind(fold: Callable[[SessionState, list[Event]], SessionState]) -> None:
    err = _replay_error(lambda: fold(_started(), [Event(3, "turn/pause", 6, END)]))
    assert (err.position, err.rule, err.detail) == (3, "unknown-kind", "unknown event kind 'turn/pause'")


@pytest.mark.parametrize("fold", FOLDS)
def test_a_continued_fold_refuses_a_negative_time_even_after_a_stored_negative_one(
    fold: Callable[[SessionState, list[Event]], SessionState],
) -> None:
    # A stored state is input too: continuing from one whose last time is
    # negative must not let a negative time through, as apply_session_event
    # does not.
    stored = SessionState(last=Event(1, TURN_START, -5, {"turn": 1}), turns=TurnState(turn=1, open=True))
    event = Event(2, USER_MESSAGE, -3, USER)
    expected = _replay_error(lambda: apply_session_event(stored, event))
    err = _replay_error(lambda: fold(stored, [event]))
    assert (err.position, err.rule, err.detail) == (expected.position, expected.rule, expected.detail)
    assert (err.rule, err.detail) == ("malformed-payload", "'at' must be a non-negative integer, got -3")
    assert fold(stored, [Event(2, USER_MESSAGE, 0, USER)]).last == Event(2, USER_MESSAGE, 0, USER)


# --------------------------------------------------------------------------
# Plan mode: notices and the flush

START, CLOSE = Event(1, TURN_START, 0, {"turn": 1}), Event(3, TURN_END, 0, {"turn": 1})


def _header(plan_mode: bool) -> Event:
    return Event(2, REQUEST_HEADER, 0, {"turn": 1, "step": 1, "plan_mode": plan_mode})


def _then(events: Iterable[Event], *more: tuple[str, dict[str, Any]]) -> list[Event]:
    log = list(events)
    for kind, payload in more:
        log.append(Event(len(log) + 1, kind, 0, payload))
    return log


def _kinds(events: Iterable[Event]) -> list[str]:
    return [event.kind for event in events]


def test_a_silent_plan_mode_choice_does_not_count_as_noticed() -> None:
    # The approved review's exit was silent; choosing build mode again still
    # owes the model the notice, since the last header said plan mode.
    log = _then([START, _header(True), CLOSE], (PLAN_MODE, {"active": False}))
    out = choice_events(log, False, 7)
    assert _kinds(out) == [PLAN_MODE, USER_MESSAGE]
    assert out[1] == Event(6, USER_MESSAGE, 7, {"text": notice_text(False), "source": NOTICE_SOURCE})


def test_a_human_message_after_a_plan_mode_choice_is_not_its_notice() -> None:
    log = _then(
        [START, _header(False), CLOSE],
        (PLAN_MODE, {"active": True}),
        (USER_MESSAGE, {"text": "go on", "source": None}),
        (PLAN_MODE, {"active": False}),
    )
    assert _kinds(choice_events(log, True, 7)) == [PLAN_MODE, USER_MESSAGE]


def test_a_notice_after_another_kind_does_not_count_as_a_notice_of_a_choice() -> None:
    log = _then([START, _header(True), CLOSE], (USER_MESSAGE, {"text": notice_text(False), "source": NOTICE_SOURCE}))
    assert _kinds(choice_events(log, False, 7)) == [PLAN_MODE, USER_MESSAGE]


def test_a_notice_given_for_a_choice_is_not_repeated() -> None:
    log = _then(
        [START, _header(True), CLOSE],
        (PLAN_MODE, {"active": False}),
        (USER_MESSAGE, {"text": notice_text(False), "source": NOTICE_SOURCE}),
        (PLAN_MODE, {"active": True}),
    )
    assert _kinds(choice_events(log, False, 7)) == [PLAN_MODE]


def test_a_malformed_header_is_refused_when_deciding_a_notice() -> None:
    log = [START, Event(2, REQUEST_HEADER, 0, {"turn": 1, "step": 1})]
    err = _replay_error(lambda: choice_events(log, True, 7))
    assert (err.position, err.rule, err.detail) == (
        2,
        "malformed-payload",
        "request/header payload is missing key(s) ['plan_mode']",
    )


@pytest.mark.parametrize("verdict", ["rejected", "aborted"])
def test_a_step_that_is_not_accepted_keeps_the_pending_choice_either_way(verdict: Any) -> None:
    pending = PendingChoice(True)
    assert flush_pre_step([START], pending, verdict, 7) == Flush((), pending, pending)



def test_an_accepted_step_outside_a_turn_keeps_the_pending_choice_either_way() -> None:
    pending = PendingChoice(False, silent=True)
    closed = [START, Event(2, TURN_END, 0, {"turn": 1})]
    assert flush_pre_step(closed, pending, "accepted", 7) == Flush((), pending, pending)


# --------------------------------------------------------------------------
# The plan machine


def _drafted() -> Session:
    s = Session()
    s.mode(True)
    s.add(draft_event(s.state, "p1", spec(), GOOD_CANDIDATE, s.at()))
    return s


def _ref(s: Session) -> PlanRef:
    assert s.state.plan.current is not None
    return s.state.plan.current.ref


def _verifying() -> Session:
    s = _drafted()
    s.add(approve_event(s.state, _ref(s), s.at()))
    s.mode(False)
    s.add(start_event(s.state, _ref(s), s.at()))
    s.add(verify_event(s.state, s.at()))
    assert s.state.plan.verifying
    return s


@pytest.mark.parametrize(
    ("build", "action"),
    [
        (lambda state: rewrite_event(state, spec(), None, 1), "rewrite"),
        (lambda state: todo_event(state, "t1", "done", 1), "todo"),
    ],
)
def test_a_change_to_no_plan_is_refused_naming_the_action(
    build: Callable[[SessionState], Event], action: str
) -> None:
    with pytest.raises(PlanChangeError) as caught:
        build(SessionState())
    err = caught.value
    assert (err.code, err.action, err.detail) == ("no-plan", action, "the session has no plan")
    assert str(err) == f"cannot {action} the plan: the session has no plan"


def test_approving_a_rejected_draft_clears_the_feedback() -> None:
    s = _drafted()
    s.add(reject_event(s.state, _ref(s), "split step two", s.at()))
    assert s.state.plan.feedback == "split step two"
    s.add(approve_event(s.state, _ref(s), s.at()))
    assert s.state.plan.feedback is None and s.state.plan.status == "approved"


def test_rewriting_a_rejected_draft_clears_the_feedback() -> None:
    s = _drafted()
    s.add(reject_event(s.state, _ref(s), "split step two", s.at()))
    s.add(rewrite_event(s.state, spec(goal="Add an export command, in two steps"), None, s.at()))
    assert s.state.plan.feedback is None
    assert s.state.plan.current is not None and s.state.plan.current.revision == 2


def test_a_rewrite_during_verification_ends_the_verify_phase() -> None:
    s = _verifying()
    s.add(rewrite_event(s.state, spec(goal="Another goal"), None, s.at()))
    plan = s.state.plan
    assert (plan.status, plan.verifying, plan.realign) == ("draft", False, "the plan was rewritten during execution")


def test_a_realignment_during_verification_ends_the_verify_phase() -> None:
    s = _verifying()
    s.add(realign_event(s.state, "an effect outside the scope", s.at()))
    plan = s.state.plan
    assert (plan.status, plan.verifying, plan.realign) == ("draft", False, "an effect outside the scope")


@pytest.mark.parametrize("note", [None, ""])
def test_a_realignment_without_a_reason_gets_the_default_reason(note: str | None) -> None:
    s = _verifying()
    s.raw(PLAN_ARTIFACT, {"action": "realign", "plan_id": "p1", "revision": 1, "note": note})
    assert s.state.plan.realign == "realignment was requested"


# --------------------------------------------------------------------------
# The plan views


def test_the_full_view_of_a_plan_without_a_goal_says_so() -> None:
    text = render_plan_content(PlanSpec(goal="  ", steps=("one",), constraints=(), verify=("v",), todos=()))
    assert text.startswith("# Plan: (no goal)\n\n## Goal\n\n(none)\n\n## Steps\n\n1. one\n")


def test_the_full_view_marks_blocking_open_questions() -> None:
    questions = (OpenQuestion("which format?", blocking=True), OpenQuestion(" later? "))
    text = render_plan_content(spec(open_questions=questions))
    assert "\n## Open questions\n\n- (blocking) which format?\n- later?\n" in text


def test_the_summary_of_a_plan_with_no_todo_ahead_says_none() -> None:
    done = spec(todos_=(Todo("t1", "flags", "done"), Todo("t2", "exporter", "dropped")))
    artifact = PlanArtifact("p1", 2, "executing", done, build_summary_view(done), 1, 2)
    assert render_summary(artifact).endswith("\nActive todos:\n- (none)\n")


# --------------------------------------------------------------------------
# Graphs and the package


@pytest.mark.parametrize("edge", [Edge("a b;", "b", "go"), Edge("a", " b", "go"), Edge("a", "b", "go!")])
def test_a_bad_edge_end_or_label_is_refused_naming_the_graph(edge: Edge) -> None:
    with pytest.raises(GraphError) as caught:
        make_graph("my_graph", "Title", "a", [edge])
    assert str(caught.value).startswith("my_graph: ")


def test_dir_of_the_package_lists_every_public_name_sorted() -> None:
    listed = dir(kernel)
    assert listed == sorted(listed)
    assert set(kernel.__all__) <= set(listed)
    assert {"__name__", "__all__"} <= set(listed)
