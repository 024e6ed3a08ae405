"""The tool gate's decision, case by case: the seed's lines on tool filtering,
forged calls and MCP; the verdict table; deployment rules; advisory mode;
classifiers that misbehave, and which of several answers counts;
runtime-owned tools; the whole verdict (code, reason, tool, phase and hint)
of the refusals a model sees; and the typed errors for a bad phase or
policy. Tool declarations and registration are ``test_spec``'s subject."""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError
from typing import Any, get_args

import pytest

from planfold.kernel.payload import JSONObject
from planfold.kernel.phase import READ_ONLY_PHASES, RUNTIME_PHASES, RuntimePhase
from planfold.kernel.tools import RUNTIME_OWNED_TOOLS
from planfold.kernel.tools.gate import (
    TOOL_CLASSES,
    VERDICT_TABLE,
    Allowed,
    CatalogMode,
    DeploymentRule,
    Enforcement,
    GateError,
    GatePolicy,
    Refused,
    check_call,
    decide,
    list_available_specs,
    tool_class,
)
from planfold.kernel.tools.spec import (
    RUNTIME_TOOLS,
    CallClassifier,
    Classification,
    RuntimeToolName,
    ToolCall,
    ToolRegistry,
    ToolSpec,
)
from tests.gate_helpers import (
    BROKEN,
    EXIT,
    MCP_NEVER,
    MCP_PATH_READ,
    MCP_TOOLS,
    PHASES,
    READ_TOOLS,
    REGISTRY,
    SHELL,
    WRITE_TOOLS,
    spec,
)

HARD = GatePolicy()
RUNTIME_PHASES_OF: dict[str, frozenset[RuntimePhase]] = {name: tool.phases for name, tool in RUNTIME_TOOLS.items()}


def call(tool: str, arguments: Any = None, call_id: str = "call-1") -> ToolCall:
    return ToolCall.recorded(call_id, tool, {} if arguments is None else arguments)


def names(specs: tuple[ToolSpec, ...]) -> list[str]:
    return [s.name for s in specs]


MYSTERY = ToolSpec("mystery", "Does something", {}, "unknown", "builtin")
WRITER = ToolSpec("writer", "Writes a file", {}, "write", "builtin")
HINT_PLAN = "Plan mode is read-only: research with read tools, then call exit_plan_mode."


def covers_all(tool: ToolSpec) -> bool:
    return True


def says_read_only(tool: ToolSpec, arguments: JSONObject) -> Classification:
    return Classification(True, "read-only", "it only reads")


READ_ONLY_CLASSIFIER = CallClassifier("reads", covers_all, says_read_only)
CALL = ToolCall.of("c1", "mystery", {"x": 1})


def classifier(name: str, answer: object) -> CallClassifier:
    """A classifier covering every tool that raises ``answer`` if it is an
    exception and returns it otherwise (whatever it is)."""

    def classify(tool: ToolSpec, arguments: object) -> Classification:
        if isinstance(answer, Exception):
            raise answer
        return answer  # type: ignore[return-value]

    return CallClassifier(name, covers_all, classify)


# --------------------------------------------------------------------------
# Seed 000, Test Plan lines 4, 5 and 21


def test_seed000_plan_list_available_specs_returns_only_read_only_tools() -> None:
    listed = list_available_specs(REGISTRY, "plan", HARD)
    assert names(listed) == [t.name for t in READ_TOOLS] + ["exit_plan_mode"]
    assert all(t.effect == "read" and t.origin == "builtin" for t in listed if t is not EXIT)
    # build_bootstrap is read-only too (exit_plan_mode belongs to plan mode);
    # execution phases list everything but the tools that would change the
    # plan state and exit_plan_mode.
    assert list_available_specs(REGISTRY, "build_bootstrap", HARD) == READ_TOOLS
    executing = list_available_specs(REGISTRY, "build_execute", HARD)
    assert executing == tuple(t for t in REGISTRY if t.name not in ("set_plan", "exit_plan_mode"))


