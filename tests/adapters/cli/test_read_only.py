"""Reading never writes: ``replay``, ``audit`` and ``export`` leave a
database's bytes, mode and side files as they were (also read-only, as a
user who may not write), refuse a SQLite file that is not planfold's, and
read their input once, so pipes, FIFOs and standard input work."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pwd
import shutil
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from planfold.adapters.codec import encode_jsonl
from planfold.adapters.store.base import import_session
from planfold.adapters.store.sqlite import SqliteStore
from tests.adapters.cli.running import run_cli
from tests.adapters.sqlite_files import write_sqlite


def _fingerprint(directory: Path) -> dict[str, tuple[str, int]]:
    """Every file of ``directory``: its content hash and mode."""
    return {
        path.name: (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mode)
        for path in sorted(directory.iterdir())
    }


@contextlib.contextmanager
def _read_only_copy(db: Path) -> Iterator[Path]:
    """A copy of ``db`` in a directory nobody may write (file 0444, directory
    0555), reachable by any user."""
    top = Path(tempfile.mkdtemp(prefix="planfold-ro-", dir="/tmp"))
    top.chmod(0o755)
    folder = top / "ro"
    folder.mkdir()
    copy = folder / db.name
    shutil.copyfile(db, copy)
    copy.chmod(0o444)
    folder.chmod(0o555)
    try:
        yield copy
    finally:
        folder.chmod(0o755)
        shutil.rmtree(top)


def _as_a_user_who_may_not_write(argv: list[str]) -> tuple[int, str, str, int]:
    """Run ``planfold argv`` in a child process that dropped root (``nobody``)
    when the tests run as root, else as the current (non-root) user. Returns
    the exit status, stdout, stderr and the child's effective uid."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop privileges, run, report, exit
        try:
            os.close(read)
            if os.getuid() == 0:
                nobody = pwd.getpwnam("nobody")
                os.setgroups([])
                os.setgid(nobody.pw_gid)
                os.setuid(nobody.pw_uid)
            code, out, err = run_cli(*argv)
            report = json.dumps([code, out, err, os.geteuid()])
        except BaseException as exc:
            report = json.dumps([99, "", f"{type(exc).__name__}: {exc}", os.geteuid()])
        with os.fdopen(write, "w") as pipe:
            pipe.write(report)
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    code, out, err, euid = json.loads(data)
    return code, out, err, euid


READERS = {
    "replay": lambda db: ["replay", "--db", str(db), "--json"],
    "audit": lambda db: ["audit", "--db", str(db), "--session", "demo-1", "--json"],
    "export": lambda db: ["export", "--db", str(db), "--session", "demo-1"],
}


@pytest.mark.parametrize("command", READERS.values(), ids=list(READERS))
def test_reading_a_read_only_database_as_a_user_who_may_not_write_changes_nothing(
    demo_db: Path, command: object
) -> None:
    assert callable(command)
    with _read_only_copy(demo_db) as copy:
        run_cli(*command(demo_db))  # everything it imports is loaded before the child drops root
        before = _fingerprint(copy.parent)
        code, out, err, euid = _as_a_user_who_may_not_write(command(copy))
        after = _fingerprint(copy.parent)
    assert euid != 0
    assert code == 0, err
    assert after == before  # bytes, mode, and no side file
    assert out and "Traceback" not in err


@pytest.mark.parametrize("command", READERS.values(), ids=list(READERS))
def test_reading_a_writable_database_changes_nothing_either(demo_db: Path, tmp_path: Path, command: object) -> None:
    assert callable(command)
    copy = tmp_path / "demo.sqlite"
    shutil.copyfile(demo_db, copy)
    before = _fingerprint(tmp_path)
    code, _, err = run_cli(*command(copy))
    assert code == 0, err
    assert _fingerprint(tmp_path) == before


def _foreign(path: Path) -> Path:
    return write_sqlite(
        path,
        "CREATE TABLE users (id TEXT PRIMARY KEY, title TEXT)",
        "INSERT INTO users VALUES ('a', 'another application')",
    )


@pytest.mark.parametrize("command", ["replay", "audit", "export"])
def test_a_database_that_is_not_planfolds_is_refused_and_left_as_it_was(tmp_path: Path, command: str) -> None:
    db = _foreign(tmp_path / "other.sqlite")
    before = _fingerprint(tmp_path)
    argv = ["export", "--db", str(db), "--session", "a"] if command == "export" else [command, "--db", str(db)]
    code, out, err = run_cli(*argv)
    assert code == 2 and out == ""
    assert "not a planfold database" in err
    assert _fingerprint(tmp_path) == before
    code, out, _ = run_cli(*argv, "--json")
    assert code == 2 and json.loads(out)["error"]["code"] == "not-a-planfold-database"


def test_a_database_with_a_live_write_ahead_log_is_read_whole(demo_db: Path, tmp_path: Path) -> None:
    copy = tmp_path / "live.sqlite"
    shutil.copyfile(demo_db, copy)
    with SqliteStore(demo_db) as source:
        log = encode_jsonl(source.read("demo-1"))
    writer = SqliteStore(copy)  # a live runtime: its new events sit in the write-ahead log
    try:
        import_session(writer, "demo-copy", log)
        assert Path(f"{copy}-wal").stat().st_size > 0
        code, out, err = run_cli("replay", "--db", str(copy), "--json")
    finally:
        writer.close()
    assert code == 0, err
    assert [s["session"] for s in json.loads(out)["sessions"]] == ["demo-1", "demo-copy"]


def test_a_database_on_standard_input_is_read_once_from_memory(demo_db: Path) -> None:
    code, out, err = run_cli("audit", "--db", "-", "--session", "demo-1", "--json", stdin=demo_db.read_bytes())
    assert code == 0, err
    (session,) = json.loads(out)["sessions"]
    assert session["ok"] and session["projection"]["mismatches"] == []


def test_a_log_on_standard_input_or_through_a_fifo_is_read_once(demo_db: Path, tmp_path: Path) -> None:
    code, exported, _ = run_cli("export", "--db", str(demo_db), "--session", "demo-1")
    assert code == 0
    code, out, _ = run_cli("replay", "--db", "-", "--json", stdin=exported.encode())
    assert code == 0 and json.loads(out)["sessions"][0]["session"] == "stdin"
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)

    def feed() -> None:
        with fifo.open("wb") as pipe:
            pipe.write(exported.encode())

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    result: list[tuple[int, str, str]] = []
    reader = threading.Thread(target=lambda: result.append(run_cli("replay", "--db", str(fifo), "--json")), daemon=True)
    reader.start()
    reader.join(timeout=60)  # a second open of the FIFO would wait forever for a writer
    assert not reader.is_alive(), "replay opened the FIFO twice"
    [(code, out, _)] = result
    assert code == 0 and json.loads(out)["sessions"][0]["events"] == exported.count("\n")


def test_a_database_read_from_a_fifo_is_read_from_memory(demo_db: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "db.fifo"
    os.mkfifo(fifo)
    data = demo_db.read_bytes()

    def feed() -> None:
        with fifo.open("wb") as pipe:
            pipe.write(data)

    threading.Thread(target=feed, daemon=True).start()
    code, out, err = run_cli("replay", "--db", str(fifo), "--session", "demo-1")
    assert code == 0, err
    assert out.startswith("demo-1: ok")
    assert stat.S_ISFIFO(fifo.stat().st_mode)
