"""A host runtime in Python that drives sessions through ``planfold serve``.

It does what a TypeScript or Go runtime would: it owns the model, the
executors and the human reviewer, and asks the server for everything else,
step by step, exactly in the order ``Runtime`` does in-process (same-step
retries after recoverable model errors included). ``Caller`` is anything
that sends one request and returns its result: the pipe client, or
``InProcess`` (the same JSON lines handed to ``Server.handle``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec

from planfold.adapters.llm.model import (
    AssistantMessage,
    ChatRequest,
    Message,
    ModelClient,
    ModelError,
    SystemMessage,
    ToolCall,
    ToolDefinition,
    ToolMessage,
    UserMessage,
)
from planfold.adapters.runtime.machine import RECOVERABLE_MODEL_ERRORS
from planfold.adapters.runtime.review import ReviewPort, ask
from planfold.adapters.runtime.tool_runner import ToolRunner
from planfold.adapters.runtime.toolset import LIST_FILES, READ_FILE, WRITE_FILE
from planfold.adapters.serve.client import RemoteError
from planfold.adapters.serve.server import Server
from planfold.kernel.plan.review import Custom, Dismissed, ReviewAnswer, ReviewRequest, Selected
from planfold.kernel.tools.spec import ToolSpec, thaw_json

__all__ = [
    "WORKSPACE_TOOLS",
    "Caller",
    "InProcess",
    "PyHost",
    "answer_params",
    "chat_request",
    "tool_decl",
]


class Caller(Protocol):
    def call(self, method: str, **params: Any) -> Any: ...


class InProcess:
    """Requests as JSON lines straight into ``Server.handle``."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.lines: list[tuple[bytes, bytes | None]] = []

    def call(self, method: str, **params: Any) -> Any:
        line = msgspec.json.encode({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        answer = self.server.handle(line)
        self.lines.append((line, answer))
        assert answer is not None
        decoded = msgspec.json.decode(answer)
        if "error" in decoded:
            error = decoded["error"]
            raise RemoteError(error["code"], error["message"], error.get("data") or {})
        return decoded["result"]


def tool_decl(spec: ToolSpec) -> dict[str, Any]:
    """A tool of the host as ``session/open`` takes it."""
    return {
        "name": spec.name,
        "description": spec.description,
        "parameters": thaw_json(spec.parameters),
        "effect": spec.effect,
        "origin": spec.origin,
        "target_args": list(spec.target_args),
    }


#: The demo workspace's tools, declared by the host.
WORKSPACE_TOOLS: tuple[dict[str, Any], ...] = tuple(tool_decl(s) for s in (READ_FILE, LIST_FILES, WRITE_FILE))


def _message(wire: Mapping[str, Any]) -> Message:
    role = wire["role"]
    if role == "user":
        return UserMessage(wire["content"])
    if role == "tool":
        return ToolMessage(wire["tool_call_id"], wire["content"], wire.get("name"))
    calls = tuple(
        ToolCall.parse(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in wire.get("tool_calls", ())
    )
    return AssistantMessage(wire["content"], calls)


def chat_request(context: Mapping[str, Any]) -> ChatRequest:
    """The request a host sends for a ``step/context`` result."""
    system: list[Message] = [SystemMessage(f"[{s['name']}]\n{s['text']}") for s in context["sections"]]
    conversation = [_message(m) for m in context.get("messages") or ()]
    tools = tuple(ToolDefinition(t["name"], t["description"], t["parameters"]) for t in context["tools"])
    return ChatRequest(tuple(system + conversation), tools)


def answer_params(answer: ReviewAnswer) -> dict[str, Any]:
    """A review answer as ``review/answer`` takes it."""
    if isinstance(answer, Selected):
        return {"answer": "selected", "options": list(answer.options), "text": answer.text}
    if isinstance(answer, Custom):
        return {"answer": "custom", "text": answer.text}
    return {"answer": "dismissed" if isinstance(answer, Dismissed) else "channel-lost"}


def _call_params(call: ToolCall) -> dict[str, Any]:
    return {"id": call.id, "name": call.name, "arguments_json": call.arguments_json}


@dataclass
class PyHost:
    """One session's host: the model, the executors, the reviewer."""

    server: Caller
    session: str
    model: ModelClient
    executors: ToolRunner
    reviewer: ReviewPort | None
    max_steps: int = 16
    step_retries: int = 2
    _calls: dict[str, ToolCall] = field(default_factory=dict)

    def call(self, method: str, **params: Any) -> Any:
        return self.server.call(method, session=self.session, **params)

    def open(self, tools: Sequence[Mapping[str, Any]] = WORKSPACE_TOOLS) -> Any:
        return self.call("session/open", tools=list(tools))

    def submit(self, text: str) -> Any:
        """A human's line (``Runtime.submit``)."""
        result = self.call("user/command", text=text)
        if result["kind"] == "message":
            return self.run_turn(text)
        if result["kind"] == "plan" and result["message"] is not None:
            return self.run_turn(result["message"], view={"rewriting": result["rewriting"]})
        return result

    def run_turn(self, text: str, *, goal_round: bool = False, view: Mapping[str, bool] | None = None) -> str:
        """One whole turn; how it ended (``Runtime.run_turn``)."""
        self.call("turn/start", text=text, goal_round=goal_round, view=dict(view or {}))
        try:
            return self._steps()
        finally:
            self.call("turn/end")

    def _steps(self) -> str:
        step, attempt = 1, 0
        while step <= self.max_steps:
            if not self.call("step/begin", step=step)["accepted"]:
                return "step-rejected"
            context = self.call("step/context", conversation=True)
            try:
                response = self.model.complete(chat_request(context))
            except ModelError as exc:
                if exc.code in RECOVERABLE_MODEL_ERRORS and attempt < self.step_retries:
                    attempt += 1
                    continue
                return "model-error"
            attempt = 0
            self._calls = {c.id: c for c in response.tool_calls}
            calls = [_call_params(c) for c in response.tool_calls]
            reply = self.call(
                "step/reply", text=response.text, tool_calls=calls,
                finish_reason=response.finish_reason, refusal=response.refusal,
            )
            for verdict in reply["verdicts"]:
                self._answer(verdict["call_id"])
            if reply["next"] == "end":
                return str(reply["ended_by"] or "reply")
            step += 1
        return "max-steps"

    def _answer(self, call_id: str) -> None:
        available = self.reviewer is not None and bool(self.reviewer.available)
        action = self.call("tool/dispatch", call_id=call_id, review_available=available)
        if action["action"] == "execute":
            call = self._calls[call_id]
            ok, output = self.executors.execute(call)
            self.call("tool/result", call_id=call.id, ok=ok, output=output)
        elif action["action"] == "review":
            review = action["review"]
            answer = ask(self.reviewer, ReviewRequest(review["plan"], tuple(review["options"])))
            self.call("review/answer", call_id=call_id, **answer_params(answer))

    def drive(self, text: Callable[[int], str] = lambda n: f"Continue the goal (round {n}).") -> Any:
        """Goal rounds until the server says stop (``GoalService.drive``)."""
        while True:
            decision = self.call("goal/should_continue")
            if not decision["proceed"]:
                return decision
            self.run_turn(text(decision["next_round"]), goal_round=True)

