"""Runtimes on forked sessions: a fork inside an open turn is continued as
a stopped process's session is (its unanswered calls answered as
interrupted, its turn ended), a goal in a fork starts disarmed, and random
logs forked at random seqs go on independently on both sides under real
turns."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from planfold.adapters.runtime.goal_service import GoalService
from planfold.adapters.store.base import AppendRequest
from planfold.adapters.store.contract_logs import LogBuilder, logs
from planfold.adapters.store.memory import MemoryStore
from planfold.adapters.store.session_log import SessionLog
from planfold.kernel.log import Event
from planfold.kernel.session import fold_session
from planfold.kernel.turn import CALL_INTERRUPTED
from tests.runtime_helpers import batch, call, make_session, say, ticking


def _source_with_two_calls() -> tuple[MemoryStore, tuple[Event, ...]]:
    """A session whose first turn makes two calls in one reply and then replies."""
    store = MemoryStore()
    session, _, _ = make_session(
        [batch(call("list_files", {}), call("read_file", {"path": "README.md"})), say("done")], store=store
    )
    session.runtime.run_turn("Look around")
    return store, tuple(session.log.events)


def test_a_fork_inside_an_open_turn_is_continued_with_its_calls_answered_as_interrupted() -> None:
    store, source = _source_with_two_calls()
    calls = [e for e in source if e.kind == "tool/call"]
    assert len(calls) == 2
    at = calls[-1].seq  # both calls recorded, neither answered yet
    store.fork("s1", at, "fork")
    session, model, _ = make_session([say("carrying on")], store=store, session_id="fork")
    report = session.runtime.run_turn("Where were we?")
    events = session.log.events
    assert events[:at] == source[:at]
    assert report.closed_turn == 1 and report.turn == 2
    closing = events[at : report.first_seq - 1]
    assert [e.kind for e in closing] == ["tool/result", "tool/result", "turn/end"]
    assert [e.payload["call_id"] for e in closing[:2]] == [c.payload["call_id"] for c in calls]
    for result in closing[:2]:
        assert result.payload["ok"] is False
        assert json.loads(str(result.payload["output"]))["error"]["code"] == CALL_INTERRUPTED
    assert fold_session(events) == store.load("fork") and store.audit("fork").ok
    assert store.read("s1") == source  # the source is unchanged
    # the model saw every call of the fork answered
    asked = [c.id for m in model.inner.requests[0].messages for c in getattr(m, "tool_calls", ())]
    answered = [getattr(m, "tool_call_id", None) for m in model.inner.requests[0].messages]
    assert asked and all(call_id in answered for call_id in asked)


def test_a_goal_in_a_fork_starts_disarmed_while_its_source_process_stays_armed() -> None:
    store = MemoryStore()
    log = SessionLog(store, "s1", ticking())
    goals = GoalService(log, "agent-1", lambda: f"goal-{log.last_seq + 1}")
    goals.create(goals.agent, "Ship it", max_rounds=3)
    assert goals.activation.armed
    store.fork("s1", store.head("s1"), "fork")
    forked = SessionLog(store, "fork", ticking())
    in_fork = GoalService(forked, "agent-1", lambda: f"goal-{forked.last_seq + 1}")
    view = in_fork.get(in_fork.agent)
    assert view is not None and view.goal == goals.get(goals.agent).goal  # type: ignore[union-attr]
    assert view.armed is False and not in_fork.activation.armed
    assert goals.activation.armed  # the source's process keeps its own activation
    in_fork.resume(in_fork.agent)  # a human re-arms it, as after any process start
    assert in_fork.activation.armed
    assert store.read("s1") == store.read("fork")[: store.head("s1")]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(builder=logs(), data=st.data())
def test_random_logs_forked_at_random_seqs_go_on_independently_under_real_turns(
    builder: LogBuilder, data: st.DataObject
) -> None:
    if not builder.events:
        builder.turn()
    events = tuple(builder.events)
    at = data.draw(st.integers(min_value=1, max_value=len(events)), label="at")
    note(f"{len(events)} events, fork at {at}: {[e.kind for e in events]}")
    store = MemoryStore()
    store.append(AppendRequest("src", 0, events))
    provenance = store.fork("src", at, "fork")
    assert provenance.seq == at and store.read("fork") == events[:at]
    heads = {}
    for sid, text in (("src", "on the source"), ("fork", "on the fork"), ("src", "again")):
        session, _, _ = make_session([say("ok")], store=store, session_id=sid)
        before = tuple(session.log.events)
        session.runtime.run_turn(text)
        after = store.read(sid)
        assert after[: len(before)] == before  # a turn only appends
        heads[sid] = len(after)
    source, fork = store.read("src"), store.read("fork")
    assert source[: len(events)] == events  # the source's log is its own, and kept
    assert fork[:at] == events[:at]  # the fork's prefix is the source's
    for sid, log in (("src", source), ("fork", fork)):
        assert len(log) == heads[sid]
        assert fold_session(log) == store.load(sid) == store.load(sid, incremental=True)
        assert store.audit(sid).ok
    assert store.provenance("fork") == provenance and store.provenance("src") is None
    texts = [e.payload.get("text") for e in fork if e.kind == "user/message"]
    assert "on the fork" in texts and "on the source" not in texts and "again" not in texts


def test_a_runtime_rewinds_to_a_turn_into_a_new_session_that_goes_on_from_before_that_turn() -> None:
    store = MemoryStore()
    session, _, _ = make_session([say("one"), say("two"), say("two again")], store=store)
    session.runtime.run_turn("first")
    session.runtime.run_turn("second")
    before = store.read("s1")
    made = session.runtime.rewind(2, "s1-rewound")
    second_start = next(e.seq for e in before if e.kind == "turn/start" and e.payload["turn"] == 2)
    assert (made.source, made.seq) == ("s1", second_start - 1)
    assert store.read("s1-rewound") == before[: second_start - 1] and store.read("s1") == before
    again, _, _ = make_session([say("second, again")], store=store, session_id="s1-rewound")
    report = again.runtime.run_turn("second, differently")
    assert report.turn == 2 and fold_session(store.read("s1-rewound")).turns.turn == 2


def test_serve_forks_a_session_at_a_seq_or_a_turn_and_refuses_both_or_neither() -> None:
    from planfold.adapters.cli.serve import ticks  # noqa: PLC0415
    from planfold.adapters.serve.client import RemoteError  # noqa: PLC0415
    from planfold.adapters.serve.server import Server  # noqa: PLC0415
    from tests.serve_host import WORKSPACE_TOOLS, InProcess  # noqa: PLC0415

    store = MemoryStore()
    rpc = InProcess(Server(store, ticks(1_000)))
    rpc.call("session/open", session="s", tools=list(WORKSPACE_TOOLS))
    rpc.call("turn/start", session="s", text="go")
    rpc.call("turn/end", session="s")
    forked = rpc.call("session/fork", session="s", new_session="f", at=2)
    assert (forked["session"], forked["source"], forked["seq"]) == ("f", "s", 2)
    assert store.read("f") == store.read("s")[:2]
    refusals: tuple[tuple[dict[str, int], str], ...] = (
        ({"turn": 1}, "fork-seq-missing"), ({}, "invalid-request"), ({"at": 1, "turn": 1}, "invalid-request"),
    )
    for params, code in refusals:  # turn 1 starts the log: a rewind to it would be an empty session
        try:
            rpc.call("session/fork", session="s", new_session="h", **params)
        except RemoteError as exc:
            assert exc.remote_code == code
        else:
            raise AssertionError(f"{params} was not refused")
    assert store.read("h") == ()
