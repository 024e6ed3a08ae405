"""Conformance vectors: session logs with their expected results, and the
runner that checks an implementation against them.

Theory of operation
-------------------
``specs/vectors/`` (the published copy) and ``conformance/`` beside this
module (the copy the wheel ships, ``SHIPPED_VECTORS``, which ``planfold
conform`` checks when it is given no folder) hold one JSON Lines log per case (``<name>.jsonl``, one
event ``{seq, kind, at, payload}`` per line) and its expected result
(``<name>.expected.json``). The expected result of a valid log is the final
state as a small canonical summary (``summarize``); that of an invalid log is
the seq of the first bad event and the rule it breaks::

    {"ok": true, "state": {"last_seq": …, "plan_mode": …, "agent_mode": …,
                           "plan": null | {"id", "status", "revision"},
                           "goal": null | {"id", "revision", "phase",
                                           "rounds_started", "max_rounds"}}}
    {"ok": false, "position": 4, "rule": "stale-revision"}

The sidecar also carries a ``description`` for people; it is not compared.

A log is read by ``read_records``, which reads each line with
``codec.read_record``, the one reader of JSON Lines logs that ``planfold
replay``, ``planfold import`` and ``conform`` share, so they agree on every
log. An empty text is a log with no events; every line is one record (a
final newline ends the last line, so a blank line is not a record): a JSON
object with exactly ``seq``, ``kind``, ``at`` and ``payload`` and a string
``kind``, JSON a store can keep (no lone surrogate, no number out of range).
The values are taken as they come (no other type checks: the fold judges
them and names the seq and rule of the first bad event). A line that is not a
record is ``MalformedRecordError`` (rule ``malformed-record``) with its line
number and, when the line is an object with an integer ``seq``, that seq.

``write_vectors`` builds the cases of ``adapters.specgen.vector_cases``, folds each
with ``kernel.session.fold_session``, refuses to write a case whose declared
rule or position the fold does not confirm, and writes the files with a
stable encoding. ``conform(dir, implementation)`` reads them back and asks an
implementation for its answer to every log: planfold itself by default, any
Python callable, or a command run once per log with the log's path as its
last argument, which must print its answer (the same JSON shape) on stdout
and exit 0. A command that cannot be started at all stops the run with one
``ConformCommandError``. The ``planfold conform`` command (text, or one JSON
document with ``--json``) is ``adapters.cli.conform``: a generator imports no
command-line module.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ...kernel.errors import ReplayError
from ...kernel.log import Event
from ...kernel.payload import JSON
from ...kernel.session import SessionState, fold_session
from ..codec import RecordError, read_record
from ..errors import AdapterError
from .vector_cases import Case, cases

__all__ = [
    "SHIPPED_VECTORS",
    "VECTOR_DIR",
    "ConformCommandError",
    "ConformReport",
    "Implementation",
    "MalformedRecordError",
    "Outcome",
    "VectorFormatError",
    "answer",
    "conform",
    "expected_result",
    "planfold_answer",
    "read_log",
    "read_record_lines",
    "read_records",
    "summarize",
    "write_vectors",
]

VECTOR_DIR = "vectors"
#: The vectors as installed with planfold: ``make diagrams`` writes them here
#: as well as into ``specs/vectors``, and a test holds the two copies equal.
SHIPPED_VECTORS = Path(__file__).with_name("conformance")
_EXPECTED = ".expected.json"

#: What an implementation is: planfold itself (``None``), a callable from a
#: log's path to its answer, or a command line (the path is appended).
Implementation = Callable[[Path], object] | Sequence[str] | None


class VectorFormatError(AdapterError):
    """A vector file is not a log of event lines (a broken or foreign file)."""

    code = "vector-format"


class MalformedRecordError(VectorFormatError):
    """A line of a JSON Lines log is not an event record: ``line`` is its
    1-based number, ``seq`` the seq it names when that much is readable."""

    code = "malformed-record"

    def __init__(self, line: int, detail: str, seq: int | None = None) -> None:
        super().__init__(f"line {line}: {detail}")
        self.line = line
        self.seq = seq
        self.detail = detail


class ConformCommandError(AdapterError):
    """The implementation's command could not be started at all."""

    code = "conform-command-failed"


