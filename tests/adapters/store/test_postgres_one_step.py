"""The one-statement append on PostgreSQL: when the store holds the state an
append builds on, the append is decided in the client and sent as one
statement (``planfold_append``), which makes every check under the session's
lock and writes only when they all hold. Every answer is the one the
transaction gives: conflicts, replays and refused keys, lease fencing and a
held lease, a goal id the index has seen; a stored snapshot the store did not
write, or an append the fold refuses, goes to the transaction; a pooled
connection the server closed is never used for it, and one lost during the
statement leaves the outcome unknown. Two writers on one session, each with
its own store and memo, answer exactly what one in-memory store answers."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

import planfold.adapters.store.postgres as postgres_module
from planfold.adapters.store.base import (
    AppendRejectedError,
    AppendRequest,
    AppendResult,
    IdempotencyMismatchError,
    Lease,
    LeaseHeldError,
    LeaseLostError,
    StoreUnavailableError,
)
from planfold.adapters.store.contract import ManualClock
from planfold.adapters.store.memory import MemoryStore
from planfold.adapters.store.postgres import PostgresStore
from planfold.kernel.errors import ConflictError, PlanfoldError
from planfold.kernel.log import GOAL_CHANGE, USER_MESSAGE, Event
from planfold.kernel.payload import JSONObject
from planfold.kernel.session import fold_session
from tests.pg_cluster import Cluster
from tests.storage_helpers import batch_after, build_log, fewer


@dataclass
class Trips:
    """What a store sent: one-statement appends and transactions."""

    statements: int = 0
    transactions: int = 0

    def take(self) -> tuple[int, int]:
        """The counts since the last take."""
        counts = (self.statements, self.transactions)
        self.statements = self.transactions = 0
        return counts


def watch(store: PostgresStore, monkeypatch: pytest.MonkeyPatch) -> Trips:
    """Count the one-statement appends and the transactions of ``store``."""
    trips = Trips()
    call, run = postgres_module.call_append, store.backend.run

    def counted_call(conn: Any, args: Any) -> str | None:
        trips.statements += 1
        return call(conn, args)

    def counted_run(operation: str, write: bool, body: Callable[[Any], Any]) -> Any:
        trips.transactions += 1
        return run(operation, write, body)

    monkeypatch.setattr(postgres_module, "call_append", counted_call)
    monkeypatch.setattr(store.backend, "run", counted_run)
    return trips


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def store(pg_url: str, clock: ManualClock) -> Iterator[PostgresStore]:
    with PostgresStore(pg_url, clock=clock, pool_size=2) as opened:
        yield opened


def goal_create(goal_id: str, seq: int) -> Event:
    """A create of an active goal at ``seq`` (time = seq)."""
    goal: JSONObject = {"id": goal_id, "revision": 1, "objective": "finish", "phase": "active", "max_rounds": 5,
                        "blocked_reason": None}  # fmt: skip
    payload: JSONObject = {"version": 1, "operation": "create", "goal": goal, "rounds_started": 0,
                           "created_at": seq, "updated_at": seq}  # fmt: skip
    return Event(seq, GOAL_CHANGE, seq, payload)


def goal_clear(goal_id: str, seq: int) -> Event:
    """The clear at ``seq`` of goal ``goal_id``, created just before."""
    payload: JSONObject = {"version": 1, "operation": "clear", "cleared": {"id": goal_id, "revision": 2},
                           "cleared_at": seq}  # fmt: skip
    return Event(seq, GOAL_CHANGE, seq, payload)


def facts(store: PostgresStore, sid: str) -> tuple[Any, ...]:
    return store.read(sid), store.projection(sid), store.lease(sid)


# --------------------------------------------------------------------------
# One statement, with every answer of the transaction


def test_an_append_onto_the_state_the_store_holds_is_one_statement_and_no_transaction(
    store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    trips = watch(store, monkeypatch)
    assert store.append(AppendRequest("s", 0, batch_after(0, 2))) == AppendResult("s", 1, 2)  # a new session
    head = 2
    for size in (1, 2, 1, 3, 1):
        head = store.append(AppendRequest("s", head, batch_after(head, size))).last_seq
    assert trips.take() == (6, 0)
    assert head == 10
    assert store.load("s", incremental=True) == store.load("s") == fold_session(store.read("s"))
    assert store.audit("s").ok


def test_a_stale_expected_seq_is_a_conflict_the_statement_answers_and_nothing_is_written(
    store: PostgresStore, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.append(AppendRequest("s", 0, batch_after(0, 2)))
    with PostgresStore(pg_url) as other:  # another process appends meanwhile
        other.append(AppendRequest("s", 2, batch_after(2, 2)))
    before = facts(store, "s")
    trips = watch(store, monkeypatch)
    with pytest.raises(ConflictError) as info:
        store.append(AppendRequest("s", 2, batch_after(2, 1)))
    assert (info.value.expected_seq, info.value.actual_seq) == (2, 4)
    assert trips.take() == (1, 0)
    assert facts(store, "s") == before
    assert store.append(AppendRequest("s", 4, batch_after(4, 1))).last_seq == 5  # decided again on what is stored
    assert store.audit("s").ok


def test_a_retried_key_is_replayed_and_another_request_under_it_refused_by_the_statement(
    store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    trips = watch(store, monkeypatch)
    first = store.append(AppendRequest("s", 0, batch_after(0, 2), "k"))
    assert store.append(AppendRequest("s", 0, batch_after(0, 2), "k")) == AppendResult("s", 1, 2, replayed=True)
    store.append(AppendRequest("s", 2, batch_after(2, 1)))
    assert trips.take() == (3, 0)
    before = facts(store, "s")
    trips.take()
    with pytest.raises(IdempotencyMismatchError):
        store.append(AppendRequest("s", 3, batch_after(3, 1), "k"))
    assert trips.take() == (1, 0)
    assert facts(store, "s") == before
    retry = store.append(AppendRequest("s", 0, batch_after(0, 2), "k"))
    assert retry == AppendResult("s", first.first_seq, first.last_seq, True)


def test_a_bad_event_under_a_used_key_is_a_key_mismatch_as_the_transaction_answers(
    store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.append(AppendRequest("s", 0, batch_after(0, 2), "k"))
    trips = watch(store, monkeypatch)
    with pytest.raises(IdempotencyMismatchError):  # not the fold's refusal: the key is checked first
        store.append(AppendRequest("s", 2, [Event(3, "plan/nope", 0, {})], "k"))
    assert trips.take() == (0, 1)  # the fold refused it before anything was sent
    assert store.head("s") == 2


def test_leases_fence_the_one_statement_append(
    store: PostgresStore, pg_url: str, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    lease = store.acquire_lease("s", "host-a", 1_000)
    trips = watch(store, monkeypatch)
    assert store.append(AppendRequest("s", 0, batch_after(0, 1))) == AppendResult("s", 1, 1)
    clock.advance(600)
    store.append(AppendRequest("s", 1, batch_after(1, 1), lease=lease))
    assert store.lease("s") == Lease("s", "host-a", lease.token, clock.now + 1_000, 1_000)  # extended
    clock.advance(1_001)
    with pytest.raises(LeaseLostError, match="expired"):
        store.append(AppendRequest("s", 2, batch_after(2, 1), lease=lease))
    with PostgresStore(pg_url, clock=clock) as other:
        taken = other.acquire_lease("s", "host-b", 5_000)
    with pytest.raises(LeaseLostError, match="released or taken over"):
        store.append(AppendRequest("s", 2, batch_after(2, 1), lease=lease))
    # the holder's lease fences in
    assert store.append(AppendRequest("s", 2, batch_after(2, 1), lease=taken)).last_seq == 3
    assert trips.take() == (5, 1)  # the one transaction: store.lease
    assert store.head("s") == 3


def test_a_round_without_the_lease_is_refused_by_the_statement_while_another_holder_has_it(
    store: PostgresStore, pg_url: str, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = build_log(("goal:create", "turn")).events
    store.append(AppendRequest("s", 0, log))
    goal = store.load("s").goal.current
    assert goal is not None
    source: dict[str, str | int] = {"type": "goal", "goal_id": goal.id, "revision": goal.revision, "round": 1}
    head, at = len(log), log[-1].at
    with PostgresStore(pg_url, clock=clock) as other:
        lease = other.acquire_lease("s", "host-b", 1_000)
    trips = watch(store, monkeypatch)
    with pytest.raises(LeaseHeldError) as info:
        store.append(AppendRequest("s", head, [Event(head + 1, USER_MESSAGE, at, {"text": "go on", "source": source})]))
    assert (info.value.holder, info.value.expires_at) == ("host-b", lease.expires_at)
    store.append(AppendRequest("s", head, [Event(head + 1, USER_MESSAGE, at, {"text": "hello", "source": None})]))
    round_ = [Event(head + 2, USER_MESSAGE, at, {"text": "go on", "source": source})]
    assert store.append(AppendRequest("s", head + 1, round_, lease=lease)).last_seq == head + 2
    assert trips.take() == (3, 0)
    assert store.load("s").goal.current.rounds_started == 1  # type: ignore[union-attr]


def test_a_stored_snapshot_the_store_did_not_write_sends_the_append_to_the_transaction(
    store: PostgresStore, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.append(AppendRequest("s", 0, batch_after(0, 3)))
    with psycopg.connect(pg_url, autocommit=True) as conn:  # the same state, other text
        conn.execute("UPDATE planfold_sessions SET fold_state = fold_state || ' ' WHERE id = 's'")
    trips = watch(store, monkeypatch)
    assert store.append(AppendRequest("s", 3, batch_after(3, 1))) == AppendResult("s", 4, 4)
    assert trips.take() == (1, 1)  # refused for its snapshot, decided in the transaction
    assert store.append(AppendRequest("s", 4, batch_after(4, 1))).last_seq == 5
    assert trips.take() == (1, 0)
    assert store.audit("s").ok


def test_a_goal_id_the_store_has_not_seen_used_is_found_in_the_index_and_refused_as_id_reused(
    store: PostgresStore, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.append(AppendRequest("s", 0, [goal_create("g1", 1), goal_clear("g1", 2)]))
    with PostgresStore(pg_url) as fresh:  # its state comes from the snapshot, which holds no goal ids
        fresh.append(AppendRequest("s", 2, [Event(3, USER_MESSAGE, 3, {"text": "hello", "source": None})]))
        before = facts(fresh, "s")
        trips = watch(fresh, monkeypatch)
        with pytest.raises(AppendRejectedError) as info:
            fresh.append(AppendRequest("s", 3, [goal_create("g1", 4)]))
        assert (info.value.position, info.value.rule) == (4, "id-reused")
        assert trips.take() == (1, 1)  # refused by the index, then decided in the transaction
        assert facts(fresh, "s") == before
        trips.take()
        assert fresh.append(AppendRequest("s", 3, [goal_create("g2", 4)])).last_seq == 4
        assert trips.take() == (1, 0)
    with psycopg.connect(pg_url) as conn:
        ids = conn.execute("SELECT goal_id, seq FROM planfold_goal_ids ORDER BY seq").fetchall()
    assert ids == [("g1", 1), ("g2", 4)]


# --------------------------------------------------------------------------
# Connections


def backend_pid(store: PostgresStore) -> int:
    """The server process of the store's one pooled connection."""
    row = store.backend.direct("pid", lambda conn: conn.execute("SELECT pg_backend_pid()").fetchone())
    assert row is not None
    return int(row[0])


