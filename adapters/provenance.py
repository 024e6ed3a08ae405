"""Fork provenance: where a forked session came from, and how an export
carries it.

Theory of operation
-------------------
A fork at seq N of session S is a new session whose log is the first N
events of S (every prefix of a log that folds strictly folds strictly). Its
``ForkProvenance`` is S, N and the SHA-256 of those N events written as JSON
Lines (``prefix_digest``): exactly the bytes of the first N lines of S's
export, so anyone holding that export can check the claim with
``head -n N | sha256sum``. A store keeps the provenance with the new session
and never changes it.

In a JSON Lines export the provenance is one line after the events, a record
with the single key ``fork``::

    {"fork":{"source":"S","seq":N,"prefix_sha256":"..."}}

so the export of a fresh fork at N is the first N lines of the source's
export plus that line (a fork that went on has its own events between them).
The record is never an event record (those have exactly ``seq``, ``kind``,
``at`` and ``payload``), and it may only be the last line: ``split_fork_record``
takes it off the end of a text, and ``ForkRecordLines`` takes it off a stream
of lines as they are read. A record that is not exactly that shape is
``ForkRecordError`` (``malformed-fork-record``); ``import`` then hands the
events and the provenance to the store, which checks the seq and the hash
against the events it is given (``provenance-mismatch`` otherwise).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..kernel.log import Event
from .codec import CodecError, encode_event

__all__ = [
    "ForkProvenance",
    "ForkRecordError",
    "ForkRecordLines",
    "decode_fork_record",
    "encode_fork_record",
    "is_fork_line",
    "prefix_digest",
    "split_fork_record",
]

_KEYS = ("source", "seq", "prefix_sha256")


@dataclass(frozen=True, slots=True)
class ForkProvenance:
    """A forked session's origin: the ``source`` session, the ``seq`` it was
    forked at (the fork's log is the source's first ``seq`` events) and the
    hex SHA-256 of those events as JSON Lines (``prefix_digest``)."""

    source: str
    seq: int
    prefix_sha256: str

    def as_json(self) -> dict[str, str | int]:
        return {"source": self.source, "seq": self.seq, "prefix_sha256": self.prefix_sha256}

    def text(self) -> str:
        """One line for people: where the session was forked from."""
        return f"forked from {self.source!r} at seq {self.seq} (prefix sha256 {self.prefix_sha256})"


class ForkRecordError(CodecError):
    """A JSON Lines line that starts as a fork record is not one
    (``malformed-fork-record``: not exactly ``{"fork": {"source", "seq",
    "prefix_sha256"}}`` with a session id, a seq of at least 1 and a hex
    SHA-256), or a line follows the fork record, which must be the last one;
    ``line`` is its 1-based number."""

    code = "malformed-fork-record"
    codes = frozenset()

    def __init__(self, message: str, *, line: int | None = None) -> None:
        super().__init__(message, code="malformed-fork-record", line=line)


def prefix_digest(events: Iterable[Event]) -> str:
    """The hex SHA-256 of ``events`` written as JSON Lines (``encode_jsonl``'s
    bytes, one event at a time)."""
    digest = hashlib.sha256()
    for event in events:
        digest.update(encode_event(event) + b"\n")
    return digest.hexdigest()


def encode_fork_record(provenance: ForkProvenance) -> bytes:
    """The provenance's line of an export (no line end)."""
    body = {"fork": provenance.as_json()}
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def is_fork_line(raw: bytes) -> bool:
    """Whether a JSON Lines line claims to be a fork record: an object whose
    first key is ``fork`` (no event record starts so)."""
    stripped = raw.lstrip(b" \t")
    return stripped.startswith(b"{") and stripped[1:].lstrip(b" \t").startswith(b'"fork"')


def _is_hex_digest(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def decode_fork_record(raw: bytes, line: int | None = None) -> ForkProvenance:
    """The provenance a fork record holds; ``ForkRecordError`` otherwise."""
    where = "the fork record" if line is None else f"line {line}"
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ForkRecordError(f"{where} is not JSON: {exc}", line=line) from exc
    fork = body.get("fork") if isinstance(body, dict) and set(body) == {"fork"} else None
    if not isinstance(fork, dict) or set(fork) != set(_KEYS):
        raise ForkRecordError(f'{where}: a fork record is {{"fork": {{"source", "seq", "prefix_sha256"}}}}', line=line)
    source, seq, digest = (fork[key] for key in _KEYS)
    if not isinstance(source, str) or not source.strip():
        raise ForkRecordError(f"{where}: the fork's source must be a session id", line=line)
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < 1:
        raise ForkRecordError(f"{where}: the fork's seq must be an integer of at least 1, not {seq!r}", line=line)
    if not _is_hex_digest(digest):
        raise ForkRecordError(f"{where}: prefix_sha256 must be 64 lowercase hex digits", line=line)
    return ForkProvenance(source, seq, digest)


def split_fork_record(data: bytes | str) -> tuple[bytes, ForkProvenance | None]:
    """``data`` without its last line when that line is a fork record, and
    the provenance it holds (``None`` and ``data`` unchanged when there is
    none). A fork record anywhere else is left where it is: a reader of the
    events refuses it as a malformed event record."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    body = raw[:-1] if raw.endswith(b"\n") else raw
    start = body.rfind(b"\n") + 1
    last = body[start:]
    if not is_fork_line(last):
        return raw, None
    line = raw.count(b"\n", 0, start) + 1
    return raw[:start], decode_fork_record(last, line)


class ForkRecordLines:
    """The lines of a JSON Lines stream (each without its line end) with a
    fork record on the last line taken off: iterate to get the other lines
    as they are read; afterwards ``provenance`` holds the record (``None``
    when there was none). A line after the fork record is
    ``ForkRecordError``. Iterate once."""

    def __init__(self, lines: Iterable[bytes]) -> None:
        self.lines = lines
        self.provenance: ForkProvenance | None = None

    def __iter__(self) -> Iterator[bytes]:
        held: tuple[int, ForkProvenance] | None = None
        for number, raw in enumerate(self.lines, start=1):
            if held is not None:
                raise ForkRecordError(f"line {held[0]} is a fork record, which must be the last line", line=number)
            if is_fork_line(raw):
                held = (number, decode_fork_record(raw, number))
                continue
            yield raw
        self.provenance = None if held is None else held[1]