@pytest.mark.parametrize("phase", sorted(READ_ONLY_PHASES))
@pytest.mark.parametrize("tool", WRITE_TOOLS, ids=lambda t: t.name)
def test_seed000_plan_forged_write_call_hard_blocked_at_execution(phase: RuntimePhase, tool: ToolSpec) -> None:
    arguments = {"command": "rm -rf ."} if tool.origin == "shell" else {"path": "a"}
    verdict = check_call(REGISTRY, phase, HARD, call(tool.name, arguments))
    assert isinstance(verdict, Refused)
    assert verdict.tool == tool.name and verdict.phase == phase
    assert verdict.reason and verdict.hint
    # Hidden from the catalog, and refused even with a read-only shell command.
    assert tool not in list_available_specs(REGISTRY, phase, HARD)
    if tool.origin == "shell":
        again = check_call(REGISTRY, phase, HARD, call(tool.name, {"command": "ls"}))
        assert isinstance(again, Refused)


def test_seed000_mcp_invisible_and_not_executable_in_plan_by_default() -> None:
    listed = list_available_specs(REGISTRY, "plan", HARD)
    assert not [t for t in listed if t.origin == "mcp"]
    for tool in MCP_TOOLS:
        verdict = check_call(REGISTRY, "plan", HARD, call(tool.name, {"path": "README.md"}))
        assert isinstance(verdict, Refused), tool.name
        assert verdict.code in {"unverified-in-read-only-phase", "write-in-read-only-phase"}
    # Its read-only hint does not help, and MCP runs once the plan executes.
    claims = [t for t in MCP_TOOLS if t.read_only_hint]
    assert claims and all(tool_class(t) == "unverified" for t in claims)
    verdict = check_call(REGISTRY, "build_execute", HARD, call(MCP_TOOLS[0].name, {"path": "a"}))
    assert isinstance(verdict, Allowed)


# --------------------------------------------------------------------------
# The verdict table


def test_verdict_table_covers_every_phase_and_class() -> None:
    assert set(VERDICT_TABLE) == {(p, c) for p in RUNTIME_PHASES for c in TOOL_CLASSES}


def test_read_only_phases_let_nothing_but_reads_through_unconditionally() -> None:
    for (phase, klass), row in VERDICT_TABLE.items():
        if phase in READ_ONLY_PHASES and klass in ("write", "unverified", "plan-state"):
            assert row.rule in ("deny", "classify", "never"), (phase, klass)
            assert row.code and row.hint
        if klass == "plan-state":
            assert row.rule == "never"
        owned = RUNTIME_PHASES_OF.get(klass)
        if owned is not None:
            assert row.rule == ("runtime" if phase in owned else "never")


def test_tool_class_follows_declarations_only() -> None:
    assert {tool_class(t) for t in READ_TOOLS} == {"read"}
    assert tool_class(EXIT) == "exit_plan_mode"
    classes = {t.name: tool_class(t) for t in WRITE_TOOLS}
    assert classes["set_plan"] == "plan-state"
    assert classes["memory_delete"] == classes["todo_update"] == "write"
    assert classes["mystery_tool"] == classes["shell_readonly"] == "unverified"
    assert classes["mcp__fs__read_file"] == classes["mcp__gh__search"] == "unverified"
    assert classes["mcp__fs__write_file"] == "write"


# --------------------------------------------------------------------------
# Runtime-owned tools and plan state


RUNTIME_REGISTRY = ToolRegistry.of(*(spec(name, "unknown", "builtin") for name in RUNTIME_TOOLS))


@pytest.mark.parametrize("enforcement", ["hard", "advisory"])
@pytest.mark.parametrize("catalog", ["filtered", "stable"])
@pytest.mark.parametrize("phase", PHASES)
def test_runtime_owned_tools_are_offered_only_in_their_phases_and_routed_to_the_runtime(
    catalog: CatalogMode, enforcement: Enforcement, phase: RuntimePhase
) -> None:
    deny_all = GatePolicy(catalog=catalog, enforcement=enforcement, rules=(DeploymentRule("deny", "*"),))
    listed = names(list_available_specs(RUNTIME_REGISTRY, phase, deny_all))
    for name, owned in RUNTIME_TOOLS.items():
        verdict = check_call(RUNTIME_REGISTRY, phase, deny_all, call(name, {"x": 1}))
        if phase in owned.phases:
            assert name in listed
            assert verdict == Allowed(name, phase, "runtime", "runtime-owned")
        else:
            assert (name in listed) == (catalog == "stable")
            assert isinstance(verdict, Refused) and verdict.code == "runtime-tool-wrong-phase"
            assert verdict.hint == owned.hint and phase in verdict.reason
    assert set(RUNTIME_TOOLS) == RUNTIME_OWNED_TOOLS == set(get_args(RuntimeToolName))
    # bootstrap_plan is the build-bootstrap phase's own tool, nowhere else.
    assert RUNTIME_TOOLS["bootstrap_plan"].phases == {"build_bootstrap"}
    assert RUNTIME_TOOLS["exit_plan_mode"].phases == {"plan"}
    assert RUNTIME_TOOLS["report_verification"].phases == {"verify"}


