"""Model scripts: the steps a scripted client replays, and how they are loaded.

Theory of operation
-------------------
A ``ScriptStep`` is one canned answer (a ``ChatResponse`` or a ``ModelError``
to raise) plus an ``Expectation`` about the request it answers.
``parse_script`` builds the steps from plain data (a dict, or what JSON or
TOML decode to), strictly: unknown keys, wrong types and impossible values are
all collected, with the path of each, and reported together in one
``ScriptFormatError``, so that a script author fixes everything in one pass.
The accepted shape is documented in ``adapters.scripted_client``.

A scripted error names its ``code`` and takes only that error's parameters
(``ERROR_PARAMS``): ``model-timeout`` {timeout_s}, ``model-unreachable``
{detail}, ``model-http-error`` {status, body}, ``model-rate-limited``
{retry_after, body}, ``model-bad-response`` {problem, body},
``model-retries-exhausted`` {attempts, last} where ``last`` is another
scripted error (a connection failure when left out).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import cast, get_args

from planfold.adapters.llm.model import (
    JSON,
    ChatRequest,
    ChatResponse,
    ModelBadResponseError,
    ModelError,
    ModelHTTPError,
    ModelRateLimitedError,
    ModelRetriesExhaustedError,
    ModelTimeoutError,
    ModelUnreachableError,
    Role,
    ToolCall,
    Usage,
)

__all__ = ["ERROR_PARAMS", "Expectation", "ScriptFormatError", "ScriptStep", "parse_script"]


class ScriptFormatError(ModelError):
    """A script could not be loaded; ``problems`` lists everything wrong with it."""

    code = "script-invalid"

    def __init__(self, problems: Sequence[str], source: str = "script") -> None:
        super().__init__(f"{source} is not a valid model script: " + "; ".join(problems))
        self.problems = tuple(problems)
        self.source = source


@dataclass(frozen=True, slots=True)
class Expectation:
    """What a step demands of the request it answers; every field is optional.

    ``tools`` is the exact set of tool names offered; ``check`` is a Python
    predicate returning a problem sentence or None (not loadable from files).
    """

    tools: frozenset[str] | None = None
    tools_include: frozenset[str] = frozenset()
    tools_exclude: frozenset[str] = frozenset()
    system_contains: tuple[str, ...] = ()
    system_excludes: tuple[str, ...] = ()
    last_user_contains: tuple[str, ...] = ()
    last_role: Role | None = None
    check: Callable[[ChatRequest], str | None] | None = None

    def problems(self, request: ChatRequest) -> tuple[str, ...]:
        """Every expectation ``request`` misses, as sentences (empty when met)."""
        found: list[str] = []
        offered = frozenset(request.tool_names)
        if self.tools is not None and offered != self.tools:
            found.append(
                f"tools offered {sorted(offered)}, expected exactly {sorted(self.tools)}"
            )
        if missing := sorted(self.tools_include - offered):
            found.append(f"tools {missing} were not offered")
        if extra := sorted(self.tools_exclude & offered):
            found.append(f"tools {extra} were offered but must not be")
        system = request.system_text
        found += [f"system prompt lacks {s!r}" for s in self.system_contains if s not in system]
        found += [f"system prompt contains {s!r}" for s in self.system_excludes if s in system]
        user = request.last_user_text
        for s in self.last_user_contains:
            if user is None or s not in user:
                found.append(f"latest user message {user!r} lacks {s!r}")
        last = request.messages[-1].role
        if self.last_role is not None and last != self.last_role:
            found.append(f"last message is from {last!r}, expected {self.last_role!r}")
        if self.check is not None and (problem := self.check(request)) is not None:
            found.append(problem)
        return tuple(found)


@dataclass(frozen=True, slots=True)
class ScriptStep:
    """One scripted answer: a reply, or an error to raise, after checking ``expect``."""

    reply: ChatResponse | ModelError
    expect: Expectation = Expectation()
    label: str | None = None


# --- loading ----------------------------------------------------------------

#: Each scriptable error code and the parameters it accepts besides ``code``.
ERROR_PARAMS: Mapping[str, frozenset[str]] = {
    "model-timeout": frozenset({"timeout_s"}),
    "model-unreachable": frozenset({"detail"}),
    "model-http-error": frozenset({"status", "body"}),
    "model-rate-limited": frozenset({"retry_after", "body"}),
    "model-bad-response": frozenset({"problem", "body"}),
    "model-retries-exhausted": frozenset({"attempts", "last"}),
}
_STEP_KEYS = frozenset({"label", "expect", "reply", "error"})
_REPLY_KEYS = frozenset({"text", "tool_calls", "finish_reason", "usage", "reasoning"})
_CALL_KEYS = frozenset({"id", "name", "arguments"})
_USAGE_KEYS = frozenset({"prompt_tokens", "completion_tokens", "total_tokens"})
_NAME_SETS = ("tools", "tools_include", "tools_exclude")
_TEXT_LISTS = ("system_contains", "system_excludes", "last_user_contains")
_EXPECT_KEYS = frozenset({*_NAME_SETS, *_TEXT_LISTS, "last_role"})
_ROLES: tuple[str, ...] = get_args(Role)


class _Problems:
    """Collects every problem of a script, each with its path."""

    def __init__(self) -> None:
        self.found: list[str] = []

    def add(self, path: str, problem: str) -> None:
        self.found.append(f"{path}: {problem}")

    def obj(self, value: object, path: str, allowed: frozenset[str]) -> Mapping[str, object]:
        """``value`` as a mapping (empty after reporting, when it is not one)."""
        if not isinstance(value, Mapping):
            self.add(path, f"expected a table/object, got {type(value).__name__}")
            return {}
        for key in sorted(set(value) - allowed, key=str):
            self.add(f"{path}.{key}", f"unknown key (allowed: {sorted(allowed)})")
        return value

    def text(self, value: object, path: str, default: str | None = None) -> str | None:
        if value is None or isinstance(value, str):
            return default if value is None else value
        self.add(path, f"expected a string, got {type(value).__name__}")
        return default

    def texts(self, value: object, path: str) -> tuple[str, ...]:
        if isinstance(value, str):
            return (value,)
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
        self.add(path, "expected a string or a list of strings")
        return ()

    def number(self, value: object, path: str, *, integer: bool = False) -> float | None:
        allowed = int if integer else int | float
        if isinstance(value, allowed) and not isinstance(value, bool):
            number = float(value)
            if math.isfinite(number) and number >= 0:
                return number
        kind = "integer" if integer else "number"
        self.add(path, f"expected a non-negative {kind}, got {value!r}")
        return None


def parse_script(data: object, source: str = "script") -> tuple[ScriptStep, ...]:
    """The steps of a script in plain-data form.

    Raises ``ScriptFormatError`` listing every problem found, each with its path.
    """
    p = _Problems()
    top = p.obj(data, "script", frozenset({"steps"}))
    raw_steps = top.get("steps")
    if not isinstance(raw_steps, list):
        p.add("script.steps", "expected a list of steps")
        raw_steps = []
    steps: list[ScriptStep] = []
    for i, raw in enumerate(raw_steps):
        path = f"steps[{i}]"
        before = len(p.found)
        entry = p.obj(raw, path, _STEP_KEYS)
        label = p.text(entry.get("label"), f"{path}.label")
        expect = _expectation(p, entry["expect"], f"{path}.expect") if "expect" in entry else None
        reply: ChatResponse | ModelError | None = None
        if ("reply" in entry) == ("error" in entry):
            p.add(path, "needs exactly one of 'reply' and 'error'")
        elif "reply" in entry:
            reply = _reply(p, entry["reply"], f"{path}.reply", i + 1)
        else:
            reply = _error(p, entry["error"], f"{path}.error")
        if reply is not None and len(p.found) == before:
            steps.append(ScriptStep(reply, expect or Expectation(), label))
    if p.found:
        raise ScriptFormatError(p.found, source)
    return tuple(steps)


def _expectation(p: _Problems, value: object, path: str) -> Expectation:
    entry = p.obj(value, path, _EXPECT_KEYS)
    names = {k: frozenset(p.texts(entry[k], f"{path}.{k}")) for k in _NAME_SETS if k in entry}
    texts = {k: p.texts(entry[k], f"{path}.{k}") for k in _TEXT_LISTS if k in entry}
    role = entry.get("last_role")
    if role is not None and role not in _ROLES:
        p.add(f"{path}.last_role", f"expected one of {list(_ROLES)}, got {role!r}")
        role = None
    return Expectation(
        tools=names.get("tools"),
        tools_include=names.get("tools_include", frozenset()),
        tools_exclude=names.get("tools_exclude", frozenset()),
        system_contains=texts.get("system_contains", ()),
        system_excludes=texts.get("system_excludes", ()),
        last_user_contains=texts.get("last_user_contains", ()),
        last_role=cast("Role | None", role),  # checked against _ROLES above
    )


def _reply(p: _Problems, value: object, path: str, step: int) -> ChatResponse:
    if isinstance(value, str):
        return ChatResponse(text=value, finish_reason="stop")
    entry = p.obj(value, path, _REPLY_KEYS)
    calls: list[ToolCall] = []
    raw_calls = entry.get("tool_calls", [])
    if not isinstance(raw_calls, list):
        p.add(f"{path}.tool_calls", "expected a list of tool calls")
        raw_calls = []
    for j, raw in enumerate(raw_calls):
        call = _tool_call(p, raw, f"{path}.tool_calls[{j}]", f"call-{step}-{j + 1}")
        if call is not None:
            calls.append(call)
    usage = None
    if "usage" in entry:
        counts = p.obj(entry["usage"], f"{path}.usage", _USAGE_KEYS)
        ints = {
            k: p.number(counts[k], f"{path}.usage.{k}", integer=True)
            for k in sorted(_USAGE_KEYS & counts.keys())
        }
        usage = Usage(**{k: None if v is None else int(v) for k, v in ints.items()})
    finish = "tool_calls" if calls else "stop"
    return ChatResponse(
        text=p.text(entry.get("text"), f"{path}.text"),
        tool_calls=tuple(calls),
        finish_reason=p.text(entry.get("finish_reason"), f"{path}.finish_reason", finish),
        usage=usage,
        reasoning=p.text(entry.get("reasoning"), f"{path}.reasoning"),
    )


def _tool_call(p: _Problems, value: object, path: str, default_id: str) -> ToolCall | None:
    entry = p.obj(value, path, _CALL_KEYS)
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        p.add(f"{path}.name", "expected a non-empty string")
        return None
    call_id = p.text(entry.get("id"), f"{path}.id", default_id) or default_id
    arguments = entry.get("arguments", {})
    if isinstance(arguments, str):
        return ToolCall.parse(call_id, name, arguments)
    if isinstance(arguments, Mapping):
        plain: Mapping[str, JSON] = arguments
        return ToolCall.of(call_id, name, plain)
    p.add(f"{path}.arguments", "expected an object or a raw JSON string")
    return None


def _error(p: _Problems, value: object, path: str) -> ModelError | None:
    code = value.get("code") if isinstance(value, Mapping) else None
    if not isinstance(code, str) or code not in ERROR_PARAMS:
        p.add(f"{path}.code", f"expected one of {sorted(ERROR_PARAMS)}, got {code!r}")
        return None
    entry = p.obj(value, path, ERROR_PARAMS[code] | {"code"})
    body = p.text(entry.get("body"), f"{path}.body", "") or ""
    if code == "model-timeout":
        timeout = p.number(entry.get("timeout_s", 60.0), f"{path}.timeout_s")
        return ModelTimeoutError(timeout if timeout is not None else 60.0, "scripted")
    if code == "model-unreachable":
        detail = p.text(entry.get("detail"), f"{path}.detail", "scripted connection failure")
        return ModelUnreachableError(detail or "scripted connection failure")
    if code == "model-http-error":
        status = entry.get("status")
        if not isinstance(status, int) or isinstance(status, bool) or not 400 <= status <= 599:
            p.add(f"{path}.status", f"expected an HTTP error status 400-599, got {status!r}")
            return None
        return ModelHTTPError(status, body)
    if code == "model-rate-limited":
        after = entry.get("retry_after")
        wait = None if after is None else p.number(after, f"{path}.retry_after")
        return ModelRateLimitedError(body, wait)
    if code == "model-bad-response":
        problem = p.text(entry.get("problem"), f"{path}.problem", "scripted bad response")
        return ModelBadResponseError(problem or "scripted bad response", body)
    attempts = p.number(entry.get("attempts", 3), f"{path}.attempts", integer=True)
    last = _error(p, entry["last"], f"{path}.last") if "last" in entry else None
    if attempts is None or attempts < 1:
        p.add(f"{path}.attempts", "expected at least 1")
        return None
    fallback = ModelUnreachableError("scripted connection failure")
    return ModelRetriesExhaustedError(int(attempts), last or fallback)
