from __future__ import annotations

from typing import Any

import pytest

from planfold.adapters.runtime.toolset import (
    LIST_FILES,
    READ_FILE,
    WRITE_FILE,
    default_registry,
    open_async_runtime,
    open_runtime,
    runtime_registry,
)
from planfold.kernel.tools.spec import ToolSpec, ToolSpecError

RUNTIME_OWNED = ("exit_plan_mode", "bootstrap_plan", "update_todo", "report_verification")


@pytest.mark.parametrize("opener", [open_runtime, open_async_runtime])
def test_opening_a_runtime_with_a_keyword_it_does_not_take_is_a_type_error(opener: Any) -> None:
    with pytest.raises(TypeError, match=r"got unexpected keyword arguments: polcy"):
        opener(None, "s", None, None, None, polcy=None)


def test_a_registry_is_the_given_tools_then_the_runtime_owned_ones_then_the_extra_ones() -> None:
    bash = ToolSpec("bash", "Run a shell line", {"type": "object"}, effect="unknown", origin="mcp")
    assert runtime_registry((bash,)).names == ("bash", *RUNTIME_OWNED)
    assert runtime_registry((), (bash,)).names == (*RUNTIME_OWNED, "bash")
    defaults = (READ_FILE.name, LIST_FILES.name, WRITE_FILE.name)
    assert default_registry((bash,)).names == (*defaults, *RUNTIME_OWNED, "bash")
    assert default_registry() == runtime_registry((READ_FILE, LIST_FILES, WRITE_FILE))


def test_a_registry_refuses_a_tool_under_a_taken_name() -> None:
    with pytest.raises(ToolSpecError) as clash:
        default_registry((READ_FILE,))
    assert clash.value.code == "duplicate-tool"
    mine = ToolSpec("update_todo", "Mine", {"type": "object"}, effect="unknown", origin="builtin")
    with pytest.raises(ToolSpecError) as owned:
        runtime_registry((mine,))
    assert owned.value.code == "duplicate-tool"
