"""Smoke tests of the benchmarks: every family runs at a tiny scale and returns
well-formed results; the workloads are valid logs; the baselines agree with
the kernel. Nothing here times anything or asserts a speed."""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from benchmarks import append_bench, replay_bench
from benchmarks.baselines import NaiveGoal, RawLog, naive_fold, naive_replay
from benchmarks.bench import FAMILIES, format_table, main, missed
from benchmarks.es_baseline import MISSING, load_eventsourcing
from benchmarks.harness import FamilyResult, Measurement, Ratio, Scale, batched, difference, ratio
from benchmarks.lg_baseline import LG_MISSING, load_langgraph
from benchmarks.logs import SESSION, TAIL, stored_log
from benchmarks.workloads import goal_events, session_events
from planfold.adapters.codec import MAX_DEPTH, _json_problem
from planfold.adapters.store.base import AppendRequest, StorageError
from planfold.adapters.store.sqlite import SqliteStore
from planfold.kernel.goal.fold import fold_goal
from planfold.kernel.session import fold_session

#: The smallest scale: every workload at its floor.
TINY = replace(Scale.of(1e-6), import_runs=1, open_repeats=2)
HAVE_ES = load_eventsourcing() is not None
HAVE_LG = load_langgraph() is not None


def budget(cap: int) -> int:
    """At most ``cap`` examples, fewer when the active profile asks for fewer."""
    profile = settings.default
    return cap if profile is None else min(profile.max_examples, cap)


def check_family(result: FamilyResult, family: str) -> None:
    """Well-formed: the right family, finite measurements with samples, and
    ratios that are finite or carry the reason they are missing."""
    assert result.family == family
    assert result.measurements
    for m in result.measurements:
        assert m.family == family
        assert m.unit in ("events/s", "s", "ms", "us", "MiB")
        assert math.isfinite(m.value)
        # A time is positive; a part of one (what -X importtime gives the
        # modules planfold imports, say) may be nothing.
        assert all(math.isfinite(s) and (s > 0 or (s == 0 and m.unit == "ms")) for s in m.samples)
        if m.unit in {"events/s", "s"}:
            assert m.value > 0
    for r in result.ratios:
        assert r.family == family
        if r.value is None:
            assert r.met is None and r.note
        else:
            assert math.isfinite(r.value)
            assert (r.met is None) == (r.bound is None)
            if r.samples:
                assert r.spread is not None and r.spread[0] <= r.value <= r.spread[1]
    json.dumps([m.to_json() for m in result.measurements] + [r.to_json() for r in result.ratios])


# --------------------------------------------------------------------------
# Every family at a tiny scale


def test_durable_append_smoke(tmp_path: Path) -> None:
    result = append_bench.run_durable_append(TINY, tmp_path)
    check_family(result, "durable-append")
    subjects = {m.subject for m in result.measurements}
    assert {"planfold", "raw-sqlite3", "planfold (synchronous=NORMAL)"} <= subjects
    es_ratio = next(r for r in result.ratios if r.name.endswith("/ eventsourcing"))
    assert ("eventsourcing" in subjects) == HAVE_ES
    assert (es_ratio.value is not None) == HAVE_ES
    lg_ratio = next(r for r in result.ratios if r.name.endswith("/ LangGraph SQLite checkpointer"))
    assert ("langgraph-sqlite" in subjects) == HAVE_LG
    assert (lg_ratio.value is not None) == HAVE_LG and lg_ratio.bound == 1.0
    raw = next(r for r in result.ratios if r.name == "durable append: planfold / raw sqlite3")
    assert raw.value is not None and raw.bound == 0.9 and len(raw.samples) == TINY.append_rounds
    normal = next(r for r in result.ratios if "synchronous=NORMAL" in r.name)
    assert normal.bound == 0.5 and normal.direction == "at-least"


def test_durable_append_without_langgraph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(append_bench, "load_langgraph", lambda: None)
    result = append_bench.run_durable_append(TINY, tmp_path)
    lg_ratio = next(r for r in result.ratios if r.name.endswith("/ LangGraph SQLite checkpointer"))
    assert lg_ratio.value is None and lg_ratio.note == LG_MISSING and LG_MISSING in result.notes
    assert missed([result]).count(lg_ratio) == 1


