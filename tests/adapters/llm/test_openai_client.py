"""End to end: the OpenAI-compatible client against a real loopback HTTP server.

Every test starts ``ChatServer`` (127.0.0.1, ephemeral port, in a thread),
plans its answers, and asserts on what the client returned or raised, how
often it asked, how long it chose to wait, and what the server received.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from collections.abc import Iterator
from email.utils import formatdate
from pathlib import Path
from typing import Any

import pytest

import planfold.adapters.llm
from planfold.adapters.llm.model import (
    AssistantMessage,
    AsyncModelClient,
    ChatRequest,
    ModelBadRequestError,
    ModelBadResponseError,
    ModelClient,
    ModelError,
    ModelHTTPError,
    ModelRateLimitedError,
    ModelRetriesExhaustedError,
    ModelTimeoutError,
    ModelUnreachableError,
    RetryBudget,
    SystemMessage,
    ToolCall,
    ToolDefinition,
    ToolMessage,
    UserMessage,
)
from planfold.adapters.llm.openai import AsyncOpenAIClient, OpenAIClient, RetryPolicy
from tests.adapters.llm.clients import Blocking, Make
from tests.chat_server import Answer, ChatServer, completion, tool_call_json

READ_FILE = ToolDefinition(
    "read_file",
    "Read a file of the workspace.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
REQUEST = ChatRequest(
    (SystemMessage("You are planfold's test model."), UserMessage("Read README.md")),
    (READ_FILE,),
)
FAST = RetryPolicy(max_retries=3, initial_delay=0.5, multiplier=2.0, max_delay=8.0, jitter=0.25)


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as running:
        yield running


def _unused_port() -> int:
    """A loopback port that nobody listens on (bound for a moment, then let go)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def client_for(
    make: Make, server: ChatServer, sleeps: list[float], *, policy: RetryPolicy = FAST, **options: Any
) -> Blocking:
    """A client that records its waits instead of sleeping, with jitter fixed at 0.5."""
    return make(
        server.base_url,
        "test-model",
        api_key="sk-test",
        retry=policy,
        sleep=sleeps.append,
        random=lambda: 0.5,
        **options,
    )


def test_tool_call_round_trip(server: ChatServer, make: Make) -> None:
    server.plan(
        Answer(
            body=completion(
                None,
                [tool_call_json("call_1", "read_file", '{"path": "README.md"}')],
                usage={"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19},
            )
        ),
        Answer(body=completion("README.md says hello.")),
    )
    sleeps: list[float] = []
    client = client_for(make, server, sleeps)

    first = client.complete(REQUEST)
    assert first.text is None
    assert first.finish_reason == "tool_calls"
    assert first.usage is not None and first.usage.total_tokens == 19
    [call] = first.tool_calls
    assert (call.id, call.name, call.arguments) == ("call_1", "read_file", {"path": "README.md"})
    assert call.arguments_json == '{"path": "README.md"}'

    follow_up = ChatRequest((*REQUEST.messages, first.as_message(), ToolMessage("call_1", "hello")), REQUEST.tools)
    second = client.complete(follow_up)
    assert second.text == "README.md says hello."
    assert second.tool_calls == ()
    assert sleeps == []

    one, two = server.received
    assert one.path == two.path == "/v1/chat/completions"
    assert one.headers["authorization"] == "Bearer sk-test"
    assert one.headers["content-type"] == "application/json"
    sent = one.json()
    assert sent["model"] == "test-model"
    assert sent["stream"] is False
    assert sent["messages"] == [
        {"role": "system", "content": "You are planfold's test model."},
        {"role": "user", "content": "Read README.md"},
    ]
    assert sent["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file of the workspace.",
                "parameters": READ_FILE.parameters,
            },
        }
    ]
    assistant, tool = two.json()["messages"][2:]
    assert assistant == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "README.md"}'},
            }
        ],
    }
    assert tool == {"role": "tool", "tool_call_id": "call_1", "content": "hello"}
    assert server.unplanned == 0


