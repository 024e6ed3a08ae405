"""A user's own ``openai`` client as the runtime's model port: a whole turn
through ``AsyncRuntime`` on an ``openai.AsyncOpenAI`` (and through ``Runtime``
on an ``openai.OpenAI``) pointed at the loopback chat server, with what each
call cost recorded on its assistant message."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import openai
import pytest

from planfold.adapters.llm.openai_sdk import AsyncOpenAISDKClient, OpenAISDKClient
from planfold.adapters.runtime.aio import AsyncRuntime
from planfold.adapters.runtime.machine import TurnReport
from planfold.adapters.runtime.tool_runner import ToolRunner
from planfold.adapters.runtime.toolset import default_registry, open_runtime
from planfold.adapters.runtime.workspace import Workspace
from planfold.adapters.store.memory import MemoryStore
from planfold.kernel.log import ASSISTANT_MESSAGE, TOOL_RESULT, Event, ModelUsage, read_assistant_message
from planfold.kernel.session import fold_session
from tests.chat_server import Answer, ChatServer, completion, tool_call_json
from tests.runtime_helpers import FILES, ticking

READ = {
    "prompt_tokens": 900,
    "completion_tokens": 20,
    "total_tokens": 920,
    "prompt_tokens_details": {"cached_tokens": 768},
}
ANSWER = {"prompt_tokens": 960, "completion_tokens": 14, "total_tokens": 974}


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as running:
        running.plan(
            Answer(body=completion(None, [tool_call_json("call_1", "read_file", '{"path": "README.md"}')], usage=READ)),
            Answer(body=completion("README.md is the demo's readme.", usage=ANSWER)),
        )
        yield running


def _check_the_turn(server: ChatServer, report: object, events: tuple[Event, ...]) -> None:
    assert isinstance(report, TurnReport) and report.ended_by == "reply"
    assert report.reply == "README.md is the demo's readme."
    assert fold_session(events).turns.turn == 1
    [result] = [e for e in events if e.kind == TOOL_RESULT]
    assert result.payload["ok"] is True and "# demo" in str(result.payload["output"])
    usages = [read_assistant_message(e.payload).usage for e in events if e.kind == ASSISTANT_MESSAGE]
    assert all(isinstance(u, ModelUsage) and u.latency_ms is not None and u.latency_ms >= 0 for u in usages)
    tokens = [(u.prompt_tokens, u.completion_tokens, u.cached_tokens) for u in usages if u is not None]
    assert tokens == [(900, 20, 768), (960, 14, None)]
    first, second = server.received
    # the user's client carried the requests: its key and its own headers
    assert first.headers["authorization"] == "Bearer sk-user" and first.headers["x-team"] == "agents"
    assert first.json()["model"] == "test-model" and second.json()["messages"][-1]["role"] == "tool"
    assert server.unplanned == 0


def test_a_users_async_openai_client_runs_a_whole_turn_through_the_asyncio_runtime(server: ChatServer) -> None:
    async def turn() -> tuple[object, tuple[Event, ...], int]:
        user = openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-user", default_headers={"X-Team": "agents"})
        store = MemoryStore()
        workspace = Workspace(dict(FILES))
        tools = ToolRunner(default_registry(), executors=workspace.executors())
        model = AsyncOpenAISDKClient(user, "test-model", timeout_s=10)
        run = await asyncio.to_thread(AsyncRuntime, store, "s1", model, tools, None, clock=ticking())
        report = await run.submit("What is README.md?")
        await user.close()
        return report, store.read("s1"), user.max_retries

    report, events, retries = asyncio.run(turn())
    _check_the_turn(server, report, events)
    assert retries == openai.DEFAULT_MAX_RETRIES  # the user's client is left as it was


def test_a_users_openai_client_runs_a_whole_turn_through_the_runtime(server: ChatServer) -> None:
    with openai.OpenAI(base_url=server.base_url, api_key="sk-user", default_headers={"X-Team": "agents"}) as user:
        model = OpenAISDKClient(user, "test-model", timeout_s=10)
        store = MemoryStore()
        session = open_runtime(store, "s1", model, None, Workspace(dict(FILES)), clock=ticking())
        report = session.runtime.submit("What is README.md?")
        _check_the_turn(server, report, store.read("s1"))
