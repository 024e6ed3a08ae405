"""OpenTelemetry traces of a session (``planfold.adapters.otel``): the spans
of the demo's session have the names, attributes and parent links that
docs/observability.md lists; model calls carry the GenAI attributes, tool
calls the gate's verdict and rule, reviews their answer, goal rounds their
number; the asyncio runtime is traced the same way; only accepted appends
are traced, and tracing never changes what the runtime does."""

from __future__ import annotations

import asyncio
import itertools
import logging
import re
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from planfold.adapters.cli.demo_script import DEMO_FILES, TASK, after_restart_model, demo_reviewer, first_model
from planfold.adapters.llm.model import (
    ChatRequest,
    ChatResponse,
    ModelClient,
    ModelTimeoutError,
    TokenCount,
    Usage,
)
from planfold.adapters.llm.openai import OpenAIClient
from planfold.adapters.llm.scripted import ScriptedClient
from planfold.adapters.otel import SessionTracer, TracedAsyncStore, TracedStore, instrument
from planfold.adapters.runtime.aio import AsyncRuntime
from planfold.adapters.runtime.goal_lease import LeasedDriver
from planfold.adapters.runtime.goal_service import GoalService
from planfold.adapters.runtime.loop import Runtime
from planfold.adapters.runtime.review import ScriptedReviewer, approve
from planfold.adapters.runtime.tool_runner import ToolRunner
from planfold.adapters.runtime.toolset import default_registry
from planfold.adapters.runtime.workspace import Workspace
from planfold.adapters.store.aio import AsyncStore
from planfold.adapters.store.aio_memory import AsyncMemoryStore
from planfold.adapters.store.aio_threaded import ThreadedStore
from planfold.adapters.store.base import AppendRequest, ForwardingStore, InvalidRequestError, Lease, LeaseLostError
from planfold.adapters.store.memory import MemoryStore
from planfold.kernel.errors import ConflictError
from planfold.kernel.log import Event, turn_start, user_message
from planfold.kernel.plan.review import ReviewAnswer, ReviewRequest
from tests.adapters.scripted_turn import turn_in_a_fresh_interpreter
from tests.chat_server import Answer, ChatServer, completion
from tests.runtime_helpers import call, exit_plan, say

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "observability.md"


class Traces:
    """A tracer provider whose finished spans are kept in memory."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    @property
    def spans(self) -> tuple[ReadableSpan, ...]:
        return tuple(self.exporter.get_finished_spans())

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [span for span in self.spans if span.name.startswith(prefix)]

    def parent(self, span: ReadableSpan) -> ReadableSpan | None:
        if span.parent is None:
            return None
        return next(s for s in self.spans if s.context is not None and s.context.span_id == span.parent.span_id)


@pytest.fixture
def traces() -> Traces:
    return Traces()


def _ticks() -> Callable[[], int]:
    counter = itertools.count()
    return lambda: 1_700_000_000_000 + 1000 * next(counter)


def _runner(workspace: Workspace) -> ToolRunner:
    return ToolRunner(default_registry(), executors=workspace.executors(), resolver=workspace.resolver())


def run_demo_session(traces: Traces) -> MemoryStore:
    """The demo's session (``planfold demo``), each runtime built on traced parts."""
    store, workspace, clock = MemoryStore(), Workspace(dict(DEMO_FILES)), _ticks()
    parts = instrument(store, first_model(), _runner(workspace), demo_reviewer(), tracer_provider=traces.provider)
    runtime = Runtime(parts.store, "demo-1", parts.model, parts.tools, parts.review, clock=clock)
    runtime.submit("/plan")
    runtime.submit(TASK)
    goals = GoalService(runtime.log, "agent-1", lambda: f"goal-{runtime.log.last_seq + 1}")
    goals.create(goals.agent, "Keep README.md and greet.py consistent", max_rounds=2)
    goals.drive(goals.agent, runtime)
    goals.edit(goals.agent, max_rounds=3)
    goals.resume(goals.agent)
    provider = traces.provider
    again = instrument(store, after_restart_model(), _runner(workspace), demo_reviewer(), tracer_provider=provider)
    runtime = Runtime(again.store, "demo-1", again.model, again.tools, again.review, clock=clock)
    goals = GoalService(runtime.log, "agent-1", lambda: f"goal-{runtime.log.last_seq + 1}")
    goals.resume(goals.agent)
    goals.drive(goals.agent, runtime)
    return store


