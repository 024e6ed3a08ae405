"""``make``: the model client tests run once on each kind of client:
``OpenAIClient``, ``AsyncOpenAIClient`` and the adapters of a user's
``openai.OpenAI`` and ``openai.AsyncOpenAI``; ``make_httpx`` on planfold's
own two only, for what only they do (the name lookup, proxies from the
environment, the URL checks, keeping connections); ``make_whole_deadline``
on the kinds whose deadline covers the whole attempt. The fixture builds a client of its run's kind from the
same options (a recording ``sleep`` is wrapped in a coroutine for the asyncio
one) and hands it back behind ``Blocking``, which a test calls as if it were
synchronous: the asyncio client runs on one event loop for the whole test, so
its pooled connections stay on the loop that opened them. Every client is
closed when the test ends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.adapters.llm.clients import HTTPX_KINDS, SDK_KINDS, WHOLE_DEADLINE_KINDS, Make, Maker


def _maker(request: pytest.FixtureRequest) -> Iterator[Make]:
    maker = Maker(request.param)
    try:
        yield maker
    finally:
        maker.close()


@pytest.fixture(params=[*HTTPX_KINDS, *SDK_KINDS])
def make(request: pytest.FixtureRequest) -> Iterator[Make]:
    yield from _maker(request)


@pytest.fixture(params=HTTPX_KINDS)
def make_httpx(request: pytest.FixtureRequest) -> Iterator[Make]:
    yield from _maker(request)


@pytest.fixture(params=WHOLE_DEADLINE_KINDS)
def make_whole_deadline(request: pytest.FixtureRequest) -> Iterator[Make]:
    yield from _maker(request)
