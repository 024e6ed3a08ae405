"""Tools as values: what a tool declares about itself, and the registry.

Theory of operation
-------------------
A ``ToolSpec`` is everything the kernel knows about a tool: its name, the
description and JSON-schema parameters shown to the model, the effect it
declares (``read``, ``write`` or ``unknown``), where it comes from
(``builtin``, ``mcp`` or ``shell``), and optionally a ``category`` naming a
kind of write the gate treats specially (``memory-write``, ``task-state``,
``plan-state``). An MCP server may annotate a tool as read-only; that hint is
kept in ``read_only_hint`` for display and audit, and trusted by nobody.
``target_args`` names the arguments that hold the paths a call acts on (a
path each, or a list of paths): the plan's scope checks a write against
them, and a write tool that declares none has targets nobody can determine,
so no scope with paths lets it run. A shell tool's targets come from its
command line instead (``kernel.tools.shell.shell_write_targets``).

A spec is checked when it is built: a name the model can call (ASCII letters,
digits, ``_`` and ``-``, at most 64), JSON-shaped parameters (frozen, so a
caller's later mutation cannot reach it), a declared effect that does not
contradict its category, a read-only hint only on an MCP tool, and target
arguments that are distinct properties of its parameters.

A ``ToolRegistry`` keeps every registered tool, in registration order, for
the whole session: it never unregisters, it never splits into per-mode
registries. Two names that differ only by case are refused, so a call that
gets the case wrong can never land on a different tool.

Some tools are the runtime's own (``RUNTIME_TOOLS``): calling one asks the
runtime to change the plan or the mode through the kernel (present a plan,
record a bootstrap plan, report todo progress, report a verification). No
executor runs them, only a built-in tool may carry their names, and each is
offered in the phases its row names (the gate's verdict table is built from
this table).

Calls the model makes are ``ToolCall`` values holding whatever the model sent,
as raw text and decoded (the gate checks them): one type from the model port
(which re-exports it) through the gate and the log to the executor. A
``CallClassifier`` is supplied by a deployment: for the tools it ``covers``,
it may mark one particular call read-only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, get_args

from ..errors import GateError, is_kebab_case
from ..payload import JSON, JSONObject
from ..phase import RuntimePhase

__all__ = [
    "MAX_ARGUMENT_DEPTH",
    "RUNTIME_OWNED_TOOLS",
    "RUNTIME_TOOLS",
    "TOOL_NAME",
    "CallClassifier",
    "Classification",
    "RuntimeTool",
    "RuntimeToolName",
    "ToolCall",
    "ToolCallError",
    "ToolCategory",
    "ToolEffect",
    "ToolOrigin",
    "ToolRegistry",
    "ToolSpec",
    "ToolSpecError",
    "argument_problem",
    "decode_arguments",
    "freeze_json",
    "is_json",
    "json_kind",
    "thaw_json",
]

ToolEffect = Literal["read", "write", "unknown"]
ToolOrigin = Literal["builtin", "mcp", "shell"]
ToolCategory = Literal["memory-write", "task-state", "plan-state"]

_EFFECTS: frozenset[str] = frozenset(get_args(ToolEffect))
_ORIGINS: frozenset[str] = frozenset(get_args(ToolOrigin))
_CATEGORIES: frozenset[str] = frozenset(get_args(ToolCategory))

#: The names a tool may have: what chat-completion APIs accept, ASCII only,
#: so that no Unicode look-alike of a tool name can be registered.
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

RuntimeToolName = Literal["exit_plan_mode", "bootstrap_plan", "update_todo", "report_verification"]


@dataclass(frozen=True, slots=True)
class RuntimeTool:
    """Where a runtime-owned tool is offered (``phases``), and the hint a
    call made in any other phase is refused with."""

    phases: frozenset[RuntimePhase]
    hint: str


#: The tools the runtime handles itself, through the kernel (never an
#: executor), and the phases each one makes sense in.
RUNTIME_TOOLS: Mapping[RuntimeToolName, RuntimeTool] = MappingProxyType(
    {
        "exit_plan_mode": RuntimeTool(
            frozenset({"plan"}), "exit_plan_mode presents a plan in plan mode; /plan turns plan mode on."
        ),
        "bootstrap_plan": RuntimeTool(
            frozenset({"build_bootstrap"}), "bootstrap_plan records a first plan only in build mode without one."
        ),
        "update_todo": RuntimeTool(
            frozenset({"build_execute", "verify"}), "update_todo reports progress only while a plan executes."
        ),
        "report_verification": RuntimeTool(
            frozenset({"verify"}), "report_verification answers only in the verify phase, after execution ends."
        ),
    }
)

#: Their names; only a built-in tool may carry one.
RUNTIME_OWNED_TOOLS: frozenset[str] = frozenset(RUNTIME_TOOLS)

#: Deeper JSON than this is refused rather than walked.
_MAX_DEPTH = 64


class ToolSpecError(GateError):
    """A tool declaration or registration is invalid: the deployment's fault.

    Codes: ``invalid-tool-name``, ``invalid-tool-field``,
    ``effect-category-conflict``, ``hint-not-mcp``, ``runtime-owned-name``,
    ``duplicate-tool``,
    ``tool-name-case-collision``, ``invalid-classification`` (a bad
    ``Classification`` or ``CallClassifier``; ``tool`` is then empty).
    """

    codes = frozenset(
        {
            "invalid-tool-name",
            "invalid-tool-field",
            "effect-category-conflict",
            "hint-not-mcp",
            "runtime-owned-name",
            "duplicate-tool",
            "tool-name-case-collision",
            "invalid-classification",
        }
    )

    def __init__(self, message: str, *, code: str, tool: str) -> None:
        super().__init__(message, code=code)
        self.tool = tool


def is_json(value: object, _depth: int = 0) -> bool:
    """True when ``value`` is JSON-shaped: null, bool, int, finite float,
    str, a list/tuple of JSON, or a mapping with string keys of JSON."""
    if _depth > _MAX_DEPTH:
        return False
    if value is None or isinstance(value, bool | int | str):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list | tuple):
        return all(is_json(item, _depth + 1) for item in value)
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and is_json(v, _depth + 1) for k, v in value.items())
    return False


def freeze_json(value: JSON) -> JSON:
    """A deep, read-only copy of a JSON value (mappings become read-only
    proxies, lists become tuples). The input must satisfy ``is_json``."""
    if isinstance(value, Mapping):
        return MappingProxyType({k: freeze_json(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze_json(item) for item in value)
    return value


def thaw_json(value: JSON) -> JSON:
    """A plain ``dict``/``list`` copy of a JSON value, for encoders."""
    if isinstance(value, Mapping):
        return {k: thaw_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [thaw_json(item) for item in value]
    return value


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool. Raises ``ToolSpecError`` when the declaration is invalid."""

    name: str
    description: str
    parameters: JSONObject = field(hash=False)
    effect: ToolEffect
    origin: ToolOrigin
    read_only_hint: bool | None = None
    category: ToolCategory | None = None
    target_args: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        name = self.name
        if not isinstance(name, str) or TOOL_NAME.fullmatch(name) is None:
            raise ToolSpecError(
                f"tool name {name!r} must be 1-64 ASCII letters, digits, '_' or '-'",
                code="invalid-tool-name",
                tool=str(name),
            )

        def bad(what: str) -> ToolSpecError:
            return ToolSpecError(f"tool {name!r}: {what}", code="invalid-tool-field", tool=name)

        if not isinstance(self.description, str):
            raise bad("description must be a string")
        if not isinstance(self.parameters, Mapping) or not is_json(self.parameters):
            raise bad("parameters must be a JSON-schema object")
        if not isinstance(self.effect, str) or self.effect not in _EFFECTS:
            raise bad(f"effect must be one of {sorted(_EFFECTS)}, got {self.effect!r}")
        if not isinstance(self.origin, str) or self.origin not in _ORIGINS:
            raise bad(f"origin must be one of {sorted(_ORIGINS)}, got {self.origin!r}")
        if self.category is not None and (not isinstance(self.category, str) or self.category not in _CATEGORIES):
            raise bad(f"category must be one of {sorted(_CATEGORIES)} or None")
        if self.read_only_hint is not None and not isinstance(self.read_only_hint, bool):
            raise bad("read_only_hint must be a boolean or None")
        if self.category is not None and self.effect == "read":
            raise ToolSpecError(
                f"tool {name!r} declares effect 'read' but category {self.category!r} writes",
                code="effect-category-conflict",
                tool=name,
            )
        owned = {owned.casefold() for owned in RUNTIME_OWNED_TOOLS}
        if name.casefold() in owned and self.origin != "builtin":
            raise ToolSpecError(
                f"tool {name!r} is runtime-owned; an {self.origin} tool cannot take its name",
                code="runtime-owned-name",
                tool=name,
            )
        if self.read_only_hint is not None and self.origin != "mcp":
            raise ToolSpecError(
                f"tool {name!r}: only MCP tools carry a read-only hint",
                code="hint-not-mcp",
                tool=name,
            )
        self._check_target_args(bad)
        object.__setattr__(self, "parameters", freeze_json(self.parameters))

    def _check_target_args(self, bad: Callable[[str], ToolSpecError]) -> None:
        targets = self.target_args
        if not isinstance(targets, tuple) or not all(isinstance(t, str) and t for t in targets):
            raise bad("target_args must be a tuple of argument names")
        if len(set(targets)) != len(targets):
            raise bad(f"target_args names an argument twice: {list(targets)}")
        properties = self.parameters.get("properties")
        declared = set(properties) if isinstance(properties, Mapping) else set()
        unknown = [t for t in targets if t not in declared]
        if unknown:
            raise bad(f"target_args {unknown} are not properties of its parameters")

    def to_json(self) -> dict[str, JSON]:
        """The spec as the model sees it: ``{name, description, parameters}``."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": thaw_json(self.parameters),
        }


@dataclass(frozen=True, slots=True)
class ToolRegistry:
    """Every registered tool, in registration order; never shrinks.

    Build one with ``ToolRegistry.of(*specs)`` or ``registry.register(spec)``;
    both raise ``ToolSpecError`` (``duplicate-tool``,
    ``tool-name-case-collision``) and leave the registry unchanged.
    """

    specs: tuple[ToolSpec, ...] = ()

    @classmethod
    def of(cls, *specs: ToolSpec) -> ToolRegistry:
        registry = cls()
        for spec in specs:
            registry = registry.register(spec)
        return registry

    def register(self, spec: ToolSpec) -> ToolRegistry:
        if not isinstance(spec, ToolSpec):
            raise ToolSpecError(
                f"only ToolSpec values can be registered, got {type(spec).__name__}",
                code="invalid-tool-field",
                tool="",
            )
        for existing in self.specs:
            if existing.name == spec.name:
                raise ToolSpecError(
                    f"tool {spec.name!r} is already registered",
                    code="duplicate-tool",
                    tool=spec.name,
                )
            if existing.name.casefold() == spec.name.casefold():
                raise ToolSpecError(
                    f"tool {spec.name!r} differs from registered {existing.name!r} only by case",
                    code="tool-name-case-collision",
                    tool=spec.name,
                )
        return ToolRegistry((*self.specs, spec))

    def get(self, name: str) -> ToolSpec | None:
        """The tool with exactly this name (case-sensitive), or None."""
        for spec in self.specs:
            if spec.name == name:
                return spec
        return None

    def get_casefold(self, name: str) -> ToolSpec | None:
        """The tool whose name equals ``name`` ignoring case, or None."""
        folded = name.casefold()
        for spec in self.specs:
            if spec.name.casefold() == folded:
                return spec
        return None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(spec.name for spec in self.specs)

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(self.specs)

    def __len__(self) -> int:
        return len(self.specs)


class ToolCallError(GateError):
    """A ``ToolCall`` built with halves that disagree (both or neither of
    ``arguments`` and ``arguments_error`` set): the fault of whoever built
    it, usually a model client. ``call_id`` is the call's id as given."""

    code = "invalid-tool-call"

    def __init__(self, message: str, *, call_id: object) -> None:
        super().__init__(message)
        self.call_id = call_id


