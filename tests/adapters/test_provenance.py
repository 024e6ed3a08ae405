"""Fork records (``adapters.provenance``): the line round-trips, only a last
line is taken for one, a malformed one is refused at its line, and the
prefix hash is the hash of the export's first lines."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planfold.adapters.codec import CodecError, decode_jsonl, encode_jsonl
from planfold.adapters.provenance import (
    ForkProvenance,
    ForkRecordError,
    ForkRecordLines,
    decode_fork_record,
    encode_fork_record,
    is_fork_line,
    prefix_digest,
    split_fork_record,
)
from planfold.adapters.store.contract_logs import FULL_SCRIPT, build_log

LOG = build_log(FULL_SCRIPT).events
DIGESTS = st.text("0123456789abcdef", min_size=64, max_size=64)
PROVENANCES = st.builds(
    ForkProvenance,
    st.text(min_size=1).filter(lambda s: bool(s.strip())),
    st.integers(min_value=1, max_value=2**63 - 1),
    DIGESTS,
)


@given(PROVENANCES)
def test_a_fork_record_round_trips_and_is_recognised(provenance: ForkProvenance) -> None:
    line = encode_fork_record(provenance)
    assert b"\n" not in line and is_fork_line(line)
    assert decode_fork_record(line) == provenance
    assert split_fork_record(encode_jsonl(LOG[:3]) + line + b"\n") == (encode_jsonl(LOG[:3]), provenance)


def test_the_prefix_digest_is_the_sha256_of_the_exports_first_lines() -> None:
    for n in (0, 1, 5, len(LOG)):
        assert prefix_digest(LOG[:n]) == hashlib.sha256(encode_jsonl(LOG[:n])).hexdigest()


def test_event_records_and_other_lines_are_not_fork_records() -> None:
    for line in (*encode_jsonl(LOG).splitlines(), b"", b"[]", b'"fork"', b'{ "seq":1}', b"fork"):
        assert not is_fork_line(line)
    assert is_fork_line(b' { "fork" : 1}')
    data = encode_jsonl(LOG[:4])
    assert split_fork_record(data) == (data, None)
    assert split_fork_record(data.decode()) == (data, None)
    assert split_fork_record(b"") == (b"", None)


@pytest.mark.parametrize(
    "line",
    [
        b'{"fork":',
        b'{"fork":{"source":"s","seq":1}}',
        b'{"fork":{"source":"s","seq":1,"prefix_sha256":"' + b"0" * 64 + b'"},"x":1}',
        b'{"fork":{"source":"","seq":1,"prefix_sha256":"' + b"0" * 64 + b'"}}',
        b'{"fork":{"source":"s","seq":0,"prefix_sha256":"' + b"0" * 64 + b'"}}',
        b'{"fork":{"source":"s","seq":true,"prefix_sha256":"' + b"0" * 64 + b'"}}',
        b'{"fork":{"source":"s","seq":1,"prefix_sha256":"' + b"A" * 64 + b'"}}',
        b'{"fork":{"source":"s","seq":1,"prefix_sha256":"abc"}}',
        b'{"fork":[1]}',
    ],
    ids=[
        "not-json", "no-hash", "another-key", "empty-source", "seq-zero", "seq-bool", "upper-hex", "short-hash",
        "not-an-object",
    ],
)  # fmt: skip
def test_a_malformed_fork_record_is_refused_at_its_line(line: bytes) -> None:
    data = encode_jsonl(LOG[:2]) + line + b"\n"
    with pytest.raises(ForkRecordError) as info:
        split_fork_record(data)
    assert (info.value.code, info.value.line) == ("malformed-fork-record", 3)


def test_a_stream_gives_back_its_event_lines_and_keeps_the_last_lines_fork_record() -> None:
    provenance = ForkProvenance("s", 2, prefix_digest(LOG[:2]))
    stream = ForkRecordLines([*encode_jsonl(LOG[:4]).splitlines(), encode_fork_record(provenance)])
    assert list(stream) == encode_jsonl(LOG[:4]).splitlines() and stream.provenance == provenance
    plain = ForkRecordLines(encode_jsonl(LOG[:4]).splitlines())
    assert len(list(plain)) == 4 and plain.provenance is None
    early = ForkRecordLines([encode_fork_record(provenance), *encode_jsonl(LOG[:1]).splitlines()])
    with pytest.raises(ForkRecordError) as info:
        list(early)
    assert info.value.line == 2 and "must be the last line" in info.value.message


def test_a_fork_record_anywhere_but_the_last_line_is_not_an_event_record() -> None:
    provenance = ForkProvenance("s", 1, prefix_digest(LOG[:1]))
    data = encode_fork_record(provenance) + b"\n" + encode_jsonl(LOG[:1])
    body, found = split_fork_record(data)
    assert found is None
    with pytest.raises(CodecError) as info:
        decode_jsonl(body)
    assert info.value.line == 1
