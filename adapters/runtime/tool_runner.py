"""Tools through the gate: what is offered, what may run, what is recorded.

Theory of operation
-------------------
The runtime never calls an executor directly. For every call in a reply:

1. the call is the model port's ``ToolCall`` exactly as the model sent it
   (the kernel's one call type: the gate checks it and the executor receives
   it as it is; arguments that were not valid JSON are kept as their raw
   text, which the gate refuses as ``malformed-call``);
2. ``check_call`` decides, with the names actually offered with the request,
   so a forged call of a hidden tool is refused even if it exists;
3. the verdict's events are recorded (``verdict_events``): ``tool/call``
   always, then ``tool/refused`` or, in advisory mode, ``tool/warning``;
4. a refused call runs nothing: the model gets a structured error (code,
   reason, hint, phase) as the call's tool message; an allowed call routed to
   the ``runtime`` (a runtime-owned tool) goes to the plan runner; any other
   allowed call runs its executor, and ``tool/result`` records the output or
   the executor's typed failure.

A deployment cannot install an executor under a runtime-owned tool's name
(``ToolSpecError`` ``runtime-owned-name`` when the runner is built): those
calls are the runtime's, and the gate never routes them to an executor.

An executor that raises anything but planfold's own typed errors is a bug in
the deployment's tool: the model gets ``tool-crashed``, and the traceback
goes to the ``planfold.adapters.runtime.tool_runner`` logger at WARNING.
Every executor's run is a DEBUG record there (the call, how it ended, how
long it took).

``tool_message_text`` (the kernel's) is the text the model sees for a recorded answer, so
the conversation rebuilt from the log is what the model was told.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from ...kernel.decisions import tool_error_text, tool_message_text
from ...kernel.errors import PlanfoldError
from ...kernel.log import USAGE_VERSION, ModelUsage
from ...kernel.payload import JSON, MAX_SAFE_INTEGER
from ...kernel.phase import RuntimePhase
from ...kernel.tools.gate import GatePolicy, list_available_specs
from ...kernel.tools.spec import RUNTIME_OWNED_TOOLS, ToolCall, ToolRegistry, ToolSpec, ToolSpecError
from ...kernel.turn import Reply
from ..llm import model
from ..loggers import logger
from .resolve import Resolver
from .workspace import Executor, Workspace

_log = logger(__name__)

__all__ = [
    "AsyncExecutor",
    "ToolRunner",
    "error_output",
    "reply_of",
    "tool_message_text",
    "usage_of",
]


def reply_of(response: model.ChatResponse) -> Reply:
    """The model's reply as the kernel's turn rules read it, with what the
    call cost (``usage_of``): its calls are the response's own values."""
    calls = tuple(response.tool_calls)  # the tuple itself when it is one
    return Reply(response.text, calls, response.finish_reason, response.refusal, usage_of(response))


def _count(value: int | None) -> int | None:
    """A count the log can hold: a non-negative integer, else None (a server
    that reports a negative or non-integer count reported nothing usable)."""
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_SAFE_INTEGER
    return value if ok else None


def usage_of(response: model.ChatResponse) -> ModelUsage | None:
    """What the call behind ``response`` cost, as the assistant message
    records it: the client's measured latency and the server's prompt,
    completion and cached token counts; None when none is known."""
    tokens = response.usage or model.Usage()
    counts = (
        _count(response.latency_ms),
        _count(tokens.prompt_tokens),
        _count(tokens.completion_tokens),
        _count(tokens.cached_tokens),
    )
    if all(count is None for count in counts):
        return None
    return ModelUsage(USAGE_VERSION, *counts)


def error_output(code: str, message: str, **extra: JSON) -> str:
    """The output text of a failed call: ``{"error": {code, message, …}}``
    (the kernel's ``tool_error_text``, so every error the model reads has one
    form)."""
    return tool_error_text(code, message, **extra)


def _names_only() -> Resolver:
    """An empty in-memory workspace's resolver: every path lands where it is named."""
    return Workspace().resolver()


