"""``docs/cli.md`` and ``docs/serve.md`` run as written: every ``sh`` line
in a fresh checkout after ``make demo`` (with ``examples/go`` copied in, for
the Go host), every ``$`` line of a ``console`` block printing what the page
shows. The Go host's lines need Go (``tests.system_programs``)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.adapters.cli.test_readme import _clone, _make_recipe, _run_console, _sh
from tests.system_programs import go

ROOT = Path(__file__).resolve().parents[3]
BLOCK = re.compile(r"^```(sh|console)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def _run_page(page: Path, clone: Path) -> list[str]:
    """Run every block of ``page`` in ``clone``; the commands that ran."""
    ran: list[str] = []
    for kind, body in BLOCK.findall(page.read_text(encoding="utf-8")):
        lines = body.splitlines()
        if kind == "sh":
            for line in filter(None, lines):
                done = _sh(line, clone)
                assert done.returncode == 0, f"{line}\n{done.stdout}{done.stderr}"
                ran.append(line)
            continue
        ran += _run_console(lines, clone, page.name)
    return ran


def _after_make_demo(tmp_path: Path) -> Path:
    clone = _clone(tmp_path)
    for recipe in _make_recipe("demo"):
        assert _sh(recipe, clone).returncode == 0
    return clone


def test_every_line_of_the_command_line_page_runs_as_written(tmp_path: Path) -> None:
    clone = _after_make_demo(tmp_path)
    ran = _run_page(ROOT / "docs" / "cli.md", clone)
    assert len(ran) >= 12 and any(line.startswith(".venv/bin/planfold import - ") for line in ran)
    assert (clone / "cli-copy.sqlite").is_file() and (clone / "cli-stdin.sqlite").is_file()


def test_the_go_host_runs_as_the_serve_page_shows(tmp_path: Path) -> None:
    go()
    clone = _after_make_demo(tmp_path)  # a checkout with a copy of the Go host's sources
    assert (clone / "examples" / "go" / "main.go").is_file()
    ran = _run_page(ROOT / "docs" / "serve.md", clone)
    assert ran[-1] == ".venv/bin/planfold audit --db go-host.sqlite --session go-1"
    assert _sh(ran[-1], clone).stdout.startswith("go-1: ok, 35 events, 1 turns, mode build")
