"""Tests that pin what mutation testing found unpinned in plan scopes: a path
that leaves the workspace (absolute, empty, or ``..``) is never in scope,
and scope patterns are matched literally apart from trailing slashes."""

from __future__ import annotations

import pytest

from planfold.kernel.plan.scope import path_in_scope


@pytest.mark.parametrize(
    ("path", "patterns"),
    [
        ("/etc/passwd", ["/etc"]),
        ("/etc/passwd", ["/"]),
        ("", ["."]),
        ("..", ["."]),
        ("..", [".."]),
        ("../outside.py", ["."]),
    ],
)
def test_a_path_that_leaves_the_workspace_is_in_no_scope(path: str, patterns: list[str]) -> None:
    assert not path_in_scope(path, patterns)


@pytest.mark.parametrize(
    ("path", "pattern", "covered"),
    [
        ("src/a.py", "src/", True),
        ("src/a.py", "src//", True),
        ("src/a.py", "src ", False),
        ("build/other.py", "build/X", False),
        ("build/X/a.py", "build/X/", True),
        ("X/a.py", "X/", True),
    ],
)
def test_patterns_are_literal_but_for_trailing_slashes(path: str, pattern: str, covered: bool) -> None:
    assert path_in_scope(path, [pattern]) is covered
