"""The async stores' own behaviour beyond the contract suite (which runs
against each of them in test_contract): cancellation, following on the loop,
opening by address, and running on the loop without threads."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from planfold.adapters.store.aio import AsyncLogStore, AsyncSharedStore, open_async_store
from planfold.adapters.store.aio_memory import AsyncMemoryStore
from planfold.adapters.store.base import InvalidRequestError, StoreClosedError
from planfold.adapters.store.contract_logs import batch_after

Opener = Callable[[Path], Awaitable[AsyncLogStore]]


async def _memory(_: Path) -> AsyncLogStore:
    return AsyncMemoryStore()


OPENERS: list[Opener] = [_memory]
OPENER_IDS = ["memory"]


@pytest.fixture(params=OPENERS, ids=OPENER_IDS)
def opener(request: pytest.FixtureRequest) -> Opener:
    opener: Opener = request.param
    return opener


def test_every_async_store_is_an_async_shared_store() -> None:
    assert isinstance(AsyncMemoryStore(), AsyncSharedStore)


@pytest.mark.parametrize("steps", range(6))
def test_a_cancelled_append_is_in_the_log_or_not_and_a_later_read_tells_which(
    opener: Opener, tmp_path: Path, steps: int
) -> None:
    async def scenario() -> None:
        store = await opener(tmp_path / "store.db")
        async with store:
            await store.append("s", 0, batch_after(0, 2))
            events = batch_after(2, 3)
            task = asyncio.create_task(store.append("s", 2, events, "k"))
            for _ in range(steps):
                await asyncio.sleep(0)
            task.cancel()
            try:
                await task
                landed = True
            except asyncio.CancelledError:
                landed = False
            head = await store.head("s")
            assert head in (2, 5)
            if landed:
                assert head == 5
            assert (await store.audit("s")).ok
            again = await store.append("s", 2, events, "k")
            assert again.replayed == (head == 5)
            assert await store.read("s") == tuple(batch_after(0, 5))

    asyncio.run(scenario())


def test_a_follower_on_the_loop_sees_what_another_task_appends(opener: Opener, tmp_path: Path) -> None:
    async def scenario() -> None:
        store = await opener(tmp_path / "store.db")
        async with store:
            await store.append("s", 0, batch_after(0, 1))

            async def write() -> None:
                for head in range(1, 4):
                    await asyncio.sleep(0.01)
                    await store.append("s", head, batch_after(head, 1))

            writer = asyncio.create_task(write())
            follower: AsyncIterator[object] = store.follow("s", 0, timeout=10)
            seen = []
            async for event in follower:
                seen.append(event)
                if len(seen) == 4:
                    break
            await writer
            assert tuple(seen) == tuple(batch_after(0, 4))
            assert [e async for e in store.follow("s", 4, timeout=0.01)] == []

    asyncio.run(scenario())


def test_a_closed_async_store_refuses_with_store_closed(opener: Opener, tmp_path: Path) -> None:
    async def scenario() -> None:
        store = await opener(tmp_path / "store.db")
        await store.close()
        await store.close()
        with pytest.raises(StoreClosedError):
            await store.append("s", 0, batch_after(0, 1))
        with pytest.raises(StoreClosedError):
            await store.head("s")

    asyncio.run(scenario())


def test_the_memory_store_runs_on_the_loop_without_a_thread() -> None:
    async def scenario() -> None:
        before = threading.active_count()
        store = await open_async_store(":memory:")
        assert isinstance(store, AsyncMemoryStore)
        for head in range(20):
            await store.append("s", head, batch_after(head, 1))
        assert await store.head("s") == 20
        assert [e async for e in store.follow("s", 18, timeout=0)] == list(batch_after(18, 2))
        assert threading.active_count() == before
        await store.close()

    asyncio.run(scenario())


def test_a_bad_request_is_refused_before_it_leaves_the_loop(opener: Opener, tmp_path: Path) -> None:
    async def scenario() -> None:
        store = await opener(tmp_path / "store.db")
        async with store:
            with pytest.raises(InvalidRequestError):
                await store.append("", 0, batch_after(0, 1))
            with pytest.raises(InvalidRequestError):
                store.follow("s", 0, timeout=-1)
            assert await store.session_ids() == ()

    asyncio.run(scenario())
