"""``planfold``: run the demo, and replay, audit, export, import and fork logs.

Theory of operation
-------------------
``FILE`` (``--db FILE``) is either a SQLite database written by planfold (recognised by the
SQLite header, ``SQLite format 3``) or a JSON Lines log (one event record
``{seq, kind, at, payload}`` per line); ``-`` is standard input. It is read
once, so pipes and FIFOs work (``adapters.cli.inputs``). For a database
``--session ID`` picks one session; without it every session in the file is
checked. ``export`` and ``import`` move one session between the two forms.

- ``replay --db FILE``: fold each log strictly, event by event, and say where it
  stands (mode, plan, goal).
- ``audit --db FILE``: the strict replay plus, for a database, the stored
  projection and snapshot compared with the fold.
- ``export --db PATH --session ID [-o OUT]``: the session as JSON Lines,
  written where ``OUT`` leads: into a FIFO or a character device (or a link
  to one) as a stream, over a regular file atomically and with its mode
  kept, or into a new file.
- ``import FILE --db PATH --session ID``: a JSON Lines log into an empty
  session, folded strictly first (a log that fails creates no database),
  then written in batches inside one transaction (``_CheckedLog``,
  ``store.importing``): nothing is written unless the whole log lands, and
  memory stays flat however long the log.
- ``fork --db PATH SOURCE NEW --at N`` (or ``--turn K``): a new session
  whose log is the first N events of SOURCE (or everything before turn K
  started), with its provenance (``Store.fork``).
- ``report --db FILE [--session ID | --all] [-o OUT]``: one session as a
  self-contained HTML page for auditors (timeline, verdicts, plan revisions,
  goal rounds, the machines with the transitions taken), or with ``--all``
  every session of a database with the machines' transition coverage; see
  ``adapters.report``. It reads as ``replay`` does (read-only, one pass).
- ``demo``: see ``adapters.cli.demo``.
- ``conform DIR``: see ``adapters.cli.conform`` and ``adapters.specgen.vectors``.
- ``completion bash|zsh``: see ``adapters.cli.completion``.
- ``serve --db FILE``: JSON-RPC 2.0 on stdin/stdout, see ``adapters.serve``.

A forked session's provenance (its source, the seq it was forked at, the
hash of that prefix) is shown by ``replay`` and ``audit`` (which also checks
it against the session's own first events), and its export ends with a fork
record (``adapters.provenance``) that ``import`` keeps and ``replay`` of
the exported file shows.

Reading never writes: ``replay``, ``audit``, ``report`` and ``export`` open a database
read-only and refuse one that is not planfold's. A JSON Lines log is read by
the one reader of JSON Lines logs (``codec.read_records``, which ``import``
and ``conform`` use too, so every command gives one verdict on one log), as a
stream: a line at a time, folded as it is read, with progress in bytes of
the file; a database's events are read in pages (``LogStore.scan``). An empty file
is a log with no events; every line is one record, so a blank line is a
malformed record. The first bad record is reported by its seq when that much
of it is readable, else by its line, with the rule it breaks.

Logs (``planfold.*`` loggers: model retries, tool crashes, conflicts,
leases, migrations) go to standard error: warnings and worse by default,
``-v`` adds INFO, ``-vv`` DEBUG (and the HTTP client's loggers, ``httpx``
and ``httpcore``), ``--log-level LEVEL`` names the level; they go before the
command or after it (``-v`` counts wherever it is given). ``serve`` logs INFO
by default, in its own format; its line per request is DEBUG (``-vv``).

Every command that reads or writes a store names it with ``--db``; the
``FILE`` of ``replay``, ``audit`` and ``report`` may still be given without
it for a release, with a deprecation note on stderr (``_store_named``).

Output is for people by default (plain words, no Python reprs); ``--json``
prints one JSON document on stdout. Exit status (``EXIT_STATUS``): 0 when
everything checked is sound, 1 for a bad log, a projection that does not
match its log or a failed conformance check, 2 for a usage or input problem
or a refused operation (nothing written). No input makes the command fail
with a traceback: every refusal is a message and an exit status.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import logging
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import BinaryIO, TextIO

from ...kernel.errors import ConflictError, PlanfoldError, ReplayError
from ...kernel.log import Event
from ...kernel.session import SessionState
from ..codec import CodecError, JsonlLines, canonical_event, encode_event, encode_jsonl, read_records
from ..llm.model import RetryBudget
from ..llm.openai import OpenAIClient, RetryPolicy
from ..provenance import ForkProvenance, ForkRecordLines, encode_fork_record
from ..report.events import AROUND, BUDGET, LIMIT
from ..report.html import render_coverage, render_report
from ..report.model import Audited, Coverage, Report, build_report, with_audit, with_fork_record
from ..report.usage import CostTable, load_costs
from ..store.base import Store, check_session_id
from ..store.engine import LogStore
from ..store.fork import check_fork, turn_start_seq
from ..store.importing import check_prefix, import_stream
from ..store.opener import is_postgres_url
from ..store.spill import SpillingFold, fold_records
from .args import count, positive_seconds
from .completion import add_completion_arguments, run_completion
from .conform import add_conform_arguments, run_conform
from .demo import command_name, run_demo
from .describe import goal_text, plan_text, shown, summarize
from .entry import EXIT_STATUS, ParserExit, global_options_joined, main, top_parser
from .inputs import CliError, Source, open_database, read_source, require_database_file, same_file
from .progress import Progress
from .serve import add_serve_arguments, run_serve

__all__ = ["EXIT_STATUS", "main", "run"]

@dataclass(frozen=True, slots=True)
class Problem:
    """The first bad record of a log: its seq (None when unreadable), its line
    in a JSON Lines log (None in a database), the rule and the detail."""

    position: int | None
    line: int | None
    rule: str
    detail: str

    def as_json(self) -> dict[str, object]:
        return {"position": self.position, "line": self.line, "rule": self.rule, "detail": self.detail}

    def text(self) -> str:
        if self.position is None:
            where = f"line {self.line}"
        else:
            where = f"seq {self.position}" + ("" if self.line is None else f" (line {self.line})")
        return f"BAD LOG at {where} [{self.rule}]: {shown(self.detail)}"


@dataclass
class Checked:
    """The outcome of checking one log: how many events folded cleanly, the
    state they give, the first bad record, and (audit of a database) the
    projection's mismatches and snapshot."""

    session: str
    events: int
    state: SessionState | None
    problem: Problem | None = None
    mismatches: tuple[str, ...] = ()
    snapshot: str | None = None
    provenance: ForkProvenance | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None and not self.mismatches

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {"session": self.session, "ok": self.ok, "events": self.events}
        if self.problem is not None:
            out["error"] = self.problem.as_json()
        if self.state is not None and self.problem is None:
            out["state"] = summarize(self.state)
        if self.snapshot is not None:
            out["projection"] = {"mismatches": list(self.mismatches), "snapshot": self.snapshot}
        if self.provenance is not None:
            out["fork"] = self.provenance.as_json()
        return out


