"""docs/report-and-fork.md states the page-size bound the code keeps (its
commands are run with every ``sh`` block of the docs, by
tests/adapters/cli/test_readme.py)."""

from __future__ import annotations

from pathlib import Path

from planfold.adapters.report.events import page_bound

DOC = Path(__file__).resolve().parents[3] / "docs" / "report-and-fork.md"


def test_the_bound_the_page_states_is_the_one_the_code_keeps() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert "2 MiB (summary) + payload budget + 1 MiB (one chunk) + 12 bytes per event" in text
    assert page_bound(0) == (2 + 4 + 1) * 1024 * 1024 and page_bound(1) - page_bound(0) == 12
    mib = 1024 * 1024
    assert round(page_bound(100_000) / mib) == 8 and round(page_bound(1_000_000) / mib) == 18
