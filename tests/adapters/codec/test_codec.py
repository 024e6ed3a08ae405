"""The codec: events, payloads and JSON Lines round-trip exactly; fold-state
snapshots decode to equal states; bad input gets typed, positioned errors."""

from __future__ import annotations

import enum
import io
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planfold.adapters.codec import (
    JSON_ENCODER,
    MAX_DEPTH,
    CodecError,
    JsonlLines,
    RecordError,
    canonical_event,
    check_json,
    decode_event,
    decode_jsonl,
    decode_payload,
    decode_rows,
    encode_event,
    encode_jsonl,
    encode_payload,
    read_record,
    read_session_jsonl,
    stored_event,
)
from planfold.adapters.store.projection import SESSION_SNAPSHOT, Projection, project, project_reusing
from planfold.adapters.store.snapshot import SnapshotCodec, SnapshotError
from planfold.kernel.errors import ReplayError, is_kebab_case
from planfold.kernel.idset import IdSet
from planfold.kernel.log import Event
from planfold.kernel.payload import JSONObject
from planfold.kernel.plan.spec_json import spec_from_json, summary_from_json
from planfold.kernel.session import SessionState, apply_session_event, fold_session
from tests.record_cases import Checked
from tests.storage_helpers import FULL_SCRIPT, LogBuilder, build_log, fewer, logs

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)
payloads = st.dictionaries(st.text(max_size=6), json_values, max_size=5)


