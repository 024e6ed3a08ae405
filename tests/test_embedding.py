"""The README's "Quick start" and "Embedding planfold" programs run exactly
as written, print what the README shows under each, and pass ``mypy
--strict``: neither section can drift from the API. The quick start imports
from ``planfold`` alone."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
PAIR = re.compile(r"^```python\n(.*?)^```\n\n```text\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def programs(heading: str = "## Embedding planfold") -> list[tuple[str, str]]:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"{heading}\n")
    end = text.index("\n## ", start + 1)
    return [(code, shown) for code, shown in PAIR.findall(text[start:end])]


def quick_start() -> list[tuple[str, str]]:
    return programs("## Quick start")


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


def test_the_quick_start_has_a_runtime_its_asyncio_form_and_a_tool_of_ones_own_importing_planfold_alone() -> None:
    found = quick_start()
    assert len(found) == 3
    assert "open_runtime" in found[0][0] and "GoalService" in found[0][0] and "approve" in found[0][0]
    assert "open_async_runtime" in found[1][0] and "async def complete" in found[1][0]
    assert "executors=" in found[2][0] and "ToolSpec(" in found[2][0]
    for code, _ in found:
        imports = [line for line in code.splitlines() if line.startswith(("import ", "from "))]
        assert all(line.startswith(("from planfold import", "import asyncio", "from typing", "from collections"))
                   for line in imports), imports


@pytest.mark.parametrize("index", range(3), ids=["runtime", "asyncio", "own-tool"])
def test_each_quick_start_program_prints_what_the_readme_shows(index: int, tmp_path: Path) -> None:
    code, shown = quick_start()[index]
    (tmp_path / "program.py").write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "program.py"], cwd=tmp_path, capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert [line.rstrip() for line in done.stdout.splitlines()] == [line.rstrip() for line in shown.splitlines()]


def test_the_quick_start_programs_type_check_under_mypy_strict(tmp_path: Path) -> None:
    paths = []
    for index, (code, _) in enumerate(quick_start()):
        path = tmp_path / f"quick_{index}.py"
        path.write_text(code, encoding="utf-8")
        paths.append(str(path))
    mypy = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / ".mypy")]
    done = subprocess.run([*mypy, *paths], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_top_level_api_is_short_static_and_every_name_resolves() -> None:
    import planfold  # noqa: PLC0415

    assert isinstance(planfold.__all__, tuple) and len(planfold.__all__) <= 41
    assert len(set(planfold.__all__)) == len(planfold.__all__)
    for name in planfold.__all__:
        assert getattr(planfold, name) is not None, name
    with pytest.raises(AttributeError):
        planfold.NoSuchName  # type: ignore[attr-defined]  # noqa: B018
