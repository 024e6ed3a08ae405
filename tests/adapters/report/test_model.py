"""The report's model: what one streaming pass over a session keeps (counts,
plan revisions, reviews, goal changes, the transitions each machine took),
that its lists stay bounded however long the log, and that a bad log is
reported up to its first bad event with the fold's own rule."""

from __future__ import annotations

import gc
import tracemalloc
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given

from planfold.adapters.codec import read_records
from planfold.adapters.provenance import ForkProvenance, prefix_digest
from planfold.adapters.report.machines import FLUSH_LABEL, machine_graphs
from planfold.adapters.report.model import (
    CODES,
    OTHER_CODES,
    SEQS_PER_EDGE,
    Coverage,
    Report,
    build_report,
    goal_actors,
    spec_diff,
    with_fork_record,
)
from planfold.kernel.graph import Edge, plan_mode_label
from planfold.kernel.log import Event
from planfold.kernel.payload import JSONObject
from planfold.kernel.plan.spec import PlanSpec, Todo
from tests.adapters.report.report_logs import WIDE_TURN, demo_events, demo_session, gated_events
from tests.goal_logs import valid_logs


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Event, ...]:
    return demo_events(demo_session(tmp_path_factory.mktemp("report")))


def _records(events: Iterable[Event]) -> Iterator[tuple[int | None, Event]]:
    return ((None, event) for event in events)


def _edge(report: Report, machine: str, source: str, target: str, label: str) -> int:
    return report.machines[machine].counts[Edge(source, target, label)]


def test_the_demo_report_counts_events_turns_calls_and_refusals_by_rule(demo: tuple[Event, ...]) -> None:
    report = build_report("demo-1", _records(demo))
    assert report.ok and report.bad is None
    assert (report.events, report.turns, report.requests) == (99, 4, 20)
    assert report.calls == 13 and report.refused == {"not-offered": 1} and report.warned == {}
    assert report.first_at == demo[0].at and report.last_at == demo[-1].at
    assert report.kinds["tool/call"] == 13 and sum(report.kinds.values()) == 99
    assert report.provenance is None
    refused = [e for b in report.timeline.items for e in b.items.listing().items if e.verdict == "refused"]
    assert [(e.seq, e.label, e.code) for e in refused] == [(10, "write_file", "not-offered")]


def test_the_demo_report_lists_each_plan_revision_with_its_approval_and_its_change(
    demo: tuple[Event, ...],
) -> None:
    report = build_report("demo-1", _records(demo))
    first, second = report.revisions.items
    assert (first.plan_id, first.revision, first.action, first.status) == ("plan-15", 1, "draft", "completed")
    assert first.approved is not None and first.approved[0] == 16
    assert "exit_plan_mode call c3" in first.approved[2]
    assert [h[1] for h in first.history] == ["approve", "start", "todo", "verify", "complete"]
    assert {line.field for line in first.diff} >= {"goal", "steps", "verify", "todos"}
    assert all(line.sign == "+" for line in first.diff)
    assert (second.plan_id, second.action, second.approved) == ("plan-50", "bootstrap", None)
    (review,) = report.reviews.items
    assert (review.seq, review.call_id, review.outcome, review.plan) == (14, "c3", "approved", "plan-15 rev 1")
    assert [v.action for v in report.verifications.items] == [
        "verify", "complete", "verify", "verify-fail", "verify", "complete"
    ]


def test_the_demo_report_shows_goal_rounds_against_the_budget_and_who_may_have_made_each_change(
    demo: tuple[Event, ...],
) -> None:
    report = build_report("demo-1", _records(demo))
    (goal,) = report.goals.items
    assert (goal.goal_id, goal.rounds, goal.max_rounds, goal.phase) == ("goal-40", 3, 3, "blocked")
    assert [(c.operation, c.actor) for c in report.goal_changes.items] == [
        ("create", "user"),
        ("block", "system"),
        ("edit", "user"),
        ("resume", "user"),
        ("resume", "user"),
        ("block", "system"),
    ]


