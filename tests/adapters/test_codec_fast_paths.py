"""The codec's shortcuts answer exactly like the long way round.

``decode_payload`` skips the walk of a decoded payload when its text has too
few opening brackets to nest past ``MAX_DEPTH``; these tests hold it to the
plain definition (decode, then always walk) on texts around the limit. An
append encodes each payload once: the text it stores must be what encoding
the canonical payload again gives. A snapshot that reuses the encoded parts
of the state before it must be the bytes a fresh encoding gives.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import msgspec
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from planfold.adapters import codec
from planfold.adapters.codec import (
    MAX_DEPTH,
    SESSION_SNAPSHOT,
    SnapshotError,
    _json_problem,
    canonical_event,
    decode_payload,
    decode_rows,
    stored_event,
)
from planfold.adapters.store.base import prepare_append
from planfold.kernel.errors import ReplayError
from planfold.kernel.log import Event
from planfold.kernel.session import SessionState, apply_session_event
from tests.storage_helpers import FULL_SCRIPT, LogBuilder, build_log, logs


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
    """decode_payload's answer, which decode_rows must give for the same row."""
    try:
        answer: tuple[str, Any] = ("ok", decode_payload(data, seq))
    except ReplayError as exc:
        answer = _error(exc)
    try:
        ((row_seq, kind, at, payload),) = list(decode_rows([(seq, "tool/call", 5, data)]))
        in_rows: tuple[str, Any] = ("ok", payload)
        assert (row_seq, kind, at) == (seq, "tool/call", 5)
    except ReplayError as exc:
        in_rows = _error(exc)
    assert in_rows == answer
    return answer


def _error(exc: ReplayError) -> tuple[str, Any]:
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


# --------------------------------------------------------------------------
# One encoding per payload

_LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.text(max_size=6),
    st.floats(allow_nan=False, allow_infinity=False),
)
_VALUES = st.recursive(
    _LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.lists(inner, max_size=3).map(tuple)
    | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=10,
)


@given(st.dictionaries(st.text(max_size=5), _VALUES, max_size=4), st.integers(1, 2**62), st.integers(0, 2**62))
def test_the_stored_text_is_the_canonical_payload_encoded_again(payload: dict[str, Any], seq: int, at: int) -> None:
    event, text = stored_event(Event(seq, "tool/call", at, payload))
    assert event == canonical_event(Event(seq, "tool/call", at, payload))
    assert text == msgspec.json.encode(event.payload).decode()
    assert decode_payload(text, seq) == event.payload


def test_only_a_keyed_append_carries_a_request_hash() -> None:
    event = Event(1, "plan/mode", 0, {"active": True})
    assert prepare_append("s", 0, [event], None).request_hash == ""
    keyed = prepare_append("s", 0, [event], "k").request_hash
    assert len(keyed) == 64
    assert prepare_append("s", 0, [Event(1, "plan/mode", 0, {"active": False})], "k").request_hash != keyed


# --------------------------------------------------------------------------
# Snapshots that reuse the encoded parts of the state before


@given(logs(30))
@settings(max_examples=min(settings().max_examples, 40))
def test_a_snapshot_reusing_parts_is_the_same_bytes_as_a_fresh_one(builder: LogBuilder) -> None:
    codec = SESSION_SNAPSHOT
    assert codec is not None
    state, parts = SessionState(), None
    for event in builder.events:
        state = apply_session_event(state, event)
        data, parts = codec.encode_reusing(state, parts)
        assert data == codec.encode(state)
    again, _ = codec.encode_reusing(state, parts)
    assert again == codec.encode(state) and codec.decode(again) == state


def test_parts_are_reused_by_identity_only_and_never_for_payloads() -> None:
    codec = SESSION_SNAPSHOT
    assert codec is not None
    state = build_log(FULL_SCRIPT).state
    assert state.last is not None
    _, parts = codec.encode_reusing(state, None)
    cached = {type(value).__name__ for value, _ in parts.values()}
    assert "GoalState" in cached and "PlanState" in cached and "TurnState" in cached
    assert "Event" not in cached and "dict" not in cached
    # A payload changed in place is encoded as it is now, never as it was.
    payload = dict(state.last.payload)
    changed = replace(state, last=replace(state.last, payload=payload))
    first, parts = codec.encode_reusing(changed, parts)
    payload["extra"] = 1
    second, _ = codec.encode_reusing(changed, parts)
    assert first != second and second == codec.encode(changed)
    # An equal but distinct part is encoded again, to the same bytes.
    rebuilt = replace(state, goal=replace(state.goal))
    assert codec.encode_reusing(rebuilt, parts)[0] == codec.encode(rebuilt)


def test_a_state_that_breaks_its_annotations_is_refused_reusing_or_not() -> None:
    codec = SESSION_SNAPSHOT
    assert codec is not None
    state = build_log(FULL_SCRIPT).state
    _, parts = codec.encode_reusing(state, None)
    wrong = replace(state, plan_mode=1)  # type: ignore[arg-type]
    with pytest.raises(SnapshotError):
        codec.encode(wrong)
    with pytest.raises(SnapshotError):
        codec.encode_reusing(wrong, parts)


def _refuse(*args: object) -> object:
    raise AssertionError("the long way round was taken")


def test_short_and_shallow_payloads_skip_the_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    short = '{"a":[1,{"b":null}]}'
    long_but_shallow = '{"text":"' + "x" * 3 * MAX_DEPTH + '","n":[1]}'
    monkeypatch.setattr(codec, "_json_problem", _refuse)
    assert decode_payload(short, 1) == {"a": [1, {"b": None}]}
    assert decode_payload(long_but_shallow, 1)["n"] == [1]
    monkeypatch.setattr(codec, "decode_payload", _refuse)
    rows = list(decode_rows([(1, "k", 0, short), (2, "k", 0, short)]))
    assert [row[3] for row in rows] == [{"a": [1, {"b": None}]}] * 2
