"""The README's "Embedding planfold" programs run exactly as written, print
what the README shows under each, and pass ``mypy --strict``: the section
cannot drift from the API."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
PAIR = re.compile(r"^```python\n(.*?)^```\n\n```text\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def programs() -> list[tuple[str, str]]:
    text = README.read_text(encoding="utf-8")
    start = text.index("## Embedding planfold\n")
    end = text.index("\n## ", start + 1)
    return [(code, shown) for code, shown in PAIR.findall(text[start:end])]


def test_the_section_has_its_three_programs() -> None:
    found = programs()
    assert len(found) == 3
    assert "decide_plan_choice" in found[0][0] and "decide(" in found[1][0] and "open_store" in found[2][0]


@pytest.mark.parametrize("index", range(3), ids=["plan-mode", "gate", "goals-in-sqlite"])
def test_each_program_prints_what_the_readme_shows(index: int, tmp_path: Path) -> None:
    code, shown = programs()[index]
    (tmp_path / "program.py").write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "program.py"], cwd=tmp_path, capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 0, done.stderr
    printed = [line.rstrip() for line in done.stdout.splitlines()]
    assert printed == [line.rstrip() for line in shown.splitlines()]


def test_the_programs_type_check_under_mypy_strict(tmp_path: Path) -> None:
    paths = []
    for index, (code, _) in enumerate(programs()):
        path = tmp_path / f"program_{index}.py"
        path.write_text(code, encoding="utf-8")
        paths.append(str(path))
    mypy = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / ".mypy")]
    done = subprocess.run([*mypy, *paths], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