def _from_replay(exc: ReplayError, line: int | None = None) -> Problem:
    position = exc.position if isinstance(exc.position, int) and not isinstance(exc.position, bool) else None
    return Problem(position, line, exc.rule, exc.detail)


def fold_checked(
    session: str,
    events: Iterable[tuple[int | None, Event]],
    total: int,
    progress: Progress,
    done: Callable[[int], int] | None = None,
) -> Checked:
    """Fold ``(line, event)`` pairs strictly, one at a time as they are read,
    stopping at the first bad one (a malformed record of a JSON Lines log, or
    a stored payload that does not decode, included), with the goal ids the
    log has used kept off the states (``SpillingFold``: memory that does not
    grow with them). Progress counts events of ``total``, or, with ``done``,
    what ``done(events folded)`` says (the bytes of a log read so far)."""
    count = 0

    def counted(before: SessionState, after: SessionState, event: Event) -> None:
        nonlocal count
        count += 1
        progress.update(count if done is None else done(count), events=count)

    progress.start(total, session, unit="events" if done is None else "bytes")
    try:
        state, stop = fold_records(events, counted)
    finally:
        progress.finish()
    if stop is None:
        return Checked(session, count, state)
    return Checked(session, count, state, Problem(stop.position, stop.line, stop.rule, stop.detail))


def _require_session(store: Store, session: str, where: str) -> None:
    known = store.session_ids()
    if session not in known:
        listed = ", ".join(shown(s) for s in known) if known else "none"
        raise CliError(f"no session {shown(session)!r} in {shown(where)} (sessions: {listed})", code="no-such-session")


def _sessions_to_read(store: Store, session: str | None, where: str, doing: str) -> list[str]:
    """The sessions a command reads from a database: the one ``--session``
    names (which must be there), else all of them (there must be one)."""
    if session is not None:
        _require_session(store, session, where)
        return [session]
    sessions = list(store.session_ids())
    if not sessions:
        raise CliError(f"{shown(where)} holds no sessions: nothing to {doing}", code="no-sessions")
    return sessions


def _check(args: argparse.Namespace, audit: bool, err: TextIO, stdin: BinaryIO) -> list[Checked]:
    progress = Progress(err, enabled=args.progress)
    with read_source(args.file, stdin) as source:
        if source.kind == "jsonl":
            lines = ForkRecordLines(source.lines())
            checked = fold_checked(args.session or source.label, read_records(lines), source.size, progress,
                                   lambda _: source.bytes_read)
            return [_with_fork_record(checked, lines.provenance)]
        return _check_database(args, source, audit, progress)


