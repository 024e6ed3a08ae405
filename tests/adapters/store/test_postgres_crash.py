"""Crashes around the PostgreSQL store: writers killed with SIGKILL at random
points, and the server itself stopped with ``pg_ctl -m immediate`` (no
shutdown checkpoint, as a crash) and started again while they write.

These tests run a server of their own, so stopping it disturbs no other test;
they are all marked slow (the server of their own takes seconds to start).
In each of ``ROUNDS`` rounds two writer processes race keyed appends onto one
session, reporting every append that returned (an acknowledged append) and
every error, and are killed with SIGKILL after random delays; in every
``RESTART_EVERY``-th round the server crashes and restarts under them first.
Writers retry an append whose outcome is unknown with its idempotency key.
After every round a fresh store must find: no acknowledged event lost, none
duplicated (the log is exactly ``event_at(1..N)``, every acknowledged key
names the seqs it was acknowledged with), strict replay and audit passing, and
the writers must have seen only typed errors.

A second kill test does the same with one writer process whose threads
append through one store, each to a session of its own and now and then to
one they share, so that their appends commit in groups (group commit), with
the same checks for every session.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection
from multiprocessing.context import ForkServerContext

import psycopg
import pytest

from planfold.adapters.store.base import AppendRequest, StoreUnavailableError
from planfold.adapters.store.postgres import PostgresStore
from planfold.kernel.session import fold_session
from tests.adapters.store.processes import kill, writer_processes
from tests.pg_cluster import Cluster
from tests.storage_workers import batch_after, event_at, fault_writer, group_fault_writer, stress_context
from tests.system_programs import postgres

ROUNDS = 30
RESTART_EVERY = 5
SESSION = "crash"


@pytest.fixture(scope="module")
def own_cluster() -> Iterator[Cluster]:
    """A server only this module uses (its tests stop and start it)."""
    postgres()
    with Cluster() as cluster:
        yield cluster


@pytest.fixture
def url(own_cluster: Cluster) -> Iterator[str]:
    if not own_cluster.running:
        own_cluster.start()
    schema = f"crash_{os.getpid()}_{random.randrange(10**9)}"
    yield own_cluster.schema_url(schema)
    if not own_cluster.running:
        own_cluster.start()
    own_cluster.drop_schema(schema)


# --------------------------------------------------------------------------
# One store through a restart


@pytest.mark.slow
def test_a_store_keeps_working_after_the_server_restarts(own_cluster: Cluster, url: str) -> None:
    with PostgresStore(url, pool_size=3) as store:
        store.append(AppendRequest("s", 0, batch_after(0, 2)))
        for _ in range(3):  # every pooled connection is dead afterwards
            own_cluster.stop("immediate")
            own_cluster.start()
            head = store.head("s")
            store.append(AppendRequest("s", head, batch_after(head, 1)))
        assert store.read("s") == tuple(batch_after(0, 5))
        assert store.audit("s").ok


@pytest.mark.slow
def test_calls_while_the_server_is_down_get_store_unavailable_and_change_nothing(
    own_cluster: Cluster, url: str
) -> None:
    with PostgresStore(url, timeout=1) as store:
        store.append(AppendRequest("s", 0, batch_after(0, 1)))
        own_cluster.stop("immediate")
        try:
            for call in (lambda: store.append(AppendRequest("s", 1, batch_after(1, 1))), lambda: store.head("s")):
                with pytest.raises(StoreUnavailableError) as info:
                    call()
                assert info.value.outcome == "not-applied"
        finally:
            own_cluster.start()
    with PostgresStore(url) as fresh:
        assert fresh.read("s") == tuple(batch_after(0, 1))


@pytest.mark.slow
def test_a_follower_whose_server_goes_away_gets_store_unavailable(own_cluster: Cluster, url: str) -> None:
    with PostgresStore(url) as store:
        store.append(AppendRequest("s", 0, batch_after(0, 1)))
        follower = store.follow("s", 0, timeout=30)
        assert next(follower) == event_at(1)
        own_cluster.stop("immediate")
        try:
            with pytest.raises(StoreUnavailableError):
                next(follower)
        finally:
            own_cluster.start()
        assert tuple(store.follow("s", 0, timeout=0)) == (event_at(1),)


# --------------------------------------------------------------------------
# Writers killed and the server crashed, round after round


#: Every acknowledged append: its key, and the session and last seq it was acknowledged with.
Acks = dict[str, tuple[str, int]]


def drain(reader: Connection, acks: Acks, errors: list[tuple[str, bool, str]]) -> None:
    """Every message a writer sent before it died."""
    while reader.poll(2):
        try:
            message = reader.recv()
        except EOFError:
            break
        if message[0] == "ack":
            _, last, key, _, session = message
            acks[key] = (session, last)
        elif message[0] == "error":
            errors.append((message[1], message[2], message[3]))


def writer_round(
    ctx: ForkServerContext,
    cluster: Cluster,
    url: str,
    *,
    rng: random.Random,
    number: int,
    acks: Acks,
    errors: list[tuple[str, bool, str]],
    crash: bool,
    sessions: Sequence[str] = (),
) -> None:
    """Two writer processes on ``SESSION`` (or, given ``sessions``, one whose
    threads commit in groups: ``group_fault_writer``), killed after random
    delays, the server crashed and restarted under them first if ``crash``."""
    plans: list[tuple[Callable[..., None], tuple[object, ...]]] = (
        [(group_fault_writer, (url, list(sessions)))] if sessions else [(fault_writer, (url, SESSION))] * 2
    )
    with writer_processes(ctx) as writers:
        for index, (target, where) in enumerate(plans):
            writers.start(target, *where, f"r{number}w{index}", rng.randrange(2**32))
        for reader in writers.readers:
            assert reader.poll(60), "a writer never became ready"
            assert reader.recv() == ("ready",)
        if crash:
            time.sleep(rng.uniform(0.05, 0.3))
            cluster.stop("immediate")
            time.sleep(rng.uniform(0, 0.3))
            cluster.start()
            time.sleep(rng.uniform(0.3, 0.8))  # the writers reconnect and go on
        for proc in sorted(writers.procs, key=lambda _: rng.random()):
            time.sleep(rng.uniform(0, 0.2))
            kill(proc)
        for reader in writers.readers:
            drain(reader, acks, errors)


def quiesce(url: str) -> None:
    """End every other session on the server and wait until they are gone: a
    killed writer's backend can still be finishing its last statement (and
    commit it) after the writer process died, which would move the log under
    the checks below."""
    deadline = time.monotonic() + 30
    with psycopg.connect(url, autocommit=True) as conn:
        others = "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        conn.execute(f"SELECT pg_terminate_backend(pid) {others}")
        while conn.execute(f"SELECT count(*) {others}").fetchone() != (0,):
            assert time.monotonic() < deadline, "other sessions did not end"
            time.sleep(0.05)


def verify(url: str, acks: Acks, sessions: Sequence[str] = (SESSION,)) -> None:
    quiesce(url)
    for session in sessions:
        acked = {key: last for key, (where, last) in acks.items() if where == session}
        with PostgresStore(url) as store:
            events = store.read(session)
            head = len(events)
            most = max(acked.values(), default=0)
            assert head >= most, f"acknowledged seq {most} of {session} lost: the log ends at {head}"
            assert list(events) == [event_at(seq) for seq in range(1, head + 1)]  # no gap, no duplicate
            state = store.load(session)  # strict replay
            assert state == fold_session(events)
            assert store.load(session, incremental=True) == state
            report = store.audit(session)
            assert report.ok, report.mismatches
        with psycopg.connect(url) as conn:
            rows = conn.execute("SELECT key, last_seq FROM planfold_append_keys WHERE session_id = %s", (session,))
            keys: dict[str, int] = dict(rows)
        for key, last in acked.items():
            assert keys.get(key) == last, f"acknowledged append {key} (to seq {last}) is not recorded once"


def crash_rounds(cluster: Cluster, url: str, rounds: int, seed: int, sessions: Sequence[str] = ()) -> Acks:
    """``rounds`` of ``writer_round`` (the server crashed in every
    ``RESTART_EVERY``-th), each checked by ``verify``; every acknowledged
    append. The writers saw only typed errors, and the crashes among them."""
    ctx = stress_context()
    rng = random.Random(seed)
    PostgresStore(url).close()
    acks: Acks = {}
    errors: list[tuple[str, bool, str]] = []
    for number in range(rounds):
        crash = number % RESTART_EVERY == RESTART_EVERY - 1
        writer_round(ctx, cluster, url, rng=rng, number=number, acks=acks, errors=errors, crash=crash,
                     sessions=sessions)  # fmt: skip
        verify(url, acks, sessions or (SESSION,))
    assert all(typed for _, typed, _ in errors), [e for e in errors if not e[1]]
    assert {code for code, _, _ in errors} <= {"store-unavailable", "store-busy", "storage-failure"}
    assert any(code == "store-unavailable" for code, _, _ in errors)  # the crashes were seen
    return acks


@pytest.mark.slow
def test_writers_killed_and_server_crashes_never_lose_or_duplicate_an_acknowledged_event(
    own_cluster: Cluster, url: str
) -> None:
    assert crash_rounds(own_cluster, url, ROUNDS, 20240612), "no append was ever acknowledged"


#: The group writer commits its threads' appends on one connection, so a crash
#: reaches it as at most one error (none when the connection was idle and the
#: pool replaced it): six crashes make the assertion that one was seen hold.
GROUP_ROUNDS = 30
GROUP_SESSIONS = (*(f"thread-{n}" for n in range(4)), "shared")


@pytest.mark.slow
def test_a_writer_whose_threads_commit_in_groups_killed_and_server_crashes_never_lose_or_duplicate_anything(
    own_cluster: Cluster, url: str
) -> None:
    acks = crash_rounds(own_cluster, url, GROUP_ROUNDS, 20261203, GROUP_SESSIONS)
    assert {session for session, _ in acks.values()} == set(GROUP_SESSIONS)
    with psycopg.connect(url) as conn:  # transactions that wrote the events of several sessions: groups
        row = conn.execute(
            "SELECT count(*) FROM (SELECT xmin::text FROM planfold_events GROUP BY xmin::text"
            " HAVING count(DISTINCT session_id) > 1) AS grouped"
        ).fetchone()
    assert row is not None and row[0] > 0, "no appends were committed together"