def test_append_growth_smoke(tmp_path: Path) -> None:
    result = FAMILIES["append-growth"](TINY, tmp_path / "append-growth")
    check_family(result, "append-growth")
    (growth,) = result.ratios
    assert growth.bound == 1.2 and growth.direction == "at-most" and len(growth.samples) == TINY.growth_repeats
    assert all(len(m.samples) == TINY.growth_repeats for m in result.measurements)


def test_durable_append_without_eventsourcing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(append_bench, "load_eventsourcing", lambda: None)
    result = append_bench.run_durable_append(TINY, tmp_path)
    check_family(result, "durable-append")
    es_ratio = next(r for r in result.ratios if r.name.endswith("/ eventsourcing"))
    assert es_ratio.value is None and es_ratio.met is None
    assert es_ratio.note == MISSING
    assert MISSING in result.notes


def test_group_append_smoke(tmp_path: Path) -> None:
    result = append_bench.run_group_append(TINY, tmp_path)
    check_family(result, "group-append")
    planfold = result.measurement("planfold")
    assert planfold is not None and len(planfold.samples) == math.ceil(TINY.group_events / TINY.group_batch)


def test_fair_writers_smoke(tmp_path: Path) -> None:
    result = FAMILIES["fair-writers"](TINY, tmp_path)
    check_family(result, "fair-writers")
    assert [r.bound for r in result.ratios] == [0.5, 1.0, None, 0.05, 1.0, None]
    assert all(r.value is not None for r in result.ratios)
    subjects = {m.subject for m in result.measurements}
    assert {"planfold, own sessions: all appends", "busy handler only, one session: all appends"} <= subjects


def test_concurrent_append_smoke(tmp_path: Path) -> None:
    result = FAMILIES["concurrent-append"](TINY, tmp_path)
    check_family(result, "concurrent-append")
    assert [r.bound for r in result.ratios] == [3.0, 5.0, 3.0, None]
    assert all(r.value is not None and r.value > 0 for r in result.ratios)
    subjects = {m.subject for m in result.measurements}
    assert {"planfold, 64 writers", "raw-sqlite3, 8 writers", "planfold p99 append latency, 1 writer"} <= subjects
    with SqliteStore(tmp_path / "planfold-8.db") as store:  # every writer's appends landed, in order
        assert store.session_ids() == tuple(sorted(f"writer-{w}" for w in range(8)))
        assert all(store.audit(sid).ok for sid in store.session_ids())


def test_replay_smoke(tmp_path: Path) -> None:
    result = replay_bench.run_replay(TINY, tmp_path / "cold-replay")
    check_family(result, "cold-replay")
    es_name = f"eventsourcing repository.get, {TINY.mid_events} events"
    assert (result.measurement(f"{es_name}, CPU") is not None) == HAVE_ES
    assert (result.measurement(f"{es_name}, wall") is not None) == HAVE_ES
    naive = [r for r in result.ratios if "naive fold / planfold load" in r.name]
    assert [r.bound for r in naive] == [1.5, 1.5, None, None] and all(r.value is not None for r in naive)
    assert all(r.name.endswith("wall time") for r in naive if r.bound is None)
    growth = next(r for r in result.ratios if r.name.startswith("replay CPU per event"))
    assert growth.bound == 1.15 and growth.direction == "at-most"


def test_replay_without_eventsourcing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replay_bench, "load_eventsourcing", lambda: None)
    result = replay_bench.run_replay(TINY, tmp_path / "cold-replay")
    check_family(result, "cold-replay")
    es_ratios = [r for r in result.ratios if "eventsourcing get" in r.name]
    assert len(es_ratios) == 2 and all(r.value is None and r.note == MISSING for r in es_ratios)


def test_open_smoke(tmp_path: Path) -> None:
    result = FAMILIES["open-session"](TINY, tmp_path / "open-session")
    check_family(result, "open-session")
    assert len(result.measurements) == 4
    assert all(len(m.samples) == TINY.open_repeats for m in result.measurements)
    assert [r.name.rsplit(", ", 1)[1] for r in result.ratios] == ["goal log", "session log"]
    assert all(r.direction == "at-most" and r.bound == 2.0 for r in result.ratios)


