"""What planfold's four chat-completions clients share: the options they all
take, the settings made of them, the retry loop of a call and the reading of
one reply's body.

Theory of operation
-------------------
``OpenAIClient`` and ``AsyncOpenAIClient`` (``adapters.llm.openai``, over
httpx) and ``OpenAISDKClient`` and ``AsyncOpenAISDKClient``
(``adapters.llm.openai_sdk``, through a user's ``openai`` client) differ only
in how an attempt moves bytes and waits. Everything else is here, once:

- ``CallOptions``: the keyword options all four take; ``Settings`` checks
  none of them twice and builds the request body, the retry decisions
  (``openai_policy.Retrier``) and the reading of a reply (``openai_wire``);
- ``Settings.complete`` / ``Settings.complete_async``: the loop of one call
  (attempt, log it, wait or raise, as ``openai_policy`` decides), which
  states the call's latency on the reply;
- ``Body``: a reply's body as it streams in, cut off past
  ``max_response_bytes`` (and, for a synchronous client, once the attempt's
  deadline has passed: ``Body.read``);
- ``cut_off``: the error of a body the connection dropped before its end.
"""

from __future__ import annotations

import math
import random as _random
import time
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable
from dataclasses import replace
from typing import Any, TypedDict

from ..delegation import Delegated
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

__all__ = ["MAX_RESPONSE_BYTES", "Body", "CallOptions", "Settings", "SettingsView", "cut_off"]

#: The default cap on one response body.
MAX_RESPONSE_BYTES = 16 * 1024 * 1024


class CallOptions(TypedDict, total=False):
    """The keyword options every client takes: the deadline of one attempt
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


def _seconds(timeout_s: object) -> float:
    """``timeout_s`` as a float; raises ``ModelBadRequestError`` unless it is
    a positive, finite number (a bool is not one)."""
    seconds = math.nan
    if not isinstance(timeout_s, bool) and isinstance(timeout_s, int | float):
        try:
            seconds = float(timeout_s)
        except OverflowError:  # an integer past every float: not finite either
            seconds = math.inf
    if not 0 < seconds < math.inf:  # NaN too
        raise ModelBadRequestError(f"timeout_s must be a positive number of seconds, got {timeout_s!r}")
    return seconds


class Settings:
    """What every client keeps of its options (``timeout_s`` is checked
    here, the others by the client): ``where`` is the chat-completions URL as
    logs and errors show it, without a password."""

    def __init__(self, model: str, timeout_s: float, where: str, options: CallOptions) -> None:
        retry = options.get("retry")
        budget = options.get("retry_budget")
        self.model = model
        self.timeout_s = _seconds(timeout_s)
        self.retry = retry if retry is not None else RetryPolicy()
        #: The retries of one unit of work (one call, or a runtime's step).
        self.retry_budget = budget if budget is not None else RetryBudget(self.retry.max_retries)
        self.tool_call_content = options.get("tool_call_content")
        self.max_response_bytes = options.get("max_response_bytes", MAX_RESPONSE_BYTES)
        self.wall_clock = options.get("wall_clock", time.time)
        self.where = where
        random = options.get("random", _random.random)
        self.retrier = Retrier(self.retry, random, where, options.get("on_retry"))

    def body(self, request: ChatRequest) -> dict[str, Any]:
        """The JSON body of ``request`` (``openai_wire.build_request_body``)."""
        return build_request_body(self.model, request, tool_call_content=self.tool_call_content)

    def received(self) -> Body:
        """An empty body under this client's cap."""
        return Body(self.max_response_bytes)

    def read(self, status: int, headers: Iterable[tuple[Any, Any]], body: bytes) -> ChatResponse:
        """The chat completion of a reply (its status, header pairs and
        body), or the typed error of its status."""
        named = {str(name).lower(): str(value) for name, value in headers}
        return read_reply(status, named, body, self.wall_clock())

    def timeout(self, detail: str = "") -> ModelTimeoutError:
        """The error of an attempt that missed its deadline."""
        return ModelTimeoutError(self.timeout_s, f"POST {self.where}{detail}")

    def complete(
        self,
        budget: RetryBudget,
        monotonic: Callable[[], float],
        attempt: Callable[[], ChatResponse],
        sleep: Callable[[float], None],
    ) -> ChatResponse:
        """One call of a synchronous client: ``attempt`` until it answers or
        ``openai_policy`` gives up, ``sleep`` between attempts, retries out of
        ``budget``; the reply carries the call's latency on ``monotonic``."""
        call = _Call(self, budget, monotonic)
        with budget.step():
            while True:
                call.begin()
                try:
                    return call.answered(attempt())
                except ModelError as err:
                    sleep(call.failed(err))

    async def complete_async(
        self,
        budget: RetryBudget,
        monotonic: Callable[[], float],
        attempt: Callable[[], Awaitable[ChatResponse]],
        sleep: Callable[[float], Awaitable[None]],
    ) -> ChatResponse:
        """``complete`` for an asyncio client (the wait is not made inside
        the handler of the failure)."""
        call = _Call(self, budget, monotonic)
        with budget.step():
            while True:
                call.begin()
                try:
                    return call.answered(await attempt())
                except ModelError as err:
                    delay = call.failed(err)
                await sleep(delay)


