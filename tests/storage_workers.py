"""Worker processes for the storage stress tests, and the events they write.

This module imports only the store, its log builders and the kernel (no
pytest), and is preloaded into the fork server, so a worker starts in
milliseconds. Workers report through pipes and queues; they never share a store or a
connection with the test process.
"""

from __future__ import annotations

import itertools
import multiprocessing
import random
import sqlite3
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.context import ForkServerContext
from multiprocessing.synchronize import Event as MpEvent
from typing import Any

import psycopg

from planfold.adapters.runtime.goal_lease import LeasedDriver
from planfold.adapters.runtime.goal_service import GoalService
from planfold.adapters.store.base import AppendRequest, StorageError
from planfold.adapters.store.contract_logs import batch_after, event_at
from planfold.adapters.store.opener import open_store
from planfold.adapters.store.postgres import PostgresStore
from planfold.adapters.store.session_log import SessionLog
from planfold.adapters.store.sqlite import SqliteStore
from planfold.kernel.errors import ConflictError, PlanfoldError
from planfold.kernel.log import GoalSource, MessageSource, number_drafts, turn_end, turn_start, user_message

__all__ = [
    "RAW_ERRORS",
    "batch_after",
    "contender",
    "crash_writer",
    "event_at",
    "fault_writer",
    "goal_driver",
    "group_crash_writer",
    "group_fault_writer",
    "opener",
    "steady_writer",
    "stress_context",
]

#: How long a racing SQLite writer waits for the lock (the race's own deadline).
RACE_BUSY_TIMEOUT_MS = 240_000

#: The drivers' own exceptions: none may ever reach a caller of a store.
RAW_ERRORS = (sqlite3.Error, psycopg.Error)


def stress_context() -> ForkServerContext:
    """The fork-server context with this module preloaded (the preload only
    takes effect if the fork server has not started yet in this process)."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([__name__])
    return ctx


def contender(address: str, sessions: list[str], attempts: int, seed: int, *, start: MpEvent, out: Any) -> None:
    """Make ``attempts`` compare-and-set appends (read the head, append one to
    three events after it) on the store at ``address`` (a SQLite file or a
    PostgreSQL URL) and put a report of every outcome on ``out``."""
    report: dict[str, Any] = {"ok": 0, "conflict": 0, "events": 0, "raw": [], "other": []}
    rng = random.Random(seed)
    try:
        # A SQLite writer waits for the lock as long as the race may last: on
        # a loaded machine eight writers that each fsync every commit can keep
        # one waiting past the default 15 s, and its typed StoreBusyError
        # (pinned by its own test) is not what this race is about. Python's
        # own sqlite3 defaults play no part: the store sets busy_timeout on
        # every connection, and 3.11 and 3.13 link the same SQLite.
        store = open_store(address) if address.startswith("postgresql") else SqliteStore(
            address, busy_timeout_ms=RACE_BUSY_TIMEOUT_MS)
        start.wait(60)
        for _ in range(attempts):
            sid = rng.choice(sessions)
            try:
                head = store.load(sid, incremental=True).last_seq if rng.random() < 0.5 else store.head(sid)
            except Exception as exc:  # reported, never expected
                report["raw" if isinstance(exc, RAW_ERRORS) else "other"].append(f"read: {exc!r}")
                continue
            size = rng.randint(1, 3)
            try:
                store.append(AppendRequest(sid, head, batch_after(head, size)))
            except ConflictError:
                report["conflict"] += 1
            except RAW_ERRORS as exc:
                report["raw"].append(repr(exc))
            except Exception as exc:
                report["other"].append(repr(exc))
            else:
                report["ok"] += 1
                report["events"] += size
        store.close()
    except Exception as exc:  # the parent sees it in the report
        report["other"].append(f"worker: {exc!r}")
    out.put(report)


def crash_writer(path: str, session: str, seed: int, acks: Connection) -> None:
    """Append to ``session`` until killed; after each append that returned,
    send its last seq on ``acks`` (0 first, once the store is open)."""
    rng = random.Random(seed)
    store = SqliteStore(path)
    acks.send(0)
    while True:
        head = store.head(session)
        try:
            result = store.append(AppendRequest(session, head, batch_after(head, rng.randint(1, 3))))
        except ConflictError:
            continue
        acks.send(result.last_seq)


def group_crash_writer(path: str, sessions: list[str], shared: str, seed: int, acks: Connection) -> None:
    """One thread per session of ``sessions`` appends to it and, now and
    then, to ``shared`` (where the threads race), all through one store, so
    that their appends commit in groups; until killed. After each append that
    returned, send ``(session, last seq)`` on ``acks`` (``0`` first, once the
    threads are about to start)."""
    store = SqliteStore(path)
    lock = threading.Lock()

    def work(session: str, rng: random.Random) -> None:
        while True:
            target = shared if rng.random() < 0.3 else session
            head = store.head(target)
            try:
                result = store.append(AppendRequest(target, head, batch_after(head, rng.randint(1, 3))))
            except ConflictError:
                continue
            with lock:
                acks.send((target, result.last_seq))

    rng = random.Random(seed)
    threads = [
        threading.Thread(target=work, args=(session, random.Random(rng.randrange(2**32))), daemon=True)
        for session in sessions
    ]
    acks.send(0)
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def fault_writer(url: str, session: str, name: str, seed: int, reports: Connection) -> None:
    """Append to ``session`` of the PostgreSQL store at ``url`` until killed,
    through server crashes: every append carries an idempotency key; an
    append whose outcome is ``unknown`` is retried with its key until it is
    answered. Sends ``("ready",)`` once the store is open, ``("ack", last_seq,
    key, replayed, session)`` after every append that returned, and
    ``("error", code, typed, text)`` for every exception (``typed`` is False
    for anything that is not a planfold error)."""
    store = PostgresStore(url, timeout=5.0, pool_size=2)
    reports.send(("ready",))
    _keep_appending(store, lambda _: session, name, random.Random(seed), reports.send)


def group_fault_writer(url: str, sessions: list[str], name: str, seed: int, reports: Connection) -> None:
    """``fault_writer`` with one thread per session of ``sessions`` but the
    last, all appending through one store, so that their appends commit in
    groups: each to its own session and, now and then, to the last one, which
    they share (and race on). The reports are ``fault_writer``'s."""
    *own, shared = sessions
    store = PostgresStore(url, timeout=5.0, pool_size=2)
    lock = threading.Lock()

    def send(message: object) -> None:
        with lock:
            reports.send(message)

    rng = random.Random(seed)
    threads = [
        threading.Thread(
            target=_keep_appending,
            args=(store, lambda r, mine=session: shared if r.random() < 0.3 else mine, f"{name}-{session}",
                  random.Random(rng.randrange(2**32)), send),
            daemon=True,
        )
        for session in own
    ]  # fmt: skip
    send(("ready",))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _keep_appending(
    store: PostgresStore, pick: Callable[[random.Random], str], name: str, rng: random.Random,
    send: Callable[[object], None],
) -> None:  # fmt: skip
    """Keyed appends to the session ``pick`` names each time, until killed,
    each retried with its key while its outcome is ``unknown`` (see
    ``fault_writer``)."""
    numbers = itertools.count(1)

    def report(exc: BaseException) -> None:
        typed = isinstance(exc, PlanfoldError) and not isinstance(exc, RAW_ERRORS)
        send(("error", getattr(exc, "code", type(exc).__name__), typed, repr(exc)[:300]))

    while True:
        session = pick(rng)
        try:
            head = store.head(session)
        except Exception as exc:
            report(exc)
            time.sleep(0.05)
            continue
        key = f"{name}-{next(numbers)}"
        batch = batch_after(head, rng.randint(1, 3))
        while True:
            try:
                result = store.append(AppendRequest(session, head, batch, key))
            except ConflictError:
                break
            except StorageError as exc:
                report(exc)
                if exc.outcome != "unknown":
                    break
                time.sleep(0.05)  # it may have landed: ask again with the same key
                continue
            except Exception as exc:
                report(exc)
                break
            send(("ack", result.last_seq, key, result.replayed, session))
            break


