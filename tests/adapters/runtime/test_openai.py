"""End to end: the runtime and ``planfold demo`` on the real OpenAI-compatible
client, against a chat-completions server on loopback started by the test.

The server (``tests.chat_server``) answers with planned tool calls, so the
whole path is real: the runtime derives each request, the client sends it
over HTTP, the server's JSON comes back through the wire decoder, and the
calls go through the gate and the plan runner into the log.
"""

from __future__ import annotations

import io
import json
import socket
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from planfold.adapters.cli.demo import run_demo
from planfold.adapters.cli.demo_script import after_restart_model, first_model
from planfold.adapters.cli.main import main
from planfold.adapters.llm.model import ChatResponse, ModelError
from planfold.adapters.llm.openai import OpenAIClient, RetryPolicy
from planfold.adapters.runtime.machine import TurnReport
from planfold.adapters.runtime.review import ScriptedReviewer, approve
from planfold.adapters.runtime.toolset import open_runtime
from planfold.adapters.runtime.workspace import Workspace
from planfold.adapters.store.memory import MemoryStore
from planfold.adapters.store.sqlite import SqliteStore
from planfold.kernel.session import fold_session
from tests.chat_server import Answer, ChatServer, Received, completion, tool_call_json
from tests.runtime_helpers import FILES, SPEC, SUMMARY, plan_actions, ticking


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as running:
        yield running


def _answer(reply: ChatResponse) -> Answer:
    """A scripted reply as the server sends it."""
    calls = [tool_call_json(c.id, c.name, c.arguments_json) for c in reply.tool_calls]
    return Answer(body=completion(reply.text, calls))


def _calls(call_id: str, name: str, arguments: dict[str, Any]) -> Answer:
    return Answer(body=completion(None, [tool_call_json(call_id, name, json.dumps(arguments))]))


def _system(received: Received) -> str:
    return "\n".join(m["content"] for m in received.json()["messages"] if m["role"] == "system")


def _tools(received: Received) -> list[str]:
    return [t["function"]["name"] for t in received.json().get("tools", [])]


