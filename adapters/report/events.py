"""Every event of a session, embedded in its page as a compact index with
full payloads up to a budget, and the folded state wherever it changes.

Theory of operation
-------------------
The page's summary (``model``) is bounded; this part makes every event
reachable from the page all the same. ``EventIndex`` sees each event once,
as the report's fold takes it (``IndexBuilder.add``), and writes it into a
chunk: one JSON array per event, ``[kind, turn, tool, rule, dt, size,
payload]`` (the seq is the chunk's first plus the place: a session's seqs
are dense; ``dt`` is the milliseconds since the event before; ``kind``,
``tool`` and ``rule`` index the page's lists of them). ``payload`` is the
event's payload as JSON text, whole, when it is at most ``limit`` bytes and
the page's payloads so far are within ``budget`` compressed bytes, else
``0`` (``size`` still says how long it is, and the page names the command
that shows it: ``planfold report --session S --around SEQ``, whose page
embeds the ``AROUND`` events either side of ``SEQ`` in full whatever their
size). A chunk holds at most ``CHUNK`` events or ``CHUNK_BYTES`` bytes of
payload, and is stored gzip-compressed and in base64, which the page's
script inflates with the browser's own ``DecompressionStream``.

Everything from the log is written as ``adapters.visible`` shows it: the
JSON text's control and bidirectional characters stay ``\\uNNNN`` escapes
(valid JSON still), so the page shows them as escapes, never acts on them.

The folded state (plan mode, the plan's id, revision and status, its open
todos, the goal's id, phase and rounds against its budget) is taken from
the strict fold's state after every event and written as a list of
``[seq, state]`` each time it differs from the one before (so a turn
boundary, a plan or goal event, or a goal round that changes nothing adds
nothing): the state at any seq is the last entry at or before it, exactly
the kernel's fold of the events up to that seq.

The page's size is bounded by ``page_bound``: the summary, the payloads'
budget plus one chunk, and ``INDEX_BYTES`` per event for the index.
"""

from __future__ import annotations

import base64
import json
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass

from ...kernel.log import Event
from ...kernel.plan.spec import ACTIVE_TODO_STATUSES
from ...kernel.session import SessionState
from ..visible import visible

__all__ = [
    "AROUND",
    "BUDGET",
    "CHUNK",
    "CHUNK_BYTES",
    "INDEX_BYTES",
    "LIMIT",
    "SUMMARY_BYTES",
    "Chunk",
    "EventIndex",
    "IndexBuilder",
    "names_json",
    "page_bound",
    "payload_text",
    "state_of",
]

#: The longest payload (bytes of its JSON) embedded whole by default.
LIMIT = 64 * 1024
#: The compressed bytes of payloads one page embeds by default.
BUDGET = 4 * 1024 * 1024
#: Events per chunk, and the payload bytes that close a chunk early.
CHUNK = 4096
CHUNK_BYTES = 1024 * 1024
#: Events either side of ``--around SEQ`` embedded whole whatever the budget.
AROUND = 50
#: What the summary may take (it is bounded by ``model``'s capped lists).
SUMMARY_BYTES = 2 * 1024 * 1024
#: What the index may take per event, compressed, in base64.
INDEX_BYTES = 12
#: How many names (kinds, tools, rules) the lists keep; the rest share one.
NAMES = 512
#: How many open todos a state lists.
TODOS = 64

_ACTING_JSON = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")


def payload_text(payload: object) -> str:
    """A payload as the page embeds it: its JSON, every control and
    bidirectional character a ``\\uNNNN`` escape (JSON escapes C0 itself)."""
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), default=str)
    if text.isascii():
        return text.replace("\x7f", "\\u007f") if "\x7f" in text else text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: JSON's own ASCII escapes say it
        return json.dumps(payload, ensure_ascii=True, separators=(",", ":"), default=str)
    return _ACTING_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def page_bound(events: int, budget: int = BUDGET) -> int:
    """The most bytes the page of a session of ``events`` events takes."""
    return SUMMARY_BYTES + budget + CHUNK_BYTES + INDEX_BYTES * events


def state_of(state: SessionState) -> list[object]:
    """The folded state as the page shows it: ``[plan mode, plan id, revision,
    status, open todos, goal id, goal phase, rounds, max rounds]`` (ids and
    texts as ``visible`` shows them; ``None`` where there is no plan or goal)."""
    plan = state.plan.current
    goal = state.goal.current
    todos: list[str] = []
    if plan is not None:
        todos = [visible(f"{t.id}: {t.text}"[:200]) for t in plan.spec.todos if t.status in ACTIVE_TODO_STATUSES]
    return [
        "plan" if state.plan_mode else "build",
        None if plan is None else visible(plan.id),
        None if plan is None else plan.revision,
        None if plan is None else plan.status,
        todos[:TODOS],
        None if goal is None else visible(goal.id),
        None if goal is None else goal.phase,
        None if goal is None else goal.rounds_started,
        None if goal is None else goal.max_rounds,
    ]