# --------------------------------------------------------------------------
# The table of docs/observability.md


def documented_spans() -> dict[str, tuple[set[str], set[str]]]:
    """Each documented span name (a pattern: `` {model}`` stands for a
    space and any text, or nothing when the name is not known) with its
    parents ("the caller's span" for none) and the attributes it always has."""
    section = DOCS.read_text(encoding="utf-8").split("### The spans", 1)[1]
    rows: dict[str, tuple[set[str], set[str]]] = {}
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        name, parents, always = (cell.strip() for cell in line.strip("|").split("|")[:3])
        ticks = re.compile(r"`([^`]+)`")
        allowed = set(ticks.findall(parents)) | ({"the caller's span"} if "caller" in parents else set())
        rows[ticks.findall(name)[0]] = (allowed, set(ticks.findall(always)))
    return rows


def _row(name: str, rows: dict[str, tuple[set[str], set[str]]]) -> str:
    for pattern in rows:
        if re.fullmatch(re.sub(r"\\ \\\{\w+\\\}", "( .+)?", re.escape(pattern)), name):
            return pattern
    raise AssertionError(f"the span {name!r} is not documented")


def test_the_docs_list_six_spans_with_their_parents_and_attributes() -> None:
    rows = documented_spans()
    assert set(rows) == {
        "planfold.turn", "planfold.goal.round", "chat {model}", "execute_tool {tool}", "planfold.review",
        "planfold.goal.change",
    }  # fmt: skip
    assert all({"planfold.session.id", "planfold.seq"} <= always for _, always in rows.values())
    assert rows["chat {model}"][0] == rows["execute_tool {tool}"][0] == rows["planfold.review"][0] == {"planfold.turn"}


def test_every_span_of_the_demo_session_has_the_documented_name_attributes_and_parent(traces: Traces) -> None:
    run_demo_session(traces)
    rows = documented_spans()
    seen = set()
    for span in traces.spans:
        pattern = _row(span.name, rows)
        seen.add(pattern)
        parents, always = rows[pattern]
        attributes = dict(span.attributes or {})
        assert always <= set(attributes), (span.name, always - set(attributes))
        assert attributes["planfold.session.id"] == "demo-1"
        parent = traces.parent(span)
        assert (parent.name if parent is not None else "the caller's span") in parents, span.name
    assert seen == set(rows)


def test_the_demo_sessions_spans_stand_for_its_events(traces: Traces) -> None:
    store = run_demo_session(traces)
    events = {event.seq: event for event in store.read("demo-1")}
    kinds = {
        "planfold.turn": "turn/start", "planfold.goal.round": "user/message", "chat": "request/header",
        "execute_tool": "tool/call", "planfold.review": "tool/call", "planfold.goal.change": "goal/change",
    }  # fmt: skip
    for span in traces.spans:
        seq = dict(span.attributes or {})["planfold.seq"]
        assert isinstance(seq, int)
        assert events[seq].kind == kinds[span.name.split(" ")[0]], span.name
    turns = traces.named("planfold.turn")
    assert [dict(t.attributes or {})["planfold.turn"] for t in turns] == [1, 2, 3, 4]
    assert len(traces.named("chat")) == sum(e.kind == "request/header" for e in events.values())
    assert len(traces.named("execute_tool")) == sum(e.kind == "tool/call" for e in events.values())
    for span in traces.named("chat") + traces.named("execute_tool") + traces.named("planfold.review"):
        parent = traces.parent(span)
        assert parent is not None and parent.name == "planfold.turn"
        turn = dict(parent.attributes or {})
        seq = dict(span.attributes or {})["planfold.seq"]
        assert isinstance(seq, int) and turn["planfold.seq"] < seq < turn["planfold.turn.end_seq"]  # type: ignore[operator]


