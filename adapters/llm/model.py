"""The model port: what the runtime asks a language model, and what it gets back.

Theory of operation
-------------------
The runtime talks to a model through one method, ``ModelClient.complete``,
which takes a ``ChatRequest`` (the conversation so far and the tools on offer)
and returns a ``ChatResponse`` (assistant text, tool calls, why generation
stopped, token usage when the server reports it, and how long the call took
as the client measured it). Everything here is a frozen value; a client may
keep connection or script state, the values never change.

Messages come in four roles, one class each, so that an impossible message (a
system message with tool calls, a tool result without the id of the call it
answers) cannot be built. A tool call (``ToolCall``, the kernel's one call
type, re-exported here: the same value goes on to the gate, the log and the
executor) keeps the model's arguments twice: the raw JSON text exactly as the
model produced it (this is what goes back to the server on the next request)
and the decoded object. A model that writes broken JSON is an ordinary event
in a turn, not a crash: the call then carries ``arguments=None`` and
``arguments_error`` says what was wrong, so the runtime can tell the model and
carry on. A call built with halves that disagree raises the kernel's
``ToolCallError`` (before the call type moved into the kernel it raised
``ModelBadRequestError``; both are ``PlanfoldError``).

Arguments the log could not hold are refused at the port as well: a
number that is not finite (``NaN``, ``Infinity``), nesting deeper than
``MAX_ARGUMENT_DEPTH``, or a string with a lone surrogate (text that is not
Unicode) leave the call with ``arguments_error``, so the runtime records the
raw text and refuses the call instead of failing on it.

A reply says why generation stopped (``finish_reason``: ``stop``,
``tool_calls``, ``length``, ``content_filter`` …) and, when the model declined
(the ``refusal`` field of OpenAI's API, with ``content`` null), the refusal
text: the runtime never takes a cut-off, filtered or refused reply for the
model's final word.

An asyncio runtime asks an ``AsyncModelClient`` the same question with
``await complete(request)``; the values and errors are the same.

Failures are typed. Every error a client raises is a ``ModelError`` (a
``AdapterError``) with a stable kebab-case ``code``: ``model-timeout``,
``model-unreachable``, ``model-http-error``, ``model-rate-limited``,
``model-bad-response``, ``model-retries-exhausted`` and, for a request the
caller built wrongly, ``model-bad-request``. ``retryable`` says whether the
client that raised it thinks another attempt could help (None: it has no
opinion, the caller decides by the code).

Retries of one unit of work (a runtime step) come out of one ``RetryBudget``:
a client with retries of its own exposes its budget as ``retry_budget``, and a
runtime that retries steps uses that same budget, so the two never multiply.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import ClassVar, Literal, NewType, Protocol, TypeAlias, runtime_checkable

from ...kernel.tools.spec import MAX_ARGUMENT_DEPTH, ToolCall, ToolCallError, decode_arguments, json_kind
from ..errors import AdapterError

__all__ = [
    "JSON",
    "MAX_ARGUMENT_DEPTH",
    "AssistantMessage",
    "AsyncModelClient",
    "ChatRequest",
    "ChatResponse",
    "Message",
    "ModelBadRequestError",
    "ModelBadResponseError",
    "ModelClient",
    "ModelError",
    "ModelHTTPError",
    "ModelRateLimitedError",
    "ModelRetriesExhaustedError",
    "ModelTimeoutError",
    "ModelUnreachableError",
    "RetryBudget",
    "Role",
    "SystemMessage",
    "TokenCount",
    "ToolCall",
    "ToolCallError",
    "ToolDefinition",
    "ToolMessage",
    "Usage",
    "UserMessage",
    "decode_arguments",
    "elapsed_ms",
    "excerpt",
    "json_kind",
]

JSON: TypeAlias = "bool | int | float | str | Sequence[JSON] | Mapping[str, JSON] | None"
Role = Literal["system", "user", "assistant", "tool"]

#: How much of a response body an error keeps for a human to read.
EXCERPT_CHARS = 500


def excerpt(body: bytes | str, limit: int = EXCERPT_CHARS) -> str:
    """The first ``limit`` characters of ``body`` as text, marked when cut."""
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    return text if len(text) <= limit else text[:limit] + "…"



class ModelError(AdapterError):
    """Root of every failure a model client reports. ``retryable`` is the
    raising client's word on whether another attempt could help (None: no
    word; see the module docstring)."""

    code = "model-error"
    retryable: bool | None = None


class ModelBadRequestError(ModelError):
    """The caller built a request or message the port cannot express."""

    code = "model-bad-request"


class ModelTimeoutError(ModelError):
    """The server did not answer within ``timeout_s`` seconds."""

    code = "model-timeout"

    def __init__(self, timeout_s: float, detail: str = "") -> None:
        tail = f": {detail}" if detail else ""
        super().__init__(f"the model server did not answer within {timeout_s:g}s{tail}")
        self.timeout_s = timeout_s


class ModelUnreachableError(ModelError):
    """No HTTP exchange happened: refused, reset or dropped connection."""

    code = "model-unreachable"

    def __init__(self, detail: str) -> None:
        super().__init__(f"could not reach the model server: {detail}")
        self.detail = detail


class ModelHTTPError(ModelError):
    """The server answered with a non-success HTTP status.

    ``body_excerpt`` is the start of its body; ``retry_after`` the wait in
    seconds it asked for (``Retry-After``), when it asked.
    """

    code = "model-http-error"

    def __init__(
        self,
        status: int,
        body_excerpt: str,
        *,
        retry_after: float | None = None,
        message: str | None = None,
    ) -> None:
        super().__init__(message or f"the model server answered HTTP {status}: {body_excerpt}")
        self.status = status
        self.body_excerpt = body_excerpt
        self.retry_after = retry_after


class ModelRateLimitedError(ModelHTTPError):
    """HTTP 429. ``retry_after`` is the server's requested wait in seconds, if any."""

    code = "model-rate-limited"

    def __init__(self, body_excerpt: str, retry_after: float | None) -> None:
        wait = "" if retry_after is None else f" (retry after {retry_after:g}s)"
        super().__init__(
            429,
            body_excerpt,
            retry_after=retry_after,
            message=f"the model server is rate limiting requests{wait}: {body_excerpt}",
        )