def summarize(state: SessionState) -> dict[str, JSON]:
    """The canonical summary of a folded session."""
    plan = state.plan.current
    goal = state.goal.current
    return {
        "last_seq": state.last_seq,
        "plan_mode": state.plan_mode,
        "agent_mode": state.agent_mode,
        "plan": None if plan is None else {"id": plan.id, "status": plan.status, "revision": plan.revision},
        "goal": None
        if goal is None
        else {
            "id": goal.id,
            "revision": goal.revision,
            "phase": goal.phase,
            "rounds_started": goal.rounds_started,
            "max_rounds": goal.max_rounds,
        },
    }


def answer(events: Sequence[Event]) -> dict[str, JSON]:
    """planfold's answer for a log: its summary, or where and why it is invalid."""
    try:
        state = fold_session(events)
    except ReplayError as exc:
        return {"ok": False, "position": exc.position, "rule": exc.rule}
    return {"ok": True, "state": summarize(state)}


def _record(number: int, raw: bytes) -> Event:
    """Line ``number`` of a log, read by the one reader of JSON Lines logs
    (``codec.read_record``)."""
    try:
        return read_record(raw, number)
    except RecordError as exc:
        raise MalformedRecordError(number, exc.detail, exc.seq) from exc


def read_records(data: bytes) -> Iterator[tuple[int, Event]]:
    """The records of a JSON Lines log as ``(line number, event)``, one at a
    time and exactly as written (see the module docstring). Raises
    ``MalformedRecordError`` at the first line that is not a record."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return read_record_lines(lines)


def read_record_lines(lines: Iterable[bytes]) -> Iterator[tuple[int, Event]]:
    """``read_records`` over the lines of a log (each without its line end)
    as they are read, so a reader of a stream holds one line at a time."""
    for number, raw in enumerate(lines, start=1):
        yield number, _record(number, raw)


def read_log(path: Path) -> list[Event]:
    """The events of the JSON Lines log at ``path`` (``read_records``).
    Raises ``VectorFormatError`` (``MalformedRecordError`` for a line that is
    not a record) or ``OSError``."""
    try:
        return [event for _, event in read_records(path.read_bytes())]
    except MalformedRecordError as exc:
        raise MalformedRecordError(exc.line, f"{path.name}: {exc.detail}", exc.seq) from exc


def planfold_answer(path: Path) -> dict[str, JSON]:
    """planfold's answer for the log at ``path``."""
    return answer(read_log(path))


# --------------------------------------------------------------------------
# Writing


def _case_events(case: Case) -> list[Event]:
    return [Event(line["seq"], str(line["kind"]), line["at"], line["payload"]) for line in case.lines]  # type: ignore[arg-type]


def expected_result(case: Case) -> dict[str, JSON]:
    """The expected result of ``case``, from the fold. Raises ``ValueError``
    when the fold does not confirm the rule and position the case declares."""
    result = answer(_case_events(case))
    declared: dict[str, JSON] = {"ok": True} if case.rule is None else {
        "ok": False, "position": case.position, "rule": case.rule
    }
    if {key: result[key] for key in declared} != declared:
        raise ValueError(f"vector {case.name}: declared {declared}, but the fold answers {result}")
    return result


def _json(value: JSON, *, indent: int | None = None) -> str:
    return json.dumps(value, ensure_ascii=True, indent=indent, separators=None if indent else (",", ":"))


