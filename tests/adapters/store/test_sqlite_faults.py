"""Fault injection: a wrapped connection fails the Nth statement.

For every N of an append and of a migration, the wrapper fails statement N
once, or every statement from N on (persistently), either before running it
or just after (so a COMMIT that did happen still reports a failure). Each
time: only typed errors come out, the file holds either exactly the state
before or exactly the state after (never a part), and once the fault is gone
the same store (or a new one) works and the retried append lands exactly once.
A fault in one append of a group commit fails that append alone.
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from planfold.adapters.store.base import AppendRequest, AppendResult, SessionExistsError, StorageError, StoreBusyError
from planfold.adapters.store.sqlite import SqliteStore, connect_sqlite
from planfold.adapters.store.sqlite_schema import SCHEMA_VERSION, Connection
from planfold.kernel.errors import ReplayError
from planfold.kernel.log import Event
from tests.storage_helpers import FULL_SCRIPT, LEGACY_SESSIONS, batch_after, build_legacy_db, build_log, dump_db


@dataclass
class FaultPlan:
    """Which statements fail: the ``fail_at``-th after arming, or (``persistent``)
    every one from there on; ``after`` runs the statement first."""

    fail_at: int | None = None
    persistent: bool = False
    after: bool = False
    message: str = "disk I/O error (injected)"
    count: int = 0
    failures: int = 0

    def arm(self, fail_at: int | None) -> None:
        self.fail_at, self.count = fail_at, 0

    def hit(self) -> bool:
        self.count += 1
        if self.fail_at is None:
            return False
        return self.count == self.fail_at or (self.persistent and self.count > self.fail_at)


class FaultyConnection:
    """A real connection whose ``execute`` fails when the plan says so."""

    def __init__(self, real: Connection, plan: FaultPlan) -> None:
        self.real, self.plan = real, plan

    @property
    def in_transaction(self) -> bool:
        return self.real.in_transaction

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        if not self.plan.hit():
            return self.real.execute(sql, parameters)
        self.plan.failures += 1
        if self.plan.after:
            self.real.execute(sql, parameters)
        raise sqlite3.OperationalError(f"{self.plan.message} at statement {self.plan.count}: {sql[:40]}")

    def close(self) -> None:
        self.real.close()


def factory(plan: FaultPlan) -> Callable[[str], Connection]:
    return lambda path: FaultyConnection(connect_sqlite(path), plan)


MODES = [
    pytest.param(False, False, id="once-before"),
    pytest.param(False, True, id="once-after"),
    pytest.param(True, False, id="persistent-before"),
    pytest.param(True, True, id="persistent-after"),
]


# --------------------------------------------------------------------------
# Appends


@dataclass(frozen=True)
class AppendCase:
    session: str
    head: int
    events: list[Event]
    key: str | None
    stale_snapshot: bool = False


LOG = build_log(FULL_SCRIPT).events
CASES = {
    "existing-session-keyed": AppendCase("s", 20, LOG[20:24], "retry-me"),
    "new-session": AppendCase("fresh", 0, batch_after(0, 3), None),
    "stale-snapshot": AppendCase("s", 20, LOG[20:21], "k", stale_snapshot=True),
}


def template(directory: Path, case: AppendCase) -> Path:
    path = directory / "template.db"
    with SqliteStore(path) as store:
        store.append(AppendRequest("s", 0, LOG[:12], "first"))
        store.append(AppendRequest("s", 12, LOG[12:20]))
    if case.stale_snapshot:
        conn = sqlite3.connect(path)
        conn.execute("UPDATE sessions SET fold_format = 'v0-older' WHERE id = 's'")
        conn.commit()
        conn.close()
    return path


@contextlib.contextmanager
def failing_at(
    n: int, source: Path, directory: Path, *, persistent: bool, after: bool
) -> Iterator[tuple[Path, FaultPlan, SqliteStore]]:
    """A copy of ``source`` in ``directory``, and a store on it whose statements
    fail as a ``FaultPlan`` armed at ``n`` says (``persistent`` and ``after`` as
    there) until the plan is disarmed; the store is closed when the block ends."""
    path = directory / f"run-{n}.db"
    shutil.copy(source, path)
    plan = FaultPlan(persistent=persistent, after=after)
    store = SqliteStore(path, connect=factory(plan))
    try:
        plan.arm(n)
        yield path, plan, store
    finally:
        store.close()


def run_append(store: SqliteStore, case: AppendCase) -> AppendResult:
    return store.append(AppendRequest(case.session, case.head, case.events, case.key))


def statements_of(directory: Path, case: AppendCase, source: Path) -> tuple[int, dict[str, Any]]:
    """How many statements a clean append runs, and the file after it."""
    path = directory / "clean.db"
    shutil.copy(source, path)
    plan = FaultPlan()
    with SqliteStore(path, connect=factory(plan)) as store:
        plan.arm(None)
        run_append(store, case)
        count = plan.count
    return count, dump_db(path)


@pytest.mark.slow
@pytest.mark.parametrize(("persistent", "after"), MODES)
@pytest.mark.parametrize("case_name", sorted(CASES))
def test_an_append_failing_at_any_statement_is_atomic_typed_and_recoverable(
    tmp_path: Path, case_name: str, persistent: bool, after: bool
) -> None:
    case = CASES[case_name]
    source = template(tmp_path, case)
    total, applied = statements_of(tmp_path, case, source)
    before = dump_db(source)
    assert total >= 6
    for n in range(1, total + 1):
        with failing_at(n, source, tmp_path, persistent=persistent, after=after) as (path, plan, store):
            with pytest.raises(StorageError) as info:
                run_append(store, case)
            err = info.value
            assert err.code == "storage-failure" and err.operation == "append"
            assert isinstance(err.__cause__, sqlite3.OperationalError)
            state = dump_db(path)
            assert state in (before, applied), f"statement {n}: the file holds a partial append"
            if err.outcome == "not-applied":
                assert state == before, f"statement {n}: reported not-applied, but it was applied"
            if persistent:  # the store stays unusable, with typed errors only, while the fault lasts
                with pytest.raises(StorageError):
                    store.head(case.session)
            plan.arm(None)  # the fault is gone: the same store object recovers
            retry = run_append(store, case) if case.key or state == before else None
            if retry is not None:
                assert retry.replayed == (state == applied)
            assert dump_db(path) == applied  # exactly once, however it got there
            assert store.audit(case.session).ok
            assert store.integrity_check() == ("ok",)
            request = AppendRequest(case.session, store.head(case.session), [later(store, case)])
            assert store.append(request).replayed is False


def later(store: SqliteStore, case: AppendCase) -> Event:
    head = store.head(case.session)
    last = store.read(case.session)[-1]
    return Event(head + 1, "user/message", last.at + 1, {"text": "after the fault", "source": None})


def test_a_commit_that_landed_but_reported_failure_is_retried_exactly_once(tmp_path: Path) -> None:
    path = tmp_path / "unknown.db"
    plan = FaultPlan(after=True)
    with SqliteStore(path, connect=factory(plan)) as store:
        store.append(AppendRequest("s", 0, batch_after(0, 2)))
        plan.arm(None)
        store.append(AppendRequest("s", 2, batch_after(2, 1), "k"))  # the same shape as the append below
        plan.arm(plan.count)  # its last statement: COMMIT
        with pytest.raises(StorageError) as info:
            store.append(AppendRequest("s", 3, batch_after(3, 1), "k2"))
        assert info.value.outcome == "unknown"
        assert "COMMIT" in info.value.detail
        plan.arm(None)
        assert store.head("s") == 4  # it did land
        assert store.append(AppendRequest("s", 3, batch_after(3, 1), "k2")) == AppendResult("s", 4, 4, replayed=True)
        assert store.head("s") == 4


def test_a_lock_held_past_the_busy_timeout_becomes_store_busy(tmp_path: Path) -> None:
    plan = FaultPlan(message="database is locked", persistent=True)
    with SqliteStore(tmp_path / "busy.db", connect=factory(plan), busy_timeout_ms=50) as store:
        plan.arm(1)
        with pytest.raises(StoreBusyError) as info:
            store.append(AppendRequest("s", 0, batch_after(0, 1)))
        assert info.value.code == "store-busy" and info.value.outcome == "not-applied"
        with pytest.raises(StoreBusyError):
            store.head("s")  # a read waits as long, then gives up too
        plan.arm(None)
        assert store.head("s") == 0


@pytest.mark.parametrize("statement", [1, 2], ids=["write", "read"])
def test_a_lock_met_for_a_moment_is_waited_for(tmp_path: Path, statement: int) -> None:
    plan = FaultPlan(message="database is locked")
    with SqliteStore(tmp_path / "busy.db", connect=factory(plan)) as store:
        plan.arm(statement)
        if statement == 1:  # the write transaction's BEGIN IMMEDIATE
            assert store.append(AppendRequest("s", 0, batch_after(0, 1))).last_seq == 1
        else:  # the read transaction's first query
            assert store.head("s") == 0
            store.append(AppendRequest("s", 0, batch_after(0, 1)))
        assert plan.count > statement  # the statement failed once and ran again
        assert store.head("s") == 1


@pytest.mark.parametrize("persistent", [False, True])
def test_reads_failing_at_any_statement_are_typed_and_change_nothing(tmp_path: Path, persistent: bool) -> None:
    path = tmp_path / "reads.db"
    plan = FaultPlan(persistent=persistent)
    with SqliteStore(path, connect=factory(plan)) as store:
        store.append(AppendRequest("s", 0, LOG))
        before = dump_db(path)
        reads: list[Callable[[], object]] = [
            lambda: store.load("s"),
            lambda: store.load("s", incremental=True),
            lambda: store.audit("s"),
            lambda: store.projection("s"),
            lambda: store.read("s"),
            store.session_ids,
            store.settings,
        ]
        for read in reads:
            plan.arm(None)
            expected = read()
            total = plan.count
            for n in range(1, total + 1):
                plan.arm(n)
                with pytest.raises(StorageError):
                    read()
                plan.arm(None)
                assert read() == expected
        assert dump_db(path) == before


# --------------------------------------------------------------------------
# Migrations


def migrated_reference(directory: Path) -> tuple[int, dict[str, Any]]:
    path = directory / "reference.db"
    build_legacy_db(path)
    plan = FaultPlan()
    SqliteStore(path, connect=factory(plan)).close()
    return plan.count, dump_db(path)


@pytest.mark.slow
@pytest.mark.parametrize(("persistent", "after"), MODES)
def test_a_migration_failing_at_any_statement_is_atomic_typed_and_recoverable(
    tmp_path: Path, persistent: bool, after: bool
) -> None:
    total, migrated = migrated_reference(tmp_path)
    assert total >= 15
    for n in range(1, total + 1):
        path = tmp_path / f"legacy-{n}.db"
        build_legacy_db(path)
        before = dump_db(path)
        plan = FaultPlan(persistent=persistent, after=after)
        plan.arm(n)
        try:
            SqliteStore(path, connect=factory(plan)).close()
        except StorageError as err:
            assert err.operation in ("open", "schema migration")
            assert isinstance(err.__cause__, sqlite3.OperationalError)
        else:
            pytest.fail(f"statement {n} of {total} failed, but opening succeeded")
        state = dump_db(path)
        assert state in (before, migrated), f"statement {n}: a partial migration is visible"
        if persistent:
            with pytest.raises(StorageError):
                SqliteStore(path, connect=factory(plan))
        plan.arm(None)
        with SqliteStore(path, connect=factory(plan)) as store:
            assert store.settings()["user_version"] == SCHEMA_VERSION
            assert store.session_ids() == tuple(sid for sid, *_ in LEGACY_SESSIONS)
            store.append(AppendRequest("legacy-1", 0, batch_after(0, 2)))
            assert store.audit("legacy-1").ok
            assert store.integrity_check() == ("ok",)
        assert dump_db(path)["rows"]["messages"] == before["rows"]["messages"]


# --------------------------------------------------------------------------
# A tampered file: the log is the truth, strict replay and audit say where


@pytest.fixture
def tampered(tmp_path: Path) -> tuple[Path, SqliteStore]:
    path = tmp_path / "tampered.db"
    store = SqliteStore(path)
    store.append(AppendRequest("s", 0, LOG))
    return path, store


def tamper(path: Path, sql: str) -> None:
    conn = sqlite3.connect(path)
    conn.execute(sql)
    conn.commit()
    conn.close()


def plan_mode_seq() -> int:
    return next(e.seq for e in LOG if e.kind == "plan/mode")


@pytest.mark.parametrize(
    ("sql", "rule"),
    [
        ("UPDATE events SET payload = '{\"active\": 1}' WHERE seq = {seq}", "malformed-payload"),
        ("UPDATE events SET payload = '{broken' WHERE seq = {seq}", "malformed-payload"),
        ("UPDATE events SET payload = '[true]' WHERE seq = {seq}", "malformed-payload"),
        ("UPDATE events SET kind = 'plan/odd' WHERE seq = {seq}", "unknown-kind"),
        ("UPDATE events SET at = -5 WHERE seq = {seq}", "malformed-payload"),
        ("DELETE FROM events WHERE seq = {seq}", "seq-gap"),
    ],
)
def test_a_corrupt_log_fails_strict_replay_at_the_same_position_every_time(
    tampered: tuple[Path, SqliteStore], sql: str, rule: str
) -> None:
    path, store = tampered
    seq = plan_mode_seq()
    tamper(path, sql.replace("{seq}", str(seq)))
    for call in (store.load, store.audit, store.load):  # the same answer every time
        with pytest.raises(ReplayError) as info:
            call("s")
        position = seq + 1 if rule == "seq-gap" else seq
        assert (info.value.position, info.value.rule) == (position, rule)
    store.close()


def test_a_tampered_projection_is_reported_by_the_audit(tampered: tuple[Path, SqliteStore]) -> None:
    path, store = tampered
    tamper(path, "UPDATE sessions SET agent_mode = 'plan', goal_json = '' WHERE id = 's'")
    report = store.audit("s")
    assert not report.ok
    assert [m.split(":")[0] for m in report.mismatches] == ["agent_mode", "goal_json"]
    assert store.load("s") == build_log(FULL_SCRIPT).state  # the log is untouched
    store.close()


def test_projection_columns_of_the_wrong_type_are_reported_not_raised(tampered: tuple[Path, SqliteStore]) -> None:
    path, store = tampered
    tamper(path, "UPDATE sessions SET log_seq = 'many', plan_mode = 'yes' WHERE id = 's'")
    report = store.audit("s")
    assert [m.split(":")[0] for m in report.mismatches] == ["last_seq"]
    assert store.projection("s").last_seq == -1
    assert store.load("s", incremental=True) == build_log(FULL_SCRIPT).state  # replays around it
    store.append(AppendRequest("k", 0, batch_after(0, 1), "key"))
    tamper(path, "UPDATE append_keys SET first_seq = 'one'")
    assert store.append(AppendRequest("k", 0, batch_after(0, 1), "key")) == AppendResult("k", -1, 1, replayed=True)
    store.close()


def test_a_snapshot_that_disagrees_with_the_log_is_reported(tampered: tuple[Path, SqliteStore]) -> None:
    path, store = tampered
    tamper(path, "UPDATE sessions SET fold_state = replace(fold_state, '\"plan_mode\":false', '\"plan_mode\":true')")
    report = store.audit("s")
    assert report.snapshot == "current"
    assert report.mismatches == ("snapshot: decodes to a state other than the fold",)
    store.close()


def test_an_undecodable_snapshot_is_replayed_around_and_rewritten(tampered: tuple[Path, SqliteStore]) -> None:
    path, store = tampered
    tamper(path, "UPDATE sessions SET fold_state = '{\"not\": \"a state\"}'")
    state = build_log(FULL_SCRIPT).state
    assert store.load("s", incremental=True) == state
    assert store.audit("s").mismatches[0].startswith("snapshot:")
    store.append(AppendRequest("s", len(LOG), [later(store, AppendCase("s", len(LOG), [], None))]))
    assert store.audit("s").ok and store.audit("s").snapshot == "current"
    store.close()


def test_a_stale_snapshot_format_is_never_trusted(tampered: tuple[Path, SqliteStore]) -> None:
    path, store = tampered
    tamper(path, "UPDATE sessions SET fold_format = 'v0-from-an-older-release'")
    report = store.audit("s")
    assert report.ok and report.snapshot == "stale"
    assert store.load("s", incremental=True) == build_log(FULL_SCRIPT).state
    store.append(AppendRequest("s", len(LOG), [later(store, AppendCase("s", len(LOG), [], None))]))
    assert store.audit("s").snapshot == "current"
    store.close()


def test_appends_trust_a_current_snapshot_so_only_replay_and_audit_see_a_corrupt_log(
    tampered: tuple[Path, SqliteStore],
) -> None:
    path, store = tampered
    tamper(path, f"UPDATE events SET payload = '{{\"active\": 1}}' WHERE seq = {plan_mode_seq()}")
    store.append(AppendRequest("s", len(LOG), [later(store, AppendCase("s", len(LOG), [], None))]))
    with pytest.raises(ReplayError):
        store.audit("s")
    tamper(path, "UPDATE sessions SET fold_format = 'stale'")
    with pytest.raises(ReplayError) as info:  # without a snapshot the append must replay, and refuses
        store.append(AppendRequest("s", len(LOG) + 1, [later(store, AppendCase("s", len(LOG) + 1, [], None))]))
    assert info.value.position == plan_mode_seq()
    store.close()


# --------------------------------------------------------------------------
# Forks


@pytest.mark.slow
@pytest.mark.parametrize(("persistent", "after"), MODES)
def test_a_fork_failing_at_any_statement_is_atomic_typed_and_recoverable(
    tmp_path: Path, persistent: bool, after: bool
) -> None:
    source = tmp_path / "template.db"
    with SqliteStore(source) as store:
        store.append(AppendRequest("s", 0, LOG))
    clean = tmp_path / "clean.db"
    shutil.copy(source, clean)
    plan = FaultPlan()
    with SqliteStore(clean, connect=factory(plan)) as store:
        plan.arm(None)
        provenance = store.fork("s", 20, "f")
        total = plan.count
    applied, before = dump_db(clean), dump_db(source)
    assert total >= 6
    for n in range(1, total + 1):
        with failing_at(n, source, tmp_path, persistent=persistent, after=after) as (path, plan, store):
            with pytest.raises(StorageError) as info:
                store.fork("s", 20, "f")
            assert info.value.operation == "fork" and isinstance(info.value.__cause__, sqlite3.OperationalError)
            state = dump_db(path)
            assert state in (before, applied), f"statement {n}: the file holds a partial fork"
            if info.value.outcome == "not-applied":
                assert state == before, f"statement {n}: reported not-applied, but it was applied"
            plan.arm(None)  # the fault is gone: the same store object recovers
            if state == before:
                assert store.fork("s", 20, "f") == provenance
            else:
                with pytest.raises(SessionExistsError):
                    store.fork("s", 20, "f")
            assert dump_db(path) == applied
            assert store.audit("f").ok and store.provenance("f") == provenance
            assert store.integrity_check() == ("ok",)


class GroupGate:
    """A real connection that holds the first ``BEGIN IMMEDIATE`` a moment
    (so that the appends arriving meanwhile commit as one group) and fails
    every event insert into session ``bad``."""

    def __init__(self, real: Connection, seen: list[str]) -> None:
        self.real, self.seen, self.held = real, seen, False

    @property
    def in_transaction(self) -> bool:
        return self.real.in_transaction

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        self.seen.append(sql)
        if sql == "BEGIN IMMEDIATE" and not self.held:
            self.held = True
            time.sleep(0.3)
        if sql.startswith("INSERT INTO events") and parameters and parameters[0] == "bad":
            raise sqlite3.OperationalError("disk I/O error (injected)")
        return self.real.execute(sql, parameters)

    def close(self) -> None:
        self.real.close()


def test_a_fault_in_one_grouped_append_fails_it_alone_and_the_group_commits_the_others(tmp_path: Path) -> None:
    seen: list[str] = []
    store = SqliteStore(tmp_path / "group.db", connect=lambda path: GroupGate(connect_sqlite(path), seen))
    sessions = ["first", "s1", "s2", "bad", "s3", "s4"]
    outcomes: dict[str, object] = {}

    def append(session: str) -> None:
        try:
            outcomes[session] = store.append(AppendRequest(session, 0, batch_after(0, 2)))
        except StorageError as exc:
            outcomes[session] = exc

    threads = [threading.Thread(target=append, args=(session,)) for session in sessions]
    threads[0].start()
    time.sleep(0.1)  # the first holds the file; the others wait together
    for thread in threads[1:]:
        thread.start()
    for thread in threads:
        thread.join()
    assert "SAVEPOINT planfold_append" in seen  # they did commit as a group
    failed = outcomes.pop("bad")
    assert isinstance(failed, StorageError) and failed.outcome == "not-applied"
    assert outcomes == {s: AppendResult(s, 1, 2) for s in sessions if s != "bad"}
    store.close()
    with SqliteStore(tmp_path / "group.db") as fresh:
        assert fresh.integrity_check() == ("ok",)
        assert fresh.head("bad") == 0
        for session in outcomes:
            assert fresh.read(session) == tuple(batch_after(0, 2))
            assert fresh.audit(session).ok
        assert fresh.append(AppendRequest("bad", 0, batch_after(0, 2))) == AppendResult("bad", 1, 2)
