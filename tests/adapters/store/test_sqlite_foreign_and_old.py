"""Files that are not planfold's, and files an older planfold wrote.

A writer refuses another application's database before it writes a byte (no
WAL switch, no table, no ``user_version``); a reader reads every schema
version a writer could migrate, without writing to the file, by migrating a
private copy in memory."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from planfold.adapters.store.base import AppendRequest
from planfold.adapters.store.sqlite import SqliteStore
from planfold.adapters.store.sqlite_readonly import NotPlanfoldDatabaseError, open_read_only
from planfold.adapters.store.sqlite_schema import (
    LEGACY_VERSION,
    SCHEMA_VERSION,
    ForeignDatabaseError,
    migrate,
    read_version,
    recognise,
)
from planfold.kernel.session import fold_session
from tests.adapters.sqlite_files import write_sqlite
from tests.storage_helpers import FULL_SCRIPT, LEGACY_SESSIONS, build_legacy_db, build_log


def _foreign(path: Path, statements: tuple[str, ...]) -> bytes:
    """The bytes of the file ``statements`` leave at ``path``."""
    return write_sqlite(path, *statements).read_bytes()


def _refused_by_a_writer(path: Path, statements: tuple[str, ...]) -> tuple[bytes, ForeignDatabaseError]:
    """The file ``statements`` leave at ``path``, which a writer refuses as
    another application's without changing it: its bytes, and the refusal."""
    before = _foreign(path, statements)
    with pytest.raises(ForeignDatabaseError) as info:
        SqliteStore(path)
    assert info.value.code == "foreign-database" and "nothing was changed" in info.value.message
    assert path.read_bytes() == before
    return before, info.value


FOREIGN = {
    "a users table": ("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)", "INSERT INTO users VALUES (1, 'x')"),
    "an empty table": ("CREATE TABLE t (x)",),
    "a view only": ("CREATE VIEW v AS SELECT 1 AS one",),
}


@pytest.mark.parametrize("statements", FOREIGN.values(), ids=FOREIGN.keys())
def test_a_writer_refuses_another_applications_database_and_leaves_it_byte_identical(
    tmp_path: Path, statements: tuple[str, ...]
) -> None:
    _refused_by_a_writer(tmp_path / "other.sqlite", statements)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.sqlite"]


def test_an_empty_or_new_file_is_not_foreign(tmp_path: Path) -> None:
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    for path in (empty, tmp_path / "new.sqlite"):
        with SqliteStore(path) as store:
            assert store.settings()["user_version"] == SCHEMA_VERSION


def test_a_legacy_sessions_table_at_version_0_is_still_migrated(tmp_path: Path) -> None:
    path = tmp_path / "legacy.sqlite"
    build_legacy_db(path, version=0)
    with SqliteStore(path) as store:
        assert store.migration is not None and store.migration.from_version == 0
        assert store.session_ids() == tuple(sid for sid, *_ in LEGACY_SESSIONS)


# --------------------------------------------------------------------------
# Reading every version a writer could migrate


def _at_version(path: Path, version: int) -> None:
    """A file at schema ``version``: the legacy fixture migrated that far,
    with a log in it from version 5 (the first with one) on."""
    build_legacy_db(path, version=LEGACY_VERSION)
    conn = sqlite3.connect(path, isolation_level=None)
    if version < LEGACY_VERSION:
        conn.execute(f"PRAGMA user_version = {version}")
    else:
        migrate(conn, version)
    conn.close()


@pytest.mark.parametrize("version", range(SCHEMA_VERSION + 1))
def test_a_reader_reads_every_version_a_writer_could_migrate_without_writing(tmp_path: Path, version: int) -> None:
    path = tmp_path / "old.sqlite"
    _at_version(path, version)
    before = path.read_bytes()
    with open_read_only(str(path)) as store:
        assert store.session_ids() == tuple(sid for sid, *_ in LEGACY_SESSIONS)
        for sid, *_ in LEGACY_SESSIONS:
            assert store.read(sid) == () and store.head(sid) == 0
            assert store.audit(sid).ok
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.sqlite"]
    with open_read_only("old.sqlite", image=before) as store:
        assert store.session_ids() == tuple(sid for sid, *_ in LEGACY_SESSIONS)


