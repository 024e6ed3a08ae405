"""A model client for any server that speaks OpenAI's chat-completions API.

Theory of operation
-------------------
``OpenAIClient.complete`` sends one ``POST {base_url}/chat/completions``
(standard library ``http.client``, a fresh connection per attempt) and reads
the reply through ``adapters.llm.openai_wire``. ``base_url`` is the API root the
server documents, e.g. ``http://127.0.0.1:8000/v1`` for vLLM,
``http://127.0.0.1:8080/v1`` for llama.cpp, ``http://127.0.0.1:11434/v1`` for
Ollama, ``https://api.openai.com/v1`` for OpenAI.

Each attempt has one deadline, ``timeout_s`` seconds for connecting, sending,
waiting for the headers and reading the whole body: every read and write on
the connection gets only the time left until it (``_DeadlineSocket``), so a
server that dribbles its headers a byte at a time, repeats ``100 Continue``
or trickles its body is cut off like one that never answers. The host name
is looked up within the same deadline: the lookup (``resolve``, by default
``socket.getaddrinfo``, which has no timeout of its own) runs in a daemon
thread that the attempt waits for only until the deadline, and each address
it returns is then tried with the time left.

The proxy comes from the environment as every HTTP client reads it
(``http_proxy``/``HTTP_PROXY``, ``https_proxy``/``HTTPS_PROXY``, ``no_proxy``/
``NO_PROXY``, through ``urllib.request``): a plain ``http`` URL is sent to the
proxy in absolute form, an ``https`` one through a ``CONNECT`` tunnel; user
and password in the proxy URL become ``Proxy-Authorization``. Only ``http``
proxies are spoken; another scheme is refused when the client is built.

What happens to an attempt's outcome is one table, ``OUTCOMES`` (its rows
are the first column; ``outcome_of`` picks the row of an error):

=============  ============================  ===================  ===========
row            what the server did           error                retried?
=============  ============================  ===================  ===========
(success)      2xx with a chat completion    (a ChatResponse)     --
bad-response   2xx with anything else        model-bad-response   never
rate-limited   429                           model-rate-limited   yes
server-busy    408 or 5xx                    model-http-error     yes
refused        any other status              model-http-error     never
unreachable    refused or dropped the link   model-unreachable    yes
               (also in the middle of a body)
timeout        missed the deadline           model-timeout        by policy
=============  ============================  ===================  ===========

A retried outcome waits before the next attempt: exactly the server's
``Retry-After`` (or ``retry-after-ms``) when it sent one, else exponential
backoff with jitter (``RetryPolicy.backoff``). A ``Retry-After`` longer than
``RetryPolicy.max_retry_after`` is honoured by not retrying: the error is
raised at once. A bad response is never retried: a server that does not
speak the protocol will not start speaking it on the second try.

Retries come out of one budget, ``retry_budget`` (``RetryPolicy.max_retries``
retries per unit of work). Used alone, the unit is one ``complete`` call; a
runtime that holds the budget for a step (``RetryBudget.step``) shares it, so
its same-step retries and the client's retries together never exceed it. When
the budget is spent on a retryable failure the client raises
``ModelRetriesExhaustedError``, which counts every attempt of the unit and
carries the last failure as ``last``. Every error the client raises says
whether another attempt could help (``ModelError.retryable``): only an
exhausted budget leaves it true.

``sleep``, ``random``, the clocks and the name lookup are injectable so that
tests neither wait nor depend on chance or on a name server.
"""

from __future__ import annotations

import base64
import http.client
import io
import ipaddress
import json
import math
import random as _random
import socket
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

from .model import (
    ChatRequest,
    ChatResponse,
    ModelBadRequestError,
    ModelBadResponseError,
    ModelError,
    ModelHTTPError,
    ModelRateLimitedError,
    ModelRetriesExhaustedError,
    ModelTimeoutError,
    ModelUnreachableError,
    RetryBudget,
    excerpt,
)
from .openai_wire import build_request_body, parse_chat_response

__all__ = [
    "OUTCOMES",
    "OpenAIClient",
    "Proxy",
    "RetryPolicy",
    "is_retryable",
    "outcome_of",
    "parse_retry_after",
    "proxy_for",
]

#: The outcome table from the module docstring: outcome -> retried? (None:
#: ``RetryPolicy.retry_timeouts`` decides). ``outcome_of`` names the row.
OUTCOMES: Mapping[str, bool | None] = {
    "bad-response": False,
    "rate-limited": True,
    "server-busy": True,  # 408 and every 5xx
    "refused": False,  # any other non-2xx status
    "unreachable": True,
    "timeout": None,
}

