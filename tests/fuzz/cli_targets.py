"""A fuzz target for the ``planfold`` command: any arguments over any file.

An input is one line holding a JSON array of arguments, then the contents of
FILE (also given on standard input). In the arguments ``{FILE}``, ``{OUT}``,
``{DB}``, ``{DIR}`` and ``{MISSING}`` stand for paths in a fresh directory:
the file, an output that does not exist yet, a database that does not exist
yet, a directory of one conformance vector (FILE as its log and as its
expected result) and a path that never exists.

For every input ``main`` returns an exit status of 0, 1 or 2 and raises
nothing (no traceback); with ``--json`` what it prints is one JSON document;
``replay``, ``audit``, ``report`` and ``export`` change no file but their output; a
refused ``import`` creates nothing. ``--command`` (which runs a program) is
only ever given a program that does not exist.
"""

from __future__ import annotations

import functools
import io
import json
import sqlite3
import tempfile
from pathlib import Path

from hypothesis import strategies as st

from planfold.adapters.cli.demo import run_demo
from planfold.adapters.cli.main import main
from tests.fuzz.harness import Clock, FuzzFinding, NotJSON, Target, decode_json, expect
from tests.fuzz.inputs import byte_mutations
from tests.fuzz.seeds import SEED_LOGS

__all__ = ["CLI_TARGETS", "cli_input"]

#: The subcommands tried (``demo`` only ever with a timeout it refuses, so
#: that no input runs a whole session).
COMMANDS = ("replay", "audit", "report", "export", "import", "conform", "demo", "nope", "--version", "--help")
#: Arguments the subcommands are given, in any order and number.
WORDS = (
    "{FILE}", "{FILE}", "{MISSING}", "{DIR}", "-", "--session", "demo-1", "s", "\udcff", "", "--json", "--json",
    "--progress", "--no-progress", "--db", "{DB}", "{FILE}", "-o", "{OUT}", "{FILE}", "--output", "--timeout",
    "0", "nan", "-1", "1e400", "--retries", "x", "--command", "--help", "--base-url", "ftp://host/v1", "--model",
    "--all",
)
#: What ``--command`` may name: programs that do not exist.
SAFE_COMMANDS = ("/nonexistent/planfold-impl", "{MISSING}")


@functools.cache
def _demo_database() -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "demo.sqlite"
        run_demo(str(db), io.StringIO())
        return db.read_bytes()


@functools.cache
def _foreign_database() -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "other.sqlite"
        conn = sqlite3.connect(db)
        conn.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY, title TEXT)")
        conn.commit()
        conn.close()
        return db.read_bytes()


def _logs() -> list[bytes]:
    return [b"".join(json.dumps(record).encode() + b"\n" for record in log) for log in SEED_LOGS]


@st.composite
def _contents(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["log", "mutated log", "database", "mutated database", "foreign", "bytes"]))
    if kind == "log":
        return draw(st.sampled_from([*_logs(), b"", b"\n", b"\n\n"]))
    if kind == "mutated log":
        return draw(byte_mutations(_logs()))
    if kind == "database":
        return _demo_database()
    if kind == "mutated database":
        data = bytearray(_demo_database())
        for _ in range(draw(st.integers(1, 8))):
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        return bytes(data[: draw(st.sampled_from([len(data), 100, 4096, 8192]))])
    if kind == "foreign":
        return _foreign_database()
    return draw(st.binary(max_size=64))


@st.composite
def cli_input(draw: st.DrawFn) -> bytes:
    """One fuzz input (see the module docstring)."""
    command = draw(st.sampled_from(COMMANDS))
    words = draw(st.lists(st.sampled_from(WORDS) | st.text(max_size=6), max_size=8))
    argv = [command, *words]
    if command == "demo":
        argv += ["--timeout", draw(st.sampled_from(["0", "nan", "-3", "soon"]))]
    for index, word in enumerate(argv[:-1]):
        if word == "--command":
            argv[index + 1] = draw(st.sampled_from(SAFE_COMMANDS))
    if argv[-1] == "--command":
        argv.append(SAFE_COMMANDS[0])
    return json.dumps(argv).encode() + b"\n" + draw(_contents())


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _run_cli(data: bytes, clock: Clock) -> str:
    head, _, content = data.partition(b"\n")
    argv = decode_json(head)
    if not isinstance(argv, list) or not all(isinstance(word, str) for word in argv):
        raise NotJSON("the first line must be a JSON array of strings")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        vectors = folder / "vectors"
        vectors.mkdir()
        for name in ("in.jsonl", "vectors/v.jsonl", "vectors/v.expected.json"):
            (folder / name).write_bytes(content)
        paths = {
            "{FILE}": folder / "in.jsonl",
            "{OUT}": folder / "out.jsonl",
            "{DB}": folder / "db.sqlite",
            "{DIR}": vectors,
            "{MISSING}": folder / "missing" / "x",
        }
        args = [str(paths[word]) if word in paths else word for word in argv]
        before = _files(folder)
        out, err = io.StringIO(), io.StringIO()
        with clock.timed():
            code = main(args, out=out, err=err, stdin=io.BytesIO(content))
        after = _files(folder)
    printed = out.getvalue()
    expect(code in (0, 1, 2), f"planfold {args} exited {code!r}")
    expect("Traceback" not in err.getvalue() + printed, f"planfold {args} printed a traceback")
    command = argv[0] if argv else ""
    to_stdout = command == "export" and not ({"-o", "--output"} & set(argv))
    if "--json" in argv and not {"--help", "--version"} & set(argv) and printed and not to_stdout:
        try:
            json.loads(printed)
        except ValueError as exc:
            raise FuzzFinding(f"planfold {args} --json printed more than one JSON document") from exc
    if command in ("replay", "audit", "report", "export"):
        after.pop("out.jsonl", None)
        expect(after == before, f"planfold {args} changed a file it only reads")
    if command == "import" and code != 0:
        expect(after == before, f"a refused planfold {args} wrote something")
    return f"exit {code}"


CLI_TARGETS: tuple[Target, ...] = (Target("cli", "planfold.adapters.cli.main.main", _run_cli, cli_input()),)