def test_runtime_turn_smoke(tmp_path: Path) -> None:
    result = FAMILIES["runtime-turn"](TINY, tmp_path / "runtime-turn")
    check_family(result, "runtime-turn")
    (turns,) = result.ratios
    assert turns.bound == 1.2 and turns.direction == "at-most" and len(turns.samples) == TINY.growth_repeats
    assert [m.subject.rsplit(", ", 1)[1] for m in result.measurements] == [
        f"{TINY.small_events:,}-event session",
        f"{TINY.mid_events:,}-event session",
    ]


def test_serve_step_smoke(tmp_path: Path) -> None:
    result = FAMILIES["serve-step"](TINY, tmp_path / "serve-step")
    check_family(result, "serve-step")
    served, direct = result.measurements
    assert len(served.samples) == len(direct.samples) == TINY.serve_steps
    added, overhead = result.ratios
    assert (added.direction, added.bound, len(added.samples)) == ("at-most", 1.0, TINY.serve_steps)
    assert overhead.bound is None and overhead.met is None
    assert result.notes == (f"{TINY.serve_steps} steps each way; the server exited with status 0",)


def test_replay_memory_smoke(tmp_path: Path) -> None:
    result = FAMILIES["replay-memory"](replace(TINY, memory_repeats=1), tmp_path / "replay-memory")
    check_family(result, "replay-memory")
    replays, imports = result.ratios[:2], result.ratios[2:]
    assert [r.name.split(",")[1].split(":")[0].strip() for r in replays] == ["SQLite", "JSON Lines"]
    assert all(r.bound == 2.0 and r.direction == "at-most" for r in replays)
    # import's peak against replay's, at a fifth of the large log and at the large log
    assert [r.name for r in imports] == [
        f"import / replay peak memory, {count:,} events, JSON Lines" for count in (TINY.large_events // 5,
                                                                                   TINY.large_events)]
    assert all(r.bound == 1.5 and r.direction == "at-most" and r.value is not None for r in imports)


def test_report_generation_smoke(tmp_path: Path) -> None:
    result = FAMILIES["report-generation"](replace(TINY, memory_repeats=1), tmp_path / "report-generation")
    check_family(result, "report-generation")
    subjects = [m.subject for m in result.measurements]
    assert any(s.startswith("planfold report,") for s in subjects)
    assert any(s.startswith("planfold replay,") for s in subjects)
    assert sum(s.endswith(": page size") for s in subjects) == 3  # 10k, 100k and 1M events at full scale
    goals = {r.name.split(",")[0].split(":")[0]: r.bound for r in result.ratios if r.bound is not None}
    assert goals == {"page size / its bound": 1.0, "report memory added": 2.0}
    assert all(r.value is not None for r in result.ratios)
    assert all(r.met for r in result.ratios if r.name.startswith("page size / its bound"))


def test_stored_logs_are_built_once_and_continue_validly(tmp_path: Path) -> None:
    log = stored_log(tmp_path, "goal", 50, 20)
    assert stored_log(tmp_path, "goal", 50, 20) is log
    assert len(log.tail) == TAIL and log.tail[0].seq == 51
    assert log.jsonl.read_bytes().count(b"\n") == 50
    store = SqliteStore(log.db)
    try:
        assert store.head(SESSION) == 50
        store.append(AppendRequest(SESSION, 50, log.tail[:30]))
        assert store.load(SESSION) == fold_session([*store.read(SESSION, 0)])
        assert store.audit(SESSION).ok
    finally:
        store.close()


def test_kernel_fold_smoke(tmp_path: Path) -> None:
    result = FAMILIES["kernel-fold"](TINY, tmp_path)
    check_family(result, "kernel-fold")
    assert {m.subject for m in result.measurements} >= {"fold_plan_mode (session log)", "fold_goal (goal log)"}


