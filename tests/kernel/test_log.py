"""The session log's own readers: the turn fold and its exact refusals,
request headers, message sources, and how drafts are numbered."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from planfold.kernel.errors import PayloadError, ReplayError
from planfold.kernel.log import (
    ASSISTANT_MESSAGE,
    REQUEST_HEADER,
    TURN_END,
    TURN_START,
    USAGE_VERSION,
    USER_MESSAGE,
    AssistantPayload,
    Draft,
    Event,
    GoalSource,
    Message,
    ModelUsage,
    PluginSource,
    RequestHeader,
    TurnState,
    apply_turn_event,
    assistant_message,
    check_envelope,
    fold_turns,
    number_drafts,
    read_assistant_message,
    read_message,
    read_request_header,
    turn_end,
    turn_start,
    user_message,
)
from planfold.kernel.session import fold_session

# --------------------------------------------------------------------------
# Turns and request headers


@pytest.mark.parametrize(
    ("event", "detail"),
    [
        (Event(1, TURN_START, 0, {"turn": 1, "x": 0}), "payload.x: is not a known field"),
        (Event(1, TURN_START, 0, {}), "payload.turn: required field is missing"),
        (Event(1, TURN_END, 0, {"turn": 1, "x": 0}), "payload.x: is not a known field"),
        (Event(1, TURN_END, 0, []), "payload: must be an object"),  # type: ignore[arg-type]
        (
            Event(1, TURN_END, 0, {"turn": 2**53}),
            "payload.turn: must be <= 9007199254740991 (the largest safe integer), got 9007199254740992",
        ),
    ],
)
def test_a_bad_turn_payload_is_refused_naming_the_key_at_fault(event: Event, detail: str) -> None:
    with pytest.raises(ReplayError) as caught:
        apply_turn_event(TurnState(turn=1, open=True), event)
    err = caught.value
    assert (err.position, err.rule, err.detail) == (1, "malformed-payload", detail)


def test_a_turn_started_while_one_is_open_names_the_open_turn() -> None:
    with pytest.raises(ReplayError) as caught:
        apply_turn_event(TurnState(turn=3, open=True), Event(9, TURN_START, 0, {"turn": 4}))
    err = caught.value
    assert (err.position, err.rule, err.detail) == (9, "transition-not-allowed", "turn 3 is still open")


def test_a_turn_ended_while_not_open_names_the_turn() -> None:
    with pytest.raises(ReplayError) as caught:
        apply_turn_event(TurnState(turn=2), Event(5, TURN_END, 0, {"turn": 2}))
    err = caught.value
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
    ("state", "header", "detail"),
    [
        (TurnState(turn=1, open=True), {"turn": 2, "step": 1}, "request header for turn 2 outside an open turn"),
        (TurnState(turn=2, step=1), {"turn": 2, "step": 1}, "request header for turn 2 outside an open turn"),
        (TurnState(turn=2, open=True, step=1), {"turn": 2, "step": 3}, "request step 3 does not follow step 1"),
        (TurnState(turn=2, open=True, step=2), {"turn": 2, "step": 1}, "request step 1 does not follow step 2"),
    ],
)
def test_a_request_header_outside_its_open_turn_or_out_of_step_is_refused_at_its_seq(
    state: TurnState, header: dict[str, Any], detail: str
) -> None:
    with pytest.raises(ReplayError) as caught:
        apply_turn_event(state, Event(7, REQUEST_HEADER, 0, {**header, "plan_mode": False}))
    err = caught.value
    assert (err.position, err.rule, err.detail) == (7, "transition-not-allowed", detail)


def test_a_request_header_of_the_open_turn_repeats_or_advances_its_step() -> None:
    state = TurnState(turn=2, open=True, step=1)
    for step in (1, 2):
        header = RequestHeader(2, step, True)
        event = Event(7, REQUEST_HEADER, 0, {"turn": 2, "step": step, "plan_mode": True})
        assert apply_turn_event(state, event) == TurnState(turn=2, open=True, step=step, last_header=header)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"turn": 0, "step": 1, "plan_mode": False}, "payload.turn: must be >= 1, got 0"),
        ({"turn": 1, "step": 0, "plan_mode": False}, "payload.step: must be >= 1, got 0"),
        ({"turn": 1, "step": -2, "plan_mode": False}, "payload.step: must be >= 1, got -2"),
    ],
)
def test_a_request_header_numbers_turns_and_steps_from_one(payload: dict[str, Any], message: str) -> None:
    with pytest.raises(PayloadError) as caught:
        read_request_header(payload)
    assert caught.value.message == message


# --------------------------------------------------------------------------
# The envelope

#: The largest time an event may carry (the largest safe integer).
LATEST = 2**53 - 1


@pytest.mark.parametrize(
    ("prev", "event"),
    [
        (None, Event(1, TURN_START, 0, {"turn": 1})),
        (None, Event(1, TURN_START, LATEST, {"turn": 1})),
        (Event(1, TURN_START, 5, {"turn": 1}), Event(2, TURN_END, 5, {"turn": 1})),
        (Event(1, TURN_START, LATEST, {"turn": 1}), Event(2, TURN_END, LATEST, {"turn": 1})),
    ],
)
def test_an_event_may_come_at_time_zero_at_the_largest_safe_time_or_at_its_predecessor_s_time(
    prev: Event | None, event: Event
) -> None:
    check_envelope(prev, event)  # raises ReplayError for an event that may not follow prev


@pytest.mark.parametrize(
    ("prev", "event", "rule", "detail"),
    [
        (
            Event(1, TURN_START, 5, {"turn": 1}),
            Event(2, TURN_END, 4, {"turn": 1}),
            "time-regressed",
            "at=4 is earlier than the previous event's at=5",
        ),
        (
            Event(1, TURN_START, LATEST + 2, {"turn": 1}),
            Event(2, TURN_END, LATEST, {"turn": 1}),
            "time-regressed",
            f"at={LATEST} is earlier than the previous event's at={LATEST + 2}",
        ),
        (None, Event(2, "turn/pause", LATEST, {}), "seq-gap", "expected seq 1, found 2"),
        (None, Event(1, "turn/pause", LATEST, {}), "unknown-kind", "unknown event kind 'turn/pause'"),
        (
            None,
            Event(1, "turn/pause", LATEST + 1, {}),
            "malformed-payload",
            f"'at' must be <= {LATEST} (the largest safe integer), got {LATEST + 1}",
        ),
    ],
)
def test_an_envelope_is_judged_seq_then_time_then_kind_and_refused_with_its_detail(
    prev: Event | None, event: Event, rule: str, detail: str
) -> None:
    with pytest.raises(ReplayError) as caught:
        check_envelope(prev, event)
    err = caught.value
    assert (err.position, err.rule, err.detail) == (event.seq, rule, detail)


# --------------------------------------------------------------------------
# Messages


def test_a_plugin_message_is_attributed_to_its_plugin() -> None:
    payload: dict[str, Any] = {"text": "hello", "source": {"type": "plugin", "plugin": "plan-mode"}}
    assert read_message(payload) == Message("hello", PluginSource("plugin", "plan-mode"))


def test_an_assistant_message_written_before_usage_existed_reads_as_it_always_did() -> None:
    old = read_assistant_message({"text": "Done.", "source": None})
    assert (old.text, old.source, old.usage) == ("Done.", None, None)
    old_event = Event(2, "assistant/message", 1, {"text": "Done.", "source": None})
    state = fold_session((*number_drafts([turn_start(1)], 0, 1), old_event))
    assert state.turns.turn == 1


def test_an_assistant_message_carries_the_usage_of_its_call_with_only_what_was_known() -> None:
    usage = ModelUsage(USAGE_VERSION, 120, 50, 7, 32)
    draft = assistant_message("ok", usage)
    assert draft.payload == {
        "text": "ok", "source": None,
        "usage": {"version": 1, "latency_ms": 120, "prompt_tokens": 50, "completion_tokens": 7, "cached_tokens": 32},
    }
    assert read_assistant_message(draft.payload) == AssistantPayload("ok", None, usage)
    tokens_only = assistant_message("ok", ModelUsage(USAGE_VERSION, None, 50, 7)).payload
    assert tokens_only["usage"] == {"version": 1, "prompt_tokens": 50, "completion_tokens": 7}


@pytest.mark.parametrize(
    ("usage", "code", "detail"),
    [
        ({"version": 2, "latency_ms": 5}, "unknown-version", "payload.usage.version: must be one of [1], got 2"),
        ({"latency_ms": 5}, "malformed-payload", "payload.usage.version"),
        ({"version": 1, "latency_ms": -1}, "malformed-payload", "payload.usage.latency_ms: must be >= 0, got -1"),
        ({"version": 1, "prompt_tokens": True}, "malformed-payload", "payload.usage.prompt_tokens"),
        ({"version": 1, "cached_tokens": None}, "malformed-payload", "payload.usage.cached_tokens"),
        ({"version": 1, "cost": 3}, "malformed-payload", "cost"),
        (None, "malformed-payload", "payload.usage: must be an object"),
    ],
)
def test_a_usage_the_kernel_cannot_read_is_refused_naming_the_key_at_fault(
    usage: object, code: str, detail: str
) -> None:
    payload = {"text": "x", "source": None, "usage": usage}
    with pytest.raises(PayloadError) as caught:
        read_assistant_message(payload)  # type: ignore[arg-type]
    assert caught.value.code == code and detail in str(caught.value)
    log = (*number_drafts([turn_start(1)], 0, 1), Event(2, "assistant/message", 1, payload))  # type: ignore[arg-type]
    with pytest.raises(ReplayError) as replayed:
        fold_session(log)
    assert (replayed.value.position, replayed.value.rule) == (2, code)


def test_a_draft_with_a_negative_count_is_refused_as_the_callers_fault() -> None:
    with pytest.raises(PayloadError, match=r"payload\.usage\.completion_tokens: must be >= 0"):
        assistant_message("x", ModelUsage(USAGE_VERSION, 1, 2, -3))


# --------------------------------------------------------------------------
# Appending


def test_drafts_are_numbered_after_the_last_seq_all_stamped_with_the_given_time() -> None:
    assert number_drafts([turn_start(1)], 0, 5) == (Event(1, "turn/start", 5, {"turn": 1}),)
    drafts = [turn_end(1), turn_start(2)]
    assert number_drafts(drafts, 2, 9) == (Event(3, "turn/end", 9, {"turn": 1}), Event(4, "turn/start", 9, {"turn": 2}))


# --------------------------------------------------------------------------
# Builders of the turn and message kinds


def test_the_turn_and_message_builders_make_the_drafts_the_fold_reads() -> None:
    drafts = (
        turn_start(1),
        user_message("hello"),
        user_message("from a plugin", PluginSource("plugin", "ci")),
        assistant_message("hi"),
        turn_end(1),
    )
    events = number_drafts(drafts, 0, 10)
    assert [e.kind for e in events] == [TURN_START, USER_MESSAGE, USER_MESSAGE, ASSISTANT_MESSAGE, TURN_END]
    assert read_message(events[2].payload) == Message("from a plugin", PluginSource("plugin", "ci"))
    assert read_message(events[3].payload) == Message("hi", None)
    state = fold_turns(events)
    assert (state.turn, state.open) == (1, False)


def test_a_goal_round_message_carries_its_attribution() -> None:
    source = GoalSource("goal", "g1", 2, 3)
    draft = user_message("keep going", source)
    assert read_message(draft.payload).source == source


@pytest.mark.parametrize(
    "build",
    [
        lambda: turn_start(0),
        lambda: turn_end(-1),
        lambda: turn_start(True),
        lambda: user_message(7),  # type: ignore[arg-type]
        lambda: user_message("x", PluginSource("plugin", "")),
        lambda: user_message("x", GoalSource("goal", "", 1, 1)),
        lambda: user_message("x", GoalSource("goal", "g1", 1, 2**53)),
        lambda: assistant_message(None),  # type: ignore[arg-type]
    ],
)
def test_a_builder_refuses_what_its_reader_would_refuse(build: Callable[[], Draft]) -> None:
    with pytest.raises(PayloadError):
        build()
