"""What a report says about a session, folded in one pass with bounded memory.

Theory of operation
-------------------
``build_report(session, records)`` reads a session's events once, as a
stream, and folds each one strictly with the kernel's own fold (through
``store.spill.SpillingFold``, so the goal ids a long log has used stay off the
states, as in ``planfold replay``). A ``ReportBuilder`` looks at every event
with the fold's state just before and just after it and keeps:

- counts: events per kind, model requests, tool calls with their verdicts
  (allowed, refused and warned, per rule code), turns, the time span;
- the timeline: one block per turn (and one per stretch of events between
  turns), each with its own totals, the plan/build mode of its steps as
  bands, and its notable events (tool calls with their verdict, messages,
  plan actions, mode switches, goal changes);
- the plan revisions (status history, who approved and when, the change of
  the ``PlanSpec`` from the revision before), the ``exit_plan_mode`` reviews
  (the plan put to the reviewer and the answer), the verification results,
  the goals (rounds against the budget) and every goal change with the
  actors the kernel's ``AUTHORITY`` table allows for it (the log does not
  record who asked);
- per machine, how often the session took each transition, and the first
  seqs that took it (``machines.taken``).

Every event is also handed to an ``events.IndexBuilder``, which embeds it in
the page compactly (a bounded page that still holds every event: see
``events``). Nothing else listed grows with the log: every list is a ``Capped`` list that keeps
its first ``head`` and last ``tail`` items and folds the ones in between into
a ``Stretch`` (how many items, events, seqs and turns, tool calls and their
verdicts), which the page prints as one line ("… 4,812 events of turns
120–380: 3,100 tool calls (3,050 allowed, 50 refused: not-offered 50) …").
The same holds inside one turn, so a turn of 100,000 events is as small as
any other. Texts are kept as short excerpts, and a count of rule codes keeps
at most ``CODES`` of them (a log names its own codes).

A log that breaks a rule is reported up to its first bad event: the fold
stops there, the report holds what came before, and ``Report.bad`` names the
seq (or the line of a record that could not be read), the rule and the
detail, with an excerpt of the event itself.

``Coverage`` adds up the machines of many sessions (``planfold report
--all``): how often every transition of every table was taken over a whole
database, and by which sessions' events.

``Report.provenance`` is a forked session's origin (``ForkProvenance``: the
source session, the seq it was forked at, the SHA-256 of that prefix) as the
store keeps it or a JSON Lines log's fork record gives it; ``None`` for a
session that is no fork.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Generic, Protocol, TypeVar

from ...kernel.goal.ops import AUTHORITY, SYSTEM_BLOCK_CODES
from ...kernel.goal.values import ClearChange, read_goal_change
from ...kernel.graph import Edge, Graph
from ...kernel.log import (
    ASSISTANT_MESSAGE,
    GOAL_CHANGE,
    PLAN_ARTIFACT,
    PLAN_MODE,
    REQUEST_HEADER,
    TOOL_CALL,
    TOOL_REFUSED,
    TOOL_RESULT,
    TOOL_WARNING,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
    Event,
    GoalSource,
    read_assistant_message,
    read_message,
)
from ...kernel.plan.payload import read_plan_action
from ...kernel.plan.spec import PlanSpec
from ...kernel.session import SessionState
from ...kernel.tools.events import read_tool_call, read_tool_notice, read_tool_result
from ...kernel.tools.spec import thaw_json
from ..codec import encode_event
from ..provenance import ForkProvenance
from ..store.spill import FoldStop, fold_records
from .events import BUDGET, LIMIT, EventIndex, IndexBuilder
from .machines import MACHINES, extra_note, machine_graphs, observable, taken
from .usage import CostTable, UsageBuilder, UsageReport

__all__ = [
    "CODES",
    "EXCERPT",
    "OTHER_CODES",
    "Audited",
    "BadEvent",
    "Block",
    "Capped",
    "Coverage",
    "CoverageReport",
    "DiffLine",
    "Entry",
    "GoalChangeEntry",
    "GoalEntry",
    "Listing",
    "MachineUse",
    "Report",
    "ReportBuilder",
    "Review",
    "Revision",
    "SessionLine",
    "Stretch",
    "Summarised",
    "Verification",
    "build_report",
    "bump",
    "goal_actors",
    "spec_diff",
    "with_audit",
    "with_fork_record",
]

#: The longest excerpt of any text the report keeps.
EXCERPT = 240
#: How many seqs (or session events) each transition lists.
SEQS_PER_EDGE = 16


def excerpt(text: object, width: int = EXCERPT) -> str:
    """``text`` on one line, cut to ``width`` characters."""
    line = " ".join(str(text).split())
    return line if len(line) <= width else line[: width - 1] + "…"


def _json_excerpt(value: object, width: int = EXCERPT) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = str(value)
    return excerpt(text, width)


def _approved(output: str) -> bool:
    """Whether an ``exit_plan_mode`` result says the plan was approved."""
    try:
        answer = json.loads(output)
    except ValueError:
        return False
    return isinstance(answer, Mapping) and answer.get("approved") is True


def _refusal(output: str) -> str:
    """What an ``exit_plan_mode`` result that did not approve says happened
    (the runtime words each outcome of ``kernel.plan.review.decide_review``)."""
    if "dismissed the review" in output:
        return "dismissed"
    if "review channel closed" in output:
        return "channel-lost"
    return "keep-planning"


#: How many distinct rule codes a count keeps; the rest are counted together.
CODES = 64
#: The key under which a count keeps the codes past ``CODES``.
OTHER_CODES = "(other codes)"


def bump(counts: Counter[str], code: str, n: int = 1) -> None:
    """Count ``n`` of ``code``, keeping at most ``CODES`` distinct codes (a
    log names its own codes, so their number is not bounded otherwise)."""
    if code in counts or len(counts) < CODES:
        counts[code] += n
    else:
        counts[OTHER_CODES] += n


# --------------------------------------------------------------------------
# Bounded lists


@dataclass(slots=True)
class Stretch:
    """Items a list left out, summed: how many, their events, the seqs and
    turns they span, their tool calls and verdicts."""

    items: int = 0
    events: int = 0
    first_seq: int | None = None
    last_seq: int | None = None
    first_turn: int | None = None
    last_turn: int | None = None
    calls: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    warned: Counter[str] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)

    def span(self, first: int | None, last: int | None, turn: int | None = None) -> None:
        if first is not None and (self.first_seq is None or first < self.first_seq):
            self.first_seq = first
        if last is not None and (self.last_seq is None or last > self.last_seq):
            self.last_seq = last
        if turn is not None:
            self.first_turn = turn if self.first_turn is None else min(self.first_turn, turn)
            self.last_turn = turn if self.last_turn is None else max(self.last_turn, turn)

    def calls_text(self) -> str:
        """``3,100 tool calls (3,050 allowed, 50 refused: not-offered 50)``."""
        refused = sum(self.refused.values())
        parts = [f"{self.calls - refused:,} allowed"]
        if refused:
            parts.append(f"{refused:,} refused: " + ", ".join(f"{c} {n:,}" for c, n in sorted(self.refused.items())))
        if self.warned:
            warned = sum(self.warned.values())
            parts.append(f"{warned:,} warned: " + ", ".join(f"{c} {n:,}" for c, n in sorted(self.warned.items())))
        noun = "tool call" if self.calls == 1 else "tool calls"
        return f"{self.calls:,} {noun} ({'; '.join(parts)})"


class Summarised(Protocol):
    def summarise(self, stretch: Stretch) -> None: ...


T = TypeVar("T", bound=Summarised)


class Capped(Generic[T]):
    """A list that keeps its first ``head`` and last ``tail`` items and sums
    the ones between into a ``Stretch``."""

    __slots__ = ("_head", "_tail", "head", "left_out", "tail")

    def __init__(self, head: int, tail: int) -> None:
        self._head, self._tail = head, tail
        self.head: list[T] = []
        self.tail: deque[T] = deque()
        self.left_out: Stretch | None = None

    def add(self, item: T) -> None:
        if len(self.head) < self._head:
            self.head.append(item)
            return
        self.tail.append(item)
        if len(self.tail) > self._tail:
            dropped = self.tail.popleft()
            if self.left_out is None:
                self.left_out = Stretch()
            dropped.summarise(self.left_out)

    def listing(self) -> Listing[T]:
        return Listing(tuple(self.head), self.left_out, tuple(self.tail))

    def __len__(self) -> int:
        return len(self.head) + len(self.tail)


@dataclass(frozen=True, slots=True)
class Listing(Generic[T]):
    """A bounded list as the page shows it: the first items, the stretch
    left out (``None`` when nothing was), the last items."""

    head: tuple[T, ...]
    left_out: Stretch | None
    tail: tuple[T, ...]

    @property
    def items(self) -> tuple[T, ...]:
        return self.head + self.tail


# --------------------------------------------------------------------------
# What the report lists


@dataclass(slots=True)
class Entry:
    """One notable event of the timeline (a tool call carries its verdict
    and result; ``events`` counts the events it stands for)."""

    seq: int
    at: int
    kind: str
    label: str
    detail: str = ""
    verdict: str = ""
    code: str = ""
    reason: str = ""
    ok: bool | None = None
    events: int = 1

    def summarise(self, stretch: Stretch) -> None:
        stretch.items += 1
        stretch.events += self.events
        stretch.span(self.seq, self.seq)
        stretch.kinds[self.kind] += 1
        if self.kind == TOOL_CALL:
            stretch.calls += 1
            if self.verdict == "refused":
                bump(stretch.refused, self.code)
            elif self.verdict == "warned":
                bump(stretch.warned, self.code)


#: How many mode bands a block keeps before it merges the rest into its last.
BANDS = 48


@dataclass(slots=True)
class Block:
    """A turn (``turn`` its number) or a stretch of events between turns
    (``turn`` ``None``): its totals, its mode bands and its notable events."""

    turn: int | None
    first_seq: int
    first_at: int
    last_seq: int = 0
    last_at: int = 0
    events: int = 0
    closed: bool = False
    requests: int = 0
    steps: int = 0
    calls: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    warned: Counter[str] = field(default_factory=Counter)
    #: (plan mode, requests) per run of requests made in one mode.
    bands: list[list[int]] = field(default_factory=list)
    items: Capped[Entry] = field(default_factory=lambda: Capped(40, 12))

    def band(self, plan_mode: bool) -> None:
        if self.bands and (self.bands[-1][0] == int(plan_mode) or len(self.bands) >= BANDS):
            self.bands[-1][1] += 1
        else:
            self.bands.append([int(plan_mode), 1])

    def summarise(self, stretch: Stretch) -> None:
        stretch.items += 1
        stretch.events += self.events
        stretch.span(self.first_seq, self.last_seq, self.turn)
        stretch.calls += self.calls
        for code, n in self.refused.items():
            bump(stretch.refused, code, n)
        for code, n in self.warned.items():
            bump(stretch.warned, code, n)


@dataclass(frozen=True, slots=True)
class DiffLine:
    """One line of a plan change: the ``PlanSpec`` field, ``+`` (added), ``-``
    (removed) or ``~`` (changed to), and the text."""

    field: str
    sign: str
    text: str


#: How many lines a revision's change keeps.
DIFF_LINES = 40


def _spec_items(spec: PlanSpec) -> dict[str, tuple[str, ...]]:
    scope = spec.scope
    return {
        "goal": (spec.goal,),
        "steps": spec.steps,
        "constraints": spec.constraints,
        "verify": spec.verify,
        "todos": tuple(f"{t.id}: {t.text} [{t.status}]" for t in spec.todos),
        "open_questions": tuple(q.text + (" (blocking)" if q.blocking else "") for q in spec.open_questions),
        "scope": () if scope is None else (
            *(f"path {p}" for p in scope.paths), *(f"effect {e}" for e in scope.effects)),
    }


def spec_diff(old: PlanSpec | None, new: PlanSpec) -> tuple[DiffLine, ...]:
    """The change from ``old`` to ``new``, field by field (every field of
    ``new`` as added when there is no ``old``), at most ``DIFF_LINES`` lines."""
    lines: list[DiffLine] = []
    before = {} if old is None else _spec_items(old)
    for name, items in _spec_items(new).items():
        was = before.get(name, ())
        if was == items:
            continue
        if name == "goal" and was:
            lines.append(DiffLine(name, "-", excerpt(was[0])))
            lines.append(DiffLine(name, "+", excerpt(items[0])))
            continue
        kept = set(items)
        lines.extend(DiffLine(name, "-", excerpt(text)) for text in was if text not in kept)
        old_set = set(was)
        lines.extend(DiffLine(name, "+", excerpt(text)) for text in items if text not in old_set)
        if not any(line.field == name for line in lines):  # same items, another order
            lines.append(DiffLine(name, "~", "reordered: " + excerpt("; ".join(items))))
    if len(lines) > DIFF_LINES:
        more = len(lines) - DIFF_LINES + 1
        lines = [*lines[: DIFF_LINES - 1], DiffLine("", "…", f"{more} more lines")]
    return tuple(lines)


@dataclass(slots=True)
class Revision:
    """One revision of a plan: how it was made, its statuses since, who
    approved it and when, and its change from the revision before."""

    plan_id: str
    revision: int
    action: str
    seq: int
    at: int
    mode: str
    goal: str
    status: str
    diff: tuple[DiffLine, ...]
    #: (status after, action, seq, at), at most ``STATUS_HISTORY``.
    history: list[tuple[str, str, int, int]] = field(default_factory=list)
    approved: tuple[int, int, str] | None = None
    rejected: list[tuple[int, str]] = field(default_factory=list)

    def summarise(self, stretch: Stretch) -> None:
        stretch.items += 1
        stretch.span(self.seq, self.history[-1][2] if self.history else self.seq)


#: How many status changes one revision lists.
STATUS_HISTORY = 24


@dataclass(slots=True)
class _InTurn:
    """An item recorded at ``seq`` (time ``at``) in turn ``turn`` (``None``
    outside a turn); a stretch left out counts it and spans its seq and turn."""

    seq: int
    at: int
    turn: int | None

    def summarise(self, stretch: Stretch) -> None:
        stretch.items += 1
        stretch.span(self.seq, self.seq, self.turn)


@dataclass(slots=True)
class Review(_InTurn):
    """One ``exit_plan_mode`` call: the plan put to the reviewer, the plan
    event it recorded, and the answer."""

    call_id: str
    question: str
    plan: str = ""
    answer: str = "no answer recorded"
    outcome: str = "open"


@dataclass(slots=True)
class Verification(_InTurn):
    """A verify step of an executing plan: ``verify`` (entering it),
    ``verify-fail`` or ``complete``, with its note."""

    plan_id: str
    revision: int
    action: str
    note: str


@dataclass(slots=True)
class GoalEntry:
    """One goal of the session: rounds against its budget, and its phase."""

    goal_id: str
    objective: str
    created_seq: int
    max_rounds: int
    rounds: int = 0
    phase: str = "active"
    reason: str = ""
    changes: int = 1
    cleared: bool = False

    def summarise(self, stretch: Stretch) -> None:
        stretch.items += 1
        stretch.span(self.created_seq, self.created_seq)


@dataclass(slots=True)
class GoalChangeEntry:
    """One ``goal/change``: the operation, the goal after it, and who may
    have asked for it."""

    seq: int
    at: int
    operation: str
    goal_id: str
    revision: int
    phase: str
    rounds: int
    max_rounds: int
    reason: str
    actor: str

    def summarise(self, stretch: Stretch) -> None:
        stretch.items += 1
        stretch.span(self.seq, self.seq)
        stretch.kinds[self.operation] += 1


def goal_actors(operation: str, code: str | None = None) -> tuple[str, ...]:
    """Who may have asked for a goal change: the actors the kernel's
    ``AUTHORITY`` table lets perform ``operation`` (a block with a code
    reserved for the system: the system alone)."""
    return tuple(
        actor for actor, allowed in AUTHORITY.items()
        if operation in allowed and not (operation == "block" and actor != "system" and code in SYSTEM_BLOCK_CODES)
    )


@dataclass(slots=True)
class MachineUse:
    """How often each edge of a machine was taken, and by which events
    (``(session or None, seq)``, the first ``SEQS_PER_EDGE``); ``extra`` are
    edges taken that the table does not have, with why."""

    counts: Counter[Edge] = field(default_factory=Counter)
    seqs: dict[Edge, list[tuple[str | None, int]]] = field(default_factory=dict)
    extra: dict[Edge, str] = field(default_factory=dict)

    def take(self, edge: Edge, session: str | None, seq: int, in_table: bool) -> None:
        self.counts[edge] += 1
        listed = self.seqs.setdefault(edge, [])
        if len(listed) < SEQS_PER_EDGE:
            listed.append((session, seq))
        if not in_table and edge not in self.extra:
            self.extra[edge] = edge.note or extra_note(edge)

    def merge(self, other: MachineUse, session: str) -> None:
        for edge, count in other.counts.items():
            self.counts[edge] += count
            listed = self.seqs.setdefault(edge, [])
            for _, seq in other.seqs.get(edge, ()):
                if len(listed) >= SEQS_PER_EDGE:
                    break
                listed.append((session, seq))
        for edge, note in other.extra.items():
            self.extra.setdefault(edge, note)

    def coverage(self, graph: Graph, machine: str) -> tuple[int, int]:
        """(edges of the table taken, edges of the table a log can show)."""
        shown = [e for e in graph.edges if observable(machine, e)]
        return sum(1 for e in shown if self.counts.get(e)), len(shown)


@dataclass(frozen=True, slots=True)
class BadEvent:
    """The first bad record: its seq (``None`` when unreadable), its line in
    a JSON Lines log, the rule it breaks and the detail, and an excerpt of
    the event when it could be read."""

    position: int | None
    line: int | None
    rule: str
    detail: str
    kind: str = ""
    at: int | None = None
    payload: str = ""


@dataclass(frozen=True, slots=True)
class Report:
    """Everything the page shows about one session."""

    session: str
    events: int
    turns: int
    requests: int
    first_at: int | None
    last_at: int | None
    bad: BadEvent | None
    kinds: Mapping[str, int]
    calls: int
    refused: Mapping[str, int]
    warned: Mapping[str, int]
    timeline: Listing[Block]
    revisions: Listing[Revision]
    reviews: Listing[Review]
    verifications: Listing[Verification]
    goals: Listing[GoalEntry]
    goal_changes: Listing[GoalChangeEntry]
    machines: Mapping[str, MachineUse]
    graphs: Mapping[str, Graph]
    mode: str
    plan: str
    goal: str
    provenance: ForkProvenance | None = None
    #: What ``planfold audit`` found beyond the strict replay (a database's
    #: stored projection, snapshot and provenance against the log): ``None``
    #: when nothing more was audited (a JSON Lines log), else its findings
    #: (none when everything matches) and the snapshot's status.
    audit: Audited | None = None
    #: Every event as the page embeds it (``events.EventIndex``).
    index: EventIndex | None = None
    #: The database the session was read from, as given (for the commands the page offers).
    origin: str | None = None
    #: Sessions of the same database forked from this one: (session, seq forked at).
    forks: tuple[tuple[str, int], ...] = ()
    usage: UsageReport | None = None

    @property
    def ok(self) -> bool:
        return self.bad is None and (self.audit is None or not self.audit.mismatches)


@dataclass(frozen=True, slots=True)
class Audited:
    """What ``planfold audit`` says of a stored session beyond its strict
    replay: every way its stored projection, snapshot or provenance differs
    from its log (none when they match), and the snapshot's status."""

    mismatches: tuple[str, ...]
    snapshot: str