def test_the_refused_call_carries_the_gates_verdict_rule_and_event(traces: Traces) -> None:
    run_demo_session(traces)
    calls = traces.named("execute_tool")
    (refused,) = [s for s in calls if dict(s.attributes or {})["planfold.gate.verdict"] != "allowed"]
    attributes = dict(refused.attributes or {})
    assert refused.name == "execute_tool write_file"
    assert (attributes["planfold.gate.verdict"], attributes["planfold.gate.rule"]) == ("refused", "not-offered")
    (event,) = refused.events
    assert event.name == "planfold.tool.refused" and dict(event.attributes or {})["planfold.gate.rule"] == "not-offered"
    turn = traces.parent(refused)
    assert turn is not None and dict(turn.attributes or {})["planfold.turn.refusals"] == 1
    assert "planfold.tool.refused" in [e.name for e in turn.events]
    allowed = [dict(s.attributes or {}) for s in calls if s is not refused]
    assert all(a["planfold.tool.ok"] is True for a in allowed)
    bases = {(a["gen_ai.tool.name"], a["planfold.gate.rule"], a["planfold.gate.route"]) for a in allowed}
    assert ("read_file", "phase-allows", "executor") in bases
    assert ("exit_plan_mode", "runtime-owned", "runtime") in bases
    assert {name for name, _, route in bases if route == "runtime"} == {
        "exit_plan_mode", "bootstrap_plan", "update_todo", "report_verification",
    }  # fmt: skip


def test_the_review_carries_the_exit_calls_seq_and_the_approval(traces: Traces) -> None:
    store = run_demo_session(traces)
    (review,) = traces.named("planfold.review")
    attributes = dict(review.attributes or {})
    call = store.read("demo-1")[int(attributes["planfold.seq"]) - 1]  # type: ignore[arg-type]
    assert call.kind == "tool/call" and call.payload["tool"] == "exit_plan_mode"
    assert attributes["gen_ai.tool.call.id"] == call.payload["call_id"]
    assert (attributes["planfold.review.answer"], attributes["planfold.review.approved"]) == ("selected", True)
    assert attributes["planfold.review.selected"] == ("Approve",)
    turn = traces.parent(review)
    assert turn is not None
    actions = [dict(e.attributes or {})["planfold.plan.action"] for e in turn.events if e.name == "planfold.plan"]
    assert actions[:3] == ["draft", "approve", "start"]


def test_goal_rounds_wrap_their_turns_and_goal_changes_are_spans(traces: Traces) -> None:
    run_demo_session(traces)
    rounds = traces.named("planfold.goal.round")
    assert [dict(r.attributes or {})["planfold.goal.round"] for r in rounds] == [1, 2, 3]
    for round_ in rounds:
        (turn,) = [t for t in traces.named("planfold.turn") if traces.parent(t) is round_]
        assert dict(turn.attributes or {})["planfold.turn"] == dict(round_.attributes or {})["planfold.turn"]
    first = next(t for t in traces.named("planfold.turn") if dict(t.attributes or {})["planfold.turn"] == 1)
    assert traces.parent(first) is None
    changes = [dict(c.attributes or {})["planfold.goal.operation"] for c in traces.named("planfold.goal.change")]
    assert changes == ["create", "block", "edit", "resume", "resume", "block"]


# --------------------------------------------------------------------------
# Model calls


def _session(model: ModelClient, traces: Traces, review: ScriptedReviewer | None = None) -> Runtime:
    workspace = Workspace({"a.txt": "alpha"})
    parts = instrument(MemoryStore(), model, _runner(workspace), review, tracer_provider=traces.provider)
    return Runtime(parts.store, "s", parts.model, parts.tools, parts.review, clock=_ticks())


