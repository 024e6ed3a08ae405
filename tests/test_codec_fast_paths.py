"""The codec's shortcuts answer exactly like the long way round.

``decode_payload`` skips the walk of a decoded payload when its text has too
few opening brackets to nest past ``MAX_DEPTH``; these tests hold it to the
plain definition (decode, then always walk) on texts around the limit.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from adapters.codec import MAX_DEPTH, _json_problem, decode_payload
from kernel.errors import ReplayError


def reference_decode(data: bytes | str, seq: int) -> tuple[str, Any]:
    """decode_payload as defined: msgspec decode, then always the full walk."""
    try:
        payload = msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return ("error", (seq, "malformed-payload"))
    if not isinstance(payload, dict):
        return ("error", (seq, "malformed-payload"))
    problem = _json_problem(payload, "stored payload")
    if problem is not None:
        return ("error", (seq, "malformed-payload", problem))
    return ("ok", payload)


def fast_decode(data: bytes | str, seq: int) -> tuple[str, Any]:
    try:
        return ("ok", decode_payload(data, seq))
    except ReplayError as exc:
        if exc.detail.startswith("stored payload is not a JSON object"):
            return ("error", (exc.position, exc.rule))
        return ("error", (exc.position, exc.rule, exc.detail))


def nested_text(depth: int, *, in_strings: int = 0, padding: int = 0) -> str:
    """An object nested ``depth`` containers deep (the outer object counts),
    with ``in_strings`` extra brackets inside a string and ``padding``
    characters of plain text."""
    inner = '"leaf"'
    for level in range(depth - 1):
        inner = f"[{inner}]" if level % 2 else f'{{"k":{inner}}}'
    extra = "[{" * (in_strings // 2) + "[" * (in_strings % 2)
    return f'{{"v":{inner},"s":"{extra}","p":"{"x" * padding}"}}'


@pytest.mark.parametrize("depth", [1, 2, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, MAX_DEPTH + 2, 300])
@pytest.mark.parametrize("in_strings", [0, 1, 5, MAX_DEPTH])
@pytest.mark.parametrize("as_bytes", [False, True])
def test_payloads_around_the_depth_limit_are_judged_as_by_the_walk(
    depth: int, in_strings: int, as_bytes: bool
) -> None:
    text = nested_text(depth, in_strings=in_strings)
    data: bytes | str = text.encode() if as_bytes else text
    assert fast_decode(data, 4) == reference_decode(data, 4)


@pytest.mark.parametrize("depth", range(MAX_DEPTH - 2, MAX_DEPTH + 3))
def test_the_shortest_texts_that_nest_near_the_limit_are_judged_as_by_the_walk(depth: int) -> None:
    text = '{"v":' + "[" * (depth - 1) + "]" * (depth - 1) + "}"
    assert fast_decode(text, 3) == reference_decode(text, 3)
    assert fast_decode(text.encode(), 3) == reference_decode(text.encode(), 3)


def test_the_limit_itself_is_where_the_walk_puts_it() -> None:
    assert fast_decode(nested_text(MAX_DEPTH), 1)[0] == "ok"
    assert fast_decode(nested_text(MAX_DEPTH + 1), 1)[0] == "error"


@given(
    st.integers(1, MAX_DEPTH + 5),
    st.integers(0, MAX_DEPTH + 5),
    st.integers(0, 3 * MAX_DEPTH),
    st.booleans(),
)
def test_any_nesting_and_any_length_is_judged_as_by_the_walk(
    depth: int, in_strings: int, padding: int, as_bytes: bool
) -> None:
    text = nested_text(depth, in_strings=in_strings, padding=padding)
    note(f"{len(text)} characters")
    data: bytes | str = text.encode() if as_bytes else text
    assert fast_decode(data, 9) == reference_decode(data, 9)


@pytest.mark.parametrize(
    "data",
    ["{}", '{"a":1.5e308}', '{"a":1e400}', '{"a":123456789012345678901234567890}', '{"a":[1,{"b":null}]}',
     "[]", '"x"', "{", '{"a":NaN}', '{"a":1}  ', '  {"a":1}'],
)
def test_short_payloads_of_every_kind_are_judged_as_by_the_walk(data: str) -> None:
    assert fast_decode(data, 2) == reference_decode(data, 2)
    assert fast_decode(data.encode(), 2) == reference_decode(data.encode(), 2)
