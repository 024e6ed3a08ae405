"""Group commit on PostgreSQL: one-statement appends through one store that
wait while another is under way go out together, in one round trip and one
transaction. Appends to different sessions and to the same one each get the
answer they would get alone; a refused one leaves the others as they were; a
call that fails fails alone and the others land; a connection lost during the
group's round trip gives every grouped caller the outcome ``unknown`` and
acknowledges nobody, and keyed retries then land once.

Each test holds the first append (which goes alone) until the others wait
together, so that they form one group."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg
import pytest

import planfold.adapters.store.postgres as postgres_module
from planfold.adapters.store.base import (
    AppendRejectedError,
    AppendRequest,
    AppendResult,
    IdempotencyMismatchError,
    LeaseLostError,
    StoreBusyError,
    StoreUnavailableError,
)
from planfold.adapters.store.contract import ManualClock
from planfold.adapters.store.postgres import PostgresStore
from planfold.kernel.errors import ConflictError
from planfold.kernel.log import Event
from tests.storage_helpers import batch_after


@dataclass
class Sent:
    """What a store sent: one-statement appends alone, and the sessions of
    each group sent together (in the order sent)."""

    alone: int = 0
    groups: list[list[str]] = field(default_factory=list)


def hold_first(store: PostgresStore, waiting: int, monkeypatch: pytest.MonkeyPatch) -> Sent:
    """From now on, the first append that goes alone is held until ``waiting``
    others wait for the commit; every append sent is recorded."""
    sent = Sent()
    call, calls = postgres_module.call_append, postgres_module.call_appends

    def held(conn: Any, args: Any) -> str | None:
        sent.alone += 1
        if sent.alone == 1:
            deadline = time.monotonic() + 60
            while store.backend.commits.waiting() < waiting:
                assert time.monotonic() < deadline, "the other appends never came"
                time.sleep(0.005)
        return call(conn, args)

    def grouped(conn: Any, batch: Sequence[Sequence[object]]) -> Any:
        sent.groups.append([str(args[0]) for args in batch])
        return calls(conn, batch)

    monkeypatch.setattr(postgres_module, "call_append", held)
    monkeypatch.setattr(postgres_module, "call_appends", grouped)
    return sent


def at_once(calls: Sequence[Callable[[], object]]) -> list[object]:
    """Each call in a thread of its own, the first one first; what each
    answered (its value or its exception)."""
    outcomes: list[object] = [None] * len(calls)

    def run(index: int) -> None:
        try:
            outcomes[index] = calls[index]()
        except Exception as exc:  # the call's outcome, checked by the test
            outcomes[index] = exc

    threads = [threading.Thread(target=run, args=(index,), daemon=True) for index in range(len(calls))]
    threads[0].start()
    time.sleep(0.05)  # the first goes alone
    for thread in threads[1:]:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(thread.is_alive() for thread in threads), "an append never returned"
    return outcomes


def appender(store: PostgresStore, session: str, expected: int, events: list[Event], key: str | None = None,
             **kwargs: Any) -> Callable[[], object]:  # fmt: skip
    return lambda: store.append(AppendRequest(session, expected, events, key, **kwargs))


def facts(store: PostgresStore, session: str) -> tuple[object, ...]:
    return store.read(session), store.projection(session), store.head(session)


def transactions(url: str, sessions: Sequence[str]) -> int:
    """How many transactions wrote the events of ``sessions``."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(DISTINCT xmin::text) FROM planfold_events WHERE session_id = ANY(%s)", (list(sessions),)
        ).fetchone()
    assert row is not None
    return int(row[0])


@pytest.fixture
def store(pg_url: str) -> Iterator[PostgresStore]:
    with PostgresStore(pg_url, pool_size=2) as opened:
        yield opened


