"""Model clients of both kinds behind one synchronous face, for tests that
run once on ``OpenAIClient`` and once on ``AsyncOpenAIClient`` (the ``make``
fixture of this package's conftest)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Literal, Protocol

from planfold.adapters.llm.model import ChatRequest, ChatResponse, RetryBudget
from planfold.adapters.llm.openai import AsyncOpenAIClient, OpenAIClient

Kind = Literal["sync", "async"]


class Blocking:
    """A client of either kind, called synchronously."""

    def __init__(self, client: OpenAIClient | AsyncOpenAIClient, runner: asyncio.Runner) -> None:
        self.client = client
        self._runner = runner

    def complete(self, request: ChatRequest) -> ChatResponse:
        if isinstance(self.client, AsyncOpenAIClient):
            return self._runner.run(self.client.complete(request))
        return self.client.complete(request)

    @property
    def retry_budget(self) -> RetryBudget:
        return self.client.retry_budget

    @property
    def url(self) -> str:
        return self.client.url

    def close(self) -> None:
        if isinstance(self.client, AsyncOpenAIClient):
            self._runner.run(self.client.aclose())
        else:
            self.client.close()


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
        client: OpenAIClient | AsyncOpenAIClient
        if self.kind == "async":
            if "sleep" in options:
                options["sleep"] = _in_a_coroutine(options["sleep"])
            client = AsyncOpenAIClient(base_url, model, **options)
        else:
            client = OpenAIClient(base_url, model, **options)
        made = Blocking(client, self.runner)
        self.made.append(made)
        return made

    def close(self) -> None:
        for made in self.made:
            made.close()
        self.runner.close()
