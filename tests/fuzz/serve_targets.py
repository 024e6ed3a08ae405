"""The fuzz target of ``planfold serve``: hostile request lines from two
hosts at once, against one store.

An input is a script of lines. A line starting ``A `` or ``B `` goes to that
host's server (anything else goes to A whole); both servers share one store,
so B may work on the session A is driving (concurrent hosts on one
session). Inputs start from valid scripts (a plan-then-build session with a
goal round; two hosts racing on one session) and are mutated: a request's
members replaced by hostile values, lines dropped, repeated, swapped or
moved to the other host (out-of-order calls), and lines of random bytes,
broken JSON, deep nesting, huge strings, unknown methods and batches spliced
in.

For every line the server's ``handle`` must return, never raise; its answer
must be a JSON-RPC 2.0 response (or responses, for a batch) to that request,
with the request's id, and every error must carry planfold's kebab-case code
in ``data.code`` and never be an internal error (a bug the server caught);
only notifications and blank lines go unanswered. A request
answered with an error writes nothing (no partial write), and after every
line every session in the store folds strictly and its projection passes
its audit.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

import msgspec
from hypothesis import strategies as st

from planfold.adapters.cli.serve import ticks
from planfold.adapters.serve.server import Server
from planfold.adapters.store.memory import MemoryStore
from planfold.kernel.errors import ReplayError, is_kebab_case
from planfold.kernel.log import Event
from planfold.kernel.session import fold_session
from tests.fuzz.harness import Clock, FuzzFinding, Target, expect, stable_repr
from tests.fuzz.inputs import byte_mutations, deep_nesting, huge_json_string, render, structural_mutations

__all__ = ["SERVE_SEEDS", "SERVE_TARGETS", "script_bytes"]

SESSION = "s"
START = 1_700_000_000_000

_READ = {
    "name": "read_file", "description": "Read one file.", "effect": "read",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
}
_WRITE = {
    "name": "write_file", "description": "Write one file.", "effect": "write",
    "parameters": {
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"],
    },
}
_PLAN = {
    "plan_spec": {
        "goal": "Add farewell()",
        "steps": ["write it"],
        "verify": ["it exists"],
        "todos": [{"id": "t1", "text": "write farewell()"}],
    }
}

Line = tuple[str, object]


def _request(rid: int, method: str, **params: object) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": {"session": SESSION, **params}}


def _call(call_id: str, name: str, arguments: object) -> dict[str, object]:
    return {"id": call_id, "name": name, "arguments": arguments}


class _Script:
    """One host's requests, numbered in order."""

    def __init__(self) -> None:
        self.requests: list[dict[str, object]] = []

    def send(self, method: str, **params: object) -> None:
        self.requests.append(_request(len(self.requests) + 1, method, **params))

    def tool_step(
        self, step: int, call: dict[str, object], *, text: str | None = None, output: str | None = None
    ) -> None:
        """A step whose reply calls one tool, the call dispatched and, given
        ``output``, its result reported."""
        self.send("step/begin", step=step)
        self.send("step/reply", **({} if text is None else {"text": text}), tool_calls=[call])
        self.send("tool/dispatch", call_id=call["id"])
        if output is not None:
            self.send("tool/result", call_id=call["id"], ok=True, output=output)

    def text_step(self, step: int, text: str) -> None:
        self.send("step/begin", step=step)
        self.send("step/reply", text=text)


def _plan_then_build() -> list[Line]:
    s = _Script()
    s.send("session/open", tools=[_READ, _WRITE])
    s.send("user/command", text="/plan")
    s.send("turn/start", text="Add farewell() to greet.py")
    s.send("step/begin", step=1)
    s.send("step/context", conversation=True)
    s.send("step/reply", tool_calls=[_call("c1", "read_file", {"path": "greet.py"})])
    s.send("tool/dispatch", call_id="c1")
    s.send("tool/result", call_id="c1", ok=True, output="def greet(): ...")
    s.tool_step(2, _call("c2", "write_file", {"path": "greet.py", "content": "x"}))
    s.tool_step(3, _call("c3", "exit_plan_mode", _PLAN), text="Here is my plan.")
    s.send("review/answer", call_id="c3", answer="selected", options=["Approve"])
    s.tool_step(4, _call("c4", "write_file", {"path": "greet.py", "content": "y"}), output="written")
    s.tool_step(5, _call("c5", "update_todo", {"todo_id": "t1", "status": "done"}))
    s.text_step(6, "Done.")
    s.tool_step(7, _call("c6", "report_verification", {"passed": True, "notes": "ok"}))
    s.text_step(8, "Complete.")
    s.send("turn/end")
    s.send("goal/create", objective="Keep it tidy", max_rounds=1)
    s.send("goal/should_continue")
    s.send("turn/start", text="Continue the goal (round 1).", goal_round=True)
    s.text_step(1, "Tidy.")
    s.send("turn/end")
    s.send("goal/should_continue")
    s.send("session/read")
    return [("A", line) for line in s.requests]