#: The default cap on one response body.
MAX_RESPONSE_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long to wait between attempts.

    ``max_retries`` counts attempts after the first. The n-th retry (n = 1, 2,
    …) waits ``min(max_delay, initial_delay * multiplier ** (n - 1))`` less a
    random fraction of up to ``jitter`` of it. Raises ``ModelBadRequestError``
    for a negative count or delay, or a jitter outside [0, 1].
    """

    max_retries: int = 3
    initial_delay: float = 0.5
    multiplier: float = 2.0
    max_delay: float = 8.0
    jitter: float = 0.25
    max_retry_after: float = 60.0
    retry_timeouts: bool = True

    def __post_init__(self) -> None:
        numbers = (self.max_retries, self.initial_delay, self.max_delay, self.max_retry_after)
        if min(numbers) < 0 or self.multiplier < 1:
            raise ModelBadRequestError(f"retry policy out of range: {self!r}")
        if not 0 <= self.jitter <= 1:
            raise ModelBadRequestError(f"retry jitter must be in [0, 1], got {self.jitter}")

    def backoff(self, retry: int, rand: float) -> float:
        """The wait before retry number ``retry`` (1-based), given ``rand`` in [0, 1)."""
        base = min(self.max_delay, self.initial_delay * self.multiplier ** (retry - 1))
        return base * (1 - self.jitter * rand)


def outcome_of(err: ModelError) -> str:
    """The ``OUTCOMES`` row a failed attempt falls in."""
    if isinstance(err, ModelTimeoutError):
        return "timeout"
    if isinstance(err, ModelUnreachableError):
        return "unreachable"
    if isinstance(err, ModelRateLimitedError):
        return "rate-limited"
    if isinstance(err, ModelHTTPError):
        busy = err.status == 408 or 500 <= err.status <= 599
        return "server-busy" if busy else "refused"
    return "bad-response"


def is_retryable(err: ModelError, policy: RetryPolicy) -> bool:
    """Whether ``err`` is worth another attempt under ``policy`` (see ``OUTCOMES``)."""
    retried = OUTCOMES[outcome_of(err)]
    return policy.retry_timeouts if retried is None else retried


def parse_retry_after(headers: Mapping[str, str], now: float) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an
    HTTP date, against wall-clock ``now``); None when absent or unreadable.
    ``headers`` keys are lower-case."""
    millis = _non_negative(headers.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _non_negative(value)
    if seconds is not None:
        return seconds
    try:
        when = parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - now)