def write_vectors(directory: Path) -> list[Path]:
    """Write every case into ``directory`` (and remove stale vector files).
    Returns the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for case in cases():
        log = directory / f"{case.name}.jsonl"
        log.write_text("".join(_json(dict(line)) + "\n" for line in case.lines), encoding="utf-8")
        sidecar = directory / f"{case.name}{_EXPECTED}"
        body = {"description": case.description, **expected_result(case)}
        sidecar.write_text(_json(body, indent=2) + "\n", encoding="utf-8")
        written += [log, sidecar]
    keep = set(written)
    for pattern in ("*.jsonl", f"*{_EXPECTED}"):
        for path in directory.glob(pattern):
            if path not in keep:
                path.unlink()
    return written


# --------------------------------------------------------------------------
# Conformance


@dataclass(frozen=True, slots=True)
class Outcome:
    """One vector checked: ``problem`` is empty when the answer matched."""

    name: str
    expected: Mapping[str, object]
    actual: object
    problem: str = ""

    @property
    def passed(self) -> bool:
        return not self.problem


@dataclass(frozen=True, slots=True)
class ConformReport:
    """Every vector's outcome, by name."""

    outcomes: tuple[Outcome, ...]

    @property
    def failures(self) -> tuple[Outcome, ...]:
        return tuple(outcome for outcome in self.outcomes if not outcome.passed)

    @property
    def ok(self) -> bool:
        return bool(self.outcomes) and not self.failures


def _compared(result: Mapping[str, object]) -> dict[str, object]:
    keys = ("ok", "state") if result.get("ok") is True else ("ok", "position", "rule")
    return {key: result.get(key) for key in keys}


def _run(command: Sequence[str], path: Path, timeout: float) -> object:
    try:
        done = subprocess.run(
            [*command, str(path)], capture_output=True, text=True, errors="replace", timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise VectorFormatError(f"{shlex.join(command)} took longer than {timeout:g}s") from exc
    except (OSError, ValueError) as exc:
        raise ConformCommandError(f"could not run {shlex.join(command)}: {exc}") from exc
    if done.returncode != 0:
        raise VectorFormatError(f"exit status {done.returncode}: {done.stderr.strip()[:200]}")
    try:
        return json.loads(done.stdout)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise VectorFormatError(f"stdout is not one JSON value ({exc})") from exc


def _expected(sidecar: Path) -> dict[str, object]:
    """The compared part of a sidecar; ``VectorFormatError`` when it is not
    a JSON object."""
    try:
        body = json.loads(sidecar.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise VectorFormatError(f"{sidecar.name} is not a JSON document ({exc})") from exc
    if not isinstance(body, dict):
        raise VectorFormatError(f"{sidecar.name} is not a JSON object")
    return _compared(body)


def conform(directory: Path, implementation: Implementation = None, *, timeout: float = 30.0) -> ConformReport:
    """Check ``implementation`` against every vector in ``directory``.
    Raises ``ConformCommandError`` when a command cannot be started."""
    outcomes = []
    for sidecar in sorted(directory.glob(f"*{_EXPECTED}")):
        name = sidecar.name.removesuffix(_EXPECTED)
        log = directory / f"{name}.jsonl"
        try:
            expected = _expected(sidecar)
        except VectorFormatError as exc:
            outcomes.append(Outcome(name, {}, None, str(exc)))
            continue
        try:
            if implementation is None:
                actual: object = planfold_answer(log)
            elif callable(implementation):
                actual = implementation(log)
            else:
                actual = _run(implementation, log, timeout)
        except (OSError, VectorFormatError) as exc:
            outcomes.append(Outcome(name, expected, None, str(exc)))
            continue
        if not isinstance(actual, Mapping) or _compared(actual) != expected:
            outcomes.append(Outcome(name, expected, actual, "the answer differs from the expected result"))
        else:
            outcomes.append(Outcome(name, expected, actual))
    return ConformReport(tuple(outcomes))


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m planfold.adapters.specgen.vectors answer LOG`` (planfold's
    answer for one log, the protocol's reply) or ``write DIR``; checking an
    implementation is ``planfold conform``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["answer"] and len(args) == 2:
        print(_json(planfold_answer(Path(args[1]))))
        return 0
    if args[:1] == ["write"] and len(args) == 2:
        write_vectors(Path(args[1]))
        return 0
    usage = "usage: python -m planfold.adapters.specgen.vectors answer LOG | write DIR"
    print(usage, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