def test_every_event_is_mapped_to_the_transition_it_took_in_each_machine(demo: tuple[Event, ...]) -> None:
    report = build_report("demo-1", _records(demo))
    assert _edge(report, "plan_mode", "build", "plan", plan_mode_label(True, False, "committed")) == 1
    assert _edge(report, "plan_mode", "plan", "plan (build pending)", plan_mode_label(False, True, "queued")) == 1
    assert _edge(report, "plan_mode", "plan (build pending)", "build", FLUSH_LABEL) == 1
    assert report.machines["plan_mode"].seqs[Edge("build", "plan", plan_mode_label(True, False, "committed"))] == [
        (None, 1)
    ]
    assert _edge(report, "plan_status", "draft", "approved", "approve") == 1
    assert report.machines["plan_status"].seqs[Edge("draft", "approved", "approve")] == [(None, 16)]
    assert _edge(report, "plan_status", "executing", "completed", "complete (build)") == 2
    assert _edge(report, "runtime_phase", "plan", "build_execute", "plan mode off") == 1
    assert _edge(report, "runtime_phase", "build_execute", "verify", "verify") == 3
    assert _edge(report, "goal", "no goal", "active", "create") == 1
    assert _edge(report, "goal", "active", "blocked", "block") == 2
    graphs = machine_graphs()
    for name, use in report.machines.items():
        outside = {e for e in use.counts if e not in set(graphs[name].edges)}
        assert set(use.extra) == outside, name
    assert set(report.machines["plan_mode"].extra) == {Edge("plan (build pending)", "build", FLUSH_LABEL)}


