"""The model port's values and the chat-completions wire format, without a server."""

from __future__ import annotations

import json
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planfold.adapters.llm.model import (
    JSON,
    AssistantMessage,
    ChatRequest,
    ChatResponse,
    ModelBadRequestError,
    ModelBadResponseError,
    ModelError,
    ModelHTTPError,
    ModelRateLimitedError,
    ModelTimeoutError,
    ModelUnreachableError,
    SystemMessage,
    ToolCall,
    ToolDefinition,
    ToolMessage,
    UserMessage,
    excerpt,
)
from planfold.adapters.llm.openai import (
    OUTCOMES,
    RetryPolicy,
    is_retryable,
    outcome_of,
    parse_retry_after,
)
from planfold.adapters.llm.openai_wire import build_request_body, encode_message, parse_chat_response
from tests.chat_server import completion, tool_call_json

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=4)
names = st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_-]{0,20}", fullmatch=True)


def dumps(value: object) -> bytes:
    return json.dumps(value).encode("utf-8")


# --- parsing never escapes its one error type --------------------------------


@given(st.binary(max_size=200))
def test_any_bytes_parse_or_are_a_bad_response(body: bytes) -> None:
    try:
        parse_chat_response(body)
    except ModelBadResponseError as err:
        assert err.code == "model-bad-response" and err.problem


near_valid = st.fixed_dictionaries(
    {},
    optional={
        "choices": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "message": st.fixed_dictionaries(
                        {},
                        optional={
                            "content": json_values,
                            "tool_calls": json_values
                            | st.lists(
                                st.fixed_dictionaries(
                                    {},
                                    optional={
                                        "id": json_values,
                                        "type": st.just("function") | json_values,
                                        "function": st.fixed_dictionaries(
                                            {},
                                            optional={
                                                "name": names | json_values,
                                                "arguments": json_values,
                                            },
                                        )
                                        | json_values,
                                    },
                                ),
                                max_size=3,
                            ),
                        },
                    )
                    | json_values,
                    "finish_reason": json_values,
                },
            )
            | json_values,
            max_size=2,
        )
        | json_values,
        "usage": json_values,
        "error": json_values,
    },
)


@given(near_valid)
def test_almost_completions_parse_or_are_a_bad_response(body: dict[str, Any]) -> None:
    try:
        reply = parse_chat_response(dumps(body))
    except ModelBadResponseError as err:
        assert err.problem
        return
    for call in reply.tool_calls:
        assert call.name and call.id
        assert (call.arguments is None) != (call.arguments_error is None)


arguments_objects = st.dictionaries(names, json_values, max_size=4)


@given(st.lists(st.tuples(names, arguments_objects, st.booleans()), min_size=1, max_size=4))
def test_tool_calls_survive_the_wire_as_text_or_object(
    calls: list[tuple[str, dict[str, JSON], bool]],
) -> None:
    sent = [
        tool_call_json(f"id{i}", name, args if as_object else json.dumps(args))
        for i, (name, args, as_object) in enumerate(calls)
    ]
    reply = parse_chat_response(dumps(completion(None, sent)))
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        (f"id{i}", name, args) for i, (name, args, _) in enumerate(calls)
    ]
    assert all(json.loads(c.arguments_json) == c.arguments for c in reply.tool_calls)


@given(
    st.none() | st.text(max_size=20),
    st.lists(st.tuples(names, arguments_objects), max_size=3),
)
def test_an_assistant_message_round_trips_through_the_wire(
    text: str | None, calls: list[tuple[str, dict[str, JSON]]]
) -> None:
    if text is None and not calls:
        text = ""
    message = AssistantMessage(
        text, tuple(ToolCall.of(f"c{i}", n, a) for i, (n, a) in enumerate(calls))
    )
    echoed = {"choices": [{"message": encode_message(message), "finish_reason": "stop"}]}
    assert parse_chat_response(dumps(echoed)).as_message() == message


def test_legacy_function_call_counts_as_one_tool_call() -> None:
    body = {"choices": [{"message": {"content": None, "function_call": {"name": "ls"}}}]}
    [call] = parse_chat_response(dumps(body)).tool_calls
    assert (call.id, call.name, call.arguments_json, call.arguments) == ("call-0", "ls", "{}", {})


