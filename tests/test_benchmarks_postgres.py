"""The PostgreSQL benchmark family runs at a tiny scale on a server of its
own and reports every measurement and ratio it promises (slow: it starts a
server and up to eight writer processes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.harness import Scale
from benchmarks.pg_bench import POSTGRES, WRITERS, run_postgres


@pytest.mark.slow
def test_the_postgres_family_measures_every_system_and_every_writer_count(tmp_path: Path) -> None:
    result = run_postgres(Scale.of(0.001), tmp_path)
    subjects = {m.subject for m in result.measurements}
    assert {"planfold", "raw-psycopg", "eventsourcing", "langgraph"} <= subjects
    assert {f"planfold, {n} writer process(es)" for n in WRITERS} <= subjects
    assert all(m.family == POSTGRES and m.value > 0 for m in result.measurements)
    names = [r.name for r in result.ratios]
    assert "postgres append: planfold / raw psycopg (same statements)" in names
    assert all(r.value is not None for r in result.ratios), [r.note for r in result.ratios if r.value is None]
