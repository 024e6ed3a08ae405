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
environment's proxies, one deadline per attempt); what they share with
the ``openai`` SDK adapters (the options, the retry loop of a call, the
capped body) is ``openai_common``. An attempt has
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
import os
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from types import TracebackType
from typing import Generic, TypedDict, TypeVar, Unpack

import httpx

from ..delegation import Delegated
from ..options import refuse_unknown
from ..redact import redact_url
from .model import ChatRequest, ChatResponse, ModelBadRequestError, ModelError, spent_from
from .openai_common import MAX_RESPONSE_BYTES, CallOptions, Settings, SettingsView, cut_off
from .openai_policy import OUTCOMES, RetryPolicy, is_retryable, outcome_of
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
from .openai_wire import parse_retry_after

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


class _HttpOptions(TypedDict):
    headers: dict[str, str]
    timeout: httpx.Timeout
    trust_env: bool
    follow_redirects: bool
    mounts: dict[str, None]


class ClientOptions(CallOptions, total=False):
    """The keyword options both clients take (see ``OpenAIClient``): the
    ``api_key``, the deadline of one attempt (``timeout_s``, 60 by default),
    the ``retry`` policy, extra ``headers``, the content sent for a reply of
    tool calls only (``tool_call_content``), the cap on one response body
    (``max_response_bytes``), the ``random`` and ``wall_clock`` sources,
    ``on_retry`` and a shared ``retry_budget``."""

    api_key: str | None
    headers: Mapping[str, str] | None


class _Settings(Settings):
    """What both clients take and check alike (see ``OpenAIClient``)."""

    def __init__(self, base_url: str | None, model: str, where: str, options: ClientOptions) -> None:
        refuse_unknown(options, ClientOptions.__annotations__, where)
        api_key = options.get("api_key")
        timeout_s = options.get("timeout_s", 60.0)
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
        self.base_url = base_url
        path = parts.path.rstrip("/") + "/chat/completions"
        #: The full chat-completions URL the client posts to.
        self.url = urllib.parse.urlunsplit(parts._replace(path=path, fragment=""))
        super().__init__(model, timeout_s, redact_url(self.url), options)
        self.headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": "planfold",
            **(headers or {}),
        }
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"

    def payload(self, request: ChatRequest) -> bytes:
        return json.dumps(self.body(request), ensure_ascii=False).encode("utf-8")

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

    def reply(self, response: httpx.Response, body: bytes) -> ChatResponse:
        return self.read(response.status_code, response.headers.items(), body)

    def cut_off(self, response: httpx.Response, err: httpx.RemoteProtocolError) -> ModelError:
        """The error for a body the server stopped sending before its end."""
        return cut_off(self.where, response.num_bytes_downloaded, response.headers.get("content-length"), err)


H = TypeVar("H", httpx.Client, httpx.AsyncClient)
W = TypeVar("W")


class _Client(SettingsView, Generic[H, W]):
    """What both clients hold: the settings, ``sleep``, the clock and a
    pooled httpx client made by ``http`` whose pools connect through
    ``backend``."""

    _s: _Settings

    base_url = Delegated[str]("_s", doc="The API root.")
    url = Delegated[str]("_s", doc="The full chat-completions URL this client posts to.")

    def __init__(
        self,
        name: str,
        base_url: str | None,
        model: str,
        options: ClientOptions,
        *,
        sleep: W,
        monotonic: Callable[[], float],
        http: Callable[..., H],
        backend: object,
    ) -> None:
        self._s = _Settings(base_url, model, name, options)
        self._sleep = sleep
        self._monotonic = monotonic
        try:
            self._http: H = http(**self._s.client_options())
        except (ImportError, ValueError, httpx.InvalidURL) as exc:
            raise refuse_unusable_proxy(exc) from exc
        use_backend(self._http, backend)


class OpenAIClient(_Client[httpx.Client, Callable[[float], None]]):
    """A ``ModelClient`` for an OpenAI-compatible chat-completions server.

    The constructor raises ``ModelBadRequestError`` for a ``base_url`` that is
    not an http(s) URL with a host, a ``timeout_s`` that is not a positive,
    finite number of seconds, or a proxy in the environment that httpx cannot
    speak. ``on_retry(retry, error,
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
        super().__init__(
            "OpenAIClient", base_url, model, options, sleep=sleep, monotonic=monotonic,
            http=httpx.Client, backend=DeadlineBackend(resolve, monotonic),
        )  # fmt: skip

    def complete(self, request: ChatRequest) -> ChatResponse:
        """Send ``request`` and return the model's reply, with how long the
        call took (every attempt and wait, on ``monotonic``) as ``latency_ms``.

        Raises ``ModelBadResponseError`` (not retried), ``ModelHTTPError`` for a
        status that is not retried, ``ModelRateLimitedError`` or
        ``ModelHTTPError`` when ``Retry-After`` asks for a longer wait than the
        policy allows, ``ModelTimeoutError`` when timeouts are not retried, and
        ``ModelRetriesExhaustedError`` when every attempt failed retryably.
        """
        attempt = partial(self._attempt, self._s.payload(request))
        return self._s.complete(spent_from(self.retry_budget), self._monotonic, attempt, self._sleep)

    def _attempt(self, payload: bytes) -> ChatResponse:
        s = self._s
        deadline = self._monotonic() + s.timeout_s
        try:
            with attempt_deadline(deadline), self._http.stream("POST", s.url, content=payload) as response:
                try:
                    body = s.received().read(response.iter_bytes(), self._monotonic, deadline, s.timeout())
                except httpx.RemoteProtocolError as err:
                    raise s.cut_off(response, err) from err
                return s.reply(response, body)
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


class AsyncOpenAIClient(_Client[httpx.AsyncClient, Callable[[float], Awaitable[None]]]):
    """The asyncio twin of ``OpenAIClient``: the same options and errors,
    ``await complete(request)``, ``sleep`` an async function (``monotonic``
    times the call and its attempts only; the deadline is asyncio's). Use it on one
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
        super().__init__(
            "AsyncOpenAIClient", base_url, model, options, sleep=sleep, monotonic=monotonic,
            http=httpx.AsyncClient, backend=AsyncResolvingBackend(resolve),
        )  # fmt: skip

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Send ``request`` and return the model's reply; raises as
        ``OpenAIClient.complete`` does."""
        attempt = partial(self._attempt, self._s.payload(request))
        return await self._s.complete_async(spent_from(self.retry_budget), self._monotonic, attempt, self._sleep)

    async def _attempt(self, payload: bytes) -> ChatResponse:
        s = self._s
        try:
            async with asyncio.timeout(s.timeout_s), self._http.stream("POST", s.url, content=payload) as response:
                try:
                    body = await s.received().read_async(response.aiter_bytes())
                except httpx.RemoteProtocolError as err:
                    raise s.cut_off(response, err) from err
                return s.reply(response, body)
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