def test_a_plan_mode_session_runs_through_the_runtime_on_the_openai_client(server: ChatServer) -> None:
    server.plan(
        _calls("call_read", "read_file", {"path": "README.md"}),
        _calls("call_exit", "exit_plan_mode", {"plan_spec": SPEC, "summary_candidate": SUMMARY}),
        Answer(500, b'{"error": "overloaded"}'),  # the first build request fails once
        _calls("call_write", "write_file", {"path": "hello.txt", "content": "hello"}),
        _calls("call_todo", "update_todo", {"todo_id": "t1", "status": "done"}),
        Answer(body=completion("hello.txt is written.")),
        _calls("call_verify", "report_verification", {"passed": True, "notes": "hello.txt says hello"}),
        Answer(body=completion("Done.")),
    )
    policy = RetryPolicy(max_retries=1, initial_delay=0.0, jitter=0.0)
    client = OpenAIClient(server.base_url, "test-model", retry=policy, timeout_s=10)
    reviewer = ScriptedReviewer.of([approve()])
    workspace = Workspace(dict(FILES))
    session = open_runtime(MemoryStore(), "e2e", client, reviewer, workspace, clock=ticking())
    assert session.runtime.submit("/plan") == "committed"
    report = session.runtime.submit("Plan a greeting in hello.txt")
    assert isinstance(report, TurnReport)
    # the client retried the 500 itself, out of the one budget: the runtime did not
    assert report.error is None and report.ended_by == "reply" and report.retries == 0

    events = session.log.events
    assert plan_actions(events) == ["draft", "approve", "start", "todo", "verify", "complete"]
    assert workspace.files["hello.txt"] == "hello" and workspace.writes == 1
    assert [r.plan.startswith("# Plan: ") for r in reviewer.shown] == [True]
    calls = [(e.payload["call_id"], e.payload["tool"]) for e in events if e.kind == "tool/call"]
    assert calls == [
        ("call_read", "read_file"),
        ("call_exit", "exit_plan_mode"),
        ("call_write", "write_file"),
        ("call_todo", "update_todo"),
        ("call_verify", "report_verification"),
    ]
    assert fold_session(events) == session.log.state

    received = server.received
    assert len(received) == 8 and server.unplanned == 0 and server.pending == 0
    # plan mode: read tools and exit_plan_mode, no write tool, the plan policy
    for request in received[:2]:
        assert "exit_plan_mode" in _tools(request) and "write_file" not in _tools(request)
        assert "[plan:policy]" in _system(request)
    # the read's result went back to the server as a tool message
    tool_message = received[1].json()["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "call_read"
    assert "# demo" in tool_message["content"]
    # build: the first request of the new plan (and the client's retry of it) carry the full plan
    for request in received[2:4]:
        assert "write_file" in _tools(request) and "exit_plan_mode" not in _tools(request)
        assert "# Plan: " in _system(request) and "[plan:policy]" not in _system(request)
    assert "# Plan: " not in _system(received[4])
    # verify: report_verification is offered only there
    assert ["report_verification" in _tools(r) for r in received] == [False] * 6 + [True, False]
    assert all(r.json()["model"] == "test-model" for r in received)


def test_the_client_and_the_runtime_share_one_retry_budget(server: ChatServer) -> None:
    server.plan(*[Answer(503, b'{"error": "overloaded"}') for _ in range(20)])
    policy = RetryPolicy(max_retries=3, initial_delay=0.0, jitter=0.0)
    client = OpenAIClient(server.base_url, "test-model", retry=policy, timeout_s=10)
    session = open_runtime(MemoryStore(), "busy", client, None, Workspace(dict(FILES)), clock=ticking())
    report = session.runtime.submit("Hello?")
    assert isinstance(report, TurnReport)
    assert report.ended_by == "model-error" and report.retries == 0
    assert len(server.received) == 4  # the first request and three retries, not 4 x 3
    assert report.error is not None and "gave up after 4 attempt(s)" in report.error
    assert session.runtime.retry_budget is client.retry_budget


def test_a_failure_the_client_will_not_retry_is_not_retried_by_the_runtime(server: ChatServer) -> None:
    server.plan(Answer(401, b'{"error": "bad key"}'), Answer(body=b"not json"), Answer())
    client = OpenAIClient(server.base_url, "test-model", retry=RetryPolicy(max_retries=3), timeout_s=10)
    session = open_runtime(MemoryStore(), "denied", client, None, Workspace(dict(FILES)), clock=ticking())
    report = session.runtime.submit("Hello?")
    assert isinstance(report, TurnReport)
    assert report.ended_by == "model-error" and "HTTP 401" in str(report.error)
    assert len(server.received) == 1


def test_a_refusal_and_a_cut_off_reply_over_http_are_recorded_and_never_complete(server: ChatServer) -> None:
    refusal = {"role": "assistant", "content": None, "refusal": "I can't help with that."}
    server.plan(
        Answer(body=completion("Half of my ans", finish_reason="length")),
        Answer(body={"choices": [{"index": 0, "message": refusal, "finish_reason": "stop"}]}),
    )
    client = OpenAIClient(server.base_url, "test-model", retry=RetryPolicy(max_retries=0), timeout_s=10)
    session = open_runtime(MemoryStore(), "refused", client, None, Workspace(dict(FILES)), clock=ticking())
    report = session.runtime.submit("Hello?")
    assert isinstance(report, TurnReport)
    assert report.ended_by == "refused" and len(server.received) == 2
    events = session.log.events
    texts = [e.payload["text"] for e in events if e.kind == "assistant/message"]
    assert texts == ["Half of my ans", "I can't help with that."]
    notices = [str(e.payload["text"]) for e in events if e.kind == "user/message"][1:]
    assert "finish_reason: length" in notices[0] and "I can't help with that." in notices[1]
    assert fold_session(events) == session.log.state


def _demo_answers() -> list[Answer]:
    """The scripted demo's replies, in order, as a server would send them."""
    steps = (*first_model().steps, *after_restart_model().steps)
    replies = [step.reply for step in steps]
    assert not [r for r in replies if isinstance(r, ModelError)]
    return [_answer(r) for r in replies if isinstance(r, ChatResponse)]


def _payloads(db: Path) -> Sequence[tuple[str, object]]:
    """Every event's kind and payload, less what a model call cost (measured
    over HTTP, never by the scripted model)."""
    with SqliteStore(db) as store:
        assert store.audit("demo-1").ok
        return [(e.kind, {k: v for k, v in e.payload.items() if k != "usage"}) for e in store.read("demo-1")]


def _usages(db: Path) -> list[object]:
    with SqliteStore(db) as store:
        return [e.payload.get("usage") for e in store.read("demo-1") if e.kind == "assistant/message"]


def test_planfold_demo_runs_on_a_chat_completions_server(server: ChatServer, tmp_path: Path) -> None:
    server.plan(*_demo_answers())
    out, err = io.StringIO(), io.StringIO()
    db = tmp_path / "served.sqlite"
    code = main(["demo", "--db", str(db), "--base-url", server.base_url, "--model", "served-model"], out, err)
    text = out.getvalue()
    assert code == 0, text + err.getvalue()
    assert "model: a real OpenAI-compatible server" in text
    assert "the log passes the audit" in text
    assert server.pending == 0 and server.unplanned == 0
    assert {r.json()["model"] for r in server.received} == {"served-model"}
    # the same answers over HTTP give the same log as the scripted model
    scripted = tmp_path / "scripted.sqlite"
    run_demo(str(scripted), io.StringIO())
    assert _payloads(db) == _payloads(scripted)
    # over HTTP each call's latency is measured and recorded; the scripted demo states none
    served = _usages(db)
    assert served and all(isinstance(u, dict) and u["version"] == 1 and u["latency_ms"] >= 0 for u in served)
    assert set(map(str, _usages(scripted))) == {"None"}


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.parametrize("json_output", [False, True])
def test_planfold_demo_reports_an_unreachable_server_clearly(tmp_path: Path, json_output: bool) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    out, err = io.StringIO(), io.StringIO()
    db = tmp_path / "down.sqlite"
    argv = ["demo", "--db", str(db), "--base-url", url, "--model", "m", "--retries", "0", "--timeout", "2"]
    code = main([*argv, "--json"] if json_output else argv, out, err)
    assert code == 2
    if json_output:
        body = json.loads(out.getvalue())
        assert body["ok"] is False and body["error"]["code"] == "model-unusable"
        assert "could not reach the model server" in body["error"]["detail"]
    else:
        message = err.getvalue()
        assert f"the model server at {url} could not be used" in message
        assert "could not reach the model server" in message
        assert "the model could not be used, so the demo stops here" in out.getvalue()
    # what it wrote before stopping is a valid log
    with SqliteStore(db) as store:
        assert store.audit("demo-1").ok
        kinds = [e.kind for e in store.read("demo-1")]
    assert kinds[-1] == "turn/end" and "assistant/message" not in kinds


def test_planfold_demo_with_a_base_url_builds_an_openai_client(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    built: list[object] = []

    def fake_run_demo(db: str, stream: Any, *, model: object = None, **_: object) -> Any:
        built.append(model)
        raise SystemExit(0)

    monkeypatch.setattr("planfold.adapters.cli.main.run_demo", fake_run_demo)
    monkeypatch.setenv("PLANFOLD_TEST_KEY", "sk-x")
    argv = ["demo", "--db", str(tmp_path / "x.sqlite"), "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]
    with pytest.raises(SystemExit):
        main([*argv, "--api-key-env", "PLANFOLD_TEST_KEY", "--retries", "1", "--timeout", "7"])
    [client] = built
    assert isinstance(client, OpenAIClient)
    assert (client.url, client.model, client.timeout_s, client.retry.max_retries) == (
        "http://127.0.0.1:9/v1/chat/completions",
        "m",
        7.0,
        1,
    )
