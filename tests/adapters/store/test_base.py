"""What every store does before it touches its backend (``adapters.store.base``)."""

from __future__ import annotations

from planfold.adapters.store.base import prepare_append
from planfold.kernel.log import Event


def test_only_a_keyed_append_carries_a_request_hash() -> None:
    event = Event(1, "plan/mode", 0, {"active": True})
    assert prepare_append("s", 0, [event], None).request_hash == ""
    keyed = prepare_append("s", 0, [event], "k").request_hash
    assert len(keyed) == 64
    assert prepare_append("s", 0, [Event(1, "plan/mode", 0, {"active": False})], "k").request_hash != keyed