def _two_hosts() -> list[Line]:
    r = _request
    return [
        ("A", r(1, "session/open", tools=[_READ])),
        ("B", r(1, "session/open", tools=[_READ])),
        ("A", r(2, "user/choose", active=True)),
        ("B", r(2, "turn/start", text="from B")),
        ("B", r(3, "turn/start", text="from B again")),
        ("A", r(3, "turn/start", text="from A")),
        ("A", r(4, "step/begin", step=1)),
        ("B", r(4, "step/begin", step=1)),
        ("A", r(5, "step/begin", step=1)),
        ("A", r(6, "step/reply", tool_calls=[_call("c1", "read_file", {"path": "a"})])),
        ("B", r(5, "goal/create", objective="race")),
        ("A", r(7, "tool/dispatch", call_id="c1")),
        ("B", r(6, "events/append", events=[{"kind": "assistant/message", "payload": {"text": "hi", "source": None}}])),
        ("A", r(8, "tool/result", call_id="c1", ok=True, output="a")),
        ("B", {"jsonrpc": "2.0", "method": "session/close", "params": {"session": SESSION}}),
        ("A", r(9, "turn/end")),
        ("A", [r(10, "session/read"), r(11, "goal/should_continue"), {"jsonrpc": "2.0", "method": "nope"}]),
    ]


#: The valid scripts mutated into inputs.
SERVE_SEEDS: tuple[tuple[Line, ...], ...] = (tuple(_plan_then_build()), tuple(_two_hosts()))

_KEYS = (
    "jsonrpc", "id", "method", "params", "session", "text", "step", "call_id", "tool_calls", "arguments",
    "arguments_json", "ok", "output", "answer", "options", "ref", "revision", "goal_round", "events", "kind",
    "payload", "tools", "active",
)
_METHODS = ("session/open", "turn/start", "step/begin", "step/reply", "tool/dispatch", "rpc.discover", "nope", "")


def script_bytes(lines: Sequence[tuple[str, bytes]]) -> bytes:
    """Lines of (host, request bytes) as one input."""
    return b"\n".join(host.encode() + b" " + body for host, body in lines)


@st.composite
def _hostile_line(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(("bytes", "deep", "huge", "method", "batch", "blank")))
    if kind == "bytes":
        return draw(st.binary(max_size=64)).replace(b"\n", b" ")
    if kind == "deep":
        return draw(deep_nesting())
    if kind == "huge":
        body = draw(huge_json_string())
        return b'{"jsonrpc":"2.0","id":99,"method":"turn/start","params":{"session":"s","text":' + body + b"}}"
    if kind == "method":
        method = draw(st.sampled_from(_METHODS))
        return json.dumps({"jsonrpc": "2.0", "id": 98, "method": method, "params": {"session": SESSION}}).encode()
    if kind == "batch":
        return b"[]" if draw(st.booleans()) else b'[1, {"jsonrpc":"2.0"}, {"jsonrpc":"2.0","id":7,"method":"nope"}]'
    return b"   "


@st.composite
def _mutated_script(draw: st.DrawFn) -> bytes:
    lines: list[tuple[str, object]] = [(h, copy.deepcopy(v)) for h, v in draw(st.sampled_from(SERVE_SEEDS))]
    out: list[tuple[str, bytes | object]] = list(lines)
    for _ in range(draw(st.integers(0, 4))):
        index = draw(st.integers(0, len(out) - 1))
        host, value = out[index]
        op = draw(st.sampled_from(("mutate", "drop", "repeat", "swap", "rehost", "hostile")))
        if op == "mutate" and not isinstance(value, bytes):
            out[index] = (host, draw(structural_mutations([value], _KEYS)))
        elif op == "drop" and len(out) > 1:
            del out[index]
        elif op == "repeat":
            out.insert(index, (host, copy.deepcopy(value)))
        elif op == "swap" and index + 1 < len(out):
            out[index], out[index + 1] = out[index + 1], out[index]
        elif op == "rehost":
            out[index] = ("B" if host == "A" else "A", value)
        elif op == "hostile":
            out.insert(index, (draw(st.sampled_from("AB")), draw(_hostile_line())))
    return script_bytes([(h, v if isinstance(v, bytes) else render(draw, v)) for h, v in out])