def _with_fork_record(checked: Checked, provenance: ForkProvenance | None) -> Checked:
    """A JSON Lines log's check with its fork record: shown, and refused when
    it claims more events than the log holds (its hash is checked where the
    log is imported)."""
    if provenance is None or checked.problem is not None:
        return checked
    checked.provenance = provenance
    if provenance.seq > checked.events:
        detail = f"the fork record's seq {provenance.seq} is past the log's {checked.events} events"
        checked.problem = Problem(None, checked.events + 1, "provenance-mismatch", detail)
    return checked


def _check_database(args: argparse.Namespace, source: Source, audit: bool, progress: Progress) -> list[Checked]:
    results = []
    with open_database(source, write=False) as store:
        for sid in _sessions_to_read(store, args.session, source.name, "check"):
            checked = fold_checked(sid, ((None, e) for e in store.scan(sid)), store.head(sid), progress)
            checked.provenance = store.provenance(sid)
            if audit and checked.problem is None:
                report = store.audit(sid)
                checked.mismatches, checked.snapshot = report.mismatches, report.snapshot
            results.append(checked)
    return results


def _print_checked(results: list[Checked], audit: bool, out: TextIO) -> None:
    for r in results:
        name = shown(r.session)
        if r.problem is not None:
            out.write(f"{name}: {r.problem.text()}\n")
            if r.provenance is not None:
                out.write(f"  {shown(r.provenance.text())}\n")
            continue
        assert r.state is not None
        facts = summarize(r.state)
        out.write(f"{name}: ok, {r.events} events, {facts['turns']} turns, mode {facts['agent_mode']}\n")
        out.write(f"  plan: {plan_text(facts['plan'])}\n  goal: {goal_text(facts['goal'])}\n")
        if r.provenance is not None:
            out.write(f"  {shown(r.provenance.text())}\n")
        if audit and r.snapshot is not None:
            verdict = "matches the fold" if not r.mismatches else "DOES NOT match the fold"
            out.write(f"  stored projection {verdict} (snapshot {r.snapshot})\n")
            for m in r.mismatches:
                out.write(f"  ! {shown(m)}\n")


def _cmd_check(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: BinaryIO, audit: bool) -> int:
    results = _check(args, audit, err, stdin)
    ok = all(r.ok for r in results)
    if args.json:
        out.write(json.dumps({"ok": ok, "sessions": [r.as_json() for r in results]}) + "\n")
    else:
        _print_checked(results, audit, out)
    return 0 if ok else 1


# --------------------------------------------------------------------------
# export and import


