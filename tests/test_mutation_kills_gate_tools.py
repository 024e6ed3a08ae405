"""Tests that pin what mutation testing found unpinned in the gate, the tool
values and the tool events: the exact errors (code, message, tool, detail)
for a bad gate policy, phase, tool declaration or registration, the full
verdicts of the catalog and of deployment refusals, the depth limit of JSON
values, and the exact messages of the strict tool-event readers."""

from __future__ import annotations

import sys

import pytest

from planfold.kernel.errors import PayloadError, ReplayError
from planfold.kernel.log import TOOL_CALL, TOOL_REFUSED, TOOL_RESULT, TOOL_WARNING, Event
from planfold.kernel.payload import JSON, JSONObject
from planfold.kernel.phase import RUNTIME_PHASES
from planfold.kernel.tools.events import (
    check_tool_event,
    read_tool_call,
    read_tool_notice,
    read_tool_result,
    tool_call_payload,
)
from planfold.kernel.tools.gate import (
    Allowed,
    DeploymentRule,
    GateError,
    GatePolicy,
    Refused,
    check_call,
    decide,
    list_available_specs,
)
from planfold.kernel.tools.spec import (
    CallClassifier,
    Classification,
    ToolCall,
    ToolRegistry,
    ToolSpec,
    ToolSpecError,
    is_json,
)

MYSTERY = ToolSpec("mystery", "Does something", {}, "unknown", "builtin")
WRITER = ToolSpec("writer", "Writes a file", {}, "write", "builtin")
HINT_PLAN = "Plan mode is read-only: research with read tools, then call exit_plan_mode."


def covers_all(tool: ToolSpec) -> bool:
    return True


def says_read_only(tool: ToolSpec, arguments: JSONObject) -> Classification:
    return Classification(True, "read-only", "it only reads")


READ_ONLY_CLASSIFIER = CallClassifier("reads", covers_all, says_read_only)


# --------------------------------------------------------------------------
# The gate: bad phases and bad policies


