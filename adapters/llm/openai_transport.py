"""httpx under the model clients: one pooled client per model client, the
proxies of the environment, and a deadline that bounds a whole attempt.

Theory of operation
-------------------
Each model client owns one ``httpx.Client`` (or ``httpx.AsyncClient``):
connections are kept alive and reused from one request to the next. The
proxy comes from the environment as httpx reads it (``trust_env``:
``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``, ``NO_PROXY`` in either case);
``NO_PROXY`` address ranges such as ``127.0.0.0/8``, which httpx matches
only as single addresses, are added here: a base URL whose host is an
address in such a range is reached directly (``direct_routes``). A proxy that
httpx cannot speak is refused when the client is built, its URL shown
without its password.

httpx's timeouts bound each operation (a connect, one read, one write); a
server that dribbles its headers a byte at a time, repeats ``100 Continue``
or trickles its body never misses one of them. An attempt therefore has one
deadline that bounds it as a whole:

- the synchronous client enters ``attempt_deadline(deadline)`` for the
  attempt, and its connections come from ``DeadlineBackend``, httpcore's own
  network backend whose every connect, TLS handshake, read and write gets at
  most the time left until that deadline (the deadline lives in a context
  variable, so threads sharing one client keep their own);
- the asyncio client runs the attempt inside ``asyncio.timeout``, which
  cancels whatever it waits for.

Both resolve host names themselves (``resolve``, ``socket.getaddrinfo`` by
default, which has no timeout of its own) in a daemon thread that the attempt
waits for only until its deadline, then connect to each address found, in
order, with the time left. The network backend of a client's pools is set
once, when the client is built (``use_backend``).

``failure_of`` turns an httpx exception into the model port's typed error.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
import threading
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import httpcore
import httpx

from ..redact import redact_text, redact_url
from .model import ModelBadRequestError, ModelBadResponseError, ModelError, ModelTimeoutError, ModelUnreachableError

__all__ = [
    "AsyncResolvingBackend",
    "DeadlineBackend",
    "Resolver",
    "attempt_deadline",
    "direct_routes",
    "failure_of",
    "refuse_unusable_proxy",
    "system_resolve",
    "use_backend",
]

#: How a host name becomes addresses: ``socket.getaddrinfo``'s signature.
Resolver = Callable[[str, int, int, int], list[tuple[Any, Any, int, str, Any]]]

#: The system's name lookup, the clients' default ``resolve``.
system_resolve: Resolver = socket.getaddrinfo

#: The monotonic deadline of the attempt running in this context, or None.
_DEADLINE: ContextVar[float | None] = ContextVar("planfold_model_attempt_deadline", default=None)

SocketOptions = Iterable[tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]]


@contextmanager
def attempt_deadline(deadline: float) -> Iterator[None]:
    """Bound every network operation of ``DeadlineBackend`` in this context
    by ``deadline`` (on the backend's monotonic clock)."""
    token = _DEADLINE.set(deadline)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def _within(timeout: float | None, monotonic: Callable[[], float], late: type[Exception]) -> float | None:
    """``timeout`` cut to the time left until the attempt's deadline; raises
    ``late`` when it has passed."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - monotonic()
    if left <= 0:
        raise late("the attempt's deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """httpcore's stream, each operation given only the time left."""

    def __init__(self, inner: httpcore.NetworkStream, monotonic: Callable[[], float]) -> None:
        self._inner = inner
        self._monotonic = monotonic

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _within(timeout, self._monotonic, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _within(timeout, self._monotonic, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        left = _within(timeout, self._monotonic, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, left), self._monotonic)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _addresses(found: list[tuple[Any, Any, int, str, Any]]) -> list[tuple[str, int]]:
    return [(str(sockaddr[0]), int(sockaddr[1])) for *_, sockaddr in found]


def _lookup(
    resolve: Resolver, host: str, port: int, done: Callable[[list[tuple[str, int]] | BaseException], None]
) -> None:
    """Run ``resolve(host, port)`` in a daemon thread and hand ``done`` the
    addresses or the failure; a lookup nobody waits for any more finishes
    there unseen."""

    def work() -> None:
        try:
            result: list[tuple[str, int]] | BaseException = _addresses(resolve(host, port, 0, socket.SOCK_STREAM))
        except BaseException as exc:  # handed to the waiting attempt
            result = exc
        done(result)

    threading.Thread(target=work, name=f"resolve {host}", daemon=True).start()


def _looked_up(host: str, result: list[tuple[str, int]] | BaseException) -> list[tuple[str, int]]:
    if isinstance(result, BaseException):
        raise httpcore.ConnectError(f"the name lookup of {host} failed: {result}") from result
    if not result:
        raise httpcore.ConnectError(f"no address found for {host}")
    return result


class DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's synchronous network backend under the attempt's deadline
    (see the module docstring)."""

    def __init__(self, resolve: Resolver, monotonic: Callable[[], float]) -> None:
        self._inner = httpcore.SyncBackend()
        self._resolve = resolve
        self._monotonic = monotonic

    def _resolved(self, host: str, port: int, timeout: float | None) -> list[tuple[str, int]]:
        if _is_address(host):
            return [(host, port)]
        box: list[list[tuple[str, int]] | BaseException] = []
        finished = threading.Event()

        def done(result: list[tuple[str, int]] | BaseException) -> None:
            box.append(result)
            finished.set()

        _lookup(self._resolve, host, port, done)
        if not finished.wait(_within(timeout, self._monotonic, httpcore.ConnectTimeout)):
            raise httpcore.ConnectTimeout(f"the name lookup of {host} did not finish within the deadline")
        return _looked_up(host, box[0])

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: SocketOptions | None = None,
    ) -> httpcore.NetworkStream:
        last: httpcore.ConnectError | None = None
        for address, at_port in self._resolved(host, port, timeout):
            left = _within(timeout, self._monotonic, httpcore.ConnectTimeout)
            try:
                stream = self._inner.connect_tcp(address, at_port, left, local_address, socket_options)
            except httpcore.ConnectError as exc:
                last = exc
                continue
            return _DeadlineStream(stream, self._monotonic)
        assert last is not None
        raise last

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: SocketOptions | None = None
    ) -> httpcore.NetworkStream:
        left = _within(timeout, self._monotonic, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.connect_unix_socket(path, left, socket_options), self._monotonic)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class AsyncResolvingBackend(httpcore.AsyncNetworkBackend):
    """httpcore's asyncio network backend, host names looked up by
    ``resolve`` (the deadline is the caller's ``asyncio.timeout``)."""

    def __init__(self, resolve: Resolver) -> None:
        self._inner = httpcore.AnyIOBackend()
        self._resolve = resolve

    async def _resolved(self, host: str, port: int) -> list[tuple[str, int]]:
        if _is_address(host):
            return [(host, port)]
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[tuple[str, int]] | BaseException] = loop.create_future()

        def settle(result: list[tuple[str, int]] | BaseException) -> None:
            if not future.done():
                future.set_result(result)

        def done(result: list[tuple[str, int]] | BaseException) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed while the lookup ran
                loop.call_soon_threadsafe(settle, result)

        _lookup(self._resolve, host, port, done)
        return _looked_up(host, await future)

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: SocketOptions | None = None,
    ) -> httpcore.AsyncNetworkStream:
        last: httpcore.ConnectError | None = None
        for address, at_port in await self._resolved(host, port):
            try:
                return await self._inner.connect_tcp(address, at_port, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:
                last = exc
        assert last is not None
        raise last

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: SocketOptions | None = None
    ) -> httpcore.AsyncNetworkStream:
        return await self._inner.connect_unix_socket(path, timeout, socket_options)

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def use_backend(client: httpx.Client | httpx.AsyncClient, backend: object) -> None:
    """Give every connection pool of ``client`` (the direct one and each
    proxy's) ``backend`` as its network backend. httpx builds its pools on
    httpcore's default backend and offers no parameter for another, so the
    pools' attribute is set; a pool without it (another httpx) is refused
    here rather than left without a deadline."""
    transports = [client._transport, *client._mounts.values()]
    for transport in transports:
        if transport is None:
            continue
        pool = getattr(transport, "_pool", None)
        if pool is None or not hasattr(pool, "_network_backend"):
            raise ModelBadRequestError(
                f"this httpx ({httpx.__version__}) has no connection pool the attempt's deadline can bound"
            )
        pool._network_backend = backend


def direct_routes(url: httpx.URL) -> dict[str, None]:
    """httpx mounts (pattern -> None: no proxy) for a ``NO_PROXY`` address
    range that holds ``url``'s host, when that host is an IP address."""
    try:
        address = ipaddress.ip_address(url.host)
    except ValueError:
        return {}
    for entry in urllib.request.getproxies().get("no", "").split(","):
        if "/" not in entry:
            continue
        try:
            network = ipaddress.ip_network(entry.strip(), strict=False)
        except ValueError:
            continue
        if address.version == network.version and address in network:
            shown = f"[{address}]" if address.version == 6 else str(address)
            return {f"all://{shown}": None}
    return {}


def refuse_unusable_proxy(exc: Exception) -> ModelBadRequestError:
    """The error for a proxy in the environment that httpx refused to use:
    the variables' URLs without their passwords, and httpx's reason."""
    proxies: Mapping[str, str] = urllib.request.getproxies()
    named = ", ".join(f"{scheme}_proxy={redact_url(url)}" for scheme, url in sorted(proxies.items()) if scheme != "no")
    return ModelBadRequestError(f"cannot use the proxy from the environment ({named}): {redact_text(str(exc))}")


def failure_of(err: Exception, where: str, timeout_s: float) -> ModelError:
    """The model port's error for an httpx (or deadline) failure of an
    attempt on ``where`` (a URL without its password)."""
    if isinstance(err, httpx.TimeoutException | TimeoutError):
        return ModelTimeoutError(timeout_s, f"POST {where}")
    if isinstance(err, httpx.DecodingError):
        return ModelBadResponseError(f"the body could not be decoded: {redact_text(str(err))}")
    return ModelUnreachableError(f"POST {where}: {type(err).__name__}: {redact_text(str(err))}")
