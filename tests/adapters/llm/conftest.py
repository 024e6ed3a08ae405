"""``make``: the model client tests run once on ``OpenAIClient`` and once on
``AsyncOpenAIClient``. The fixture builds a client of its run's kind from the
same options (a recording ``sleep`` is wrapped in a coroutine for the asyncio
one) and hands it back behind ``Blocking``, which a test calls as if it were
synchronous: the asyncio client runs on one event loop for the whole test, so
its pooled connections stay on the loop that opened them. Every client is
closed when the test ends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.adapters.llm.clients import Make, Maker


@pytest.fixture(params=["sync", "async"])
def make(request: pytest.FixtureRequest) -> Iterator[Make]:
    maker = Maker(request.param)
    try:
        yield maker
    finally:
        maker.close()