def test_lenient_server_dialects(server: ChatServer, make: Make) -> None:
    # Missing usage, arguments as an object, no id, no type, no finish_reason,
    # content given as text parts, reasoning_content (llama.cpp, Ollama, vLLM).
    body: dict[str, Any] = {
        "choices": [
            {
                "message": {
                    "content": [{"type": "text", "text": "Let me "}, {"type": "text", "text": "look."}],
                    "reasoning_content": "The user wants the README.",
                    "tool_calls": [
                        {"function": {"name": "read_file", "arguments": {"path": "a.md"}}},
                        {"function": {"name": "read_file", "arguments": "{not json"}},
                    ],
                }
            }
        ]
    }
    server.plan(Answer(body=body))
    reply = client_for(make, server, []).complete(REQUEST)
    assert reply.text == "Let me look."
    assert reply.reasoning == "The user wants the README."
    assert reply.usage is None and reply.finish_reason is None
    good, broken = reply.tool_calls
    assert (good.id, good.arguments, good.ok) == ("call-0", {"path": "a.md"}, True)
    assert (broken.id, broken.arguments, broken.ok) == ("call-1", None, False)
    assert broken.arguments_json == "{not json"
    assert broken.arguments_error is not None and "not valid JSON" in broken.arguments_error


def test_no_tools_means_no_tools_key_and_options_are_sent(server: ChatServer, make: Make) -> None:
    server.plan(Answer())
    request = ChatRequest((UserMessage("hi"),), temperature=0.2, max_tokens=64)
    client_for(make, server, []).complete(request)
    sent = server.received[0].json()
    assert "tools" not in sent
    assert (sent["temperature"], sent["max_tokens"]) == (0.2, 64)


def test_empty_content_option_for_servers_that_reject_null(server: ChatServer, make: Make) -> None:
    server.plan(Answer())
    history = AssistantMessage(None, (ToolCall.parse("c9", "read_file", "{}"),))
    request = ChatRequest((UserMessage("go"), history, ToolMessage("c9", "done")))
    client_for(make, server, [], tool_call_content="").complete(request)
    assert server.received[0].json()["messages"][1]["content"] == ""


def test_base_url_with_trailing_slash_and_query(server: ChatServer, make_httpx: Make) -> None:
    server.plan(Answer())
    client = make_httpx(server.base_url + "/?api-version=2024", "m", sleep=lambda _: None)
    client.complete(REQUEST)
    assert server.received[0].path == "/v1/chat/completions?api-version=2024"
    assert "authorization" not in server.received[0].headers


def test_429_with_retry_after_is_honoured_exactly(server: ChatServer, make: Make) -> None:
    server.plan(
        Answer(429, b'{"error": "slow down"}', {"Retry-After": "2"}),
        Answer(429, b'{"error": "slow down"}', {"retry-after-ms": "1500"}),
        Answer(body=completion("finally")),
    )
    sleeps: list[float] = []
    assert client_for(make, server, sleeps).complete(REQUEST).text == "finally"
    assert sleeps == [2.0, 1.5]
    bodies = {r.body for r in server.received}
    assert len(server.received) == 3 and len(bodies) == 1  # the same request each time


def test_429_without_retry_after_backs_off_exponentially_with_jitter(server: ChatServer, make: Make) -> None:
    server.plan(Answer(429, b"busy"), Answer(429, b"busy"), Answer(429, b"busy"), Answer())
    sleeps: list[float] = []
    client_for(make, server, sleeps).complete(REQUEST)
    # 0.5, 1.0, 2.0 each less 25% x 0.5 of jitter
    assert sleeps == [0.4375, 0.875, 1.75]
    assert len(server.received) == 4


def test_retry_after_as_http_date(server: ChatServer, make: Make) -> None:
    now = 1_700_000_000.0
    server.plan(Answer(503, b"maintenance", {"Retry-After": formatdate(now + 30, usegmt=True)}))
    server.plan(Answer())
    sleeps: list[float] = []
    client_for(make, server, sleeps, wall_clock=lambda: now).complete(REQUEST)
    assert sleeps == [30.0]


def test_500_answers_are_retried_then_succeed(server: ChatServer, make: Make) -> None:
    server.plan(Answer(500, b"boom"), Answer(502, b"bad gateway"), Answer(body=completion("up")))
    sleeps: list[float] = []
    seen: list[tuple[int, str, float]] = []
    client = client_for(make, server, sleeps, on_retry=lambda n, e, d: seen.append((n, e.code, d)))
    assert client.complete(REQUEST).text == "up"
    assert seen == [(1, "model-http-error", 0.4375), (2, "model-http-error", 0.875)]
    assert len(server.received) == 3


def test_500_until_retries_are_exhausted(server: ChatServer, make: Make) -> None:
    server.plan(*[Answer(500, b"internal error %d" % i) for i in range(4)])
    sleeps: list[float] = []
    with pytest.raises(ModelRetriesExhaustedError) as caught:
        client_for(make, server, sleeps).complete(REQUEST)
    err = caught.value
    assert (err.code, err.attempts) == ("model-retries-exhausted", 4)
    assert isinstance(err.last, ModelHTTPError)
    assert (err.last.status, err.last.body_excerpt) == (500, "internal error 3")
    assert len(server.received) == 4 and len(sleeps) == 3
    assert server.unplanned == 0