@pytest.mark.parametrize("enforcement", ["hard", "advisory"])
@pytest.mark.parametrize("phase", PHASES)
def test_no_tool_can_change_the_plan_state(enforcement: Enforcement, phase: RuntimePhase) -> None:
    policy = GatePolicy(enforcement=enforcement, rules=(DeploymentRule("allow", "*"),))
    verdict = check_call(REGISTRY, phase, policy, call("set_plan", {"goal": "x"}))
    assert isinstance(verdict, Refused) and verdict.code == "plan-state-is-runtime-owned"


def test_the_gate_returns_only_frozen_verdicts_and_changes_nothing() -> None:
    registry, policy = REGISTRY, GatePolicy(classifiers=(SHELL,))
    before = (registry, policy, registry.specs)
    for phase in PHASES:
        for tool in registry:
            verdict = check_call(registry, phase, policy, call(tool.name, {"command": "ls"}))
            assert type(verdict) in (Allowed, Refused)
            with pytest.raises(FrozenInstanceError):
                verdict.tool = "other"  # type: ignore[misc]
    assert (registry, policy, registry.specs) == before


# --------------------------------------------------------------------------
# Deployment rules narrow and never widen


@pytest.mark.parametrize("phase", sorted(READ_ONLY_PHASES))
def test_allow_rules_never_widen_a_read_only_phase(phase: RuntimePhase) -> None:
    widening = GatePolicy(
        rules=(
            DeploymentRule("allow", "*"),
            DeploymentRule("allow", "write_file", frozenset({"plan", "build_bootstrap"})),
            DeploymentRule("allow", "mcp__*"),
            DeploymentRule("allow", "bash"),
        ),
        default_action="deny",
    )
    for tool in WRITE_TOOLS:
        assert isinstance(check_call(REGISTRY, phase, widening, call(tool.name)), Refused)
    expected = (*READ_TOOLS, EXIT) if phase == "plan" else READ_TOOLS
    assert list_available_specs(REGISTRY, phase, widening) == expected


def test_deny_rules_narrow_any_phase_and_win_over_allow() -> None:
    policy = GatePolicy(
        rules=(
            DeploymentRule("allow", "*"),
            DeploymentRule("deny", "web_*"),
            DeploymentRule("deny", "write_file", frozenset({"verify"})),
        )
    )
    refused = check_call(REGISTRY, "plan", policy, call("web_fetch"))
    assert isinstance(refused, Refused) and refused.code == "denied-by-deployment"
    refused = check_call(REGISTRY, "verify", policy, call("write_file"))
    assert isinstance(refused, Refused) and refused.code == "denied-by-deployment"
    assert isinstance(check_call(REGISTRY, "build_execute", policy, call("write_file")), Allowed)


def test_default_deny_runs_only_listed_tools_in_execution_phases() -> None:
    policy = GatePolicy(default_action="deny", rules=(DeploymentRule("allow", "read_*"),))
    assert isinstance(check_call(REGISTRY, "build_execute", policy, call("read_file")), Allowed)
    verdict = check_call(REGISTRY, "build_execute", policy, call("write_file"))
    assert isinstance(verdict, Refused) and verdict.code == "not-allowed-by-deployment"
    assert names(list_available_specs(REGISTRY, "build_execute", policy)) == ["read_file"]


