"""docs/report-and-fork.md: every command of its code blocks runs, in order,
in a fresh directory, and does what the page says."""

from __future__ import annotations

import io
import os
import re
import shlex
from pathlib import Path

import pytest

from planfold.adapters.cli.main import main as planfold
from planfold.adapters.report.events import page_bound

DOC = Path(__file__).resolve().parents[3] / "docs" / "report-and-fork.md"


def _commands() -> list[list[str]]:
    text = DOC.read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(.*?)```", text, re.DOTALL)
    return [shlex.split(line) for block in blocks for line in block.splitlines() if line.strip()]


def test_every_command_of_the_page_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    commands = _commands()
    assert len(commands) >= 7 and all(argv[0] == "planfold" for argv in commands)
    for argv in commands:
        out = io.StringIO()
        assert planfold(argv[1:], out=out, err=io.StringIO()) == 0, argv
    assert {"demo-1.html", "early.html"} <= set(os.listdir(tmp_path))
    source = (tmp_path / "demo-1.html").read_text(encoding="utf-8")
    assert 'href="early.html"' in source and 'class="fork-cmd' in source
    assert 'href="demo-1.html#ev-' in (tmp_path / "early.html").read_text(encoding="utf-8")


def test_the_bound_the_page_states_is_the_one_the_code_keeps() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert "2 MiB (summary) + payload budget + 1 MiB (one chunk) + 12 bytes per event" in text
    assert page_bound(0) == (2 + 4 + 1) * 1024 * 1024 and page_bound(1) - page_bound(0) == 12
    mib = 1024 * 1024
    assert round(page_bound(100_000) / mib) == 8 and round(page_bound(1_000_000) / mib) == 18