class ModelBadResponseError(ModelError):
    """A success status whose body is not a chat completion: the server's fault.

    ``problem`` says what was wrong (with the path into the body, e.g.
    ``choices[0].message.content``); ``body_excerpt`` shows the start of it.
    """

    code = "model-bad-response"

    def __init__(self, problem: str, body_excerpt: str = "") -> None:
        shown = f" (body: {body_excerpt})" if body_excerpt else ""
        super().__init__(f"the model server sent a bad response: {problem}{shown}")
        self.problem = problem
        self.body_excerpt = body_excerpt


class ModelRetriesExhaustedError(ModelError):
    """Every allowed attempt of a call failed with a retryable error;
    ``attempts`` counts the call's own (its first and its retries: fewer
    when earlier calls of the same unit of work spent part of its retry
    budget); ``last`` is the final one."""

    code = "model-retries-exhausted"

    def __init__(self, attempts: int, last: ModelError) -> None:
        super().__init__(
            f"gave up after {attempts} attempt(s); last failure [{last.code}]: {last.message}"
        )
        self.attempts = attempts
        self.last = last



@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A tool offered to the model: ``parameters`` is a JSON Schema object.

    Raises ``ModelBadRequestError`` for an empty name or a non-object schema.
    """

    name: str
    description: str
    parameters: Mapping[str, JSON]

    def __post_init__(self) -> None:
        if not self.name:
            raise ModelBadRequestError("a tool definition needs a non-empty name")
        if not isinstance(self.parameters, Mapping):
            raise ModelBadRequestError(f"tool {self.name!r}: parameters must be a JSON Schema object")


class RetryBudget:
    """How many retries one unit of work may still make, shared by every
    layer that retries it (see the module docstring).

    ``step()`` opens a unit: the outermost ``with budget.step()`` starts it
    afresh, nested ones join it. ``take()`` spends one retry (False when none
    is left). Raises ``ModelBadRequestError`` for a negative count.
    """

    def __init__(self, retries: int) -> None:
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ModelBadRequestError(f"a retry budget must be a non-negative integer, got {retries!r}")
        self.retries = retries
        self.used = 0
        self._depth = 0

    @contextmanager
    def step(self) -> Iterator[RetryBudget]:
        self.open()
        try:
            yield self
        finally:
            self.close()

    def open(self) -> None:
        """Open a unit as ``step()`` does, until the matching ``close``."""
        if self._depth == 0:
            self.used = 0
        self._depth += 1

    def close(self) -> None:
        """Close the innermost open unit (nothing when none is open)."""
        self._depth = max(0, self._depth - 1)

    @property
    def left(self) -> int:
        return self.retries - self.used

    def take(self) -> bool:
        """Spend one retry; False (nothing spent) when the budget is empty."""
        if self.used >= self.retries:
            return False
        self.used += 1
        return True

    @contextmanager
    def spending(self) -> Iterator[RetryBudget]:
        """Make this the budget every model client spends from while the
        block runs in this thread or asyncio task (``spent_from``): a runtime
        binds its session's step budget around each model call, so sessions
        that share one client never share a budget."""
        token = _SPENDING.set(self)
        try:
            yield self
        finally:
            _SPENDING.reset(token)


#: The budget bound by ``RetryBudget.spending`` in this context (a thread or
#: an asyncio task has its own), or None.
_SPENDING: ContextVar[RetryBudget | None] = ContextVar("planfold_retry_budget", default=None)


def spent_from(own: RetryBudget) -> RetryBudget:
    """The budget a client's call spends from: the one a runtime bound for
    this context (``RetryBudget.spending``), else the client's ``own``."""
    bound = _SPENDING.get()
    return own if bound is None else bound