def _side_files(db: str) -> list[str]:
    return [db, *(db + side for side in ("-wal", "-shm", "-journal"))]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _write_atomically(path: str, data: bytes, mode: int) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same
    directory, given ``mode`` before it takes the path's place, so a failed
    write leaves no half file behind."""
    directory = os.path.dirname(os.path.abspath(path))
    try:
        handle, temporary = tempfile.mkstemp(prefix=".planfold-export-", dir=directory)
    except OSError as exc:  # the error names the path asked for, not the temporary file's
        raise OSError(exc.errno, exc.strerror, path) from exc
    try:
        with os.fdopen(handle, "wb") as stream:
            os.fchmod(stream.fileno(), mode)
            stream.write(data)
        os.replace(temporary, path)
    except BaseException as exc:
        if os.path.exists(temporary):
            os.unlink(temporary)
        if isinstance(exc, OSError):
            raise OSError(exc.errno, exc.strerror, path) from exc
        raise


#: What ``export -o`` writes into as a stream: what the path leads to stays.
_STREAMS = {stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device"}
#: What it refuses to write to at all.
_NOT_FILES = {stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a directory"}


def _write_output(path: str, data: bytes) -> None:
    """Write ``data`` where ``path`` leads (links followed). A FIFO or a
    character device is written to as a stream and stays what it is; a
    regular file is replaced whole (``_write_atomically``) and keeps its
    mode, a link to it stays a link; a new file gets the mode the umask
    gives. Anything else (a block device, a socket) is refused."""
    try:
        status: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        status = None  # nothing there yet (or a link to nothing): a new file
    if status is not None and not stat.S_ISREG(status.st_mode):
        kind = stat.S_IFMT(status.st_mode)
        if kind not in _STREAMS:
            what = _NOT_FILES.get(kind, "not a regular file")
            raise CliError(f"{shown(path)} is {what}, not a file export can write", code="not-a-file")
        # no O_CREAT, no O_TRUNC: this opens what is there, and creates or empties nothing
        handle = os.open(path, os.O_WRONLY | getattr(os, "O_NOCTTY", 0))
        with os.fdopen(handle, "wb") as stream:
            if stat.S_ISREG(os.fstat(handle).st_mode):
                raise CliError(f"{shown(path)} changed while export wrote it; nothing written", code="not-a-file")
            stream.write(data)
        return
    mode = 0o666 & ~_umask() if status is None else stat.S_IMODE(status.st_mode)
    _write_atomically(os.path.realpath(path), data, mode)


def _cmd_export(args: argparse.Namespace, out: TextIO) -> int:
    output = args.output
    if output not in (None, "-"):
        if any(same_file(output, path) for path in _side_files(args.db)):
            raise CliError(
                f"{shown(output)} is the database itself; export writes to another file or to stdout",
                code="output-is-the-database",
            )
        if os.path.isdir(output):
            raise CliError(f"{shown(output)} is a directory", code="not-a-file")
    with open_database(args.db, write=False) as store:
        _require_session(store, args.session, args.db)
        events = store.read(args.session)
        provenance = store.provenance(args.session)
    data = encode_jsonl(events)
    if provenance is not None:  # after the events: the first lines are the source's, byte for byte
        data += encode_fork_record(provenance) + b"\n"
    count = len(events)
    if output in (None, "-"):
        out.write(data.decode("utf-8"))
        return 0
    _write_output(output, data)
    if args.json:
        out.write(json.dumps({"session": args.session, "events": count, "output": output}) + "\n")
    else:
        out.write(f"exported {count} events of {shown(args.session)} to {shown(output)}\n")
    return 0


def _refuse_a_filled_session(store: LogStore, session: str, log: _CheckedLog, db: str) -> None:
    """``CliError`` when ``session`` already holds events: this very log
    (``already-imported``, told by its digest: the stored events are read a
    page at a time) or another (``session-not-empty``)."""
    held = store.head(session)
    if held == 0:
        return
    stored = hashlib.sha256()
    for event in store.scan(session):
        stored.update(encode_event(event) + b"\n")
    if stored.hexdigest() == log.canonical():
        raise CliError(
            f"nothing imported: session {shown(session)!r} in {shown(db)} already holds this log "
            f"({log.events} events)",
            code="already-imported",
        )
    raise CliError(
        f"nothing imported: session {shown(session)!r} in {shown(db)} already holds {held} events; "
        "import writes only into an empty session",
        code="session-not-empty",
    )


class _CheckedLog:
    """A JSON Lines log that ``import`` checked in a first pass, read again
    as often as needed: from its file when it is a regular file, else from a
    private temporary copy the first pass wrote as it read (standard input,
    a pipe, a FIFO). ``digest`` is the SHA-256 of its lines (each with its
    line end), which the import's idempotency key is made of; a later pass
    that reads other lines than the first one did is refused
    (``log-changed``), so the file may not change between the passes."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.path = source.name if source.name != "-" and os.path.isfile(source.name) else None
        # closed by ``close``; deleted by the system as it is closed
        self.spool: BinaryIO | None = None if self.path is not None else tempfile.TemporaryFile()  # noqa: SIM115
        self.events = 0
        self.digest = ""
        self.provenance: ForkProvenance | None = None

    def close(self) -> None:
        if self.spool is not None:
            self.spool.close()

    def first_pass(self, session: str, progress: Progress) -> Checked:
        """Fold the log strictly as ``replay`` does (the same reader, fold
        and report), hashing its lines and copying them to the spool."""
        digest = hashlib.sha256()

        def teed(lines: Iterable[bytes]) -> Iterator[bytes]:
            for line in lines:
                digest.update(line + b"\n")
                if self.spool is not None:
                    self.spool.write(line + b"\n")
                yield line

        lines = ForkRecordLines(teed(self.source.lines()))
        source = self.source
        checked = fold_checked(session, read_records(lines), source.size, progress, lambda _: source.bytes_read)
        self.events, self.provenance, self.digest = checked.events, lines.provenance, digest.hexdigest()
        return checked

    def events_again(self) -> Iterator[Event]:
        """The log's events, read again; ``log-changed`` (at their end) when
        its lines are not the lines the first pass read."""
        digest = hashlib.sha256()

        def hashed(lines: Iterable[bytes]) -> Iterator[bytes]:
            for line in lines:
                digest.update(line + b"\n")
                yield line

        if self.spool is None:
            assert self.path is not None
            with open(self.path, "rb") as again:
                for _, event in read_records(ForkRecordLines(hashed(JsonlLines(again)))):
                    yield event
        else:
            self.spool.flush()
            self.spool.seek(0)
            for _, event in read_records(ForkRecordLines(hashed(JsonlLines(self.spool)))):
                yield event
        if digest.hexdigest() != self.digest:
            raise CliError(f"nothing imported: {shown(self.source.name)} changed while it was imported",
                           code="log-changed")

    def canonical(self) -> str:
        """The SHA-256 of the log's events as a store keeps them (``encode_event``
        of each canonical event, one per line)."""
        digest = hashlib.sha256()
        for event in self.events_again():
            digest.update(encode_event(canonical_event(event)) + b"\n")
        return digest.hexdigest()

    def check_provenance(self, session: str) -> None:
        """``ProvenanceMismatchError`` unless the fork record describes the
        log's events (``check_provenance``), its prefix read again."""
        provenance = self.provenance
        if provenance is None:
            return
        check_session_id(provenance.source)
        seq = provenance.seq
        prefix = hashlib.sha256()
        if isinstance(seq, int) and not isinstance(seq, bool) and 1 <= seq <= self.events:
            for event in itertools.islice(self.events_again(), seq):
                prefix.update(encode_event(canonical_event(event)) + b"\n")
        check_prefix(session, provenance, self.events, prefix.hexdigest())


