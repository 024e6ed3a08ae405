"""Every program in the documentation (the README's quick start and the
``python`` blocks of ``docs/``) runs exactly as written, prints what the page
shows under it, and passes ``mypy --strict``: no page can drift from the API.
The quick start imports from ``planfold`` alone, and runs again and again
with the same output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs_blocks import PAGES, ROOT, Block, programs, run_program

README = ROOT / "README.md"
PROGRAMS = programs()


def quick_start() -> list[Block]:
    return programs(README, "Quick start")


def _printed(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines()]


def _check(done: subprocess.CompletedProcess[str], block: Block) -> None:
    assert done.returncode == 0, f"{block.where}\n{done.stdout}{done.stderr}"
    if block.shown is not None:
        assert _printed(done.stdout) == _printed(block.shown), block.where
    elif block.file_name is None:
        assert done.stdout == "", f"{block.where} prints what its page does not show"


def test_the_documentation_has_programs_on_several_pages() -> None:
    assert len({block.page for block in PROGRAMS}) >= 3 and len(PROGRAMS) >= 8


@pytest.mark.parametrize("block", PROGRAMS, ids=[block.where for block in PROGRAMS])
def test_each_program_prints_what_its_page_shows(block: Block, tmp_path: Path) -> None:
    _check(run_program(sys.executable, block, tmp_path), block)


@pytest.mark.parametrize("page", [page for page in PAGES if programs(page)], ids=lambda page: page.name)
def test_the_programs_of_each_page_type_check_under_mypy_strict(page: Path, tmp_path: Path) -> None:
    paths = []
    for index, block in enumerate(programs(page)):
        folder = tmp_path / f"program_{index}"
        folder.mkdir()
        path = folder / (block.file_name or f"program_{index}.py")
        path.write_text(block.body, encoding="utf-8")
        paths.append(str(path))
    mypy = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / ".mypy")]
    done = subprocess.run([*mypy, *paths], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_quick_start_has_a_runtime_a_real_model_client_its_asyncio_form_and_a_tool_of_ones_own() -> None:
    found = quick_start()
    assert len(found) == 4 and all(block.shown for block in found)
    assert "open_runtime" in found[0].body and "GoalService" in found[0].body and "approve" in found[0].body
    assert "OpenAIClient(os.environ[\"OPENAI_BASE_URL\"]" in found[1].body and "OPENAI_API_KEY" in found[1].body
    assert "open_async_runtime" in found[2].body and "async def complete" in found[2].body
    assert "executors=" in found[3].body and "ToolSpec(" in found[3].body
    allowed = ("from planfold import", "import asyncio", "import os", "from typing", "from collections", "from pathlib")
    for block in found:
        imports = [line for line in block.body.splitlines() if line.startswith(("import ", "from "))]
        assert all(line.startswith(allowed) for line in imports), imports


def test_each_quick_start_program_prints_the_same_when_run_again_in_the_same_folder(tmp_path: Path) -> None:
    for block in quick_start():
        for _ in range(2):
            _check(run_program(sys.executable, block, tmp_path), block)


def test_the_top_level_api_is_short_static_and_every_name_resolves() -> None:
    import planfold  # noqa: PLC0415

    assert isinstance(planfold.__all__, tuple) and len(planfold.__all__) <= 41
    assert len(set(planfold.__all__)) == len(planfold.__all__)
    for name in planfold.__all__:
        assert getattr(planfold, name) is not None, name
    with pytest.raises(AttributeError):
        planfold.NoSuchName  # type: ignore[attr-defined]  # noqa: B018
