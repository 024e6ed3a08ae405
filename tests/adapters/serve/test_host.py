"""A session driven by a host through the server: the plan review's answers,
a choice made while the host runs a tool, goal rounds only when the goal may
continue, and two hosts on one session."""

from __future__ import annotations

import json
from typing import Any

import pytest

from planfold.adapters.cli.serve import ticks
from planfold.adapters.serve.client import RemoteError
from planfold.adapters.serve.server import Server
from planfold.adapters.store.base import AppendRequest, AppendResult, ForwardingStore, StorageError, Store
from planfold.adapters.store.memory import MemoryStore
from planfold.kernel.session import fold_session
from planfold.kernel.tools.events import read_tool_result
from planfold.kernel.turn import CALL_INTERRUPTED
from tests.runtime_helpers import SPEC, SUMMARY, BrokenResolver
from tests.serve_host import WORKSPACE_TOOLS, InProcess

S = "s"
PLAN = {"goal": "Add farewell()", "steps": ["write it"], "verify": ["it exists"],
        "todos": [{"id": "t1", "text": "write farewell()"}]}


class Host:
    """A host speaking JSON lines to an in-process server."""

    def __init__(self, server: Server) -> None:
        self.rpc = InProcess(server)
        self.rpc.call("session/open", session=S, tools=list(WORKSPACE_TOOLS))

    def __call__(self, method: str, **params: Any) -> Any:
        return self.rpc.call(method, session=S, **params)

    def reply(self, *calls: tuple[str, str, object]) -> Any:
        tool_calls = [{"id": i, "name": n, "arguments_json": json.dumps(a)} for i, n, a in calls]
        return self("step/reply", tool_calls=tool_calls)


def _planning() -> tuple[Host, MemoryStore]:
    """Plan mode on, a turn open, one step begun."""
    store = MemoryStore()
    host = Host(Server(store, ticks(1_000)))
    host("user/command", text="/plan")
    host("turn/start", text="Add farewell()")
    host("step/begin", step=1)
    return host, store


def _present(host: Host) -> Any:
    host.reply(("c1", "exit_plan_mode", {"plan_spec": PLAN}))
    return host("tool/dispatch", call_id="c1")


def test_a_plan_review_shows_the_rendered_plan_and_an_approval_exits_plan_mode_at_the_next_step() -> None:
    host, store = _planning()
    action = _present(host)
    assert action["action"] == "review" and action["review"]["plan"].startswith("# ")
    assert action["review"]["options"] == ["Approve", "Keep planning"]
    assert fold_session(store.read(S)).plan.status == "draft"  # recorded when presented
    answered = host("review/answer", call_id="c1", answer="selected", options=["Approve"], text="short, please")
    assert answered["ok"] and answered["review"] == "approved"
    assert json.loads(answered["output"])["notes"] == "short, please"
    info = host("session/read")
    assert info["mode"] == "plan" and info["pending"] == {"target": False, "silent": True}
    begun = host("step/begin", step=2)
    assert begun["flushed"] and begun["started"] and begun["phase"] == "build_execute"


@pytest.mark.parametrize(
    ("answer", "status"),
    [
        ({"answer": "selected", "options": ["Keep planning"]}, "keep-planning"),
        ({"answer": "custom", "text": "split the steps"}, "keep-planning"),
        ({"answer": "dismissed"}, "dismissed"),
        ({"answer": "channel-lost"}, "channel-lost"),
    ],
)
def test_every_other_review_answer_fails_the_call_and_plan_mode_stays_on(answer: dict[str, Any], status: str) -> None:
    host, store = _planning()
    _present(host)
    answered = host("review/answer", call_id="c1", **answer)
    assert not answered["ok"] and answered["review"] == status
    assert json.loads(answered["output"])["error"]["code"] == status
    state = fold_session(store.read(S))
    assert state.plan_mode and state.plan.status == "draft"
    assert state.plan.feedback == ("split the steps" if answer.get("text") else None)
    assert host("session/read")["pending"] is None


