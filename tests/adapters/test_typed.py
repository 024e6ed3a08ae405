"""The stores' msgspec decoders (``adapters.typed``) read a payload exactly
as the kernel's reader does: the same value, or no value, and then the
kernel's reader decides and reports."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from planfold.adapters.typed import decoder
from planfold.kernel import log
from planfold.kernel.errors import PayloadError
from planfold.kernel.payload import read_as
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