def test_rule_patterns_are_case_sensitive() -> None:
    policy = GatePolicy(rules=(DeploymentRule("deny", "WRITE_FILE"),))
    assert isinstance(check_call(REGISTRY, "build_execute", policy, call("write_file")), Allowed)


def test_a_rule_may_name_every_runtime_phase() -> None:
    rule = DeploymentRule("deny", "writer", frozenset(RUNTIME_PHASES))
    policy = GatePolicy(rules=(rule,))
    assert policy.rules == (rule,)
    assert isinstance(decide("build_execute", policy, WRITER, None), Refused)


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


# --------------------------------------------------------------------------
# Catalog modes and advisory enforcement


def test_stable_catalog_is_byte_identical_in_every_phase() -> None:
    policy = GatePolicy(catalog="stable")
    dumps = {
        phase: json.dumps([t.to_json() for t in list_available_specs(REGISTRY, phase, policy)])
        for phase in PHASES
    }
    assert len(set(dumps.values())) == 1
    assert list_available_specs(REGISTRY, "plan", policy) == REGISTRY.specs
    # Execution is still checked.
    assert isinstance(check_call(REGISTRY, "plan", policy, call("write_file")), Refused)


def test_advisory_runs_phase_refusals_with_a_warning_and_keeps_other_refusals() -> None:
    policy = GatePolicy(enforcement="advisory", rules=(DeploymentRule("deny", "delete_file"),))
    verdict = check_call(REGISTRY, "plan", policy, call("write_file"))
    assert isinstance(verdict, Allowed) and verdict.basis == "advisory"
    assert verdict.warning is not None and verdict.warning.code == "write-in-read-only-phase"
    shell = check_call(REGISTRY, "plan", policy, call("bash", {"command": "rm -rf ."}))
    assert isinstance(shell, Allowed) and shell.warning is not None
    for forged in (call("delete_file"), call("set_plan"), call("WRITE_FILE"), call("nope")):
        assert isinstance(check_call(REGISTRY, "plan", policy, forged), Refused), forged
    assert isinstance(check_call(REGISTRY, "plan", policy, call("read_file", [1])), Refused)
    # The catalog is the same as in hard mode.
    assert list_available_specs(REGISTRY, "plan", policy) == list_available_specs(
        REGISTRY, "plan", GatePolicy(rules=policy.rules)
    )


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


# --------------------------------------------------------------------------
# Classifiers


def test_shell_classifier_lets_provable_reads_run_in_plan() -> None:
    policy = GatePolicy(classifiers=(SHELL,))
    assert [t.name for t in list_available_specs(REGISTRY, "plan", policy) if t.origin == "shell"] == [
        "bash",
        "shell_readonly",
    ]
    verdict = check_call(REGISTRY, "plan", policy, call("bash", {"command": "grep -rn x . | head"}))
    assert verdict == Allowed("bash", "plan", "executor", "classified-read-only")
    refused = check_call(REGISTRY, "plan", policy, call("bash", {"command": "ls > x"}))
    assert isinstance(refused, Refused) and refused.code == "shell-redirection"
    assert "redirect" in refused.hint


def test_a_deployment_classifier_marks_one_particular_call_read_only() -> None:
    policy = GatePolicy(classifiers=(MCP_PATH_READ,))
    good = check_call(REGISTRY, "plan", policy, call("mcp__fs__read_file", {"path": "a"}))
    assert isinstance(good, Allowed) and good.basis == "classified-read-only"
    bad = check_call(REGISTRY, "plan", policy, call("mcp__fs__read_file", {"path": "a", "w": 1}))
    assert isinstance(bad, Refused) and bad.code == "not-a-read"
    other = check_call(REGISTRY, "plan", policy, call("mcp__gh__search", {"path": "a"}))
    assert isinstance(other, Refused) and other.code == "unverified-in-read-only-phase"
    # It cannot reach a declared write: no classifier is asked for those.
    everything = GatePolicy(classifiers=(MCP_PATH_READ, SHELL, MCP_NEVER))
    assert isinstance(check_call(REGISTRY, "plan", everything, call("write_file", {"path": "a"})), Refused)