def test_an_unknown_phase_is_refused_with_its_name_in_the_message() -> None:
    with pytest.raises(GateError) as caught:
        decide("dreaming", GatePolicy(), MYSTERY, None)  # type: ignore[arg-type]
    assert (caught.value.code, str(caught.value)) == ("unknown-phase", "unknown runtime phase 'dreaming'")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"catalog": "all"}, "catalog must be 'filtered' or 'stable', got 'all'"),
        ({"enforcement": "soft"}, "enforcement must be 'hard' or 'advisory', got 'soft'"),
        ({"default_action": "maybe"}, "default_action must be 'allow' or 'deny', got 'maybe'"),
        ({"rules": [DeploymentRule("deny", "x")]}, "rules and classifiers must be tuples"),
        ({"classifiers": [READ_ONLY_CLASSIFIER]}, "rules and classifiers must be tuples"),
        ({"rules": ("deny x",)}, "'deny x' is not an allow or deny rule"),
        ({"rules": (DeploymentRule("deny", ""),)}, "a rule pattern must be a non-empty string"),
        (
            {"rules": (DeploymentRule("deny", "x", frozenset({"napping"})),)},  # type: ignore[arg-type]
            "rule phases frozenset({'napping'}) must be a frozenset of runtime phases",
        ),
        ({"classifiers": ("shell",)}, "'shell' is not a CallClassifier"),
    ],
)
def test_a_bad_gate_policy_says_exactly_what_is_wrong(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(GateError) as caught:
        GatePolicy(**kwargs)  # type: ignore[arg-type]
    assert (caught.value.code, str(caught.value)) == ("invalid-gate-policy", f"invalid gate policy: {message}")


def test_a_rule_may_name_every_runtime_phase() -> None:
    rule = DeploymentRule("deny", "writer", frozenset(RUNTIME_PHASES))
    policy = GatePolicy(rules=(rule,))
    assert policy.rules == (rule,)
    assert isinstance(decide("build_execute", policy, WRITER, None), Refused)


# --------------------------------------------------------------------------
# The gate: full verdicts


def test_a_deny_rule_refusal_tells_the_model_to_use_another_tool() -> None:
    policy = GatePolicy(rules=(DeploymentRule("deny", "wri*"),))
    assert decide("build_execute", policy, WRITER, None) == Refused(
        "denied-by-deployment",
        "the deployment denies writer (rule 'wri*') in build_execute",
        "writer",
        "build_execute",
        "Use another tool.",
    )


def test_an_unlisted_tool_under_default_deny_is_refused_with_the_whole_verdict() -> None:
    policy = GatePolicy(default_action="deny", rules=(DeploymentRule("allow", "read_*"),))
    assert decide("verify", policy, WRITER, None) == Refused(
        "not-allowed-by-deployment",
        "the deployment allows only listed tools, and writer is not listed for verify",
        "writer",
        "verify",
        "Use another tool.",
    )


def test_the_catalog_offers_an_unverified_tool_a_classifier_covers_in_plan_mode() -> None:
    policy = GatePolicy(classifiers=(READ_ONLY_CLASSIFIER,))
    assert decide("plan", policy, MYSTERY, None) == Allowed("mystery", "plan", "executor", "classifier-covers")
    assert list_available_specs(ToolRegistry.of(MYSTERY), "plan", policy) == (MYSTERY,)


def test_the_catalog_refuses_an_uncovered_unverified_tool_in_plan_mode_with_the_whole_verdict() -> None:
    expected = Refused(
        "unverified-in-read-only-phase",
        "mystery is not declared read-only, and plan is read-only",
        "mystery",
        "plan",
        HINT_PLAN,
    )
    assert decide("plan", GatePolicy(), MYSTERY, None) == expected
    advisory = decide("plan", GatePolicy(enforcement="advisory"), MYSTERY, None)
    assert advisory == Allowed("mystery", "plan", "executor", "advisory", warning=expected)


@pytest.mark.parametrize(
    ("call", "problem"),
    [
        (ToolCall("", "mystery", {}), "the call has no id"),
        (ToolCall(7, "mystery", {}), "the call has no id"),  # type: ignore[arg-type]
        (ToolCall("c1", "mystery", [1]), "the arguments are not a JSON object"),
    ],
)
def test_a_malformed_call_is_refused_with_what_is_wrong(call: ToolCall, problem: str) -> None:
    assert decide("build_execute", GatePolicy(), MYSTERY, call) == Refused(
        "malformed-call", problem, "mystery", "build_execute", "Send the arguments as one JSON object."
    )


def test_a_call_naming_another_tool_is_refused_under_the_name_it_sent() -> None:
    verdict = decide("build_execute", GatePolicy(), MYSTERY, ToolCall("c1", "other", {}))
    assert verdict == Refused(
        "malformed-call",
        "the call names 'other', not 'mystery'",
        "other",
        "build_execute",
        "Send the arguments as one JSON object.",
    )


def test_a_call_whose_tool_name_is_not_a_string_is_refused_under_the_tool_asked_about() -> None:
    verdict = decide("build_execute", GatePolicy(), MYSTERY, ToolCall("c1", 5, {}))  # type: ignore[arg-type]
    assert verdict == Refused(
        "malformed-call",
        "the call names 5, not 'mystery'",
        "mystery",
        "build_execute",
        "Send the arguments as one JSON object.",
    )
    # check_call never gets that far: it refuses the name itself.
    refused = check_call(ToolRegistry.of(MYSTERY), "build_execute", GatePolicy(), ToolCall("c1", 5, {}))  # type: ignore[arg-type]
    assert isinstance(refused, Refused) and (refused.code, refused.tool) == ("malformed-call", "")


# --------------------------------------------------------------------------
# Tool values: JSON depth, declarations, registration


def nested_lists(depth: int) -> JSON:
    value: JSON = 0
    for _ in range(depth):
        value = [value]
    return value


def nested_objects(depth: int) -> JSON:
    value: JSON = 0
    for _ in range(depth):
        value = {"k": value}
    return value


@pytest.mark.parametrize("nest", [nested_lists, nested_objects])
def test_json_may_nest_64_levels_but_not_65(nest: object) -> None:
    assert callable(nest)
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


def test_a_tool_spec_refuses_parameters_nested_too_deep() -> None:
    with pytest.raises(ToolSpecError) as caught:
        ToolSpec("deep", "Too deep", {"k": nested_objects(64)}, "read", "builtin")
    assert (caught.value.code, caught.value.tool) == ("invalid-tool-field", "deep")


def test_a_category_conflicting_with_a_read_effect_is_refused_with_its_message() -> None:
    with pytest.raises(ToolSpecError) as caught:
        ToolSpec("memo", "Remembers", {}, "read", "builtin", category="memory-write")
    err = caught.value
    assert (err.code, err.tool, str(err)) == (
        "effect-category-conflict",
        "memo",
        "tool 'memo' declares effect 'read' but category 'memory-write' writes",
    )


def test_a_read_only_hint_on_a_non_mcp_tool_is_refused_with_its_message() -> None:
    with pytest.raises(ToolSpecError) as caught:
        ToolSpec("lister", "Lists", {}, "read", "shell", read_only_hint=True)
    err = caught.value
    assert (err.code, err.tool, str(err)) == (
        "hint-not-mcp",
        "lister",
        "tool 'lister': only MCP tools carry a read-only hint",
    )


@pytest.mark.parametrize("name", ["exit_plan_mode", "Update_Todo", "report_verification"])
def test_a_builtin_tool_may_carry_a_runtime_owned_name(name: str) -> None:
    tool = ToolSpec(name, "The runtime's own", {}, "write", "builtin")
    assert (tool.name, tool.origin) == (name, "builtin")


def test_registering_something_that_is_not_a_tool_spec_is_refused() -> None:
    with pytest.raises(ToolSpecError) as caught:
        ToolRegistry().register("read_file")  # type: ignore[arg-type]
    err = caught.value
    assert (err.code, err.tool, str(err)) == (
        "invalid-tool-field",
        "",
        "only ToolSpec values can be registered, got str",
    )


def test_registering_a_name_twice_is_refused_with_the_tool_named() -> None:
    registry = ToolRegistry.of(MYSTERY)
    with pytest.raises(ToolSpecError) as caught:
        registry.register(ToolSpec("mystery", "Another", {}, "read", "builtin"))
    err = caught.value
    assert (err.code, err.tool, str(err)) == ("duplicate-tool", "mystery", "tool 'mystery' is already registered")


# --------------------------------------------------------------------------
# Tool events: the strict readers and the fold's check


def test_a_tool_call_payload_with_arguments_that_are_not_json_is_refused() -> None:
    with pytest.raises(PayloadError) as caught:
        read_tool_call({"call_id": "c1", "tool": "mystery", "arguments": {"x": float("inf")}})
    assert str(caught.value) == "'arguments' must be a JSON value"
    with pytest.raises(PayloadError) as built:
        tool_call_payload(ToolCall("c1", "mystery", {"x": float("nan")}))
    assert str(built.value) == "'arguments' must be a JSON value"


def test_recording_a_call_with_arguments_nested_past_any_limit_is_a_payload_error() -> None:
    deep = nested_lists(sys.getrecursionlimit() + 100)
    with pytest.raises(PayloadError) as caught:
        tool_call_payload(ToolCall("c1", "mystery", deep))
    assert str(caught.value) == "'arguments' must be a JSON value"


def test_the_tool_event_readers_name_the_payload_missing_a_key() -> None:
    with pytest.raises(PayloadError) as call:
        read_tool_call({"call_id": "c1", "tool": "mystery"})
    assert str(call.value) == "tool/call payload is missing key(s) ['arguments']"
    with pytest.raises(PayloadError) as result:
        read_tool_result({"call_id": "c1", "tool": "mystery", "ok": True})
    assert str(result.value) == "tool/result payload is missing key(s) ['output']"
    with pytest.raises(PayloadError) as warning:
        read_tool_notice({"call_id": "c1"}, TOOL_WARNING)
    assert str(warning.value) == "tool/warning payload is missing key(s) ['code', 'phase', 'reason', 'tool']"


NOTICE: dict[str, JSON] = {"call_id": "c1", "tool": "mystery", "code": "no-way", "reason": "because", "phase": "plan"}
RESULT: dict[str, JSON] = {"call_id": "c1", "tool": "mystery", "ok": True, "output": "done"}


@pytest.mark.parametrize("call_id", ["", "  "])
def test_a_notice_or_result_without_a_call_id_is_refused(call_id: str) -> None:
    with pytest.raises(PayloadError) as notice:
        read_tool_notice({**NOTICE, "call_id": call_id})
    assert str(notice.value) == "'call_id' must not be empty"
    with pytest.raises(PayloadError) as result:
        read_tool_result({**RESULT, "call_id": call_id})
    assert str(result.value) == "'call_id' must not be empty"


def test_a_notice_with_a_bad_code_or_phase_says_which() -> None:
    with pytest.raises(PayloadError) as code:
        read_tool_notice({**NOTICE, "code": "No Way"})
    assert str(code.value) == "'code' must be kebab-case, got 'No Way'"
    with pytest.raises(PayloadError) as phase:
        read_tool_notice({**NOTICE, "phase": "napping"})
    assert str(phase.value) == (
        "'phase' must be one of ['plan', 'build_bootstrap', 'build_execute', 'verify'], got 'napping'"
    )


@pytest.mark.parametrize("kind", [TOOL_REFUSED, TOOL_WARNING])
def test_the_fold_check_names_the_kind_of_a_malformed_notice(kind: str) -> None:
    event = Event(seq=3, kind=kind, at=0, payload={"call_id": "c1"})
    with pytest.raises(PayloadError) as caught:
        check_tool_event(event, turn_open=True)
    assert str(caught.value) == f"{kind} payload is missing key(s) ['code', 'phase', 'reason', 'tool']"


def test_the_fold_check_refuses_a_tool_event_whose_payload_is_not_an_object() -> None:
    event = Event(seq=2, kind=TOOL_RESULT, at=0, payload=["c1"])  # type: ignore[arg-type]
    with pytest.raises(PayloadError) as caught:
        check_tool_event(event, turn_open=True)
    assert str(caught.value) == "tool/result payload must be an object"


def test_the_fold_check_refuses_a_tool_event_outside_a_turn_with_its_kind() -> None:
    event = Event(seq=4, kind=TOOL_CALL, at=0, payload={"call_id": "c1", "tool": "mystery", "arguments": {}})
    with pytest.raises(ReplayError) as caught:
        check_tool_event(event, turn_open=False)
    err = caught.value
    assert (err.position, err.rule, err.detail) == (4, "tool-outside-turn", "tool/call while no turn is open")