def _cmd_import(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: BinaryIO) -> int:
    check_session_id(args.session)  # before anything is read, opened or created
    with read_source(args.file, stdin) as source:
        if source.kind != "jsonl":
            raise CliError(
                f"{shown(args.file)} is a SQLite database; import reads a JSON Lines log (export a session first)",
                code="not-a-jsonl-log",
            )
        log = _CheckedLog(source)
        try:
            return _import_checked(args, log, out, err)
        finally:
            log.close()


def _import_checked(args: argparse.Namespace, log: _CheckedLog, out: TextIO, err: TextIO) -> int:
    """``import`` of a log (see ``_CheckedLog``): a first pass checks it as
    ``replay`` does, before anything is opened; a second writes it in
    batches inside one transaction (``store.importing.import_stream``), so
    memory stays flat however long the log, and a refusal writes nothing."""
    progress = Progress(err, enabled=args.progress)
    # A bad log is refused before anything is opened, with the verdict a
    # replay gives: the same reader, the same fold, the same report.
    checked = log.first_pass(args.session, progress)
    if checked.problem is not None:
        _fail(args, out, err, checked.problem.as_json(), checked.problem.text())
        return 1
    if not log.events:
        raise CliError(f"nothing imported: {shown(args.file)} holds no events", code="nothing-to-import")
    log.check_provenance(args.session)  # before anything is opened, as the log
    if is_postgres_url(args.db) or os.path.exists(args.db):
        try:
            existing = open_database(args.db, write=False)
        except CliError:
            raise
        except PlanfoldError:
            existing = None  # not (yet) a planfold database: the writer migrates it or refuses it
        if existing is not None:
            with existing:
                _refuse_a_filled_session(existing, args.session, log, args.db)
    with open_database(args.db, write=True) as store, SpillingFold() as spilling:
        progress.start(log.events, args.session)
        try:
            result = import_stream(store, args.session, log.events_again(), provenance=log.provenance,
                                   idempotency_key="import:" + log.digest, fold=spilling.fold,
                                   progress=progress.update)
        except ConflictError as exc:
            raise CliError(
                f"nothing imported: session {shown(args.session)!r} gained events while importing "
                "(another writer)",
                code="session-not-empty",
            ) from exc
        finally:
            progress.finish()
    if result.replayed:
        raise CliError(
            f"nothing imported: session {shown(args.session)!r} in {shown(args.db)} already holds this log",
            code="already-imported",
        )
    provenance = log.provenance
    if args.json:
        body_json: dict[str, object] = {"session": args.session, "events": result.last_seq}
        if provenance is not None:
            body_json["fork"] = provenance.as_json()
        out.write(json.dumps(body_json) + "\n")
    else:
        out.write(f"imported {result.last_seq} events into {shown(args.session)} in {shown(args.db)}\n")
        if provenance is not None:
            out.write(f"  {shown(provenance.text())}\n")
    return 0


# --------------------------------------------------------------------------
# fork


def _cmd_fork(args: argparse.Namespace, out: TextIO) -> int:
    check_session_id(args.source)
    check_session_id(args.new)
    if not is_postgres_url(args.db):
        require_database_file(args.db)
    # Every refusal comes from a read-only look first: opening for writing
    # would create or migrate the database, and a refused fork writes nothing.
    with open_database(args.db, write=False) as reader:
        at = args.at if args.turn is None else turn_start_seq(reader, args.source, args.turn) - 1
        check_fork(reader, args.source, at, args.new)
    with open_database(args.db, write=True) as store:
        provenance = store.fork(args.source, at, args.new)
    if args.json:
        out.write(json.dumps({"session": args.new, "events": provenance.seq, "fork": provenance.as_json()}) + "\n")
    else:
        out.write(
            f"forked {shown(args.source)} at seq {provenance.seq} into {shown(args.new)} in {shown(args.db)}\n"
            f"  prefix sha256 {provenance.prefix_sha256}\n"
        )
    return 0


# --------------------------------------------------------------------------
# report


def _audit_verdict(store: Store, session: str) -> Audited:
    """What ``planfold audit`` finds in a stored session whose log passes the
    strict replay: every difference of its stored projection, snapshot and
    provenance from the log, and the snapshot's status."""
    audited = store.audit(session)
    return Audited(tuple(audited.mismatches), audited.snapshot)