def with_audit(report: Report, audited: Audited) -> Report:
    """``report`` with the audit of its stored session."""
    return replace(report, audit=audited)


# --------------------------------------------------------------------------
# The builder


class ReportBuilder:
    """Looks at every event of one session with the strict fold's state just
    before and after it (``observe``), then makes the ``Report`` (``finish``)."""

    def __init__(
        self,
        session: str,
        provenance: ForkProvenance | None = None,
        index: IndexBuilder | None = None,
        costs: CostTable | None = None,
    ) -> None:
        self.session = session
        self.index = index
        self.provenance = provenance
        self.usage = UsageBuilder(costs)
        self.graphs = machine_graphs()
        self._edges = {name: frozenset(graph.edges) for name, graph in self.graphs.items()}
        self.machines = {name: MachineUse() for name in MACHINES}
        self.events = 0
        self.requests = 0
        self.first_at: int | None = None
        self.last_at: int | None = None
        self.kinds: Counter[str] = Counter()
        self.calls = 0
        self.refused: Counter[str] = Counter()
        self.warned: Counter[str] = Counter()
        self.timeline: Capped[Block] = Capped(24, 12)
        self.revisions: Capped[Revision] = Capped(16, 16)
        self.reviews: Capped[Review] = Capped(16, 8)
        self.verifications: Capped[Verification] = Capped(16, 8)
        self.goals: Capped[GoalEntry] = Capped(16, 8)
        self.goal_changes: Capped[GoalChangeEntry] = Capped(24, 24)
        self.bad: BadEvent | None = None
        self._block: Block | None = None
        self._calls: dict[str, Entry] = {}
        self._review: Review | None = None
        self._verifying_call: str | None = None
        self._revision: Revision | None = None
        self._spec: PlanSpec | None = None
        self._goal: GoalEntry | None = None
        self._state = SessionState()

    # -- the pass

    def observe(self, before: SessionState, after: SessionState, event: Event) -> None:
        """Take ``event``, which the strict fold took from ``before`` to ``after``."""
        self._state = after
        self.events += 1
        self.kinds[event.kind] += 1
        if self.first_at is None:
            self.first_at = event.at
        self.last_at = event.at
        for machine, edges in taken(before, after, event).items():
            for edge in edges:
                self.machines[machine].take(edge, None, event.seq, edge in self._edges[machine])
        kind = event.kind
        if kind == TURN_START:
            self._close_block()
            self._block = Block(after.turns.turn, event.seq, event.at)
        block = self._block
        if block is None:
            block = self._block = Block(None, event.seq, event.at)
        block.events += 1
        block.last_seq, block.last_at = event.seq, event.at
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, block, before, after, event)
        if self.index is not None:
            tool, rule = _tool_and_rule(event)
            self.index.add(event, after, block.turn, tool, rule)
        self.usage.observe(after, event)
        if kind == TURN_END:
            block.closed = True
            self._close_block()

    def fail(self, bad: BadEvent) -> None:
        """The fold stopped at ``bad``: nothing after it is read."""
        self.bad = bad

    def _close_block(self) -> None:
        if self._block is not None:
            self.timeline.add(self._block)
            self._block = None
            self._calls.clear()
            self._review = None

    def _entry(self, block: Block, entry: Entry) -> Entry:
        block.items.add(entry)
        return entry

    # -- per kind

    def _header(self, block: Block, before: SessionState, after: SessionState, event: Event) -> None:
        self.requests += 1
        block.requests += 1
        block.steps = after.turns.step
        block.band(after.plan_mode)

    def _tool_call(self, block: Block, before: SessionState, after: SessionState, event: Event) -> None:
        call = read_tool_call(event.payload)
        call_id, tool, arguments = call.id, call.name, thaw_json(call.recorded_arguments)
        self.calls += 1
        block.calls += 1
        entry = self._entry(block, Entry(event.seq, event.at, TOOL_CALL, tool, _json_excerpt(arguments),
                                         verdict="allowed"))
        if len(self._calls) >= 256:  # calls never answered: forget the oldest
            self._calls.pop(next(iter(self._calls)))
        self._calls[call_id] = entry
        if tool == "exit_plan_mode":
            spec = arguments.get("plan_spec") if isinstance(arguments, Mapping) else None
            goal = spec.get("goal") if isinstance(spec, Mapping) else None
            question = excerpt(goal) if isinstance(goal, str) else _json_excerpt(arguments)
            self._review = Review(event.seq, event.at, block.turn, call_id, question)
            self.reviews.add(self._review)
        self._verifying_call = call_id if tool == "report_verification" else None

    def _tool_notice(self, block: Block, before: SessionState, after: SessionState, event: Event) -> None:
        notice = read_tool_notice(event.payload)
        code, call_id = notice.code, notice.call_id
        refused = event.kind == TOOL_REFUSED
        bump(self.refused if refused else self.warned, code)
        bump(block.refused if refused else block.warned, code)
        entry = self._calls.get(call_id)
        if entry is not None:
            entry.verdict = "refused" if refused else "warned"
            entry.code, entry.reason = code, excerpt(notice.reason)
            entry.events += 1
        review = self._review
        if refused and review is not None and review.call_id == call_id:
            review.outcome, review.answer = "refused", f"refused by the gate [{code}]"

    def _tool_result(self, block: Block, before: SessionState, after: SessionState, event: Event) -> None:
        result = read_tool_result(event.payload)
        call_id, ok, output = result.call_id, result.ok, result.output
        entry = self._calls.pop(call_id, None)
        if entry is not None:
            entry.ok = ok
            entry.events += 1
            entry.reason = entry.reason or ("" if ok else excerpt(output, 120))
        review = self._review
        if review is not None and review.call_id == call_id:
            if ok and _approved(output):
                review.outcome, review.answer = "approved", "Approve"
            else:
                if review.outcome == "open":
                    review.outcome = _refusal(output)
                review.answer = excerpt(output)
            self._review = None

    def _message(self, block: Block, before: SessionState, after: SessionState, event: Event) -> None:
        if event.kind == ASSISTANT_MESSAGE:
            text = read_assistant_message(event.payload).text
            if text:
                self._entry(block, Entry(event.seq, event.at, event.kind, "assistant", excerpt(text)))
            return
        message = read_message(event.payload)
        text, source = message.text, message.source
        if isinstance(source, GoalSource):
            label = f"goal {source.goal_id} round {source.round}"
            if self._goal is not None and self._goal.goal_id == source.goal_id:
                current = after.goal.current
                self._goal.rounds = current.rounds_started if current is not None else self._goal.rounds
        elif source is not None:
            label = f"plugin {source.plugin}"
        else:
            label = "user"
        self._entry(block, Entry(event.seq, event.at, event.kind, label, excerpt(text)))

    def _plan_mode(self, block: Block, before: SessionState, after: SessionState, event: Event) -> None:
        label = "plan mode on" if after.plan_mode else "plan mode off"
        how = "appended at a pre-step" if before.turns.open else "between turns"
        self._entry(block, Entry(event.seq, event.at, event.kind, label, how))

    def _plan_artifact(self, block: Block, before: SessionState, after: SessionState, event: Event) -> None:
        act = read_plan_action(event.payload)
        action, plan_id, revision, note = act.action, act.plan_id, act.revision, act.note
        current = after.plan.current
        status = current.status if current is not None else ""
        self._entry(block, Entry(event.seq, event.at, event.kind, f"plan {action}",
                                 f"{plan_id} rev {revision} → {status}" + (f": {excerpt(note)}" if note else "")))
        mode = "plan" if before.plan_mode else "build"
        review = self._review
        if action in ("draft", "bootstrap", "rewrite") and current is not None:
            same_plan = before.plan.current is not None and before.plan.current.id == current.id
            diff = spec_diff(self._spec if same_plan else None, current.spec)
            self._revision = Revision(current.id, current.revision, action, event.seq, event.at, mode,
                                      excerpt(current.spec.goal), status, diff)
            self.revisions.add(self._revision)
            self._spec = current.spec
            if review is not None:
                review.plan = f"{current.id} rev {current.revision}"
        elif self._revision is not None and current is not None:
            rev = self._revision
            rev.status = status
            if len(rev.history) < STATUS_HISTORY:
                rev.history.append((status, action, event.seq, event.at))
            if action == "approve":
                by = (f"the reviewer, answering exit_plan_mode call {review.call_id} (turn {review.turn})"
                      if review is not None else "outside a review (the host or an API call)")
                rev.approved = (event.seq, event.at, by)
            elif action == "reject":
                rev.rejected.append((event.seq, excerpt(note) if note else "no feedback"))
                del rev.rejected[:-8]
        if review is not None and action in ("approve", "reject"):
            review.outcome = "approved" if action == "approve" else "keep-planning"
        if action in ("verify", "verify-fail", "complete"):
            if not note and self._verifying_call is not None:
                call = self._calls.get(self._verifying_call)
                note = call.detail if call is not None else None
            self.verifications.add(Verification(event.seq, event.at, block.turn, plan_id, revision, action,
                                                excerpt(note) if note else ""))

    def _goal_change(self, block: Block, before: SessionState, after: SessionState, event: Event) -> None:
        change = read_goal_change(event.payload)
        operation = change.operation
        current = after.goal.current
        if current is None:
            cleared = change.cleared if isinstance(change, ClearChange) else None
            goal_id = "" if cleared is None else cleared.id
            revision = 0 if cleared is None else cleared.revision
            phase, rounds, cap, code = "cleared", 0, 0, ""
            if self._goal is not None:
                self._goal.cleared, self._goal.phase = True, "cleared"
                rounds, cap = self._goal.rounds, self._goal.max_rounds
        else:
            goal_id, revision, phase = current.id, current.revision, current.phase
            rounds, cap = current.rounds_started, current.max_rounds
            code = current.blocked_reason.code if current.blocked_reason is not None else ""
            if operation == "create":
                self._goal = GoalEntry(current.id, excerpt(current.objective), event.seq, cap)
                self.goals.add(self._goal)
            elif self._goal is not None:
                self._goal.changes += 1
            if self._goal is not None:
                goal = self._goal
                goal.rounds, goal.max_rounds, goal.phase = rounds, cap, phase
                goal.objective = excerpt(current.objective)
                goal.reason = "" if current.blocked_reason is None else (
                    f"{current.blocked_reason.code}: {excerpt(current.blocked_reason.message, 120)}")
        actors = goal_actors(operation, code or None)
        actor = " or ".join(actors) if actors else "nobody the kernel allows"
        self.goal_changes.add(GoalChangeEntry(event.seq, event.at, operation, goal_id, revision, phase, rounds, cap,
                                              code, actor))
        self._entry(block, Entry(event.seq, event.at, event.kind, f"goal {operation}",
                                 f"{goal_id} rev {revision} → {phase}, rounds {rounds}/{cap}"))

    # -- the end

    def finish(self) -> Report:
        """The report of everything observed (the open block included)."""
        if self._block is not None:
            self.timeline.add(self._block)
            self._block = None
        state = self._state
        plan = state.plan.current
        goal = state.goal.current
        return Report(
            session=self.session,
            events=self.events,
            turns=state.turns.turn,
            requests=self.requests,
            first_at=self.first_at,
            last_at=self.last_at,
            bad=self.bad,
            kinds=dict(self.kinds),
            calls=self.calls,
            refused=dict(self.refused),
            warned=dict(self.warned),
            timeline=self.timeline.listing(),
            revisions=self.revisions.listing(),
            reviews=self.reviews.listing(),
            verifications=self.verifications.listing(),
            goals=self.goals.listing(),
            goal_changes=self.goal_changes.listing(),
            machines=self.machines,
            graphs=self.graphs,
            mode=state.agent_mode,
            plan="none" if plan is None else f"{plan.id} rev {plan.revision}, {plan.status}",
            goal="none" if goal is None else (
                f"{goal.id} rev {goal.revision}, {goal.phase}, rounds {goal.rounds_started}/{goal.max_rounds}"),
            provenance=self.provenance,
            index=None if self.index is None else self.index.finish(),
            usage=self.usage.finish(),
        )