def test_429_until_retries_are_exhausted_keeps_the_rate_limit(server: ChatServer, make: Make) -> None:
    server.plan(Answer(429, b"quota", {"Retry-After": "1"}), Answer(429, b"quota", {"Retry-After": "1"}))
    sleeps: list[float] = []
    with pytest.raises(ModelRetriesExhaustedError) as caught:
        client_for(make, server, sleeps, policy=RetryPolicy(max_retries=1)).complete(REQUEST)
    assert isinstance(caught.value.last, ModelRateLimitedError)
    assert caught.value.last.retry_after == 1.0
    assert sleeps == [1.0] and len(server.received) == 2


def test_retry_after_longer_than_allowed_is_raised_at_once(server: ChatServer, make: Make) -> None:
    server.plan(Answer(429, b"come back tomorrow", {"Retry-After": "86400"}))
    sleeps: list[float] = []
    with pytest.raises(ModelRateLimitedError) as caught:
        client_for(make, server, sleeps).complete(REQUEST)
    assert (caught.value.code, caught.value.status) == ("model-rate-limited", 429)
    assert caught.value.retry_after == 86400.0
    assert sleeps == [] and len(server.received) == 1


@pytest.mark.parametrize("retries", [0, 2])
def test_a_retry_after_longer_than_allowed_spends_nothing_of_the_budget_and_raises_the_rate_limit(
    server: ChatServer, make: Make, retries: int
) -> None:
    server.plan(Answer(429, b"come back tomorrow", {"Retry-After": "86400"}))
    sleeps: list[float] = []
    client = client_for(make, server, sleeps, policy=RetryPolicy(max_retries=retries))
    with pytest.raises(ModelRateLimitedError) as caught:
        client.complete(REQUEST)
    err = caught.value
    assert (err.code, err.retry_after, err.retryable) == ("model-rate-limited", 86400.0, False)
    assert client.retry_budget.used == 0
    assert sleeps == [] and len(server.received) == 1


def test_client_errors_are_not_retried(server: ChatServer, make: Make) -> None:
    server.plan(Answer(400, b'{"error": {"message": "tools[0].function.name is invalid"}}'))
    with pytest.raises(ModelHTTPError) as caught:
        client_for(make, server, []).complete(REQUEST)
    assert caught.value.code == "model-http-error"
    assert caught.value.status == 400
    assert "tools[0].function.name is invalid" in caught.value.body_excerpt
    assert len(server.received) == 1


MALFORMED: list[tuple[bytes | dict[str, Any] | list[Any], str]] = [
    (b"<html>502 from a proxy</html>", "body is not JSON"),
    (b"", "body is not JSON"),
    (["not", "an", "object"], "body: expected an object, got an array"),
    ({"id": "x", "object": "chat.completion"}, "choices: missing"),
    ({"choices": []}, "choices: empty"),
    ({"choices": {"0": {}}}, "choices: expected an array, got an object"),
    ({"choices": ["text"]}, "choices[0]: expected an object, got a string"),
    ({"choices": [{"index": 0}]}, "choices[0].message: expected an object, got null"),
    ({"choices": [{"message": {"content": 42}}]}, "choices[0].message.content: expected a string"),
    (
        {"choices": [{"message": {"content": "x", "tool_calls": "read_file"}}]},
        "choices[0].message.tool_calls: expected an array, got a string",
    ),
    (
        {"choices": [{"message": {"tool_calls": [{"function": {"arguments": "{}"}}]}}]},
        "choices[0].message.tool_calls[0].function.name: expected a non-empty string",
    ),
    (
        {"choices": [{"message": {"content": "x"}, "finish_reason": 3}]},
        "choices[0].finish_reason: expected a string or null, got a number",
    ),
    ({"error": {"message": "model not loaded"}}, "reported an error instead of a completion"),
]


@pytest.mark.parametrize(("body", "problem"), MALFORMED)
def test_malformed_body_is_a_bad_response_and_not_retried(
    server: ChatServer, body: bytes | dict[str, Any] | list[Any], problem: str, make: Make
) -> None:
    server.plan(Answer(body=body), Answer())  # a good answer is there, and must not be used
    sleeps: list[float] = []
    with pytest.raises(ModelBadResponseError) as caught:
        client_for(make, server, sleeps).complete(REQUEST)
    assert caught.value.code == "model-bad-response"
    assert problem in caught.value.problem
    assert len(server.received) == 1 and sleeps == [] and server.pending == 1