def test_non_function_tool_calls_are_refused() -> None:
    body = {"choices": [{"message": {"tool_calls": [{"type": "custom", "custom": {}}]}}]}
    with pytest.raises(ModelBadResponseError, match=r"tool_calls\[0\]\.type"):
        parse_chat_response(dumps(body))


def test_usage_keeps_only_integer_counts() -> None:
    body = completion("x", usage={"prompt_tokens": 3})
    body["usage"]["completion_tokens"] = True
    body["usage"]["total_tokens"] = "5"
    usage = parse_chat_response(dumps(body)).usage
    assert usage is not None
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (3, None, None)


def test_bad_response_shows_an_excerpt_of_the_body() -> None:
    with pytest.raises(ModelBadResponseError) as caught:
        parse_chat_response(b"Gateway Timeout " * 100)
    assert caught.value.body_excerpt.startswith("Gateway Timeout")
    assert caught.value.body_excerpt.endswith("…") and len(caught.value.body_excerpt) == 501


# --- request bodies -----------------------------------------------------------


def test_request_body_is_plain_json_even_from_read_only_mappings() -> None:
    schema = MappingProxyType({"type": "object", "required": ("a", "b")})
    request = ChatRequest((UserMessage("x"),), (ToolDefinition("t", "d", schema),))
    body = build_request_body("m", request)
    assert json.loads(json.dumps(body))["tools"][0]["function"]["parameters"] == {
        "type": "object",
        "required": ["a", "b"],
    }


def test_tool_message_name_is_sent_only_when_given() -> None:
    assert "name" not in encode_message(ToolMessage("c1", "out"))
    assert encode_message(ToolMessage("c1", "out", "ls"))["name"] == "ls"


# --- the port's values --------------------------------------------------------


@pytest.mark.parametrize(
    "build",
    [
        lambda: ChatRequest(()),
        lambda: ChatRequest((UserMessage("x"),), (ToolDefinition("t", "", {}),) * 2),
        lambda: ToolDefinition("", "d", {}),
        lambda: ToolDefinition("t", "d", ["not", "a", "schema"]),  # type: ignore[arg-type]
        lambda: AssistantMessage(None),
        lambda: ToolMessage("", "result"),
        lambda: RetryPolicy(max_retries=-1),
        lambda: RetryPolicy(jitter=1.5),
        lambda: RetryPolicy(multiplier=0.5),
    ],
)
def test_impossible_values_are_refused(build: Any) -> None:
    with pytest.raises(ModelBadRequestError) as caught:
        build()
    assert caught.value.code == "model-bad-request"


def test_request_views() -> None:
    request = ChatRequest(
        (
            SystemMessage("base"),
            UserMessage("first"),
            SystemMessage("plan:policy"),
            AssistantMessage("ok"),
            UserMessage("second"),
            ToolMessage("c", "r"),
        ),
        (ToolDefinition("b", "", {}), ToolDefinition("a", "", {})),
    )
    assert request.system_text == "base\n\nplan:policy"
    assert request.last_user_text == "second"
    assert request.tool_names == ("b", "a")
    assert ChatRequest((SystemMessage("s"),)).last_user_text is None
    assert [m.role for m in request.messages] == [
        "system", "user", "system", "assistant", "user", "tool",
    ]


def test_an_empty_reply_becomes_an_empty_text_message() -> None:
    assert ChatResponse(None).as_message() == AssistantMessage("")


def test_excerpt_cuts_long_text_only() -> None:
    assert excerpt(b"short") == "short"
    assert excerpt("x" * 10, limit=4) == "xxxx…"
    assert excerpt(b"\xff\xfe") == "\ufffd\ufffd"


# --- retry decisions ----------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "outcome"),
    [
        (ModelBadResponseError("x"), "bad-response"),
        (ModelRateLimitedError("x", 1.0), "rate-limited"),
        (ModelHTTPError(408, "x"), "server-busy"),
        (ModelHTTPError(500, "x"), "server-busy"),
        (ModelHTTPError(599, "x"), "server-busy"),
        (ModelHTTPError(400, "x"), "refused"),
        (ModelHTTPError(401, "x"), "refused"),
        (ModelHTTPError(404, "x"), "refused"),
        (ModelUnreachableError("x"), "unreachable"),
        (ModelTimeoutError(1.0), "timeout"),
    ],
)
def test_outcome_rows(error: ModelError, outcome: str) -> None:
    assert outcome_of(error) == outcome
    retried = OUTCOMES[outcome]
    for retry_timeouts in (True, False):
        policy = RetryPolicy(retry_timeouts=retry_timeouts)
        expected = retry_timeouts if retried is None else retried
        assert is_retryable(error, policy) is expected


