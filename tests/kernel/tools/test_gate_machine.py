"""The tool gate, driven by Hypothesis against a small model of the rules.

The machine registers tools one by one (bad registrations included), moves
between phases, rewrites the deployment's policy (deny rules, a widening
``allow *``, default deny, classifiers, catalog and enforcement modes) and
makes calls, real and forged, through the real ``check_call`` and
``list_available_specs``. The model says, in plain ``if`` statements written
from the rules, which calls run, which run with a warning and which are
refused, and which tools the filtered catalog offers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from planfold.kernel.payload import JSON
from planfold.kernel.phase import RuntimePhase
from planfold.kernel.tools.gate import Allowed, DeploymentRule, GatePolicy, Refused, check_call, list_available_specs
from planfold.kernel.tools.spec import ToolCall, ToolRegistry, ToolSpec, ToolSpecError
from tests.gate_helpers import (
    MCP_PATH_READ,
    PHASES,
    READ_COMMANDS,
    REGISTRY,
    SHELL,
    case_variant,
    small_objects,
    spec,
)

#: Tools to register: every kind, plus names that must be refused.
POOL: tuple[ToolSpec, ...] = (
    *REGISTRY.specs,
    spec("READ_FILE", "read", "builtin"),
    spec("Bash", "read", "builtin"),
)
#: Shell lines whose verdict the model knows.
SHELL_LINES: tuple[tuple[str, bool], ...] = (
    *((line, True) for line in READ_COMMANDS),
    ("cat a > b", False),
    ("ls; rm -rf .", False),
    ("python -c 'import os'", False),
    ("git commit -am x", False),
    ("git -c core.pager=sh log", False),
    ("git diff --output=x", False),
    ("git branch new", False),
    ("sed -i s/a/b/ f", False),
    ("cat $(ls)", False),
    ("\u0441at x", False),
    ("cat 'x", False),
    ("find . -delete", False),
)
CLASSIFIERS = {"shell": SHELL, "mcp-path-read": MCP_PATH_READ}


@dataclass
class Model:
    tools: dict[str, ToolSpec] = field(default_factory=dict)
    phase: RuntimePhase = "plan"
    catalog: str = "filtered"
    enforcement: str = "hard"
    denied: set[str] = field(default_factory=set)
    allow_star: bool = False
    default_deny: bool = False
    classifiers: set[str] = field(default_factory=set)

    def deployment_refuses(self, name: str) -> bool:
        return name in self.denied or (self.default_deny and not self.allow_star)

    def covered(self, tool: ToolSpec) -> bool:
        return (tool.origin == "shell" and "shell" in self.classifiers) or (
            tool.name == "mcp__fs__read_file" and "mcp-path-read" in self.classifiers
        )

    def offers(self, tool: ToolSpec) -> bool:
        if tool.name == "exit_plan_mode":
            return self.phase == "plan"
        if tool.category == "plan-state" or self.deployment_refuses(tool.name):
            return False
        if self.phase in ("build_execute", "verify"):
            return True
        if tool.origin == "builtin" and tool.effect == "read":
            return True
        if tool.effect == "write" or tool.category is not None:
            return False
        return self.covered(tool)

    def outcome(self, name: str, arguments: JSON, shell_read: bool | None) -> str:
        """``runtime``, ``run``, ``warn`` or ``refuse``."""
        tool = self.tools.get(name)
        if tool is None or not isinstance(arguments, dict):
            return "refuse"
        if tool.name == "exit_plan_mode":
            return "runtime" if self.phase == "plan" else "refuse"
        if tool.category == "plan-state" or self.deployment_refuses(name):
            return "refuse"
        if self.phase in ("build_execute", "verify"):
            return "run"
        if tool.origin == "builtin" and tool.effect == "read":
            return "run"
        phase_says_no = "warn" if self.enforcement == "advisory" else "refuse"
        if tool.effect == "write" or tool.category is not None:
            return phase_says_no
        if tool.origin == "shell" and "shell" in self.classifiers and shell_read:
            return "run"
        fs_read = tool.name == "mcp__fs__read_file" and "mcp-path-read" in self.classifiers
        if fs_read and set(arguments) == {"path"} and isinstance(arguments["path"], str):
            return "run"
        return phase_says_no


def verdict_outcome(verdict: Allowed | Refused) -> str:
    if isinstance(verdict, Refused):
        return "refuse"
    if verdict.route == "runtime":
        return "runtime"
    return "run" if verdict.warning is None else "warn"


class GateMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.registry = ToolRegistry()
        self.model = Model()

    def policy(self) -> GatePolicy:
        m = self.model
        rules = [DeploymentRule("deny", name) for name in sorted(m.denied)]
        if m.allow_star:
            rules.append(DeploymentRule("allow", "*"))
        return GatePolicy(
            catalog=m.catalog,  # type: ignore[arg-type]
            enforcement=m.enforcement,  # type: ignore[arg-type]
            rules=tuple(rules),
            default_action="deny" if m.default_deny else "allow",
            classifiers=tuple(CLASSIFIERS[name] for name in sorted(m.classifiers)),
        )

    # -- setup ------------------------------------------------------------

    @rule(tool=st.sampled_from(POOL))
    def register(self, tool: ToolSpec) -> None:
        clash = any(n.casefold() == tool.name.casefold() for n in self.model.tools)
        note(f"register {tool.name} (clash={clash})")
        before = self.registry
        try:
            self.registry = self.registry.register(tool)
        except ToolSpecError as err:
            assert clash, err
            assert err.code in ("duplicate-tool", "tool-name-case-collision")
            assert self.registry is before
            return
        assert not clash
        self.model.tools[tool.name] = tool

    @rule(phase=st.sampled_from(PHASES))
    def move_to(self, phase: RuntimePhase) -> None:
        note(f"phase {phase}")
        self.model.phase = phase

    @rule(catalog=st.sampled_from(["filtered", "stable"]), enforcement=st.sampled_from(["hard", "advisory"]))
    def set_modes(self, catalog: str, enforcement: str) -> None:
        note(f"catalog={catalog} enforcement={enforcement}")
        self.model.catalog, self.model.enforcement = catalog, enforcement

    @rule(name=st.sampled_from([t.name for t in POOL]), deny=st.booleans())
    def deny_rule(self, name: str, deny: bool) -> None:
        note(f"{'deny' if deny else 'undeny'} {name}")
        (self.model.denied.add if deny else self.model.denied.discard)(name)

    @rule(allow_star=st.booleans(), default_deny=st.booleans())
    def allow_rules(self, allow_star: bool, default_deny: bool) -> None:
        note(f"allow *={allow_star} default deny={default_deny}")
        self.model.allow_star, self.model.default_deny = allow_star, default_deny

    @rule(names=st.sets(st.sampled_from(sorted(CLASSIFIERS))))
    def set_classifiers(self, names: set[str]) -> None:
        note(f"classifiers {sorted(names)}")
        self.model.classifiers = set(names)

    # -- calls --------------------------------------------------------------

    def check(self, name: str, arguments: JSON, shell_read: bool | None = None) -> None:
        verdict = check_call(self.registry, self.model.phase, self.policy(), ToolCall.recorded("c", name, arguments))
        expected = self.model.outcome(name, arguments, shell_read)
        note(f"call {name}({arguments!r}) in {self.model.phase}: {verdict}")
        assert verdict_outcome(verdict) == expected, (expected, verdict)
        if isinstance(verdict, Refused):
            assert verdict.code and verdict.reason and verdict.hint

    @precondition(lambda self: self.model.tools)
    @rule(data=st.data())
    def call_registered(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(self.model.tools)))
        tool = self.model.tools[name]
        if tool.origin == "shell":
            line, is_read = data.draw(st.sampled_from(SHELL_LINES))
            self.check(name, {"command": line}, is_read)
        elif name == "mcp__fs__read_file" and data.draw(st.booleans()):
            self.check(name, {"path": data.draw(st.text(max_size=5))})
        else:
            self.check(name, data.draw(small_objects | st.just([1])))

    @precondition(lambda self: self.model.tools)
    @rule(data=st.data())
    def call_miscased(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(self.model.tools)))
        variant = data.draw(case_variant(name))
        self.check(variant, {})

    @rule(name=st.sampled_from([t.name for t in POOL]))
    def call_maybe_unregistered(self, name: str) -> None:
        self.check(name, {"path": "a"}, shell_read=False)

    # -- invariants -------------------------------------------------------------

    @invariant()
    def registry_keeps_every_tool(self) -> None:
        assert self.registry.names == tuple(self.model.tools)

    @invariant()
    def catalog_matches_the_model(self) -> None:
        listed = list_available_specs(self.registry, self.model.phase, self.policy())
        if self.model.catalog == "stable":
            assert listed == self.registry.specs
        else:
            assert [t.name for t in listed] == [t.name for t in self.registry if self.model.offers(t)]

    @invariant()
    def exit_plan_mode_is_offered_exactly_in_plan_mode(self) -> None:
        if "exit_plan_mode" in self.model.tools and self.model.catalog == "filtered":
            listed = list_available_specs(self.registry, self.model.phase, self.policy())
            assert ("exit_plan_mode" in [t.name for t in listed]) == (self.model.phase == "plan")


TestGateMachine = GateMachine.TestCase