@pytest.mark.parametrize("version", [5, 6])
def test_a_reader_of_an_older_log_reads_its_events_and_audits_them(tmp_path: Path, version: int) -> None:
    path = tmp_path / "old.sqlite"
    builder = build_log(FULL_SCRIPT)
    with SqliteStore(path) as store:
        store.append(AppendRequest("s", 0, builder.events))
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("DROP TABLE goal_ids")
    if version == 5:
        conn.execute("DROP TABLE goal_leases")
    conn.execute(f"PRAGMA user_version = {version}")
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    before = path.read_bytes()
    with open_read_only(str(path)) as store:
        assert fold_session(store.read("s")) == builder.state
        assert store.audit("s").ok
    assert path.read_bytes() == before
    assert read_version(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) == version


def test_a_reader_still_refuses_a_file_that_is_not_planfolds(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    before = _foreign(path, FOREIGN["a users table"])
    with pytest.raises(NotPlanfoldDatabaseError):
        open_read_only(str(path))
    assert path.read_bytes() == before


# --------------------------------------------------------------------------
# Planfold's fingerprint, not a table's name

#: A web framework's session table: planfold's table name, another application's columns.
WEB_SESSIONS = (
    "CREATE TABLE sessions (id TEXT PRIMARY KEY, data BLOB, expires INTEGER)",
    "INSERT INTO sessions VALUES ('k1', x'80037d71002e', 1700000000)",
)

LOOK_ALIKES = {
    "a web framework's sessions table": WEB_SESSIONS,
    "the same at a planfold schema version": (*WEB_SESSIONS, "PRAGMA user_version = 8"),
    "the legacy columns under another application id": (
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, title TEXT, created_at_ms INTEGER, updated_at_ms INTEGER)",
        "PRAGMA application_id = 1179012935",
    ),
    "a user_version and nothing else": ("PRAGMA user_version = 5",),
}


@pytest.mark.parametrize("statements", LOOK_ALIKES.values(), ids=LOOK_ALIKES.keys())
def test_a_file_with_planfolds_table_names_but_not_its_fingerprint_is_refused_by_writer_and_reader(
    tmp_path: Path, statements: tuple[str, ...]
) -> None:
    path = tmp_path / "app.sqlite"
    before, refused = _refused_by_a_writer(path, statements)
    assert "not a planfold database" in refused.message
    with pytest.raises(NotPlanfoldDatabaseError) as read:
        open_read_only(str(path))
    assert read.value.code == "not-a-planfold-database" and "not a planfold database" in read.value.message
    with pytest.raises(NotPlanfoldDatabaseError):
        open_read_only("app.sqlite", image=before)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.sqlite"]


def test_the_refusal_names_what_the_foreign_file_holds(tmp_path: Path) -> None:
    path = tmp_path / "app.sqlite"
    _foreign(path, WEB_SESSIONS)
    with pytest.raises(ForeignDatabaseError, match=r"sessions \(id, data, expires\)"):
        SqliteStore(path)


@pytest.mark.parametrize("version", range(SCHEMA_VERSION + 1))
def test_every_schema_version_planfold_migrates_is_recognised_by_its_legacy_columns(
    tmp_path: Path, version: int
) -> None:
    path = tmp_path / "old.sqlite"
    _at_version(path, version)
    conn = sqlite3.connect(path, isolation_level=None)
    assert recognise(conn) == version
    conn.close()
    with SqliteStore(path) as store:
        assert store.settings()["user_version"] == SCHEMA_VERSION


@pytest.mark.parametrize("version", range(LEGACY_VERSION + 1))
def test_the_smallest_legacy_table_planfold_ever_made_is_recognised(tmp_path: Path, version: int) -> None:
    path = tmp_path / "bare.sqlite"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, title TEXT, created_at_ms INTEGER, updated_at_ms INTEGER)"
    )
    conn.execute(f"PRAGMA user_version = {version}")
    assert recognise(conn) == version
    conn.close()
    with SqliteStore(path) as store:
        assert store.migration is not None and store.migration.from_version == version