def test_appends_to_different_sessions_waiting_together_share_one_transaction_and_each_gets_its_own_answer(
    store: PostgresStore, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions = [f"s{n}" for n in range(6)]
    sent = hold_first(store, len(sessions), monkeypatch)
    outcomes = at_once([appender(store, s, 0, batch_after(0, 2), f"k-{s}") for s in ["first", *sessions]])
    assert outcomes == [AppendResult(s, 1, 2) for s in ["first", *sessions]]
    assert (sent.alone, sent.groups) == (1, [sessions])
    assert transactions(pg_url, sessions) == 1
    for session in ["first", *sessions]:
        assert store.read(session) == tuple(batch_after(0, 2))
        assert store.audit(session).ok
        assert store.append(AppendRequest(session, 0, batch_after(0, 2), f"k-{session}")).replayed


def test_appends_to_one_session_waiting_together_each_get_the_answer_they_would_get_alone(
    store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.append(AppendRequest("s", 0, batch_after(0, 1), "landed"))
    sent = hold_first(store, 6, monkeypatch)
    racing = [appender(store, "s", 1, batch_after(1, 2), f"race-{n}") for n in range(4)]
    retried = appender(store, "s", 0, batch_after(0, 1), "landed")  # the same request again
    reused = appender(store, "s", 1, batch_after(1, 1), "landed")  # another request under the key
    first, *raced, replay, mismatch = at_once([appender(store, "first", 0, batch_after(0, 1)), *racing, retried,
                                               reused])  # fmt: skip
    assert first == AppendResult("first", 1, 1)
    assert sent.groups == [["s"] * 6]
    won = [outcome for outcome in raced if isinstance(outcome, AppendResult)]
    lost = [outcome for outcome in raced if isinstance(outcome, ConflictError)]
    assert won == [AppendResult("s", 2, 3)] and len(lost) == 3
    assert all((c.expected_seq, c.actual_seq) == (1, 3) for c in lost)
    assert replay == AppendResult("s", 1, 1, replayed=True)
    assert isinstance(mismatch, IdempotencyMismatchError)
    assert store.read("s") == tuple(batch_after(0, 3))
    assert store.audit("s").ok


def test_a_refused_append_in_a_group_writes_nothing_and_leaves_the_others_as_they_would_be_alone(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = ManualClock()
    with PostgresStore(pg_url, clock=clock, pool_size=2) as store:
        check_refusals(store, pg_url, clock, monkeypatch)


def check_refusals(store: PostgresStore, pg_url: str, clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """Appends refused by each check, in one group with appends that land."""
    for session in ("stale", "keyed", "fenced", "rejected"):
        store.append(AppendRequest(session, 0, batch_after(0, 2), f"k-{session}"))
    with PostgresStore(pg_url) as other:  # another process moves "stale" on: the store's state of it is stale
        other.append(AppendRequest("stale", 2, batch_after(2, 1)))
    lease = store.acquire_lease("fenced", "host-a", 1_000)
    clock.advance(2_000)  # the lease expired
    refused = {"stale", "keyed", "fenced", "rejected"}
    before = {session: facts(store, session) for session in refused}
    sent = hold_first(store, 6, monkeypatch)
    late = [Event(3, "turn/start", 0, {"turn": 1})]  # back in time: the fold refuses it before anything is sent
    outcomes = at_once([
        appender(store, "first", 0, batch_after(0, 1)),
        appender(store, "a", 0, batch_after(0, 1)),
        appender(store, "stale", 2, batch_after(2, 1)),
        appender(store, "b", 0, batch_after(0, 2)),
        appender(store, "keyed", 2, batch_after(2, 1), "k-keyed"),
        appender(store, "fenced", 2, batch_after(2, 1), lease=lease),
        appender(store, "c", 0, batch_after(0, 3)),
        appender(store, "rejected", 2, late),
    ])  # fmt: skip
    assert sent.groups[0] == sorted(["a", "stale", "b", "keyed", "fenced", "c"])
    assert outcomes[0] == AppendResult("first", 1, 1)
    assert outcomes[1] == AppendResult("a", 1, 1)
    assert outcomes[3] == AppendResult("b", 1, 2)
    assert outcomes[6] == AppendResult("c", 1, 3)
    assert isinstance(outcomes[2], ConflictError) and (outcomes[2].expected_seq, outcomes[2].actual_seq) == (2, 3)
    assert isinstance(outcomes[4], IdempotencyMismatchError)
    assert isinstance(outcomes[5], LeaseLostError)
    assert isinstance(outcomes[7], AppendRejectedError)
    assert {session: facts(store, session) for session in refused} == before
    for session, size in (("a", 1), ("b", 2), ("c", 3), ("first", 1)):
        assert store.read(session) == tuple(batch_after(0, size))
        assert store.audit(session).ok


def test_an_append_whose_call_fails_in_a_group_fails_alone_and_the_others_land(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with PostgresStore(pg_url, pool_size=2, busy_timeout_ms=300) as store, psycopg.connect(pg_url) as holder:
        holder.execute("SELECT pg_advisory_xact_lock(hashtextextended('bad', 0))")  # past the busy timeout
        sent = hold_first(store, 4, monkeypatch)
        sessions = ["first", "a", "bad", "b", "c"]
        outcomes = at_once([appender(store, s, 0, batch_after(0, 2)) for s in sessions])
        holder.rollback()
        failed = outcomes.pop(2)
        assert isinstance(failed, StoreBusyError) and failed.outcome == "not-applied"
        assert isinstance(failed.__cause__, psycopg.errors.LockNotAvailable)
        assert outcomes == [AppendResult(s, 1, 2) for s in sessions if s != "bad"]
        assert sent.groups == [["a", "b", "bad", "c"], ["a", "b", "c"]]  # sent again without it
        assert store.head("bad") == 0
        for session in ("a", "b", "c"):
            assert store.read(session) == tuple(batch_after(0, 2))
            assert store.audit(session).ok
        assert store.append(AppendRequest("bad", 0, batch_after(0, 2))) == AppendResult("bad", 1, 2)


def test_a_group_whose_connection_is_lost_gives_every_caller_outcome_unknown_and_keyed_retries_land_once(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with PostgresStore(pg_url, pool_size=2) as store, psycopg.connect(pg_url) as holder:
        holder.execute("SELECT pg_advisory_xact_lock(hashtextextended('b', 0))")  # the group will wait for it
        holder_pid = holder.info.backend_pid
        hold_first(store, 3, monkeypatch)
        stop = threading.Event()

        def cut_the_waiting_group() -> None:
            with psycopg.connect(pg_url, autocommit=True) as conn:
                while not stop.is_set():
                    row = conn.execute(
                        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND pid <> %s",
                        (holder_pid,),
                    ).fetchone()
                    if row is not None:
                        conn.execute("SELECT pg_terminate_backend(%s)", (row[0],))
                        return
                    time.sleep(0.01)

        cutter = threading.Thread(target=cut_the_waiting_group, daemon=True)
        cutter.start()
        sessions = ["a", "b", "c"]
        outcomes = at_once([appender(store, "first", 0, batch_after(0, 1)),
                            *(appender(store, s, 0, batch_after(0, 2), f"k-{s}") for s in sessions)])  # fmt: skip
        stop.set()
        cutter.join(30)
        holder.rollback()
        assert outcomes[0] == AppendResult("first", 1, 1)
        assert all(isinstance(o, StoreUnavailableError) and o.outcome == "unknown" for o in outcomes[1:]), outcomes
        assert all(isinstance(o, Exception) and isinstance(o.__cause__, psycopg.Error) for o in outcomes[1:])
        for session in sessions:
            assert store.head(session) == 0  # nothing of the group was committed
            result = store.append(AppendRequest(session, 0, batch_after(0, 2), f"k-{session}"))
            assert result == AppendResult(session, 1, 2)
            assert store.append(AppendRequest(session, 0, batch_after(0, 2), f"k-{session}")).replayed
            assert store.read(session) == tuple(batch_after(0, 2))