def same_json(a: Any, b: Any) -> bool:
    """Equality that also demands equal types (``True`` is not ``1`` here)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return bool(a == b)


# --------------------------------------------------------------------------
# Payloads and events


@given(payloads, st.integers(min_value=1, max_value=2**63 - 1), st.text(max_size=12), st.integers(0, 2**63 - 1))
def test_an_event_round_trips_exactly_through_its_record(
    payload: dict[str, Any], seq: int, kind: str, at: int
) -> None:
    event = Event(seq, kind, at, payload)
    back = decode_event(encode_event(event))
    assert (back.seq, back.kind, back.at) == (seq, kind, at)
    assert same_json(back.payload, payload)
    assert canonical_event(event) == back


def test_canonical_form_turns_tuples_into_lists_and_is_a_fixed_point() -> None:
    event = Event(1, "user/message", 5, {"text": "x", "source": None, "tags": ("a", ("b",))})
    canon = canonical_event(event)
    assert same_json(canon.payload, {"text": "x", "source": None, "tags": ["a", ["b"]]})
    assert canonical_event(canon) == canon


@pytest.mark.parametrize(
    "bad",
    [
        {"n": math.nan},
        {"n": [1, math.inf]},
        {"b": b"bytes"},
        {"s": {1, 2}},
        {"nested": {1: "int key"}},
        {"o": object()},
    ],
)
def test_a_payload_that_is_not_json_is_refused_with_a_typed_error(bad: dict[str, Any]) -> None:
    with pytest.raises(CodecError) as info:
        encode_payload(bad)
    assert info.value.code == "payload-not-json"
    assert is_kebab_case(info.value.code)
    with pytest.raises(CodecError):
        canonical_event(Event(1, "turn/start", 0, bad))


def test_a_payload_must_be_an_object_and_an_event_must_be_an_event() -> None:
    with pytest.raises(CodecError, match="object"):
        encode_payload([1, 2])  # type: ignore[arg-type]
    with pytest.raises(CodecError, match="Event"):
        canonical_event({"seq": 1})  # type: ignore[arg-type]
    check_json({"fine": [1, 2.5, None, True, "x", {"k": []}]})  # does not raise


@pytest.mark.parametrize(
    "event",
    [
        Event(2**63, "turn/start", 0, {"turn": 1}),
        Event(1, "turn/start", -(2**63) - 1, {"turn": 1}),
        Event(1, 7, 0, {}),  # type: ignore[arg-type]
        Event(1, "turn/\udfff", 0, {}),
    ],
)
def test_an_event_a_store_cannot_keep_is_refused_with_a_typed_error(event: Event) -> None:
    with pytest.raises(CodecError) as info:
        canonical_event(event)
    assert info.value.code == "event-not-storable"
    with pytest.raises(CodecError):
        encode_event(event)
    if isinstance(event.kind, str) and event.kind.isascii():
        record = b'{"seq":%d,"kind":"%s","at":%d,"payload":{}}' % (event.seq, event.kind.encode(), event.at)
        with pytest.raises(CodecError) as decoded:
            decode_event(record, line=3)
        assert (decoded.value.code, decoded.value.line) == ("malformed-record", 3)


def test_text_that_is_not_unicode_is_not_json() -> None:
    with pytest.raises(CodecError) as info:
        encode_payload({"text": "\ud800"})
    assert info.value.code == "payload-not-json"


@pytest.mark.parametrize("stored", [b"[1, 2]", b"{not json", b'"text"', b"", 42, None])
def test_a_stored_payload_that_is_not_an_object_is_a_positioned_replay_error(stored: Any) -> None:
    with pytest.raises(ReplayError) as info:
        decode_payload(stored, 7)
    assert (info.value.position, info.value.rule) == (7, "malformed-payload")


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


def test_payloads_nest_up_to_the_depth_limit_and_no_further() -> None:
    fits = {"v": nested(MAX_DEPTH - 1)}
    assert same_json(decode_event(encode_event(Event(1, "tool/call", 0, fits))).payload, fits)
    with pytest.raises(CodecError) as info:
        encode_payload({"v": nested(MAX_DEPTH)})
    assert info.value.code == "payload-not-json" and "deeper" in info.value.message


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 5_000, 200_000])
def test_a_record_nested_too_deeply_is_a_typed_error_however_deep(depth: int) -> None:
    body = b"[" * depth + b"]" * depth
    record = b'{"seq":1,"kind":"tool/call","at":0,"payload":{"v":%s}}' % body
    with pytest.raises(CodecError) as info:
        decode_event(record, line=4)
    assert (info.value.code, info.value.line) == ("malformed-record", 4)
    with pytest.raises(CodecError):
        read_session_jsonl(record)
    with pytest.raises(ReplayError) as replay:
        decode_payload(b'{"v":%s}' % body, 9)
    assert (replay.value.position, replay.value.rule) == (9, "malformed-payload")


def nested_text(depth: int, *, in_strings: int = 0, padding: int = 0) -> str:
    """An object nested ``depth`` containers deep (the outer object counts),
    with ``in_strings`` extra brackets inside a string and ``padding``
    characters of plain text."""
    inner = '"leaf"'
    for level in range(depth - 1):
        inner = f"[{inner}]" if level % 2 else f'{{"k":{inner}}}'
    extra = "[{" * (in_strings // 2) + "[" * (in_strings % 2)
    return f'{{"v":{inner},"s":"{extra}","p":"{"x" * padding}"}}'


@given(
    st.integers(1, MAX_DEPTH + 5),
    st.integers(0, MAX_DEPTH + 5),
    st.integers(0, 3 * MAX_DEPTH),
    st.booleans(),
)
def test_a_stored_payload_is_refused_exactly_when_it_nests_past_the_limit(
    depth: int, in_strings: int, padding: int, as_bytes: bool
) -> None:
    # However long its text, and however many brackets its strings hold.
    text = nested_text(depth, in_strings=in_strings, padding=padding)
    data: bytes | str = text.encode() if as_bytes else text
    rows = decode_rows([(7, "tool/call", 0, data)])
    if depth <= MAX_DEPTH:
        assert decode_payload(data, 7) == msgspec.json.decode(data)
        assert next(rows)[3] == msgspec.json.decode(data)
        return
    for decode in (lambda: decode_payload(data, 7), lambda: next(rows)):
        with pytest.raises(ReplayError) as caught:
            decode()
        assert (caught.value.position, caught.value.rule) == (7, "malformed-payload")
        assert f"deeper than {MAX_DEPTH} levels" in caught.value.detail


class Text(str):
    """A string of a type of its own (JSON all the same)."""


class Table(dict[str, Any]):
    """A dict of a type of its own (JSON all the same when its items are)."""


#: Payload items JSON may or may not carry exactly, in containers of every
#: kind: what an exact-type walk takes, and what only the full check decides.
mixed_values = st.recursive(
    json_scalars
    | st.sampled_from([math.nan, math.inf, -math.inf, -0.0, b"x", Text("t"), frozenset({1}), object()]),
    lambda inner: st.lists(inner, max_size=3)
    | st.lists(inner, max_size=3).map(tuple)
    | st.dictionaries(st.text(max_size=3) | st.sampled_from([1, Text("a long key"), None]), inner, max_size=3)
    | st.dictionaries(st.text(max_size=3), inner, max_size=3).map(MappingProxyType)
    | st.dictionaries(st.text(max_size=3), inner, max_size=3).map(Table),
    max_leaves=12,
)


def outcome(call: Any) -> object:
    """What ``call()`` gives: its value, or the type and text of its error."""
    try:
        return call()
    except Exception as exc:
        return (type(exc), getattr(exc, "code", None), str(exc))


def checked_encoding(payload: Any) -> bytes:
    """The payload encoded after the full check, with no shortcut."""
    if not isinstance(payload, Mapping):
        raise CodecError("a payload must be a JSON object", code="payload-not-json")
    check_json(payload)
    try:
        return JSON_ENCODER.encode(payload)
    except UnicodeEncodeError as exc:
        raise CodecError(f"payload text is not valid Unicode: {exc}", code="payload-not-json") from exc


@given(st.dictionaries(st.text(max_size=3), mixed_values, max_size=4) | mixed_values)
def test_a_payload_is_encoded_or_refused_as_the_full_check_decides(payload: Any) -> None:
    result = outcome(lambda: encode_payload(payload))
    assert result == outcome(lambda: checked_encoding(payload))
    assert isinstance(result, bytes) or result[0] is CodecError  # type: ignore[index]


@given(st.integers(1, MAX_DEPTH + 3), st.booleans())
def test_a_payload_of_plain_dicts_and_lists_is_refused_exactly_past_the_depth_limit(depth: int, in_list: bool) -> None:
    payload = {"v": [nested(depth - 1)] if in_list else nested(depth - 1)}
    assert outcome(lambda: encode_payload(payload)) == outcome(lambda: checked_encoding(payload))
    assert isinstance(outcome(lambda: encode_payload(payload)), bytes) == (depth + in_list <= MAX_DEPTH)


@given(
    st.integers(-(2**64), 2**64) | st.booleans() | st.text(max_size=2),
    st.sampled_from(["turn/start", "tool/call", "tëst", "turn/\udfff", Text("turn/start")]) | st.integers(0, 3),
    st.integers(-(2**64), 2**64) | st.booleans() | st.none(),
)
def test_an_event_envelope_is_storable_exactly_when_each_of_its_parts_is(seq: Any, kind: Any, at: Any) -> None:
    # A seq or time that is not an integer is the fold's to refuse, not the codec's.
    event = Event(seq, kind, at, {"k": 1})
    fits = all(not isinstance(value, int) or -(2**63) <= value < 2**63 for value in (seq, at))
    text = isinstance(kind, str) and "\udfff" not in kind
    result = outcome(lambda: stored_event(event))
    if fits and text:
        assert result == (event, '{"k":1}')
    else:
        assert isinstance(result, tuple) and result[:2] == (CodecError, "event-not-storable")


def containers(value: Any) -> list[int]:
    """The ids of the dicts and lists inside ``value``, itself included."""
    if isinstance(value, dict):
        return [id(value), *(i for child in value.values() for i in containers(child))]
    if isinstance(value, list):
        return [id(value), *(i for child in value for i in containers(child))]
    return []


#: JSON in containers of every kind JSON allows (tuples, read-only mappings, subclasses).
any_json = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3)
    | st.lists(inner, max_size=3).map(tuple)
    | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    | st.dictionaries(st.text(max_size=3), inner, max_size=3).map(MappingProxyType)
    | st.dictionaries(st.text(max_size=3), inner, max_size=3).map(Table),
    max_leaves=12,
)


@given(st.dictionaries(st.text(max_size=6), any_json, max_size=5))
def test_a_canonical_payload_is_its_stored_text_decoded_and_shares_no_container_with_the_callers(
    payload: dict[str, Any],
) -> None:
    event, text = stored_event(Event(1, "tool/call", 0, payload))
    assert same_json(event.payload, msgspec.json.decode(text))
    assert msgspec.json.encode(event.payload) == text.encode()  # every object's keys in the same order
    assert not set(containers(event.payload)) & set(containers(payload))


@given(payloads, st.integers(1, 2**62), st.integers(0, 2**62))
def test_the_stored_text_is_the_canonical_payload_encoded_again(payload: dict[str, Any], seq: int, at: int) -> None:
    event, text = stored_event(Event(seq, "tool/call", at, payload))
    assert event == canonical_event(Event(seq, "tool/call", at, payload))
    assert text == msgspec.json.encode(event.payload).decode()
    assert decode_payload(text, seq) == event.payload


# --------------------------------------------------------------------------
# JSON Lines


@settings(max_examples=fewer(2))
@given(logs())
def test_a_session_round_trips_through_json_lines(builder: LogBuilder) -> None:
    data = encode_jsonl(builder.events)
    assert data.count(b"\n") == len(builder.events)
    assert decode_jsonl(data) == tuple(canonical_event(e) for e in builder.events)
    assert read_session_jsonl(data.decode()) == tuple(builder.events)
    assert fold_session(read_session_jsonl(data)) == builder.state


GOOD = [
    b'{"seq":1,"kind":"turn/start","at":1,"payload":{"turn":1}}',
    b'{"seq":2,"kind":"plan/mode","at":2,"payload":{"active":true}}',
    b'{"seq":3,"kind":"turn/end","at":3,"payload":{"turn":1}}',
]


@pytest.mark.parametrize(
    ("line", "bad"),
    [
        (2, b"{not json"),
        (2, b'{"seq":2,"kind":"plan/mode","at":2}'),
        (3, b'{"seq":3,"kind":"turn/end","at":3,"payload":{"turn":1},"extra":0}'),
        (2, b""),
        (3, b"[]"),
    ],
)
def test_a_line_that_is_not_an_event_record_is_a_codec_error_with_its_number(line: int, bad: bytes) -> None:
    lines = list(GOOD)
    lines[line - 1] = bad
    with pytest.raises(CodecError) as info:
        read_session_jsonl(b"\n".join(lines) + b"\n")
    assert info.value.code == "malformed-record"
    assert info.value.line == line
    assert f"line {line}" in info.value.message


#: Records put in the place of a line of ``GOOD`` that the fold refuses, the
#: rule each breaks, and whether the typed wire decoder takes the record (it
#: refuses an envelope whose values a store cannot keep).
REFUSED_BY_THE_FOLD = [
    (2, b'{"seq":2,"kind":"plan/mode","at":2,"payload":{"active":1}}', "malformed-payload", True),
    (2, b'{"seq":2,"kind":"plan/mode","at":2,"payload":{"active":true,"x":0}}', "malformed-payload", True),
    (3, b'{"seq":4,"kind":"turn/end","at":3,"payload":{"turn":1}}', "seq-gap", True),
    (3, b'{"seq":3,"kind":"turn/end","at":1,"payload":{"turn":1}}', "time-regressed", True),
    (2, b'{"seq":2,"kind":"plan/nonsense","at":2,"payload":{}}', "unknown-kind", True),
    (1, b'{"seq":true,"kind":"turn/start","at":1,"payload":{"turn":1}}', "seq-gap", False),
    (2, b'{"seq":"2","kind":"plan/mode","at":2,"payload":{"active":true}}', "seq-gap", False),
    (2, b'{"seq":2,"kind":"plan/mode","at":2.5,"payload":{"active":true}}', "malformed-payload", False),
    (2, b'{"seq":2,"kind":"plan/mode","at":2,"payload":[true]}', "malformed-payload", False),
]


def _refused_by_the_fold(line: int, bad: bytes, rule: str) -> tuple[bytes, ReplayError]:
    """``GOOD`` with ``bad`` at ``line``; reading it is a replay error of
    ``rule`` that names the line."""
    lines = list(GOOD)
    lines[line - 1] = bad
    data = b"\n".join(lines)
    with pytest.raises(ReplayError) as info:
        read_session_jsonl(data)
    assert info.value.rule == rule and f"(line {line})" in info.value.detail
    return data, info.value


@pytest.mark.parametrize(
    ("line", "bad", "rule"), [(line, bad, rule) for line, bad, rule, typed in REFUSED_BY_THE_FOLD if typed]
)
def test_a_bad_event_in_json_lines_is_a_positioned_replay_error_naming_its_line(
    line: int, bad: bytes, rule: str
) -> None:
    data, refused = _refused_by_the_fold(line, bad, rule)
    decode_jsonl(data)  # the records themselves are well formed
    assert refused.position == msgspec.json.decode(bad)["seq"]


@pytest.mark.parametrize(
    ("line", "bad", "rule"), [(line, bad, rule) for line, bad, rule, typed in REFUSED_BY_THE_FOLD if not typed]
)
def test_a_record_whose_values_the_fold_refuses_is_the_folds_verdict_as_in_a_replay(
    line: int, bad: bytes, rule: str
) -> None:
    data, _ = _refused_by_the_fold(line, bad, rule)
    with pytest.raises(CodecError) as typed:
        decode_jsonl(data)  # the typed wire decoder still refuses an envelope a store cannot keep
    assert typed.value.line == line


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (b'"\\ud800"', "lone surrogate"),
        (b'"\\ud800x"', "lone surrogate"),
        (b'"\\udc00"', "lone surrogate"),
        (b"1e400", "out of range"),
        (b"NaN", "not JSON"),
    ],
)
def test_the_reader_refuses_json_a_store_cannot_keep_and_says_why(text: bytes, named: str) -> None:
    record = b'{"seq":1,"kind":"turn/start","at":1,"payload":{"x":%s}}' % text
    with pytest.raises(RecordError) as info:
        read_record(record, 3)
    assert (info.value.code, info.value.line, info.value.seq) == ("malformed-record", 3, None)
    assert named in info.value.detail and info.value.message == f"line 3: {info.value.detail}"


def test_the_reader_names_the_seq_of_a_record_that_breaks_a_rule_past_its_seq() -> None:
    with pytest.raises(RecordError) as info:
        read_record(b'{"seq":7,"kind":1,"at":1,"payload":{}}', 1)
    assert (info.value.line, info.value.seq, info.value.detail) == (1, 7, "kind must be a string")


def test_text_with_a_lone_surrogate_is_a_codec_error_on_its_line() -> None:
    text = GOOD[0].decode() + "\n" + '{"seq":2,"kind":"plan/mode","at":2,"payload":{"active":true}}\ud800\n'
    with pytest.raises(CodecError) as info:
        read_session_jsonl(text)
    assert (info.value.code, info.value.line) == ("malformed-record", 2)


def test_empty_json_lines_is_an_empty_session() -> None:
    assert decode_jsonl(b"") == ()
    assert read_session_jsonl("") == ()
    assert encode_jsonl([]) == b""


# --------------------------------------------------------------------------
# Fold-state snapshots


def test_the_session_state_has_an_exact_snapshot_codec() -> None:
    assert SESSION_SNAPSHOT is not None
    assert SESSION_SNAPSHOT.format.startswith("v2-")


@settings(max_examples=fewer(2))
@given(logs())
def test_every_fold_state_round_trips_exactly_through_its_snapshot(builder: LogBuilder) -> None:
    codec = SESSION_SNAPSHOT
    assert codec is not None
    state = SessionState()
    for event in builder.events:
        state = fold_session(builder.events[: event.seq])
        data = codec.encode(state)
        assert codec.decode(data) == state
        assert codec.encode(codec.decode(data)) == data  # deterministic
    assert codec.decode(codec.encode(SessionState())) == SessionState()


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
    cached = {type(part[0]).__name__ for part in parts if part is not None}
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


def test_a_full_session_snapshot_keeps_plan_goal_and_payload_exactly() -> None:
    codec = SESSION_SNAPSHOT
    assert codec is not None
    state = build_log(FULL_SCRIPT).state
    back = codec.decode(codec.encode(state))
    assert back == state
    assert back.plan.current is not None and back.plan.current == state.plan.current
    assert back.goal == state.goal
    assert back.last is not None and state.last is not None
    assert same_json(dict(back.last.payload), dict(state.last.payload))


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass(frozen=True, slots=True)
class Leaf:
    name: str
    weight: float


@dataclass(frozen=True, slots=True)
class Other:
    name: str
    weight: float


@dataclass(frozen=True, slots=True)
class Shapes:
    either: Leaf | Other | None
    colour: Colour
    mode: Literal["a", "b"]
    tags: frozenset[str]
    by_id: dict[int, Leaf]
    pair: tuple[int, str]
    many: tuple[Checked, ...]
    number: int | float
    items: list[str]
    json: dict[str, Any]


SHAPES = Shapes(
    either=Other("o", 1.5),
    colour=Colour.BLUE,
    mode="b",
    tags=frozenset({"z", "a", "m"}),
    by_id={3: Leaf("x", 0.0), 1: Leaf("y", -2.5)},
    pair=(7, "seven"),
    many=(Checked(1), Checked(2)),
    number=2.0,
    items=["p", "q"],
    json={"k": [1, {"n": None}]},
)


def test_a_codec_round_trips_every_supported_shape() -> None:
    codec = SnapshotCodec(Shapes)
    assert codec.decode(codec.encode(SHAPES)) == SHAPES
    leaf = Shapes(**{**{f: getattr(SHAPES, f) for f in Shapes.__dataclass_fields__}, "either": Leaf("l", 2)})
    back = codec.decode(codec.encode(leaf))
    assert back == leaf and type(back.either) is Leaf  # the tag decides, never the field names
    none = Shapes(**{**{f: getattr(SHAPES, f) for f in Shapes.__dataclass_fields__}, "either": None, "number": 3})
    again = codec.decode(codec.encode(none))
    assert again == none and type(again.number) is int
    assert codec.encode(SHAPES) == codec.encode(codec.decode(codec.encode(SHAPES)))


@dataclass(frozen=True, slots=True)
class Ambiguous:
    value: str | Colour


@dataclass(frozen=True, slots=True)
class Unresolvable:
    value: NoSuchType  # type: ignore[name-defined]  # noqa: F821


@dataclass(frozen=True, slots=True)
class Callables:
    value: set[bytes]


@pytest.mark.parametrize("root", [Ambiguous, Unresolvable, Callables])
def test_a_type_without_an_exact_encoding_is_refused_when_the_codec_is_built(root: type) -> None:
    with pytest.raises(SnapshotError) as info:
        SnapshotCodec(root)
    assert info.value.code == "snapshot-unsupported"


def test_a_value_that_breaks_its_own_annotations_is_refused_on_encode() -> None:
    codec = SnapshotCodec(Shapes)
    wrong = Shapes(**{**{f: getattr(SHAPES, f) for f in Shapes.__dataclass_fields__}, "pair": [7, "seven"]})
    with pytest.raises(SnapshotError):
        codec.encode(wrong)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.update(mode="c"),
        lambda d: d.update(colour="green"),
        lambda d: d.pop("tags"),
        lambda d: d.update(extra=1),
        lambda d: d.update(many=[{"n": -1}]),
        lambda d: d.update(pair=[1]),
        lambda d: d.update(either={"$type": "nowhere.Leaf", "name": "x", "weight": 1.0}),
        lambda d: d.update(either={"name": "x", "weight": 1.0}),
        lambda d: d.update(number="2"),
        lambda d: d.update(by_id={"1": {"name": "y", "weight": 1.0}}),
    ],
)
def test_snapshot_bytes_that_do_not_fit_the_type_are_malformed(mutate: Any) -> None:
    codec = SnapshotCodec(Shapes)
    data = msgspec.json.decode(codec.encode(SHAPES))
    mutate(data)
    with pytest.raises(SnapshotError) as info:
        codec.decode(msgspec.json.encode(data))
    assert info.value.code == "snapshot-malformed"


def test_snapshot_bytes_that_are_not_json_are_malformed() -> None:
    with pytest.raises(SnapshotError) as info:
        SnapshotCodec(Shapes).decode(b"{broken")
    assert info.value.code == "snapshot-malformed"


def test_the_format_changes_with_the_shape_and_the_extra_text() -> None:
    assert SnapshotCodec(Leaf).format == SnapshotCodec(Leaf).format
    assert SnapshotCodec(Leaf).format != SnapshotCodec(Checked).format
    assert SnapshotCodec(Leaf).format != SnapshotCodec(Leaf, extra="reducers changed").format


# --------------------------------------------------------------------------
# The projection


def test_an_empty_log_projects_to_the_legacy_defaults() -> None:
    assert project(SessionState()) == Projection(0, "build", False, "", "", "")


def test_the_projection_carries_the_plan_and_goal_in_readable_json() -> None:
    state = build_log(FULL_SCRIPT).state
    proj = project(state)
    artifact, goal = state.plan.current, state.goal.current
    assert artifact is not None and goal is not None
    assert proj.last_seq == state.last_seq and proj.agent_mode == state.agent_mode
    plan = msgspec.json.decode(proj.current_plan_json)
    assert (plan["id"], plan["revision"], plan["status"]) == (artifact.id, artifact.revision, artifact.status)
    assert spec_from_json(plan["spec"]) == artifact.spec
    assert summary_from_json(plan["summary"]) == artifact.summary
    assert summary_from_json(msgspec.json.decode(proj.current_plan_summary_json)) == artifact.summary
    view = msgspec.json.decode(proj.goal_json)
    assert (view["id"], view["revision"], view["phase"]) == (goal.id, goal.revision, goal.phase)


@given(logs(30))
@settings(max_examples=min(settings().max_examples, 40))
def test_a_projection_reusing_the_one_before_is_the_projection(builder: LogBuilder) -> None:
    # Each state shares the plan and goal objects its events left alone with
    # the state before it; the columns taken from the projection before are
    # those of these very objects. Without a projection before, it is made anew.
    before, projection = SessionState(), project(SessionState())
    for event in builder.events:
        state = apply_session_event(before, event)
        reused = project_reusing(state, before, projection)
        assert reused == project(state) == project_reusing(state, before, None)
        before, projection = state, reused


def test_a_projection_reuses_the_columns_of_the_very_same_plan_and_goal_only() -> None:
    state = build_log(FULL_SCRIPT).state
    stale = Projection(state.last_seq, "build", False, "old plan", "old summary", "old goal")
    same = project_reusing(state, state, stale)
    columns = (same.current_plan_json, same.current_plan_summary_json, same.goal_json)
    assert columns == ("old plan", "old summary", "old goal")
    assert (same.last_seq, same.agent_mode, same.plan_mode) == (state.last_seq, state.agent_mode, state.plan_mode)
    artifact = state.plan.current
    assert artifact is not None
    rebuilt = replace(state, plan=replace(state.plan, current=replace(artifact)))
    assert project_reusing(rebuilt, state, stale).current_plan_json == project(state).current_plan_json
    assert project_reusing(rebuilt, state, stale).goal_json == "old goal"


def test_plan_mode_projects_to_agent_mode_plan() -> None:
    builder = LogBuilder()
    builder.mode()
    assert project(builder.state).agent_mode == "plan"
    assert project(builder.state).plan_mode is True


def test_read_only_containers_from_the_kernel_encode_like_plain_ones() -> None:
    inner: JSONObject = MappingProxyType({"b": (1, 2)})
    empty: JSONObject = MappingProxyType({})
    frozen: JSONObject = MappingProxyType({"a": inner, "c": [empty]})
    assert encode_payload(frozen) == encode_payload({"a": {"b": [1, 2]}, "c": [{}]})


class Count(int):
    pass


class Ratio(float):
    pass


def test_subclasses_of_the_json_scalars_encode_and_store_as_their_plain_values() -> None:
    payload: JSONObject = {"a": Text("x"), "b": [Count(3), Ratio(0.5)], Text("k"): {"c": Text("y")}}
    assert encode_payload(payload) == b'{"a":"x","b":[3,0.5],"k":{"c":"y"}}'
    stored = canonical_event(Event(1, "user/message", 5, {"text": Text("hi")}))
    assert stored.payload == {"text": "hi"} and type(stored.payload["text"]) is str


def test_a_non_finite_float_subclass_is_refused_with_a_typed_error() -> None:
    with pytest.raises(CodecError, match="non-finite"):
        encode_payload({"a": Ratio("nan")})


# --------------------------------------------------------------------------
# JSON Lines read as a stream


@settings(max_examples=200)
@given(
    st.lists(st.sampled_from([b"", b"a", b"{}", b"\n", b"xyz\n", b"\n\n"]), max_size=12).map(b"".join),
    st.integers(0, 4),
    st.integers(1, 7),
)
def test_a_stream_is_split_into_the_lines_of_its_whole_text(data: bytes, head: int, chunk: int) -> None:
    expected = data.split(b"\n")
    if expected[-1] == b"":
        expected.pop()  # a final newline ends the last line
    reader = JsonlLines(_Chunked(data[head:], chunk), data[:head])
    assert list(reader) == expected
    assert reader.consumed == len(data)


class _Chunked(io.RawIOBase):
    """A stream that hands out at most ``size`` bytes per read, like a pipe."""

    def __init__(self, data: bytes, size: int) -> None:
        self.data, self.size, self.at = data, size, 0

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        step = self.size if n < 0 else min(n, self.size)
        piece = self.data[self.at : self.at + step]
        self.at += len(piece)
        return piece


def test_a_stream_is_read_no_further_than_the_line_asked_for() -> None:
    class Endless(io.RawIOBase):
        reads = 0

        def readable(self) -> bool:
            return True

        def read(self, n: int = -1) -> bytes:
            self.reads += 1
            return b"{}\n" * 10

    stream = Endless()
    lines = iter(JsonlLines(stream))
    assert [next(lines) for _ in range(25)] == [b"{}"] * 25
    assert stream.reads == 3


# --------------------------------------------------------------------------
# A transient index is not snapshotted


@dataclass(frozen=True, slots=True)
class _Indexed:
    last: int
    seen: IdSet = field(default_factory=IdSet, compare=False)


def test_a_transient_index_is_written_as_null_and_reads_back_empty() -> None:
    codec = SnapshotCodec(_Indexed, transient=(IdSet,))
    small = _Indexed(1, IdSet(["a"]))
    large = _Indexed(1, IdSet(f"goal-{n}" for n in range(10_000)))
    assert codec.encode(small) == codec.encode(large) == b'{"last":1,"seen":null}'
    decoded = codec.decode(codec.encode(large))
    assert decoded == large and len(decoded.seen) == 0
    with pytest.raises(SnapshotError) as caught:
        codec.decode(b'{"last":1,"seen":["a"]}')
    assert caught.value.problems and "$.seen" in caught.value.problems[0]
    with pytest.raises(SnapshotError, match="cannot snapshot"):
        SnapshotCodec(_Indexed)
    assert SnapshotCodec(_Indexed, transient=(IdSet,), extra="x").format != codec.format