def test_a_failed_model_call_is_an_error_span_and_its_retry_the_next_attempt(traces: Traces) -> None:
    model = ScriptedClient.replies(say("late"))
    failures = iter([ModelTimeoutError(5.0)])

    class Flaky:
        def complete(self, request: ChatRequest) -> ChatResponse:
            failure = next(failures, None)
            if failure is not None:
                raise failure
            return model.complete(request)

    _session(Flaky(), traces).submit("hello")
    failed, answered = traces.named("chat")
    one, two = dict(failed.attributes or {}), dict(answered.attributes or {})
    assert failed.status.status_code is StatusCode.ERROR and one["error.type"] == "model-timeout"
    assert [e.name for e in failed.events] == ["exception"]
    assert (one["planfold.step"], one["planfold.attempt"]) == (1, 0)
    assert (two["planfold.step"], two["planfold.attempt"]) == (1, 1)
    assert two["planfold.seq"] > one["planfold.seq"]  # type: ignore[operator]
    assert answered.status.status_code is StatusCode.UNSET and "error.type" not in two


def test_the_servers_usage_model_and_finish_reason_are_the_genai_attributes(traces: Traces) -> None:
    usage = Usage(TokenCount(120), TokenCount(8), TokenCount(128))
    reply = ChatResponse("done", (), "stop", usage, model="served-model-2")
    _session(ScriptedClient.replies(reply), traces).submit("hello")
    (span,) = traces.named("chat")
    attributes = dict(span.attributes or {})
    assert span.name == "chat" and "gen_ai.request.model" not in attributes  # the scripted client names no model
    assert attributes["gen_ai.response.model"] == "served-model-2"
    assert (attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]) == (120, 8)
    assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert attributes["gen_ai.operation.name"] == "chat" and attributes["gen_ai.conversation.id"] == "s"


def test_a_client_with_a_model_name_names_its_spans_and_a_refusal_is_an_event(traces: Traces) -> None:
    scripted = ScriptedClient.replies(ChatResponse(None, (), "stop", refusal="I cannot help with that."))

    class Named:
        model = "gpt-test"

        def complete(self, request: ChatRequest) -> ChatResponse:
            return scripted.complete(request)

    _session(Named(), traces).submit("hello")
    (span,) = traces.named("chat")
    assert span.name == "chat gpt-test" and dict(span.attributes or {})["gen_ai.request.model"] == "gpt-test"
    assert [e.name for e in span.events] == ["planfold.model.refusal"]


def test_an_openai_client_names_its_model_and_server_in_its_spans(traces: Traces) -> None:
    usage = {"prompt_tokens": 30, "completion_tokens": 4, "total_tokens": 34}
    with ChatServer() as server, OpenAIClient(server.base_url, "test-model", api_key="sk-test") as client:
        server.plan(Answer(body=completion("hello", usage=usage)))
        _session(client, traces).submit("hello")
        port = server.port
    (span,) = traces.named("chat")
    attributes = dict(span.attributes or {})
    assert span.name == "chat test-model" and span.kind is SpanKind.CLIENT
    assert (attributes["server.address"], attributes["server.port"]) == ("127.0.0.1", port)
    assert (attributes["gen_ai.request.model"], attributes["gen_ai.usage.input_tokens"]) == ("test-model", 30)
    assert all("sk-test" not in str(value) for value in attributes.values())


# --------------------------------------------------------------------------
# Tools and reviews


def test_an_executor_runs_inside_its_calls_span(traces: Traces) -> None:
    seen: list[str] = []
    workspace = Workspace({"a.txt": "alpha"})
    read = workspace.executors()["read_file"]

    def reading(arguments: object) -> object:
        seen.append(getattr(trace.get_current_span(), "name", ""))
        return read(arguments)  # type: ignore[arg-type]

    runner = ToolRunner(default_registry(), executors={"read_file": reading}, resolver=workspace.resolver())  # type: ignore[dict-item]
    model = ScriptedClient.replies(call("read_file", {"path": "a.txt"}), say("alpha"))
    parts = instrument(MemoryStore(), model, runner, tracer_provider=traces.provider)
    Runtime(parts.store, "s", parts.model, parts.tools, parts.review, clock=_ticks()).submit("read it")
    assert seen == ["execute_tool read_file"]
    (span,) = traces.named("execute_tool")
    assert dict(span.attributes or {})["planfold.tool.ok"] is True