def test_listing_caps_hold_and_left_out_stretches_add_up_on_a_100k_event_log() -> None:
    count = 100_000
    gc.collect()
    tracemalloc.start()
    try:
        small = build_report("s", _records(gated_events(count // 10)))
        small_peak = tracemalloc.get_traced_memory()[1]
        del small
        gc.collect()
        tracemalloc.reset_peak()
        report = build_report("s", _records(gated_events(count)))
        large_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # Memory does not grow with the log: ten times the events, about the same peak.
    assert large_peak < 3 * small_peak, (small_peak, large_peak)
    assert report.ok and report.events == count
    timeline = report.timeline
    assert len(timeline.items) <= 36 and timeline.left_out is not None
    listed_events = sum(block.events for block in timeline.items)
    assert listed_events + timeline.left_out.events == count
    assert timeline.left_out.calls + sum(b.calls for b in timeline.items) == report.calls
    refused = sum(report.refused.values())
    assert abs(report.calls - 3 * refused) <= 2  # the log may end inside a turn's calls
    assert abs(report.warned["advisory-write"] - refused) <= 1
    summed = Counter(timeline.left_out.refused)
    for block in timeline.items:
        summed.update(block.refused)
    assert summed == report.refused
    wide = next(b for b in timeline.items if b.turn == WIDE_TURN)
    items = wide.items.listing()
    assert wide.calls == 3_000 and len(items.items) <= 52 and items.left_out is not None
    assert items.left_out.calls + sum(1 for e in items.items if e.kind == "tool/call") == 3_000
    text = items.left_out.calls_text()
    assert "refused: not-offered" in text and "read-only-phase" in text and "warned: advisory-write" in text
    for use in report.machines.values():
        assert all(len(seqs) <= SEQS_PER_EDGE for seqs in use.seqs.values())
    flips = report.machines["plan_mode"].counts
    assert sum(flips.values()) == report.kinds["plan/mode"]


def test_a_bad_log_is_reported_up_to_its_first_bad_seq_with_the_folds_rule(demo: tuple[Event, ...]) -> None:
    header = demo[19]
    assert header.kind == "request/header"
    torn = replace(header, payload={**header.payload, "plan_mode": True})
    events = (*demo[:19], torn, *demo[20:])
    report = build_report("demo-1", _records(events))
    assert not report.ok and report.bad is not None
    assert (report.bad.position, report.bad.rule, report.bad.kind) == (20, "header-mismatch", "request/header")
    assert "plan_mode=True" in report.bad.detail and '"plan_mode": true' in report.bad.payload
    assert report.events == 19 and report.timeline.items[-1].last_seq == 19


def test_an_unreadable_record_is_reported_by_its_line(tmp_path: Path) -> None:
    lines = [b'{"seq":1,"kind":"turn/start","at":5,"payload":{"turn":1}}', b"not json"]
    report = build_report("log", read_records(iter(lines)))
    assert report.bad is not None and report.bad.rule == "malformed-record" and report.bad.line == 2
    assert report.events == 1


def test_a_plan_change_lists_what_was_removed_added_and_changed() -> None:
    old = PlanSpec("Ship it", ("read", "write"), ("no deps",), ("tests pass",), (Todo("t1", "write"),))
    new = replace(old, goal="Ship it all", steps=("read", "write", "document"), constraints=())
    lines = {(d.field, d.sign, d.text) for d in spec_diff(old, new)}
    assert lines == {
        ("goal", "-", "Ship it"),
        ("goal", "+", "Ship it all"),
        ("steps", "+", "document"),
        ("constraints", "-", "no deps"),
    }
    reordered = replace(old, steps=("write", "read"))
    assert [(d.field, d.sign) for d in spec_diff(old, reordered)] == [("steps", "~")]
    assert spec_diff(old, old) == ()


def test_goal_actors_are_read_from_the_authority_table() -> None:
    assert goal_actors("create") == ("user",)
    assert goal_actors("complete") == ("user", "model")
    assert goal_actors("block", "round-limit") == ("system",)
    assert goal_actors("block", "needs-input") == ("user", "model", "system")


def test_coverage_adds_up_the_transitions_of_every_session(demo: tuple[Event, ...]) -> None:
    coverage = Coverage("db")
    coverage.add(build_report("a", _records(demo)))
    coverage.add(build_report("b", _records(demo[:16])))
    done = coverage.finish()
    assert (done.sessions, done.events, done.bad) == (2, 99 + 16, 0)
    approve = Edge("draft", "approved", "approve")
    assert done.machines["plan_status"].counts[approve] == 2
    assert done.machines["plan_status"].seqs[approve] == [("a", 16), ("b", 16)]
    taken, shown = done.machines["plan_status"].coverage(done.graphs["plan_status"], "plan_status")
    assert 0 < taken < shown == len(done.graphs["plan_status"].edges)


@pytest.mark.parametrize(
    ("output", "outcome"),
    [
        ("The user wants to keep planning. Their feedback: smaller steps.", "keep-planning"),
        ("The user dismissed the review to speak instead. Keep planning and wait for them.", "dismissed"),
        ("The review channel closed before the user answered; the plan was not approved.", "channel-lost"),
    ],
)
def test_a_review_that_did_not_approve_says_what_the_reviewer_did(output: str, outcome: str) -> None:
    call: JSONObject = {"call_id": "c1", "tool": "exit_plan_mode", "arguments": {"plan_spec": {"goal": "Ship <it>"}}}
    events = [
        Event(1, "plan/mode", 1, {"active": True}),
        Event(2, "turn/start", 2, {"turn": 1}),
        Event(3, "request/header", 3, {"turn": 1, "step": 1, "plan_mode": True}),
        Event(4, "tool/call", 4, call),
        Event(5, "tool/result", 5, {"call_id": "c1", "tool": "exit_plan_mode", "ok": False, "output": output}),
        Event(6, "turn/end", 6, {"turn": 1}),
    ]
    report = build_report("s", _records(events))
    (review,) = report.reviews.items
    assert (review.question, review.outcome, review.turn) == ("Ship <it>", outcome, 1)
    assert review.answer == output


@given(valid_logs())
def test_every_goal_change_of_a_valid_log_takes_an_edge_of_the_goal_table(log: list[Event]) -> None:
    report = build_report("s", _records(log))  # up to its first bad event, if the session fold finds one
    assert report.events == (len(log) if report.ok else (report.bad.position or 1) - 1)  # type: ignore[union-attr]
    use = report.machines["goal"]
    assert use.extra == {}
    assert sum(use.counts.values()) == report.kinds.get("goal/change", 0)
    assert set(use.counts) <= set(report.graphs["goal"].edges)
    assert len(report.goal_changes.items) == min(report.kinds.get("goal/change", 0), 48)


def test_a_log_that_names_endless_rule_codes_keeps_a_bounded_count_of_them() -> None:
    events = [Event(1, "turn/start", 1, {"turn": 1})]
    for i in range(500):
        call = f"c{i}"
        events.append(Event(len(events) + 1, "tool/call", 1, {"call_id": call, "tool": "t", "arguments": None}))
        events.append(Event(len(events) + 1, "tool/refused", 1, {"call_id": call, "tool": "t", "code": f"code-{i}",
                                                                 "reason": "no", "phase": "plan"}))
    report = build_report("s", _records(events))
    assert report.ok and len(report.refused) == CODES + 1
    assert report.refused[OTHER_CODES] == 500 - CODES and sum(report.refused.values()) == 500
    (block,) = report.timeline.items
    assert len(block.refused) == CODES + 1
    left_out = block.items.listing().left_out
    assert left_out is not None and len(left_out.refused) <= CODES + 1


def test_a_forks_provenance_is_checked_against_its_first_events_as_audit_checks_it(
    demo: tuple[Event, ...],
) -> None:
    sound = ForkProvenance("demo-1", 16, prefix_digest(demo[:16]))
    report = build_report("fork", _records(demo[:30]), sound)
    assert report.ok and report.provenance == sound
    wrong = build_report("fork", _records(demo[:30]), replace(sound, prefix_sha256="0" * 64))
    assert wrong.bad is not None and wrong.bad.rule == "provenance-mismatch" and wrong.bad.position is None
    assert wrong.events == 30  # the events fold; only the record of their origin is wrong
    short = build_report("fork", _records(demo[:10]), sound)
    assert short.bad is not None and short.bad.rule == "provenance-mismatch" and short.bad.line == 11
    assert with_fork_record(build_report("log", _records(demo[:20])), sound).ok