def test_oversized_body_is_a_bad_response(server: ChatServer, make: Make) -> None:
    server.plan(Answer(body=completion("x" * 5000)))
    with pytest.raises(ModelBadResponseError, match="exceeds 1024 bytes"):
        client_for(make, server, [], max_response_bytes=1024).complete(REQUEST)


def test_a_body_that_does_not_decode_is_a_bad_response_and_not_retried(server: ChatServer, make: Make) -> None:
    server.plan(Answer(body=b"not gzip at all " * 20, headers={"Content-Encoding": "gzip"}), Answer())
    with pytest.raises(ModelBadResponseError, match=r"the body could not be decoded: .*incorrect header check"):
        client_for(make, server, []).complete(REQUEST)
    assert len(server.received) == 1 and server.pending == 1


def test_slow_answer_trips_the_timeout(server: ChatServer, make: Make) -> None:
    server.plan(Answer(delay=3.0))
    policy = RetryPolicy(max_retries=3, retry_timeouts=False)
    started = time.monotonic()
    with pytest.raises(ModelTimeoutError) as caught:
        client_for(make, server, [], policy=policy, timeout_s=0.2).complete(REQUEST)
    assert time.monotonic() - started < 2.0
    assert (caught.value.code, caught.value.timeout_s) == ("model-timeout", 0.2)
    assert len(server.received) == 1


def test_slow_answer_is_retried_when_the_policy_allows(server: ChatServer, make: Make) -> None:
    server.plan(Answer(delay=3.0), Answer(body=completion("second try")))
    sleeps: list[float] = []
    reply = client_for(make, server, sleeps, timeout_s=0.3).complete(REQUEST)
    assert reply.text == "second try"
    assert len(server.received) == 2 and sleeps == [0.4375]


def test_trickled_body_hits_the_whole_request_deadline(server: ChatServer, make: Make) -> None:
    # Every piece arrives well within the timeout; the whole body does not.
    server.plan(Answer(body=completion("y" * 200), trickle=0.05))
    policy = RetryPolicy(max_retries=0, retry_timeouts=False)
    started = time.monotonic()
    with pytest.raises(ModelTimeoutError):
        client_for(make, server, [], policy=policy, timeout_s=0.4).complete(REQUEST)
    assert time.monotonic() - started < 1.5


def test_dropped_connection_is_retried(server: ChatServer, make: Make) -> None:
    server.plan(Answer(drop=True), Answer(body=completion("reconnected")))
    sleeps: list[float] = []
    assert client_for(make, server, sleeps).complete(REQUEST).text == "reconnected"
    assert len(server.received) == 2 and len(sleeps) == 1


def test_nobody_listening_exhausts_retries_as_unreachable(make: Make) -> None:
    port = _unused_port()
    sleeps: list[float] = []
    client = make(f"http://127.0.0.1:{port}/v1", "m", retry=RetryPolicy(max_retries=2), sleep=sleeps.append)
    with pytest.raises(ModelRetriesExhaustedError) as caught:
        client.complete(REQUEST)
    assert isinstance(caught.value.last, ModelUnreachableError)
    assert caught.value.last.code == "model-unreachable"
    assert caught.value.attempts == 3 and len(sleeps) == 2


@pytest.mark.parametrize(
    ("base_url", "options"),
    [
        ("127.0.0.1:8000/v1", {}),
        ("ftp://example.invalid/v1", {}),
        ("http:///v1", {}),
        ("http://127.0.0.1:99999/v1", {}),
    ],
)
def test_bad_client_configuration_is_refused(base_url: str, options: dict[str, Any], make_httpx: Make) -> None:
    with pytest.raises(ModelBadRequestError) as caught:
        make_httpx(base_url, "m", **options)
    assert caught.value.code == "model-bad-request"


@pytest.mark.parametrize(
    "timeout_s",
    [
        *(0, -1.5, float("nan"), float("inf"), -float("inf"), True, False, "5", None, [5]),
        pytest.param(10**400, id="an-integer-past-every-float"),
    ],
    ids=repr,
)
def test_every_client_refuses_a_timeout_that_is_not_a_positive_finite_number_of_seconds(
    timeout_s: object, make: Make
) -> None:
    with pytest.raises(ModelBadRequestError) as caught:
        make("http://127.0.0.1:9/v1", "m", timeout_s=timeout_s)
    assert caught.value.code == "model-bad-request"
    assert str(caught.value) == f"timeout_s must be a positive number of seconds, got {timeout_s!r}"


