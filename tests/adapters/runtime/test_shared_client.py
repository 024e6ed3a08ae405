"""One model client shared by many sessions: each turn spends its own retry
budget, and the asyncio runtime over an async store never hops to a thread.

The server fails the first attempt of every step (503) and answers the
second: with one retry per step, every session's turn completes however the
sessions' requests interleave, because no session spends another's retries.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import openai
import pytest

from planfold.adapters.llm.model import AsyncModelClient, ModelClient
from planfold.adapters.llm.openai import AsyncOpenAIClient, OpenAIClient, RetryPolicy
from planfold.adapters.llm.openai_sdk import AsyncOpenAISDKClient, OpenAISDKClient
from planfold.adapters.runtime.aio import AsyncRuntime
from planfold.adapters.runtime.loop import Runtime
from planfold.adapters.runtime.machine import TurnReport
from planfold.adapters.runtime.tool_runner import ToolRunner
from planfold.adapters.runtime.toolset import default_registry
from planfold.adapters.runtime.workspace import Workspace
from planfold.adapters.store.aio_memory import AsyncMemoryStore
from planfold.adapters.store.memory import MemoryStore
from tests.chat_server import completion
from tests.runtime_helpers import FILES, ticking

SESSIONS = 20
RETRY_ONCE = RetryPolicy(max_retries=1, initial_delay=0.0, jitter=0.0)


class _OncePerStep:
    """A loopback chat server that answers 503 to the first attempt of each
    request (told apart by its last message) and a final reply to the next."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}
        self.lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body: dict[str, Any] = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                key = json.dumps(body["messages"][-1], sort_keys=True)
                with owner.lock:
                    owner.seen[key] = owner.seen.get(key, 0) + 1
                    first = owner.seen[key] == 1
                answer = json.dumps(completion("done")).encode()
                status, payload = (503, b'{"error": "busy"}') if first else (200, answer)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        class Server(ThreadingHTTPServer):
            request_queue_size = 128  # every session connects at once

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[_OncePerStep]:
    running = _OncePerStep()
    try:
        yield running
    finally:
        running.close()


def _tools() -> ToolRunner:
    return ToolRunner(default_registry(), executors=Workspace(dict(FILES)).executors())


def _own_client(base_url: str) -> tuple[ModelClient, Callable[[], None]]:
    client = OpenAIClient(base_url, "test-model", retry=RETRY_ONCE, timeout_s=10)
    return client, client.close


def _sdk_client(base_url: str) -> tuple[ModelClient, Callable[[], None]]:
    users = openai.OpenAI(base_url=base_url, api_key="k")
    return OpenAISDKClient(users, "test-model", retry=RETRY_ONCE, timeout_s=10), users.close


def _own_async_client(base_url: str) -> AsyncModelClient:
    return AsyncOpenAIClient(base_url, "test-model", retry=RETRY_ONCE, timeout_s=10)


def _sdk_async_client(base_url: str) -> AsyncModelClient:
    return AsyncOpenAISDKClient(
        openai.AsyncOpenAI(base_url=base_url, api_key="k"), "test-model", retry=RETRY_ONCE, timeout_s=10
    )


#: The clients a user shares between sessions: planfold's own and the openai SDK's, wrapped.
SYNC_CLIENTS = {"OpenAIClient": _own_client, "OpenAISDKClient": _sdk_client}
ASYNC_CLIENTS = {"AsyncOpenAIClient": _own_async_client, "AsyncOpenAISDKClient": _sdk_async_client}


@pytest.mark.parametrize("make_client", SYNC_CLIENTS.values(), ids=SYNC_CLIENTS.keys())
def test_twenty_threads_sharing_one_client_each_complete_their_turn(
    server: _OncePerStep, make_client: Callable[[str], tuple[ModelClient, Callable[[], None]]]
) -> None:
    client, close = make_client(server.base_url)
    store = MemoryStore()
    reports: list[TurnReport] = []
    lock = threading.Lock()

    def session(number: int) -> None:
        runtime = Runtime(store, f"s{number}", client, _tools(), clock=ticking())
        report = runtime.run_turn(f"hello from session {number}")
        with lock:
            reports.append(report)

    threads = [threading.Thread(target=session, args=(n,)) for n in range(SESSIONS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    close()
    assert len(reports) == SESSIONS
    assert all(r.ended_by == "reply" and r.reply == "done" and r.error is None for r in reports)
    assert all(store.audit(f"s{n}").ok for n in range(SESSIONS))


@pytest.mark.parametrize("make_client", ASYNC_CLIENTS.values(), ids=ASYNC_CLIENTS.keys())
def test_twenty_asyncio_sessions_sharing_one_client_each_complete_their_turn_without_a_thread_hop(
    server: _OncePerStep, monkeypatch: pytest.MonkeyPatch, make_client: Callable[[str], AsyncModelClient]
) -> None:
    hop = asyncio.to_thread

    def no_hop(function: Callable[..., object], /, *args: object, **kwargs: object) -> Awaitable[object]:
        # The openai SDK's own client may use a thread for its own work; planfold's code may not.
        if sys._getframe(1).f_globals.get("__name__", "").startswith("planfold."):
            raise AssertionError("the asyncio runtime over an async store hopped to a thread")
        return hop(function, *args, **kwargs)

    async def scenario() -> list[TurnReport]:
        client = make_client(server.base_url)
        store = AsyncMemoryStore()
        runtimes = [
            await AsyncRuntime.open(store, f"s{n}", client, _tools(), clock=ticking()) for n in range(SESSIONS)
        ]
        monkeypatch.setattr(asyncio, "to_thread", no_hop)
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(r.run_turn(f"hello from session {n}")) for n, r in enumerate(runtimes)]
        monkeypatch.undo()
        for n in range(SESSIONS):
            assert (await store.audit(f"s{n}")).ok
        await store.close()
        return [task.result() for task in tasks]

    reports = asyncio.run(scenario())
    assert len(reports) == SESSIONS
    assert [r for r in reports if not (r.ended_by == "reply" and r.reply == "done" and r.error is None)] == []
    # each session's first attempt failed once and its step went on within its own budget
    assert all(count == 2 for count in server.seen.values()) and len(server.seen) == SESSIONS

