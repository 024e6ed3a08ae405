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
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from typing import Any, ClassVar, Generic, TypeVar, Unpack

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
    ModelUnreachableError,
    spent_from,
)
from .openai_common import MAX_RESPONSE_BYTES, CallOptions, Settings, SettingsView, cut_off

__all__ = ["MAX_RESPONSE_BYTES", "AsyncOpenAISDKClient", "OpenAISDKClient", "SDKOptions"]


class SDKOptions(CallOptions, total=False):
    """The keyword options both adapters take: those of every planfold
    client (``CallOptions``), no more."""


class _Settings(Settings):
    """What both adapters take and check alike, and what the SDK raises."""

    def __init__(self, client: openai.OpenAI | openai.AsyncOpenAI, model: str, where: str, options: SDKOptions) -> None:
        refuse_unknown(options, SDKOptions.__annotations__, where)
        if not isinstance(model, str) or not model:
            raise ModelBadRequestError(f"{where}: the model must be a non-empty name, got {model!r}")
        shown = redact_url(str(client.base_url).rstrip("/") + "/chat/completions")
        super().__init__(model, options.get("timeout_s", 60.0), shown, options)

    def reply(self, http: Any, body: bytes) -> ChatResponse:
        """The chat completion of the reply ``http`` whose body is ``body``,
        or the typed error of its status."""
        return self.read(int(http.status_code), http.headers.items(), body)

    def failure(self, err: openai.OpenAIError) -> ModelError:
        """The ``ModelError`` of what the SDK raised."""
        if isinstance(err, openai.APIStatusError):
            response = err.response
            try:
                body = bytes(response.content)
            except Exception:  # the SDK closed the body unread: keep what it parsed
                body = str(err.body if err.body is not None else err.message).encode("utf-8")
            try:
                self.reply(response, body)
            except ModelError as typed:
                return typed
            return ModelBadResponseError(f"the openai SDK refused a {response.status_code} reply: {err.message}")
        if isinstance(err, openai.APITimeoutError):
            return self.timeout()
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
            return self.timeout(": the body did not arrive in time")
        if raised("TransportError"):
            got = getattr(http, "num_bytes_downloaded", "some")
            return cut_off(self.where, got, http.headers.get("content-length"), err)
        if raised("DecodingError"):
            return ModelBadResponseError(f"the body could not be decoded: {err}")
        if raised("HTTPError") or raised("StreamError"):
            return ModelBadResponseError(f"the body could not be read: {type(err).__name__}: {err}")
        return None

    @contextmanager
    def streaming(self, http: Any) -> Iterator[None]:
        """Turn an error of the SDK's HTTP library raised while the body of
        ``http`` streams into its ``ModelError`` (``streaming_failure``)."""
        try:
            yield
        except ModelError:
            raise
        except Exception as err:
            failure = self.streaming_failure(err, http)
            if failure is None:
                raise
            raise failure from err


C = TypeVar("C", openai.OpenAI, openai.AsyncOpenAI)
W = TypeVar("W")


class _Adapter(SettingsView, Generic[C, W]):
    """What both adapters hold: the user's client, the settings, ``sleep``
    and the clock. ``_pair`` names an adapter, the kind of client it wraps,
    and its twin with the other kind (where a client of that kind belongs)."""

    _s: _Settings
    _pair: ClassVar[tuple[str, type, str, type]]

    def __init__(self, client: C, model: str, options: SDKOptions, sleep: W, monotonic: Callable[[], float]) -> None:
        name, wants, twin, other = self._pair
        if not isinstance(client, wants):
            raise ModelBadRequestError(
                f"{name} wraps an openai.{wants.__name__} client, got {type(client).__name__}"
                + (f" (use {twin})" if isinstance(client, other) else "")
            )
        self._s = _Settings(client, model, name, options)
        self._client: C = client
        self._sleep = sleep
        self._monotonic = monotonic

    @property
    def client(self) -> C:
        """The user's client (never changed, never closed by the adapter)."""
        return self._client


class OpenAISDKClient(_Adapter[openai.OpenAI, Callable[[float], None]]):
    """A ``ModelClient`` that sends planfold's requests through the user's
    ``openai.OpenAI`` ``client`` (see the module docstring for the deadline).

    Raises ``ModelBadRequestError`` for a client that is not an
    ``openai.OpenAI``, an empty model name or a ``timeout_s`` that is not a
    positive, finite number of seconds, and ``TypeError`` for an unknown
    option.
    """

    _pair = ("OpenAISDKClient", openai.OpenAI, "AsyncOpenAISDKClient", openai.AsyncOpenAI)

    def __init__(
        self,
        client: openai.OpenAI,
        model: str,
        *,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        **options: Unpack[SDKOptions],
    ) -> None:
        super().__init__(client, model, options, sleep, monotonic)

    def complete(self, request: ChatRequest) -> ChatResponse:
        """Send ``request`` through the user's client and return the reply,
        with its latency (every attempt and wait) on ``latency_ms``. Raises
        as ``OpenAIClient.complete`` does."""
        attempt = partial(self._attempt, self._s.body(request))
        return self._s.complete(spent_from(self.retry_budget), self._monotonic, attempt, self._sleep)

    def _attempt(self, body: Mapping[str, Any]) -> ChatResponse:
        s = self._s
        deadline = self._monotonic() + s.timeout_s
        api = self._client.with_options(max_retries=0, timeout=s.timeout_s)
        try:
            with api.chat.completions.with_streaming_response.create(**body) as raw:
                with s.streaming(raw.http_response):
                    content = s.received().read(raw.iter_bytes(), self._monotonic, deadline, s.timeout())
                return s.reply(raw.http_response, content)
        except openai.OpenAIError as err:
            raise s.failure(err) from err


class AsyncOpenAISDKClient(_Adapter[openai.AsyncOpenAI, Callable[[float], Awaitable[None]]]):
    """An ``AsyncModelClient`` that sends planfold's requests through the
    user's ``openai.AsyncOpenAI`` ``client``, each attempt inside
    ``asyncio.timeout(timeout_s)``; the same options and errors as
    ``OpenAISDKClient``, ``sleep`` an async function."""

    _pair = ("AsyncOpenAISDKClient", openai.AsyncOpenAI, "OpenAISDKClient", openai.OpenAI)

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        model: str,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        **options: Unpack[SDKOptions],
    ) -> None:
        super().__init__(client, model, options, sleep, monotonic)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Send ``request`` through the user's client and return the reply,
        with its latency on ``latency_ms``; raises as ``OpenAIClient.complete``
        does."""
        attempt = partial(self._attempt, self._s.body(request))
        return await self._s.complete_async(spent_from(self.retry_budget), self._monotonic, attempt, self._sleep)

    async def _attempt(self, body: Mapping[str, Any]) -> ChatResponse:
        s = self._s
        api = self._client.with_options(max_retries=0, timeout=s.timeout_s)
        try:
            async with asyncio.timeout(s.timeout_s):
                async with api.chat.completions.with_streaming_response.create(**body) as raw:
                    with s.streaming(raw.http_response):
                        content = await s.received().read_async(raw.iter_bytes())
                    return s.reply(raw.http_response, content)
        except TimeoutError as err:
            raise s.timeout() from err
        except openai.OpenAIError as err:
            raise s.failure(err) from err
