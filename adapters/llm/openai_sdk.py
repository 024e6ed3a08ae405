"""Bring your own client: a user's ``openai.OpenAI`` or ``openai.AsyncOpenAI``
as planfold's model port (``OpenAISDKClient``, ``AsyncOpenAISDKClient``).

Theory of operation
-------------------
Agent code often holds a configured client of the ``openai`` package
already (Azure, a proxy, custom headers, its own HTTP client). These
adapters send planfold's requests through that client, so everything the
user configured applies, and answer as planfold's own clients do: the same
request body (``openai_wire.build_request_body``), the same tolerant reading
of the reply, and of a failed status (``openai_wire.read_reply``: a 429 is
``model-rate-limited`` with its ``Retry-After``), the same retry policy and
budget (``openai_policy.Retrier``), the same typed ``ModelError``\\ s, and the
call's latency and token usage on the ``ChatResponse``.

Each attempt goes through ``client.with_options(max_retries=0,
timeout=timeout_s)``, a copy that shares the user's connection pool: the
SDK's own retries are off for planfold's calls, because planfold's policy
retries them out of the one budget a runtime step shares (two layers of
retries would multiply). The user's client itself is never changed. The
reply is read as raw bytes (``with_streaming_response``), never through the
SDK's models, so a server dialect the SDK's types do not expect is read as
planfold's own clients read it, and a body over ``max_response_bytes`` is cut
off as it streams.

The deadline of one attempt is ``timeout_s`` seconds:

- ``AsyncOpenAISDKClient`` runs the attempt inside ``asyncio.timeout``: the
  whole attempt (connecting, sending, the headers and the whole body) ends at
  the deadline, whatever the server does, as with planfold's own clients.
- ``OpenAISDKClient`` has no event loop to cancel the attempt with, so the
  deadline is the SDK's own timeout (its HTTP library's): at most
  ``timeout_s`` for connecting, for sending, and for each read, plus a check
  between the pieces of the body that ends the attempt once the deadline has
  passed. A server that answers nothing, or trickles its body, is cut off
  near the deadline; one that dribbles its status line and headers a byte at
  a time can stretch the attempt, each byte within ``timeout_s``. Where that
  matters, use the asyncio adapter or planfold's ``OpenAIClient``.

What the SDK raises becomes a ``ModelError``: its timeout ``model-timeout``,
its connection error ``model-unreachable``, a status error the typed error of
that status (``model-rate-limited``, ``model-http-error``), a reply that does
not validate ``model-bad-response``; an error of its HTTP library (whichever
the SDK runs on) while the body streams is a timeout, a dropped connection
(``model-unreachable``) or a body that cannot be decoded
(``model-bad-response``).

``sleep``, ``random``, the clocks and ``on_retry`` are injectable, as on
planfold's own clients. The adapters never close the user's client.
"""

from __future__ import annotations

import asyncio
import math
import random as _random
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any, TypedDict, Unpack

try:
    import openai
except ImportError as exc:
    raise ImportError(
        "planfold.adapters.llm.openai_sdk wraps a client of the openai package, which is not installed: "
        "pip install 'planfold[openai]'"
    ) from exc

from ..options import refuse_unknown
from ..redact import redact_url
from .model import (
    ChatRequest,
    ChatResponse,
    ModelBadRequestError,
    ModelBadResponseError,
    ModelError,
    ModelTimeoutError,
    ModelUnreachableError,
    RetryBudget,
    elapsed_ms,
    excerpt,
)
from .openai_policy import Retrier, RetryPolicy, log_attempt
from .openai_wire import build_request_body, read_reply

__all__ = ["MAX_RESPONSE_BYTES", "AsyncOpenAISDKClient", "OpenAISDKClient", "SDKOptions"]

#: The default cap on one response body (as planfold's own clients).
MAX_RESPONSE_BYTES = 16 * 1024 * 1024


class SDKOptions(TypedDict, total=False):
    """The keyword options both adapters take: the deadline of one attempt
    (``timeout_s``, 60 by default), the ``retry`` policy, a shared
    ``retry_budget``, the content sent for a reply of tool calls only
    (``tool_call_content``), the cap on one response body
    (``max_response_bytes``), the ``random`` and ``wall_clock`` sources and
    ``on_retry(retry, error, delay)``."""

    timeout_s: float
    retry: RetryPolicy | None
    retry_budget: RetryBudget | None
    tool_call_content: str | None
    max_response_bytes: int
    random: Callable[[], float]
    wall_clock: Callable[[], float]
    on_retry: Callable[[int, ModelError, float], None] | None


