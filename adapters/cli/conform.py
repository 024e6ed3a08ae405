"""``planfold conform``: check an implementation against the conformance
vectors (``adapters.specgen.vectors``) and print what failed.

The vectors and their runner are the generator's; this module is only the
command: its arguments, and the report as text (every name and problem
through ``shown``) or as one JSON document (``--json``). Exit status 0 when
every vector passes, 1 when one fails, 2 when there is nothing to check or
the implementation's command cannot be run.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from ..specgen.vectors import SHIPPED_VECTORS, ConformCommandError, conform
from .args import positive_seconds
from .text import shown

__all__ = ["add_conform_arguments", "conform_main", "run_conform"]


def add_conform_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the arguments of ``planfold conform`` to ``parser``."""
    parser.description = "Check an implementation against the conformance vectors in DIR."
    parser.add_argument(
        "dir",
        nargs="?",
        help="a directory of <name>.jsonl logs and <name>.expected.json results"
        " (default: the vectors installed with planfold)",
    )
    parser.add_argument(
        "--command",
        dest="implementation",
        metavar="CMD",
        help="run CMD LOG per vector and read its JSON answer from stdout (default: planfold itself)",
    )
    parser.add_argument(
        "--timeout", type=positive_seconds, default=30.0, metavar="S", help="seconds per vector (default 30)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    return parser


def _plain(value: object) -> str:
    """``value`` as one line of JSON (anything JSON cannot hold as its repr)."""
    return json.dumps(value, default=repr)


def run_conform(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run ``planfold conform`` with parsed ``args``: 0 when every vector
    passes, 1 when one fails, 2 when there is nothing to check or the
    command cannot be run (said once)."""
    out = out or sys.stdout
    err = err or sys.stderr
    as_json = bool(getattr(args, "json", False))
    directory = Path(args.dir) if args.dir else SHIPPED_VECTORS
    try:
        command = shlex.split(args.implementation) if args.implementation else None
        report = conform(directory, command, timeout=args.timeout)
    except (ValueError, ConformCommandError) as exc:
        return _conform_failed(out, err, as_json, getattr(exc, "code", "usage"), str(exc))
    if not report.outcomes:
        return _conform_failed(out, err, as_json, "no-vectors", f"no vectors in {directory}")
    passed = len(report.outcomes) - len(report.failures)
    if as_json:
        failures = [
            {"name": o.name, "problem": o.problem, "expected": o.expected, "actual": o.actual}
            for o in report.failures
        ]
        body = {"ok": report.ok, "passed": passed, "total": len(report.outcomes), "failures": failures}
        out.write(json.dumps(body, default=repr) + "\n")
        return 0 if report.ok else 1
    for outcome in report.failures:
        out.write(f"FAIL {shown(outcome.name)}: {shown(outcome.problem)}\n")
        out.write(f"  expected {_plain(outcome.expected)}\n")
        out.write(f"  got      {_plain(outcome.actual)}\n")
    out.write(f"{passed}/{len(report.outcomes)} vectors passed\n")
    return 0 if report.ok else 1


def _conform_failed(out: TextIO, err: TextIO, as_json: bool, code: str, detail: str) -> int:
    if as_json:
        out.write(json.dumps({"ok": False, "error": {"code": code, "detail": detail}}) + "\n")
    else:
        err.write(f"planfold conform: {shown(detail)}\n")
    return 2


def conform_main(argv: Sequence[str]) -> int:
    """``planfold conform [DIR] [--command CMD] [--timeout S]`` (see ``run_conform``)."""
    parser = add_conform_arguments(argparse.ArgumentParser(prog="planfold conform"))
    return run_conform(parser.parse_args(list(argv)))
