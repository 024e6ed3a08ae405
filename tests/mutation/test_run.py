"""``python -m tests.mutation run`` tests the mutated kernel under the
namespace: in a project laid out like this one (``kernel/`` linked into
``src/planfold``, mutmut configured by this repository's ``source_paths`` and
``also_copy``), with an unmutated copy of the same ``planfold`` installed
ahead of the checkout, a planted mutant is killed by a test that imports it
as ``planfold.kernel...``, and so are a mutant that only a process the test
starts can see and mutants of functions that run before any test, at import
or while the tests are collected (which the harness re-tests in fresh
interpreters)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.mutation import __main__ as cli
from tests.mutation.import_time import mutated_path
from tests.mutation.score import load_mutants

TINY = """\
def _floors():
    return {"high": 10}


FLOORS = _floors()


def reaches(value, name):
    return value >= FLOORS[name]


def label():
    return "tiny"


_LIMITS = {}


def limit_of(name):
    if name not in _LIMITS:
        _LIMITS[name] = FLOORS[name] * 2
    return _LIMITS[name]


def double(value):
    return value * 2


_SPANS = {}


def _span(name):
    return FLOORS[name] + 5


def span_of(name):
    if name not in _SPANS:
        _SPANS[name] = _span(name)
    return _SPANS[name]
"""

TEST_TINY = """\
import subprocess
import sys
from pathlib import Path

from planfold.kernel.tiny import FLOORS, double, label, limit_of, reaches, span_of

HIGH_LIMIT = limit_of("high")  # computed, and cached, while the tests are collected
TEN = double(5)  # computed while the tests are collected


def test_a_value_reaches_the_floor_it_equals_and_not_one_below() -> None:
    assert reaches(10, "high")
    assert not reaches(9, "high")


def test_every_floor_has_a_span() -> None:  # builds the span before the test that checks it
    assert all(span_of(name) for name in FLOORS)


def test_the_high_span_is_five_past_the_floor() -> None:
    assert span_of("high") == 15


def test_the_high_floor_is_ten() -> None:
    assert FLOORS == {"high": 10}


def test_the_high_limit_is_twice_the_floor() -> None:
    assert limit_of("high") == HIGH_LIMIT == 20


def test_ten_is_double_five() -> None:
    assert TEN == 10


def test_a_process_the_test_starts_elsewhere_reads_the_label_exactly(tmp_path: Path) -> None:
    assert label()
    code = "from planfold.kernel.tiny import label; assert label() == 'tiny', label()"
    subprocess.run([sys.executable, "-c", code], cwd=tmp_path, check=True)