def _non_negative(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


@dataclass(frozen=True, slots=True)
class _Reply:
    status: int
    headers: Mapping[str, str]
    body: bytes


@dataclass(frozen=True, slots=True)
class Proxy:
    """An HTTP proxy: where to connect, and the ``Proxy-Authorization``
    value when the proxy URL carried a user."""

    host: str
    port: int
    authorization: str | None = None


def proxy_for(scheme: str, host: str) -> Proxy | None:
    """The proxy a request to ``scheme://host`` goes through, read from the
    environment as ``urllib.request`` reads it (``no_proxy`` included); None
    for a direct connection. Raises ``ModelBadRequestError`` for a proxy URL
    that is not ``http``."""
    proxies = urllib.request.getproxies()
    bypass = bool(urllib.request.proxy_bypass(host))
    url = proxies.get(scheme)
    if not url or bypass:
        return None
    parts = urllib.parse.urlsplit(url if "://" in url else f"http://{url}")
    if parts.scheme != "http" or not parts.hostname:
        raise ModelBadRequestError(f"{scheme}_proxy must be an http:// proxy URL, got {url!r}")
    authorization = None
    if parts.username is not None:
        user = urllib.parse.unquote(parts.username)
        password = urllib.parse.unquote(parts.password or "")
        authorization = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    return Proxy(parts.hostname, parts.port or 80, authorization)


class _DeadlineReader(io.RawIOBase):
    """The reading side of a connection: each read waits only for the time
    left until the deadline (``remaining`` raises ``TimeoutError`` once it
    passed), so no sequence of slow reads outlasts it."""

    def __init__(self, sock: socket.socket, remaining: Callable[[], float]) -> None:
        super().__init__()
        self._sock = sock
        self._raw = sock.makefile("rb", buffering=0)
        self._remaining = remaining

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        self._sock.settimeout(self._remaining())
        return self._raw.readinto(buffer)

    def close(self) -> None:
        self._raw.close()
        super().close()


class _DeadlineSocket:
    """A connected socket as ``http.client`` uses it (``sendall``,
    ``makefile``, ``close``), every operation bounded by one deadline."""

    def __init__(self, sock: socket.socket, remaining: Callable[[], float]) -> None:
        self._sock = sock
        self._remaining = remaining

    def sendall(self, data: bytes) -> None:
        self._sock.settimeout(self._remaining())
        self._sock.sendall(data)

    def makefile(self, mode: str = "rb", *args: object, **kwargs: object) -> io.BufferedReader:
        return io.BufferedReader(_DeadlineReader(self._sock, self._remaining))

    def close(self) -> None:
        self._sock.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


#: How a host name becomes addresses: ``socket.getaddrinfo``'s signature.
Resolver = Callable[[str, int, int, int], list[tuple[Any, Any, int, str, Any]]]


def _lookup_within(resolve: Resolver, host: str, port: int, remaining: Callable[[], float]) -> list[Any]:
    """``resolve(host, port, 0, SOCK_STREAM)``, waited for only until the
    deadline (``TimeoutError`` then; the lookup is left to finish in its
    daemon thread). An IP address needs no lookup thread."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        return resolve(host, port, 0, socket.SOCK_STREAM)
    found: list[Any] = []
    failed: list[BaseException] = []

    def work() -> None:
        try:
            found.extend(resolve(host, port, 0, socket.SOCK_STREAM))
        except BaseException as exc:  # handed to the waiting attempt
            failed.append(exc)

    worker = threading.Thread(target=work, name=f"resolve {host}", daemon=True)
    worker.start()
    worker.join(remaining())
    if worker.is_alive():
        raise TimeoutError(f"the name lookup of {host} did not finish within the deadline")
    if failed:
        raise failed[0]
    return found


def _connect_within(
    resolve: Resolver, address: tuple[str, int], remaining: Callable[[], float], source: Any
) -> socket.socket:
    """A TCP connection to ``address`` made before the deadline: the name
    lookup and each connect get only the time left; the last connect error
    is raised when no address takes the connection."""
    host, port = address
    last: OSError | None = None
    for family, kind, proto, _, target in _lookup_within(resolve, host, port, remaining):
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(remaining())
            if source:
                sock.bind(source)
            sock.connect(target)
        except OSError as exc:
            sock.close()
            last = exc
            continue
        except BaseException:
            sock.close()
            raise
        return sock
    raise last if last is not None else OSError(f"no address found for {host}")


class OpenAIClient:
    """A ``ModelClient`` for an OpenAI-compatible chat-completions server.

    The constructor raises ``ModelBadRequestError`` for a ``base_url`` that is
    not an http(s) URL with a host, a non-positive ``timeout_s``, or a proxy
    in the environment that is not an ``http://`` URL.
    ``on_retry(attempt, error, delay)`` is called before each wait;
    ``resolve`` looks host names up (``socket.getaddrinfo``'s signature).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        retry: RetryPolicy | None = None,
        headers: Mapping[str, str] | None = None,
        tool_call_content: str | None = None,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        sleep: Callable[[float], None] = time.sleep,
        random: Callable[[], float] = _random.random,
        wall_clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        on_retry: Callable[[int, ModelError, float], None] | None = None,
        retry_budget: RetryBudget | None = None,
        resolve: Resolver = socket.getaddrinfo,
    ) -> None:
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ModelBadRequestError(f"base_url must be an http(s) URL with a host: {base_url!r}")
        if not timeout_s > 0:
            raise ModelBadRequestError(f"timeout_s must be positive, got {timeout_s}")
        self.base_url = base_url
        self.model = model
        self.timeout_s = timeout_s
        self.retry = retry if retry is not None else RetryPolicy()
        #: The retries of one unit of work (one call, or a runtime's step).
        self.retry_budget = retry_budget if retry_budget is not None else RetryBudget(self.retry.max_retries)
        #: The proxy from the environment, or None.
        self.proxy = proxy_for(parts.scheme, parts.hostname)
        self.tool_call_content = tool_call_content
        self.max_response_bytes = max_response_bytes
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        path = parts.path.rstrip("/") + "/chat/completions"
        self._target = f"{path}?{parts.query}" if parts.query else path
        self._headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": "planfold",
            **(headers or {}),
        }
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._sleep = sleep
        self._random = random
        self._wall_clock = wall_clock
        self._monotonic = monotonic
        self._on_retry = on_retry
        self._resolve = resolve

    @property
    def url(self) -> str:
        """The full chat-completions URL this client posts to."""
        scheme = "https" if self._https else "http"
        port = f":{self._port}" if self._port is not None else ""
        return f"{scheme}://{self._host}{port}{self._target}"

    def complete(self, request: ChatRequest) -> ChatResponse:
        """Send ``request`` and return the model's reply.

        Raises ``ModelBadResponseError`` (not retried), ``ModelHTTPError`` for a
        status that is not retried, ``ModelRateLimitedError`` or
        ``ModelHTTPError`` when ``Retry-After`` asks for a longer wait than the
        policy allows, ``ModelTimeoutError`` when timeouts are not retried, and
        ``ModelRetriesExhaustedError`` when every attempt failed retryably.
        """
        body = build_request_body(self.model, request, tool_call_content=self.tool_call_content)
        payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
        budget = self.retry_budget
        with budget.step():
            while True:
                try:
                    return self._interpret(self._post(payload))
                except ModelError as err:
                    err.retryable = False
                    if not is_retryable(err, self.retry):
                        raise
                    if not budget.take():
                        exhausted = ModelRetriesExhaustedError(budget.used + 1, err)
                        exhausted.retryable = True
                        raise exhausted from err
                    delay = self._delay(err, budget.used)
                    if self._on_retry is not None:
                        self._on_retry(budget.used, err, delay)
                    self._sleep(delay)

    def _delay(self, err: ModelError, retry: int) -> float:
        """The wait before retry number ``retry``; re-raises ``err`` when the
        server asked for longer than ``max_retry_after``."""
        asked = err.retry_after if isinstance(err, ModelHTTPError) else None
        if asked is None:
            return self.retry.backoff(retry, self._random())
        if asked > self.retry.max_retry_after:
            raise err
        return asked

    def _interpret(self, reply: _Reply) -> ChatResponse:
        if 200 <= reply.status <= 299:
            return parse_chat_response(reply.body)
        shown = excerpt(reply.body)
        retry_after = parse_retry_after(reply.headers, self._wall_clock())
        if reply.status == 429:
            raise ModelRateLimitedError(shown, retry_after)
        raise ModelHTTPError(reply.status, shown, retry_after=retry_after)

    def _connection(self, deadline: float) -> http.client.HTTPConnection:
        """A connected connection (through the proxy, if any) whose socket
        keeps to ``deadline``."""
        remaining = self._remaining(deadline)
        proxy = self.proxy
        conn: http.client.HTTPConnection
        host, port = (self._host, self._port) if proxy is None else (proxy.host, proxy.port)
        if self._https:
            conn = http.client.HTTPSConnection(host, port, timeout=remaining)
            if proxy is not None:
                tunnel = {} if proxy.authorization is None else {"Proxy-Authorization": proxy.authorization}
                conn.set_tunnel(self._host, self._port, tunnel)
        else:
            conn = http.client.HTTPConnection(host, port, timeout=remaining)

        def create(address: tuple[str, int], timeout: float, source: Any = None) -> socket.socket:
            # The name lookup and the TCP connect get what is left; so do the
            # proxy's tunnel and the TLS handshake that follow on the socket.
            sock = _connect_within(self._resolve, address, lambda: self._remaining(deadline), source)
            sock.settimeout(self._remaining(deadline))
            return sock

        setattr(conn, "_create_connection", create)  # noqa: B010 (http.client's hook for making the socket)
        conn.connect()
        assert conn.sock is not None
        conn.sock = _DeadlineSocket(conn.sock, lambda: self._remaining(deadline))
        return conn

    def _post(self, payload: bytes) -> _Reply:
        """One HTTP exchange within the deadline; raises ``ModelTimeoutError``,
        ``ModelUnreachableError`` (also for a body cut off before its length)
        or (for an oversized body) ``ModelBadResponseError``."""
        deadline = self._monotonic() + self.timeout_s
        conn: http.client.HTTPConnection | None = None
        headers = dict(self._headers)
        target = self._target
        if self.proxy is not None and not self._https:
            target = self.url  # a plain request goes to the proxy in absolute form
            if self.proxy.authorization is not None:
                headers["Proxy-Authorization"] = self.proxy.authorization
        try:
            conn = self._connection(deadline)
            conn.request("POST", target, body=payload, headers=headers)
            response = conn.getresponse()
            chunks: list[bytes] = []
            size = 0
            while True:
                chunk = response.read1(65536)
                if not chunk:
                    break
                size += len(chunk)
                if size > self.max_response_bytes:
                    raise ModelBadResponseError(
                        f"response body exceeds {self.max_response_bytes} bytes",
                        excerpt(b"".join(chunks)),
                    )
                chunks.append(chunk)
            if response.length:  # announced bytes that never came: the link dropped
                announced = size + response.length
                raise ModelUnreachableError(
                    f"POST {self.url}: the connection closed after {size} of {announced} body bytes"
                )
            reply_headers = {k.lower(): v for k, v in response.getheaders()}
            return _Reply(response.status, reply_headers, b"".join(chunks))
        except TimeoutError as err:
            raise ModelTimeoutError(self.timeout_s, f"POST {self.url}") from err
        except (OSError, http.client.HTTPException) as err:
            raise ModelUnreachableError(f"POST {self.url}: {type(err).__name__}: {err}") from err
        finally:
            if conn is not None:
                conn.close()

    def _remaining(self, deadline: float) -> float:
        left = deadline - self._monotonic()
        if left <= 0:
            raise TimeoutError("deadline passed")
        return left
