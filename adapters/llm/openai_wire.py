"""The OpenAI chat-completions wire format: request bodies out, replies in.

Theory of operation
-------------------
Two pure functions sit between the model port and HTTP. ``build_request_body``
turns a ``ChatRequest`` into the JSON object that ``POST /chat/completions``
expects (tools as ``{"type": "function", "function": {...}}``, no ``tools``
key at all when none are offered, since some servers reject an empty list).
``parse_chat_response`` turns a success body into a ``ChatResponse``, reading
``choices[0].message`` and ``choices[0].finish_reason``; a structured refusal
(``content: null, refusal: "…"``, as OpenAI's API and SDK types shape it) is
kept as ``refusal``.

Servers that speak this API (vLLM, llama.cpp, Ollama, OpenAI) differ in small
ways, and the parser accepts all of them: ``content`` may be null next to tool
calls, or a list of text parts; ``usage`` may be missing or partial (a count
that is not a non-negative integer is left out; the cached part of the
prompt is read where OpenAI or DeepSeek put it); a tool
call's ``arguments`` may be a JSON string, an object, empty or null; a call
may lack an ``id`` (a stable ``call-<index>`` is made up) or ``type``; a
legacy ``function_call`` counts as one tool call. Arguments that do not decode
stay on the call as an error, for the runtime to report to the model.

What it does not accept is a body that is not a chat completion: not JSON, no
``choices``, a field of the wrong type. That raises ``ModelBadResponseError``
with the path of the first offending field and an excerpt of the body.

A reply as a whole (status, headers, body) is read by ``read_reply``: a 2xx
is parsed, anything else becomes the typed error of its status, with the wait
the server asked for (``Retry-After`` in seconds or as an HTTP date, or
``retry-after-ms``; ``parse_retry_after``). Both clients, the synchronous and
the asyncio one, read every reply here; they only move bytes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from email.utils import parsedate_to_datetime

from .model import (
    JSON,
    AssistantMessage,
    ChatRequest,
    ChatResponse,
    Message,
    ModelBadResponseError,
    ModelHTTPError,
    ModelRateLimitedError,
    SystemMessage,
    TokenCount,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
    excerpt,
    json_kind,
)

__all__ = [
    "build_request_body",
    "encode_message",
    "parse_chat_response",
    "parse_retry_after",
    "plain_json",
    "read_reply",
]


def plain_json(value: object) -> object:
    """``value`` with every mapping made a dict and every sequence a list, for ``json``."""
    if isinstance(value, Mapping):
        return {str(k): plain_json(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [plain_json(v) for v in value]
    return value


def encode_message(message: Message, tool_call_content: str | None = None) -> dict[str, object]:
    """One message in wire form.

    ``tool_call_content`` is what a text-less assistant tool-call message sends
    as ``content``: None (JSON null, as the API documents) or ``""`` for
    servers that reject null.
    """
    if isinstance(message, SystemMessage | UserMessage):
        return {"role": message.role, "content": message.content}
    if isinstance(message, ToolMessage):
        out: dict[str, object] = {
            "role": "tool",
            "tool_call_id": message.tool_call_id,
            "content": message.content,
        }
        if message.name is not None:
            out["name"] = message.name
        return out
    assert isinstance(message, AssistantMessage)
    content = message.content if message.content is not None else tool_call_content
    out = {"role": "assistant", "content": content}
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_json},
            }
            for call in message.tool_calls
        ]
    return out


def build_request_body(
    model: str, request: ChatRequest, *, tool_call_content: str | None = None
) -> dict[str, object]:
    """The JSON object for ``POST /chat/completions`` (non-streaming)."""
    body: dict[str, object] = {
        "model": model,
        "messages": [encode_message(m, tool_call_content) for m in request.messages],
        "stream": False,
    }
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": plain_json(tool.parameters),
                },
            }
            for tool in request.tools
        ]
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.max_tokens is not None:
        body["max_tokens"] = request.max_tokens
    return body


class _Reader:
    """Typed access into a decoded body; every failure names its path."""

    def __init__(self, body: bytes) -> None:
        self.shown = excerpt(body)

    def bad(self, problem: str) -> ModelBadResponseError:
        return ModelBadResponseError(problem, self.shown)

    def obj(self, value: object, path: str) -> Mapping[str, object]:
        if not isinstance(value, dict):
            raise self.bad(f"{path}: expected an object, got {json_kind(value)}")
        return value

    def opt_str(self, value: object, path: str) -> str | None:
        if value is None or isinstance(value, str):
            return value
        raise self.bad(f"{path}: expected a string or null, got {json_kind(value)}")


def parse_chat_response(body: bytes) -> ChatResponse:
    """Read a chat completion from a success body.

    Raises ``ModelBadResponseError`` when the body is not JSON, is an error
    object, has no ``choices[0].message``, or has a field of the wrong type.
    """
    r = _Reader(body)
    try:
        doc: object = json.loads(body)
    except (ValueError, RecursionError) as err:
        raise r.bad(f"body is not JSON ({err})") from err
    top = r.obj(doc, "body")
    if "choices" not in top and "error" in top:
        raise r.bad(f"the server reported an error instead of a completion: {top['error']!r}")
    choices = top.get("choices")
    if choices is None:
        raise r.bad("choices: missing")
    if not isinstance(choices, list):
        raise r.bad(f"choices: expected an array, got {json_kind(choices)}")
    if not choices:
        raise r.bad("choices: empty, the server returned no completion")
    choice = r.obj(choices[0], "choices[0]")
    message = r.obj(choice.get("message"), "choices[0].message")
    text = _content(r, message.get("content"), "choices[0].message.content")
    refusal = r.opt_str(message.get("refusal"), "choices[0].message.refusal")
    calls = _tool_calls(r, message)
    reasoning = message.get("reasoning_content", message.get("reasoning"))
    model = top.get("model")
    return ChatResponse(
        text=text,
        tool_calls=calls,
        finish_reason=r.opt_str(choice.get("finish_reason"), "choices[0].finish_reason"),
        usage=_usage(top.get("usage")),
        model=model if isinstance(model, str) else None,
        reasoning=reasoning if isinstance(reasoning, str) else None,
        refusal=refusal or None,
    )


def _content(r: _Reader, value: object, path: str) -> str | None:
    if not isinstance(value, list):
        return r.opt_str(value, path)
    parts: list[str] = []
    for i, part in enumerate(value):
        item = r.obj(part, f"{path}[{i}]")
        if item.get("type", "text") == "text":
            text = r.opt_str(item.get("text"), f"{path}[{i}].text")
            parts.append(text or "")
    return "".join(parts)


def _tool_calls(r: _Reader, message: Mapping[str, object]) -> tuple[ToolCall, ...]:
    raw = message.get("tool_calls")
    if raw is None and isinstance(message.get("function_call"), dict):
        raw = [{"type": "function", "function": message["function_call"]}]
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise r.bad(f"choices[0].message.tool_calls: expected an array, got {json_kind(raw)}")
    calls: list[ToolCall] = []
    for i, item in enumerate(raw):
        path = f"choices[0].message.tool_calls[{i}]"
        entry = r.obj(item, path)
        kind = entry.get("type", "function")
        if kind != "function":
            raise r.bad(f"{path}.type: only function tool calls are supported, got {kind!r}")
        function = r.obj(entry.get("function"), f"{path}.function")
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise r.bad(f"{path}.function.name: expected a non-empty string, got {json_kind(name)}")
        call_id = r.opt_str(entry.get("id"), f"{path}.id") or f"call-{i}"
        calls.append(ToolCall.parse(call_id, name, _raw_arguments(function.get("arguments"))))
    return tuple(calls)


def _raw_arguments(value: object) -> str:
    if value is None:
        return "{}"
    if isinstance(value, str):
        return value
    # Some servers send the arguments already decoded; keep them as JSON text.
    return json.dumps(value, ensure_ascii=False)


def _count(where: object, key: str) -> TokenCount | None:
    """The count at ``key`` of ``where`` when it is a non-negative integer."""
    n: JSON = where.get(key) if isinstance(where, dict) else None
    return TokenCount(n) if isinstance(n, int) and not isinstance(n, bool) and n >= 0 else None


def _usage(value: object) -> Usage | None:
    """The token counts of ``usage``; the cached part of the prompt is
    ``prompt_tokens_details.cached_tokens`` (OpenAI's API) or
    ``prompt_cache_hit_tokens`` (DeepSeek's)."""
    if not isinstance(value, dict):
        return None
    cached = _count(value.get("prompt_tokens_details"), "cached_tokens")
    if cached is None:
        cached = _count(value, "prompt_cache_hit_tokens")
    return Usage(
        _count(value, "prompt_tokens"), _count(value, "completion_tokens"), _count(value, "total_tokens"), cached
    )


def read_reply(status: int, headers: Mapping[str, str], body: bytes, now: float) -> ChatResponse:
    """The chat completion of a 2xx reply (``parse_chat_response``), else the
    typed error of its status: ``ModelRateLimitedError`` for 429,
    ``ModelHTTPError`` for any other, each with the wait the server asked for
    (``headers`` keys lower-case; ``now`` is wall-clock time, for an HTTP date)."""
    if 200 <= status <= 299:
        return parse_chat_response(body)
    shown = excerpt(body)
    retry_after = parse_retry_after(headers, now)
    if status == 429:
        raise ModelRateLimitedError(shown, retry_after)
    raise ModelHTTPError(status, shown, retry_after=retry_after)


def parse_retry_after(headers: Mapping[str, str], now: float) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an
    HTTP date, against wall-clock ``now``); None when absent or unreadable.
    ``headers`` keys are lower-case."""
    millis = _non_negative(headers.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _non_negative(value)
    if seconds is not None:
        return seconds
    try:
        when = parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - now)


def _non_negative(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None