class _Call:
    """The clock, budget and attempts of one call, and what each attempt ends
    with: logged (``openai_policy.log_attempt``, numbered within this call,
    whatever else spent from ``budget`` before it), then answered or retried."""

    def __init__(self, s: Settings, budget: RetryBudget, monotonic: Callable[[], float]) -> None:
        self._s = s
        self._budget = budget
        self._monotonic = monotonic
        self._called = monotonic()
        self._tried = self._called
        self._attempts = 0

    def begin(self) -> None:
        """Start the call's next attempt."""
        self._attempts += 1
        self._tried = self._monotonic()

    def _log(self, outcome: ChatResponse | ModelError) -> None:
        log_attempt(self._s.where, self._attempts, self._monotonic() - self._tried, outcome)

    def answered(self, response: ChatResponse) -> ChatResponse:
        """``response`` with the call's latency (every attempt and wait)."""
        self._log(response)
        return replace(response, latency_ms=elapsed_ms(self._called, self._monotonic()))

    def failed(self, err: ModelError) -> float:
        """The wait before the next attempt; raises what ends the call."""
        self._log(err)
        return self._s.retrier.after(err, self._budget, self._attempts)


class Body:
    """A reply's body as its pieces arrive; raises ``ModelBadResponseError``
    once it grows past ``cap`` bytes."""

    def __init__(self, cap: int) -> None:
        self._cap = cap
        self._chunks: list[bytes] = []
        self._size = 0

    def add(self, chunk: bytes) -> None:
        """Keep ``chunk``."""
        self._size += len(chunk)
        if self._size > self._cap:
            raise ModelBadResponseError(f"response body exceeds {self._cap} bytes", excerpt(self.whole()))
        self._chunks.append(chunk)

    def whole(self) -> bytes:
        """What has arrived, whole."""
        return b"".join(self._chunks)

    def read(self, chunks: Iterable[bytes], monotonic: Callable[[], float], deadline: float, late: ModelError) -> bytes:
        """Every piece of ``chunks``; raises ``late`` when a piece arrives
        after ``deadline`` (on ``monotonic``)."""
        for chunk in chunks:
            self.add(chunk)
            if monotonic() >= deadline:
                raise late
        return self.whole()

    async def read_async(self, chunks: AsyncIterable[bytes]) -> bytes:
        """Every piece of ``chunks`` (the deadline is the caller's ``asyncio.timeout``)."""
        async for chunk in chunks:
            self.add(chunk)
        return self.whole()


def cut_off(where: str, got: object, announced: str | None, err: Exception) -> ModelUnreachableError:
    """The error of a body the connection closed before its end, after
    ``got`` of ``announced`` (``Content-Length``, when sent) bytes."""
    of = f" of {announced}" if announced is not None else ""
    return ModelUnreachableError(f"POST {where}: the connection closed after {got}{of} body bytes ({err})")


class SettingsView:
    """A client's settings as its read-only attributes."""

    _s: Settings

    model = Delegated[str]("_s", doc="The model name sent with each request.")
    timeout_s = Delegated[float]("_s", doc="The deadline of one attempt, in seconds.")
    retry = Delegated[RetryPolicy]("_s", doc="The retry policy.")
    retry_budget = Delegated[RetryBudget]("_s", doc="The retries of one unit of work (one call, or a runtime's step).")
