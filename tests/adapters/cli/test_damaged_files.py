"""Damaged database files on every path that reads one: ``replay``,
``audit``, ``export``, ``report``, ``fork``, ``import`` and opening a store.

A schema byte changed to 0xA0 (text SQLite hands over as it is, which is not
UTF-8), a file cut short, pages overwritten with garbage: each is answered by
a typed error that says the file is damaged, exit status 2, no traceback,
and the file (with its side files) stays byte for byte as it was."""

from __future__ import annotations

import functools
import io
import json
import random
from collections.abc import Callable
from pathlib import Path

import pytest

from planfold.adapters.cli.main import main
from planfold.adapters.codec import encode_jsonl
from planfold.adapters.store.base import import_session
from planfold.adapters.store.engine import LogStore
from planfold.adapters.store.sqlite import SqliteStore
from planfold.adapters.store.sqlite_readonly import open_read_only
from planfold.adapters.store.sqlite_schema import DamagedDatabaseError
from tests.storage_helpers import FULL_SCRIPT, build_log

PAGE = 4096


def _sound(path: Path) -> bytes:
    """A planfold file: a session and a fork of it."""
    with SqliteStore(path) as store:
        import_session(store, "s", encode_jsonl(build_log(FULL_SCRIPT).events))
        store.fork("s", 3, "f")
    return path.read_bytes()


def _schema_byte(data: bytes) -> bytes:
    """The first byte of a table's ``CREATE`` text in the schema page set to 0xA0."""
    at = data[:PAGE].find(b"CREATE TABLE forks")
    assert at > 0
    return data[:at] + b"\xa0" + data[at + 1 :]


def _truncated(data: bytes) -> bytes:
    return data[: len(data) // 2 + 100]


def _garbage_pages(data: bytes) -> bytes:
    noise = random.Random(39).randbytes(len(data) - PAGE)
    return data[:PAGE] + noise


DAMAGE: dict[str, Callable[[bytes], bytes]] = {
    "a schema byte changed to 0xA0": _schema_byte,
    "a file cut short": _truncated,
    "pages of garbage": _garbage_pages,
}


def _files(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


def _argv(command: str, db: Path, tmp_path: Path) -> list[str]:
    if command in ("replay", "audit"):
        return [command, str(db)]
    if command == "export":
        return ["export", "--db", str(db), "--session", "s"]
    if command == "report":
        return ["report", "--db", str(db), "--session", "f"]
    if command == "fork":
        return ["fork", "--db", str(db), "s", "g", "--at", "2"]
    log = tmp_path / "log.jsonl"
    log.write_bytes(encode_jsonl(build_log(FULL_SCRIPT).events))
    return ["import", str(log), "--db", str(db), "--session", "g"]


@pytest.mark.parametrize("damage", DAMAGE.values(), ids=DAMAGE.keys())
@pytest.mark.parametrize("command", ["replay", "audit", "export", "report", "fork", "import"])
def test_every_command_answers_a_damaged_file_with_a_typed_error_and_leaves_it_as_it_was(
    tmp_path: Path, command: str, damage: Callable[[bytes], bytes]
) -> None:
    db = tmp_path / "db.sqlite"
    db.write_bytes(damage(_sound(tmp_path / "sound.sqlite")))
    (tmp_path / "sound.sqlite").unlink()
    argv = _argv(command, db, tmp_path)
    before = _files(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    code = main([*argv, "--json"] if command != "report" else argv, out=out, err=err, stdin=io.BytesIO())
    assert code == 2, (out.getvalue(), err.getvalue())
    if command == "report":
        assert "damaged" in err.getvalue() and "Traceback" not in err.getvalue()
    else:
        body = json.loads(out.getvalue())
        assert body["error"]["code"] == "damaged-database" and "damaged" in body["error"]["detail"]
    assert _files(tmp_path) == before


@pytest.mark.parametrize("damage", DAMAGE.values(), ids=DAMAGE.keys())
def test_opening_a_damaged_file_is_a_damaged_database_error_for_writer_and_reader(
    tmp_path: Path, damage: Callable[[bytes], bytes]
) -> None:
    db = tmp_path / "db.sqlite"
    db.write_bytes(damage(_sound(tmp_path / "sound.sqlite")))
    (tmp_path / "sound.sqlite").unlink()
    before = _files(tmp_path)
    openers: tuple[Callable[[], LogStore], ...] = (
        functools.partial(SqliteStore, db),
        functools.partial(open_read_only, str(db)),
    )
    for opener in openers:
        with pytest.raises(DamagedDatabaseError) as info:
            store = opener()
            try:  # a damaged page may only be found when it is read
                for sid in store.session_ids():
                    store.audit(sid)
            finally:
                store.close()
        assert info.value.code == "damaged-database" and "damaged" in info.value.message
        assert _files(tmp_path) == before
