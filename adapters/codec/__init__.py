"""The storage and wire codec: events, JSON Lines, the session projection and
fold-state snapshots, all through msgspec.

Theory of operation
-------------------
An event is stored as its envelope (``seq``, ``kind``, ``at``) plus a payload
encoded as compact JSON. ``encode_payload`` accepts only real JSON (string
keys, finite numbers, no bytes or sets), because anything else would not come
back as it went in; ``canonical_event`` is the event exactly as a store will
hand it back (objects as dicts, arrays as lists). Decoding stored bytes that
are not a JSON object is the log's fault: a positioned ``ReplayError`` with
rule ``malformed-payload``.

A session travels as JSON Lines: one event object per line, in seq order.
``JsonlLines`` reads the lines of a stream one at a time, in chunks of
``CHUNK`` bytes, so a reader that folds as it reads holds one line and one
chunk, never the log; its ``consumed`` says how far it got.
``read_records`` is the one reader of JSON Lines logs (replay, import,
conformance): it checks that each line is a record and hands its values on
as they come, for the fold to judge, so every command gives one verdict on
one log; a line that is not a record is a ``CodecError`` carrying the line
number (and the seq, when readable). ``read_session_jsonl`` also folds the
events strictly and reports the first bad one as a positioned ``ReplayError``
whose detail names the line. ``decode_jsonl`` and ``decode_event`` are the
typed wire decoders: they also refuse an envelope a store cannot keep.

The codec sits below the stores: they import it, it imports nothing of
theirs. The session projection (``project``) and the fold-state snapshots
(``SESSION_SNAPSHOT``) are the stores' own (``adapters.store.projection``).
``adapters.codec.schema`` writes the JSON Schema of the same payload types.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol

import msgspec

from ...kernel.errors import ReplayError
from ...kernel.log import Event
from ...kernel.payload import JSONObject, maker
from ...kernel.session import Row, SessionState, apply_session_event
from ..errors import AdapterError

__all__ = [
    "MAX_DEPTH",
    "CodecError",
    "JsonlLines",
    "Readable",
    "RecordError",
    "canonical_event",
    "check_json",
    "decode_event",
    "decode_jsonl",
    "decode_payload",
    "decode_rows",
    "encode_event",
    "encode_jsonl",
    "encode_payload",
    "read_record",
    "read_records",
    "read_session_jsonl",
    "stored_event",
    "stored_events",
]


class CodecError(AdapterError):
    """Input is not something the codec can represent or read.

    Codes: ``payload-not-json`` (the caller's payload has a value JSON cannot
    carry exactly), ``event-not-storable`` (see ``canonical_event``),
    ``malformed-record`` (a JSON Lines line is not an event
    record; ``line`` is its 1-based number; ``RecordError`` from the reader).
    """

    code = "codec-error"
    codes = frozenset({"event-not-storable", "malformed-record", "payload-not-json"})

    def __init__(self, message: str, *, code: str, line: int | None = None) -> None:
        super().__init__(message, code=code)
        self.line = line


class RecordError(CodecError):
    """A line of a JSON Lines log is not an event record (``read_record``):
    ``line`` is its 1-based number, ``seq`` the seq it names when that much
    of it is readable, ``detail`` the rule it breaks (the message without
    the line)."""

    code = "malformed-record"
    codes = frozenset({"malformed-record"})

    def __init__(self, line: int, detail: str, seq: int | None = None) -> None:
        super().__init__(f"line {line}: {detail}", code="malformed-record", line=line)
        self.seq = seq
        self.detail = detail


# --------------------------------------------------------------------------
# Payloads and events


#: How deeply a payload may nest arrays and objects. Far beyond any event
#: planfold writes, and far below where a recursive reader could overflow.
MAX_DEPTH = 128


#: A container met by the JSON walk: itself, its depth, and where it sits (the
#: entry of its parent and its key there; none for the root).
_Entry = tuple[Any, int, Any, Any]


def _where(root: str, entry: _Entry | None, key: object = None) -> str:
    """The path of ``key`` in the container of ``entry`` (of the container
    itself when ``key`` is None), made only when there is a problem to name."""
    parts: list[str] = [] if key is None else [f"[{key}]" if isinstance(key, int) else f".{key}"]
    while entry is not None:
        _, _, parent, name = entry
        if parent is not None:
            parts.append(f"[{name}]" if isinstance(name, int) else f".{name}")
        entry = parent
    return root + "".join(reversed(parts))


def _leaf_problem(value: object) -> str | None:
    """Why a value that is not a list, tuple or mapping is not JSON."""
    if value is None or isinstance(value, bool | int | str):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else "holds a non-finite number"
    return f"holds a {type(value).__name__}, which is not JSON"


def _json_problem(value: object, where: str) -> str | None:
    """The first reason ``value`` is not JSON within ``MAX_DEPTH``, or None.
    Iterative, so no input can exhaust the interpreter's stack; a path is
    made only for the value at fault."""
    if not isinstance(value, list | tuple | Mapping):
        problem = _leaf_problem(value)
        return None if problem is None else f"{where} {problem}"
    stack: list[_Entry] = [(value, 0, None, None)]
    while stack:
        entry = stack.pop()
        item, depth = entry[0], entry[1]
        if depth >= MAX_DEPTH:
            return f"{_where(where, entry)} nests arrays and objects deeper than {MAX_DEPTH} levels"
        pairs: Iterable[tuple[Any, Any]]
        if isinstance(item, Mapping):
            for key in item:
                if type(key) is not str and not isinstance(key, str):
                    return f"{_where(where, entry)} has a non-string key {key!r}"
            pairs = item.items()
        else:
            pairs = enumerate(item)
        for key, child in pairs:
            kind = type(child)
            if kind is str or kind is int or kind is bool or child is None:
                continue
            if kind is dict or kind is list or isinstance(child, list | tuple | Mapping):
                stack.append((child, depth + 1, entry, key))
                continue
            problem = _leaf_problem(child)
            if problem is not None:
                return f"{_where(where, entry, key)} {problem}"
    return None


def _exact_copy(item: dict[Any, Any] | list[Any], depth: int) -> dict[str, Any] | list[Any] | None:
    """A copy of ``item``, a dict or a list at ``depth``, when it is made of
    nothing but dicts with string keys, lists, strings, integers, booleans,
    None and finite floats, each of exactly that type, within ``MAX_DEPTH``:
    JSON that ``_json_problem`` would accept too, found without building its
    entries, and copied container by container (what decoding its encoding
    would give: the same keys in the same order, values of the same types).
    ``None`` means only that this quick look cannot tell (a subclass, a
    tuple, a read-only mapping); ``_json_problem`` then decides."""
    if depth >= MAX_DEPTH:
        return None
    pairs: Iterable[tuple[Any, Any]]
    if type(item) is dict:
        for key in item:
            if type(key) is not str:
                return None
        pairs = item.items()
    else:
        pairs = enumerate(item)
    nested: dict[Any, Any] | None = None
    for key, child in pairs:
        kind = type(child)
        if kind in _EXACT_SCALARS:
            continue
        if kind is dict or kind is list:
            inner = _exact_copy(child, depth + 1)
            if inner is None:
                return None
            if nested is None:
                nested = {}
            nested[key] = inner
            continue
        if kind is not float or child - child != 0.0:  # nonzero (nan) only for inf and nan
            return None
    copy: dict[Any, Any] | list[Any] = dict(item) if type(item) is dict else list(item)
    if nested is not None:
        for key, inner in nested.items():
            copy[key] = inner  # a dict's existing key keeps its place
    return copy


#: The types of the JSON scalars that are always exact (a float may not be).
_EXACT_SCALARS = frozenset({str, int, bool, type(None)})


def check_json(value: object, where: str = "payload") -> None:
    """Raise ``CodecError`` (``payload-not-json``) unless ``value`` is JSON:
    None, bool, int, finite float, str, lists/tuples and string-keyed
    mappings, nested at most ``MAX_DEPTH`` deep."""
    problem = _json_problem(value, where)
    if problem is not None:
        raise CodecError(problem, code="payload-not-json")


def _plain(value: object) -> object:
    """msgspec's hook for the read-only containers the kernel hands out
    (``MappingProxyType`` and other ``Mapping``/``Sequence`` values) and for
    subclasses of the JSON scalars (encoded as their plain values, as
    ``check_json`` accepts them)."""
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, Sequence) and not isinstance(value, str | bytes | bytearray):
        return list(value)
    raise NotImplementedError(f"{type(value).__name__} is not JSON")


#: Encodes any JSON-shaped value, whatever Mapping or Sequence it is built from.
JSON_ENCODER = msgspec.json.Encoder(enc_hook=_plain)
SORTED_JSON_ENCODER = msgspec.json.Encoder(enc_hook=_plain, order="sorted")


def encode_payload(payload: JSONObject) -> bytes:
    """Compact JSON bytes of a payload object; ``CodecError`` if it is not JSON."""
    if type(payload) is not dict or _exact_copy(payload, 0) is None:
        if not isinstance(payload, Mapping):
            raise CodecError("a payload must be a JSON object", code="payload-not-json")
        check_json(payload)
    return _encoded(payload)


def _encoded(payload: JSONObject) -> bytes:
    """``payload``, JSON already, encoded; ``CodecError`` for text that is not Unicode."""
    try:
        return JSON_ENCODER.encode(payload)
    except UnicodeEncodeError as exc:
        raise CodecError(f"payload text is not valid Unicode: {exc}", code="payload-not-json") from exc


_PAYLOAD = msgspec.json.Decoder(dict[str, Any])


def decode_payload(data: bytes | str, seq: int) -> dict[str, Any]:
    """The payload stored for event ``seq``; a positioned ``ReplayError``
    (``malformed-payload``) when the stored bytes are not a JSON object."""
    if not isinstance(data, bytes | str):
        raise ReplayError(seq, "malformed-payload", f"stored payload is a {type(data).__name__}, not JSON text")
    try:
        payload = _PAYLOAD.decode(data)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise ReplayError(seq, "malformed-payload", f"stored payload is not a JSON object: {exc}") from exc
    if _shallow(data):
        return payload
    problem = _json_problem(payload, "stored payload")
    if problem is not None:
        raise ReplayError(seq, "malformed-payload", problem)
    return payload


#: Text at most this long cannot nest past MAX_DEPTH (see _shallow).
_SHORT = 2 * MAX_DEPTH


def decode_rows(rows: Iterable[tuple[Any, Any, Any, Any]]) -> Iterator[Row]:
    """Stored ``(seq, kind, at, payload text)`` rows with their payloads
    decoded as plain JSON (``decode_payload``), one at a time, for
    ``kernel.session.fold_rows``: the fold reads each into its kind's type
    with the kernel's reader, the one strict reader of payloads. The
    envelope is left to the fold."""
    for seq, kind, at, data in rows:
        yield seq, kind, at, decode_payload(data, seq)


def _shallow(data: bytes | str) -> bool:
    """True when JSON text that msgspec decoded cannot nest past ``MAX_DEPTH``.

    Decoded JSON has string keys and no number msgspec could not represent
    (it refuses out-of-range numbers), so nesting is the one thing left for
    ``_json_problem`` to find, and a value holds no more nested containers
    than its text has opening brackets (brackets inside strings only make the
    count larger). Most payloads pass this count and skip the walk; most are
    too short to nest that deep at all: nesting past ``MAX_DEPTH`` takes more
    than ``MAX_DEPTH`` containers, each opened and closed.
    """
    if len(data) <= _SHORT:
        return True
    if isinstance(data, str):
        return data.count("{") + data.count("[") <= MAX_DEPTH
    return data.count(b"{") + data.count(b"[") <= MAX_DEPTH


_INT64 = range(-(2**63), 2**63)
_LOWEST, _HIGHEST = _INT64[0], _INT64[-1]


def _check_envelope_storable(event: object) -> Event:
    if type(event) is Event:  # the common case, decided at once
        seq, at, kind = event.seq, event.at, event.kind
        if (
            type(seq) is int and _LOWEST <= seq <= _HIGHEST and type(at) is int and _LOWEST <= at <= _HIGHEST
            and type(kind) is str and kind.isascii()
        ):
            return event
    if not isinstance(event, Event):
        raise CodecError(f"expected an Event, got {type(event).__name__}", code="event-not-storable")
    for name in ("seq", "at"):
        value = getattr(event, name)
        if isinstance(value, int) and value not in _INT64:
            raise CodecError(f"event {name} {value} does not fit in 64 bits", code="event-not-storable")
    if not isinstance(event.kind, str):
        raise CodecError(f"event kind must be a string, got {type(event.kind).__name__}", code="event-not-storable")
    try:
        event.kind.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CodecError("event kind is not valid Unicode text", code="event-not-storable") from exc
    return event


#: ``Event(...)`` without its ``__init__`` (``kernel.payload.maker``): one per appended event.
_EVENT: Callable[..., Event] = maker(Event)


def stored_events(events: Sequence[Event]) -> tuple[tuple[Event, ...], tuple[str, ...]]:
    """``stored_event`` of every event: the canonical events and, in the same
    order, the payload texts a store keeps for them; the same ``CodecError``s."""
    if len(events) == 1:
        event, text = stored_event(events[0])
        return (event,), (text,)
    pairs = [stored_event(event) for event in events]
    return tuple(event for event, _ in pairs), tuple(text for _, text in pairs)


def canonical_event(event: Event) -> Event:
    """``event`` exactly as a store returns it. ``CodecError``: ``payload-not-json``
    for a payload JSON cannot carry, ``event-not-storable`` for a value that is
    not an event, a kind that is not text, or a seq or time beyond 64 bits."""
    return stored_event(event)[0]


def stored_event(event: Event) -> tuple[Event, str]:
    """``canonical_event(event)`` and the payload text a store keeps for it
    (the compact JSON that decodes to the canonical payload); the same
    ``CodecError``s."""
    event = _check_envelope_storable(event)
    payload = event.payload
    canonical = _exact_copy(payload, 0) if type(payload) is dict else None
    if canonical is not None:
        # Plain JSON of exact types: its copy is what decoding its bytes gives.
        data = _encoded(payload)
    else:
        data = encode_payload(payload)
        # Bytes just encoded from checked JSON decode to checked JSON (finite
        # floats keep their value, the nesting stays the same), so the decoded
        # payload is not walked a second time; and they are what encoding the
        # decoded payload again would give, so they are stored as they are.
        canonical = _PAYLOAD.decode(data)
    return _EVENT(event.seq, event.kind, event.at, canonical), data.decode()


class _Record(msgspec.Struct, forbid_unknown_fields=True):
    """One event on the wire (a JSON Lines line)."""

    seq: int
    kind: str
    at: int
    payload: dict[str, Any]


_RECORD = msgspec.json.Decoder(_Record)


def encode_event(event: Event) -> bytes:
    """One event as a compact JSON object (no trailing newline)."""
    _check_envelope_storable(event)
    check_json(event.payload)
    try:
        return JSON_ENCODER.encode(_Record(event.seq, event.kind, event.at, dict(event.payload)))
    except (UnicodeEncodeError, TypeError, OverflowError) as exc:
        detail = f"event {event.seq!r} cannot be written as a record: {exc}"
        raise CodecError(detail, code="event-not-storable") from exc


def decode_event(data: bytes | str, *, line: int | None = None) -> Event:
    """The event a JSON record holds; ``CodecError`` (``malformed-record``) otherwise."""
    where = "record" if line is None else f"line {line}"
    try:
        record = _RECORD.decode(data)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise CodecError(f"{where} is not an event record: {exc}", code="malformed-record", line=line) from exc
    problem = _json_problem(record.payload, f"{where}: payload")
    if problem is not None:
        raise CodecError(problem, code="malformed-record", line=line)
    event = Event(record.seq, record.kind, record.at, record.payload)
    try:
        return _check_envelope_storable(event)
    except CodecError as exc:
        raise CodecError(f"{where}: {exc.message}", code="malformed-record", line=line) from exc


# --------------------------------------------------------------------------
# JSON Lines


#: Bytes read from a JSON Lines stream at a time.
CHUNK = 1 << 16


class Readable(Protocol):
    """What ``JsonlLines`` reads from: a binary file, a pipe, standard input."""

    def read(self, size: int = -1, /) -> bytes: ...


class JsonlLines:
    """The lines of a JSON Lines stream: ``head`` (bytes already read from it)
    followed by what ``stream`` holds, one line at a time, each without its
    ``\\n``. The lines are those of ``data.split(b"\\n")`` with one empty last
    line dropped (a final newline ends the last line, so a blank line is a
    line); ``consumed`` is how many bytes were read so far. Iterate once."""

    def __init__(self, stream: Readable | None, head: bytes = b"") -> None:
        self.stream = stream
        self.head = head
        self.consumed = 0

    def __iter__(self) -> Iterator[bytes]:
        more: Iterable[bytes] = () if self.stream is None else iter(functools.partial(self.stream.read, CHUNK), b"")
        parts: list[bytes] = []
        for chunk in itertools.chain((self.head,), more):
            self.consumed += len(chunk)
            if b"\n" not in chunk:
                parts.append(chunk)
                continue
            *complete, rest = chunk.split(b"\n")
            if parts:
                complete[0] = b"".join((*parts, complete[0]))
            yield from complete
            parts = [rest]
        last = b"".join(parts)
        if last:
            yield last


_ANY = msgspec.json.Decoder()
_RECORD_KEYS = frozenset({"seq", "kind", "at", "payload"})


def _refuse_constant(token: str) -> object:
    raise ValueError(f"{token} is not JSON")


def _not_json(text: str, refused: msgspec.DecodeError) -> str:
    """Why ``text``, which msgspec refused, is not JSON a store can keep, in
    the words of the standard reader where it refuses too (only called on
    the way to an error)."""
    if not text.strip():
        return "a blank line is not an event record"
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        return f"not JSON ({exc.msg})"
    except (ValueError, RecursionError) as exc:
        return f"not JSON ({exc})"
    stack = [value]
    while stack:  # what the standard reader takes and msgspec does not
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return "not valid Unicode text (a \\u escape of a lone surrogate)"
        elif isinstance(item, float) and not math.isfinite(item):
            return "not JSON a store can keep (a number out of range)"
    return f"not JSON ({refused})"


def read_record(raw: bytes, line: int) -> Event:
    """The event that line number ``line`` of a JSON Lines log records, its
    values as they come (the fold judges them); ``RecordError``
    (``malformed-record``, with ``line`` and, when readable, ``seq``) when the
    line is not an event record. See ``read_records``."""

    def malformed(detail: str, seq: int | None = None) -> RecordError:
        return RecordError(line, detail, seq)

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise malformed(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    try:
        record = _ANY.decode(raw)
    except msgspec.DecodeError as exc:
        raise malformed(_not_json(text, exc)) from exc
    except RecursionError as exc:
        raise malformed(f"not JSON ({exc})") from exc
    if type(record) is not dict:
        raise malformed("an event record is a JSON object {seq, kind, at, payload}")
    seq = record.get("seq")
    seq = seq if type(seq) is int else None
    if record.keys() != _RECORD_KEYS:
        keys = ", ".join(sorted(map(repr, record)))
        raise malformed(f"an event record has exactly seq, kind, at and payload, not {keys}", seq)
    kind = record["kind"]
    if type(kind) is not str:
        raise malformed("kind must be a string", seq)
    payload = record["payload"]
    if not _shallow(raw):
        problem = _json_problem(payload, "payload")
        if problem is not None:
            raise malformed(problem, seq)
    return _EVENT(record["seq"], kind, record["at"], payload)


def read_records(lines: Iterable[bytes]) -> Iterator[tuple[int, Event]]:
    """The records of a JSON Lines log as ``(line number, event)``, one at a
    time as the lines are read (each without its line end: ``JsonlLines``).

    This is the one reader of JSON Lines logs: ``planfold replay``,
    ``planfold import``, ``import_session`` and the conformance runner all
    read with it, so they agree on every log. A line is a record when it is
    UTF-8 text holding one JSON object (no ``NaN`` or ``Infinity``, no number
    out of range, no ``\\u`` escape of a lone surrogate, nested at most
    ``MAX_DEPTH`` deep) with exactly ``seq``, ``kind``, ``at`` and ``payload``,
    and a string ``kind``. Every other value is taken as it comes: the fold
    judges it and names the seq and rule of the first bad event (a ``seq``
    written as ``"2"`` is a ``seq-gap``, a payload that is not an object a
    ``malformed-payload``). Raises ``RecordError`` at the first line that is
    not a record."""
    for number, raw in enumerate(lines, start=1):
        yield number, read_record(raw, number)


def encode_jsonl(events: Iterable[Event]) -> bytes:
    """A session as JSON Lines: one event per line, each line ending in ``\\n``."""
    return b"".join(encode_event(event) + b"\n" for event in events)


def decode_jsonl(data: bytes | str) -> tuple[Event, ...]:
    """The events of a JSON Lines text, in order. Every line, including a
    blank one, must be an event record (a final newline is allowed)."""
    lines = _utf8(data).split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return tuple(decode_event(text, line=number) for number, text in enumerate(lines, start=1))


def _utf8(data: bytes | str) -> bytes:
    if not isinstance(data, str):
        return data
    try:
        return data.encode("utf-8")
    except UnicodeEncodeError as exc:
        line = data.count("\n", 0, exc.start) + 1
        raise CodecError(f"line {line} is not valid Unicode text", code="malformed-record", line=line) from exc


def read_session_jsonl(data: bytes | str) -> tuple[Event, ...]:
    """Read a JSON Lines session (``read_records``) and fold it strictly. A
    bad record raises ``CodecError`` with its line; a bad event raises the
    positioned ``ReplayError`` with the line named in its detail. Every event
    the fold accepts is one a store can keep."""
    events = []
    state = SessionState()
    for number, event in read_records(JsonlLines(None, _utf8(data))):
        try:
            state = apply_session_event(state, event)
        except ReplayError as exc:
            raise ReplayError(exc.position, exc.rule, f"{exc.detail} (line {number})") from exc
        events.append(event)
    return tuple(events)