_HANDLERS = {
    REQUEST_HEADER: ReportBuilder._header,
    TOOL_CALL: ReportBuilder._tool_call,
    TOOL_REFUSED: ReportBuilder._tool_notice,
    TOOL_WARNING: ReportBuilder._tool_notice,
    TOOL_RESULT: ReportBuilder._tool_result,
    USER_MESSAGE: ReportBuilder._message,
    ASSISTANT_MESSAGE: ReportBuilder._message,
    PLAN_MODE: ReportBuilder._plan_mode,
    PLAN_ARTIFACT: ReportBuilder._plan_artifact,
    GOAL_CHANGE: ReportBuilder._goal_change,
}


def _tool_and_rule(event: Event) -> tuple[str, str]:
    """The tool a tool event names, and the rule code of a refusal or warning
    (the fold accepted the event, so its payload has them)."""
    kind = event.kind
    if kind not in _TOOL_KINDS:
        return "", ""
    payload = event.payload
    tool, code = payload.get("tool"), payload.get("code") if kind in (TOOL_REFUSED, TOOL_WARNING) else ""
    return (tool if isinstance(tool, str) else ""), (code if isinstance(code, str) else "")


_TOOL_KINDS = frozenset({TOOL_CALL, TOOL_REFUSED, TOOL_WARNING, TOOL_RESULT})


