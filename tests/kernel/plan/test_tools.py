"""The runtime-owned plan tools' kernel decisions at their edges: the effects
an executor call is about to have, by tool kind and path, and the open todos
of a session with or without a plan. (The tools through the real loop are
``tests/adapters/runtime/test_plan_tools.py``'s subject.)"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planfold.kernel.payload import JSON, JSONObject
from planfold.kernel.plan.scope import Effect, check_scope, path_in_scope
from planfold.kernel.plan.spec import PlanScope
from planfold.kernel.plan.tools import execution_effects
from planfold.kernel.plan_events import open_todo_ids
from planfold.kernel.session import SessionState, fold_session
from planfold.kernel.tools.spec import ToolSpec
from tests.fuzz.seeds import seed_logs
from tests.gate_helpers import any_shell_write
from tests.plan_helpers import spec

_PATH: JSONObject = {"type": "string"}


def test_a_read_tool_call_has_no_effect_and_a_write_call_has_one_per_declared_target() -> None:
    reader = ToolSpec("reader", "Read", {}, "read", "builtin")
    params: JSONObject = {"type": "object", "properties": {"file_path": _PATH, "also": {"type": "array"}}}
    writer = ToolSpec("writer", "Write", params, "write", "builtin", target_args=("file_path", "also"))
    assert execution_effects(reader, {"path": "a.py"}) == ()
    assert execution_effects(writer, {"file_path": "a.py", "also": ["b.py", "c/d.py"]}) == (
        Effect("write", "a.py"),
        Effect("write", "b.py"),
        Effect("write", "c/d.py"),
    )


@pytest.mark.parametrize(
    "arguments",
    [
        {"also": ["b.py"]},
        {"file_path": "a.py"},
        {"file_path": 5, "also": ["b.py"]},
        {"file_path": None, "also": ["b.py"]},
        {"file_path": "a.py", "also": ["b.py", 3]},
        {"file_path": "a.py", "also": []},
        {"file_path": "a.py", "also": {"b.py": True}},
    ],
)
def test_a_write_whose_declared_targets_are_missing_or_not_paths_has_unknown_targets(
    arguments: dict[str, JSON],
) -> None:
    params: JSONObject = {"type": "object", "properties": {"file_path": _PATH, "also": {"type": "array"}}}
    writer = ToolSpec("writer", "Write", params, "write", "mcp", target_args=("file_path", "also"))
    assert execution_effects(writer, arguments) == (Effect.unknown("write"),)


def test_a_write_tool_that_declares_no_targets_has_unknown_targets_whatever_it_is_called_with() -> None:
    writer = ToolSpec("writer", "Write", {}, "write", "builtin")
    mcp = ToolSpec("mcp__fs__write", "Write", {}, "unknown", "mcp", read_only_hint=True)
    for tool in (writer, mcp):
        assert execution_effects(tool, {"path": "a.py"}) == (Effect.unknown("write"),)
        assert execution_effects(tool, {"file_path": "/etc/passwd"}) == (Effect.unknown("write"),)


_NAMES = ("path", "file_path", "dest")
_PATHS = st.sampled_from(["src/a.py", "src", "src/../x", "docs/x.md", "../x", "/etc/passwd", "", "a b"])
_VALUES = st.one_of(_PATHS, st.lists(_PATHS, max_size=3), st.integers(), st.none(), st.booleans())
_SCOPE = PlanScope(paths=("src/",), effects=("write", "shell"))


@given(
    targets=st.lists(st.sampled_from(_NAMES), unique=True, max_size=3).map(tuple),
    origin=st.sampled_from(["builtin", "mcp"]),
    arguments=st.dictionaries(st.sampled_from((*_NAMES, "content")), _VALUES, max_size=4),
)
def test_no_write_passes_a_scope_with_paths_unless_every_target_is_named_inside_it(
    targets: tuple[str, ...], origin: str, arguments: dict[str, JSON]
) -> None:
    params: dict[str, JSON] = {"type": "object", "properties": {name: {"type": "string"} for name in _NAMES}}
    tool = ToolSpec("writer", "Write", params, "write", origin, target_args=targets)  # type: ignore[arg-type]
    effects = execution_effects(tool, arguments)
    assert effects, "a write always has an effect"
    if check_scope(spec(scope=_SCOPE), effects).violations:
        return
    assert all(e.targets_known and e.path is not None and path_in_scope(e.path, _SCOPE.paths) for e in effects)
    named = [arguments[name] for name in targets]
    assert all(isinstance(v, str) or (isinstance(v, list) and v) for v in named)


@given(any_shell_write)
def test_no_shell_write_form_passes_a_scope_with_paths_unless_its_targets_are_named_inside_it(
    case: tuple[str, str],
) -> None:
    shell = ToolSpec("bash", "Run", {}, "write", "shell")
    _, line = case
    effects = execution_effects(shell, {"command": line})
    violations = check_scope(spec(scope=_SCOPE), effects).violations
    assert violations or all(e.path is not None and path_in_scope(e.path, _SCOPE.paths) for e in effects), (
        line,
        effects,
    )


@pytest.mark.parametrize(
    ("command", "effects"),
    [
        ("ls -la", (Effect("shell"),)),
        ("git log -5", (Effect("shell"),)),
        ("touch a.py src/b.py", (Effect("shell", "a.py"), Effect("shell", "src/b.py"))),
        ("cat a | tee -a out.log", (Effect("shell", "out.log"),)),
        ("make", (Effect.unknown("shell"),)),
        ("cat a > b", (Effect.unknown("shell"),)),
    ],
)
def test_a_shell_call_has_the_effects_the_classifier_can_name(command: str, effects: tuple[Effect, ...]) -> None:
    shell = ToolSpec("bash", "Run", {}, "write", "shell")
    assert execution_effects(shell, {"command": command}) == effects
    assert execution_effects(shell, {"cmd": command}) == (Effect.unknown("shell"),)


def test_open_todos_are_those_of_the_current_plan_and_none_without_one() -> None:
    realigned = fold_session(seed_logs()[3])  # ends with a plan sent back for realignment
    assert open_todo_ids(SessionState()) == ()
    assert open_todo_ids(realigned) == ("t1", "t2")