@dataclass(frozen=True, slots=True)
class SystemMessage:
    """Instructions from the deployment."""

    content: str
    role: ClassVar[Role] = "system"


@dataclass(frozen=True, slots=True)
class UserMessage:
    """What the user (or a plugin or goal speaking for them) said."""

    content: str
    role: ClassVar[Role] = "user"


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    """A previous model reply: text, tool calls, or both (never neither).

    Raises ``ModelBadRequestError`` when it has neither text nor tool calls.
    """

    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    role: ClassVar[Role] = "assistant"

    def __post_init__(self) -> None:
        if self.content is None and not self.tool_calls:
            raise ModelBadRequestError("an assistant message needs text or tool calls")


@dataclass(frozen=True, slots=True)
class ToolMessage:
    """The result of one tool call, answering ``tool_call_id``.

    Raises ``ModelBadRequestError`` for an empty ``tool_call_id``.
    """

    tool_call_id: str
    content: str
    name: str | None = None
    role: ClassVar[Role] = "tool"

    def __post_init__(self) -> None:
        if not self.tool_call_id:
            raise ModelBadRequestError("a tool message needs the id of the call it answers")


Message: TypeAlias = SystemMessage | UserMessage | AssistantMessage | ToolMessage



@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One model request: the conversation and the tools on offer.

    Raises ``ModelBadRequestError`` for no messages or two tools with one name.
    """

    messages: Sequence[Message]
    tools: tuple[ToolDefinition, ...] = ()
    temperature: float | None = None
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        if not self.messages:
            raise ModelBadRequestError("a chat request needs at least one message")
        names = [tool.name for tool in self.tools]
        if len(set(names)) != len(names):
            dupes = sorted({n for n in names if names.count(n) > 1})
            raise ModelBadRequestError(f"tool name(s) offered twice: {dupes}")

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The names of the offered tools, in offer order."""
        return tuple(tool.name for tool in self.tools)

    @property
    def system_text(self) -> str:
        """Every system message's text, joined by blank lines."""
        return "\n\n".join(m.content for m in self.messages if isinstance(m, SystemMessage))

    @property
    def last_user_text(self) -> str | None:
        """The text of the latest user message, or None when there is none."""
        for message in reversed(self.messages):
            if isinstance(message, UserMessage):
                return message.content
        return None


#: A number of tokens, as a server counts them.
TokenCount = NewType("TokenCount", int)


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts as the server reported them; a count it left out is None.
    ``cached_tokens`` is the part of ``prompt_tokens`` the server served from
    its prompt cache."""

    prompt_tokens: TokenCount | None = None
    completion_tokens: TokenCount | None = None
    total_tokens: TokenCount | None = None
    cached_tokens: TokenCount | None = None


@dataclass(frozen=True, slots=True)
class ChatResponse:
    """The model's reply.

    ``finish_reason`` is the server's word (``stop``, ``tool_calls``,
    ``length``, ``content_filter`` …) or None when it gave none; ``refusal``
    is the model's refusal text when it declined (OpenAI's ``refusal``
    field); ``reasoning`` is separate reasoning text some servers return
    (``reasoning_content``). ``latency_ms`` is how long the whole call took
    (every attempt and the waits between them), as the client measured it
    on its monotonic clock; None from a client that does not measure.
    """

    text: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    usage: Usage | None = None
    model: str | None = None
    reasoning: str | None = None
    refusal: str | None = None
    latency_ms: int | None = None

    def as_message(self) -> AssistantMessage:
        """The reply as a message to append to the conversation.

        A refusal with no text is its refusal text; a reply with neither text
        nor tool calls becomes an empty text message.
        """
        text = self.text if self.text is not None else self.refusal
        if text is None and not self.tool_calls:
            return AssistantMessage("")
        return AssistantMessage(text, self.tool_calls)


def elapsed_ms(started: float, ended: float) -> int:
    """Whole milliseconds from ``started`` to ``ended`` (seconds on a
    monotonic clock), never negative: how a client states ``latency_ms``."""
    return max(0, round((ended - started) * 1000))


@runtime_checkable
class ModelClient(Protocol):
    """Anything that can answer a chat request."""

    def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer ``request``; raises a ``ModelError`` subclass on failure."""
        ...


@runtime_checkable
class AsyncModelClient(Protocol):
    """Anything that can answer a chat request on an asyncio event loop."""

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer ``request``; raises a ``ModelError`` subclass on failure."""
        ...