def terminate(url: str, pid: int) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
        for _ in range(500):
            if not conn.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone():
                return
            time.sleep(0.01)
    raise AssertionError(f"server process {pid} did not end")


def test_a_connection_the_server_closed_while_pooled_is_not_used_and_the_append_lands(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with PostgresStore(pg_url, pool_size=1) as store:
        store.append(AppendRequest("s", 0, batch_after(0, 1)))
        terminate(pg_url, backend_pid(store))
        trips = watch(store, monkeypatch)
        assert store.append(AppendRequest("s", 1, batch_after(1, 1))) == AppendResult("s", 2, 2)
        assert trips.take() == (1, 0)
        assert store.read("s") == tuple(batch_after(0, 2))


def test_a_connection_lost_during_the_statement_leaves_the_outcome_unknown_and_a_keyed_retry_lands_once(
    pg_url: str,
) -> None:
    with PostgresStore(pg_url, pool_size=1) as store, psycopg.connect(pg_url) as holder:
        store.append(AppendRequest("s", 0, batch_after(0, 1)))
        pid = backend_pid(store)
        holder.execute("SELECT pg_advisory_xact_lock(hashtextextended('s', 0))")  # the append will wait for it
        outcome: list[BaseException] = []

        def append() -> None:
            try:
                store.append(AppendRequest("s", 1, batch_after(1, 1), "k"))
            except BaseException as exc:  # handed to the test below
                outcome.append(exc)

        writer = threading.Thread(target=append)
        writer.start()
        with psycopg.connect(pg_url, autocommit=True) as conn:
            for _ in range(500):
                if conn.execute("SELECT 1 FROM pg_locks WHERE pid = %s AND NOT granted", (pid,)).fetchone():
                    break
                time.sleep(0.01)
        terminate(pg_url, pid)
        writer.join(30)
        holder.rollback()
        assert len(outcome) == 1 and isinstance(outcome[0], StoreUnavailableError), outcome
        assert outcome[0].outcome == "unknown"
        assert store.append(AppendRequest("s", 1, batch_after(1, 1), "k")) == AppendResult("s", 2, 2)
        assert store.append(AppendRequest("s", 1, batch_after(1, 1), "k")).replayed
        assert store.read("s") == tuple(batch_after(0, 2))


# --------------------------------------------------------------------------
# Two writers, each with its own store, against one in-memory store

SESSION = "s"
WRITERS = ("a", "b")
HOLDERS = ("host-a", "host-b")


def outcome(call: Callable[[], object]) -> object:
    """What a call answers: its value, or its error's class and code (and, for
    a conflict, the head it found)."""
    try:
        return call()
    except ConflictError as exc:
        return ("conflict", exc.expected_seq, exc.actual_seq)
    except PlanfoldError as exc:
        return (type(exc).__name__, exc.code)


@dataclass
class Request:
    """A keyed append that was made once."""

    key: str
    expected: int
    size: int


@dataclass
class Writers:
    """The shared state of the machine: the server, the model and what each writer believes."""

    url: str
    clock: ManualClock
    model: MemoryStore
    stores: dict[str, PostgresStore]
    believed: dict[str, int] = field(default_factory=lambda: dict.fromkeys(WRITERS, 0))
    leases: dict[str, Lease] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)


