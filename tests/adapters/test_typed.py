"""The stores' msgspec decoders (``adapters.typed``) read a payload exactly
as the kernel's reader does: the same value, or no value, and then the
kernel's reader decides and reports."""

from __future__ import annotations

import copy
import gc
from typing import Any

import msgspec
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from planfold.adapters.typed import _Source, decoder
from planfold.kernel import log
from planfold.kernel.errors import PayloadError
from planfold.kernel.payload import read_as, shape_of
from planfold.kernel.session import PAYLOAD_TYPES
from tests.payload_cases import SEEDS, mutated


def kernel_reading(kind: str, payload: Any) -> object:
    try:
        return read_as(PAYLOAD_TYPES[kind], payload)
    except PayloadError:
        return None


@pytest.mark.parametrize("kind", sorted(log.KNOWN_KINDS))
@given(data=st.data())
def test_the_fast_decoder_gives_the_kernel_s_value_or_leaves_the_payload_to_it(kind: str, data: st.DataObject) -> None:
    payload = data.draw(mutated(SEEDS[kind]), label="payload")
    text = msgspec.json.encode(payload)
    read = decoder(kind)
    assert read is not None
    fast = read(text)
    expected = kernel_reading(kind, msgspec.json.decode(text))
    event("read" if fast is not None else "left to the kernel")
    if fast is None:
        assert expected is None, f"{kind}: the kernel reads it, the fast decoder does not"
    else:
        assert fast == expected and type(fast) is type(expected)


@pytest.mark.parametrize("kind", sorted(log.KNOWN_KINDS))
def test_every_valid_payload_is_read_by_the_fast_decoder(kind: str) -> None:
    read = decoder(kind)
    assert read is not None
    for payload in SEEDS[kind]:
        assert read(msgspec.json.encode(payload)) == read_as(PAYLOAD_TYPES[kind], payload)


@pytest.mark.parametrize("text", [b"", b"[]", b"{", b'"x"', b"null", 5, None, b'{"turn": 1, "turn": 0}'])
def test_text_that_is_not_a_payload_of_the_kind_is_left_to_the_kernel(text: Any) -> None:
    read = decoder(log.TURN_START)
    assert read is not None and read(text) is None


def test_a_kind_without_a_payload_type_has_no_fast_decoder() -> None:
    assert decoder("turn/pause") is None


def with_value(payload: Any, path: tuple[str, ...], value: object) -> Any:
    """A copy of ``payload`` with ``value`` at ``path``."""
    out = copy.deepcopy(payload)
    target = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return out


_BLOCK = {
    "version": 1, "operation": "block",
    "goal": {"id": "g1", "revision": 2, "objective": "Ship", "phase": "blocked", "max_rounds": 5,
             "blocked_reason": {"code": "needs-input", "message": "Which file?"}},
    "rounds_started": 0, "created_at": 1, "updated_at": 2,
}


@pytest.mark.parametrize(
    ("kind", "payload", "path", "value"),
    [
        (log.GOAL_CHANGE, SEEDS[log.GOAL_CHANGE][0], ("goal", "objective"), " Ship"),
        (log.GOAL_CHANGE, SEEDS[log.GOAL_CHANGE][0], ("goal", "objective"), "Ship\u3000"),
        (log.GOAL_CHANGE, _BLOCK, ("goal", "blocked_reason", "code"), "Needs-input"),
        (log.GOAL_CHANGE, _BLOCK, ("goal", "blocked_reason", "message"), "\n"),
        (log.TOOL_CALL, SEEDS[log.TOOL_CALL][0], ("call_id",), " \t"),
        (log.TOOL_REFUSED, SEEDS[log.TOOL_REFUSED][0], ("code",), "a--b"),
    ],
)
def test_text_breaking_a_rule_msgspec_is_not_asked_to_check_is_left_to_the_kernel(
    kind: str, payload: Any, path: tuple[str, ...], value: str
) -> None:
    read = decoder(kind)
    assert read is not None
    assert read(msgspec.json.encode(payload)) == read_as(PAYLOAD_TYPES[kind], payload)
    bad = with_value(payload, path, value)
    assert read(msgspec.json.encode(bad)) is None
    assert kernel_reading(kind, bad) is None


def test_a_block_whose_reason_breaks_the_phase_rule_is_left_to_the_kernel() -> None:
    read = decoder(log.GOAL_CHANGE)
    assert read is not None
    unblocked = with_value(_BLOCK, ("goal", "phase"), "active")
    assert read(msgspec.json.encode(unblocked)) is None
    assert kernel_reading(log.GOAL_CHANGE, unblocked) is None


def test_the_structs_msgspec_decodes_into_are_not_tracked_by_the_garbage_collector() -> None:
    # One Struct holds what one JSON text decodes to, a tree: never a cycle.
    twin = _Source().twin(shape_of(PAYLOAD_TYPES[log.USER_MESSAGE]))
    struct = msgspec.json.decode(msgspec.json.encode(SEEDS[log.USER_MESSAGE][0]), type=twin)
    assert not gc.is_tracked(struct)
