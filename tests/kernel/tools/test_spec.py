"""Tool values: JSON arguments and their depth limit, tool declarations, the
registry, and the classifications a deployment plugs into the gate. Each bad
one is a ``ToolSpecError`` with its exact code, tool and message."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from planfold.kernel.payload import JSON, JSONObject
from planfold.kernel.tools.spec import (
    CallClassifier,
    Classification,
    ToolRegistry,
    ToolSpec,
    ToolSpecError,
    is_json,
)
from tests.gate_helpers import EXIT, OBJECT, READ_TOOLS, nested_lists, nested_objects, spec


def refusal(make: Callable[[], object]) -> tuple[str, str, str]:
    """The code, tool and message of the ``ToolSpecError`` that ``make`` raises."""
    with pytest.raises(ToolSpecError) as caught:
        make()
    err = caught.value
    return err.code, err.tool, str(err)


# --------------------------------------------------------------------------
# JSON values


@pytest.mark.parametrize("nest", [nested_lists, nested_objects])
def test_json_may_nest_64_levels_but_not_65(nest: Callable[[int], JSON]) -> None:
    assert is_json(nest(64)) is True
    assert is_json(nest(65)) is False


@pytest.mark.parametrize(
    "value",
    [[object()], [1, {2, 3}], [[float("nan")]], ({"a": object()},), {"a": [object()]}, {"a": {"b": {1: 2}}}],
)
def test_json_checks_every_item_of_a_list_or_object(value: object) -> None:
    assert is_json(value) is False


def test_json_limit_holds_at_any_depth_of_a_list_or_object() -> None:
    assert is_json([{"k": nested_lists(62)}]) is True
    assert is_json([{"k": nested_lists(63)}]) is False
    assert is_json({"k": [nested_objects(62)]}) is True
    assert is_json({"k": [nested_objects(63)]}) is False


# --------------------------------------------------------------------------
# Declarations


@pytest.mark.parametrize(
    ("args", "kwargs", "code"),
    [
        (("", "d", OBJECT, "read", "builtin"), {}, "invalid-tool-name"),
        (("read file", "d", OBJECT, "read", "builtin"), {}, "invalid-tool-name"),
        (("read_fіle", "d", OBJECT, "read", "builtin"), {}, "invalid-tool-name"),
        (("x" * 65, "d", OBJECT, "read", "builtin"), {}, "invalid-tool-name"),
        (("t", 3, OBJECT, "read", "builtin"), {}, "invalid-tool-field"),
        (("t", "d", [], "read", "builtin"), {}, "invalid-tool-field"),
        (("t", "d", {"a": {1}}, "read", "builtin"), {}, "invalid-tool-field"),
        (("t", "d", OBJECT, "reads", "builtin"), {}, "invalid-tool-field"),
        (("t", "d", OBJECT, "read", "plugin"), {}, "invalid-tool-field"),
        (("t", "d", OBJECT, "write", "builtin"), {"category": "memory"}, "invalid-tool-field"),
        (("t", "d", OBJECT, "read", "mcp"), {"read_only_hint": "yes"}, "invalid-tool-field"),
        (("t", "d", OBJECT, "read", "builtin"), {"category": "memory-write"}, "effect-category-conflict"),
        (("t", "d", OBJECT, "read", "builtin"), {"read_only_hint": True}, "hint-not-mcp"),
    ],
)
def test_an_invalid_tool_spec_raises_tool_spec_error(args: tuple[Any, ...], kwargs: dict[str, Any], code: str) -> None:
    with pytest.raises(ToolSpecError) as err:
        ToolSpec(*args, **kwargs)
    assert err.value.code == code


def test_a_tool_spec_refuses_parameters_nested_too_deep() -> None:
    with pytest.raises(ToolSpecError) as caught:
        ToolSpec("deep", "Too deep", {"k": nested_objects(64)}, "read", "builtin")
    assert (caught.value.code, caught.value.tool) == ("invalid-tool-field", "deep")


def test_a_category_conflicting_with_a_read_effect_is_refused_with_its_message() -> None:
    assert refusal(lambda: ToolSpec("memo", "Remembers", {}, "read", "builtin", category="memory-write")) == (
        "effect-category-conflict",
        "memo",
        "tool 'memo' declares effect 'read' but category 'memory-write' writes",
    )


def test_a_read_only_hint_on_a_non_mcp_tool_is_refused_with_its_message() -> None:
    assert refusal(lambda: ToolSpec("lister", "Lists", {}, "read", "shell", read_only_hint=True)) == (
        "hint-not-mcp",
        "lister",
        "tool 'lister': only MCP tools carry a read-only hint",
    )


def test_runtime_owned_names_cannot_be_taken_by_mcp_or_shell_tools() -> None:
    for origin in ("mcp", "shell"):
        for name in ("exit_plan_mode", "Exit_Plan_Mode"):
            with pytest.raises(ToolSpecError) as err:
                spec(name, "unknown", origin)
            assert err.value.code == "runtime-owned-name"


@pytest.mark.parametrize("name", ["exit_plan_mode", "Update_Todo", "report_verification"])
def test_a_builtin_tool_may_carry_a_runtime_owned_name(name: str) -> None:
    tool = ToolSpec(name, "The runtime's own", {}, "write", "builtin")
    assert (tool.name, tool.origin) == (name, "builtin")


TARGETED: JSONObject = {"type": "object", "properties": {"file_path": {"type": "string"}, "others": {"type": "array"}}}


def test_a_tool_declares_which_arguments_name_its_targets() -> None:
    tool = ToolSpec("writer", "Writes", TARGETED, "write", "mcp", target_args=("file_path", "others"))
    assert tool.target_args == ("file_path", "others")
    assert ToolSpec("plain", "Writes", TARGETED, "write", "builtin").target_args == ()


@pytest.mark.parametrize(
    ("targets", "message"),
    [
        (("path",), "tool 'writer': target_args ['path'] are not properties of its parameters"),
        (("file_path", "file_path"), "tool 'writer': target_args names an argument twice: ['file_path', 'file_path']"),
        (("",), "tool 'writer': target_args must be a tuple of argument names"),
        (["file_path"], "tool 'writer': target_args must be a tuple of argument names"),
        ((3,), "tool 'writer': target_args must be a tuple of argument names"),
    ],
)
def test_target_arguments_must_be_distinct_properties_of_the_parameters(targets: object, message: str) -> None:
    with pytest.raises(ToolSpecError) as caught:
        ToolSpec("writer", "Writes", TARGETED, "write", "mcp", target_args=targets)  # type: ignore[arg-type]
    assert (caught.value.code, caught.value.tool, str(caught.value)) == ("invalid-tool-field", "writer", message)
    with pytest.raises(ToolSpecError):
        ToolSpec("writer", "Writes", {"type": "object"}, "write", "mcp", target_args=("file_path",))


def test_a_spec_is_frozen_against_its_callers_later_mutation() -> None:
    parameters: dict[str, Any] = {"type": "object", "properties": {"p": {"type": "string"}}}
    tool = ToolSpec("t", "d", parameters, "read", "builtin")
    parameters["properties"]["p"]["type"] = "integer"
    parameters["extra"] = True
    assert tool.to_json()["parameters"] == {"type": "object", "properties": {"p": {"type": "string"}}}
    with pytest.raises(TypeError):
        tool.parameters["x"] = 1  # type: ignore[index]


# --------------------------------------------------------------------------
# The registry


def test_a_bad_registration_raises_and_leaves_the_registry_unchanged() -> None:
    registry = ToolRegistry.of(*READ_TOOLS)
    for bad, code in (
        (spec("read_file", "write", "builtin"), "duplicate-tool"),
        (spec("READ_FILE", "read", "builtin"), "tool-name-case-collision"),
    ):
        with pytest.raises(ToolSpecError) as err:
            registry.register(bad)
        assert err.value.code == code
    with pytest.raises(ToolSpecError):
        registry.register("read_file")  # type: ignore[arg-type]
    assert registry.specs == READ_TOOLS
    grown = registry.register(EXIT)
    assert grown.names[-1] == "exit_plan_mode" and registry.specs == READ_TOOLS


def test_registering_something_that_is_not_a_tool_spec_is_refused() -> None:
    assert refusal(lambda: ToolRegistry().register("read_file")) == (  # type: ignore[arg-type]
        "invalid-tool-field",
        "",
        "only ToolSpec values can be registered, got str",
    )


def test_registering_a_name_twice_is_refused_with_the_tool_named() -> None:
    registry = ToolRegistry.of(ToolSpec("mystery", "Does something", {}, "unknown", "builtin"))
    assert refusal(lambda: registry.register(ToolSpec("mystery", "Another", {}, "read", "builtin"))) == (
        "duplicate-tool",
        "mystery",
        "tool 'mystery' is already registered",
    )


# --------------------------------------------------------------------------
# Classifications and classifiers


def test_classification_values_are_checked() -> None:
    with pytest.raises(ToolSpecError):
        Classification("yes", "ok", "r")  # type: ignore[arg-type]
    with pytest.raises(ToolSpecError):
        Classification(True, "Not Kebab", "r")


def test_a_classification_must_have_a_boolean_verdict() -> None:
    assert refusal(lambda: Classification(1, "ok-code", "why")) == (  # type: ignore[arg-type]
        "invalid-classification",
        "",
        "Classification.read_only must be a bool",
    )


@pytest.mark.parametrize("code", ["Not Kebab", 7])
def test_a_classification_code_must_be_kebab_case(code: object) -> None:
    assert refusal(lambda: Classification(True, code, "why")) == (  # type: ignore[arg-type]
        "invalid-classification",
        "",
        f"classification code {code!r} is not kebab-case",
    )


@pytest.mark.parametrize("name", ["Bad Name", 3])
def test_a_classifier_name_must_be_kebab_case(name: object) -> None:
    def make() -> CallClassifier:
        return CallClassifier(name, lambda tool: True, lambda tool, args: Classification(True, "ok", "ok"))  # type: ignore[arg-type]

    assert refusal(make) == ("invalid-classification", "", f"classifier name {name!r} is not kebab-case")
