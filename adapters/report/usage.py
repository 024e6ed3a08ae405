"""What the model calls of a session cost: latency, tokens and money, per
step, per turn and for the whole session, as ``planfold report`` shows them.

Theory of operation
-------------------
Each ``assistant/message`` may carry the usage of the model call behind it
(``kernel.log.ModelUsage``): the latency its model adapter measured and the
prompt, completion and cached tokens its server reported. ``UsageBuilder``
reads them as the report's strict fold passes each event, with the turn and
step the fold is in, and sums them: per step (one row per assistant message
with usage), per turn and per session. A number left out of a message counts
as unknown, never as zero: each total says how many calls reported it
(``latency_calls``, ``token_calls``), so a page never passes off a partial
sum as a whole one.

Money comes from an optional ``CostTable`` (the deployment's prices per
million tokens: prompt, completion and cached, the cached price defaulting
to the prompt price). Cached tokens are part of the prompt tokens, so a
call costs ``(prompt - cached) * prompt + cached * cached + completion *
completion``, per million. A cost table is a small TOML or JSON file
(``load_costs``)::

    currency = "USD"
    [per_million_tokens]
    prompt = 2.5
    completion = 10.0
    cached = 1.25

and is refused as a whole, with every problem and its path, when any key is
unknown or any price is not a finite non-negative number
(``CostTableError``, ``cost-table-invalid``).

Totals are kept for every turn and the session whatever the length of the
log; the rows the page lists are bounded (the first and last
``ROWS_KEPT`` steps and turns, with the number left out between them), so a
report's page and memory stay bounded as the log grows.
"""

from __future__ import annotations

import json
import math
import tomllib
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Generic, NewType, TypeVar

from ...kernel.log import ASSISTANT_MESSAGE, Event, ModelUsage, read_assistant_message
from ...kernel.session import SessionState, fold_more
from ..errors import AdapterError
from ..structuring import exact_converter, problems

__all__ = [
    "ROWS_KEPT",
    "CostTable",
    "CostTableError",
    "Prices",
    "Rows",
    "StepUsage",
    "TurnUsage",
    "UsageBuilder",
    "UsageReport",
    "UsageTotals",
    "load_costs",
    "parse_costs",
    "render_usage",
    "usage_of_events",
]

T = TypeVar("T")

#: How many rows of steps (and of turns) the page lists at each end.
ROWS_KEPT = 200


class CostTableError(AdapterError):
    """A cost table could not be read: the deployment's file is at fault.
    ``problems`` lists everything wrong with it."""

    code = "cost-table-invalid"

    def __init__(self, problems: Iterable[str], source: str) -> None:
        self.problems = tuple(problems)
        super().__init__(f"{source} is not a valid cost table: " + "; ".join(self.problems))
        self.source = source


#: A price per million tokens: a finite number, not negative.
Price = NewType("Price", float)


@dataclass(frozen=True, slots=True)
class Prices:
    """Prices per million tokens; ``cached`` (None: the prompt price) is the
    price of the prompt tokens the server served from its cache."""

    prompt: Price
    completion: Price
    cached: Price | None = None


@dataclass(frozen=True, slots=True)
class CostTable:
    """The deployment's prices, in ``currency``."""

    per_million_tokens: Prices
    currency: str = "USD"

    def cost(self, prompt: int, completion: int, cached: int) -> float:
        """What ``prompt`` tokens (of which ``cached`` were cached) and
        ``completion`` tokens cost."""
        prices = self.per_million_tokens
        cached_price = prices.prompt if prices.cached is None else prices.cached
        cached = min(cached, prompt)
        return ((prompt - cached) * prices.prompt + cached * cached_price + completion * prices.completion) / 1e6


def _price(value: object, _: object) -> Price:
    if type(value) not in (int, float) or not isinstance(value, int | float) or not 0 <= value < math.inf:
        raise ValueError(f"expected a non-negative number, got {value!r}")
    return Price(float(value))


_CONVERTER = exact_converter()
_CONVERTER.register_structure_hook(Price, _price)


def parse_costs(data: object, source: str = "cost table") -> CostTable:
    """A cost table from plain data; raises ``CostTableError`` listing every
    problem (an empty currency too)."""
    try:
        table: CostTable = _CONVERTER.structure(data, CostTable)
    except Exception as exc:  # every structuring failure is a problem of the table
        raise CostTableError(problems(exc, "costs"), source) from exc
    if not table.currency.strip():
        raise CostTableError(["costs.currency: expected a non-blank name"], source)
    return table