def test_exit_plan_mode_without_a_reviewer_fails_closed_at_once() -> None:
    host, store = _planning()
    host.reply(("c1", "exit_plan_mode", {"plan_spec": PLAN}))
    action = host("tool/dispatch", call_id="c1", review_available=False)
    assert action["action"] == "done" and action["ok"] is False
    assert json.loads(action["output"])["error"]["code"] == "no-review-channel"
    assert fold_session(store.read(S)).plan.current is None
    assert host("session/read")["stage"] == "turn"


def test_a_forged_write_in_plan_mode_is_refused_with_the_gates_reason() -> None:
    host, _ = _planning()
    recorded = host.reply(("c1", "write_file", {"path": "a", "content": "b"}))
    (verdict,) = recorded["verdicts"]
    assert not verdict["allowed"] and verdict["refusal"]["code"] and verdict["refusal"]["hint"]
    action = host("tool/dispatch", call_id="c1")
    assert action["action"] == "refused" and json.loads(action["output"])["error"]["refused"] is True


def test_a_choice_made_while_the_host_runs_a_tool_is_queued_and_recorded_at_the_next_step() -> None:
    host, store = _planning()
    host.reply(("c1", "read_file", {"path": "greet.py"}))
    assert host("tool/dispatch", call_id="c1")["action"] == "execute"
    with pytest.raises(RemoteError) as sealed:
        host("turn/end")
    assert sealed.value.remote_code == "log-sealed"
    assert host("user/choose", active=False)["outcome"] == "queued"
    host("tool/result", call_id="c1", ok=True, output="def greet(): ...")
    assert fold_session(store.read(S)).plan_mode
    assert host("step/begin", step=2)["flushed"]
    assert not fold_session(store.read(S)).plan_mode


def test_a_goal_round_starts_only_when_the_goal_may_continue_and_the_spent_budget_blocks_it() -> None:
    host = Host(Server(MemoryStore(), ticks(1_000)))
    with pytest.raises(RemoteError) as none:
        host("turn/start", text="round?", goal_round=True)
    assert none.value.remote_code == "round-not-admitted"
    created = host("goal/create", objective="keep it tidy", max_rounds=1, goal_id="g1")
    assert created["ref"] == {"id": "g1", "revision": 1} and created["armed"]
    assert host("goal/should_continue")["next_round"] == 1
    assert host("turn/start", text="Continue the goal (round 1).", goal_round=True)["round"] == 1
    host("turn/end")
    stopped = host("goal/should_continue")
    assert (stopped["proceed"], stopped["reason"]) == (False, "budget-spent")
    assert stopped["goal"]["phase"] == "blocked" and not stopped["armed"] and stopped["blocked_at"]
    with pytest.raises(RemoteError) as stale:
        host("goal/resume", ref=created["ref"])
    assert stale.value.rpc_code == -32000


def test_each_goal_method_and_goal_command_is_the_users_operation_of_its_name() -> None:
    host = Host(Server(MemoryStore(), ticks(1_000)))
    made = host("user/command", text="/goal ship it")
    assert (made["verb"], made["goal"]["id"], made["goal"]["objective"]) == ("create", "goal-1", "ship it")
    edited = host("user/command", text="/goal edit ship it well")
    assert (edited["verb"], edited["goal"]["objective"], edited["goal"]["revision"]) == ("edit", "ship it well", 2)
    ref = {"id": "goal-1", "revision": 2}
    assert host("goal/edit", ref=ref, max_rounds=4)["goal"]["max_rounds"] == 4
    ref["revision"] = 3
    assert host("goal/pause", ref=ref)["goal"]["phase"] == "paused"
    ref["revision"] = 4
    resumed = host("goal/resume", ref=ref)
    assert resumed["goal"]["phase"] == "active" and resumed["armed"]
    ref["revision"] = 5
    blocked = host("goal/block", ref=ref, reason={"code": "needs-human", "message": "stuck"})
    assert blocked["goal"]["blocked_reason"]["code"] == "needs-human" and not blocked["armed"]
    with pytest.raises(RemoteError) as reserved:
        host("goal/block", ref={"id": "goal-1", "revision": 6}, reason={"code": "round-limit", "message": "mine"})
    assert reserved.value.remote_code == "not-authorized"
    assert host("user/command", text="/goal complete")["goal"]["phase"] == "complete"
    cleared = host("goal/clear", ref={"id": "goal-1", "revision": 7})
    assert (cleared["operation"], cleared["goal"]) == ("clear", None)
    assert host("user/command", text="/goal")["goal"] is None