def steady_writer(path: str, session: str, stop: MpEvent, reports: Connection) -> None:
    """Append one event at a time to ``session`` through a store of its own
    until ``stop`` is set: send 0 after the first append, then how many
    appends landed in all."""
    store = SqliteStore(path)
    head = store.head(session)
    landed = 0
    while landed == 0 or not stop.is_set():
        store.append(AppendRequest(session, head, batch_after(head, 1)))
        head += 1
        landed += 1
        if landed == 1:
            reports.send(0)
    store.close()
    reports.send(landed)


def opener(path: str) -> None:
    """Open (and so migrate) a store, then idle until killed."""
    SqliteStore(path)
    time.sleep(60)


class _RoundAppender:
    """A round runner that appends a whole round (turn start, the goal's
    message, turn end) in one append through the session log's store, after a
    short pause, and reports it: a killed driver never leaves a turn open."""

    def __init__(self, log: SessionLog, driver: LeasedDriver, name: str, reports: Connection) -> None:
        self.log, self.driver, self.name, self.reports = log, driver, name, reports

    def run_turn(self, text: str, source: MessageSource | None = None) -> object:
        time.sleep(0.05)
        head, at, turn = self.log.last_seq, self.log.now(), self.log.state.turns.turn + 1
        round_ = number_drafts([turn_start(turn), user_message(text, source), turn_end(turn)], head, at)
        self.log.store.append(AppendRequest(self.log.session_id, head, round_))  # fenced while the driver drives
        self.log.reload()
        lease = self.driver.lease
        assert lease is not None and isinstance(source, GoalSource)
        self.reports.send(("round", self.name, source.round, lease.token, lease.expires_at - lease.ttl_ms))
        return None


def goal_driver(url: str, session: str, name: str, ttl_ms: int, commands: Connection) -> None:
    """One process of a goal driven from two: a fresh start (disarmed), then
    commands from the test: ``resume`` (a human's resume) and ``drive`` (a
    leased drive), each answered on ``commands``; rounds are reported as
    they land."""
    store = PostgresStore(url, pool_size=2)
    log = SessionLog(store, session)
    goals = GoalService(log, "agent", lambda: "unused")
    driver = LeasedDriver(goals, store, holder=name, ttl_ms=ttl_ms)
    runner = _RoundAppender(log, driver, name, commands)
    commands.send(("ready", name, goals.activation.armed))
    while True:
        command = commands.recv()
        try:
            log.reload()
            if command == "resume":
                goals.resume(goals.agent)
                commands.send(("resumed", name, goals.activation.armed))
            else:
                report = driver.drive(goals.agent, runner)
                commands.send(("drove", name, report.rounds, report.stopped, report.holder, report.expires_at))
        except PlanfoldError as exc:
            commands.send(("error", name, exc.code, str(exc)))