def test_every_error_code_is_kebab_case_and_a_model_error() -> None:
    errors: list[ModelError] = [
        ModelTimeoutError(1.0),
        ModelUnreachableError("refused"),
        ModelHTTPError(500, "x"),
        ModelRateLimitedError("x", None),
        ModelBadResponseError("x"),
        ModelRetriesExhaustedError(2, ModelUnreachableError("refused")),
        ModelBadRequestError("x"),
    ]
    codes = [e.code for e in errors]
    assert codes == [
        "model-timeout",
        "model-unreachable",
        "model-http-error",
        "model-rate-limited",
        "model-bad-response",
        "model-retries-exhausted",
        "model-bad-request",
    ]


# --- one deadline per attempt, against servers that misbehave ----------------

#: The timeout of the deadline tests: small, so that they stay quick.
T = 0.5

#: Servers that a deadline of every kind cuts off: the SDK's own timeout
#: ends a silent wait, and each adapter checks the deadline between pieces of
#: the body.
SLOW = {
    "silent": Answer(delay=3.0),
    "trickled body": Answer(body=completion("y" * 400), trickle=0.05),
}
#: Servers that only a deadline over the whole attempt cuts off: each byte of
#: the head arrives within any per-operation timeout.
DRIBBLING = {
    "dribbled headers": Answer(dribble=0.05),
    "repeated 100 Continue": Answer(continues=200, pause=0.02),
}


def _cut_off_at_the_deadline(server: ChatServer, answer: Answer, make: Make) -> None:
    server.plan(answer)
    policy = RetryPolicy(max_retries=0, retry_timeouts=False)
    started = time.monotonic()
    with pytest.raises(ModelTimeoutError):
        client_for(make, server, [], policy=policy, timeout_s=T).complete(REQUEST)
    assert time.monotonic() - started < T + 1.0
    assert len(server.received) == 1


@pytest.mark.parametrize("answer", SLOW.values(), ids=list(SLOW))
def test_the_deadline_of_every_client_cuts_off_a_silent_or_trickling_server(
    server: ChatServer, answer: Answer, make: Make
) -> None:
    _cut_off_at_the_deadline(server, answer, make)


@pytest.mark.parametrize("answer", DRIBBLING.values(), ids=list(DRIBBLING))
def test_one_deadline_covers_connect_headers_and_body_against_every_misbehaving_server(
    server: ChatServer, answer: Answer, make_whole_deadline: Make
) -> None:
    _cut_off_at_the_deadline(server, answer, make_whole_deadline)


def _resolver_to(port: int, looked_up: list[str]) -> Any:
    """A name lookup that answers every host with the loopback address at ``port``."""

    def resolve(host: str, _port: int, family: int, kind: int) -> list[Any]:
        looked_up.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]

    return resolve


def test_a_host_name_is_connected_to_through_the_injected_name_lookup(server: ChatServer, make_httpx: Make) -> None:
    server.plan(Answer(body=completion("found by name")))
    looked_up: list[str] = []
    client = make_httpx(f"http://model.example:{server.port}/v1", "m", resolve=_resolver_to(server.port, looked_up))
    assert client.complete(REQUEST).text == "found by name"
    assert looked_up == ["model.example"] and len(server.received) == 1


def test_a_name_lookup_that_hangs_is_cut_off_by_the_attempts_deadline(server: ChatServer, make_httpx: Make) -> None:
    released = threading.Event()

    def hanging(host: str, port: int, family: int, kind: int) -> list[Any]:
        released.wait(30.0)
        return []

    policy = RetryPolicy(max_retries=0, retry_timeouts=False)
    client = make_httpx(f"http://model.example:{server.port}/v1", "m", retry=policy, timeout_s=T, resolve=hanging)
    try:
        with pytest.raises(ModelTimeoutError) as caught:
            client.complete(REQUEST)
        # The attempt gave up while the lookup was still waiting to be released.
        assert not released.is_set() and caught.value.timeout_s == T
    finally:
        released.set()
    assert server.received == []


def test_a_name_lookup_that_fails_is_an_unreachable_server(make_httpx: Make) -> None:
    def unknown(host: str, port: int, family: int, kind: int) -> list[Any]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    policy = RetryPolicy(max_retries=0)
    client = make_httpx("http://nowhere.example/v1", "m", retry=policy, resolve=unknown)
    with pytest.raises(ModelRetriesExhaustedError) as caught:
        client.complete(REQUEST)
    assert isinstance(caught.value.last, ModelUnreachableError)
    assert "Name or service not known" in caught.value.last.detail