class _Settings:
    """What both adapters take and check alike."""

    def __init__(self, client: openai.OpenAI | openai.AsyncOpenAI, model: str, where: str, options: SDKOptions) -> None:
        refuse_unknown(options, SDKOptions.__annotations__, where)
        timeout_s = options.get("timeout_s", 60.0)
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or not 0 < timeout_s < math.inf:
            raise ModelBadRequestError(f"timeout_s must be a positive number of seconds, got {timeout_s!r}")
        if not isinstance(model, str) or not model:
            raise ModelBadRequestError(f"{where}: the model must be a non-empty name, got {model!r}")
        retry = options.get("retry")
        self.model = model
        self.timeout_s = float(timeout_s)
        self.retry = retry if retry is not None else RetryPolicy()
        budget = options.get("retry_budget")
        self.retry_budget = budget if budget is not None else RetryBudget(self.retry.max_retries)
        self.tool_call_content = options.get("tool_call_content")
        self.max_response_bytes = options.get("max_response_bytes", MAX_RESPONSE_BYTES)
        self.wall_clock = options.get("wall_clock", time.time)
        #: The chat-completions URL as logs and errors show it: without a password.
        self.where = redact_url(str(client.base_url).rstrip("/") + "/chat/completions")
        random = options.get("random", _random.random)
        self.retrier = Retrier(self.retry, self.retry_budget, random, self.where, options.get("on_retry"))

    def body(self, request: ChatRequest) -> dict[str, Any]:
        return build_request_body(self.model, request, tool_call_content=self.tool_call_content)

    def add(self, size: int, chunks: list[bytes], chunk: bytes) -> int:
        """Keep ``chunk`` of the body; raises ``ModelBadResponseError`` past the cap."""
        size += len(chunk)
        if size > self.max_response_bytes:
            raise ModelBadResponseError(
                f"response body exceeds {self.max_response_bytes} bytes", excerpt(b"".join(chunks))
            )
        chunks.append(chunk)
        return size

    def read(self, http: Any, body: bytes) -> ChatResponse:
        """The chat completion of the reply ``http`` whose body is ``body``,
        or the typed error of its status."""
        headers = {str(name).lower(): str(value) for name, value in http.headers.items()}
        return read_reply(int(http.status_code), headers, body, self.wall_clock())

    def failure(self, err: openai.OpenAIError) -> ModelError:
        """The ``ModelError`` of what the SDK raised."""
        if isinstance(err, openai.APIStatusError):
            response = err.response
            try:
                body = bytes(response.content)
            except Exception:  # the SDK closed the body unread: keep what it parsed
                body = str(err.body if err.body is not None else err.message).encode("utf-8")
            try:
                self.read(response, body)
            except ModelError as typed:
                return typed
            return ModelBadResponseError(f"the openai SDK refused a {response.status_code} reply: {err.message}")
        if isinstance(err, openai.APITimeoutError):
            return ModelTimeoutError(self.timeout_s, f"POST {self.where}")
        if isinstance(err, openai.APIConnectionError):
            cause = err.__cause__
            detail = f"{type(cause).__name__}: {cause}" if cause is not None else err.message
            return ModelUnreachableError(f"POST {self.where}: {detail}")
        return ModelBadResponseError(f"the openai SDK raised {type(err).__name__}: {err}")

    def streaming_failure(self, err: Exception, http: Any) -> ModelError | None:
        """The ``ModelError`` of an error of the SDK's HTTP library raised
        while the body streamed (None: not one of its errors)."""
        library = sys.modules.get(type(http).__module__.partition(".")[0])

        def raised(name: str) -> bool:
            kind = getattr(library, name, None)
            return isinstance(kind, type) and isinstance(err, kind)

        if raised("TimeoutException"):
            return ModelTimeoutError(self.timeout_s, f"POST {self.where}: the body did not arrive in time")
        if raised("TransportError"):
            got = getattr(http, "num_bytes_downloaded", "some")
            announced = http.headers.get("content-length")
            of = f" of {announced}" if announced is not None else ""
            return ModelUnreachableError(
                f"POST {self.where}: the connection closed after {got}{of} body bytes ({err})"
            )
        if raised("DecodingError"):
            return ModelBadResponseError(f"the body could not be decoded: {err}")
        if raised("HTTPError") or raised("StreamError"):
            return ModelBadResponseError(f"the body could not be read: {type(err).__name__}: {err}")
        return None


class _Properties:
    _s: _Settings

    @property
    def model(self) -> str:
        """The model name sent with each request."""
        return self._s.model

    @property
    def timeout_s(self) -> float:
        """The deadline of one attempt, in seconds."""
        return self._s.timeout_s

    @property
    def retry(self) -> RetryPolicy:
        """The retry policy."""
        return self._s.retry

    @property
    def retry_budget(self) -> RetryBudget:
        """The retries of one unit of work (one call, or a runtime's step)."""
        return self._s.retry_budget


