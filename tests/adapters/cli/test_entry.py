"""``planfold --version`` and ``--help`` are answered by the entry point
alone: they import no adapter, and print what the whole command prints."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

import planfold
from planfold.adapters.cli import entry
from planfold.adapters.cli import main as full

ROOT = Path(__file__).resolve().parents[3]

LOADED = (
    "import json, sys\n"
    "from planfold.adapters.cli.entry import main\n"
    "status = main(sys.argv[1:])\n"
    "print(json.dumps([sorted(m for m in sys.modules if m.startswith('planfold.')), status]), file=sys.stderr)\n"
)


def _loaded(*argv: str) -> tuple[list[str], int, str]:
    """The planfold modules a fresh interpreter loaded to answer ``argv``, the exit status and stdout."""
    done = subprocess.run([sys.executable, "-c", LOADED, *argv], capture_output=True, text=True, check=True)
    *_, last = done.stderr.strip().splitlines()
    modules, status = json.loads(last)
    return modules, status, done.stdout


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["-h"], [], ["--no-such-flag"], ["-v"]])
def test_the_top_level_imports_no_adapter_and_no_kernel_module(argv: list[str]) -> None:
    modules, _, _ = _loaded(*argv)
    entry = ["planfold.adapters", "planfold.adapters.cli", "planfold.adapters.cli.entry"]
    if argv == ["--version"]:
        assert modules == entry
    # the parser's own argument types (--log-level) and the escaping of what a
    # usage error quotes belong to the command line; no store, model, runtime or kernel
    assert set(modules) <= {
        *entry, "planfold.adapters.cli.args", "planfold.adapters.cli.text", "planfold.adapters.redact",
        "planfold.adapters.visible",
    }


def test_a_command_is_run_by_the_whole_command_line() -> None:
    modules, status, out = _loaded("replay", "--help")
    assert status == 0
    assert "planfold.adapters.cli.main" in modules and "planfold.adapters.store.sqlite" in modules
    assert "--session" in out


@pytest.mark.parametrize(
    "argv", [["--version"], ["--help"], [], ["--bogus"], ["--version", "demo"], ["-h", "x"], ["-vv"]]
)
def test_the_top_level_prints_what_the_whole_command_prints(argv: list[str]) -> None:
    answers = []
    for whole in (False, True):
        out, err = io.StringIO(), io.StringIO()
        status = full.run(argv, out, err, None) if whole else entry.main(argv, out=out, err=err)
        answers.append((status, out.getvalue(), err.getvalue()))
    assert answers[0] == answers[1]
    assert answers[0][0] == (2 if argv in ([], ["--bogus"], ["-vv"]) else 0)


def test_the_whole_command_line_s_main_is_the_entry_point_itself() -> None:
    assert full.main is entry.main


def test_the_version_is_the_installed_distribution_s_and_the_console_script_is_the_entry() -> None:
    assert planfold.__version__ == metadata.version("planfold")
    out = io.StringIO()
    assert entry.main(["--version"], out=out) == 0
    assert out.getvalue() == f"planfold {planfold.__version__}\n"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["scripts"]["planfold"] == "planfold.adapters.cli.entry:main"
    assert project["version"] == planfold.__version__
