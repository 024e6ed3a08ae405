"""Forged calls in plan and build_bootstrap: every one is refused with a reason.

How the count is reached: each Hypothesis example draws one deployment policy
and a batch of ``BATCH`` forged calls, and checks every call in both read-only
phases. ``BATCH`` is ``ceil(FORGED_TARGET / ci max_examples)``, so the ``ci``
profile (300 examples) checks at least 10,000 forged calls per phase; the
default profile checks fewer, the fuzz profile many more. The test asserts
the count it actually checked, so the number cannot shrink silently.

Every batch holds a call to every write tool, a command of every shell write
form, an unknown name, a case variant, an MCP tool that claims to be
read-only and a malformed call; free draws of any kind fill it up to
``BATCH`` (at least). The test asserts that every write tool and every shell
form was covered.

Alongside, the same examples show that no declared-read tool is refused, and
that for every (phase, tool) the filtered catalog and the execution decision
agree: a tool the catalog hides is refused whatever the call, a call that
runs is a call to a listed tool.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from planfold.kernel.errors import is_kebab_case
from planfold.kernel.payload import JSON
from planfold.kernel.phase import RuntimePhase
from planfold.kernel.tools.gate import (
    Allowed,
    DeploymentRule,
    Enforcement,
    GatePolicy,
    Refused,
    Verdict,
    check_call,
    decide,
    list_available_specs,
    tool_class,
)
from planfold.kernel.tools.spec import ToolCall, ToolSpec
from tests.gate_helpers import (
    BROKEN,
    MCP_NEVER,
    MCP_TOOLS,
    PHASES,
    READ_ONLY_PHASES,
    READ_TOOLS,
    REGISTRY,
    SHELL,
    SHELL_TOOLS,
    SHELL_WRITE_FORMS,
    WRITE_TOOLS,
    json_objects,
    miscased_names,
    non_objects,
    shell_write,
    small_objects,
    unknown_names,
)

FORGED_TARGET = 10_000
CI_EXAMPLES = settings.get_profile("ci").max_examples
BATCH = math.ceil(FORGED_TARGET / CI_EXAMPLES)

# Rules a deployment might write, including ones that try to widen plan mode;
# none of them denies a declared-read tool.
RULES = (
    DeploymentRule("allow", "*"),
    DeploymentRule("allow", "write_file", frozenset({"plan", "build_bootstrap"})),
    DeploymentRule("allow", "mcp__*"),
    DeploymentRule("allow", "bash"),
    DeploymentRule("deny", "mcp__db__*"),
    DeploymentRule("deny", "delete_file", frozenset({"plan"})),
)


@dataclass(frozen=True)
class Forged:
    kind: str
    label: str
    call: ToolCall


policies = st.builds(
    GatePolicy,
    catalog=st.sampled_from(["filtered", "stable"]),
    rules=st.lists(st.sampled_from(RULES), max_size=4, unique=True).map(tuple),
    classifiers=st.lists(st.sampled_from([SHELL, MCP_NEVER, BROKEN]), max_size=3, unique=True).map(
        tuple
    ),
)


def _forged(kind: str, label: str, name: str, arguments: JSON) -> Forged:
    return Forged(kind, label, ToolCall.recorded("forged-call", name, arguments))


def _command(line: str) -> JSON:
    return {"command": line}


SHELL_NAMES = st.sampled_from([t.name for t in SHELL_TOOLS])
CLAIMS = [t.name for t in MCP_TOOLS if t.read_only_hint or t.effect == "read"]

#: One strategy per write tool (a shell tool gets a redirection).
WRITE_TOOL_CALLS = tuple(
    st.builds(
        _forged,
        st.just("write-tool"),
        st.just(tool.name),
        st.just(tool.name),
        shell_write("redirection").map(_command) if tool.origin == "shell" else small_objects,
    )
    for tool in WRITE_TOOLS
)
#: One strategy per shell write form, on any shell tool.
SHELL_FORM_CALLS = tuple(
    st.builds(_forged, st.just("shell-write"), st.just(form), SHELL_NAMES, shell_write(form).map(_command))
    for form in SHELL_WRITE_FORMS
)
UNKNOWN_CALLS = st.builds(_forged, st.just("unknown"), st.just("unknown"), unknown_names, small_objects)
CASE_CALLS = st.builds(
    lambda pair, arguments: _forged("case-variant", pair[0], pair[1], arguments),
    miscased_names(),
    small_objects,
)
MCP_CLAIM_CALLS = st.sampled_from(CLAIMS).flatmap(
    lambda name: st.builds(_forged, st.just("mcp-claims-read"), st.just(name), st.just(name), small_objects)
)
MALFORMED_CALLS = st.sampled_from([t.name for t in READ_TOOLS]).flatmap(
    lambda name: st.builds(_forged, st.just("malformed"), st.just(name), st.just(name), non_objects)
)
OTHER_CALLS = (UNKNOWN_CALLS, CASE_CALLS, MCP_CLAIM_CALLS, MALFORMED_CALLS)
FIXED = (*WRITE_TOOL_CALLS, *SHELL_FORM_CALLS, *OTHER_CALLS)
#: A batch: one call of every fixed kind, then free draws up to ``BATCH``.
batches = st.builds(
    lambda fixed, free: [*fixed, *free],
    st.tuples(*FIXED),
    st.lists(st.one_of(*FIXED), min_size=max(0, BATCH - len(FIXED)), max_size=max(0, BATCH - len(FIXED))),
)


def listed_names(phase: RuntimePhase, policy: GatePolicy) -> set[str]:
    filtered = GatePolicy(
        catalog="filtered", rules=policy.rules, classifiers=policy.classifiers, enforcement=policy.enforcement
    )
    return {t.name for t in list_available_specs(REGISTRY, phase, filtered)}


def check_refused(verdict: Verdict, item: Forged, phase: RuntimePhase) -> Refused:
    assert isinstance(verdict, Refused), (phase, item)
    assert is_kebab_case(verdict.code), verdict
    assert verdict.reason.strip() and verdict.hint.strip(), verdict
    assert verdict.phase == phase and verdict.tool == item.call.name, verdict
    return verdict


def test_forged_calls_are_refused_in_plan_and_build_bootstrap() -> None:
    checked: Counter[str] = Counter()
    covered: set[str] = set()
    examples = [0]
    sizes: set[int] = set()

    @given(batch=batches, policy=policies)
    def run(batch: list[Forged], policy: GatePolicy) -> None:
        sizes.add(len(batch))
        for phase in READ_ONLY_PHASES:
            listed = listed_names(phase, policy)
            for item in batch:
                verdict = check_call(REGISTRY, phase, policy, item.call)
                check_refused(verdict, item, phase)
                # Catalog agreement: a refused call to a listed tool is either
                # malformed or a per-call classified (unverified) tool.
                if item.call.name in listed:
                    resolved = REGISTRY.get(item.call.name)
                    assert resolved is not None
                    assert item.kind == "malformed" or tool_class(resolved) == "unverified"
                checked[phase] += 1
                covered.add(f"{item.kind}:{item.label}")
        examples[0] += 1  # a completed example (every draw happens before the checks)

    run()
    assert examples[0] >= settings().max_examples, "Hypothesis ran fewer examples than asked"
    assert len(sizes) == 1 and min(sizes) >= BATCH
    expected = examples[0] * sizes.pop()
    assert checked == dict.fromkeys(READ_ONLY_PHASES, expected)
    if settings().max_examples >= CI_EXAMPLES:
        assert all(count >= FORGED_TARGET for count in checked.values()), checked
    assert {f"write-tool:{t.name}" for t in WRITE_TOOLS} <= covered
    assert {f"shell-write:{form}" for form in SHELL_WRITE_FORMS} <= covered


@given(arguments=st.lists(json_objects, min_size=len(READ_TOOLS), max_size=len(READ_TOOLS)), policy=policies)
def test_no_declared_read_tool_is_refused(arguments: list[JSON], policy: GatePolicy) -> None:
    for tool, args in zip(READ_TOOLS, arguments, strict=True):
        for phase in PHASES:
            verdict = check_call(REGISTRY, phase, policy, ToolCall.recorded("c", tool.name, args))
            assert verdict == Allowed(tool.name, phase, "executor", "phase-allows")


def _arguments_for(tool: ToolSpec) -> st.SearchStrategy[JSON]:
    if tool.origin == "shell":
        lines = st.one_of(st.just("ls -la"), *[shell_write(form) for form in SHELL_WRITE_FORMS])
        return lines.map(_command)
    return json_objects


#: Arguments for one call to every registered tool, in registry order.
ARGUMENTS = st.tuples(*[_arguments_for(tool) for tool in REGISTRY])


@given(arguments=ARGUMENTS, policy=policies, enforcement=st.sampled_from(["hard", "advisory"]))
def test_catalog_and_execution_agree_for_every_phase_and_tool(
    arguments: tuple[JSON, ...], policy: GatePolicy, enforcement: Enforcement
) -> None:
    policy = GatePolicy(
        catalog="filtered", rules=policy.rules, classifiers=policy.classifiers, enforcement=enforcement
    )
    for phase in PHASES:
        listed = {t.name for t in list_available_specs(REGISTRY, phase, policy)}
        for tool, args in zip(REGISTRY, arguments, strict=True):
            catalog = decide(phase, policy, tool, None)
            clean = isinstance(catalog, Allowed) and catalog.warning is None
            assert (tool.name in listed) == clean, (phase, tool.name, catalog)
            verdict = check_call(REGISTRY, phase, policy, ToolCall.recorded("c", tool.name, args))
            _agree(phase, policy, tool, listed, (catalog, verdict))


def _agree(
    phase: RuntimePhase, policy: GatePolicy, tool: ToolSpec, listed: set[str], verdicts: tuple[Verdict, Verdict]
) -> None:
    """The catalog and the execution decision agree for (phase, tool)."""
    catalog, verdict = verdicts
    clean_run = isinstance(verdict, Allowed) and verdict.warning is None
    if clean_run:
        assert tool.name in listed, (phase, tool.name)
    if tool.name not in listed:
        if policy.enforcement == "hard" or isinstance(catalog, Refused):
            assert isinstance(verdict, Refused), (phase, tool.name, verdict)
        else:
            assert isinstance(verdict, Allowed) and verdict.warning is not None
    per_call = phase in READ_ONLY_PHASES and tool_class(tool) == "unverified"
    if tool.name in listed and not per_call:
        assert clean_run, (phase, tool.name, verdict)