@given(
    retry=st.integers(1, 30),
    rand=st.floats(0, 1, exclude_max=True),
    jitter=st.floats(0, 1),
    initial=st.floats(0.01, 5),
    multiplier=st.floats(1, 4),
    cap=st.floats(0, 60),
)
def test_backoff_is_bounded_jittered_and_grows(
    *, retry: int, rand: float, jitter: float, initial: float, multiplier: float, cap: float
) -> None:
    policy = RetryPolicy(initial_delay=initial, multiplier=multiplier, max_delay=cap, jitter=jitter)
    base = min(cap, initial * multiplier ** (retry - 1))
    delay = policy.backoff(retry, rand)
    assert base * (1 - jitter) - 1e-9 <= delay <= base + 1e-9
    assert delay <= cap + 1e-9
    assert policy.backoff(retry + 1, rand) >= delay - 1e-9


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, None),
        ({"retry-after": "7"}, 7.0),
        ({"retry-after": " 0.5 "}, 0.5),
        ({"retry-after": "-3"}, None),
        ({"retry-after": "inf"}, None),
        ({"retry-after": "soon"}, None),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after-ms": "x", "retry-after": "9"}, 9.0),
        ({"retry-after": "Tue, 14 Nov 2023 22:13:50 GMT"}, 30.0),
        ({"retry-after": "Tue, 14 Nov 2023 22:12:00 GMT"}, 0.0),
        ({"retry-after": "Tue, 14 Nov 2023 22:13:50"}, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    now = 1_700_000_000.0  # Tue, 14 Nov 2023 22:13:20 GMT
    assert parse_retry_after(headers, now) == expected


def test_a_structured_refusal_and_the_finish_reason_are_kept() -> None:
    body = {
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, "refusal": "I can't help with that."},
                "finish_reason": "stop",
            }
        ]
    }
    reply = parse_chat_response(dumps(body))
    assert (reply.text, reply.refusal, reply.finish_reason) == (None, "I can't help with that.", "stop")
    assert reply.as_message() == AssistantMessage("I can't help with that.")
    cut = parse_chat_response(dumps(completion("Half a sent", finish_reason="length")))
    assert (cut.text, cut.refusal, cut.finish_reason) == ("Half a sent", None, "length")


def test_a_refusal_that_is_not_text_is_a_bad_response() -> None:
    body = {"choices": [{"message": {"content": None, "refusal": 7}, "finish_reason": "stop"}]}
    with pytest.raises(ModelBadResponseError, match="refusal: expected a string or null"):
        parse_chat_response(dumps(body))


def test_the_cached_part_of_the_prompt_is_read_where_openai_or_deepseek_report_it() -> None:
    openai_style = completion("x", usage={"prompt_tokens": 900, "completion_tokens": 20})
    openai_style["usage"]["prompt_tokens_details"] = {"cached_tokens": 768, "audio_tokens": 0}
    usage = parse_chat_response(dumps(openai_style)).usage
    assert usage is not None and (usage.prompt_tokens, usage.cached_tokens) == (900, 768)
    deepseek_style = completion("x", usage={"prompt_tokens": 900, "prompt_cache_hit_tokens": 512})
    usage = parse_chat_response(dumps(deepseek_style)).usage
    assert usage is not None and usage.cached_tokens == 512
    none_cached = completion("x", usage={"prompt_tokens": 900})
    none_cached["usage"]["prompt_tokens_details"] = None
    usage = parse_chat_response(dumps(none_cached)).usage
    assert usage is not None and usage.cached_tokens is None


def test_a_negative_or_non_integer_count_is_left_out_rather_than_trusted() -> None:
    body = completion("x", usage={"prompt_tokens": -4, "completion_tokens": 6})
    body["usage"]["prompt_tokens_details"] = {"cached_tokens": 1.5}
    usage = parse_chat_response(dumps(body)).usage
    assert usage is not None
    assert (usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens) == (None, 6, None)
