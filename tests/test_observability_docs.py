"""docs/observability.md: every program in it runs as written and prints
what the page shows under it (a program followed by a ``text`` block), and
passes ``mypy --strict``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import planfold.adapters

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "observability.md"
#: the adapters as imported (the checkout's, or a copy of the package)
ADAPTERS = Path(planfold.adapters.__file__).parent
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def programs() -> list[tuple[str, str | None]]:
    """Each ``python`` block with the ``text`` block right after it (``None``: none)."""
    blocks = BLOCK.findall(PAGE.read_text(encoding="utf-8"))
    found = []
    for index, (language, code) in enumerate(blocks):
        if language == "python":
            after = blocks[index + 1] if index + 1 < len(blocks) else ("", "")
            found.append((code, after[1] if after[0] == "text" else None))
    return found


def test_the_page_shows_a_traced_program_with_the_console_exporter_and_a_logging_setup() -> None:
    found = programs()
    assert any("ConsoleSpanExporter" in code and "instrument(" in code and shown for code, shown in found)
    assert any('logging.getLogger("planfold")' in code and shown for code, shown in found)


def test_every_logger_the_page_names_is_a_module_that_logs() -> None:
    section = PAGE.read_text(encoding="utf-8").split("## Logs", 1)[1]
    named = set()
    for line in section.splitlines():
        if line.startswith(("| DEBUG", "| INFO", "| WARNING")):
            named |= set(re.findall(r"`([a-z_.]+)`", line.split("|")[2]))
    assert len(named) >= 7
    for name in sorted(named):
        path = ADAPTERS / (name.replace(".", "/") + ".py")
        assert path.is_file(), name
        assert "logger(__name__)" in path.read_text(encoding="utf-8"), name


@pytest.mark.parametrize("index", range(len(programs())))
def test_each_program_prints_what_the_page_shows(index: int, tmp_path: Path) -> None:
    code, shown = programs()[index]
    (tmp_path / "program.py").write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "program.py"], cwd=tmp_path, capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    if shown is not None:
        assert [line.rstrip() for line in done.stdout.splitlines()] == [line.rstrip() for line in shown.splitlines()]


def test_the_programs_type_check_under_mypy_strict(tmp_path: Path) -> None:
    paths = []
    for index, (code, _) in enumerate(programs()):
        path = tmp_path / f"program_{index}.py"
        path.write_text(code, encoding="utf-8")
        paths.append(str(path))
    mypy = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / ".mypy")]
    done = subprocess.run([*mypy, *paths], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
