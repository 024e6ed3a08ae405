"""The JSON-RPC layer of ``planfold serve``: every line gets a JSON-RPC answer,
bad input never stops the server, errors carry planfold's codes, and the
process speaks only protocol on stdout and ends cleanly at end of input."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from planfold.adapters.cli.serve import ticks
from planfold.adapters.serve import server as server_module
from planfold.adapters.serve.client import RemoteError, ServeClient
from planfold.adapters.serve.openrpc import openrpc_document
from planfold.adapters.serve.protocol import METHODS
from planfold.adapters.serve.server import Server
from planfold.adapters.store.memory import MemoryStore
from planfold.adapters.store.sqlite import SqliteStore
from planfold.kernel.session import fold_session
from tests.serve_host import WORKSPACE_TOOLS, InProcess


def _server() -> Server:
    return Server(MemoryStore(), ticks(1_000))


def _answer(server: Server, line: bytes | str) -> Any:
    raw = line.encode() if isinstance(line, str) else line
    answer = server.handle(raw)
    assert answer is not None and b"\n" not in answer
    return msgspec.json.decode(answer)


def _request(method: str, rid: object = 1, **params: object) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()


def _open(server: Server, session: str = "s") -> None:
    InProcess(server).call("session/open", session=session, tools=list(WORKSPACE_TOOLS))


def test_every_method_of_the_protocol_has_a_handler() -> None:
    assert set(_server().handlers) == set(METHODS)


@pytest.mark.parametrize(
    ("line", "code", "planfold_code"),
    [
        (b"not json", -32700, "parse-error"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "session/read"', -32700, "parse-error"),
        (b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":NaN}}', -32700, "parse-error"),
        (b"[" * 200 + b"]" * 200, -32700, "too-deep"),
        (b'"\\ud800"', -32700, "parse-error"),
        (b"1", -32600, "invalid-request"),
        (b"[]", -32600, "invalid-request"),
        (b'{"id": 1, "method": "session/read"}', -32600, "invalid-request"),
        (b'{"jsonrpc": "1.0", "id": 1, "method": "session/read"}', -32600, "invalid-request"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": 7}', -32600, "invalid-request"),
        (b'{"jsonrpc": "2.0", "id": true, "method": "session/read"}', -32600, "invalid-request"),
        (b'{"jsonrpc": "2.0", "id": 1.5, "method": "session/read"}', -32600, "invalid-request"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "session/read", "extra": 1}', -32600, "invalid-request"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "no/such"}', -32601, "method-not-found"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "session/read", "params": ["s"]}', -32602, "invalid-params"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "session/read", "params": {}}', -32602, "invalid-params"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "session/read", "params": {"session": 1}}', -32602, "invalid-params"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "session/read", "params": {"session": ""}}', -32602, "invalid-params"),
    ],
)
def test_a_bad_line_gets_the_standard_error_and_the_server_keeps_serving(
    line: bytes, code: int, planfold_code: str
) -> None:
    server = _server()
    answer = _answer(server, line)
    assert answer["jsonrpc"] == "2.0" and "result" not in answer
    assert answer["error"]["code"] == code
    assert answer["error"]["data"]["code"] == planfold_code
    assert answer["id"] in (None, 1)
    _open(server)
    assert _answer(server, _request("session/read", session="s"))["result"]["session"] == "s"


def test_an_unknown_key_anywhere_in_the_params_is_refused_with_its_path() -> None:
    server = _server()
    _open(server)
    view = {"rewriting": True, "typo": 1}
    answer = _answer(server, _request("turn/start", session="s", text="hi", view=view))
    assert answer["error"]["code"] == -32602
    assert answer["error"]["data"]["detail"] == "unknown key $.view.typo"
    assert _answer(server, _request("session/read", session="s"))["result"]["last_seq"] == 0


def test_an_unknown_key_in_an_object_of_an_array_is_refused_with_its_path() -> None:
    server = _server()
    tool = {"name": "read_file", "description": "d", "parameters": {}, "effect": "read", "typo": 1}
    answer = _answer(server, _request("session/open", session="s", tools=[tool]))
    assert answer["error"]["code"] == -32602
    assert answer["error"]["data"]["detail"] == "unknown key $.tools[0].typo"
    assert _answer(server, _request("session/read", session="s"))["error"]["data"]["code"] == "session-not-open"


@pytest.mark.parametrize(
    ("method", "params", "detail"),
    [
        ("step/begin", {"session": "s", "step": 0}, "$.step: expected a number >= 1, got 0"),
        ("step/reply", {"session": "s", "finish_reason": "x" * 65}, "$.finish_reason: expected at most 64 characters"),
        ("session/open", {"session": "s", "max_tool_calls": -1}, "$.max_tool_calls: expected a number >= 0, got -1"),
        ("goal/create", {"session": "s", "objective": "x", "goal_id": ""}, "$.goal_id: expected at least 1 characters"),
    ],
)
def test_a_value_past_a_limit_the_protocol_states_is_an_invalid_parameter_naming_its_path(
    method: str, params: dict[str, object], detail: str
) -> None:
    server = _server()
    answer = _answer(server, _request(method, **params))
    assert answer["error"]["code"] == -32602 and answer["error"]["data"]["code"] == "invalid-params"
    assert answer["error"]["data"]["detail"].startswith(detail)


def test_a_notification_is_carried_out_and_not_answered() -> None:
    server = _server()
    _open(server)
    line = json.dumps({"jsonrpc": "2.0", "method": "user/choose", "params": {"session": "s", "active": True}})
    assert server.handle(line.encode()) is None
    assert server.handle(b'{"jsonrpc": "2.0", "method": "no/such"}') is None
    assert _answer(server, _request("session/read", session="s"))["result"]["mode"] == "plan"


def test_a_batch_gets_one_array_with_an_answer_per_request_but_none_for_notifications() -> None:
    server = _server()
    _open(server)
    batch = [
        {"jsonrpc": "2.0", "id": "a", "method": "session/read", "params": {"session": "s"}},
        {"jsonrpc": "2.0", "method": "user/choose", "params": {"session": "s", "active": True}},
        {"jsonrpc": "2.0", "id": "b", "method": "no/such"},
        5,
    ]
    answers = _answer(server, json.dumps(batch))
    assert [a["id"] for a in answers] == ["a", "b", None]
    assert "result" in answers[0] and answers[1]["error"]["code"] == -32601 and answers[2]["error"]["code"] == -32600


def test_a_session_must_be_opened_before_it_is_used_and_only_once() -> None:
    server = _server()
    answer = _answer(server, _request("turn/start", session="s", text="hi"))
    assert (answer["error"]["code"], answer["error"]["data"]["code"]) == (-32003, "session-not-open")
    _open(server)
    again = _answer(server, _request("session/open", session="s"))
    assert (again["error"]["code"], again["error"]["data"]["code"]) == (-32003, "session-open")


def test_a_refusal_carries_planfolds_code_and_a_bad_event_its_rule_and_position() -> None:
    server = _server()
    _open(server)
    bad_header = {"kind": "request/header", "payload": {"turn": 1, "step": 1, "plan_mode": False}}
    answer = _answer(server, _request("events/append", session="s", events=[bad_header]))
    error = answer["error"]
    assert error["code"] == -32001
    assert error["data"]["code"] == "replay-error"
    assert error["data"]["position"] == 1 and isinstance(error["data"]["rule"], str)
    goal = _answer(server, _request("goal/pause", session="s", ref={"id": "g", "revision": 1}))
    assert goal["error"]["code"] == -32000 and goal["error"]["data"]["code"] == "not-found"


def test_rpc_discover_answers_the_openrpc_document() -> None:
    answer = _answer(_server(), _request("rpc.discover"))
    assert answer["result"] == openrpc_document()


def test_a_line_longer_than_the_limit_is_skipped_whole_and_the_next_one_answered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(server_module, "MAX_LINE", 64)
    stdin = io.BytesIO(b'{"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"pad": "' + b"a" * 500 + b'"}}\n'
                       + _request("rpc.discover", 2)[:0] + b'{"jsonrpc":"2.0","id":3,"method":"no/such"}\n')
    stdout = io.BytesIO()
    assert _server().serve(stdin, stdout) == 0
    first, second = (msgspec.json.decode(line) for line in stdout.getvalue().splitlines())
    assert first["error"]["data"]["code"] == "request-too-large" and first["id"] is None
    assert second["id"] == 3 and second["error"]["code"] == -32601


def test_the_process_speaks_only_protocol_on_stdout_and_exits_cleanly_at_end_of_input(tmp_path: Path) -> None:
    db = tmp_path / "serve.sqlite"
    lines = [_request("session/open", 1, session="s"), b"garbage", _request("turn/start", 2, session="s", text="hi")]
    done = subprocess.run(
        [sys.executable, "-m", "planfold.adapters.cli", "serve", "--db", str(db)],
        input=b"\n".join(lines) + b"\n", capture_output=True, timeout=60, check=False,
    )
    assert done.returncode == 0
    answers = [msgspec.json.decode(line) for line in done.stdout.splitlines()]
    assert [a["id"] for a in answers] == [1, None, 2]
    assert "ready" in done.stderr.decode()
    with SqliteStore(db) as store:
        assert fold_session(store.read("s")).turns.open


def test_the_client_raises_the_servers_error_with_its_code(tmp_path: Path) -> None:
    with ServeClient.spawn(":memory:") as client:
        with pytest.raises(RemoteError) as refused:
            client.call("session/read", session="nope")
        assert refused.value.rpc_code == -32003 and refused.value.remote_code == "session-not-open"
        assert client.call("session/open", session="s")["last_seq"] == 0
        assert client.close() == 0


def test_a_nul_in_a_session_id_is_an_invalid_parameter_like_any_other() -> None:
    answer = _answer(_server(), _request("session/open", session="s\x00b"))
    assert answer["error"]["code"] == -32602 and answer["error"]["data"]["code"] == "invalid-params"


def test_every_method_caps_its_texts_at_the_same_length_events_append_included() -> None:
    server = _server()
    assert "result" in _answer(server, _request("session/open", session="s"))
    long = "x" * 1_000_001
    for method, params in (
        ("user/command", {"text": long}),
        ("events/append", {"events": [{"kind": "user/message", "payload": {"text": long, "source": None}}]}),
    ):
        answer = _answer(server, _request(method, session="s", **params))
        assert answer["error"]["code"] == -32602, method
    fits = {"kind": "user/message", "payload": {"text": "x" * 1_000_000, "source": None}}
    assert "result" in _answer(server, _request("events/append", session="s", events=[fits]))


def test_session_read_gives_the_step_a_host_goes_on_with() -> None:
    store = MemoryStore()
    server = Server(store, ticks(1_000))
    rpc = InProcess(server)
    rpc.call("session/open", session="s", tools=list(WORKSPACE_TOOLS))
    assert rpc.call("session/read", session="s")["next_step"] == 1
    rpc.call("turn/start", session="s", text="go")
    rpc.call("step/begin", session="s", step=1)
    assert rpc.call("session/read", session="s")["next_step"] == 1  # the step is open: the same one again
    rpc.call("step/reply", session="s", text="thinking", finish_reason="length")
    assert rpc.call("session/read", session="s")["next_step"] == 2
    # another process opens the session mid-turn: the step after the last header
    other = InProcess(Server(store, ticks(1_000_000)))
    assert other.call("session/open", session="s", tools=list(WORKSPACE_TOOLS))["next_step"] == 2


def test_serve_takes_a_store_timeout_and_refuses_one_that_is_not_a_positive_number_of_seconds() -> None:
    import argparse  # noqa: PLC0415

    from planfold.adapters.cli.serve import add_serve_arguments  # noqa: PLC0415

    parser = argparse.ArgumentParser(exit_on_error=False)
    add_serve_arguments(parser)
    assert parser.parse_args(["--db", ":memory:"]).store_timeout == 30.0
    assert parser.parse_args(["--db", ":memory:", "--store-timeout", "2.5"]).store_timeout == 2.5
    for bad in ("0", "-1", "nan", "1e10"):
        with pytest.raises((argparse.ArgumentError, SystemExit)):
            parser.parse_args(["--db", ":memory:", "--store-timeout", bad])
