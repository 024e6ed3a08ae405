"""A fuzz target over damaged database files: bits and bytes flipped in real
planfold SQLite files (the header and the schema page included), files cut
short, and pages of garbage.

An input is one line naming the path to take (``replay``, ``audit``,
``export``, ``report``, ``fork``, ``import`` or ``open``), then the bytes of
the database file. The seeds are files planfold wrote: one at the current
schema version with a session and a fork of it (in WAL mode, as planfold
leaves them), and a legacy file that readers read through a migrated copy.

For every input the command exits 0, 1 or 2 and prints no traceback (the
store API, for ``open``, raises nothing but ``PlanfoldError``); a reader
(``replay``, ``audit``, ``export``, ``report``) changes no file but its
output, and a refused writer (``fork``, ``import``, ``open``) leaves the
database exactly as it was: every file byte for byte, save the write-ahead
log's index (``-shm``) and an empty write-ahead log, which SQLite itself
keeps beside a file opened in WAL mode when it cannot check the file point
on close (it does so for some damaged files with any connection), and which
hold nothing of the database.
"""

from __future__ import annotations

import functools
import io
import json
import random
import tempfile
from collections.abc import Callable
from pathlib import Path

from hypothesis import strategies as st

from planfold.adapters.cli.main import main
from planfold.adapters.store.base import import_session
from planfold.adapters.store.engine import LogStore
from planfold.adapters.store.sqlite import SqliteStore
from planfold.adapters.store.sqlite_readonly import open_read_only
from planfold.kernel.errors import PlanfoldError
from tests.fuzz.harness import Clock, NotJSON, Target, expect, stable_repr
from tests.fuzz.seeds import SEED_LOGS
from tests.storage_helpers import build_legacy_db

__all__ = ["DATABASE_TARGETS", "damaged_database", "seed_databases"]

#: The paths a damaged file is given to.
PATHS = ("replay", "audit", "export", "report", "fork", "import", "open")
#: SQLite's page size in the seed files.
PAGE = 4096


def _log(index: int) -> bytes:
    return b"".join(json.dumps(record).encode() + b"\n" for record in SEED_LOGS[index])