def _seed_bytes() -> list[bytes]:
    return [script_bytes([(h, json.dumps(v).encode()) for h, v in seed]) for seed in SERVE_SEEDS]


def _logs(store: MemoryStore) -> dict[str, tuple[Event, ...]]:
    return {session: store.read(session) for session in store.session_ids()}


def _lenient(body: bytes) -> object:
    try:
        return msgspec.json.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None


def _check_response(response: object, request: object) -> bool:
    """Raise ``FuzzFinding`` unless ``response`` is a JSON-RPC 2.0 response to
    ``request`` (its id when it had a usable one); True for an error."""
    expect(isinstance(response, dict), f"an answer is not an object: {response!r:.200}")
    assert isinstance(response, dict)
    expect(response.get("jsonrpc") == "2.0", "an answer lacks jsonrpc 2.0")
    expect(set(response) in ({"jsonrpc", "id", "result"}, {"jsonrpc", "id", "error"}), f"bad members {set(response)}")
    if isinstance(request, dict) and set(request) <= {"jsonrpc", "id", "method", "params"}:
        rid = request.get("id")
        if isinstance(rid, int | str) and not isinstance(rid, bool):
            expect(response["id"] == rid, f"answered id {response['id']!r} for request id {rid!r}")
    if "error" not in response:
        return False
    error = response["error"]
    expect(isinstance(error, dict) and set(error) == {"code", "message", "data"}, f"bad error {error!r:.200}")
    expect(isinstance(error["code"], int) and isinstance(error["message"], str), "bad error code or message")
    data = error["data"]
    expect(isinstance(data, dict) and isinstance(data.get("code"), str), "an error without data.code")
    expect(is_kebab_case(data["code"]), f"data.code {data['code']!r} is not kebab-case")
    expect(error["code"] != -32603, f"an internal error (a bug): {data.get('detail')!r:.300}")
    return True


def _notification(request: object) -> bool:
    if isinstance(request, list):
        return bool(request) and all(_notification(item) for item in request)
    return isinstance(request, dict) and "id" not in request


def _run_serve(data: bytes, clock: Clock) -> str:
    store = MemoryStore()
    servers = {"A": Server(store, ticks(START)), "B": Server(store, ticks(START))}
    outcome: list[str] = []
    for line in data.split(b"\n"):
        host, body = (line[:1].decode(), line[2:]) if line[:2] in (b"A ", b"B ") else ("A", line)
        before = _logs(store)
        try:
            with clock.timed():
                answer = servers[host].handle(body)
        except Exception as exc:
            raise FuzzFinding(f"handle raised {type(exc).__name__}: {exc!s:.300}") from exc
        request = _lenient(body)
        if answer is None:
            expect(not body.strip() or _notification(request), f"no answer to {body[:200]!r}")
            outcome.append("-")
        else:
            response: Any = msgspec.json.decode(answer)
            if isinstance(response, list):
                expect(isinstance(request, list), "a batch answer to a single request")
                errors = [_check_response(item, None) for item in response]
                failed = all(errors)
                outcome.append("batch:" + "".join("e" if e else "r" for e in errors))
            else:
                failed = _check_response(response, request)
                outcome.append(response["error"]["data"]["code"] if failed else "ok")
            if failed:
                expect(_logs(store) == before, f"a refused request wrote to the store: {body[:200]!r}")
        for session in store.session_ids():
            try:
                fold_session(store.read(session))
            except ReplayError as exc:
                raise FuzzFinding(f"session {session!r} holds a log the fold refuses: {exc}") from exc
            expect(store.audit(session).ok, f"session {session!r} fails its audit")
    heads = {session: store.head(session) for session in store.session_ids()}
    return stable_repr({"answers": outcome, "heads": heads})


SERVE_TARGETS: tuple[Target, ...] = (
    Target(
        "serve",
        "Server.handle",
        _run_serve,
        st.one_of(_mutated_script(), byte_mutations(_seed_bytes())),
    ),
)
