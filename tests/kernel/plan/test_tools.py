"""The runtime-owned plan tools' kernel decisions at their edges: the effects
an executor call is about to have, by tool kind and path, and the open todos
of a session with or without a plan. (The tools through the real loop are
``tests/adapters/runtime/test_plan_tools.py``'s subject.)"""

from __future__ import annotations

from planfold.kernel.plan.scope import Effect
from planfold.kernel.plan.tools import execution_effects, open_todo_ids
from planfold.kernel.session import SessionState, fold_session
from planfold.kernel.tools.spec import ToolSpec
from tests.fuzz.seeds import seed_logs


def test_a_read_tool_call_has_no_effect_and_a_write_or_shell_call_has_one_with_its_string_path() -> None:
    reader = ToolSpec("reader", "Read", {}, "read", "builtin")
    writer = ToolSpec("writer", "Write", {}, "write", "builtin")
    shell = ToolSpec("bash", "Run", {}, "write", "shell")
    assert execution_effects(reader, {"path": "a.py"}) == ()
    assert execution_effects(writer, {"path": "a.py"}) == (Effect("write", "a.py"),)
    assert execution_effects(writer, {"path": 5}) == (Effect("write", None),)
    assert execution_effects(shell, {"command": "ls"}) == (Effect("shell", None),)


def test_open_todos_are_those_of_the_current_plan_and_none_without_one() -> None:
    realigned = fold_session(seed_logs()[3])  # ends with a plan sent back for realignment
    assert open_todo_ids(SessionState()) == ()
    assert open_todo_ids(realigned) == ("t1", "t2")
