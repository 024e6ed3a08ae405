"""The tool gate: one fail-closed decision for what the model sees and runs.

Theory of operation
-------------------
``decide(phase, policy, tool, call)`` is the only decision. The catalog shown
to the model (``list_available_specs``) asks it with ``call=None`` ("may
this tool be offered at all?"), the execution check (``check_call``) asks it
with the call the model made, so the list and the check cannot disagree: a
tool the filtered catalog hides is refused whatever call names it.

The tool's class comes from what it declares (``tool_class``):

- each runtime-owned tool (``kernel.tools.RUNTIME_TOOLS``) is its own class:
  offered and routed to the runtime (never an executor) in the phases its
  row names, refused in every mode elsewhere (``runtime-tool-wrong-phase``).
- ``plan-state``: a tool declaring it changes the plan or mode. Only the
  runtime changes those, so it is refused in every phase and every mode.
- ``write``: declared write, or a memory-write or task-state category.
- ``read``: a built-in tool declaring ``read``; trusted.
- ``unverified``: everything else: a built-in tool of unknown effect, every
  MCP tool (its read-only hint and declared ``read`` are the server's claims)
  and every shell tool. In a read-only phase it runs only when one of the
  policy's classifiers covers it and marks that particular call read-only.

``VERDICT_TABLE`` maps (phase, class) to a rule; ``decide`` only looks it up.
Deployment rules (``DeploymentRule``) come first and can only narrow: a deny
rule refuses in any phase; an allow rule matters only where the table says
``deployment``, so no allow rule can widen a read-only phase.

``enforcement="hard"`` (the default) refuses. ``"advisory"`` runs a call that
only the read-only phase refuses, with the refusal as a warning (for a
``tool/warning`` event); every other refusal stays. The catalog is the same
in both modes: ``filtered`` (default) offers the tools whose catalog decision
is a clean ``Allowed``; ``stable`` offers every registered tool in every
phase, and execution is checked either way. The gate only returns verdicts.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from types import MappingProxyType
from typing import Literal, cast, get_args

from ..errors import GateError
from ..payload import JSONObject
from ..phase import RUNTIME_PHASES, RuntimePhase
from .spec import (
    RUNTIME_OWNED_TOOLS,
    RUNTIME_TOOLS,
    CallClassifier,
    Classification,
    RuntimeToolName,
    ToolCall,
    ToolRegistry,
    ToolSpec,
    is_json,
)

__all__ = [
    "TOOL_CLASSES",
    "VERDICT_TABLE",
    "Allowed",
    "CatalogMode",
    "DeploymentRule",
    "Enforcement",
    "GateError",
    "GatePolicy",
    "PhaseRule",
    "Refused",
    "RuleKind",
    "ToolClass",
    "Verdict",
    "check_call",
    "decide",
    "list_available_specs",
    "tool_class",
]

CatalogMode = Literal["filtered", "stable"]
Enforcement = Literal["hard", "advisory"]
ToolClass = Literal[RuntimeToolName, "plan-state", "write", "read", "unverified"]
RuleKind = Literal["runtime", "never", "deny", "classify", "deployment"]

TOOL_CLASSES: tuple[ToolClass, ...] = get_args(ToolClass)


@dataclass(frozen=True, slots=True)
class PhaseRule:
    """One row of the verdict table: the rule, and for ``deny`` and
    ``classify`` the refusal code and hint given when the call does not pass."""

    rule: RuleKind
    code: str = ""
    hint: str = ""


_PLAN_HINT = "Plan mode is read-only: research with read tools, then call exit_plan_mode."
_BOOT_HINT = "Build has no executable plan and is read-only: read, then record one with bootstrap_plan."
_READ_ONLY_HINT = MappingProxyType({"plan": _PLAN_HINT, "build_bootstrap": _BOOT_HINT})
_STATE_HINT = "The plan and the mode change only through the runtime (exit_plan_mode, /plan)."
_FROM_LIST = "Call only tools from the list you were given, spelled exactly."
_WRONG_PHASE = "runtime-tool-wrong-phase"


def _rows(phase: RuntimePhase) -> dict[tuple[RuntimePhase, ToolClass], PhaseRule]:
    rows: dict[tuple[RuntimePhase, ToolClass], PhaseRule] = {
        (phase, name): PhaseRule("runtime") if phase in tool.phases else PhaseRule("never", _WRONG_PHASE, tool.hint)
        for name, tool in RUNTIME_TOOLS.items()
    }
    rows[(phase, "plan-state")] = PhaseRule("never", "plan-state-is-runtime-owned", _STATE_HINT)
    rows[(phase, "read")] = PhaseRule("deployment")
    hint = _READ_ONLY_HINT.get(phase)
    if hint is None:  # an execution phase: the deployment decides
        rows[(phase, "write")] = rows[(phase, "unverified")] = PhaseRule("deployment")
    else:
        rows[(phase, "write")] = PhaseRule("deny", "write-in-read-only-phase", hint)
        rows[(phase, "unverified")] = PhaseRule("classify", "unverified-in-read-only-phase", hint)
    return rows


#: (phase, tool class) -> rule, for every pair. ``runtime``: route to the
#: runtime; ``never``: refused in every mode; ``deny``: refused (a warning in
#: advisory mode); ``classify``: runs only when a classifier marks the call
#: read-only; ``deployment``: runs unless the deployment's rules refuse it.
VERDICT_TABLE: Mapping[tuple[RuntimePhase, ToolClass], PhaseRule] = MappingProxyType(
    {
        **_rows("plan"),
        **_rows("build_bootstrap"),
        **_rows("build_execute"),
        **_rows("verify"),
    }
)


@dataclass(frozen=True, slots=True)
class DeploymentRule:
    """``allow`` or ``deny`` the tools whose name matches ``pattern`` (a
    case-sensitive glob), in ``phases`` (all phases when None)."""

    action: Literal["allow", "deny"]
    pattern: str
    phases: frozenset[RuntimePhase] | None = None

    def matches(self, phase: RuntimePhase, name: str) -> bool:
        in_phase = self.phases is None or phase in self.phases
        return in_phase and fnmatchcase(name, self.pattern)


@dataclass(frozen=True, slots=True)
class GatePolicy:
    """How a deployment runs the gate. Raises ``GateError``
    (``invalid-gate-policy``) for a value outside its domain.

    ``default_action`` applies where no rule matches; deny rules win over
    allow rules. ``classifiers`` may mark single calls read-only.
    """

    catalog: CatalogMode = "filtered"
    enforcement: Enforcement = "hard"
    rules: tuple[DeploymentRule, ...] = ()
    default_action: Literal["allow", "deny"] = "allow"
    classifiers: tuple[CallClassifier, ...] = ()

    def __post_init__(self) -> None:
        def bad(what: str) -> GateError:
            return GateError(f"invalid gate policy: {what}", code="invalid-gate-policy")

        if self.catalog not in ("filtered", "stable"):
            raise bad(f"catalog must be 'filtered' or 'stable', got {self.catalog!r}")
        if self.enforcement not in ("hard", "advisory"):
            raise bad(f"enforcement must be 'hard' or 'advisory', got {self.enforcement!r}")
        if self.default_action not in ("allow", "deny"):
            raise bad(f"default_action must be 'allow' or 'deny', got {self.default_action!r}")
        if not isinstance(self.rules, tuple) or not isinstance(self.classifiers, tuple):
            raise bad("rules and classifiers must be tuples")
        for rule in self.rules:
            if not isinstance(rule, DeploymentRule) or rule.action not in ("allow", "deny"):
                raise bad(f"{rule!r} is not an allow or deny rule")
            if not isinstance(rule.pattern, str) or not rule.pattern:
                raise bad("a rule pattern must be a non-empty string")
            phases = rule.phases
            if phases is not None and not (
                isinstance(phases, frozenset) and phases <= frozenset(RUNTIME_PHASES)
            ):
                raise bad(f"rule phases {phases!r} must be a frozenset of runtime phases")
        for classifier in self.classifiers:
            if not isinstance(classifier, CallClassifier):
                raise bad(f"{classifier!r} is not a CallClassifier")


@dataclass(frozen=True, slots=True)
class Refused:
    """The call may not run (or the tool may not be offered). ``hint`` tells
    the model what to do instead; ``code`` is stable kebab-case."""

    code: str
    reason: str
    tool: str
    phase: RuntimePhase
    hint: str


@dataclass(frozen=True, slots=True)
class Allowed:
    """The call may run (or the tool may be offered).

    ``route`` says who handles it: a tool ``executor`` or the ``runtime``
    (runtime-owned tools). ``basis`` is kebab-case: ``runtime-owned``,
    ``phase-allows``, ``classifier-covers`` (catalog: each call is
    classified), ``classified-read-only``, ``advisory``. ``warning`` is set
    only in advisory mode: the refusal hard mode would have made.
    """

    tool: str
    phase: RuntimePhase
    route: Literal["executor", "runtime"]
    basis: str
    warning: Refused | None = None


Verdict = Allowed | Refused


def tool_class(tool: ToolSpec) -> ToolClass:
    """The class the gate gives ``tool``, from its declarations only."""
    if tool.origin == "builtin" and tool.name in RUNTIME_OWNED_TOOLS:
        return cast(RuntimeToolName, tool.name)
    if tool.category == "plan-state":
        return "plan-state"
    if tool.effect == "write" or tool.category is not None:
        return "write"
    if tool.origin == "builtin" and tool.effect == "read":
        return "read"
    return "unverified"


def _deployment_refusal(phase: RuntimePhase, policy: GatePolicy, name: str) -> Refused | None:
    matching = [rule for rule in policy.rules if rule.matches(phase, name)]
    denied = [rule for rule in matching if rule.action == "deny"]
    if denied:
        why = f"the deployment denies {name} (rule {denied[0].pattern!r}) in {phase}"
        return Refused("denied-by-deployment", why, name, phase, "Use another tool.")
    if policy.default_action == "deny" and not matching:
        why = f"the deployment allows only listed tools, and {name} is not listed for {phase}"
        return Refused("not-allowed-by-deployment", why, name, phase, "Use another tool.")
    return None


def _classify(policy: GatePolicy, tool: ToolSpec, arguments: JSONObject) -> Classification | None:
    """The first read-only classification from a covering classifier; else
    the first refusal one gave; else None. Exceptions count as "no"."""
    first_no: Classification | None = None
    for classifier in (c for c in policy.classifiers if _covers(c, tool)):
        try:
            result: object = classifier.classify(tool, arguments)
        except Exception as exc:  # a deployment's bug must fail closed
            result = Classification(
                False, "classifier-failed", f"classifier {classifier.name} raised {type(exc).__name__}"
            )
        if not isinstance(result, Classification):
            result = Classification(
                False, "classifier-failed", f"classifier {classifier.name} gave no classification"
            )
        if result.read_only is True:
            return result
        first_no = first_no or result
    return first_no


def _covers(classifier: CallClassifier, tool: ToolSpec) -> bool:
    try:
        return classifier.covers(tool) is True
    except Exception:  # fail closed: a broken classifier covers nothing
        return False


def _malformed(phase: RuntimePhase, tool: ToolSpec, call: ToolCall) -> Refused | None:
    name = call.name if isinstance(call.name, str) else tool.name
    problem = None
    if not isinstance(call.id, str) or not call.id:
        problem = "the call has no id"
    elif call.name != tool.name:
        problem = f"the call names {call.name!r}, not {tool.name!r}"
    elif not isinstance(call.arguments, Mapping) or not is_json(call.arguments):
        problem = "the arguments are not a JSON object"
    if problem is None:
        return None
    return Refused("malformed-call", problem, name, phase, "Send the arguments as one JSON object.")


def _check_phase(phase: object) -> RuntimePhase:
    if phase not in RUNTIME_PHASES:
        raise GateError(f"unknown runtime phase {phase!r}", code="unknown-phase")
    return phase


def decide(
    phase: RuntimePhase, policy: GatePolicy, tool: ToolSpec, call: ToolCall | None
) -> Verdict:
    """May ``tool`` be offered (``call`` None) or may ``call`` run, in
    ``phase`` under ``policy``? Raises ``GateError`` (``unknown-phase``) only
    for a phase outside ``RUNTIME_PHASES``; every other answer is a verdict."""
    phase = _check_phase(phase)
    if call is not None:
        malformed = _malformed(phase, tool, call)
        if malformed is not None:
            return malformed
    row = VERDICT_TABLE[(phase, tool_class(tool))]
    if row.rule == "runtime":
        return Allowed(tool.name, phase, "runtime", "runtime-owned")
    if row.rule == "never":
        reason = f"{tool.name} would change the plan or mode, which only the runtime does"
        if row.code == _WRONG_PHASE:
            reason = f"{tool.name} is handled by the runtime, but not in {phase}"
        return Refused(row.code, reason, tool.name, phase, row.hint)
    denied = _deployment_refusal(phase, policy, tool.name)
    if denied is not None:
        return denied
    if row.rule == "deployment":
        return Allowed(tool.name, phase, "executor", "phase-allows")
    if row.rule == "deny":
        reason = f"{tool.name} writes, and {phase} is read-only"
        return _phase_refusal(policy, Refused(row.code, reason, tool.name, phase, row.hint))
    # The "classify" rule: only a covering classifier can let a call through.
    unproven = f"{tool.name} is not declared read-only, and {phase} is read-only"
    if call is None:
        if any(_covers(c, tool) for c in policy.classifiers):
            return Allowed(tool.name, phase, "executor", "classifier-covers")
        return _phase_refusal(policy, Refused(row.code, unproven, tool.name, phase, row.hint))
    result = _classify(policy, tool, cast(JSONObject, call.arguments))
    if result is None:
        return _phase_refusal(policy, Refused(row.code, unproven, tool.name, phase, row.hint))
    if result.read_only:
        return Allowed(tool.name, phase, "executor", "classified-read-only")
    reason = f"{tool.name} is not proven read-only in {phase}: {result.reason}"
    hint = result.hint or row.hint
    return _phase_refusal(policy, Refused(result.code, reason, tool.name, phase, hint))


def _phase_refusal(policy: GatePolicy, refused: Refused) -> Verdict:
    if policy.enforcement == "advisory":
        return Allowed(refused.tool, refused.phase, "executor", "advisory", warning=refused)
    return refused


def _offered_cleanly(verdict: Verdict) -> bool:
    return isinstance(verdict, Allowed) and verdict.warning is None


def list_available_specs(
    registry: ToolRegistry, phase: RuntimePhase, policy: GatePolicy
) -> tuple[ToolSpec, ...]:
    """The tools offered to the model in ``phase``, in registration order:
    every registered tool (``stable``), or those whose catalog decision is a
    clean ``Allowed`` (``filtered``). Raises ``GateError`` for a bad phase."""
    phase = _check_phase(phase)
    if policy.catalog == "stable":
        return registry.specs
    return tuple(
        spec for spec in registry if _offered_cleanly(decide(phase, policy, spec, None))
    )


def check_call(
    registry: ToolRegistry,
    phase: RuntimePhase,
    policy: GatePolicy,
    call: ToolCall,
    offered: Collection[str] | None = None,
) -> Verdict:
    """May ``call`` run now? Resolves the name exactly (a miscased or unknown
    name is refused), refuses a tool missing from ``offered`` (the names
    actually shown with the request, when given), then asks ``decide``.
    Raises ``GateError`` only for a bad phase."""
    phase = _check_phase(phase)
    name = call.name
    if not isinstance(name, str):
        return Refused("malformed-call", "the tool name is not a string", "", phase, _FROM_LIST)
    spec = registry.get(name)
    if spec is None:
        near = registry.get_casefold(name)
        if near is None:
            return Refused("unknown-tool", f"no tool is named {name!r}", name, phase, _FROM_LIST)
        hint = "Tool names are case-sensitive. " + _FROM_LIST
        if _offered_cleanly(decide(phase, policy, near, None)):
            hint = f"Tool names are case-sensitive: call {near.name!r}."
        why = f"no tool is named {name!r} (wrong case)"
        return Refused("tool-name-case-mismatch", why, name, phase, hint)
    if offered is not None and name not in offered:
        why = f"{name} was not in the tool list sent with this request"
        return Refused("not-offered", why, name, phase, _FROM_LIST)
    return decide(phase, policy, spec, call)