#: How deeply a call's arguments may nest arrays and objects (the gate's
#: own limit; deeper arguments do not decode and the gate refuses the call).
MAX_ARGUMENT_DEPTH = _MAX_DEPTH


def _no_constant(token: str) -> object:
    raise ValueError(f"{token} is not a JSON number")


def json_kind(value: object) -> str:
    """How an error message names the JSON type of ``value`` ("an array" …)."""
    if value is None:
        return "null"
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    for cls, name in names.items():
        if isinstance(value, cls):
            return name
    return "a number" if isinstance(value, int | float) else type(value).__name__


def argument_problem(value: object) -> str | None:
    """Why decoded arguments cannot go into the log as they are (nested
    deeper than the gate allows, text that is not Unicode), or None. Whether
    ``value`` is JSON at all is ``is_json``'s question."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_ARGUMENT_DEPTH:
            return f"arguments nest arrays and objects deeper than {MAX_ARGUMENT_DEPTH} levels"
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return "arguments hold text that is not valid Unicode (a lone surrogate)"
        elif isinstance(item, Mapping | list | tuple):
            children = [*item.keys(), *item.values()] if isinstance(item, Mapping) else item
            stack.extend((child, depth + 1) for child in children)
    return None


def decode_arguments(raw: str) -> tuple[Mapping[str, JSON] | None, str | None]:
    """Decode a call's raw arguments: ``(object, None)`` or ``(None, problem)``.

    Never raises. Blank text counts as ``{}`` (some servers send ``""`` for a
    call without parameters); anything else must be a JSON object, with
    finite numbers, valid Unicode text and at most ``MAX_ARGUMENT_DEPTH``
    levels of nesting.
    """
    if not raw.strip():
        return {}, None
    import json  # noqa: PLC0415 (json is imported on first use, not with the kernel)

    try:
        value = json.loads(raw, parse_constant=_no_constant)
    except (ValueError, RecursionError) as err:
        return None, f"arguments are not valid JSON: {err}"
    if not isinstance(value, dict):
        return None, f"arguments must be a JSON object, got {json_kind(value)}"
    problem = argument_problem(value)
    if problem is not None:
        return None, problem
    return value, None


def _json_text(value: JSON) -> str:
    """``value`` (frozen or not) as JSON text, non-ASCII kept as it is."""
    import json  # noqa: PLC0415 (see decode_arguments)

    return json.dumps(thaw_json(value), ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call the model asked for, untrusted: the one value that goes from
    the model's reply through the gate and the log to the executor.

    ``arguments_json`` is the raw text the model sent; exactly one of
    ``arguments`` (the decoded object) and ``arguments_error`` (why it did
    not decode) is set. Build one with ``ToolCall.parse`` (from raw text) or
    ``ToolCall.of`` (from an object); the constructor raises
    ``ToolCallError`` when the two halves disagree. ``name`` is the tool's
    name exactly as sent (it may name no tool).

    The gate takes this value itself, not a view of it: it reads ``id``,
    ``name`` and ``arguments``, all fields, and refuses undecoded arguments
    (``None``) as ``malformed-call``; a second call type for the gate would
    only be a copy made per call. ``recorded_arguments`` is what the log's
    ``tool/call`` holds: the decoded object, or the raw text.

    ``call_id`` and ``tool`` are the names the kernel's call used for ``id``
    and ``name`` before the two call types became one; they are read-only
    and kept for one release.
    """

    id: str
    name: str
    arguments_json: str
    arguments: Mapping[str, JSON] | None = field(hash=False)
    arguments_error: str | None = None

    def __post_init__(self) -> None:
        if (self.arguments is None) == (self.arguments_error is None):
            raise ToolCallError(
                f"tool call {self.id!r}: exactly one of arguments and arguments_error must be set "
                "(the fault of the code that built the call)",
                call_id=self.id,
            )

    @classmethod
    def parse(cls, id: str, name: str, arguments_json: str) -> ToolCall:
        """A call from the model's raw argument text; bad JSON is kept, not raised."""
        decoded, problem = decode_arguments(arguments_json)
        return cls(id, name, arguments_json, decoded, problem)

    @classmethod
    def of(cls, id: str, name: str, arguments: Mapping[str, JSON]) -> ToolCall:
        """A call from an already decoded object (scripts, tests)."""
        return cls(id, name, _json_text(arguments), arguments)

    @classmethod
    def recorded(cls, id: str, name: str, arguments: JSON) -> ToolCall:
        """A call as a ``tool/call`` event recorded it (``recorded_arguments``):
        an object is the decoded arguments; raw text is kept as the text
        that did not decode; any other JSON value did not decode to an object."""
        if isinstance(arguments, Mapping):
            return cls.of(id, name, arguments)
        if isinstance(arguments, str):
            return cls(id, name, arguments, None, "the arguments were recorded as the raw text that did not decode")
        problem = f"arguments must be a JSON object, got {json_kind(arguments)}"
        return cls(id, name, _json_text(arguments), None, problem)

    @property
    def ok(self) -> bool:
        """True when the arguments decoded to an object."""
        return self.arguments_error is None

    @property
    def recorded_arguments(self) -> JSON:
        """The arguments as the log records them: the decoded object, or the
        raw text when they did not decode."""
        return self.arguments if self.arguments is not None else self.arguments_json

    @property
    def call_id(self) -> str:
        """``id`` under its former kernel name (kept for one release)."""
        return self.id

    @property
    def tool(self) -> str:
        """``name`` under its former kernel name (kept for one release)."""
        return self.name