def test_cold_start_smoke(tmp_path: Path) -> None:
    result = FAMILIES["cold-start"](TINY, tmp_path)
    check_family(result, "cold-start")
    version, *informative = result.ratios
    assert version.name == "planfold --version wall time / python -c pass"
    assert version.bound == 2.0 and version.direction == "at-most" and version.value is not None and version.value > 0
    assert len(version.samples) == TINY.import_runs
    assert [r.name.split(" / ")[0] for r in informative] == [
        "import planfold.kernel + every machine",
        "one scripted turn (new session, SQLite)",
        "planfold serve to its first answer (session/open)",
    ]
    assert all(r.bound is None and r.value is not None and r.value > 0 for r in informative)
    by_subject = {m.subject: m for m in result.measurements}
    others = [r.name.split(" / ")[0] for r in informative]
    assert list(by_subject) == ["python -c 'pass'", "planfold --version", *others]
    assert all(len(m.samples) == TINY.import_runs and m.value > 0 for m in result.measurements)
    # every turn ran on a new session file of its own, the untimed first one included
    assert len(list(tmp_path.glob("turn-*.db"))) == TINY.import_runs + 1


# --------------------------------------------------------------------------
# The command line, the table and the JSON


def test_main_writes_json_and_prints_the_goal_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "results.json"
    code = main(["--scale", "1e-6", "--only", "kernel-fold,open-session", "--json", str(out),
                 "--workdir", str(tmp_path / "work")])
    data: dict[str, Any] = json.loads(out.read_text())
    assert data["meta"]["scale"] == 1e-6 and data["meta"]["cpu_count"] >= 1
    assert [f["family"] for f in data["families"]] == ["kernel-fold", "open-session"]
    open_ratios = data["ratios"]
    assert [r["goal"] for r in open_ratios] == ["<= 2", "<= 2"]
    assert all(isinstance(r["met"], bool) and len(r["spread"]) == 2 for r in open_ratios)
    assert code == 0  # a missed goal does not fail a run at a scale other than the default
    printed = capsys.readouterr().out
    assert "Goals (ratios measured in this run" in printed and all(r["name"] in printed for r in open_ratios)
    assert (tmp_path / "work" / "logs" / f"goal-{Scale.of(1e-6).large_events}.db").exists()