def test_a_spent_budget_is_blocked_only_between_steps() -> None:
    host = Host(Server(MemoryStore(), ticks(1_000)))
    host("goal/create", objective="keep it tidy", max_rounds=1)
    host("turn/start", text="Continue the goal (round 1).", goal_round=True)
    host("step/begin", step=1)
    host.reply(("c1", "read_file", {"path": "a.txt"}))
    with pytest.raises(RemoteError) as busy:
        host("goal/should_continue")
    assert busy.value.remote_code == "out-of-order" and "the budget block" in str(busy.value)
    assert host("session/read")["goal"]["phase"] == "active"
    host("tool/dispatch", call_id="c1")
    host("tool/result", call_id="c1", ok=True, output="A")
    stopped = host("goal/should_continue")
    assert stopped["reason"] == "budget-spent" and stopped["goal"]["phase"] == "blocked"


def test_a_second_host_on_the_same_session_makes_the_first_ones_next_write_a_conflict_that_writes_nothing() -> None:
    store = MemoryStore()
    first, second = Host(Server(store, ticks(1_000))), Host(Server(store, ticks(5_000)))
    first("turn/start", text="from the first host")
    with pytest.raises(RemoteError) as lost:
        second("turn/start", text="from the second host")
    assert (lost.value.rpc_code, lost.value.remote_code) == (-32002, "conflict")
    assert len(store.read(S)) == 2
    assert second("session/read")["turn_open"]  # reloaded: it sees the first host's turn
    second("events/append", events=[{"kind": "assistant/message", "payload": {"text": "hi", "source": None}}])
    with pytest.raises(RemoteError) as again:
        first("turn/end")
    assert again.value.remote_code == "conflict"
    assert first("turn/end")["last_seq"] == 4
    assert fold_session(store.read(S)).last_seq == 4


def _stopped_mid_turn() -> MemoryStore:
    """A session whose host stopped with a reply's two calls unanswered."""
    store = MemoryStore()
    stopped = Host(Server(store, ticks(1_000)))
    stopped("turn/start", text="Read the readme")
    stopped("step/begin", step=1)
    stopped.reply(("c1", "read_file", {"path": "README.md"}), ("c2", "read_file", {"path": "notes.md"}))
    stopped("tool/dispatch", call_id="c1")  # the host stops here: c1 may have run, c2 never did
    return store


def test_a_turn_left_open_by_a_stopped_host_is_ended_with_its_unanswered_calls_answered_as_interrupted() -> None:
    store = _stopped_mid_turn()
    host = Host(Server(store, ticks(5_000)))
    shown = host("session/read")
    assert shown["turn_open"] and shown["stage"] == "turn"
    host("turn/end")
    events = store.read(S)
    answers = [(e.payload["call_id"], e.payload["ok"], json.loads(str(e.payload["output"]))["error"]["code"])
               for e in events if e.kind == "tool/result"]
    assert answers == [("c1", False, "call-interrupted"), ("c2", False, "call-interrupted")]
    assert events[-1].kind == "turn/end" and not fold_session(events).turns.open
    assert host("turn/start", text="Again")["turn"] == 2


