"""The report's model usage: per step, per turn and per session, summed from
the assistant messages of the log, priced by the deployment's cost table."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from planfold.adapters.cli.main import main
from planfold.adapters.codec import encode_jsonl
from planfold.adapters.report.html import render_report
from planfold.adapters.report.model import build_report
from planfold.adapters.report.usage import (
    CostTable,
    CostTableError,
    Price,
    Prices,
    UsageBuilder,
    UsageTotals,
    load_costs,
    parse_costs,
    render_usage,
    usage_of_events,
)
from planfold.kernel.decisions import decide_request_header
from planfold.kernel.log import (
    ASSISTANT_MESSAGE,
    TURN_START,
    USAGE_VERSION,
    Draft,
    Event,
    ModelUsage,
    assistant_message,
    read_assistant_message,
    turn_end,
    turn_start,
)
from planfold.kernel.session import SessionState, fold_more

COSTS = CostTable(Prices(Price(2.5), Price(10.0), Price(1.25)), "USD")

counts = st.none() | st.integers(0, 10**7)
usages = st.none() | st.builds(ModelUsage, st.just(USAGE_VERSION), counts, counts, counts, counts)
#: A session: turns of steps, each step's reply with its usage or none.
sessions = st.lists(st.lists(usages, min_size=1, max_size=4), min_size=1, max_size=6)


def _log(turns: Sequence[Sequence[ModelUsage | None]]) -> tuple[Event, ...]:
    """The events of ``turns``: each turn opens, each step records its header
    and its assistant message, the turn ends."""
    events: list[Event] = []
    state = SessionState()

    def put(draft: Draft) -> None:
        nonlocal state
        event = draft.numbered(len(events) + 1, 1000 * (len(events) + 1))
        state = fold_more(state, (event,))
        events.append(event)

    for number, steps in enumerate(turns, 1):
        put(turn_start(number))
        for step, usage in enumerate(steps, 1):
            put(decide_request_header(state, step))
            put(assistant_message(f"turn {number} step {step}", usage))
        put(turn_end(number))
    return tuple(events)


def _sums_from_the_log(events: tuple[Event, ...]) -> dict[int, tuple[int, int, int, int, int, int]]:
    """Per turn, straight from the log: calls with usage, latency, prompt,
    cached and completion tokens, and calls that reported latency."""
    sums: dict[int, list[int]] = {}
    turn = 0
    for event in events:
        if event.kind == TURN_START:
            turn = int(event.payload["turn"])  # type: ignore[arg-type]
        if event.kind != ASSISTANT_MESSAGE:
            continue
        usage = read_assistant_message(event.payload).usage
        if usage is None:
            continue
        row = sums.setdefault(turn, [0, 0, 0, 0, 0, 0])
        row[0] += 1
        row[1] += usage.latency_ms or 0
        row[2] += usage.prompt_tokens or 0
        row[3] += usage.cached_tokens or 0
        row[4] += usage.completion_tokens or 0
        row[5] += usage.latency_ms is not None
    return {turn: (row[0], row[1], row[2], row[3], row[4], row[5]) for turn, row in sums.items()}


def _shown(totals: UsageTotals) -> tuple[int, int, int, int, int, int]:
    return (totals.calls, totals.latency_ms, totals.prompt_tokens, totals.cached_tokens, totals.completion_tokens,
            totals.latency_calls)


@settings(max_examples=60, deadline=None)
@given(sessions)
def test_the_reports_per_turn_totals_equal_the_sums_from_the_log(turns: list[list[ModelUsage | None]]) -> None:
    events = _log(turns)
    report = build_report("s", ((None, e) for e in events), costs=COSTS)
    assert report.ok and report.usage is not None
    usage = report.usage
    expected = _sums_from_the_log(events)
    assert {row.turn: _shown(row.totals) for row in usage.turns} == expected
    assert usage.turns.left_out == 0
    columns = list(zip(*expected.values(), strict=True)) or [()] * 6
    assert _shown(usage.session) == tuple(sum(column) for column in columns)
    # every step with usage is listed once, in its turn and step, and the turn's cost is its steps' cost
    steps = list(usage.steps)
    assert [(s.turn, s.step, s.usage) for s in steps] == [
        (number, step, u) for number, turn in enumerate(turns, 1) for step, u in enumerate(turn, 1) if u is not None
    ]
    for row in usage.turns:
        costs = [s.cost for s in steps if s.turn == row.turn and s.cost is not None]
        assert row.totals.cost == (pytest.approx(sum(costs)) if costs else None)


def test_a_call_is_priced_with_its_cached_prompt_tokens_at_the_cached_price() -> None:
    assert COSTS.cost(1_000_000, 0, 0) == pytest.approx(2.5)
    assert COSTS.cost(1_000_000, 1_000_000, 400_000) == pytest.approx(0.6 * 2.5 + 0.4 * 1.25 + 10.0)
    same = CostTable(Prices(Price(2.0), Price(8.0)))
    assert same.cost(1000, 500, 600) == pytest.approx((1000 * 2.0 + 500 * 8.0) / 1e6)
    # a server that reports more cached tokens than prompt tokens is not believed past the prompt
    assert COSTS.cost(100, 0, 500) == pytest.approx(100 * 1.25 / 1e6)


def test_a_call_without_tokens_has_no_cost_and_a_report_without_a_table_prices_nothing() -> None:
    events = _log([[ModelUsage(USAGE_VERSION, 30), ModelUsage(USAGE_VERSION, 10, 1000, 10)]])
    priced = usage_of_events(events, COSTS)
    assert [s.cost for s in priced.steps] == [None, pytest.approx((1000 * 2.5 + 10 * 10.0) / 1e6)]
    assert priced.currency == "USD"
    unpriced = usage_of_events(events)
    assert unpriced.currency is None and unpriced.session.cost is None
    assert (unpriced.session.calls, unpriced.session.latency_calls, unpriced.session.token_calls) == (2, 2, 1)


def test_the_listed_rows_are_bounded_and_the_totals_still_cover_every_call() -> None:
    turns = [[ModelUsage(USAGE_VERSION, 1, 10, 0, 1)] * 2 for _ in range(10)]
    usage = usage_of_events(_log(turns), keep=3)
    assert (len(usage.steps.head), usage.steps.left_out, len(usage.steps.tail)) == (3, 14, 3)
    assert (len(usage.turns.head), usage.turns.left_out, len(usage.turns.tail)) == (3, 4, 3)
    assert [row.turn for row in usage.turns] == [1, 2, 3, 8, 9, 10]
    assert _shown(usage.session) == (20, 20, 200, 20, 0, 20)
    page = render_usage(usage)
    assert "14 steps left out here" in page and "4 turns left out here" in page


def test_the_page_shows_the_session_turns_and_steps_and_says_so_when_nothing_was_recorded() -> None:
    events = _log([[ModelUsage(USAGE_VERSION, 840, 1200, 35, 1024)], [None, ModelUsage(USAGE_VERSION, 95)]])
    page = render_report(build_report("s", ((None, e) for e in events), costs=CostTable(
        Prices(Price(2.5), Price(10.0)), "<EUR>")))
    assert '<section id="usage">' in page and "840 ms" in page and "935 ms" in page and "1,200" in page
    assert "&lt;EUR&gt;" in page and "<EUR>" not in page
    assert "95 ms (" not in page and "—" in page  # the second turn's call reported no tokens
    bare = render_report(build_report("s", ((None, e) for e in _log([[None]]))))
    assert "No model call recorded its latency or tokens." in bare


def test_a_cost_table_is_read_from_toml_or_json(tmp_path: Path) -> None:
    toml = tmp_path / "costs.toml"
    toml.write_text('currency = "EUR"\n[per_million_tokens]\nprompt = 2.5\ncompletion = 10\ncached = 1.25\n')
    assert load_costs(toml) == CostTable(Prices(Price(2.5), Price(10.0), Price(1.25)), "EUR")
    as_json = tmp_path / "costs.json"
    as_json.write_text(json.dumps({"per_million_tokens": {"prompt": 1, "completion": 2}}))
    assert load_costs(as_json) == CostTable(Prices(Price(1.0), Price(2.0)), "USD")


@pytest.mark.parametrize(
    ("data", "problems"),
    [
        ({"per_million_tokens": {"prompt": -1, "completion": True}, "tax": 1},
         ["costs.per_million_tokens.prompt: expected a non-negative number, got -1",
          "costs.per_million_tokens.completion: expected a non-negative number, got True",
          "costs: unknown key(s) ['tax'] (allowed: ['currency', 'per_million_tokens'])"]),
        ({"per_million_tokens": {"prompt": float("inf"), "completion": 1}},
         ["costs.per_million_tokens.prompt: expected a non-negative number, got inf"]),
        ({"currency": " ", "per_million_tokens": {"prompt": 1, "completion": 1}},
         ["costs.currency: expected a non-blank name"]),
        ({}, ["costs.per_million_tokens: required key missing"]),
    ],
)
def test_a_bad_cost_table_is_refused_with_every_problem_and_its_path(data: object, problems: list[str]) -> None:
    with pytest.raises(CostTableError) as caught:
        parse_costs(data, "costs.toml")
    assert caught.value.code == "cost-table-invalid"
    assert sorted(caught.value.problems) == sorted(problems)
    assert str(caught.value).startswith("costs.toml is not a valid cost table: ")


def test_a_cost_table_file_that_cannot_be_read_is_refused(tmp_path: Path) -> None:
    for name, text, problem in [
        ("costs.yaml", "prompt: 1", "unknown suffix '.yaml'"),
        ("costs.toml", "prompt = ", "cannot read it"),
        ("missing.json", None, "cannot read it"),
    ]:
        path = tmp_path / name
        if text is not None:
            path.write_text(text)
        with pytest.raises(CostTableError, match=problem):
            load_costs(path)


def _report(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["report", *argv], out=out, err=err, stdin=io.BytesIO())
    return code, out.getvalue(), err.getvalue()


def test_planfold_report_prices_the_calls_with_the_cost_table_it_is_given(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    log.write_bytes(encode_jsonl(_log([[ModelUsage(USAGE_VERSION, 840, 1_000_000, 0, 0)]])))
    costs = tmp_path / "costs.toml"
    costs.write_text('currency = "USD"\n[per_million_tokens]\nprompt = 2.5\ncompletion = 10\n')
    page = tmp_path / "page.html"
    code, _, err = _report("--db", str(log), "--costs", str(costs), "-o", str(page))
    assert code == 0, err
    assert "2.5000 USD" in page.read_text(encoding="utf-8")


def test_planfold_report_with_a_bad_cost_table_writes_nothing_and_says_what_is_wrong(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    log.write_bytes(encode_jsonl(_log([[None]])))
    costs = tmp_path / "costs.json"
    costs.write_text(json.dumps({"per_million_tokens": {"prompt": "cheap", "completion": 1}}))
    page = tmp_path / "page.html"
    code, out, err = _report("--db", str(log), "--costs", str(costs), "-o", str(page))
    assert code == 2 and not page.exists() and out == ""
    assert err == (
        "planfold report: costs.json is not a valid cost table: "
        "costs.per_million_tokens.prompt: expected a non-negative number, got 'cheap'\n"
    )


class UsageMachine(RuleBasedStateMachine):
    """The builder against a small model: turns open and close, steps record
    replies with or without usage; after every event the builder's session
    and per-turn totals are the model's."""

    def __init__(self) -> None:
        super().__init__()
        self.state = SessionState()
        self.seq = 0
        self.builder = UsageBuilder(COSTS, keep=2)
        self.turns: dict[int, list[int]] = {}  # turn -> [calls, latency, prompt, cached, completion, timed]
        self.cost = 0.0
        self.priced = False

    def put(self, draft: Draft) -> None:
        self.seq += 1
        event = draft.numbered(self.seq, self.seq)
        self.state = fold_more(self.state, (event,))
        self.builder.observe(self.state, event)

    @precondition(lambda self: not self.state.turns.open)
    @rule()
    def open_turn(self) -> None:
        self.put(turn_start(self.state.turns.turn + 1))

    @precondition(lambda self: self.state.turns.open)
    @rule(usage=usages)
    def step(self, usage: ModelUsage | None) -> None:
        self.put(decide_request_header(self.state, self.state.turns.step + 1))
        self.put(assistant_message("step", usage))
        if usage is None:
            return
        row = self.turns.setdefault(self.state.turns.turn, [0] * 6)
        for i, value in enumerate((1, usage.latency_ms or 0, usage.prompt_tokens or 0, usage.cached_tokens or 0,
                                   usage.completion_tokens or 0, usage.latency_ms is not None)):
            row[i] += int(value)
        if any(n is not None for n in (usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens)):
            self.priced = True
            self.cost += COSTS.cost(usage.prompt_tokens or 0, usage.completion_tokens or 0, usage.cached_tokens or 0)

    @precondition(lambda self: self.state.turns.open)
    @rule()
    def close_turn(self) -> None:
        self.put(turn_end(self.state.turns.turn))

    @invariant()
    def the_totals_are_the_models(self) -> None:
        report = self.builder.finish()
        columns = list(zip(*self.turns.values(), strict=True)) or [()] * 6
        assert _shown(report.session) == tuple(sum(column) for column in columns)
        assert report.session.cost == (pytest.approx(self.cost) if self.priced else None)
        listed = {row.turn: list(_shown(row.totals)) for row in report.turns}
        assert all(turn is not None and self.turns[turn] == shown for turn, shown in listed.items())
        assert len(listed) + report.turns.left_out == len(self.turns)


UsageMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=30, deadline=None)
test_the_usage_builder_keeps_the_models_totals_event_by_event = UsageMachine.TestCase