def _whole(text: str) -> int:
    """A whole number from 0 to 2**53 (a seq, or a number of bytes)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 2**53:
        raise argparse.ArgumentTypeError(f"expected a whole number from 0 to 2**53, got {text!r}")
    return value


def _forks_of(store: LogStore, session: str) -> tuple[tuple[str, int], ...]:
    """The sessions of ``store`` forked from ``session``, with the seq each was forked at."""
    found = []
    for sid in store.session_ids():
        provenance = store.provenance(sid)
        if provenance is not None and provenance.source == session:
            found.append((sid, provenance.seq))
    return tuple(found)


def _stored_report(
    store: LogStore, session: str, args: argparse.Namespace, origin: str, costs: CostTable | None = None
) -> Report:
    """The report of a stored session, with ``planfold audit``'s verdict on it
    and the sessions forked from it (its events embedded unless ``--all``);
    ``costs`` prices its model calls."""
    report = build_report(session, ((None, e) for e in store.scan(session)), store.provenance(session),
                          limit=args.payload_limit, budget=args.payload_budget, around=args.around,
                          events=not args.all, costs=costs)
    report = replace(report, origin=origin, forks=_forks_of(store, session))
    return report if not report.ok else with_audit(report, _audit_verdict(store, session))



def _report_page(args: argparse.Namespace, stdin: BinaryIO) -> tuple[str, bool]:
    """The HTML page ``report`` writes, and whether every log it read is sound."""
    costs = None if args.costs is None else load_costs(args.costs)
    with read_source(args.file, stdin) as source:
        if source.kind == "jsonl":
            lines = ForkRecordLines(source.lines())
            report = build_report(shown(args.session or source.label), read_records(lines),
                                  limit=args.payload_limit, budget=args.payload_budget, around=args.around,
                                  costs=costs)
            report = replace(with_fork_record(report, lines.provenance), origin=source.name)
            return render_report(report), report.ok
        with open_database(source, write=False) as store:
            sessions = _sessions_to_read(store, args.session, source.name, "report")
            if not args.all and len(sessions) > 1:
                listed = ", ".join(shown(s) for s in sessions[:10]) + (" …" if len(sessions) > 10 else "")
                raise CliError(
                    f"{shown(source.name)} holds {len(sessions)} sessions ({listed}): "
                    "name one with --session, or report them all with --all",
                    code="session-needed",
                )
            if not args.all:
                report = _stored_report(store, sessions[0], args, source.name, costs)
                return render_report(report), report.ok
            coverage = Coverage(shown(source.name))
            for sid in sessions:
                coverage.add(_stored_report(store, sid, args, source.name))
            done = coverage.finish()
            return render_coverage(done), done.bad == 0


def _cmd_report(args: argparse.Namespace, out: TextIO, stdin: BinaryIO) -> int:
    output = args.output
    if output not in (None, "-"):
        if not is_postgres_url(args.file) and args.file != "-" and same_file(output, args.file):
            raise CliError(f"{shown(output)} is the log itself; report writes to another file or to stdout",
                           code="output-is-the-database")
        if os.path.isdir(output):
            raise CliError(f"{shown(output)} is a directory", code="not-a-file")
    page, ok = _report_page(args, stdin)
    if output in (None, "-"):
        out.write(page)
    else:
        _write_output(output, page.encode("utf-8", "backslashreplace"))
    return 0 if ok else 1


# --------------------------------------------------------------------------
# demo


def _cmd_demo(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    model = None
    if args.base_url:
        key = os.environ.get(args.api_key_env) if args.api_key_env else None
        if args.api_key_env and key is None:
            raise CliError(f"the environment variable {shown(args.api_key_env)} is not set", code="no-api-key")
        retry = RetryPolicy(max_retries=args.retries)
        model = OpenAIClient(
            args.base_url, args.model, api_key=key, timeout_s=args.timeout, retry=retry,
            retry_budget=RetryBudget(args.retries),
        )
    try:
        if os.path.isdir(args.db):
            raise CliError(f"{shown(args.db)} is a directory, not a database", code="not-a-file")
        # with --json the narrative goes to stderr so that stdout is one JSON document
        result = run_demo(args.db, err if args.json else out, model=model, command=command_name())
    finally:
        if model is not None:
            model.close()
    if result.model_error is not None:
        where = f"server at {shown(args.base_url)} " if args.base_url else ""
        _fail(args, out, err, {"code": "model-unusable", "detail": result.model_error},
              f"the model {where}could not be used: {shown(result.model_error)}")
        return 2
    if args.json:
        out.write(json.dumps({"session": result.session_id, "events": result.last_seq, "ok": result.audit_ok}) + "\n")
    return 0 if result.audit_ok else 1


# --------------------------------------------------------------------------
# the parser


def _parser(out: TextIO, err: TextIO) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The top-level parser (``entry.top_parser``) with every command's own
    arguments, and each command's parser by name."""
    parser, commands = top_parser(out, err)
    demo = commands["demo"]
    demo.add_argument(
        "--db",
        default="demo.sqlite",
        help="SQLite file or postgresql:// URL; each run adds a session (default demo.sqlite)",
    )
    demo.add_argument("--base-url", metavar="URL", help="an OpenAI-compatible API root, e.g. http://127.0.0.1:8000/v1")
    demo.add_argument("--model", default="default", help="the model name to ask the server for (default 'default')")
    demo.add_argument("--api-key-env", metavar="VAR", help="the environment variable holding the API key")
    demo.add_argument("--timeout", type=positive_seconds, default=60.0, metavar="S",
                      help="seconds one model request may take, connect to last byte (default 60)")
    demo.add_argument("--retries", type=count, default=3, metavar="N",
                      help="retries of one step's model request, all layers together (default 3)")

    for name in ("replay", "audit", "report"):
        _add_store_to_read(commands[name])
    for name in ("replay", "audit"):
        cmd = commands[name]
        cmd.add_argument("--session", help="one session of a database (default: every session); names a JSON Lines log")
        cmd.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                         help="report progress on stderr however short the log (--no-progress: never); "
                         "by default only on a terminal or for logs of 10,000 events or more")

    report = commands["report"]
    chosen = report.add_mutually_exclusive_group()
    chosen.add_argument("--session", metavar="ID",
                        help="the session of a database to report (needed when it holds more than one); "
                        "names a JSON Lines log")
    chosen.add_argument("--all", action="store_true",
                        help="every session of a database: each machine's transitions with counts over all of them")
    report.add_argument("-o", "--output", metavar="OUT", help="the HTML file to write (default, or -: stdout)")
    report.add_argument("--around", metavar="SEQ", type=_whole,
                        help=f"embed the {AROUND} events either side of SEQ whole, whatever their size, and open "
                             "the page at SEQ")
    report.add_argument("--payload-limit", metavar="BYTES", type=_whole, default=LIMIT,
                        help=f"embed a payload whole up to this many bytes of JSON (default {LIMIT})")
    report.add_argument("--payload-budget", metavar="BYTES", type=_whole, default=BUDGET,
                        help=f"the compressed bytes of payloads one page embeds (default {BUDGET}); the page "
                             "names the command that shows any other")
    report.add_argument("--costs", metavar="TABLE",
                        help="the deployment's token prices (a .toml or .json cost table), to show the cost of "
                        "each model call")

    export = commands["export"]
    export.add_argument(
        "--db", required=True, metavar="PATH", help="the planfold SQLite database or postgresql:// URL (read-only)"
    )
    export.add_argument("--session", required=True, metavar="ID", help="the session to export")
    export.add_argument(
        "-o", "--output", metavar="OUT", help="file to write (default, or -: stdout); never the database"
    )

    imp = commands["import"]
    imp.add_argument("file", metavar="FILE", help="a JSON Lines log (- for stdin)")
    imp.add_argument(
        "--db", required=True, metavar="PATH", help="the SQLite database (created if missing) or postgresql:// URL"
    )
    imp.add_argument("--session", required=True, metavar="ID", help="the session to create")
    imp.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                     help="report progress on stderr however short the log (--no-progress: never); "
                     "by default only on a terminal or for logs of 10,000 events or more")

    fork = commands["fork"]
    fork.add_argument("--db", required=True, metavar="PATH", help="the planfold SQLite database or postgresql:// URL")
    fork.add_argument("source", metavar="SOURCE", help="the session to fork")
    fork.add_argument("new", metavar="NEW", help="the session to create")
    where = fork.add_mutually_exclusive_group(required=True)
    where.add_argument("--at", type=int, metavar="N", help="keep the first N events (1 up to SOURCE's last seq)")
    where.add_argument("--turn", type=int, metavar="K", help="keep everything before turn K started (rewind to it)")
    for name in ("demo", "export", "import", "fork", "replay", "audit"):
        commands[name].add_argument("--json", action="store_true", help="print one JSON document instead of text")

    add_conform_arguments(commands["conform"])
    add_serve_arguments(commands["serve"])
    add_completion_arguments(commands["completion"])
    return parser, commands


