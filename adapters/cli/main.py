"""``planfold``: run the demo, and replay, audit, export and import logs.

Theory of operation
-------------------
``FILE`` is either a SQLite database written by planfold (recognised by the
SQLite header, ``SQLite format 3``) or a JSON Lines export (one event record
per line). For a database ``--session ID`` picks one session; without it every
session in the file is checked. ``export`` and ``import`` move one session
between the two forms.

- ``replay FILE``: fold each log strictly, event by event, and say where it
  stands (mode, plan, goal). A progress bar goes to stderr on a terminal, or
  for long logs (``--progress`` forces it, ``--no-progress`` silences it).
- ``audit FILE``: the strict replay plus, for a database, the stored
  projection and snapshot compared with the fold.
- ``export --db PATH --session ID [-o OUT]``: the session as JSON Lines.
- ``import FILE --db PATH --session ID``: a JSON Lines log into an empty
  session (folded strictly first; nothing is written on a bad log).
- ``demo``: see ``adapters.demo``.
- ``serve --db FILE``: JSON-RPC 2.0 on stdin/stdout, see ``adapters.serve``.

Output is for people by default; ``--json`` prints one JSON document. A bad
log prints the position (seq) and the rule of its first bad event and exits
with status 1; a usage or I/O problem exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from planfold.adapters.cli.demo import run_demo
from planfold.adapters.cli.describe import summarize
from planfold.adapters.cli.progress import Progress
from planfold.adapters.codec import CodecError, decode_jsonl, encode_jsonl
from planfold.adapters.llm.openai import OpenAIClient, RetryPolicy
from planfold.adapters.serve.command import add_serve_arguments, run_serve
from planfold.adapters.specgen.vectors import add_conform_arguments, run_conform
from planfold.adapters.store.base import import_session
from planfold.adapters.store.sqlite import SqliteStore
from planfold.kernel.errors import PlanfoldError, ReplayError
from planfold.kernel.log import Event
from planfold.kernel.session import SessionState, apply_session_event

__all__ = ["main"]

SQLITE_MAGIC = b"SQLite format 3\x00"


@dataclass
class Checked:
    """The outcome of checking one log."""

    session: str
    events: int
    state: SessionState | None
    error: ReplayError | None = None
    mismatches: tuple[str, ...] = ()
    snapshot: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and not self.mismatches

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {"session": self.session, "ok": self.ok, "events": self.events}
        if self.error is not None:
            out["error"] = {"position": self.error.position, "rule": self.error.rule, "detail": self.error.detail}
        if self.state is not None and self.error is None:
            out["state"] = summarize(self.state)
        if self.snapshot is not None:
            out["projection"] = {"mismatches": list(self.mismatches), "snapshot": self.snapshot}
        return out


def is_sqlite(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC


def fold_checked(session: str, events: Sequence[Event], progress: Progress) -> Checked:
    """Fold strictly, one event at a time, stopping at the first bad one."""
    state = SessionState()
    progress.start(len(events), session)
    try:
        for index, event in enumerate(events, 1):
            state = apply_session_event(state, event)
            progress.update(index)
    except ReplayError as exc:
        return Checked(session, len(events), state, exc)
    finally:
        progress.finish()
    return Checked(session, len(events), state)


def _check(args: argparse.Namespace, audit: bool, err: TextIO) -> list[Checked]:
    progress = Progress(err, enabled=args.progress)
    path = Path(args.file)
    if not is_sqlite(path):
        return [fold_checked(args.session or path.stem, decode_jsonl(path.read_bytes()), progress)]
    results = []
    with SqliteStore(path) as store:
        if args.session and args.session not in store.session_ids():
            raise FileNotFoundError(f"no session {args.session!r} in {path}")
        for sid in [args.session] if args.session else store.session_ids():
            checked = fold_checked(sid, store.read(sid), progress)
            if audit and checked.error is None:
                report = store.audit(sid)
                checked.mismatches, checked.snapshot = report.mismatches, report.snapshot
            results.append(checked)
    return results


def _print_checked(results: list[Checked], audit: bool, out: TextIO) -> None:
    if not results:
        out.write("no sessions found\n")
    for r in results:
        if r.error is not None:
            out.write(f"{r.session}: BAD LOG at seq {r.error.position} [{r.error.rule}]: {r.error.detail}\n")
            continue
        assert r.state is not None
        facts = summarize(r.state)
        out.write(f"{r.session}: ok, {r.events} events, {facts['turns']} turns, mode {facts['agent_mode']}\n")
        out.write(f"  plan: {facts['plan']}\n  goal: {facts['goal']}\n")
        if audit and r.snapshot is not None:
            verdict = "matches the fold" if not r.mismatches else "DOES NOT match the fold"
            out.write(f"  stored projection {verdict} (snapshot {r.snapshot})\n")
            for m in r.mismatches:
                out.write(f"  ! {m}\n")


def _cmd_check(args: argparse.Namespace, out: TextIO, err: TextIO, audit: bool) -> int:
    results = _check(args, audit, err)
    if args.json:
        out.write(json.dumps({"ok": all(r.ok for r in results), "sessions": [r.as_json() for r in results]}) + "\n")
    else:
        _print_checked(results, audit, out)
    return 0 if results and all(r.ok for r in results) else 1


def _cmd_export(args: argparse.Namespace, out: TextIO) -> int:
    with SqliteStore(args.db) as store:
        data = encode_jsonl(store.read(args.session))
    if args.output:
        Path(args.output).write_bytes(data)
    else:
        out.write(data.decode())
    count = data.count(b"\n")
    if args.json and args.output:
        out.write(json.dumps({"session": args.session, "events": count, "output": args.output}) + "\n")
    elif args.output:
        out.write(f"exported {count} events of {args.session} to {args.output}\n")
    return 0


def _cmd_import(args: argparse.Namespace, out: TextIO) -> int:
    with SqliteStore(args.db) as store:
        result = import_session(store, args.session, Path(args.file).read_bytes())
    count = 0 if result is None else result.last_seq
    if args.json:
        out.write(json.dumps({"session": args.session, "events": count}) + "\n")
    else:
        out.write(f"imported {count} events into {args.session} in {args.db}\n")
    return 0


def _cmd_demo(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    model = None
    if args.base_url:
        key = os.environ.get(args.api_key_env) if args.api_key_env else None
        retry = RetryPolicy(max_retries=args.retries)
        model = OpenAIClient(args.base_url, args.model, api_key=key, timeout_s=args.timeout, retry=retry)
    # with --json the narrative goes to stderr so that stdout is one JSON document
    result = run_demo(args.db, err if args.json else out, model=model)
    if result.model_error is not None:
        where = f"server at {args.base_url} " if args.base_url else ""
        _fail(args, out, err, {"code": "model-unusable", "detail": result.model_error},
              f"planfold demo: the model {where}could not be used: {result.model_error}")
        return 2
    if args.json:
        out.write(json.dumps({"session": result.session_id, "events": result.last_seq, "ok": result.audit_ok}) + "\n")
    return 0 if result.audit_ok else 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="planfold", description="Plan/build modes, plans and goals as folds of a log."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run a whole session on the embedded defaults")
    demo.add_argument("--db", default="demo.sqlite", help="SQLite file (a new session is added each run)")
    demo.add_argument("--base-url", help="an OpenAI-compatible API root, e.g. http://127.0.0.1:8000/v1")
    demo.add_argument("--model", default="default", help="the model name to ask the server for")
    demo.add_argument("--api-key-env", help="the environment variable holding the API key")
    demo.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for each model answer")
    demo.add_argument("--retries", type=int, default=3, help="retries of a failed model request (backoff)")
    checks = (
        ("replay", "fold logs strictly and say where they stand"),
        ("audit", "replay and compare the stored projection"),
    )
    for name, text in checks:
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument("file", help="a planfold SQLite database or a JSON Lines export")
        cmd.add_argument("--session", help="one session of a database (default: all)")
        cmd.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None)
    export = sub.add_parser("export", help="write one session of a database as JSON Lines")
    export.add_argument("--db", required=True)
    export.add_argument("--session", required=True)
    export.add_argument("-o", "--output", help="file to write (default: stdout)")
    imp = sub.add_parser("import", help="load a JSON Lines log into an empty session of a database")
    imp.add_argument("file")
    imp.add_argument("--db", required=True)
    imp.add_argument("--session", required=True)
    for cmd in (demo, export, imp, *(sub.choices[n] for n in ("replay", "audit"))):
        cmd.add_argument("--json", action="store_true", help="print JSON instead of text")
    add_conform_arguments(sub.add_parser("conform", help="check an implementation against conformance vectors"))
    add_serve_arguments(sub.add_parser("serve", help="JSON-RPC 2.0 on stdin/stdout, for runtimes in other languages"))
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run ``planfold``; returns the exit status (0 ok, 1 bad log or failed check, 2 usage or I/O)."""
    out = out or sys.stdout
    err = err or sys.stderr
    args = _parser().parse_args(argv)
    try:
        if args.command == "demo":
            return _cmd_demo(args, out, err)
        if args.command == "conform":
            return run_conform(args)
        if args.command == "serve":
            return run_serve(args)
        if args.command in ("replay", "audit"):
            return _cmd_check(args, out, err, audit=args.command == "audit")
        if args.command == "export":
            return _cmd_export(args, out)
        return _cmd_import(args, out)
    except ReplayError as exc:
        _fail(args, out, err, {"position": exc.position, "rule": exc.rule, "detail": exc.detail},
              f"bad log at seq {exc.position} [{exc.rule}]: {exc.detail}")
        return 1
    except CodecError as exc:
        _fail(args, out, err, {"code": exc.code, "detail": exc.message}, f"bad log: {exc.message}")
        return 1
    except (PlanfoldError, OSError) as exc:
        code = getattr(exc, "code", "io-error")
        _fail(args, out, err, {"code": code, "detail": str(exc)}, f"planfold: {exc}")
        return 2


def _fail(args: argparse.Namespace, out: TextIO, err: TextIO, body: dict[str, object], text: str) -> None:
    if getattr(args, "json", False):
        out.write(json.dumps({"ok": False, "error": body}) + "\n")
    else:
        err.write(text + "\n")


if __name__ == "__main__":
    sys.exit(main())