def load_costs(path: str | Path) -> CostTable:
    """A cost table from a ``.toml`` or ``.json`` file; raises
    ``CostTableError`` for another suffix, an unreadable file or a bad table."""
    file = Path(path)
    suffix = file.suffix.lower()
    if suffix not in (".toml", ".json"):
        raise CostTableError([f"unknown suffix {file.suffix!r} (use .toml or .json)"], file.name)
    try:
        text = file.read_text(encoding="utf-8")
        data: object = tomllib.loads(text) if suffix == ".toml" else json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise CostTableError([f"cannot read it: {err}"], file.name) from err
    return parse_costs(data, file.name)


@dataclass(slots=True)
class UsageTotals:
    """Sums over some model calls: how many (``calls``), and of those how
    many reported a latency (``latency_calls``) and tokens
    (``token_calls``); the sums of what they reported; ``cost`` when a cost
    table priced them."""

    calls: int = 0
    latency_calls: int = 0
    token_calls: int = 0
    latency_ms: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost: float | None = None

    def add(self, usage: ModelUsage, cost: float | None) -> None:
        self.calls += 1
        if usage.latency_ms is not None:
            self.latency_calls += 1
            self.latency_ms += usage.latency_ms
        counts = (usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens)
        if any(count is not None for count in counts):
            self.token_calls += 1
        self.prompt_tokens += usage.prompt_tokens or 0
        self.completion_tokens += usage.completion_tokens or 0
        self.cached_tokens += usage.cached_tokens or 0
        if cost is not None:
            self.cost = (self.cost or 0.0) + cost


@dataclass(frozen=True, slots=True)
class StepUsage:
    """One model call's usage: the ``seq`` of its assistant message, its
    turn (None outside a turn) and step, and what it cost (``cost``: None
    without a cost table or tokens)."""

    seq: int
    turn: int | None
    step: int
    usage: ModelUsage
    cost: float | None


@dataclass(slots=True)
class TurnUsage:
    """The totals of one turn's model calls."""

    turn: int | None
    first_seq: int
    totals: UsageTotals = field(default_factory=UsageTotals)


@dataclass(frozen=True, slots=True)
class Rows(Generic[T]):
    """Rows as the page lists them: the first ones, how many were left out,
    the last ones."""

    head: tuple[T, ...]
    left_out: int
    tail: tuple[T, ...]

    def __iter__(self) -> Iterator[T]:
        yield from self.head
        yield from self.tail