@dataclass(frozen=True, slots=True)
class Classification:
    """A classifier's word on one call: read-only or not, and why.

    ``code`` is kebab-case; when ``read_only`` is false the gate's refusal
    carries it, with ``reason`` and ``hint`` (what the model can do instead),
    to the model.
    """

    read_only: bool
    code: str
    reason: str
    hint: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.read_only, bool):
            raise ToolSpecError(
                "Classification.read_only must be a bool", code="invalid-classification", tool=""
            )
        if not isinstance(self.code, str) or not is_kebab_case(self.code):
            raise ToolSpecError(
                f"classification code {self.code!r} is not kebab-case",
                code="invalid-classification",
                tool="",
            )


@dataclass(frozen=True, slots=True)
class CallClassifier:
    """A deployment's classifier: for the tools it ``covers``, ``classify``
    decides whether one particular call (its arguments) is read-only.

    Both callables must be pure. The gate treats an exception, or anything
    but a ``Classification`` with ``read_only is True``, as "not read-only".
    """

    name: str
    covers: Callable[[ToolSpec], bool]
    classify: Callable[[ToolSpec, JSONObject], Classification]

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not is_kebab_case(self.name):
            raise ToolSpecError(
                f"classifier name {self.name!r} is not kebab-case",
                code="invalid-classification",
                tool="",
            )