def test_a_failed_tool_is_an_error_span_with_its_code(traces: Traces) -> None:
    model = ScriptedClient.replies(call("read_file", {"path": "missing.txt"}), say("no such file"))
    _session(model, traces).submit("read it")
    (span,) = traces.named("execute_tool")
    attributes = dict(span.attributes or {})
    assert attributes["planfold.tool.ok"] is False and span.status.status_code is StatusCode.ERROR
    assert isinstance(attributes["error.type"], str) and attributes["error.type"]


def test_a_review_port_that_raises_is_a_lost_channel_span(traces: Traces) -> None:
    class Gone:
        available = True

        def review(self, request: ReviewRequest) -> ReviewAnswer:
            raise ConnectionError("the reviewer went away")

    workspace = Workspace({"a.txt": "alpha"})
    model = ScriptedClient.replies(exit_plan(), say("waiting"))
    parts = instrument(MemoryStore(), model, _runner(workspace), Gone(), tracer_provider=traces.provider)
    runtime = Runtime(parts.store, "s", parts.model, parts.tools, parts.review, clock=_ticks())
    runtime.submit("/plan")
    runtime.submit("plan it")
    (span,) = traces.named("planfold.review")
    attributes = dict(span.attributes or {})
    assert (attributes["planfold.review.answer"], attributes["planfold.review.approved"]) == ("channel-lost", False)
    assert span.status.status_code is StatusCode.ERROR
    assert runtime.log.state.plan_mode  # the runtime still failed closed


# --------------------------------------------------------------------------
# asyncio


def test_an_asyncio_runtime_is_traced_with_the_same_parent_links(traces: Traces) -> None:
    scripted = ScriptedClient.replies(call("read_file", {"path": "a.txt"}), exit_plan(), say("done"))

    class AsyncScripted:
        async def complete(self, request: ChatRequest) -> ChatResponse:
            return scripted.complete(request)

    class AsyncApprove:
        available = True

        async def review(self, request: ReviewRequest) -> ReviewAnswer:
            return approve()

    async def main() -> None:
        workspace = Workspace({"a.txt": "alpha"})
        parts = instrument(
            MemoryStore(), AsyncScripted(), _runner(workspace), AsyncApprove(), tracer_provider=traces.provider
        )
        runtime = AsyncRuntime(parts.store, "s", parts.model, parts.tools, parts.review, clock=_ticks())
        await runtime.submit("/plan")
        await runtime.submit("plan it")

    asyncio.run(main())
    (turn,) = traces.named("planfold.turn")
    children = sorted((s for s in traces.spans if traces.parent(s) is turn), key=lambda s: s.start_time or 0)
    names = [s.name for s in children]
    assert names.count("chat") == 3 and "execute_tool read_file" in names and "execute_tool exit_plan_mode" in names
    (review,) = traces.named("planfold.review")
    assert traces.parent(review) is turn and dict(review.attributes or {})["planfold.review.approved"] is True


def test_an_asyncio_runtime_over_an_async_store_is_traced_from_its_awaited_appends(traces: Traces) -> None:
    scripted = ScriptedClient.replies(call("read_file", {"path": "a.txt"}), say("done"))

    class AsyncScripted:
        async def complete(self, request: ChatRequest) -> ChatResponse:
            return scripted.complete(request)

    async def main() -> tuple[Event, ...]:
        workspace = Workspace({"a.txt": "alpha"})
        async with AsyncMemoryStore() as store:
            parts = instrument(store, AsyncScripted(), _runner(workspace), tracer_provider=traces.provider)
            assert isinstance(parts.store, TracedAsyncStore)
            runtime = await AsyncRuntime.open(parts.store, "s", parts.model, parts.tools, clock=_ticks())
            await runtime.submit("read it")
            lease = await parts.store.acquire_lease("s", "me", 60_000)
            assert await parts.store.lease("s") == lease and await parts.store.release_lease(lease)
            return await parts.store.read("s")

    events = asyncio.run(main())
    (turn,) = traces.named("planfold.turn")
    assert dict(turn.attributes or {})["planfold.turn.end_seq"] == events[-1].seq
    children = [s.name for s in traces.spans if traces.parent(s) is turn]
    assert sorted(children) == ["chat", "chat", "execute_tool read_file"]
    (tool,) = traces.named("execute_tool")
    assert dict(tool.attributes or {})["planfold.gate.rule"] == "phase-allows"


