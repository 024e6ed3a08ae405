"""One tool call, traced from the model's reply to its result in the log,
through the synchronous and the asyncio driver: it is one value all the way
(the gate checks and the tool runner executes the very object the model
client returned), and the driver asks the kernel at most four questions
about it: its crossings into the kernel for one call are counted here.

A question is an input the driver hands the turn reducer
(``kernel.step.advance``): the reply, the dispatch of the call, where its
effects land, and the tool's answer. A driver hands an input that appends
once more with the append's time stamped on it; that is the same question,
counted once. The trace runs from the reducer getting the reply to it
getting the tool's answer (whose transition appends ``tool/result``)."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import pytest

import planfold.kernel
from planfold.adapters.llm.model import ChatRequest, ChatResponse, ToolCall
from planfold.adapters.llm.scripted import ScriptedClient
from planfold.adapters.runtime.aio import AsyncRuntime
from planfold.adapters.runtime.loop import Runtime
from planfold.adapters.runtime.tool_runner import ToolRunner
from planfold.adapters.runtime.toolset import default_registry
from planfold.adapters.runtime.workspace import Workspace
from planfold.adapters.store.aio_memory import AsyncMemoryStore
from planfold.adapters.store.memory import MemoryStore
from planfold.kernel.log import TOOL_RESULT
from planfold.kernel.step import ReplyIn, ToolDone

KERNEL = os.path.dirname(planfold.kernel.__file__) + os.sep
FILES = {"app.py": "print('hi')\n"}

#: The kernel functions that decide about a call outside the reducer: the
#: driver must never ask them itself (the reducer does).
DECISIONS = frozenset({"check_call", "decide", "verdict_events", "record_reply", "scope_refusal", "decide_tool_call"})


def _replies() -> tuple[ChatResponse, ChatResponse]:
    call = ToolCall.parse("c1", "read_file", '{"path": "app.py"}')
    return ChatResponse(None, (call,), "tool_calls"), ChatResponse("done", (), "stop")


def _outside_kernel(frame: FrameType | None) -> FrameType | None:
    """The nearest frame of real source (generated dataclass methods have none)."""
    while frame is not None and frame.f_code.co_filename.startswith("<"):
        frame = frame.f_back
    return frame


def _question(event: object) -> object:
    """An input with the time it is stamped with left out."""
    return dataclasses.replace(event, at=0) if hasattr(event, "at") else event  # type: ignore[type-var]


@dataclass
class Trace:
    """What the driver asked the kernel while one call went from the reply to its result."""

    questions: list[object] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)
    gated: list[object] = field(default_factory=list)
    executed: list[object] = field(default_factory=list)
    open: bool = False

    def hook(self, frame: FrameType, event: str, arg: object) -> None:
        if event != "call":
            return
        code = frame.f_code
        if code.co_name == "check_call" and code.co_filename.startswith(KERNEL):
            self.gated.append(frame.f_locals["call"])
        if code.co_name in ("execute", "execute_async") and "tool_runner" in code.co_filename:
            self.executed.append(frame.f_locals["call"])
        caller = _outside_kernel(frame.f_back)
        if not code.co_filename.startswith(KERNEL) or caller is None or caller.f_code.co_filename.startswith(KERNEL):
            return
        if code.co_name == "advance":
            self._input(frame.f_locals["event"])
        elif self.open:
            self.asked.append(code.co_name)

    def _input(self, event: object) -> None:
        if isinstance(event, ReplyIn) and event.reply.calls:
            self.open = True
        if not self.open:
            return
        question = _question(event)
        if not self.questions or self.questions[-1] != question:
            self.questions.append(question)
        if isinstance(event, ToolDone):
            self.open = False

    @contextmanager
    def running(self) -> Iterator[Trace]:
        sys.setprofile(self.hook)
        try:
            yield self
        finally:
            sys.setprofile(None)


class AsyncReplies:
    """An asyncio model port answering with the given replies in order."""

    def __init__(self, *replies: ChatResponse) -> None:
        self._replies = iter(replies)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        return next(self._replies)


def _sync(reply: ChatResponse, final: ChatResponse, trace: Trace) -> tuple[Any, ...]:
    store = MemoryStore()
    runtime = Runtime(store, "s1", ScriptedClient.replies(reply, final), _tools())
    with trace.running():
        runtime.run_turn("read app.py")
    return tuple(store.read("s1"))


def _async(reply: ChatResponse, final: ChatResponse, trace: Trace) -> tuple[Any, ...]:
    async def run() -> tuple[Any, ...]:
        store = AsyncMemoryStore()
        runtime = await AsyncRuntime.open(store, "s1", AsyncReplies(reply, final), _tools())
        with trace.running():
            await runtime.run_turn("read app.py")
        return tuple(await store.read("s1"))

    return asyncio.run(run())


def _tools() -> ToolRunner:
    workspace = Workspace(dict(FILES))
    return ToolRunner(default_registry(), executors=workspace.executors(), resolver=workspace.resolver())


DRIVERS: dict[str, Callable[[ChatResponse, ChatResponse, Trace], tuple[Any, ...]]] = {
    "sync": _sync,
    "asyncio": _async,
}


@pytest.mark.parametrize("driver", sorted(DRIVERS))
def test_one_call_is_one_value_from_the_reply_to_the_executor_and_four_questions_to_the_kernel(
    driver: str,
) -> None:
    reply, final = _replies()
    (call,) = reply.tool_calls
    trace = Trace()
    events = DRIVERS[driver](reply, final, trace)

    assert [event.payload["ok"] for event in events if event.kind == TOOL_RESULT] == [True]
    assert trace.gated and all(seen is call for seen in trace.gated)
    assert len(trace.executed) >= 1 and all(seen is call for seen in trace.executed)
    kinds = [type(question).__name__ for question in trace.questions]
    assert kinds == ["ReplyIn", "Next", "Resolved", "ToolDone"], kinds
    assert len(trace.questions) <= 4
    assert not DECISIONS & set(trace.asked), trace.asked