@dataclass(frozen=True, slots=True)
class Chunk:
    """Events ``first``..``last``, compressed and in base64."""

    first: int
    last: int
    data: str


@dataclass(frozen=True, slots=True)
class EventIndex:
    """Every event of a session as the page embeds it."""

    chunks: tuple[Chunk, ...]
    states: str
    kinds: tuple[str, ...]
    tools: tuple[str, ...]
    rules: tuple[str, ...]
    events: int
    embedded: int
    left_out: int
    limit: int
    budget: int
    around: int | None

    @property
    def size(self) -> int:
        return sum(len(c.data) for c in self.chunks) + len(self.states)


def _pack(rows: list[object]) -> str:
    text = json.dumps(rows, ensure_ascii=False, separators=(",", ":"))
    packer = zlib.compressobj(6, zlib.DEFLATED, 31)
    return base64.b64encode(packer.compress(text.encode("utf-8")) + packer.flush()).decode("ascii")


class _Names:
    __slots__ = ("index", "names")

    def __init__(self) -> None:
        self.names: list[str] = []
        self.index: dict[str, int] = {}

    def of(self, name: str) -> int:
        found = self.index.get(name)
        if found is not None:
            return found
        if len(self.names) >= NAMES:
            name = "(other)"
            found = self.index.get(name)
            if found is not None:
                return found
        self.index[name] = len(self.names)
        self.names.append(visible(name[:200]))
        return self.index[name]


class IndexBuilder:
    """Takes every event with the fold's state after it (``add``), then
    makes the ``EventIndex`` (``finish``)."""

    def __init__(self, limit: int = LIMIT, budget: int = BUDGET, around: int | None = None) -> None:
        self.limit, self.budget, self.around = limit, budget, around
        self.kinds, self.tools, self.rules = _Names(), _Names(), _Names()
        self.chunks: list[Chunk] = []
        self._rows: list[object] = []
        self._first = 0
        self._last = 0
        self._raw = 0
        self._spent = 0
        self._at: int | None = None
        self._base = 0
        self._state: list[object] | None = None
        # the states, compressed as they come: memory grows with their compressed size only
        self._states = zlib.compressobj(6, zlib.DEFLATED, 31)
        self._packed: list[bytes] = []
        self._opened = False
        self.events = 0
        self.embedded = 0
        self.left_out = 0

    def _near(self, seq: int) -> bool:
        return self.around is not None and abs(seq - self.around) <= AROUND

    def add(self, event: Event, after: SessionState, turn: int | None, tool: str = "", rule: str = "") -> None:
        if not self._rows:
            self._first = event.seq
            self._base = event.at if self._at is None else self._at
        self._last = event.seq
        self.events += 1
        text = payload_text(event.payload)
        size = len(text.encode("utf-8"))
        near = self._near(event.seq)
        embed = near or (size <= self.limit and self._spent < self.budget)
        if embed:
            self.embedded += 1
            self._raw += size
        else:
            self.left_out += 1
        dt = 0 if self._at is None else event.at - self._at
        self._at = event.at
        self._rows.append([
            self.kinds.of(event.kind), turn, self.tools.of(tool) if tool else -1,
            self.rules.of(rule) if rule else -1, dt, size, text if embed else 0,
        ])
        state = state_of(after)
        if state != self._state:
            self._state = state
            text = ("," if self._opened else "[") + json.dumps([event.seq, state], ensure_ascii=False)
            self._opened = True
            self._packed.append(self._states.compress(text.encode("utf-8")))
        if len(self._rows) >= CHUNK or self._raw >= CHUNK_BYTES:
            self._flush()

    def _flush(self) -> None:
        if not self._rows:
            return
        data = _pack([self._base, *self._rows])
        self.chunks.append(Chunk(self._first, self._last, data))
        self._spent += len(data)
        self._rows, self._raw = [], 0

    def finish(self) -> EventIndex:
        self._flush()
        self._packed.append(self._states.compress(b"]" if self._opened else b"[]"))
        self._packed.append(self._states.flush())
        states = base64.b64encode(b"".join(self._packed)).decode("ascii")
        return EventIndex(
            tuple(self.chunks), states, tuple(self.kinds.names), tuple(self.tools.names),
            tuple(self.rules.names), self.events, self.embedded, self.left_out, self.limit, self.budget,
            self.around,
        )


def names_json(index: EventIndex) -> Mapping[str, object]:
    """The small facts the page's script starts from (lists, counts, limits)."""
    return {
        "kinds": index.kinds, "tools": index.tools, "rules": index.rules, "events": index.events,
        "embedded": index.embedded, "left_out": index.left_out, "limit": index.limit, "around": index.around,
    }