# --------------------------------------------------------------------------
# What is traced, and what tracing never does


def test_only_accepted_appends_are_traced(traces: Traces) -> None:
    store = TracedStore(MemoryStore(), SessionTracer(traces.provider.get_tracer("t")))
    events = (Event(1, "turn/start", 1, turn_start(1).payload), Event(2, "user/message", 1, user_message("hi").payload))
    with pytest.raises(ConflictError):
        store.append(AppendRequest("s", 5, events))
    assert traces.spans == ()
    store.append(AppendRequest("s", 0, events, "key-1"))
    store.append(AppendRequest("s", 0, events, "key-1"))  # an idempotent retry: nothing new
    assert traces.spans == ()  # the turn is open, its span not ended
    tracer = store.tracer
    tracer.observe("s", (Event(3, "turn/end", 2, turn_start(1).payload),))
    spans: list[ReadableSpan] = list(traces.spans)
    (turn,) = spans
    assert dict(turn.attributes or {})["planfold.seq"] == 1


def test_a_fault_in_the_tracer_never_reaches_the_runtime(traces: Traces, caplog: pytest.LogCaptureFixture) -> None:
    class Broken(TracerProvider):
        def get_tracer(self, *args: object, **kwargs: object) -> trace.Tracer:
            tracer = traces.provider.get_tracer("broken")

            def refuse(*args: object, **kwargs: object) -> trace.Span:
                raise RuntimeError("the exporter is down")

            tracer.start_span = refuse  # type: ignore[method-assign]
            return tracer

    model = ScriptedClient.replies(say("hello"))
    parts = instrument(MemoryStore(), model, ToolRunner(default_registry()), tracer_provider=Broken())
    with caplog.at_level(logging.WARNING, logger="planfold.adapters.otel"):
        report = Runtime(parts.store, "s", parts.model, parts.tools, clock=_ticks()).submit("hi")
    assert getattr(report, "ended_by", None) == "reply"
    assert any("tracing the append failed" in r.getMessage() for r in caplog.records)


def test_untraced_and_traced_runtimes_write_the_same_log() -> None:
    def run(traced: bool) -> tuple[Event, ...]:
        store, workspace = MemoryStore(), Workspace({"a.txt": "alpha"})
        model = ScriptedClient.replies(call("read_file", {"path": "a.txt"}, "c1"), say("alpha"))
        if traced:  # the global provider: no SDK configured, nothing recorded
            parts = instrument(store, model, _runner(workspace))
            Runtime(parts.store, "s", parts.model, parts.tools, clock=_ticks()).submit("read")
        else:
            Runtime(store, "s", model, _runner(workspace), clock=_ticks()).submit("read")
        return store.read("s")

    assert run(True) == run(False)


def test_shared_store_operations_pass_through_or_are_refused(traces: Traces) -> None:
    runner, model = ToolRunner(default_registry()), ScriptedClient.replies()
    plain = instrument(ForwardingStore(MemoryStore()), model, runner).store
    with pytest.raises(InvalidRequestError, match="needs a shared store"):
        plain.acquire_lease("s", "me", 1000)
    shared = instrument(MemoryStore(), model, runner, tracer_provider=traces.provider).store
    lease = shared.acquire_lease("s", "me", 60_000)
    assert shared.lease("s") == lease and shared.release_lease(lease)