@functools.cache
def seed_databases() -> tuple[bytes, ...]:
    """The files the damage is done to (see the module docstring)."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        current = folder / "current.sqlite"
        with SqliteStore(current) as store:
            import_session(store, "a", _log(0))
            store.fork("a", 2, "b")
        legacy = folder / "legacy.sqlite"
        build_legacy_db(legacy)
        return current.read_bytes(), legacy.read_bytes()


def _schema_positions(image: bytes) -> list[int]:
    """Where the schema text lies in the first page: every byte of every
    ``CREATE`` statement found there."""
    first = image[:PAGE]
    found: list[int] = []
    start = first.find(b"CREATE ")
    while start != -1:
        end = first.find(b")", start)
        found.extend(range(start, len(first) if end == -1 else end + 1))
        start = first.find(b"CREATE ", start + 1)
    return found


@st.composite
def _damaged_image(draw: st.DrawFn) -> bytes:
    image = bytearray(draw(st.sampled_from(seed_databases())))
    schema = _schema_positions(bytes(image))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["schema byte", "header bit", "bit", "byte", "garbage page", "copied page"]))
        if kind == "schema byte" and schema:
            image[draw(st.sampled_from(schema))] = draw(st.sampled_from([0xA0, 0x00, 0xFF, 0x80, 0x28, 0x22]))
        elif kind == "header bit":
            image[draw(st.integers(0, 99))] ^= 1 << draw(st.integers(0, 7))
        elif kind == "bit":
            image[draw(st.integers(0, len(image) - 1))] ^= 1 << draw(st.integers(0, 7))
        elif kind == "byte":
            image[draw(st.integers(0, len(image) - 1))] = draw(st.integers(0, 255))
        else:
            pages = len(image) // PAGE
            page = draw(st.integers(0, max(0, pages - 1)))
            if kind == "garbage page":
                noise = random.Random(draw(st.integers(0, 2**32))).randbytes(PAGE)
            else:
                other = draw(st.integers(0, max(0, pages - 1)))
                noise = bytes(image[other * PAGE : (other + 1) * PAGE])
            image[page * PAGE : (page + 1) * PAGE] = noise
    cut = draw(st.sampled_from([None, None, None, 0, 50, 100, PAGE, 2 * PAGE, len(image) - 1]))
    return bytes(image if cut is None else image[:cut])


@st.composite
def damaged_database(draw: st.DrawFn) -> bytes:
    """One fuzz input (see the module docstring)."""
    return draw(st.sampled_from(PATHS)).encode() + b"\n" + draw(_damaged_image())


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _written(files: dict[str, bytes]) -> dict[str, bytes]:
    """``files`` without what SQLite keeps beside a WAL file (see the module
    docstring): the ``-shm`` index and an empty ``-wal``."""
    return {
        name: data
        for name, data in files.items()
        if not name.endswith("-shm") and not (name.endswith("-wal") and not data)
    }


def _argv(path: str, db: Path, folder: Path) -> list[str]:
    if path in ("replay", "audit"):
        return [path, str(db)]
    if path == "export":
        return ["export", "--db", str(db), "--session", "a", "-o", str(folder / "out.jsonl")]
    if path == "report":
        return ["report", "--db", str(db), "--session", "b", "-o", str(folder / "out.html")]
    if path == "fork":
        return ["fork", "--db", str(db), "a", "c", "--at", "3"]
    return ["import", str(folder / "log.jsonl"), "--db", str(db), "--session", "c"]


def _open(db: Path, clock: Clock) -> str:
    """The store API on the file: a writer's open and every read of every
    session, then a reader's. A refused open leaves the database as it was;
    a read after an open that went through may be refused too."""
    seen: list[str] = []
    openers: tuple[Callable[[], LogStore], ...] = (
        functools.partial(SqliteStore, db),
        functools.partial(open_read_only, str(db)),
    )
    for opener in openers:
        before = _written(_files(db.parent))
        try:
            with clock.timed():
                store = opener()
        except PlanfoldError as exc:
            seen.append(f"refused {exc.code}")
            after = _written(_files(db.parent))
            expect(after == before, f"a refused open of a damaged file wrote to it ({exc.code})")
            continue
        try:
            with clock.timed():
                for sid in store.session_ids():
                    store.read(sid)
                    store.provenance(sid)
                    seen.append(f"{sid}: {'ok' if store.audit(sid).ok else 'mismatch'}")
        except PlanfoldError as exc:
            seen.append(f"read refused {exc.code}")
        finally:
            store.close()
    return stable_repr(seen)


def _run_damaged(data: bytes, clock: Clock) -> str:
    head, _, image = data.partition(b"\n")
    path = head.decode("ascii", "replace")
    if path not in PATHS:
        raise NotJSON(f"the first line must name one of {PATHS}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        db = folder / "db.sqlite"
        db.write_bytes(image)
        (folder / "log.jsonl").write_bytes(_log(1))
        before = _files(folder)
        if path == "open":
            return f"open: {_open(db, clock)}"
        out, err = io.StringIO(), io.StringIO()
        with clock.timed():
            code = main(_argv(path, db, folder), out=out, err=err, stdin=io.BytesIO())
        printed = out.getvalue() + err.getvalue()
        expect(code in (0, 1, 2), f"planfold {path} on a damaged file exited {code!r}")
        expect("Traceback" not in printed, f"planfold {path} on a damaged file printed a traceback")
        after = _files(folder)
    for output in ("out.jsonl", "out.html"):
        after.pop(output, None)
    if path in ("replay", "audit", "export", "report"):
        expect(after == before, f"planfold {path} changed the damaged file it only reads")
    elif code != 0:
        expect(_written(after) == _written(before), f"a refused {path} of a damaged file wrote to it (exit {code})")
    return f"{path}: exit {code}"


DATABASE_TARGETS: tuple[Target, ...] = (
    Target("damaged_database", "planfold replay/audit/export/report/fork/import, SqliteStore", _run_damaged,
           damaged_database()),
)