def test_every_address_of_a_name_is_tried_until_one_takes_the_connection(server: ChatServer, make_httpx: Make) -> None:
    server.plan(Answer(body=completion("second address")))
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        refusing = closed.getsockname()[1]  # bound, never listening: refuses

    def two(host: str, port: int, family: int, kind: int) -> list[Any]:
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", refusing)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", server.port)),
        ]

    client = make_httpx(f"http://model.example:{server.port}/v1", "m", resolve=two)
    assert client.complete(REQUEST).text == "second address"


def test_503s_are_answered_within_the_timeout_and_retried_within_the_budget(server: ChatServer, make: Make) -> None:
    server.plan(*[Answer(503, b"busy") for _ in range(3)])
    started = time.monotonic()
    with pytest.raises(ModelRetriesExhaustedError) as caught:
        client_for(make, server, [], policy=RetryPolicy(max_retries=2), timeout_s=T).complete(REQUEST)
    assert time.monotonic() - started < T + 1.0  # the waits are recorded, not slept
    assert caught.value.attempts == 3 and len(server.received) == 3
    assert "gave up after 3 attempt(s)" in caught.value.message


def test_a_connection_dropped_mid_body_is_retried_like_any_transient_failure(server: ChatServer, make: Make) -> None:
    server.plan(Answer(body=completion("z" * 300), cut_body=40), Answer(body=completion("whole")))
    sleeps: list[float] = []
    seen: list[str] = []
    client = client_for(make, server, sleeps, on_retry=lambda n, e, d: seen.append(e.code))
    assert client.complete(REQUEST).text == "whole"
    assert seen == ["model-unreachable"] and len(server.received) == 2


def test_a_connection_dropped_mid_body_says_so_when_it_is_the_last_failure(server: ChatServer, make: Make) -> None:
    server.plan(Answer(body=completion("z" * 300), cut_body=40))
    started = time.monotonic()
    with pytest.raises(ModelRetriesExhaustedError) as caught:
        client_for(make, server, [], policy=RetryPolicy(max_retries=0), timeout_s=T).complete(REQUEST)
    assert time.monotonic() - started < T + 1.0
    assert isinstance(caught.value.last, ModelUnreachableError)
    assert "closed after 40 of" in caught.value.last.message


# --- proxies from the environment ----------------------------------------------


def test_http_proxy_from_the_environment_carries_the_request(
    server: ChatServer, monkeypatch: pytest.MonkeyPatch, make_httpx: Make
) -> None:
    monkeypatch.setenv("HTTP_PROXY", f"http://user:secret@127.0.0.1:{server.port}")
    server.plan(Answer(body=completion("via the proxy")))
    client = make_httpx("http://model.invalid:8000/v1", "m", retry=RetryPolicy(max_retries=0))
    assert client.complete(REQUEST).text == "via the proxy"
    (received,) = server.received
    assert received.path == "http://model.invalid:8000/v1/chat/completions"
    assert received.headers["proxy-authorization"] == "Basic dXNlcjpzZWNyZXQ="


def test_https_proxy_from_the_environment_is_asked_for_a_tunnel(
    server: ChatServer, monkeypatch: pytest.MonkeyPatch, make_httpx: Make
) -> None:
    monkeypatch.setenv("https_proxy", f"127.0.0.1:{server.port}")
    client = make_httpx("https://model.invalid/v1", "m", retry=RetryPolicy(max_retries=0))
    with pytest.raises(ModelRetriesExhaustedError, match="403"):
        client.complete(REQUEST)
    (received,) = server.received
    assert (received.method, received.path) == ("CONNECT", "model.invalid:443")


@pytest.mark.parametrize(
    "no_proxy",
    ["example.com,127.0.0.1", "10.0.0.0/8, 127.0.0.0/8"],
    ids=["as-a-host-in-a-list", "as-an-address-range"],
)
def test_a_host_in_no_proxy_is_sent_directly_past_the_proxy(
    server: ChatServer, monkeypatch: pytest.MonkeyPatch, make_httpx: Make, no_proxy: str
) -> None:
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{_unused_port()}")  # a proxy nobody listens on
    monkeypatch.setenv("NO_PROXY", no_proxy)
    server.plan(Answer(body=completion("direct")))
    assert client_for(make_httpx, server, []).complete(REQUEST).text == "direct"
    assert server.received[0].path == "/v1/chat/completions"


def test_a_proxy_scheme_the_client_cannot_speak_is_refused_when_it_is_built(
    monkeypatch: pytest.MonkeyPatch, make_httpx: Make
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "socks5://127.0.0.1:1080")
    with pytest.raises(ModelBadRequestError, match="socks5"):
        make_httpx("http://model.invalid/v1", "m")


