"""Model clients for any server that speaks OpenAI's chat-completions API:
``OpenAIClient`` (synchronous) and ``AsyncOpenAIClient`` (asyncio).

Theory of operation
-------------------
``complete`` sends one ``POST {base_url}/chat/completions`` per attempt over
httpx and reads the reply through ``adapters.llm.openai_wire``. ``base_url``
is the API root the server documents, e.g. ``http://127.0.0.1:8000/v1`` for
vLLM, ``http://127.0.0.1:8080/v1`` for llama.cpp,
``http://127.0.0.1:11434/v1`` for Ollama, ``https://api.openai.com/v1`` for
OpenAI. Left out (None), it is ``OPENAI_BASE_URL`` from the environment, else
OpenAI's; an ``api_key`` left out is ``OPENAI_API_KEY`` (``""``: send none).
The key travels only in the ``Authorization`` header: no message or log line
holds it, and a URL is shown without its password.

The two clients share everything but the waiting: the wire format
(``openai_wire``: request bodies, tolerant reply parsing, the error of a
status, ``Retry-After``), the policy (``openai_policy``: the outcome table,
backoff, the retry budget, the retry log) and the transport
(``openai_transport``: one pooled httpx client per model client, the
environment's proxies, one deadline per attempt). An attempt has
``timeout_s`` seconds for the name lookup, connecting, sending, the headers
and the whole body; nothing a server does stretches it.

A client holds connections: close it (``close`` / ``aclose``, or use it as
a context manager) when done. ``sleep``, ``random``, the clocks and the name
lookup (``resolve``, ``socket.getaddrinfo``'s signature) are injectable so
that tests neither wait nor depend on chance or on a name server.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import random as _random
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from types import TracebackType
from typing import TypedDict, TypeVar, Unpack

import httpx

from ..delegation import Delegated
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
    spent_from,
)
from .openai_policy import OUTCOMES, Retrier, RetryPolicy, is_retryable, log_attempt, outcome_of
from .openai_transport import (
    AsyncResolvingBackend,
    DeadlineBackend,
    Resolver,
    attempt_deadline,
    direct_routes,
    failure_of,
    refuse_unusable_proxy,
    system_resolve,
    use_backend,
)
from .openai_wire import build_request_body, parse_retry_after, read_reply

__all__ = [
    "DEFAULT_BASE_URL",
    "MAX_RESPONSE_BYTES",
    "OUTCOMES",
    "AsyncOpenAIClient",
    "ClientOptions",
    "OpenAIClient",
    "RetryPolicy",
    "is_retryable",
    "outcome_of",
    "parse_retry_after",
]

#: The API root when neither ``base_url`` nor ``OPENAI_BASE_URL`` names one.
DEFAULT_BASE_URL = "https://api.openai.com/v1"

#: The default cap on one response body.
MAX_RESPONSE_BYTES = 16 * 1024 * 1024

class _HttpOptions(TypedDict):
    headers: dict[str, str]
    timeout: httpx.Timeout
    trust_env: bool
    follow_redirects: bool
    mounts: dict[str, None]


class ClientOptions(TypedDict, total=False):
    """The keyword options both clients take (see ``OpenAIClient``): the
    ``api_key``, the deadline of one attempt (``timeout_s``, 60 by default),
    the ``retry`` policy, extra ``headers``, the content sent for a reply of
    tool calls only (``tool_call_content``), the cap on one response body
    (``max_response_bytes``), the ``random`` and ``wall_clock`` sources,
    ``on_retry`` and a shared ``retry_budget``."""

    api_key: str | None
    timeout_s: float
    retry: RetryPolicy | None
    headers: Mapping[str, str] | None
    tool_call_content: str | None
    max_response_bytes: int
    random: Callable[[], float]
    wall_clock: Callable[[], float]
    on_retry: Callable[[int, ModelError, float], None] | None
    retry_budget: RetryBudget | None


#: What an attempt ended with: the reply, or the error it raised.
Outcome = TypeVar("Outcome", bound=ChatResponse | ModelError)


class _Settings:
    """What both clients take and check alike (see ``OpenAIClient``)."""

    def __init__(self, base_url: str | None, model: str, where: str, options: ClientOptions) -> None:
        refuse_unknown(options, ClientOptions.__annotations__, where)
        api_key = options.get("api_key")
        timeout_s = options.get("timeout_s", 60.0)
        retry = options.get("retry")
        retry_budget = options.get("retry_budget")
        headers = options.get("headers")
        if base_url is None:
            base_url = os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        if api_key is None:
            api_key = os.environ.get("OPENAI_API_KEY")
        try:
            parts = urllib.parse.urlsplit(base_url)
            valid = parts.scheme in ("http", "https") and bool(parts.hostname)
            parts.port  # noqa: B018 (a port out of range raises here)
        except ValueError:
            valid = False
        if not valid:
            raise ModelBadRequestError(f"base_url must be an http(s) URL with a host: {redact_url(base_url)!r}")
        if not 0 < timeout_s < math.inf:
            raise ModelBadRequestError(f"timeout_s must be a positive number of seconds, got {timeout_s}")
        self.base_url = base_url
        self.model = model
        self.timeout_s = timeout_s
        self.retry = retry if retry is not None else RetryPolicy()
        #: The retries of one unit of work (one call, or a runtime's step).
        self.retry_budget = retry_budget if retry_budget is not None else RetryBudget(self.retry.max_retries)
        self.tool_call_content = options.get("tool_call_content")
        self.max_response_bytes = options.get("max_response_bytes", MAX_RESPONSE_BYTES)
        path = parts.path.rstrip("/") + "/chat/completions"
        #: The full chat-completions URL the client posts to.
        self.url = urllib.parse.urlunsplit(parts._replace(path=path, fragment=""))
        #: The URL as logs and errors show it: without its password.
        self.where = redact_url(self.url)
        self.headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": "planfold",
            **(headers or {}),
        }
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"
        self.wall_clock = options.get("wall_clock", time.time)
        random = options.get("random", _random.random)
        self.retrier = Retrier(self.retry, self.retry_budget, random, self.where, options.get("on_retry"))

    def attempted(self, outcome: Outcome, seconds: float) -> Outcome:
        """``outcome`` of an attempt that took ``seconds``, logged (at DEBUG,
        ``openai_policy.log_attempt``; the attempt's number is the budget's
        retries so far plus one)."""
        log_attempt(self.where, self.retry_budget.used + 1, seconds, outcome)
        return outcome

    def payload(self, request: ChatRequest) -> bytes:
        body = build_request_body(self.model, request, tool_call_content=self.tool_call_content)
        return json.dumps(body, ensure_ascii=False).encode("utf-8")

    def client_options(self) -> _HttpOptions:
        """The httpx client's options: the headers, a per-operation timeout
        (the attempt's deadline is kept besides), the environment's proxies
        plus the ``NO_PROXY`` ranges httpx leaves out, no redirects."""
        return {
            "headers": dict(self.headers),
            "timeout": httpx.Timeout(self.timeout_s),
            "trust_env": True,
            "follow_redirects": False,
            "mounts": direct_routes(httpx.URL(self.url)),
        }

    def add(self, size: int, chunks: list[bytes], chunk: bytes) -> int:
        """Keep ``chunk`` of the body; raises ``ModelBadResponseError`` past the cap."""
        size += len(chunk)
        if size > self.max_response_bytes:
            raise ModelBadResponseError(
                f"response body exceeds {self.max_response_bytes} bytes", excerpt(b"".join(chunks))
            )
        chunks.append(chunk)
        return size

    def cut_off(self, response: httpx.Response, err: httpx.RemoteProtocolError) -> ModelUnreachableError:
        """The error for a body the server stopped sending before its end."""
        got = response.num_bytes_downloaded
        announced = response.headers.get("content-length")
        of = f" of {announced}" if announced is not None else ""
        return ModelUnreachableError(f"POST {self.where}: the connection closed after {got}{of} body bytes ({err})")

    def read(self, response: httpx.Response, body: bytes) -> ChatResponse:
        headers = {name.lower(): value for name, value in response.headers.items()}
        return read_reply(response.status_code, headers, body, self.wall_clock())


class _Properties:
    _s: _Settings

    base_url = Delegated[str]("_s", doc="The API root.")
    model = Delegated[str]("_s", doc="The model name sent with each request.")
    timeout_s = Delegated[float]("_s", doc="The deadline of one attempt, in seconds.")
    retry = Delegated[RetryPolicy]("_s", doc="The retry policy.")
    retry_budget = Delegated[RetryBudget]("_s", doc="The retries of one unit of work (one call, or a runtime's step).")
    url = Delegated[str]("_s", doc="The full chat-completions URL this client posts to.")


class OpenAIClient(_Properties):
    """A ``ModelClient`` for an OpenAI-compatible chat-completions server.

    The constructor raises ``ModelBadRequestError`` for a ``base_url`` that is
    not an http(s) URL with a host, a non-positive ``timeout_s``, or a proxy
    in the environment that httpx cannot speak. ``on_retry(retry, error,
    delay)`` is called before each wait; ``resolve`` looks host names up
    (``socket.getaddrinfo``'s signature). Threads and sessions that share a client keep
    each attempt's own deadline and, when a runtime drives them, each turn's
    own retry budget (``RetryBudget.spending``): sharing one client is the
    normal way.
    """

    def __init__(
        self,
        base_url: str | None,
        model: str,
        *,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        resolve: Resolver = system_resolve,
        **options: Unpack[ClientOptions],
    ) -> None:
        self._s = _Settings(base_url, model, "OpenAIClient", options)
        self._sleep = sleep
        self._monotonic = monotonic
        try:
            self._http = httpx.Client(**self._s.client_options())
        except (ImportError, ValueError, httpx.InvalidURL) as exc:
            raise refuse_unusable_proxy(exc) from exc
        use_backend(self._http, DeadlineBackend(resolve, monotonic))

    def complete(self, request: ChatRequest) -> ChatResponse:
        """Send ``request`` and return the model's reply, with how long the
        call took (every attempt and wait, on ``monotonic``) as ``latency_ms``.

        Raises ``ModelBadResponseError`` (not retried), ``ModelHTTPError`` for a
        status that is not retried, ``ModelRateLimitedError`` or
        ``ModelHTTPError`` when ``Retry-After`` asks for a longer wait than the
        policy allows, ``ModelTimeoutError`` when timeouts are not retried, and
        ``ModelRetriesExhaustedError`` when every attempt failed retryably.
        """
        payload = self._s.payload(request)
        budget = spent_from(self.retry_budget)
        called = self._monotonic()
        with budget.step():
            while True:
                started = self._monotonic()
                try:
                    response = self._s.attempted(self._attempt(payload), self._monotonic() - started)
                    return replace(response, latency_ms=elapsed_ms(called, self._monotonic()))
                except ModelError as err:
                    self._s.attempted(err, self._monotonic() - started)
                    self._sleep(self._s.retrier.after(err, budget))

    def _attempt(self, payload: bytes) -> ChatResponse:
        s = self._s
        deadline = self._monotonic() + s.timeout_s
        try:
            with attempt_deadline(deadline), self._http.stream("POST", s.url, content=payload) as response:
                chunks: list[bytes] = []
                size = 0
                try:
                    for chunk in response.iter_bytes():
                        size = s.add(size, chunks, chunk)
                        if self._monotonic() >= deadline:
                            raise ModelTimeoutError(s.timeout_s, f"POST {s.where}")
                except httpx.RemoteProtocolError as err:
                    raise s.cut_off(response, err) from err
                return s.read(response, b"".join(chunks))
        except httpx.HTTPError as err:
            raise failure_of(err, s.where, s.timeout_s) from err

    def close(self) -> None:
        """Close the pooled connections."""
        self._http.close()

    def __enter__(self) -> OpenAIClient:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


async def _asyncio_sleep(delay: float) -> None:
    await asyncio.sleep(delay)


class AsyncOpenAIClient(_Properties):
    """The asyncio twin of ``OpenAIClient``: the same options and errors,
    ``await complete(request)``, ``sleep`` an async function (``monotonic``
    times the call for ``latency_ms`` only; the deadline is asyncio's). Use it on one
    event loop (its connections belong to the loop that opened them)."""

    def __init__(
        self,
        base_url: str | None,
        model: str,
        *,
        sleep: Callable[[float], Awaitable[None]] = _asyncio_sleep,
        resolve: Resolver = system_resolve,
        monotonic: Callable[[], float] = time.monotonic,
        **options: Unpack[ClientOptions],
    ) -> None:
        self._s = _Settings(base_url, model, "AsyncOpenAIClient", options)
        self._sleep = sleep
        self._monotonic = monotonic
        try:
            self._http = httpx.AsyncClient(**self._s.client_options())
        except (ImportError, ValueError, httpx.InvalidURL) as exc:
            raise refuse_unusable_proxy(exc) from exc
        use_backend(self._http, AsyncResolvingBackend(resolve))

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Send ``request`` and return the model's reply; raises as
        ``OpenAIClient.complete`` does."""
        payload = self._s.payload(request)
        budget = spent_from(self.retry_budget)
        called = self._monotonic()
        with budget.step():
            while True:
                started = time.monotonic()
                try:
                    response = self._s.attempted(await self._attempt(payload), time.monotonic() - started)
                    return replace(response, latency_ms=elapsed_ms(called, self._monotonic()))
                except ModelError as err:
                    self._s.attempted(err, time.monotonic() - started)
                    delay = self._s.retrier.after(err, budget)
                await self._sleep(delay)

    async def _attempt(self, payload: bytes) -> ChatResponse:
        s = self._s
        try:
            async with asyncio.timeout(s.timeout_s), self._http.stream("POST", s.url, content=payload) as response:
                chunks: list[bytes] = []
                size = 0
                try:
                    async for chunk in response.aiter_bytes():
                        size = s.add(size, chunks, chunk)
                except httpx.RemoteProtocolError as err:
                    raise s.cut_off(response, err) from err
                return s.read(response, b"".join(chunks))
        except (httpx.HTTPError, TimeoutError) as err:
            raise failure_of(err, s.where, s.timeout_s) from err

    async def aclose(self) -> None:
        """Close the pooled connections."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncOpenAIClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
