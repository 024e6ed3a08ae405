"""The PostgreSQL benchmark families run at a tiny scale on a server of their
own and report every measurement and ratio they promise (slow: each starts a
server, and the first up to eight writer processes). The baselines of
eventsourcing and LangGraph are measured where the bench extra is installed
(CI installs it); without it their ratios say what is missing."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from benchmarks.es_baseline import load_eventsourcing
from benchmarks.harness import Scale
from benchmarks.pg_bench import POSTGRES, WRITERS, run_postgres
from benchmarks.pg_concurrent_bench import FAMILY, run_pg_concurrent
from benchmarks.pg_concurrent_bench import WRITERS as CONCURRENT_WRITERS
from tests.system_programs import postgres


def _have_langgraph_postgres() -> bool:
    try:
        importlib.import_module("langgraph.checkpoint.postgres")
    except ImportError:
        return False
    return True


@pytest.mark.slow
def test_the_postgres_family_measures_every_system_and_every_writer_count(tmp_path: Path) -> None:
    postgres()
    result = run_postgres(Scale.of(0.001), tmp_path)
    subjects = {m.subject for m in result.measurements}
    baselines = {"eventsourcing": load_eventsourcing() is not None, "langgraph": _have_langgraph_postgres()}
    assert {"planfold", "raw-psycopg"} <= subjects
    assert {name for name in baselines if name in subjects} == {name for name, have in baselines.items() if have}
    assert {f"planfold, {n} writer process(es)" for n in WRITERS} <= subjects
    assert all(m.family == POSTGRES and m.value > 0 for m in result.measurements)
    names = [r.name for r in result.ratios]
    assert "postgres append: planfold / raw psycopg (same statements)" in names
    unmeasured = [r for r in result.ratios if r.value is None]
    assert len(unmeasured) == list(baselines.values()).count(False), [r.note for r in unmeasured]
    assert all("install the bench extra" in r.note for r in unmeasured)


@pytest.mark.slow
def test_the_postgres_concurrent_family_measures_both_systems_with_one_and_eight_writer_threads(
    tmp_path: Path,
) -> None:
    postgres()
    result = run_pg_concurrent(Scale.of(0.001), tmp_path)
    assert {m.subject for m in result.measurements} == {
        f"{system}, {n} writer thread{'s' if n > 1 else ''}" for system in ("planfold", "raw-psycopg") for n in (1, 8)
    }
    assert all(m.family == FAMILY and m.value > 0 and m.samples for m in result.measurements)
    goal, one = result.ratios
    assert goal.name.startswith(f"PostgreSQL, {CONCURRENT_WRITERS} writers: planfold / raw psycopg")
    assert (goal.bound, one.bound) == (2.0, None)
    assert goal.value is not None and goal.value > 0 and len(goal.samples) == Scale.of(0.001).concurrent_rounds
    assert any("CPU per append" in note for note in result.notes)