class TwoWriters(RuleBasedStateMachine):
    """Two PostgreSQL stores on one session and one memory store take the very
    same calls; every answer must be the same."""

    def __init__(self, make: Callable[[], Writers]) -> None:
        super().__init__()
        self.w = make()

    def teardown(self) -> None:
        for opened in self.w.stores.values():
            opened.close()

    def _both(self, writer: str, call: Callable[[Any], object]) -> object:
        expected = outcome(lambda: call(self.w.model))
        found = outcome(lambda: call(self.w.stores[writer]))
        assert found == expected, (found, expected)
        return found

    @rule(writer=st.sampled_from(WRITERS), size=st.integers(1, 3), keyed=st.booleans(), fenced=st.booleans())
    def append(self, writer: str, size: int, keyed: bool, fenced: bool) -> None:
        expected = self.w.believed[writer]
        key = f"k{len(self.w.requests)}" if keyed else None
        lease = self.w.leases.get(writer) if fenced else None
        note(f"{writer} appends {size} after {expected} (key {key}, lease {lease})")
        request = AppendRequest(SESSION, expected, batch_after(expected, size), key, lease=lease)
        found = self._both(writer, lambda s: s.append(request))
        if isinstance(found, AppendResult):
            self.w.believed[writer] = found.last_seq
            if key is not None:
                self.w.requests.append(Request(key, expected, size))
        elif isinstance(found, tuple) and found[0] == "conflict":
            self.w.believed[writer] = int(found[2])

    @rule(writer=st.sampled_from(WRITERS), data=st.data(), other=st.booleans())
    def retry(self, writer: str, data: st.DataObject, other: bool) -> None:
        if not self.w.requests:
            return
        made = data.draw(st.sampled_from(self.w.requests))
        expected, size = (self.w.believed[writer], 1) if other else (made.expected, made.size)
        note(f"{writer} sends {made.key} again ({'another request' if other else 'the same request'})")
        self._both(writer, lambda s: s.append(AppendRequest(SESSION, expected, batch_after(expected, size), made.key)))

    @rule(writer=st.sampled_from(WRITERS))
    def reload(self, writer: str) -> None:
        self.w.believed[writer] = self.w.stores[writer].head(SESSION)

    @rule(writer=st.sampled_from(WRITERS))
    def reopen(self, writer: str) -> None:
        note(f"{writer} reopens its store")
        self.w.stores[writer].close()
        self.w.stores[writer] = PostgresStore(self.w.url, clock=self.w.clock, pool_size=1)

    @rule(writer=st.sampled_from(WRITERS), holder=st.sampled_from(HOLDERS), ttl=st.sampled_from([500, 2_000]))
    def acquire(self, writer: str, holder: str, ttl: int) -> None:
        found = self._both(writer, lambda s: s.acquire_lease(SESSION, holder, ttl))
        if isinstance(found, Lease):
            self.w.leases[writer] = found

    @rule(writer=st.sampled_from(WRITERS))
    def release(self, writer: str) -> None:
        lease = self.w.leases.get(writer)
        if lease is not None:
            self._both(writer, lambda s: s.release_lease(lease))

    @rule(ms=st.sampled_from([100, 1_000]))
    def time_passes(self, ms: int) -> None:
        self.w.clock.advance(ms)

    @invariant()
    def the_logs_agree(self) -> None:
        assert self.w.stores["a"].read(SESSION) == self.w.model.read(SESSION)
        assert self.w.stores["b"].lease(SESSION) == self.w.model.lease(SESSION)


def test_two_writers_on_one_session_answer_exactly_what_one_store_in_memory_answers(pg_cluster: Cluster) -> None:
    schemas: list[str] = []

    def make() -> Writers:
        schema = f"w_{len(schemas)}_{time.monotonic_ns()}"
        schemas.append(schema)
        url = pg_cluster.schema_url(schema)
        clock = ManualClock()
        stores = {w: PostgresStore(url, clock=clock, pool_size=1) for w in WRITERS}
        return Writers(url, clock, MemoryStore(clock=clock), stores)

    class Machine(TwoWriters):
        def __init__(self) -> None:
            super().__init__(make)

    try:
        run_state_machine_as_test(
            Machine,
            settings=settings(
                max_examples=fewer(4), stateful_step_count=25, deadline=None,
                suppress_health_check=[HealthCheck.too_slow],
            ),
        )  # fmt: skip
    finally:
        for schema in schemas:
            pg_cluster.drop_schema(schema)