def test_a_classifier_that_raises_or_answers_nonsense_fails_closed() -> None:
    verdict = check_call(REGISTRY, "plan", GatePolicy(classifiers=(BROKEN,)), call("bash", {"command": "ls"}))
    assert isinstance(verdict, Refused) and verdict.code == "classifier-failed"

    def nonsense(tool: ToolSpec, arguments: object) -> Any:
        return True

    def covers_raise(tool: ToolSpec) -> bool:
        raise ValueError("bug")

    odd = CallClassifier("odd", lambda t: True, nonsense)
    verdict = check_call(REGISTRY, "plan", GatePolicy(classifiers=(odd,)), call("bash", {"command": "ls"}))
    assert isinstance(verdict, Refused) and verdict.code == "classifier-failed"
    hidden = GatePolicy(classifiers=(CallClassifier("raise-covers", covers_raise, nonsense),))
    assert "bash" not in names(list_available_specs(REGISTRY, "plan", hidden))
    assert isinstance(check_call(REGISTRY, "plan", hidden, call("bash", {"command": "ls"})), Refused)


def test_the_catalog_offers_an_unverified_tool_a_classifier_covers_in_plan_mode() -> None:
    policy = GatePolicy(classifiers=(READ_ONLY_CLASSIFIER,))
    assert decide("plan", policy, MYSTERY, None) == Allowed("mystery", "plan", "executor", "classifier-covers")
    assert list_available_specs(ToolRegistry.of(MYSTERY), "plan", policy) == (MYSTERY,)


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (ValueError("boom"), "classifier broken raised ValueError"),
        ("yes", "classifier broken gave no classification"),
        (Classification(False, "looks-risky", "it might write"), "it might write"),
    ],
)
def test_a_classifier_that_fails_or_says_no_refuses_the_call(answer: object, reason: str) -> None:
    verdict = decide("plan", GatePolicy(classifiers=(classifier("broken", answer),)), MYSTERY, CALL)
    assert isinstance(verdict, Refused)
    assert verdict.reason == f"mystery is not proven read-only in plan: {reason}"
    expected = "looks-risky" if isinstance(answer, Classification) else "classifier-failed"
    assert verdict.code == expected


def test_the_first_read_only_answer_wins_over_earlier_refusals() -> None:
    no = classifier("says-no", Classification(False, "looks-risky", "it might write"))
    yes = classifier("says-yes", Classification(True, "read-only", "it only reads"))
    verdict = decide("plan", GatePolicy(classifiers=(no, yes)), MYSTERY, CALL)
    assert verdict == Allowed("mystery", "plan", "executor", "classified-read-only")


def test_the_first_refusal_is_the_one_reported() -> None:
    first = classifier("first", Classification(False, "first-no", "first reason"))
    second = classifier("second", Classification(False, "second-no", "second reason"))
    verdict = decide("plan", GatePolicy(classifiers=(first, second)), MYSTERY, CALL)
    assert isinstance(verdict, Refused) and (verdict.code, verdict.reason) == (
        "first-no",
        "mystery is not proven read-only in plan: first reason",
    )


# --------------------------------------------------------------------------
# Forged and malformed calls


def test_unknown_miscased_and_unoffered_names_are_refused_with_a_usable_hint() -> None:
    unknown = check_call(REGISTRY, "build_execute", HARD, call("read_fіle"))
    assert isinstance(unknown, Refused) and unknown.code == "unknown-tool"
    miscased = check_call(REGISTRY, "plan", HARD, call("Read_File"))
    assert isinstance(miscased, Refused) and miscased.code == "tool-name-case-mismatch"
    assert "'read_file'" in miscased.hint
    hidden = check_call(REGISTRY, "plan", HARD, call("Write_File"))
    assert isinstance(hidden, Refused) and "write_file" not in hidden.hint
    offered = frozenset({"read_file"})
    verdict = check_call(REGISTRY, "build_execute", HARD, call("grep_search"), offered)
    assert isinstance(verdict, Refused) and verdict.code == "not-offered"
    assert isinstance(check_call(REGISTRY, "build_execute", HARD, call("read_file"), offered), Allowed)


