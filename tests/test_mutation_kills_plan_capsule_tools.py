"""Tests that pin what mutation testing found unpinned in state capsules and
the plan tools: a capsule keeps the realignment note and covers it with its
hash, survives non-ASCII goal text, compares the caller's goal, and renders
every part; execution effects and open todos at their edges."""

from __future__ import annotations

import pytest

from planfold.kernel.errors import PayloadError
from planfold.kernel.plan.capsule import (
    StateCapsule,
    build_capsule,
    capsule_from_json,
    capsule_matches,
    capsule_to_json,
    render_capsule,
)
from planfold.kernel.plan.scope import Effect
from planfold.kernel.plan.spec import SummaryView
from planfold.kernel.plan.tools import execution_effects, open_todo_ids
from planfold.kernel.session import SessionState, fold_session
from planfold.kernel.tools.spec import ToolSpec
from tests.fuzz.seeds import seed_logs

REALIGNED = fold_session(seed_logs()[3])  # ends with a plan sent back for realignment


def test_a_capsule_keeps_the_realignment_note_and_its_hash_covers_it() -> None:
    assert REALIGNED.plan.realign == "an edit left the scope"
    capsule = build_capsule(REALIGNED)
    assert capsule.realign == "an edit left the scope"
    stored = capsule_to_json(capsule)
    assert capsule_from_json(stored) == capsule
    with pytest.raises(PayloadError, match="hash does not match"):
        capsule_from_json({**stored, "realign": "nothing to see"})


def test_a_capsule_with_non_ascii_goal_text_round_trips() -> None:
    capsule = build_capsule(SessionState(), {"objective": "café ☕", "rounds": 2})
    assert capsule.goal == {"objective": "café ☕", "rounds": 2}
    assert capsule_from_json(capsule_to_json(capsule)) == capsule


def test_a_capsule_matches_only_with_the_goal_it_was_built_with() -> None:
    goal = {"objective": "ship it"}
    capsule = build_capsule(REALIGNED, goal)
    assert capsule_matches(capsule, REALIGNED, goal)
    assert not capsule_matches(capsule, REALIGNED)
    assert not capsule_matches(build_capsule(REALIGNED), REALIGNED, goal)


def test_a_capsule_renders_every_part() -> None:
    summary = SummaryView("Fix it", ("Read", "Change"), ("No API change", "Keep tests"), ("make test", "make lint"), ())
    capsule = StateCapsule(
        "build", "build_execute", "p1", 2, "executing", "abc", "scope moved", summary, '{"a":1}', "f" * 64
    )
    assert render_capsule(capsule) == (
        "Session state (capsule ffffffffffff): mode build, phase build_execute.\n"
        "Plan p1, revision 2, executing.\n"
        "Realignment needed: scope moved\n"
        "Goal of the plan: Fix it\n"
        "Key steps: Read; Change\n"
        "Constraints: No API change; Keep tests\n"
        "Verify: make test; make lint\n"
        "Active todos: none\n"
        'Goal: {"a":1}\n'
    )


def test_execution_effects_by_tool_kind_and_path() -> None:
    reader = ToolSpec("reader", "Read", {}, "read", "builtin")
    writer = ToolSpec("writer", "Write", {}, "write", "builtin")
    shell = ToolSpec("bash", "Run", {}, "write", "shell")
    assert execution_effects(reader, {"path": "a.py"}) == ()
    assert execution_effects(writer, {"path": "a.py"}) == (Effect("write", "a.py"),)
    assert execution_effects(writer, {"path": 5}) == (Effect("write", None),)
    assert execution_effects(shell, {"command": "ls"}) == (Effect("shell", None),)


def test_no_plan_has_no_open_todos() -> None:
    assert open_todo_ids(SessionState()) == ()
    assert open_todo_ids(REALIGNED) == ("t1", "t2")
