"""Fuzz targets at the storage boundary: the codec, JSON Lines import, and a
store append of decoded events.

"Nothing is written from rejected input" is checked against real stores, the
in-memory reference and SQLite (on an in-memory database), fresh for every
input: after a rejected import or append the session's log and projection
are exactly what they were, and no session appears; after an accepted one
the store holds what the strict fold of the input says. Both stores must
agree on every input.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence

from hypothesis import strategies as st

from planfold.adapters.codec import decode_event, decode_jsonl, decode_payload, encode_event, encode_jsonl
from planfold.adapters.store.base import AppendRequest, Store, import_session
from planfold.adapters.store.memory import MemoryStore
from planfold.adapters.store.sqlite import SqliteStore
from planfold.kernel.errors import PlanfoldError
from planfold.kernel.session import fold_session
from tests.fuzz.harness import Clock, Target, expect, stable_repr
from tests.fuzz.inputs import (
    byte_mutations,
    deep_nesting,
    huge_json_string,
    json_inputs,
    render,
    structural_mutations,
)
from tests.fuzz.seeds import LOG_KEYS, SEED_LOGS

__all__ = ["STORE_TARGETS"]

SESSION = "fuzzed"


def _memory_sqlite(path: str) -> sqlite3.Connection:
    return sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)


def _stores() -> tuple[Store, ...]:
    """A fresh in-memory reference store and a fresh SQLite store (on an
    in-memory database) for one input."""
    return (MemoryStore(), SqliteStore("fuzz", connect=_memory_sqlite))


def _snapshot(store: Store, session_id: str) -> tuple[object, ...]:
    return (store.head(session_id), store.read(session_id), store.projection(session_id))


# --------------------------------------------------------------------------
# codec: one record


def _run_codec(data: bytes, clock: Clock) -> str:
    with clock.timed():
        event = decode_event(data)
    again = decode_event(encode_event(event))
    expect(again == event, f"a decoded record does not round-trip: {event!r} became {again!r}")
    with clock.timed():
        payload = decode_payload(json.dumps(event.payload).encode("utf-8"), event.seq)
    expect(payload == event.payload, "a decoded payload does not round-trip")
    return stable_repr(event)


# --------------------------------------------------------------------------
# JSON Lines import


def _import_into(store: Store, data: bytes, clock: Clock) -> str:
    """Import ``data`` into a fresh session; the outcome (the error, or the
    state the store loads)."""
    session_id = SESSION
    ids_before = store.session_ids()
    try:
        with clock.timed():
            import_session(store, session_id, data)
    except PlanfoldError as exc:
        expect(store.session_ids() == ids_before, f"a rejected import created a session ({exc.code})")
        expect(_snapshot(store, session_id) == _snapshot(store, "never-used"), "a rejected import wrote")
        return "refused " + stable_repr(exc)
    events = decode_jsonl(data)
    expect(store.read(session_id) == events, "the stored log is not the imported one")
    expect(store.load(session_id) == fold_session(events), "the stored log folds differently")
    expect(store.audit(session_id).ok, "the projection written by an import fails its audit")
    expect(encode_jsonl(store.read(session_id)) == encode_jsonl(events), "export is not the import")
    return stable_repr(store.load(session_id))


def _on_every_store(run: Callable[[Store, bytes, Clock], str], data: bytes, clock: Clock, what: str) -> str:
    """``run`` against a fresh store of each kind; they must agree."""
    stores = _stores()
    try:
        outcomes = [run(store, data, clock) for store in stores]
    finally:
        for store in stores:
            store.close()
    expect(len(set(outcomes)) == 1, f"the stores disagree on {what}: {outcomes}")
    return outcomes[0]


def _run_import(data: bytes, clock: Clock) -> str:
    return _on_every_store(_import_into, data, clock, "an import")


# --------------------------------------------------------------------------
# store append after a valid prefix

#: The first events of the first seed log (a turn open in plan mode), kept
#: in every append session before the fuzzed events are appended.
PREFIX_LENGTH = 4
_PREFIX = b"\n".join(json.dumps(record).encode("utf-8") for record in SEED_LOGS[0][:PREFIX_LENGTH])
_SUFFIXES = [SEED_LOGS[0][PREFIX_LENGTH:]]


def _append_into(store: Store, data: bytes, clock: Clock) -> str:
    session_id = SESSION
    import_session(store, session_id, _PREFIX)
    before = _snapshot(store, session_id)
    prefix = store.read(session_id)
    events = decode_jsonl(data)
    try:
        with clock.timed():
            store.append(AppendRequest(session_id, PREFIX_LENGTH, events))
    except PlanfoldError as exc:
        expect(_snapshot(store, session_id) == before, f"a rejected append changed the session ({exc.code})")
        return "refused " + stable_repr(exc)
    expect(store.read(session_id) == prefix + events, "the stored log is not prefix + appended events")
    expect(store.audit(session_id).ok, "the projection written by an append fails its audit")
    return stable_repr(store.load(session_id))


def _run_append(data: bytes, clock: Clock) -> str:
    try:
        decode_jsonl(data)
    except PlanfoldError as exc:  # the codec refuses it before any store sees it
        return "not records: " + stable_repr(exc)
    return _on_every_store(_append_into, data, clock, "an append")


@st.composite
def _mutated_jsonl(draw: st.DrawFn, seeds: Sequence[object]) -> bytes:
    value = draw(structural_mutations(seeds, LOG_KEYS))
    if isinstance(value, list):
        return b"\n".join(render(draw, item) for item in value)
    return render(draw, value)


def _in_payload(body: bytes, seq: int = 1) -> bytes:
    """``body`` as a payload value of an otherwise valid record."""
    return b'{"seq":%d,"kind":"user/message","at":5000,"payload":{"text":%s,"source":null}}' % (seq, body)


def _jsonl_inputs(seeds: Sequence[Sequence[object]]) -> st.SearchStrategy[bytes]:
    whole = [b"\n".join(json.dumps(record).encode("utf-8") for record in log) for log in seeds]
    mutated = _mutated_jsonl(seeds)
    last_line = st.builds(
        lambda log, body: log + b"\n" + _in_payload(body, log.count(b"\n") + 2),
        st.sampled_from(whole),
        st.one_of(deep_nesting(), huge_json_string()),
    )
    return st.one_of(mutated, mutated, mutated, byte_mutations(whole), last_line, st.binary(max_size=128))


STORE_TARGETS: tuple[Target, ...] = (
    Target(
        "codec_event",
        "decode_event",
        _run_codec,
        json_inputs([rec for log in SEED_LOGS for rec in log], LOG_KEYS, wrap=_in_payload),
    ),
    Target("jsonl_import", "import_session", _run_import, _jsonl_inputs(SEED_LOGS)),
    Target("store_append", "Store.append", _run_append, _jsonl_inputs(_SUFFIXES)),
)