def test_a_proxy_password_never_shows_in_an_error(monkeypatch: pytest.MonkeyPatch, make_httpx: Make) -> None:
    monkeypatch.setenv("HTTP_PROXY", "socks5://alice:hunter2@127.0.0.1:1080")
    with pytest.raises(ModelBadRequestError) as caught:
        make_httpx("http://model.invalid/v1", "m")
    assert "hunter2" not in str(caught.value)
    assert "socks5://alice:***@127.0.0.1:1080" in str(caught.value)


def test_a_base_url_password_never_shows_in_an_error(make_httpx: Make) -> None:
    port = _unused_port()
    with pytest.raises(ModelBadRequestError) as refused:
        make_httpx("ftp://bob:hunter2@example.invalid/v1", "m")
    assert "hunter2" not in str(refused.value) and "bob:***@" in str(refused.value)
    client = make_httpx(f"http://bob:hunter2@127.0.0.1:{port}/v1", "m", retry=RetryPolicy(max_retries=0))
    with pytest.raises(ModelRetriesExhaustedError) as caught:
        client.complete(REQUEST)
    assert "hunter2" not in str(caught.value) and f"bob:***@127.0.0.1:{port}" in str(caught.value)


def test_a_client_keeps_its_connection_alive_from_one_request_to_the_next(server: ChatServer, make_httpx: Make) -> None:
    server.plan(Answer(body=completion("one")), Answer(body=completion("two")), Answer(body=completion("three")))
    client = client_for(make_httpx, server, [])
    assert [client.complete(REQUEST).text for _ in range(3)] == ["one", "two", "three"]
    assert len(server.received) == 3 and server.connections == 1


def test_a_connection_the_server_closed_is_replaced_by_a_new_one(server: ChatServer, make_httpx: Make) -> None:
    server.plan(Answer(body=completion("one")), Answer(drop=True), Answer(body=completion("three")))
    sleeps: list[float] = []
    client = client_for(make_httpx, server, sleeps)
    assert client.complete(REQUEST).text == "one"
    assert client.complete(REQUEST).text == "three"
    assert len(sleeps) == 1 and server.connections == 2