def test_a_turn_left_open_by_a_stopped_host_goes_on_with_its_unanswered_calls_answered_before_the_next_step() -> None:
    store = _stopped_mid_turn()
    host = Host(Server(store, ticks(5_000)))
    host("step/begin", step=2)
    after = [(e.kind, e.payload.get("call_id")) for e in store.read(S)][-3:]
    assert after == [("tool/result", "c1"), ("tool/result", "c2"), ("request/header", None)]
    messages = host("step/context", conversation=True)["messages"]
    asked = [c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or ()]
    answered = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert asked == answered == ["c1", "c2"]
    host("step/begin", step=3)  # nothing is answered twice
    assert [e.kind for e in store.read(S)].count("tool/result") == 2


def test_events_append_records_facts_and_refuses_what_planfold_decides() -> None:
    host = Host(Server(MemoryStore(), ticks(1_000)))
    fact = {"kind": "user/message", "payload": {"text": "fyi", "source": None}}
    assert host("events/append", events=[fact, fact]) == {"first_seq": 1, "last_seq": 2}
    round_ = {"kind": "user/message", "payload": {"text": "x", "source": {"type": "goal", "goal_id": "g",
                                                                         "revision": 1, "round": 1}}}
    with pytest.raises(RemoteError) as refused:
        host("events/append", events=[round_])
    assert refused.value.remote_code == "not-recordable"
    with pytest.raises(RemoteError) as decided:
        host("events/append", events=[{"kind": "plan/mode", "payload": {"active": True}}])
    assert decided.value.rpc_code == -32602


def test_a_resolver_that_raises_leaves_the_session_at_turn_so_the_host_can_end_it_and_start_the_next() -> None:
    store = MemoryStore()
    server = Server(store, ticks(1_000))
    host = Host(server)
    server.sessions[S].machine.tools.resolver = BrokenResolver()
    host("turn/start", text="Write new.txt")
    host("step/begin", step=1)
    host.reply(("b1", "bootstrap_plan", {"plan_spec": SPEC, "summary_candidate": SUMMARY}))
    assert host("tool/dispatch", call_id="b1")["ok"]
    assert host("step/begin", step=2)["phase"] == "build_execute"
    host.reply(("w1", "write_file", {"path": "new.txt", "content": "x"}))
    with pytest.raises(RemoteError) as failed:
        host("tool/dispatch", call_id="w1")
    assert failed.value.remote_code == "resolver-failed" and "new.txt went away" in failed.value.message
    assert host("session/read")["stage"] == "turn"
    assert host("turn/end")["turn"] == 1
    answers = [read_tool_result(e.payload) for e in store.read(S) if e.kind == "tool/result"][1:]
    assert [(a.call_id, a.ok, CALL_INTERRUPTED in a.output) for a in answers] == [("w1", False, True)]
    assert host("turn/start", text="Again")["turn"] == 2
    assert store.audit(S).ok and fold_session(store.read(S)) == store.load(S)


class _FailsAfter(ForwardingStore):
    """A store whose appends after the first ``good`` ones fail unwritten."""

    def __init__(self, inner: Store, good: int) -> None:
        super().__init__(inner)
        self.good = good

    def append(self, request: AppendRequest) -> AppendResult:
        if self.good == 0:
            raise StorageError("append", "the disk is full", outcome="not-applied")
        self.good -= 1
        return self.inner.append(request)


def test_a_step_begin_whose_header_fails_keeps_the_queued_choice_it_recorded_in_its_own_append() -> None:
    inner = MemoryStore()
    store = _FailsAfter(inner, 10)
    host = Host(Server(store, ticks(1_000)))
    host("turn/start", text="Plan first")
    assert host("user/choose", active=True)["outcome"] == "queued"
    store.good = 1  # the flush is written, the request header is not
    with pytest.raises(RemoteError) as failed:
        host("step/begin", step=1)
    assert failed.value.remote_code == "storage-failure"
    kinds = [e.kind for e in inner.read(S)]
    assert kinds[-1] != "request/header" and fold_session(inner.read(S)).plan_mode  # the choice stands
    info = host("session/read")
    assert info["stage"] == "turn" and info["pending"] is None and info["mode"] == "plan"
    store.good = 10
    begun = host("step/begin", step=1)
    assert not begun["flushed"] and begun["header_seq"] == inner.head(S)