@pytest.mark.parametrize(
    ("scale", "statuses"),
    [("1", (0, 1, 1)), ("0.1", (0, 0, 1))],
    ids=["default-scale-judges-the-goals", "another-scale-only-shows-them"],
)
def test_main_exits_one_when_a_goal_is_missed_at_the_default_scale_or_not_measured_at_any(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], scale: str,
    statuses: tuple[int, int, int],
) -> None:
    def family(verdict: float | None) -> Any:
        def run(scale: Scale, workdir: Path) -> FamilyResult:
            m = Measurement("f", "a", "ms", 1.0, (1.0,))
            return FamilyResult("f", (m,), (Ratio("f", "the goal", verdict, "at-most", 2.0, "x"),))
        return run

    args = ["--scale", scale, "--only", "f", "--json", str(tmp_path / "r.json"), "--workdir", str(tmp_path)]
    for verdict, status in zip((1.0, 3.0, None), statuses, strict=True):
        monkeypatch.setitem(FAMILIES, "f", family(verdict))
        assert main(args) == status
        printed = capsys.readouterr().out
        assert ("1 goal(s) missed or not measured: the goal" in printed) == (verdict != 1.0)
        assert ("shown, not judged" in printed) == (scale != "1" and verdict == 3.0)


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["--scale", "-1"], "positive"), (["--scale", "nan"], "positive"), (["--only", "nope"], "unknown families")],
)
def test_main_refuses_bad_arguments(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_table_marks_met_missed_info_and_unmeasured() -> None:
    m = Measurement("f", "a", "events/s", 10.0, (10.0,))
    rows = (
        Ratio("f", "goal met", 2.0, "at-least", 1.5, "x"),
        Ratio("f", "goal missed", 1.0, "at-least", 1.5, "x"),
        Ratio("f", "no goal", 1.0, "at-least", None, "x"),
        Ratio("f", "baseline missing", None, "at-least", 1.5, "x", note="why"),
    )
    text = format_table([FamilyResult("f", (m,), rows)])
    verdicts = [line.split()[-1] for line in text.splitlines() if line.strip().startswith(("goal ", "no goal", "base"))]
    assert verdicts == ["met", "MISSED", "info", "measured"]
    assert "(why)" in text
    assert [r.name for r in missed([FamilyResult("f", (m,), rows)])] == ["goal missed", "baseline missing"]


def test_table_prints_the_spread_of_paired_repetitions() -> None:
    fast = Measurement("f", "a", "events/s", 300.0, (200.0, 300.0, 400.0))
    slow = Measurement("f", "b", "events/s", 100.0, (100.0, 100.0, 100.0))
    paired = ratio("f", "paired", fast, slow, direction="at-least", bound=2.5, how="h")
    assert paired.samples == (2.0, 3.0, 4.0) and paired.value == 3.0 and paired.spread == (2.0, 4.0)
    assert "2.00x..4.00x n=3" in format_table([FamilyResult("f", (fast, slow), (paired,))])
    gap = difference("f", "gap (ms)", Measurement("f", "x", "ms", 0, (12.0, 15.0)),
                     Measurement("f", "y", "ms", 0, (10.0, 10.0)), bound=4.0, how="h")
    assert gap.samples == (2.0, 5.0) and gap.value == 3.5 and gap.met is True


# --------------------------------------------------------------------------
# Harness rules


def test_scale_sizes() -> None:
    full = Scale.of(1.0)
    assert (full.small_events, full.mid_events, full.large_events) == (1_000, 100_000, 1_000_000)
    assert min(full.replay_repeats, full.memory_repeats, full.growth_repeats) >= 3
    assert Scale.of(2.0).mid_events == 200_000
    tiny = Scale.of(1e-9)
    assert tiny.large_events > tiny.mid_events > tiny.small_events and tiny.replay_repeats >= 1
    for bad in (0.0, -0.5, math.inf, math.nan):
        with pytest.raises(ValueError, match="positive"):
            Scale.of(bad)


def test_ratio_direction_and_missing_side() -> None:
    fast = Measurement("f", "a", "events/s", 300.0, (300.0,))
    slow = Measurement("f", "b", "events/s", 100.0, (100.0,))
    at_least = ratio("f", "r", fast, slow, direction="at-least", bound=2.0, how="h")
    assert at_least.value == 3.0 and at_least.met is True and at_least.goal == ">= 2"
    at_most = ratio("f", "r", fast, slow, direction="at-most", bound=2.0, how="h")
    assert at_most.met is False and at_most.goal == "<= 2"
    missing = ratio("f", "r", fast, None, direction="at-least", bound=2.0, how="h", missing="gone")
    assert missing.value is None and missing.met is None and missing.note == "gone"


def test_batched_keeps_order_and_rejects_zero() -> None:
    assert list(batched(range(7), 3)) == [[0, 1, 2], [3, 4, 5], [6]]
    with pytest.raises(ValueError, match="positive"):
        list(batched(range(3), 0))


# --------------------------------------------------------------------------
# Workloads are valid logs and the baselines read them as planfold does


@settings(max_examples=budget(15))
@given(st.integers(1, 700))
def test_session_workload_is_a_valid_log_of_exact_length(count: int) -> None:
    events = list(session_events(count))
    assert [e.seq for e in events] == list(range(1, count + 1))
    assert fold_session(events).last_seq == count


@settings(max_examples=budget(15))
@given(st.integers(1, 500))
def test_naive_fold_agrees_with_the_goal_fold(count: int) -> None:
    events = list(goal_events(count))
    assert fold_session(events).last_seq == count
    goal = fold_goal(events).current
    rows = [(e.seq, e.kind, e.at, json.dumps(e.payload)) for e in events]
    naive = naive_fold(rows)
    assert goal is not None
    assert (naive.last_seq, naive.goal_id, naive.revision, naive.phase, naive.rounds_started) == (
        count, goal.id, goal.revision, goal.phase, goal.rounds_started
    )


def test_raw_log_round_trip_and_rollback(tmp_path: Path) -> None:
    events = list(goal_events(30))
    raw = RawLog(tmp_path / "raw.db")
    try:
        assert raw.settings() == ("wal", 2)
        raw.append("s", events[:10])
        raw.append_many("s", events[10:])
        with pytest.raises(ValueError, match="conflict"):
            raw.append("s", events[-1:])
        assert not raw.conn.in_transaction
    finally:
        raw.close()
    assert naive_replay(tmp_path / "raw.db", "s").last_seq == 30


def test_replay_check_refuses_disagreeing_readers() -> None:
    events = list(goal_events(40))
    session, goal = fold_session(events), fold_goal(events)
    assert session.goal.current is not None
    current = session.goal.current
    naive = NaiveGoal(40, current.id, current.revision, current.phase, current.objective, current.max_rounds,
                      current.rounds_started)
    replay_bench.check_replays(session, goal, naive, None)
    with pytest.raises(replay_bench.ReplayMismatchError, match="naive"):
        replay_bench.check_replays(session, goal, replace(naive, rounds_started=naive.rounds_started + 1), None)


# --------------------------------------------------------------------------
# The store's snapshot memo (an optimisation the durable-append benchmark
# measures) never answers for a snapshot the file does not hold


class FailingCommit:
    """A connection whose next COMMIT fails once when ``armed``."""

    def __init__(self, path: str) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.armed = False

    @property
    def in_transaction(self) -> bool:
        return self.conn.in_transaction

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        if sql == "COMMIT" and self.armed:
            self.armed = False
            raise sqlite3.OperationalError("disk I/O error (injected)")
        return self.conn.execute(sql, parameters)

    def close(self) -> None:
        self.conn.close()


def test_store_memo_follows_the_file_across_writers_and_failed_commits(tmp_path: Path) -> None:
    path = tmp_path / "memo.db"
    opened: list[FailingCommit] = []

    def connect(p: str) -> FailingCommit:
        opened.append(FailingCommit(p))
        return opened[-1]

    events = list(session_events(40))
    first, second = SqliteStore(path, connect=connect), SqliteStore(path)
    try:
        for index, event in enumerate(events[:30]):
            (first if index % 3 else second).append(AppendRequest("s", event.seq - 1, [event]))
        opened[-1].armed = True
        with pytest.raises(StorageError):
            first.append(AppendRequest("s", 30, events[30:31]))
        assert first.head("s") == 30
        for store in (first, second):
            assert store.load("s", incremental=True) == fold_session(events[:30])
        first.append(AppendRequest("s", 30, events[30:35]))
        second.append(AppendRequest("s", 35, events[35:]))
        for store in (first, second):
            assert store.load("s", incremental=True) == fold_session(events)
            assert store.audit("s").ok
    finally:
        first.close()
        second.close()


# --------------------------------------------------------------------------
# The codec's fast JSON check (another optimisation the replay benchmark
# measures) agrees with a plain reference on every kind of value


def reference_json(value: object, depth: int = 0) -> bool:
    """JSON within the codec's nesting limit, checked the obvious recursive way."""
    if value is None or isinstance(value, bool | int | str):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if depth >= MAX_DEPTH:
        return False
    if isinstance(value, list | tuple):
        return all(reference_json(item, depth + 1) for item in value)
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and reference_json(v, depth + 1) for k, v in value.items())
    return False


def nest(value: object, depth: int) -> object:
    for _ in range(depth):
        value = [value]
    return value


non_finite = st.sampled_from([math.inf, -math.inf, math.nan])
scalars = (
    st.none() | st.booleans() | st.integers() | st.floats() | non_finite | st.text(max_size=3) | st.binary(max_size=2)
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3)
    | st.tuples(inner)
    | st.dictionaries(st.text(max_size=2) | st.integers(0, 3), inner, max_size=3)
    | st.builds(MappingProxyType, st.dictionaries(st.text(max_size=2), inner, max_size=2)),
    max_leaves=12,
)


@settings(max_examples=budget(200))
@given(values, st.sampled_from([0, 1, MAX_DEPTH - 2, MAX_DEPTH - 1, MAX_DEPTH]))
@example([math.inf], 0)
@example({"a": {"b": math.nan}}, 3)
@example({1: "x"}, 0)
@example([], MAX_DEPTH - 1)
@example([], MAX_DEPTH)
def test_codec_json_check_agrees_with_reference(value: object, depth: int) -> None:
    deep = nest(value, depth)
    expected = reference_json(deep)
    assert (_json_problem(deep, "payload") is None) == expected