def test_the_base_url_and_key_default_to_the_openai_environment_variables(
    server: ChatServer, monkeypatch: pytest.MonkeyPatch, make_httpx: Make
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    server.plan(Answer(body=completion("from the environment")), Answer())
    assert make_httpx(None, "m").complete(REQUEST).text == "from the environment"
    assert server.received[0].headers["authorization"] == "Bearer sk-from-env"
    make_httpx(None, "m", api_key="").complete(REQUEST)  # "" sends no key at all
    assert "authorization" not in server.received[1].headers


def test_without_a_base_url_anywhere_the_client_posts_to_openai(make_httpx: Make) -> None:
    assert make_httpx(None, "m").url == "https://api.openai.com/v1/chat/completions"


def test_each_retry_is_logged_with_its_status_and_delay_and_never_the_key(
    server: ChatServer, make: Make, caplog: pytest.LogCaptureFixture
) -> None:
    server.plan(Answer(429, b"slow down", {"Retry-After": "2"}), Answer(503, b"busy"), Answer())
    with caplog.at_level(logging.DEBUG):
        client_for(make, server, []).complete(REQUEST)
    records = [r for r in caplog.records if r.name == "planfold.adapters.llm.openai_policy"]
    retries = [r for r in records if r.levelno > logging.DEBUG]
    assert [r.levelno for r in retries] == [logging.WARNING, logging.WARNING]
    first, second = (r.getMessage() for r in retries)
    assert "model-rate-limited HTTP 429" in first and "retry 1 of 3 in 2.000s" in first
    assert "model-http-error HTTP 503" in second and "retry 2 of 3 in 0.875s" in second
    assert all("sk-test" not in r.getMessage() for r in caplog.records)


def _attempt_records(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The messages of the DEBUG records of model-call attempts."""
    return [
        r.getMessage() for r in caplog.records
        if r.name == "planfold.adapters.llm.openai_policy" and r.levelno == logging.DEBUG
    ]  # fmt: skip


def test_each_attempt_is_a_debug_record_with_its_number_outcome_and_latency(
    server: ChatServer, make: Make, caplog: pytest.LogCaptureFixture
) -> None:
    server.plan(Answer(429, b"slow down", {"Retry-After": "2"}), Answer(503, b"busy"), Answer())
    with caplog.at_level(logging.DEBUG, logger="planfold"):
        client_for(make, server, []).complete(REQUEST)
    attempts = _attempt_records(caplog)
    assert len(attempts) == 3
    assert all(text.startswith(f"model call to {server.base_url}/chat/completions: attempt") for text in attempts)
    assert "attempt 1 failed (model-rate-limited HTTP 429) in " in attempts[0]
    assert "attempt 2 failed (model-http-error HTTP 503) in " in attempts[1]
    assert "attempt 3 answered (stop, 0 tool call(s)) in " in attempts[2]
    assert all(text.endswith(" ms") for text in attempts)


def test_attempts_are_numbered_within_their_call_when_they_spend_from_a_session_budget(
    server: ChatServer, make: Make, caplog: pytest.LogCaptureFixture
) -> None:
    server.plan(Answer(503, b"busy"), Answer(429, b"slow down", {"Retry-After": "1"}), Answer())
    session = RetryBudget(4)
    client = client_for(make, server, [])
    with caplog.at_level(logging.DEBUG, logger="planfold"), session.step():
        assert session.take()  # a retry of the same step made before this call
        client.complete(REQUEST, session=session)
    attempts = _attempt_records(caplog)
    assert len(attempts) == 3
    assert "attempt 1 failed (model-http-error HTTP 503) in " in attempts[0]
    assert "attempt 2 failed (model-rate-limited HTTP 429) in " in attempts[1]
    assert "attempt 3 answered (stop, 0 tool call(s)) in " in attempts[2]
    assert (session.used, client.retry_budget.used) == (3, 0)


def test_a_call_that_spends_the_last_of_a_session_budget_gives_up_counting_its_own_attempts(
    server: ChatServer, make: Make, caplog: pytest.LogCaptureFixture
) -> None:
    server.plan(Answer(503, b"busy"), Answer(503, b"busy"), Answer())
    session = RetryBudget(2)
    client = client_for(make, server, [])
    with caplog.at_level(logging.DEBUG, logger="planfold"), session.step():
        assert session.take()  # a retry of the same step made before this call
        with pytest.raises(ModelRetriesExhaustedError) as caught:
            client.complete(REQUEST, session=session)
    assert len(server.received) == 2 and len(_attempt_records(caplog)) == 2
    assert caught.value.attempts == 2
    assert str(caught.value).startswith("gave up after 2 attempt(s); ")
    assert (session.used, client.retry_budget.used) == (2, 0)


def test_no_attempt_is_recorded_unless_debug_is_on(
    server: ChatServer, make: Make, caplog: pytest.LogCaptureFixture
) -> None:
    server.plan(Answer())
    with caplog.at_level(logging.INFO, logger="planfold"):
        client_for(make, server, []).complete(REQUEST)
    assert [r for r in caplog.records if r.name.startswith("planfold.")] == []


def test_the_model_clients_leave_http_and_sockets_to_httpx() -> None:
    package = Path(planfold.adapters.llm.__file__).parent
    sources = {path.name: path.read_text(encoding="utf-8") for path in sorted(package.glob("*.py"))}
    assert "openai.py" in sources
    for banned in ("http.client", "socket.socket", "create_connection", "wrap_socket", "urllib.request.urlopen"):
        assert [name for name, text in sources.items() if banned in text] == [], banned


def test_each_client_is_the_model_port_of_its_kind() -> None:
    with OpenAIClient("http://127.0.0.1:9/v1", "m") as sync:
        assert isinstance(sync, ModelClient)
    asynchronous = AsyncOpenAIClient("http://127.0.0.1:9/v1", "m")
    assert isinstance(asynchronous, AsyncModelClient)
    asyncio.run(asynchronous.aclose())


def test_every_client_reports_how_long_the_call_took_and_the_servers_token_counts(
    server: ChatServer, make: Make
) -> None:
    usage = {"prompt_tokens": 900, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 768}}
    server.plan(Answer(body=completion("slow", usage=usage), delay=0.3))
    reply = client_for(make, server, []).complete(REQUEST)
    assert reply.latency_ms is not None and reply.latency_ms >= 300
    assert reply.usage is not None
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.cached_tokens) == (900, 20, 768)


def test_the_latency_of_a_call_covers_every_attempt(server: ChatServer, make: Make) -> None:
    server.plan(Answer(503, b"busy", delay=0.2), Answer(body=completion("second"), delay=0.2))
    reply = client_for(make, server, []).complete(REQUEST)
    assert reply.text == "second" and reply.latency_ms is not None and reply.latency_ms >= 400