class OpenAISDKClient(_Properties):
    """A ``ModelClient`` that sends planfold's requests through the user's
    ``openai.OpenAI`` ``client`` (see the module docstring for the deadline).

    Raises ``ModelBadRequestError`` for a client that is not an
    ``openai.OpenAI``, an empty model name, an unknown option or a
    non-positive ``timeout_s``.
    """

    def __init__(
        self,
        client: openai.OpenAI,
        model: str,
        *,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        **options: Unpack[SDKOptions],
    ) -> None:
        if not isinstance(client, openai.OpenAI):
            raise ModelBadRequestError(
                f"OpenAISDKClient wraps an openai.OpenAI client, got {type(client).__name__}"
                + (" (use AsyncOpenAISDKClient)" if isinstance(client, openai.AsyncOpenAI) else "")
            )
        self._s = _Settings(client, model, "OpenAISDKClient", options)
        self._client = client
        self._sleep = sleep
        self._monotonic = monotonic

    @property
    def client(self) -> openai.OpenAI:
        """The user's client (never changed, never closed by the adapter)."""
        return self._client

    def complete(self, request: ChatRequest) -> ChatResponse:
        """Send ``request`` through the user's client and return the reply,
        with its latency (every attempt and wait) on ``latency_ms``. Raises
        as ``OpenAIClient.complete`` does."""
        body = self._s.body(request)
        started = self._monotonic()
        with self.retry_budget.step():
            while True:
                tried = self._monotonic()
                try:
                    response = self._attempt(body)
                    log_attempt(self._s.where, self.retry_budget.used + 1, self._monotonic() - tried, response)
                    return replace(response, latency_ms=elapsed_ms(started, self._monotonic()))
                except ModelError as err:
                    log_attempt(self._s.where, self.retry_budget.used + 1, self._monotonic() - tried, err)
                    self._sleep(self._s.retrier.after(err))

    def _attempt(self, body: Mapping[str, Any]) -> ChatResponse:
        s = self._s
        deadline = self._monotonic() + s.timeout_s
        api = self._client.with_options(max_retries=0, timeout=s.timeout_s)
        try:
            with api.chat.completions.with_streaming_response.create(**body) as raw:
                http = raw.http_response
                chunks: list[bytes] = []
                size = 0
                try:
                    for chunk in raw.iter_bytes():
                        size = s.add(size, chunks, chunk)
                        if self._monotonic() >= deadline:
                            raise ModelTimeoutError(s.timeout_s, f"POST {s.where}")
                except ModelError:
                    raise
                except Exception as err:
                    failure = s.streaming_failure(err, http)
                    if failure is None:
                        raise
                    raise failure from err
                return s.read(http, b"".join(chunks))
        except openai.OpenAIError as err:
            raise s.failure(err) from err


class AsyncOpenAISDKClient(_Properties):
    """An ``AsyncModelClient`` that sends planfold's requests through the
    user's ``openai.AsyncOpenAI`` ``client``, each attempt inside
    ``asyncio.timeout(timeout_s)``; the same options and errors as
    ``OpenAISDKClient``, ``sleep`` an async function."""

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        model: str,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        **options: Unpack[SDKOptions],
    ) -> None:
        if not isinstance(client, openai.AsyncOpenAI):
            raise ModelBadRequestError(
                f"AsyncOpenAISDKClient wraps an openai.AsyncOpenAI client, got {type(client).__name__}"
                + (" (use OpenAISDKClient)" if isinstance(client, openai.OpenAI) else "")
            )
        self._s = _Settings(client, model, "AsyncOpenAISDKClient", options)
        self._client = client
        self._sleep = sleep
        self._monotonic = monotonic

    @property
    def client(self) -> openai.AsyncOpenAI:
        """The user's client (never changed, never closed by the adapter)."""
        return self._client

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Send ``request`` through the user's client and return the reply,
        with its latency on ``latency_ms``; raises as ``OpenAIClient.complete``
        does."""
        body = self._s.body(request)
        started = self._monotonic()
        with self.retry_budget.step():
            while True:
                tried = self._monotonic()
                try:
                    response = await self._attempt(body)
                    log_attempt(self._s.where, self.retry_budget.used + 1, self._monotonic() - tried, response)
                    return replace(response, latency_ms=elapsed_ms(started, self._monotonic()))
                except ModelError as err:
                    log_attempt(self._s.where, self.retry_budget.used + 1, self._monotonic() - tried, err)
                    delay = self._s.retrier.after(err)
                await self._sleep(delay)

    async def _attempt(self, body: Mapping[str, Any]) -> ChatResponse:
        s = self._s
        api = self._client.with_options(max_retries=0, timeout=s.timeout_s)
        try:
            async with asyncio.timeout(s.timeout_s):
                async with api.chat.completions.with_streaming_response.create(**body) as raw:
                    http = raw.http_response
                    chunks: list[bytes] = []
                    size = 0
                    try:
                        async for chunk in raw.iter_bytes():
                            size = s.add(size, chunks, chunk)
                    except ModelError:
                        raise
                    except Exception as err:
                        failure = s.streaming_failure(err, http)
                        if failure is None:
                            raise
                        raise failure from err
                    return s.read(http, b"".join(chunks))
        except TimeoutError as err:
            raise ModelTimeoutError(s.timeout_s, f"POST {s.where}") from err
        except openai.OpenAIError as err:
            raise s.failure(err) from err
