"""The host protocol as a machine: any method, at any stage, in any order,
with a second host writing to the same session now and then.

A method called where the session's host is not (its ``stage``) is refused
as out of order and nothing changes; a method that fails for any reason
leaves the log and what ``session/read`` says exactly as they were (every
method is atomic); after every step the log folds strictly, the stored
projection matches it, and the stage agrees with the log (``idle`` exactly
when no turn is open)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from planfold.adapters.cli.serve import ticks
from planfold.adapters.serve.client import RemoteError
from planfold.adapters.serve.server import Server
from planfold.adapters.store.memory import MemoryStore
from planfold.kernel.session import fold_session
from tests.serve_host import WORKSPACE_TOOLS, InProcess

SESSION = "s"

#: The stages at which each method may be called (every other one is
#: refused as out of order); read-only methods and choices fit everywhere.
ALLOWED: dict[str, frozenset[str]] = {
    "turn/start": frozenset({"idle"}),
    "turn/end": frozenset({"turn", "step"}),
    "step/begin": frozenset({"turn", "step"}),
    "step/context": frozenset({"step"}),
    "step/reply": frozenset({"step"}),
    "tool/dispatch": frozenset({"calls"}),
    "tool/result": frozenset({"execute"}),
    "review/answer": frozenset({"review"}),
    "goal/create": frozenset({"idle", "turn", "step"}),
    "goal/pause": frozenset({"idle", "turn", "step"}),
    "goal/resume": frozenset({"idle", "turn", "step"}),
    "goal/clear": frozenset({"idle", "turn", "step"}),
    "events/append": frozenset({"idle", "turn", "step"}),
}
OUT_OF_ORDER = frozenset({"out-of-order", "log-sealed", "unexpected-call"})
#: Methods that fit at every stage (a user may choose while a tool runs).
ANYWHERE = frozenset({"user/choose"})
ROUND_SOURCE = {"type": "goal", "goal_id": "g", "revision": 1, "round": 1}
#: What ``session/read`` says about the process rather than the log.
PROCESS = ("pending", "armed", "awaiting")

_PLAN = {
    "goal": "Add farewell()",
    "steps": ["write it"],
    "verify": ["it exists"],
    "todos": [{"id": "t1", "text": "write farewell()"}],
}
#: Calls a model might make, by name: (tool, arguments as raw JSON text).
CALLS: dict[str, tuple[str, str]] = {
    "read": ("read_file", json.dumps({"path": "greet.py"})),
    "write": ("write_file", json.dumps({"path": "greet.py", "content": "x"})),
    "exit": ("exit_plan_mode", json.dumps({"plan_spec": _PLAN})),
    "bootstrap": ("bootstrap_plan", json.dumps({"plan_spec": _PLAN})),
    "todo": ("update_todo", json.dumps({"todo_id": "t1", "status": "done"})),
    "verified": ("report_verification", json.dumps({"passed": True, "notes": "ok"})),
    "failed": ("report_verification", json.dumps({"passed": False, "notes": "no"})),
    "unknown": ("rm_rf", "{}"),
    "broken": ("read_file", '{"path": '),
}
ANSWERS: dict[str, dict[str, Any]] = {
    "approve": {"answer": "selected", "options": ["Approve"]},
    "approve-with-notes": {"answer": "selected", "options": ["Approve"], "text": "keep it short"},
    "keep-planning": {"answer": "selected", "options": ["Keep planning"]},
    "custom": {"answer": "custom", "text": "split the steps"},
    "dismissed": {"answer": "dismissed"},
    "channel-lost": {"answer": "channel-lost"},
}


class HostProtocol(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.store = MemoryStore()
        self.host = InProcess(Server(self.store, ticks(1_000)))
        self.other = InProcess(Server(self.store, ticks(1_000)))
        self.host.call("session/open", session=SESSION, tools=list(WORKSPACE_TOOLS))
        self.other.call("session/open", session=SESSION, tools=list(WORKSPACE_TOOLS))
        self.calls = 0
        self.waiting: list[str] = []

    # -- calling with the contract checked ----------------------------------

    def info(self) -> Any:
        return self.host.call("session/read", session=SESSION)

    def call(self, method: str, **params: Any) -> Any:
        """Call ``method``; check the stage contract and, when it fails, that
        nothing changed. Returns the result or the ``RemoteError``."""
        before, log = self.info(), self.store.read(SESSION)
        stage = before["stage"]
        try:
            result = self.host.call(method, session=SESSION, **params)
        except RemoteError as exc:
            note(f"{method} {params} at {stage} -> {exc.remote_code}: {exc}")
            assert exc.rpc_code != -32603, exc
            assert self.store.read(SESSION) == log, f"{method} failed but wrote"
            after = self.info()
            if before["last_seq"] < len(log):  # the other host wrote: a reload may show it
                assert {k: after[k] for k in PROCESS} == {k: before[k] for k in PROCESS}
            else:
                assert after == before, f"{method} failed but changed the process state"
            if method in ALLOWED and stage not in ALLOWED[method]:
                assert exc.remote_code in OUT_OF_ORDER and exc.rpc_code == -32003
            elif method in ALLOWED or method in ANYWHERE:
                assert exc.remote_code not in ("out-of-order", "log-sealed"), f"{method} refused at {stage}"
            return exc
        note(f"{method} {params} at {stage} -> ok")
        assert method not in ALLOWED or stage in ALLOWED[method], f"{method} ran at {stage}"
        return result

    # -- the rules ----------------------------------------------------------------

    @rule(active=st.booleans())
    def choose(self, active: bool) -> None:
        self.call("user/choose", active=active)

    @rule(text=st.sampled_from(["/plan", "/plan off", "/goal ship it", "/goal pause", "/goal resume", "/goal", "hi"]))
    def command(self, text: str) -> None:
        result = self.call("user/command", text=text)
        if not isinstance(result, RemoteError) and text == "hi":
            assert result["kind"] == "message"

    @rule(goal_round=st.booleans())
    def turn_start(self, goal_round: bool) -> None:
        self.call("turn/start", text="go on", goal_round=goal_round)

    @rule(step=st.integers(1, 4), verdict=st.sampled_from(["accepted", "accepted", "rejected"]))
    def step_begin(self, step: int, verdict: str) -> None:
        self.call("step/begin", step=step, verdict=verdict)

    @rule(conversation=st.booleans())
    def context(self, conversation: bool) -> None:
        result = self.call("step/context", conversation=conversation)
        if not isinstance(result, RemoteError):
            assert result["phase"] == self.info()["phase"]
            assert (result["messages"] is None) != conversation

    @rule(
        names=st.lists(st.sampled_from(sorted(CALLS)), max_size=3),
        text=st.sampled_from([None, "ok"]),
        finish=st.sampled_from([None, "stop", "length", "content_filter"]),
    )
    def reply(self, names: list[str], text: str | None, finish: str | None) -> None:
        calls = []
        for name in names:
            self.calls += 1
            tool, raw = CALLS[name]
            calls.append({"id": f"c{self.calls}", "name": tool, "arguments_json": raw})
        result = self.call("step/reply", text=text, tool_calls=calls, finish_reason=finish)
        if not isinstance(result, RemoteError):
            assert [v["call_id"] for v in result["verdicts"]] == [c["id"] for c in calls]
            if finish in ("length", "content_filter"):
                assert not any(v["allowed"] for v in result["verdicts"])
                assert result["next"] == ("end" if finish == "content_filter" else "continue")
            elif calls:
                assert result["next"] == "continue" and result["ended_by"] is None
            self.waiting = [c["id"] for c in calls]

    @rule(wrong=st.booleans())
    def dispatch(self, wrong: bool) -> None:
        call_id = "nope" if wrong or not self.waiting else self.waiting[0]
        result = self.call("tool/dispatch", call_id=call_id, review_available=True)
        if not isinstance(result, RemoteError):
            assert self.waiting and call_id == self.waiting[0]
            self.waiting.pop(0)
            assert result["remaining"] == len(self.waiting)
            if result["action"] in ("refused", "done"):
                assert isinstance(result["output"], str)

    @rule(ok=st.booleans())
    def tool_result(self, ok: bool) -> None:
        awaiting = self.info()["awaiting"] or "nope"
        self.call("tool/result", call_id=awaiting, ok=ok, output="output")

    @rule(answer=st.sampled_from(sorted(ANSWERS)))
    def review_answer(self, answer: str) -> None:
        awaiting = self.info()["awaiting"] or "nope"
        result = self.call("review/answer", call_id=awaiting, **ANSWERS[answer])
        if not isinstance(result, RemoteError):
            assert (result["review"] == "approved") == answer.startswith("approve")
            assert result["ok"] == answer.startswith("approve")

    @rule()
    def turn_end(self) -> None:
        self.call("turn/end")

    @rule(max_rounds=st.integers(1, 2))
    def goal_create(self, max_rounds: int) -> None:
        self.call("goal/create", objective="keep it tidy", max_rounds=max_rounds)

    @rule(operation=st.sampled_from(["goal/pause", "goal/resume", "goal/clear"]), stale=st.booleans())
    def goal_operation(self, operation: str, stale: bool) -> None:
        goal = self.info()["goal"]
        revision: int = 1 if goal is None else goal["revision"]
        ref = {"id": "g" if goal is None else goal["id"], "revision": revision + 1 if stale else revision}
        result = self.call(operation, ref=ref)
        if stale:
            assert isinstance(result, RemoteError)

    @rule()
    def should_continue(self) -> None:
        before = self.info()
        result = self.call("goal/should_continue")
        if not isinstance(result, RemoteError) and result["proceed"]:
            assert before["goal"] is not None and result["next_round"] == before["goal"]["rounds_started"] + 1

    @rule(kind=st.sampled_from(["assistant", "human", "round"]))
    def append_event(self, kind: str) -> None:
        payloads = {
            "assistant": ("assistant/message", {"text": "noted", "source": None}),
            "human": ("user/message", {"text": "fyi", "source": None}),
            "round": ("user/message", {"text": "x", "source": ROUND_SOURCE}),
        }
        event_kind, payload = payloads[kind]
        result = self.call("events/append", events=[{"kind": event_kind, "payload": payload}])
        if kind == "round":
            assert isinstance(result, RemoteError)

    @precondition(lambda self: self.store.head(SESSION) > 0)
    @rule()
    def another_host_writes(self) -> None:
        """A second host appends a fact to the same session: the first one's
        next write loses the race (``conflict``) and reloads."""
        self.other.call("session/close", session=SESSION)
        self.other.call("session/open", session=SESSION, tools=list(WORKSPACE_TOOLS))
        try:
            self.other.call(
                "events/append", session=SESSION,
                events=[{"kind": "assistant/message", "payload": {"text": "from B", "source": None}}],
            )
        except RemoteError as exc:
            note(f"the other host could not write: {exc}")

    # -- invariants ----------------------------------------------------------------

    @invariant()
    def the_log_folds_and_its_projection_matches(self) -> None:
        events = self.store.read(SESSION)
        state = fold_session(events)
        assert self.store.audit(SESSION).ok
        info = self.info()
        assert info["last_seq"] <= state.last_seq
        assert (info["stage"] == "idle") == (not info["turn_open"])


_PROFILE = settings.default or settings()
HostProtocol.TestCase.settings = settings(
    max_examples=min(_PROFILE.max_examples, 60),
    stateful_step_count=min(_PROFILE.stateful_step_count, 40),
)
test_host_protocol = HostProtocol.TestCase