def _bad_event(stop: FoldStop) -> BadEvent:
    event = stop.event
    if event is None:
        return BadEvent(stop.position, stop.line, stop.rule, stop.detail)
    return BadEvent(stop.position, stop.line, stop.rule, stop.detail, excerpt(event.kind, 80), event.at,
                    _json_excerpt(event.payload, 600))


def build_report(
    session: str,
    records: Iterable[tuple[int | None, Event]],
    provenance: ForkProvenance | None = None,
    *,
    limit: int = LIMIT,
    budget: int = BUDGET,
    around: int | None = None,
    events: bool = True,
    costs: CostTable | None = None,
) -> Report:
    """The report of ``session`` from its ``(line, event)`` records (``line``
    is the record's line in a JSON Lines log, ``None`` from a database),
    folded strictly one at a time as they are read; the fold stops at the
    first bad record, which the report names. A fork's ``provenance`` (as
    its store keeps it) is checked as ``audit`` checks it: its first ``seq``
    events must be there and hash to its ``prefix_sha256``
    (``provenance-mismatch`` otherwise). Every event is embedded as
    ``events.EventIndex`` says: payloads whole up to ``limit`` bytes each
    and ``budget`` compressed bytes in all, and the ``events.AROUND``
    events either side of seq ``around`` whole whatever their size;
    ``events`` False embeds none (a database's coverage page lists no event);
    ``costs`` prices the model calls' tokens (``adapters.report.usage``)."""
    builder = ReportBuilder(session, provenance, IndexBuilder(limit, budget, around) if events else None, costs)
    prefix = None if provenance is None else hashlib.sha256()

    def observed(before: SessionState, after: SessionState, event: Event) -> None:
        builder.observe(before, after, event)
        if prefix is not None and provenance is not None and event.seq <= provenance.seq:
            prefix.update(encode_event(event) + b"\n")

    _, stop = fold_records(records, observed)
    if stop is not None:
        builder.fail(_bad_event(stop))
    report = builder.finish()
    if prefix is not None and provenance is not None and report.ok:
        if provenance.seq > report.events:
            return with_fork_record(report, provenance)
        if prefix.hexdigest() != provenance.prefix_sha256:
            detail = (f"the first {provenance.seq} events hash to {prefix.hexdigest()}, not to the fork's "
                      f"prefix_sha256 {provenance.prefix_sha256}")
            return replace(report, bad=BadEvent(None, None, "provenance-mismatch", detail))
    return report