class _Kept(Generic[T]):
    """The first and last ``keep`` of the rows added, and the count between."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.head: list[T] = []
        self.tail: deque[T] = deque(maxlen=keep)
        self.added = 0

    def add(self, row: T) -> None:
        self.added += 1
        if len(self.head) < self.keep:
            self.head.append(row)
        else:
            self.tail.append(row)

    def rows(self) -> Rows[T]:
        return Rows(tuple(self.head), self.added - len(self.head) - len(self.tail), tuple(self.tail))


@dataclass(frozen=True, slots=True)
class UsageReport:
    """The usage of a session: the session's totals, each turn's and each
    step's (bounded lists), and the cost table's currency when priced."""

    session: UsageTotals
    turns: Rows[TurnUsage]
    steps: Rows[StepUsage]
    currency: str | None = None

    @property
    def recorded(self) -> bool:
        """Whether any model call of the session recorded its usage."""
        return self.session.calls > 0


class UsageBuilder:
    """Sums usage as a strict fold passes the events (``observe``), then
    makes the ``UsageReport`` (``finish``)."""

    def __init__(self, costs: CostTable | None = None, keep: int = ROWS_KEPT) -> None:
        self.costs = costs
        self.session = UsageTotals()
        self._steps: _Kept[StepUsage] = _Kept(keep)
        self._turns: _Kept[TurnUsage] = _Kept(keep)
        self._turn: TurnUsage | None = None

    def observe(self, after: SessionState, event: Event) -> None:
        """Take ``event``, which the strict fold took to ``after``."""
        if event.kind != ASSISTANT_MESSAGE:
            return
        usage = read_assistant_message(event.payload).usage
        if usage is None:
            return
        turns = after.turns
        turn = turns.turn if turns.open else None
        if self._turn is None or self._turn.turn != turn or turn is None:
            self._turn = TurnUsage(turn, event.seq)
            self._turns.add(self._turn)
        cost = self._cost(usage)
        self._steps.add(StepUsage(event.seq, turn, turns.step, usage, cost))
        self._turn.totals.add(usage, cost)
        self.session.add(usage, cost)

    def _cost(self, usage: ModelUsage) -> float | None:
        counts = (usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens)
        if self.costs is None or all(count is None for count in counts):
            return None
        return self.costs.cost(usage.prompt_tokens or 0, usage.completion_tokens or 0, usage.cached_tokens or 0)

    def finish(self) -> UsageReport:
        currency = None if self.costs is None else self.costs.currency
        return UsageReport(self.session, self._turns.rows(), self._steps.rows(), currency)


def usage_of_events(
    events: Iterable[Event], costs: CostTable | None = None, keep: int = ROWS_KEPT
) -> UsageReport:
    """The usage report of a well-formed log (folded strictly here; raises
    ``ReplayError`` at the first bad event)."""
    builder = UsageBuilder(costs, keep)
    state = SessionState()
    for event in events:
        state = fold_more(state, (event,))
        builder.observe(state, event)
    return builder.finish()


# --------------------------------------------------------------------------
# The page's section


def _n(value: int, known: int) -> str:
    return f"{value:,}" if known else "—"


def _money(cost: float | None, currency: str | None) -> str:
    return "—" if cost is None or currency is None else f"{cost:,.4f} {escape(currency)}"


def _latency(totals: UsageTotals) -> str:
    if not totals.latency_calls:
        return "—"
    shown = f"{totals.latency_ms:,} ms"
    return shown if totals.latency_calls == totals.calls else f"{shown} ({totals.latency_calls} of {totals.calls})"


def _cells(totals: UsageTotals, currency: str | None) -> str:
    tokens = totals.token_calls
    return (
        f'<td class="num">{totals.calls:,}</td><td class="num">{_latency(totals)}</td>'
        f'<td class="num">{_n(totals.prompt_tokens, tokens)}</td>'
        f'<td class="num">{_n(totals.cached_tokens, tokens)}</td>'
        f'<td class="num">{_n(totals.completion_tokens, tokens)}</td>'
        f'<td class="num">{_money(totals.cost, currency)}</td>'
    )


def _count(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def _step_row(step: StepUsage, currency: str | None) -> str:
    usage = step.usage
    latency = "—" if usage.latency_ms is None else f"{usage.latency_ms:,} ms"
    return (
        f'<tr><td class="num"><a href="#seq-{step.seq}">{step.seq}</a></td>'
        f'<td>{"—" if step.turn is None else step.turn}</td><td class="num">{step.step}</td>'
        f'<td class="num">{latency}</td><td class="num">{_count(usage.prompt_tokens)}</td>'
        f'<td class="num">{_count(usage.cached_tokens)}</td><td class="num">{_count(usage.completion_tokens)}</td>'
        f'<td class="num">{_money(step.cost, currency)}</td></tr>'
    )


def _left_out(rows: Rows[object], noun: str, span: int) -> str:
    if not rows.left_out:
        return ""
    return f'<tr><td colspan="{span}" class="legend">… {rows.left_out:,} {noun} left out here …</td></tr>'


def render_usage(report: UsageReport | None) -> str:
    """The page's section on model usage (escaped HTML): the session's
    totals, then each turn's and each step's; a sentence when no model call
    recorded its usage."""
    if report is None or not report.recorded:
        return '<section id="usage"><h2>Model usage</h2><p>No model call recorded its latency or tokens.</p></section>'
    currency = report.currency
    head = ('<th class="num">calls</th><th class="num">latency</th><th class="num">prompt tokens</th>'
            '<th class="num">cached</th><th class="num">completion tokens</th><th class="num">cost</th>')
    session = f"<table><tr>{head}</tr><tr>{_cells(report.session, currency)}</tr></table>"
    turns = "".join(
        [
            f'<table><tr><th>turn</th><th class="num">first seq</th>{head}</tr>',
            *(
                f'<tr><td>{"—" if t.turn is None else t.turn}</td>'
                f'<td class="num"><a href="#seq-{t.first_seq}">{t.first_seq}</a></td>{_cells(t.totals, currency)}</tr>'
                for t in report.turns.head
            ),
            _left_out(report.turns, "turns", 8),  # type: ignore[arg-type]
            *(
                f'<tr><td>{"—" if t.turn is None else t.turn}</td>'
                f'<td class="num"><a href="#seq-{t.first_seq}">{t.first_seq}</a></td>{_cells(t.totals, currency)}</tr>'
                for t in report.turns.tail
            ),
            "</table>",
        ]
    )
    steps = "".join(
        [
            '<table><tr><th class="num">seq</th><th>turn</th><th class="num">step</th><th class="num">latency</th>'
            '<th class="num">prompt tokens</th><th class="num">cached</th><th class="num">completion tokens</th>'
            '<th class="num">cost</th></tr>',
            *(_step_row(step, currency) for step in report.steps.head),
            _left_out(report.steps, "steps", 8),  # type: ignore[arg-type]
            *(_step_row(step, currency) for step in report.steps.tail),
            "</table>",
        ]
    )
    priced = "" if currency is None else " Costs from the deployment's cost table."
    legend = (
        '<p class="legend">Latency as each call\'s model adapter measured it; tokens as the server reported them '
        f"(cached tokens are part of the prompt). A dash: nothing recorded.{priced}</p>"
    )
    return (
        f'<section id="usage"><h2>Model usage</h2>{legend}<h3>Session</h3>{session}'
        f"<h3>Per turn</h3>{turns}<h3>Per step</h3>{steps}</section>"
    )