@pytest.mark.parametrize(
    "forged",
    [
        ToolCall.of("", "read_file", {}),
        ToolCall.parse("c", "read_file", "[1, 2]"),
        ToolCall.parse("c", "read_file", "path=a"),
        ToolCall("c", "read_file", "[1, 2]", [1, 2]),  # type: ignore[arg-type]
        ToolCall("c", "read_file", "{}", {"x": {1, 2}}),  # type: ignore[dict-item]
        ToolCall.of("c", "read_file", {"x": float("nan")}),
        ToolCall.of("c", 7, {}),  # type: ignore[arg-type]
    ],
)
def test_malformed_calls_are_refused_not_raised(forged: ToolCall) -> None:
    verdict = check_call(REGISTRY, "build_execute", HARD, forged)
    assert isinstance(verdict, Refused) and verdict.code == "malformed-call"


def test_decide_refuses_a_call_naming_another_tool() -> None:
    verdict = decide("plan", HARD, READ_TOOLS[0], call("write_file"))
    assert isinstance(verdict, Refused) and verdict.code == "malformed-call"


@pytest.mark.parametrize(
    ("malformed", "problem"),
    [
        (ToolCall.of("", "mystery", {}), "the call has no id"),
        (ToolCall.of(7, "mystery", {}), "the call has no id"),  # type: ignore[arg-type]
        (ToolCall.parse("c1", "mystery", "[1]"), "the arguments are not a JSON object"),
    ],
)
def test_a_malformed_call_is_refused_with_what_is_wrong(malformed: ToolCall, problem: str) -> None:
    assert decide("build_execute", GatePolicy(), MYSTERY, malformed) == Refused(
        "malformed-call", problem, "mystery", "build_execute", "Send the arguments as one JSON object."
    )


def test_a_call_naming_another_tool_is_refused_under_the_name_it_sent() -> None:
    verdict = decide("build_execute", GatePolicy(), MYSTERY, ToolCall.of("c1", "other", {}))
    assert verdict == Refused(
        "malformed-call",
        "the call names 'other', not 'mystery'",
        "other",
        "build_execute",
        "Send the arguments as one JSON object.",
    )


def test_a_call_whose_tool_name_is_not_a_string_is_refused_under_the_tool_asked_about() -> None:
    verdict = decide("build_execute", GatePolicy(), MYSTERY, ToolCall.of("c1", 5, {}))  # type: ignore[arg-type]
    assert verdict == Refused(
        "malformed-call",
        "the call names 5, not 'mystery'",
        "mystery",
        "build_execute",
        "Send the arguments as one JSON object.",
    )
    # check_call never gets that far: it refuses the name itself.
    refused = check_call(ToolRegistry.of(MYSTERY), "build_execute", GatePolicy(), ToolCall.of("c1", 5, {}))  # type: ignore[arg-type]
    assert isinstance(refused, Refused) and (refused.code, refused.tool) == ("malformed-call", "")


# --------------------------------------------------------------------------
# Typed errors: the caller's fault, nothing changed


@pytest.mark.parametrize("phase", ["build", "PLAN", "", None])
def test_an_unknown_phase_raises_gate_error(phase: Any) -> None:
    with pytest.raises(GateError) as err:
        check_call(REGISTRY, phase, HARD, call("read_file"))
    assert err.value.code == "unknown-phase"
    with pytest.raises(GateError):
        list_available_specs(REGISTRY, phase, HARD)
    with pytest.raises(GateError):
        decide(phase, HARD, READ_TOOLS[0], None)


@pytest.mark.parametrize(
    "fields",
    [
        {"catalog": "hidden"},
        {"enforcement": "soft"},
        {"default_action": "maybe"},
        {"rules": [DeploymentRule("allow", "*")]},
        {"rules": (DeploymentRule("permit", "*"),)},  # type: ignore[arg-type]
        {"rules": (DeploymentRule("deny", ""),)},
        {"rules": (DeploymentRule("deny", "x", frozenset({"build"})),)},  # type: ignore[arg-type]
        {"rules": (DeploymentRule("deny", "x", {"plan"}),)},  # type: ignore[arg-type]
        {"classifiers": (lambda t, a: True,)},
    ],
)
def test_an_invalid_policy_raises_gate_error(fields: dict[str, Any]) -> None:
    with pytest.raises(GateError) as err:
        GatePolicy(**fields)
    assert err.value.code == "invalid-gate-policy"


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
