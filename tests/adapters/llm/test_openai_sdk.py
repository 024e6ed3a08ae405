"""The adapters of a user's ``openai`` client: what they take, and what they
leave alone. (The hostile-server suite in ``test_openai_client`` runs against
them as against planfold's own clients.)"""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from planfold.adapters.llm.model import (
    AsyncModelClient,
    ChatRequest,
    ModelBadRequestError,
    ModelClient,
    ModelHTTPError,
    ModelRetriesExhaustedError,
    UserMessage,
)
from planfold.adapters.llm.openai import RetryPolicy
from planfold.adapters.llm.openai_sdk import AsyncOpenAISDKClient, OpenAISDKClient
from tests.chat_server import Answer, ChatServer, completion

REQUEST = ChatRequest((UserMessage("hi"),))


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as running:
        yield running


def test_each_adapter_is_the_model_port_of_its_kind() -> None:
    with openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k") as sync:
        assert isinstance(OpenAISDKClient(sync, "m"), ModelClient)
    asynchronous = openai.AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="k")
    assert isinstance(AsyncOpenAISDKClient(asynchronous, "m"), AsyncModelClient)
    asyncio.run(asynchronous.close())


def test_a_client_of_the_other_kind_or_none_at_all_is_refused_with_the_adapter_to_use() -> None:
    sync = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k")
    asynchronous = openai.AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="k")
    with pytest.raises(ModelBadRequestError, match=r"got AsyncOpenAI \(use AsyncOpenAISDKClient\)"):
        OpenAISDKClient(asynchronous, "m")  # type: ignore[arg-type]
    with pytest.raises(ModelBadRequestError, match=r"got OpenAI \(use OpenAISDKClient\)"):
        AsyncOpenAISDKClient(sync, "m")  # type: ignore[arg-type]
    with pytest.raises(ModelBadRequestError, match=r"wraps an openai\.OpenAI client, got str"):
        OpenAISDKClient("http://127.0.0.1:9/v1", "m")  # type: ignore[arg-type]
    sync.close()
    asyncio.run(asynchronous.close())


@pytest.mark.parametrize(
    ("model", "options", "problem"),
    [
        ("", {}, "the model must be a non-empty name"),
    ],
)
def test_bad_options_are_refused_when_the_adapter_is_built(model: str, options: dict[str, Any], problem: str) -> None:
    with openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k") as user:
        with pytest.raises(ModelBadRequestError, match=problem) as caught:
            OpenAISDKClient(user, model, **options)
        assert caught.value.code == "model-bad-request"


def test_an_option_of_planfolds_own_clients_only_is_an_unexpected_keyword() -> None:
    unexpected = r"OpenAISDKClient\(\) got unexpected keyword arguments: resolve"
    user = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k")
    with user, pytest.raises(TypeError, match=unexpected):
        OpenAISDKClient(user, "m", resolve=print)  # type: ignore[call-arg]


def test_the_sdks_own_retries_are_off_for_planfolds_calls_and_the_users_client_is_left_as_it_was(
    server: ChatServer,
) -> None:
    server.plan(Answer(500, b"boom"), Answer(body=completion("the user's own call")))
    with openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=5, timeout=42.0) as user:
        adapter = OpenAISDKClient(user, "m", retry=RetryPolicy(max_retries=0), timeout_s=3)
        with pytest.raises(ModelRetriesExhaustedError) as caught:
            adapter.complete(REQUEST)
        assert isinstance(caught.value.last, ModelHTTPError) and caught.value.last.status == 500
        assert len(server.received) == 1  # planfold's budget was the only one: no SDK retry
        assert (user.max_retries, user.timeout) == (5, 42.0)
        # the client is not closed: the user's own calls go on working
        own = user.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert own.choices[0].message.content == "the user's own call"


def test_a_status_the_sdk_raises_keeps_the_servers_wait_and_body(server: ChatServer) -> None:
    server.plan(Answer(429, b'{"error": {"message": "quota"}}', {"Retry-After": "120"}))
    with openai.OpenAI(base_url=server.base_url, api_key="k") as user, pytest.raises(ModelHTTPError) as caught:
        OpenAISDKClient(user, "m", retry=RetryPolicy(max_retries=2, max_retry_after=60)).complete(REQUEST)
    err = caught.value
    assert (err.code, err.status, err.retry_after) == ("model-rate-limited", 429, 120.0)
    assert "quota" in err.body_excerpt and len(server.received) == 1


def test_the_adapter_shows_its_settings() -> None:
    with openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k") as user:
        adapter = OpenAISDKClient(user, "gpt-test", timeout_s=7, retry=RetryPolicy(max_retries=4))
        assert (adapter.model, adapter.timeout_s, adapter.retry.max_retries) == ("gpt-test", 7.0, 4)
        assert adapter.retry_budget.retries == 4 and adapter.client is user


def test_without_the_openai_package_the_module_says_which_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)  # as if it were not installed
    monkeypatch.delitem(sys.modules, "planfold.adapters.llm.openai_sdk")
    with pytest.raises(ImportError, match=r"pip install 'planfold\[openai\]'"):
        importlib.import_module("planfold.adapters.llm.openai_sdk")