#: The commands whose store may still be named by a positional FILE (deprecated: ``--db``).
POSITIONAL_STORE = ("replay", "audit", "report")


def _add_store_to_read(command: argparse.ArgumentParser) -> None:
    """``--db FILE``, and the deprecated positional ``FILE`` it replaces; both
    land in ``args.file`` (``_store_named``)."""
    command.add_argument("--db", metavar="FILE", dest="store",
                         help="a planfold SQLite database, a postgresql:// URL or a JSON Lines log (- for stdin)")
    command.add_argument("file", metavar="FILE", nargs="?",
                         help="the same as --db FILE (deprecated: give it with --db; goes in the next release)")


def _store_named(args: argparse.Namespace, parser: argparse.ArgumentParser, err: TextIO) -> None:
    """Put what ``replay``, ``audit`` or ``report`` read into ``args.file``:
    ``--db FILE``, or the positional FILE with a deprecation note on ``err``;
    a usage error (``ParserExit``) when neither or both are given."""
    option, positional = args.store, args.file
    if option is not None and positional is not None:
        parser.error(f"the store is named twice ({option!r} and {positional!r}): give it once, with --db")
    if option is None and positional is None:
        parser.error("the following arguments are required: --db")
    if option is None:
        err.write(f"planfold {args.command}: naming the store without --db is deprecated and goes in the next "
                  f"release: use planfold {args.command} --db FILE\n")
    args.file = option if option is not None else positional