@dataclass
class ToolRunner:
    """The registry, the gate policy and the executors of one deployment, and
    the resolver that finds where their writes land (``resolve``; the
    default knows no links: a deployment whose executors act on a disk
    gives that disk's)."""

    registry: ToolRegistry
    policy: GatePolicy = field(default_factory=GatePolicy)
    executors: Mapping[str, Executor] = field(default_factory=dict)
    #: executors the asyncio runtime awaits (the synchronous one runs only ``executors``)
    async_executors: Mapping[str, AsyncExecutor] = field(default_factory=dict)
    resolver: Resolver = field(default_factory=_names_only)

    def __post_init__(self) -> None:
        owned = {name.casefold() for name in RUNTIME_OWNED_TOOLS}
        for name in (*self.executors, *self.async_executors):
            if name.casefold() in owned:
                raise ToolSpecError(
                    f"{name} is runtime-owned: the runtime handles it through the kernel, no executor may",
                    code="runtime-owned-name",
                    tool=name,
                )

    def offered(self, phase: RuntimePhase) -> tuple[ToolSpec, ...]:
        """The specs shown to the model in ``phase`` (the gate's catalog)."""
        return list_available_specs(self.registry, phase, self.policy)

    def execute(self, call: ToolCall) -> tuple[bool, str]:
        """Run an allowed call's executor: ``(ok, output)``. A typed failure
        of the tool is ``ok=False`` with a structured error; an unexpected
        exception is reported the same way and never escapes."""
        started = time.perf_counter()
        answer = self._run(call)
        _ran(call, answer, started)
        return answer

    def _run(self, call: ToolCall) -> tuple[bool, str]:
        executor = self.executors.get(call.name)
        if executor is None:
            return _missing(call)
        try:
            output = executor(_arguments(call))
        except Exception as exc:  # a broken tool must not break the turn
            return _failed(call, exc)
        return True, json.dumps(output, ensure_ascii=False, sort_keys=True)

    async def execute_async(self, call: ToolCall) -> tuple[bool, str]:
        """``execute`` for the asyncio runtime: an executor of
        ``async_executors`` is awaited; any other runs in a worker thread.
        The same answers."""
        executor = self.async_executors.get(call.name)
        if executor is None:
            return await asyncio.to_thread(self.execute, call)
        started = time.perf_counter()
        try:
            output = await executor(_arguments(call))
        except Exception as exc:  # a broken tool must not break the turn
            answer = _failed(call, exc)
        else:
            answer = True, json.dumps(output, ensure_ascii=False, sort_keys=True)
        _ran(call, answer, started)
        return answer


#: An executor the asyncio runtime awaits.
AsyncExecutor = Callable[[Mapping[str, object]], Awaitable[JSON]]


def _arguments(call: ToolCall) -> Mapping[str, object]:
    return call.arguments if call.arguments is not None else {}


def _ran(call: ToolCall, answer: tuple[bool, str], started: float) -> None:
    """The DEBUG record of an executor's run: the call (allowed by the gate:
    only those run), how it ended and how long it took."""
    if _log.isEnabledFor(logging.DEBUG):
        ok, output = answer
        ended = "ok" if ok else f"failed ({_code_of(output)})"
        _log.debug(
            "tool %r (call %r): allowed, ran %s in %.2f ms", call.name, call.id, ended,
            (time.perf_counter() - started) * 1000,
        )  # fmt: skip


def _code_of(output: str) -> str:
    """The error code of a failed call's structured output."""
    try:
        error = json.loads(output).get("error", {})
        return str(error.get("code", "an error"))
    except (ValueError, AttributeError):
        return "an error"


def _missing(call: ToolCall) -> tuple[bool, str]:
    return False, error_output("no-executor", f"no executor is installed for {call.name}")


def _failed(call: ToolCall, exc: Exception) -> tuple[bool, str]:
    """A tool's failure as the model reads it: its typed error, or the
    exception's type and text; a traceback of an unexpected one is logged."""
    if isinstance(exc, PlanfoldError):
        return False, error_output(exc.code, exc.message)
    name = type(exc).__name__
    _log.warning("the executor of %r (call %r) raised %s", call.name, call.id, name, exc_info=exc)
    return False, error_output("tool-crashed", f"{name}: {exc}")
