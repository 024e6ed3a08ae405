"""Every event as the page embeds it: payloads whole up to a limit and a
budget, the rest in the index with their size, the events near ``--around``
whole whatever their size, chunks the page can read back exactly, and the
folded state wherever it changes."""

from __future__ import annotations

import base64
import gzip
import json

from planfold.adapters.report.events import (
    AROUND,
    CHUNK,
    EventIndex,
    page_bound,
    payload_text,
    state_of,
)
from planfold.adapters.report.model import build_report
from planfold.kernel.log import Event
from planfold.kernel.session import fold_session
from tests.adapters.report.report_logs import gated_events


def _rows(index: EventIndex) -> list[tuple[int, int, list[object]]]:
    """(seq, at, row) of every event, read back as the page's script reads them."""
    out = []
    for chunk in index.chunks:
        base, *rows = json.loads(gzip.decompress(base64.b64decode(chunk.data)))
        at = base
        for place, row in enumerate(rows):
            at += row[4]
            out.append((chunk.first + place, at, row))
        assert chunk.last == chunk.first + len(rows) - 1
    return out


def _index(events: list[Event], **embedding: int | None) -> EventIndex:
    index = build_report("s", ((None, e) for e in events), **embedding).index  # type: ignore[arg-type]
    assert index is not None
    return index


def test_every_event_reads_back_with_its_seq_time_kind_tool_rule_and_payload() -> None:
    events = list(gated_events(10_000))
    index = _index(events)
    rows = _rows(index)
    assert len(rows) == 10_000 and len(index.chunks) == -(-10_000 // CHUNK)
    for event, (seq, at, row) in zip(events, rows, strict=True):
        kind, _, tool, rule, _, size, payload = row
        assert (seq, at, index.kinds[int(str(kind))]) == (event.seq, event.at, event.kind)
        assert payload == payload_text(event.payload) and size == len(str(payload).encode("utf-8"))
        assert (index.tools[int(str(tool))] if tool != -1 else "") == event.payload.get("tool", "")
        if event.kind == "tool/refused":
            assert index.rules[int(str(rule))] == event.payload["code"]
    assert index.embedded == 10_000 and index.left_out == 0


def test_a_payload_over_the_limit_or_past_the_budget_is_indexed_without_it() -> None:
    events = list(gated_events(30_000))
    limited = _index(events, limit=60)
    assert limited.left_out == sum(1 for e in events if len(payload_text(e.payload)) > 60) > 0
    assert all(row[6] == 0 for _, _, row in _rows(limited) if int(str(row[5])) > 60)
    spent = _index(events, budget=1)
    assert spent.embedded == CHUNK and spent.left_out == 30_000 - CHUNK  # the first chunk, then none
    around = _index(events, budget=1, around=20_000)
    embedded = [seq for seq, _, row in _rows(around) if row[6] != 0]
    assert embedded == [*range(1, CHUNK + 1), *range(20_000 - AROUND, 20_000 + AROUND + 1)]


def test_acting_characters_stay_escapes_in_the_embedded_json() -> None:
    text = payload_text({"text": "evil\u202etxt \x00\x1b\x7f\x85 é \udc80"})
    assert text == '{"text":"evil\\u202etxt \\u0000\\u001b\\u007f\\u0085 \\u00e9 \\udc80"}'
    assert payload_text({"a": "évite\u2066"}) == '{"a":"évite\\u2066"}'
    assert json.loads(payload_text({"a": "x\u202ey"})) == {"a": "x\u202ey"}


def test_the_state_is_written_where_it_changes_and_is_the_fold_at_every_seq() -> None:
    events = list(gated_events(12_000))
    index = _index(events)
    states = json.loads(gzip.decompress(base64.b64decode(index.states)))
    assert 1 < len(states) < 100  # plan mode flips every fifth turn; nothing else changes
    flips = [seq for seq, _ in states]
    for seq in sorted({1, *range(1, 12_001, 997), *flips, *(f - 1 for f in flips[1:])}):
        last = [s for at, s in states if at <= seq][-1]
        assert last == state_of(fold_session(events[:seq]))


def test_the_bound_grows_by_the_index_alone() -> None:
    assert page_bound(1_000_000) - page_bound(0) == 12 * 1_000_000
    assert page_bound(0, budget=0) == 3 * 1024 * 1024
