"""What every store does before it touches its backend (``adapters.store.base``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from planfold.adapters.store.base import InvalidRequestError, prepare_append
from planfold.kernel.log import Event

EVENT = Event(1, "plan/mode", 0, {"active": True})


def test_only_a_keyed_append_carries_a_request_hash() -> None:
    event = Event(1, "plan/mode", 0, {"active": True})
    assert prepare_append("s", 0, [event], None).request_hash == ""
    keyed = prepare_append("s", 0, [event], "k").request_hash
    assert len(keyed) == 64
    assert prepare_append("s", 0, [Event(1, "plan/mode", 0, {"active": False})], "k").request_hash != keyed


class Events(Sequence[Event]):
    """A sequence of events that is neither a list nor a tuple."""

    def __init__(self, *events: Event) -> None:
        self.events = events

    def __getitem__(self, index: Any) -> Any:
        return self.events[index]

    def __len__(self) -> int:
        return len(self.events)


@pytest.mark.parametrize("events", [[EVENT], (EVENT,), Events(EVENT)])
def test_an_append_takes_its_events_from_any_sequence(events: Sequence[Event]) -> None:
    assert prepare_append("s", 0, events, None).events == (EVENT,)


@pytest.mark.parametrize("events", [[], (), Events(), "events", b"events", iter([EVENT]), {"seq": 1}])
def test_an_append_refuses_events_that_are_no_sequence_text_or_nothing(events: Any) -> None:
    with pytest.raises(InvalidRequestError, match="non-empty sequence of events"):
        prepare_append("s", 0, events, None)


@pytest.mark.parametrize(("text", "valid"), [("s", True), ("séance", True), (" s ", True), ("s\ud800", False)])
@pytest.mark.parametrize("as_key", [False, True])
def test_a_session_id_or_key_is_storable_unicode_text_ascii_or_not(text: str, valid: bool, as_key: bool) -> None:
    session_id, key = ("s", text) if as_key else (text, None)
    if valid:
        assert prepare_append(session_id, 0, [EVENT], key).key == key
        return
    with pytest.raises(InvalidRequestError, match="lone surrogate"):
        prepare_append(session_id, 0, [EVENT], key)
