"""A test that needs a program of the machine is skipped without it on a
developer's machine, saying what to install, and fails instead where the run
requires that program (CI sets PLANFOLD_REQUIRE_GRAPHVIZ, _POSTGRES, _NODE,
_CHROMIUM)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests import system_programs
from tests.system_programs import REQUIRE, chromium, graphviz, node, node_packages, postgres


@pytest.fixture
def nothing_installed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(system_programs, "EXAMPLES", tmp_path)
    monkeypatch.setenv("PLANFOLD_PG_BINDIR", "")
    monkeypatch.setattr("tests.pg_cluster.Path", lambda *parts: tmp_path / "none")
    monkeypatch.setenv("PLANFOLD_CHROMIUM", str(tmp_path / "no-chromium"))
    for variable in REQUIRE.values():
        monkeypatch.delenv(variable, raising=False)


@pytest.mark.usefixtures("nothing_installed")
@pytest.mark.parametrize(
    ("check", "says"),
    [
        (graphviz, "install Graphviz"),
        (node, "install Node 20 or later"),
        (node_packages, "run `npm ci` in examples/"),
        (postgres, "no PostgreSQL server found"),
        (chromium, "install Debian's chromium"),
    ],
)
def test_a_missing_program_skips_the_test_and_says_what_to_install(check: object, says: str) -> None:
    assert callable(check)
    with pytest.raises(pytest.skip.Exception, match="CI installs it") as skipped:
        check()
    assert says in str(skipped.value)


@pytest.mark.usefixtures("nothing_installed")
@pytest.mark.parametrize(
    ("check", "variable"),
    [
        (graphviz, "PLANFOLD_REQUIRE_GRAPHVIZ"),
        (node, "PLANFOLD_REQUIRE_NODE"),
        (node_packages, "PLANFOLD_REQUIRE_NODE"),
        (postgres, "PLANFOLD_REQUIRE_POSTGRES"),
        (chromium, "PLANFOLD_REQUIRE_CHROMIUM"),
    ],
)
def test_a_missing_program_fails_the_test_where_the_run_requires_it(
    check: object, variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert callable(check)
    monkeypatch.setenv(variable, "1")
    with pytest.raises(pytest.fail.Exception, match=f"{variable}=1 and "):
        check()