def with_fork_record(report: Report, provenance: ForkProvenance | None) -> Report:
    """``report`` of a JSON Lines log with the log's fork record: shown, and
    a bad log (``provenance-mismatch``) when it claims more events than the
    log holds, as ``replay`` judges it (its hash is checked where the log is
    imported)."""
    if provenance is None:
        return report
    report = replace(report, provenance=provenance)
    if report.ok and provenance.seq > report.events:
        detail = f"the fork record's seq {provenance.seq} is past the log's {report.events} events"
        report = replace(report, bad=BadEvent(None, report.events + 1, "provenance-mismatch", detail))
    return report


# --------------------------------------------------------------------------
# Many sessions


@dataclass(slots=True)
class SessionLine:
    """One session of a database, as the coverage page lists it."""

    session: str
    events: int
    turns: int
    bad: BadEvent | None
    mismatches: tuple[str, ...] = ()

    def summarise(self, stretch: Stretch) -> None:
        stretch.items += 1
        stretch.events += self.events


@dataclass(frozen=True, slots=True)
class CoverageReport:
    """Every session of a database, and the transitions they took together."""

    source: str
    sessions: int
    events: int
    bad: int
    listed: Listing[SessionLine]
    machines: Mapping[str, MachineUse]
    graphs: Mapping[str, Graph]


class Coverage:
    """Adds up the machines of many sessions' reports (``add``)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.graphs = machine_graphs()
        self.machines = {name: MachineUse() for name in MACHINES}
        self.sessions = 0
        self.events = 0
        self.bad = 0
        self.listed: Capped[SessionLine] = Capped(40, 20)

    def add(self, report: Report) -> None:
        self.sessions += 1
        self.events += report.events
        self.bad += 0 if report.ok else 1
        mismatches = () if report.audit is None else report.audit.mismatches
        self.listed.add(SessionLine(report.session, report.events, report.turns, report.bad, mismatches))
        for name, use in report.machines.items():
            self.machines[name].merge(use, report.session)

    def finish(self) -> CoverageReport:
        return CoverageReport(self.source, self.sessions, self.events, self.bad, self.listed.listing(),
                              self.machines, self.graphs)
