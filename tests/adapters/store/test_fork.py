"""Rewinding to a turn (``adapters.store.fork``): the seq a turn starts at,
a fork just before it, and the typed refusals of turns the log never
started; a fork of a hand-edited log is refused where its seqs break, and
one whose last write fails writes nothing at all."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest

from planfold.adapters.provenance import ForkProvenance, prefix_digest
from planfold.adapters.store.base import (
    AppendRequest,
    ForkSeqMissingError,
    ForwardingStore,
    InvalidRequestError,
    SessionExistsError,
    StorageError,
)
from planfold.adapters.store.contract_logs import FULL_SCRIPT, build_log
from planfold.adapters.store.fork import ForkTurnMissingError, check_fork, fork_at_turn, turn_start_seq
from planfold.adapters.store.memory import MemoryStore
from planfold.adapters.store.postgres import PostgresStore
from planfold.adapters.store.projection import Projection
from planfold.adapters.store.sqlite import SqliteStore
from planfold.adapters.store.sqlite_readonly import open_read_only
from planfold.kernel.errors import PlanfoldError, ReplayError
from planfold.kernel.log import TURN_START, Event
from tests.adapters.sqlite_files import write_sqlite

LOG = build_log(FULL_SCRIPT).events
STARTS: dict[int, int] = {int(str(e.payload["turn"])): e.seq for e in LOG if e.kind == TURN_START}


def _store() -> MemoryStore:
    store = MemoryStore()
    store.append(AppendRequest("s", 0, LOG))
    return store


def test_turn_start_seq_is_the_seq_of_the_turns_turn_start() -> None:
    store = _store()
    assert len(STARTS) >= 3
    for turn, seq in STARTS.items():
        assert turn_start_seq(store, "s", turn) == seq
        assert turn_start_seq(ForwardingStore(store), "s", turn) == seq  # a store without scan reads


def test_a_rewind_to_turn_k_is_a_fork_just_before_turn_k_started() -> None:
    store = _store()
    for turn, seq in STARTS.items():
        if seq == 1:
            continue
        new = f"rewound-{turn}"
        assert fork_at_turn(store, "s", turn, new) == ForkProvenance("s", seq - 1, prefix_digest(LOG[: seq - 1]))
        state = store.load(new)
        assert state.last_seq == seq - 1 and state.turns.turn == turn - 1 and not state.turns.open
        assert store.audit(new).ok
    assert store.read("s") == tuple(LOG)


def test_a_rewind_to_a_turn_never_started_is_refused_and_writes_nothing() -> None:
    store = _store()
    with pytest.raises(ForkTurnMissingError) as info:
        fork_at_turn(store, "s", max(STARTS) + 1, "new")
    assert info.value.code == "fork-turn-missing" and info.value.last_turn == max(STARTS)
    with pytest.raises(ForkTurnMissingError, match="has started no turn"):
        fork_at_turn(store, "nobody", 1, "new")
    assert store.session_ids() == ("s",)


def test_a_rewind_to_a_turn_that_starts_the_log_leaves_nothing_to_fork() -> None:
    store = MemoryStore()
    store.append(AppendRequest("s", 0, [Event(1, TURN_START, 1, {"turn": 1}), Event(2, "turn/end", 1, {"turn": 1})]))
    with pytest.raises(ForkSeqMissingError, match="start a new session instead"):
        fork_at_turn(store, "s", 1, "new")
    assert store.session_ids() == ("s",)


@pytest.mark.parametrize("turn", [0, -1, True, "1"], ids=["zero", "negative", "bool", "text"])
def test_a_turn_that_is_not_a_positive_integer_is_an_invalid_request(turn: object) -> None:
    with pytest.raises(InvalidRequestError):
        fork_at_turn(_store(), "s", turn, "new")  # type: ignore[arg-type]


def test_a_rewind_into_a_session_that_exists_is_refused() -> None:
    store = _store()
    store.append(AppendRequest("other", 0, LOG[:1]))
    with pytest.raises(SessionExistsError):
        fork_at_turn(store, "s", 2, "other")
    assert store.head("other") == 1


def test_a_fork_of_a_hand_edited_log_is_refused_where_its_seqs_break_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "edited.db"
    with SqliteStore(path) as store:
        store.append(AppendRequest("s", 0, LOG[:10]))
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM events WHERE session_id = 's' AND seq IN (4, 5)")
    conn.commit()
    conn.close()
    with SqliteStore(path) as store:
        with pytest.raises(ForkSeqMissingError, match="unbroken only to 3"):
            store.fork("s", 5, "new")  # the head is 10, but there is no seq 4 or 5
        with pytest.raises(ReplayError) as info:
            store.fork("s", 6, "new")  # the prefix itself breaks a rule: the log's fault
        assert (info.value.position, info.value.rule) == (6, "seq-gap")
        assert store.fork("s", 3, "new").seq == 3
        assert store.session_ids() == ("new", "s") and store.audit("new").ok


def test_a_hand_edited_turn_start_that_does_not_read_is_the_replay_error_at_its_seq(tmp_path: Path) -> None:
    path = tmp_path / "edited.db"
    with SqliteStore(path) as store:
        store.append(AppendRequest("s", 0, LOG))
    conn = sqlite3.connect(path)
    conn.execute("UPDATE events SET payload = '{\"turn\": \"2\"}' WHERE session_id = 's' AND seq = ?", (STARTS[2],))
    conn.commit()
    conn.close()
    with SqliteStore(path) as store:
        assert turn_start_seq(store, "s", 1) == STARTS[1]  # the log is read only as far as the turn asked for
        with pytest.raises(ReplayError) as info:
            fork_at_turn(store, "s", 2, "new")  # not "no turn 2": the log's turn 2 does not read
        assert (info.value.position, info.value.rule) == (STARTS[2], "malformed-payload")
        assert store.session_ids() == ("s",)


def _planted_fork_row(store: SqliteStore | PostgresStore, target: str) -> None:
    """A provenance row for session ``new`` with nothing else of it: the
    fork's last write then fails (its key is taken) after all its others."""
    if isinstance(store, SqliteStore):
        conn = sqlite3.connect(target)
        conn.execute("INSERT INTO forks VALUES ('new', 'elsewhere', 1, ?)", ("0" * 64,))
        conn.commit()
        conn.close()
    else:
        with psycopg.connect(target, autocommit=True) as server:
            server.execute("INSERT INTO planfold_forks VALUES ('new', 'elsewhere', 1, %s)", ("0" * 64,))


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_fork_whose_last_write_fails_writes_nothing_at_all(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    target = str(tmp_path / "store.db") if backend == "sqlite" else str(request.getfixturevalue("pg_url"))
    store: SqliteStore | PostgresStore = SqliteStore(target) if backend == "sqlite" else PostgresStore(target)
    with store:
        store.append(AppendRequest("s", 0, LOG))
        _planted_fork_row(store, target)
        with pytest.raises(StorageError) as info:
            store.fork("s", 20, "new")
        assert info.value.outcome == "not-applied"
        assert store.head("new") == 0 and store.read("new") == () and store.session_ids() == ("s",)
        assert store.projection("new") == Projection()
        # the goal id the prefix created (seq 17) was not kept for it either
        store.append(AppendRequest("new", 0, LOG[:20]))
        report = store.audit("new")  # the planted provenance, which the audit checks against the log
        assert report.provenance == ForkProvenance("elsewhere", 1, "0" * 64)
        assert len(report.mismatches) == 1 and "the first 1 events hash to" in report.mismatches[0]


# --------------------------------------------------------------------------
# check_fork: the fork's refusals, by reads alone


FORK_REQUESTS = {
    "a fork that goes through": ("s", 3, "new"),
    "no source": ("nobody", 1, "new"),
    "past the head": ("s", len(LOG) + 1, "new"),
    "at zero": ("s", 0, "new"),
    "new exists": ("s", 1, "s"),
    "an empty new id": ("s", 1, ""),
    "a seq that is not an integer": ("s", "3", "new"),
}


@pytest.mark.parametrize(("source", "at", "new"), FORK_REQUESTS.values(), ids=FORK_REQUESTS.keys())
def test_check_fork_refuses_exactly_what_the_fork_refuses_and_reads_only(
    tmp_path: Path, source: str, at: int, new: str
) -> None:
    path = tmp_path / "db.sqlite"
    with SqliteStore(path) as store:
        store.append(AppendRequest("s", 0, LOG))
    before = path.read_bytes()
    with open_read_only(str(path)) as reader:
        try:
            checked: object = check_fork(reader, source, at, new)
        except PlanfoldError as exc:
            checked = (type(exc), exc.code)
    assert path.read_bytes() == before
    with SqliteStore(path) as store:
        try:
            forked: object = store.fork(source, at, new).seq
        except PlanfoldError as exc:
            forked = (type(exc), exc.code)
    assert checked == forked


def test_check_fork_refuses_a_hand_edited_log_whose_seqs_skip_the_fork_seq_as_the_fork_does(
    full_log_file: Path,
) -> None:
    path = write_sqlite(full_log_file, "DELETE FROM events WHERE session_id = 's' AND seq = 3")
    with open_read_only(str(path)) as reader, pytest.raises(ForkSeqMissingError, match="hand-edited"):
        check_fork(reader, "s", 3, "new")
    with SqliteStore(path) as store, pytest.raises(ForkSeqMissingError, match="hand-edited"):
        store.fork("s", 3, "new")
