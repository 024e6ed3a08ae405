"""Model clients of every kind behind one synchronous face, for tests that
run once on each: planfold's ``OpenAIClient`` and ``AsyncOpenAIClient``, and
the adapters of a user's own ``openai.OpenAI`` and ``openai.AsyncOpenAI``
(``OpenAISDKClient``, ``AsyncOpenAISDKClient``), built from the same options
(the ``make`` fixtures of this package's conftest).

For the SDK kinds, ``base_url`` and ``api_key`` configure the user's client
(a key left out is a placeholder: the SDK always sends one); every other
option goes to planfold's adapter."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Literal, Protocol, TypeVar

import openai

from planfold.adapters.llm.model import ChatRequest, ChatResponse, RetryBudget
from planfold.adapters.llm.openai import AsyncOpenAIClient, OpenAIClient
from planfold.adapters.llm.openai_sdk import AsyncOpenAISDKClient, OpenAISDKClient

Kind = Literal["sync", "async", "openai-sync", "openai-async"]
#: planfold's own httpx clients.
HTTPX_KINDS: tuple[Kind, ...] = ("sync", "async")
#: The adapters of a user's openai SDK client.
SDK_KINDS: tuple[Kind, ...] = ("openai-sync", "openai-async")
#: The kinds whose deadline covers the whole attempt whatever the server does
#: (the synchronous SDK adapter's is the SDK's own per-operation timeout).
WHOLE_DEADLINE_KINDS: tuple[Kind, ...] = ("sync", "async", "openai-async")

AnyClient = OpenAIClient | AsyncOpenAIClient | OpenAISDKClient | AsyncOpenAISDKClient
_ASYNC = (AsyncOpenAIClient, AsyncOpenAISDKClient)
T = TypeVar("T")


def _spending(session: RetryBudget | None) -> AbstractContextManager[object]:
    return nullcontext() if session is None else session.spending()


async def _spending_async(session: RetryBudget | None, call: Awaitable[T]) -> T:
    with _spending(session):
        return await call


class Blocking:
    """A client of either kind, called synchronously."""

    def __init__(self, client: AnyClient, runner: asyncio.Runner) -> None:
        self.client = client
        self._runner = runner

    def complete(self, request: ChatRequest, *, session: RetryBudget | None = None) -> ChatResponse:
        """The client's reply to ``request``; a ``session`` budget is bound
        (``RetryBudget.spending``) around the call, as a runtime binds its own."""
        if isinstance(self.client, _ASYNC):
            return self._runner.run(_spending_async(session, self.client.complete(request)))
        with _spending(session):
            return self.client.complete(request)

    @property
    def retry_budget(self) -> RetryBudget:
        return self.client.retry_budget

    @property
    def url(self) -> str:
        if isinstance(self.client, OpenAISDKClient | AsyncOpenAISDKClient):
            return str(self.client.client.base_url).rstrip("/") + "/chat/completions"
        return self.client.url

    def close(self) -> None:
        client = self.client
        if isinstance(client, AsyncOpenAIClient):
            self._runner.run(client.aclose())
        elif isinstance(client, AsyncOpenAISDKClient):
            self._runner.run(client.client.close())
        elif isinstance(client, OpenAISDKClient):
            client.client.close()
        else:
            client.close()


class Make(Protocol):
    kind: Kind

    def __call__(self, base_url: str | None, model: str, **options: Any) -> Blocking: ...


def _in_a_coroutine(sleep: Callable[[float], object]) -> Callable[[float], Any]:
    async def recorded(delay: float) -> None:
        sleep(delay)

    return recorded


class Maker:
    def __init__(self, kind: Kind) -> None:
        self.kind: Kind = kind
        self.runner = asyncio.Runner()
        self.made: list[Blocking] = []

    def __call__(self, base_url: str | None, model: str, **options: Any) -> Blocking:
        client: AnyClient
        if self.kind in ("async", "openai-async") and "sleep" in options:
            options["sleep"] = _in_a_coroutine(options["sleep"])
        if self.kind in SDK_KINDS:
            key = options.pop("api_key", None) or "sk-placeholder"
        if self.kind == "async":
            client = AsyncOpenAIClient(base_url, model, **options)
        elif self.kind == "openai-sync":
            client = OpenAISDKClient(openai.OpenAI(base_url=base_url, api_key=key), model, **options)
        elif self.kind == "openai-async":
            client = AsyncOpenAISDKClient(openai.AsyncOpenAI(base_url=base_url, api_key=key), model, **options)
        else:
            client = OpenAIClient(base_url, model, **options)
        made = Blocking(client, self.runner)
        self.made.append(made)
        return made

    def close(self) -> None:
        for made in self.made:
            made.close()
        self.runner.close()
