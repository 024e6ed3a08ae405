"""Model scripts: the steps a scripted client replays, and how they are loaded.

Theory of operation
-------------------
A ``ScriptStep`` is one canned answer (a ``ChatResponse`` or a ``ModelError``
to raise) plus an ``Expectation`` about the request it answers.
``parse_script`` builds the steps from plain data (a dict, or what JSON or
TOML decode to), strictly: unknown keys, wrong types and impossible values are
all collected, with the path of each, and reported together in one
``ScriptFormatError``, so that a script author fixes everything in one pass.
The accepted shape is documented in ``adapters.llm.scripted``.

The shape of a script file is written once, as the private dataclasses below
(``_Script``, ``_Step``, ``_Reply``, ...); cattrs structures plain data into
them with the exact converter of ``adapters.structuring`` (no coercion,
unknown keys refused, every problem with its path), value rules ride on
``NewType``s whose hooks check them (so a bad value is reported at its own
path), and a scripted error is cattrs's tagged union keyed by ``code``.
``parse_script`` then turns the document into ``ScriptStep``s.

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
from dataclasses import dataclass, field, fields
from typing import Any, NewType

import cattrs

from ..structuring import exact_converter, problems, tag_union
from .model import (
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
    TokenCount,
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


# --- the shape of a script file --------------------------------------------

#: A number of seconds: finite and not negative.
Seconds = NewType("Seconds", float)
#: How many attempts were made: an integer, at least 1.
Attempts = NewType("Attempts", int)
#: An HTTP error status, 400-599.
HttpStatus = NewType("HttpStatus", int)
#: A tool's name: a non-empty string.
Name = NewType("Name", str)
#: How long a scripted call took, in whole milliseconds: not negative.
LatencyMs = NewType("LatencyMs", int)


@dataclass(frozen=True, slots=True)
class _Call:
    name: Name
    id: str | None = None
    #: An object, or a string taken as the raw JSON text (so a script can
    #: feed the runtime broken JSON).
    arguments: str | dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Reply:
    text: str | None = None
    tool_calls: tuple[_Call, ...] = ()
    finish_reason: str | None = None
    usage: Usage | None = None
    reasoning: str | None = None
    latency_ms: LatencyMs | None = None


@dataclass(frozen=True, slots=True)
class _Expect:
    tools: str | list[str] | None = None
    tools_include: str | list[str] = ()  # type: ignore[assignment]  # an empty list, immutably
    tools_exclude: str | list[str] = ()  # type: ignore[assignment]
    system_contains: str | list[str] = ()  # type: ignore[assignment]
    system_excludes: str | list[str] = ()  # type: ignore[assignment]
    last_user_contains: str | list[str] = ()  # type: ignore[assignment]
    last_role: Role | None = None


@dataclass(frozen=True, slots=True)
class _Timeout:
    timeout_s: Seconds = Seconds(60.0)


@dataclass(frozen=True, slots=True)
class _Unreachable:
    detail: str = "scripted connection failure"


@dataclass(frozen=True, slots=True)
class _HTTPError:
    status: HttpStatus
    body: str = ""


@dataclass(frozen=True, slots=True)
class _RateLimited:
    retry_after: Seconds | None = None
    body: str = ""


@dataclass(frozen=True, slots=True)
class _BadResponse:
    problem: str = "scripted bad response"
    body: str = ""


@dataclass(frozen=True, slots=True)
class _RetriesExhausted:
    attempts: Attempts = Attempts(3)
    #: The error of the last attempt (a connection failure when left out).
    last: _Error | None = None


_Error = _Timeout | _Unreachable | _HTTPError | _RateLimited | _BadResponse | _RetriesExhausted

#: The ``code`` that names each scriptable error.
_CODES: Mapping[type, str] = {
    _Timeout: "model-timeout",
    _Unreachable: "model-unreachable",
    _HTTPError: "model-http-error",
    _RateLimited: "model-rate-limited",
    _BadResponse: "model-bad-response",
    _RetriesExhausted: "model-retries-exhausted",
}

#: Each scriptable error code and the parameters it accepts besides ``code``.
ERROR_PARAMS: Mapping[str, frozenset[str]] = {
    code: frozenset(f.name for f in fields(cls)) for cls, code in _CODES.items()
}


@dataclass(frozen=True, slots=True)
class _Step:
    label: str | None = None
    expect: _Expect | None = None
    reply: str | _Reply | None = None
    error: _Error | None = None

    def __post_init__(self) -> None:
        if (self.reply is None) == (self.error is None):
            raise ValueError("needs exactly one of 'reply' and 'error'")


@dataclass(frozen=True, slots=True)
class _Script:
    steps: tuple[_Step, ...]


def _checked(
    kinds: tuple[type, ...], make: Callable[[Any], Any], rule: Callable[[Any], bool], expected: str
) -> Callable[[Any, Any], Any]:
    """A structure hook taking a value of exactly one of ``kinds`` that keeps ``rule``."""

    def structure(value: Any, _: Any) -> Any:
        if type(value) not in kinds or not rule(value):
            raise ValueError(f"expected {expected}, got {value!r}")
        return make(value)

    return structure


def _script_converter() -> cattrs.Converter:
    conv = exact_converter()
    number = _checked((int, float), float, lambda v: math.isfinite(v) and v >= 0, "a non-negative number")
    conv.register_structure_hook(Seconds, number)
    conv.register_structure_hook(TokenCount, _checked((int,), int, lambda v: v >= 0, "a non-negative integer"))
    conv.register_structure_hook(Attempts, _checked((int,), int, lambda v: v >= 1, "an integer of at least 1"))
    conv.register_structure_hook(
        HttpStatus, _checked((int,), int, lambda v: 400 <= v <= 599, "an HTTP error status 400-599")
    )
    conv.register_structure_hook(Name, _checked((str,), str, bool, "a non-empty string"))
    conv.register_structure_hook(LatencyMs, _checked((int,), int, lambda v: v >= 0, "a non-negative integer"))
    tag_union(_Error | None, conv, tag_name="code", tag_generator=_CODES.__getitem__)
    return conv


_CONVERTER = _script_converter()


# --- loading ----------------------------------------------------------------


def parse_script(data: object, source: str = "script") -> tuple[ScriptStep, ...]:
    """The steps of a script in plain-data form.

    Raises ``ScriptFormatError`` listing every problem found, each with its
    path (``script.steps[0].reply.usage.prompt_tokens``).
    """
    try:
        script: _Script = _CONVERTER.structure(data, _Script)
    except Exception as exc:  # every structuring failure is a problem of the script
        raise ScriptFormatError(problems(exc, "script"), source) from exc
    return tuple(_step(number, step) for number, step in enumerate(script.steps, start=1))


def _step(number: int, step: _Step) -> ScriptStep:
    reply = _error(step.error) if step.error is not None else _reply(step.reply, number)
    return ScriptStep(reply, Expectation() if step.expect is None else _expectation(step.expect), step.label)


def _texts(value: str | list[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def _expectation(expect: _Expect) -> Expectation:
    return Expectation(
        tools=None if expect.tools is None else frozenset(_texts(expect.tools)),
        tools_include=frozenset(_texts(expect.tools_include)),
        tools_exclude=frozenset(_texts(expect.tools_exclude)),
        system_contains=_texts(expect.system_contains),
        system_excludes=_texts(expect.system_excludes),
        last_user_contains=_texts(expect.last_user_contains),
        last_role=expect.last_role,
    )


def _reply(reply: str | _Reply | None, step: int) -> ChatResponse:
    if reply is None or isinstance(reply, str):
        return ChatResponse(text=reply, finish_reason="stop")
    calls = tuple(
        ToolCall.parse(call.id or f"call-{step}-{j}", call.name, call.arguments)
        if isinstance(call.arguments, str)
        else ToolCall.of(call.id or f"call-{step}-{j}", call.name, call.arguments)
        for j, call in enumerate(reply.tool_calls, start=1)
    )
    return ChatResponse(
        text=reply.text,
        tool_calls=calls,
        finish_reason=reply.finish_reason or ("tool_calls" if calls else "stop"),
        usage=reply.usage,
        reasoning=reply.reasoning,
        latency_ms=reply.latency_ms,
    )


def _error(error: _Error) -> ModelError:
    if isinstance(error, _Timeout):
        return ModelTimeoutError(error.timeout_s, "scripted")
    if isinstance(error, _Unreachable):
        return ModelUnreachableError(error.detail)
    if isinstance(error, _HTTPError):
        return ModelHTTPError(error.status, error.body)
    if isinstance(error, _RateLimited):
        return ModelRateLimitedError(error.body, error.retry_after)
    if isinstance(error, _BadResponse):
        return ModelBadResponseError(error.problem, error.body)
    last = ModelUnreachableError("scripted connection failure") if error.last is None else _error(error.last)
    return ModelRetriesExhaustedError(error.attempts, last)