"""


def _config() -> str:
    """This repository's mutmut layout, with a test selection of the tiny
    project's own."""
    ours = tomllib.loads((cli.ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mutmut"]
    return (
        "[tool.mutmut]\n"
        f"source_paths = {ours['source_paths']!r}\n"
        f"also_copy = {ours['also_copy']!r}\n"
        'pytest_add_cli_args = ["-p", "no:cacheprovider"]\n'
        'pytest_add_cli_args_test_selection = ["tests/"]\n'
    )


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    (root / "kernel").mkdir(parents=True)
    (root / "kernel" / "__init__.py").write_text("")
    (root / "kernel" / "tiny.py").write_text(TINY)
    (root / "src" / "planfold").mkdir(parents=True)
    (root / "src" / "planfold" / "__init__.py").write_text("")
    (root / "src" / "planfold" / "kernel").symlink_to(Path("..", "..", "kernel"), target_is_directory=True)
    # the tests, with this harness's plugin for mutation runs and its mutmut
    # launcher where they live here
    (root / "tests" / "mutation").mkdir(parents=True)
    (root / "tests" / "__init__.py").write_text("")
    (root / "tests" / "mutation" / "__init__.py").write_text("")
    for name in ("pytest_plugin.py", "launch.py", "score.py"):
        shutil.copy(cli.ROOT / "tests" / "mutation" / name, root / "tests" / "mutation")
    (root / "tests" / "test_tiny.py").write_text(TEST_TINY)
    (root / "pyproject.toml").write_text(_config())
    # The unmutated package installed elsewhere, first on the path of every
    # process the run starts: only mutmut's own ordering can put the mutated
    # copy ahead of it.
    installed = tmp_path / "site"
    shutil.copytree(root / "src", installed)
    monkeypatch.setenv("PYTHONPATH", str(installed))
    (tmp_path / "equivalent").mkdir()
    monkeypatch.setattr(cli, "EQUIVALENTS", tmp_path / "equivalent")
    return root


def _tiny_tests(root: Path, mutant: str, env: dict[str, str]) -> int:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/"]
    env = {**env, "MUTANT_UNDER_TEST": mutant}
    return subprocess.run(command, cwd=root / "mutants", env=env, capture_output=True, check=False).returncode


@pytest.mark.slow  # a whole mutmut run and a few fresh interpreters: about ten seconds
def test_a_planted_kernel_mutant_is_killed_under_the_namespace_not_tested_against_an_installed_copy(
    project: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["run", "--root", str(project), "--jobs", "1"]) == 0
    out = capfd.readouterr().out

    # mutmut itself kills the mutant of a cache builder: each test session
    # starts with the kernel's caches empty
    cached = {m.name: m for m in load_mutants(project) if m.function == "limit_of" and m.mutated.endswith("* 3")}
    assert cached and all(m.killed for m in cached.values())
    # and the mutants of a function that only runs while a cache entry is
    # built are tried against every test that needs the entry, not only the
    # first one (which does not check the value)
    spans = [m for m in load_mutants(project) if m.function == "_span"]
    assert spans and all(m.killed for m in spans)
    # mutmut leaves the mutants of a function that runs at import to the
    # recheck, which kills them
    recorded = load_mutants(project)
    assert {m.status for m in recorded if m.function == "_floors"} == {"skipped"}
    mutants = cli.with_rechecks(project, recorded)
    assert {m.file for m in mutants} == {"kernel/tiny.py"}
    assert all(m.name.startswith("planfold.kernel.tiny.x_") for m in mutants)
    planted = [m for m in mutants if m.function == "reaches"]
    at_import = [m for m in mutants if m.function == "_floors"]
    in_a_child = [m for m in mutants if m.function == "label"]
    at_collection = [m for m in mutants if m.function == "double"]
    assert planted and at_import and in_a_child and at_collection
    assert [m for m in mutants if not m.killed] == []
    assert f"{len(mutants)} killed / {len(mutants)} non-equivalent mutants = 100.0 %" in out

    # The planted mutant's code path fails the test; the installed copy,
    # which knows no mutant, passes it whatever mutant is switched on.
    flipped = next(m for m in planted if m.mutated == "return value > FLOORS[name]")
    assert _tiny_tests(project, flipped.name, mutated_path(project, dict(os.environ))) == 1
    assert _tiny_tests(project, "", mutated_path(project, dict(os.environ))) == 0
    assert _tiny_tests(project, flipped.name, dict(os.environ)) == 0


def test_a_run_first_removes_the_copies_of_files_the_checkout_no_longer_has(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_kept.py").write_text("")
    (root / "docs").mkdir()
    (root / "docs" / "kept.md").write_text("")
    (root / "pyproject.toml").write_text('[tool.mutmut]\nalso_copy = ["docs/", "README.md"]\n')
    copies = root / "mutants"
    for name in (
        "tests/test_kept.py",
        "tests/test_gone.py",
        "tests/__pycache__/x.pyc",
        "docs/kept.md",
        "docs/gone.md",
        "kernel/tiny.py.meta",  # mutmut's own results, beside the mutated sources: never a copy
    ):
        (copies / name).parent.mkdir(parents=True, exist_ok=True)
        (copies / name).write_text("")
    assert sorted(cli.prune_copies(root)) == ["docs/gone.md", "tests/test_gone.py"]
    left = sorted(p.relative_to(copies).as_posix() for p in copies.rglob("*") if p.is_file())
    assert left == ["docs/kept.md", "kernel/tiny.py.meta", "tests/__pycache__/x.pyc", "tests/test_kept.py"]