# --------------------------------------------------------------------------
# main


def _dispatch(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: BinaryIO) -> int:
    if args.command == "completion":
        return run_completion(args, _parser(out, err)[0], out)
    if args.command == "demo":
        return _cmd_demo(args, out, err)
    if args.command == "conform":
        return run_conform(args, out, err)
    if args.command == "serve":
        return run_serve(args)
    if args.command in ("replay", "audit"):
        return _cmd_check(args, out, err, stdin, audit=args.command == "audit")
    if args.command == "export":
        return _cmd_export(args, out)
    if args.command == "fork":
        return _cmd_fork(args, out)
    if args.command == "report":
        return _cmd_report(args, out, stdin)
    return _cmd_import(args, out, err, stdin)


def run(argv: Sequence[str], out: TextIO, err: TextIO, stdin: BinaryIO | None) -> int:
    """Run the command line ``argv`` with the whole parser (every command's
    arguments added); returns the exit status (``EXIT_STATUS``). ``main``
    (``entry.main``) hands it every command line that names a command."""
    parser, commands = _parser(out, err)
    try:
        args = global_options_joined(parser.parse_args(argv))
        if args.command in POSITIONAL_STORE:
            _store_named(args, commands[args.command], err)
    except ParserExit as done:
        return done.status
    undo = _log_to(args, err)
    try:
        return _dispatch(args, out, err, stdin if stdin is not None else sys.stdin.buffer)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        if out is sys.stdout:  # the reader went away (``| head``): end quietly
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 1
    except ReplayError as exc:
        problem = _from_replay(exc)
        _fail(args, out, err, problem.as_json(), problem.text())
        return 1
    except CodecError as exc:
        problem = Problem(None, exc.line, exc.code, exc.message)
        _fail(args, out, err, problem.as_json(), f"bad log: {shown(exc.message)} [{exc.code}]")
        return 1
    except PlanfoldError as exc:
        _fail(args, out, err, {"code": exc.code, "detail": shown(exc.message)}, shown(exc.message))
        return 2
    except OSError as exc:
        detail = f"{shown(exc.filename)}: {exc.strerror}" if exc.filename and exc.strerror else shown(exc)
        _fail(args, out, err, {"code": "io-error", "detail": detail}, detail)
        return 2
    finally:
        undo()


#: The loggers of the HTTP client a model is asked through, shown at DEBUG (``-vv``).
HTTP_LOGGERS = ("httpx", "httpcore")


def _log_to(args: argparse.Namespace, err: TextIO) -> Callable[[], None]:
    """Send the ``planfold`` loggers to ``err`` at the level the options ask
    for: warnings by default (``serve``: INFO, its ready line), ``-v`` INFO,
    ``-vv`` DEBUG, ``--log-level`` names it. At DEBUG the HTTP client's own
    loggers (``HTTP_LOGGERS``: each request and connection) go there too.
    Returns what undoes it all."""
    asked: int | None = args.log_level
    if asked is None and args.verbosity:
        asked = logging.INFO if args.verbosity == 1 else logging.DEBUG
    serve = args.command == "serve"
    level = asked if asked is not None else logging.INFO if serve else logging.WARNING
    handler = logging.StreamHandler(err)
    layout = "planfold serve: %(message)s" if serve else "planfold %(levelname)s %(name)s: %(message)s"
    handler.setFormatter(logging.Formatter(layout))
    names = ["planfold", *(HTTP_LOGGERS if level <= logging.DEBUG else ())]
    saved = [(logging.getLogger(name), logging.getLogger(name).level) for name in names]
    for logger, _ in saved:
        logger.addHandler(handler)
        logger.setLevel(level)

    def undo() -> None:
        for logger, before in saved:
            logger.setLevel(before)
            logger.removeHandler(handler)

    return undo


def _fail(args: argparse.Namespace, out: TextIO, err: TextIO, body: dict[str, object], text: str) -> None:
    if getattr(args, "json", False):
        out.write(json.dumps({"ok": False, "error": body}) + "\n")
    else:
        err.write(f"planfold {args.command}: {text}\n")


if __name__ == "__main__":
    sys.exit(main())
