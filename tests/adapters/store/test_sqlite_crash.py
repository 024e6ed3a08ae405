"""Writers killed with SIGKILL at random points, round after round.

In each of ``ROUNDS`` rounds two writer processes race small appends onto one
session of a shared file, reporting every append that returned over a pipe
(an acknowledged append), and are killed with SIGKILL after random delays.
Every tenth round instead kills a process while it opens and migrates a fresh
legacy file. After every round a fresh store must find: no acknowledged event
lost, a log that strict replay accepts, a projection and snapshot equal to
the fold (nothing torn), and ``PRAGMA integrity_check`` ok.

A second test kills a writer whose threads append through one store, so that
their appends commit in groups (each thread to a session of its own and all
of them to one they share), with the same checks for every session.
"""

from __future__ import annotations

import random
import time
from multiprocessing.connection import Connection
from multiprocessing.context import ForkServerContext
from pathlib import Path

import pytest

from planfold.adapters.store.sqlite import SqliteStore
from planfold.kernel.session import fold_session
from tests.adapters.store.processes import kill, writer_processes
from tests.storage_helpers import LEGACY_SESSIONS, build_legacy_db, dump_db
from tests.storage_workers import crash_writer, event_at, group_crash_writer, opener, stress_context

ROUNDS = 100
SESSION = "crash"


def drain(reader: Connection) -> list[int]:
    """Every ack a dead writer sent before it died."""
    acks: list[int] = []
    while reader.poll(5):
        try:
            acks.append(reader.recv())
        except EOFError:
            break
    return acks


def verify(path: Path, acked: int, session: str = SESSION) -> int:
    with SqliteStore(path) as store:
        assert store.integrity_check() == ("ok",)
        events = store.read(session)
        head = len(events)
        assert head >= acked, f"acknowledged seq {acked} lost: the log ends at {head}"
        assert list(events) == [event_at(seq) for seq in range(1, head + 1)]
        state = store.load(session)  # strict replay
        assert state == fold_session(events)
        assert store.load(session, incremental=True) == state
        report = store.audit(session)
        assert report.ok, report.mismatches
        assert report.snapshot == ("current" if head else "absent")
    return head


def _new_store_file(path: Path, seed: int) -> tuple[ForkServerContext, random.Random, Path]:
    """A crash test's start: the context its writers run in, its random
    choices seeded with ``seed``, and a new store at ``path``."""
    SqliteStore(path).close()
    return stress_context(), random.Random(seed), path


def writer_round(ctx: ForkServerContext, path: Path, rng: random.Random, acked: int) -> int:
    with writer_processes(ctx) as writers:
        for _ in range(2):
            writers.start(crash_writer, str(path), SESSION, rng.randrange(2**32))
        for reader in writers.readers:
            assert reader.poll(60), "a writer never became ready"
            assert reader.recv() == 0
        for proc in sorted(writers.procs, key=lambda _: rng.random()):
            time.sleep(rng.uniform(0, 0.02))
            kill(proc)
        for reader in writers.readers:
            acked = max([acked, *drain(reader)])
    return acked


def migration_round(ctx: ForkServerContext, path: Path, rng: random.Random) -> None:
    build_legacy_db(path)
    before = dump_db(path)["rows"]["sessions"]
    proc = ctx.Process(target=opener, args=(str(path),), daemon=True)
    proc.start()
    time.sleep(rng.uniform(0, 0.03))
    kill(proc)
    with SqliteStore(path) as store:
        assert store.integrity_check() == ("ok",)
        assert store.session_ids() == tuple(sid for sid, *_ in LEGACY_SESSIONS)
        for sid, *_ in LEGACY_SESSIONS:
            assert store.audit(sid).ok
    after = dump_db(path)["rows"]["sessions"]
    assert [row[:4] for row in after] == [row[:4] for row in before]  # legacy values survive


@pytest.mark.slow
def test_writers_killed_at_random_points_never_lose_or_tear_anything(tmp_path: Path) -> None:
    ctx, rng, path = _new_store_file(tmp_path / "crash.db", 20240611)
    acked, writer_rounds = 0, 0
    for number in range(ROUNDS):
        if number % 10 == 9:
            migration_round(ctx, tmp_path / f"legacy-{number}.db", rng)
            continue
        acked = writer_round(ctx, path, rng, acked)
        writer_rounds += 1
        assert verify(path, acked) >= acked
    assert writer_rounds == 90
    assert acked > 0  # writers really got appends acknowledged before dying


GROUP_ROUNDS = 30
GROUP_SESSIONS = [f"thread-{n}" for n in range(6)]
SHARED = "shared"


def group_round(ctx: ForkServerContext, path: Path, rng: random.Random, acked: dict[str, int]) -> None:
    with writer_processes(ctx) as writers:
        proc = writers.start(group_crash_writer, str(path), GROUP_SESSIONS, SHARED, rng.randrange(2**32))
        (reader,) = writers.readers
        assert reader.poll(60), "the writer never became ready"
        assert reader.recv() == 0
        time.sleep(rng.uniform(0.02, 0.3))
        kill(proc)
        while reader.poll(5):
            try:
                session, seq = reader.recv()
            except EOFError:
                break
            acked[session] = max(acked.get(session, 0), seq)


@pytest.mark.slow
def test_a_writer_killed_while_its_threads_commit_in_groups_never_loses_or_tears_anything(tmp_path: Path) -> None:
    ctx, rng, path = _new_store_file(tmp_path / "group.db", 20261202)
    acked: dict[str, int] = {}
    for _ in range(GROUP_ROUNDS):
        group_round(ctx, path, rng, acked)
        for session in [*GROUP_SESSIONS, SHARED]:
            assert verify(path, acked.get(session, 0), session) >= acked.get(session, 0)
    assert sum(acked.values()) > len(GROUP_SESSIONS)  # appends were acknowledged before the kills