def test_shared_store_operations_of_an_async_store_over_a_plain_one_are_refused_and_change_nothing(
    traces: Traces,
) -> None:
    inner = MemoryStore()
    plain = TracedAsyncStore(ThreadedStore(ForwardingStore(inner)), SessionTracer(traces.provider.get_tracer("t")))
    lease = Lease("s", "me", 1, 60_000, 60_000)

    async def refusals() -> list[str]:
        calls: list[Callable[[], Awaitable[object]]] = [
            lambda: plain.acquire_lease("s", "me", 1000),
            lambda: plain.release_lease(lease),
            lambda: plain.lease("s"),
            lambda: anext(plain.follow("s", 0, timeout=0)),
        ]
        refused = []
        for refusal in calls:
            with pytest.raises(InvalidRequestError, match="needs a shared store") as info:
                await refusal()
            refused.append(info.value.code)
        return refused

    assert asyncio.run(refusals()) == ["invalid-request"] * 4
    assert inner.head("s") == 0 and inner.lease("s") is None


def test_a_fenced_append_through_a_traced_wrapper_of_a_shared_store_is_fenced_by_the_store_below(
    traces: Traces,
) -> None:
    inner = MemoryStore()
    tracer = SessionTracer(traces.provider.get_tracer("t"))
    lease = inner.acquire_lease("s", "me", 60_000)
    lost = Lease("s", "me", lease.token + 1, lease.expires_at, lease.ttl_ms)
    only_append = SimpleNamespace(append=ThreadedStore(inner).append)  # an async store that is not a shared one
    traced_async = TracedAsyncStore(cast("AsyncStore", only_append), tracer)
    traced = TracedStore(ForwardingStore(inner), tracer)

    def said(seq: int, text: str, held: Lease) -> AppendRequest:
        return AppendRequest("s", seq - 1, (Event(seq, "user/message", 5, user_message(text).payload),), lease=held)

    traced.append(AppendRequest("s", 0, (Event(1, "turn/start", 5, turn_start(1).payload),), lease=lease))
    with pytest.raises(LeaseLostError):
        traced.append(said(2, "a", lost))
    asyncio.run(traced_async.append(said(2, "b", lease)))
    with pytest.raises(LeaseLostError):
        asyncio.run(traced_async.append(said(3, "c", lost)))
    assert [event.payload.get("text") for event in inner.read("s")] == [None, "b"]
    live = inner.lease("s")
    assert live is not None and (live.holder, live.token) == ("me", lease.token)


def test_a_leased_goal_drive_through_the_traced_store_traces_its_rounds(traces: Traces) -> None:
    store = MemoryStore()
    model = ScriptedClient.replies(say("round one"), say("round two"))
    parts = instrument(store, model, ToolRunner(default_registry()), tracer_provider=traces.provider)
    runtime = Runtime(parts.store, "s", parts.model, parts.tools, clock=_ticks())
    goals = GoalService(runtime.log, "agent-1", lambda: f"goal-{runtime.log.last_seq + 1}")
    goals.create(goals.agent, "Say hello twice", max_rounds=2)
    drive = LeasedDriver(goals, parts.store, holder="me").drive(goals.agent, runtime)
    assert drive.rounds == (1, 2)
    assert [dict(r.attributes or {})["planfold.goal.round"] for r in traces.named("planfold.goal.round")] == [1, 2]


def test_tracing_is_off_unless_a_program_imports_it() -> None:
    done = turn_in_a_fresh_interpreter(
        "say('hello')",
        then="print(sorted(name for name in sys.modules"
        " if name.startswith(('opentelemetry', 'planfold.adapters.otel'))))",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_without_the_extra_the_module_says_which_extra_to_install() -> None:
    program = "import sys\nsys.modules['opentelemetry'] = None\nimport planfold.adapters.otel\n"
    done = subprocess.run([sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert "ImportError: planfold.adapters.otel needs OpenTelemetry's API: pip install 'planfold[otel]'" in done.stderr

