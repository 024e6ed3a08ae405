"""``export -o PATH`` writes where the path leads and replaces only a regular
file: a FIFO, a character device or a link to one is written to as a
stream and stays what it was; an existing file keeps its mode and is
replaced whole or not at all; a new file gets the mode the umask gives."""

from __future__ import annotations

import io
import os
import socket
import stat
import threading
from pathlib import Path

import pytest

from planfold.adapters.cli.main import main
from planfold.adapters.codec import encode_jsonl
from planfold.adapters.store.sqlite_readonly import open_read_only


@pytest.fixture(scope="module")
def exported(demo_db: Path) -> bytes:
    with open_read_only(str(demo_db)) as store:
        return encode_jsonl(store.read("demo-1"))


def _export(db: Path, output: Path | str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["export", "--db", str(db), "--session", "demo-1", "-o", str(output)], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def _drain(read_end: int, into: list[bytes]) -> threading.Thread:
    def run() -> None:
        with os.fdopen(read_end, "rb") as stream:
            into.append(stream.read())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_an_export_into_a_fifo_streams_into_it_and_leaves_the_fifo(
    demo_db: Path, exported: bytes, tmp_path: Path
) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    code, out, err = _export(demo_db, fifo)
    reader.join(timeout=30)
    assert (code, err) == (0, "") and "exported 99 events" in out
    assert got == [exported]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_an_export_through_a_link_to_a_pipe_writes_into_the_pipe(
    demo_db: Path, exported: bytes, tmp_path: Path
) -> None:
    read_end, write_end = os.pipe()
    link = tmp_path / "stdout"
    link.symlink_to(f"/proc/self/fd/{write_end}")
    got: list[bytes] = []
    reader = _drain(read_end, got)
    try:
        code, _, err = _export(demo_db, link)
    finally:
        os.close(write_end)
    reader.join(timeout=30)
    assert (code, err) == (0, "")
    assert got == [exported]
    assert link.is_symlink() and os.readlink(link) == f"/proc/self/fd/{write_end}"


def test_an_export_through_a_link_to_a_character_device_writes_into_the_device(
    demo_db: Path, tmp_path: Path
) -> None:
    link = tmp_path / "null"
    link.symlink_to(os.devnull)
    code, _, err = _export(demo_db, link)
    assert (code, err) == (0, "")
    assert link.is_symlink() and os.readlink(link) == os.devnull
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_an_existing_file_keeps_its_mode_and_is_replaced_whole(demo_db: Path, exported: bytes, tmp_path: Path) -> None:
    target = tmp_path / "log.jsonl"
    target.write_bytes(b"an older, longer log\n" * 1000)
    target.chmod(0o640)
    assert _export(demo_db, target)[0] == 0
    assert target.read_bytes() == exported
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["log.jsonl"]  # no temporary file left behind


def test_an_export_through_a_link_to_a_file_replaces_the_file_and_keeps_the_link(
    demo_db: Path, exported: bytes, tmp_path: Path
) -> None:
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "log.jsonl"
    target.write_bytes(b"old\n")
    target.chmod(0o604)
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    assert _export(demo_db, link)[0] == 0
    assert link.is_symlink() and target.read_bytes() == exported
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o604


def test_a_new_file_gets_the_mode_the_umask_gives(demo_db: Path, exported: bytes, tmp_path: Path) -> None:
    before = os.umask(0o027)
    try:
        target = tmp_path / "new.jsonl"
        assert _export(demo_db, target)[0] == 0
    finally:
        os.umask(before)
    assert target.read_bytes() == exported
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640


def test_an_export_onto_a_socket_is_refused_and_the_socket_kept(demo_db: Path, tmp_path: Path) -> None:
    path = tmp_path / "sock"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        code, _, err = _export(demo_db, path)
    finally:
        server.close()
    assert code == 2 and "not a file export can write" in err
    assert stat.S_ISSOCK(os.lstat(path).st_mode)
