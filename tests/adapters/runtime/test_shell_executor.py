"""planfold's shell executor: bash in the workspace with bounded time and
output, and git reads that run none of the programs a repository's
configuration names."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from planfold.adapters.runtime.shell_executor import ShellExecutor, git_read_environment
from planfold.adapters.runtime.workspace import ToolFailure, ToolInputError


def test_a_command_runs_in_the_workspace_and_answers_its_exit_code_and_output(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    result = ShellExecutor(str(tmp_path))({"command": "cat a.txt; echo oops >&2; exit 3"})
    assert result == {"exit_code": 3, "stdout": "hello\n", "stderr": "oops\n"}


def test_output_is_cut_to_the_bound_and_says_so(tmp_path: Path) -> None:
    result = ShellExecutor(str(tmp_path), max_output=5)({"command": "printf 0123456789; printf ab >&2"})
    assert result == {"exit_code": 0, "stdout": "01234", "stderr": "ab", "truncated": ["stdout"]}


def test_output_that_is_not_utf8_is_replaced_not_refused(tmp_path: Path) -> None:
    result = ShellExecutor(str(tmp_path))({"command": "printf '\\377'"})
    assert result["stdout"] == "\ufffd"


def test_a_command_that_runs_too_long_is_killed_with_its_children(tmp_path: Path) -> None:
    executor = ShellExecutor(str(tmp_path), timeout=0.5)
    with pytest.raises(ToolFailure, match=r"longer than 0\.5 seconds"):
        executor({"command": "sleep 5 & sleep 5; touch late"})
    with pytest.raises(ToolFailure, match=r"longer than 0\.2 seconds"):
        executor({"command": "sleep 5", "timeout": 0.2})  # a call may only lower the bound
    assert not (tmp_path / "late").exists()


@pytest.mark.parametrize(
    "arguments",
    [
        {},
        {"command": 3},
        {"command": "ls", "cwd": "/"},
        {"command": "ls", "timeout": 0},
        {"command": "ls", "timeout": True},
    ],
)
def test_bad_arguments_are_the_models_fault_and_run_nothing(tmp_path: Path, arguments: dict[str, object]) -> None:
    with pytest.raises(ToolInputError):
        ShellExecutor(str(tmp_path))(arguments)


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


@pytest.fixture
def hostile_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A repository whose configuration names a marker-writing program for
    every hook a git read can run: fsmonitor, an external diff, a diff
    driver's command and textconv, a clean filter and a pager."""
    root, marker = tmp_path / "repo", tmp_path / "marker"
    root.mkdir()
    script = tmp_path / "mark.sh"
    script.write_text(f"#!/bin/sh\necho ran \"$@\" >> '{marker}'\ncat\n")
    script.chmod(0o755)
    _git(root, "init", "-q", ".")
    _git(root, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "0")
    (root / "f.txt").write_text("one\n")
    (root / ".gitattributes").write_text("*.txt diff=conv filter=clean\n")
    _git(root, "add", "f.txt", ".gitattributes")
    _git(root, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "-m", "1")
    (root / "f.txt").write_text("two\n")
    for key in ("core.fsmonitor", "diff.external", "diff.conv.command", "diff.conv.textconv", "filter.clean.clean",
                "filter.clean.smudge", "filter.clean.process", "core.pager", "pager.log"):  # fmt: skip
        _git(root, "config", key, str(script))
    _git(root, "config", "log.showSignature", "true")
    return root, marker


def test_the_hostile_repository_does_run_its_programs_for_a_plain_git(hostile_repo: tuple[Path, Path]) -> None:
    root, marker = hostile_repo
    subprocess.run(["git", "diff"], cwd=root, capture_output=True, check=False)
    assert marker.exists()  # the fixture is hostile: without the executor's care, a read runs the script


@pytest.mark.parametrize(
    "line",
    [
        "git status",
        "git status -v",
        "git diff",
        "git diff HEAD~1",
        "git --no-pager log -p",
        "git log --stat | head -5",
        "git show",
        "git blame f.txt",
        "git grep -e one HEAD",
    ],
)
def test_an_admitted_git_read_runs_none_of_the_programs_the_repository_names(
    hostile_repo: tuple[Path, Path], line: str
) -> None:
    root, marker = hostile_repo
    result = ShellExecutor(str(root))({"command": line})
    assert result["exit_code"] == 0, result
    assert not marker.exists(), marker.read_text()


def test_a_git_read_still_shows_the_change(hostile_repo: tuple[Path, Path]) -> None:
    root, _ = hostile_repo
    result = ShellExecutor(str(root))({"command": "git diff"})
    assert "-one" in str(result["stdout"]) and "+two" in str(result["stdout"])


def test_the_git_read_environment_drops_the_callers_git_variables(hostile_repo: tuple[Path, Path]) -> None:
    root, _ = hostile_repo
    env = git_read_environment(str(root), {"PATH": os.environ["PATH"], "GIT_EXTERNAL_DIFF": "x", "GIT_DIR": "/"})
    assert "GIT_EXTERNAL_DIFF" not in env and "GIT_DIR" not in env
    overrides = {env[f"GIT_CONFIG_KEY_{i}"]: env[f"GIT_CONFIG_VALUE_{i}"] for i in range(int(env["GIT_CONFIG_COUNT"]))}
    assert overrides == {
        "core.fsmonitor": "false",
        "core.hooksPath": "/dev/null",
        "log.showSignature": "false",
        "core.pager": "cat",
        "filter.clean.clean": "cat",
        "filter.clean.smudge": "cat",
        "filter.clean.process": "",
    }


def test_outside_a_repository_there_are_no_filters_to_switch_off(tmp_path: Path) -> None:
    env = git_read_environment(str(tmp_path), {"PATH": os.environ["PATH"]})
    assert env["GIT_CONFIG_COUNT"] == "4"


def test_a_line_that_is_not_a_read_runs_as_given(hostile_repo: tuple[Path, Path]) -> None:
    root, marker = hostile_repo
    ShellExecutor(str(root))({"command": "git diff; true"})  # build mode's business: the scope decides
    assert marker.exists()


def test_a_git_read_spelled_with_quotes_is_still_run_without_the_repositorys_programs(
    hostile_repo: tuple[Path, Path],
) -> None:
    root, marker = hostile_repo
    result = ShellExecutor(str(root))({"command": "g'it' diff"})
    assert result["exit_code"] == 0 and not marker.exists()
