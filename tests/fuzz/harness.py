"""The contract every fuzz target is held to, and the corpus on disk.

A target is a function of one input (bytes). For every input:

- only typed errors come out: the entry point returns, or raises a
  ``PlanfoldError`` subclass; any other exception is a finding;
- nothing is written from rejected input: a pure entry point leaves the
  values it was given exactly as they were, and a store keeps its log and
  projection unchanged after a rejected import or append;
- no input takes more than ``TIME_LIMIT`` seconds of CPU, measured around
  the entry point's call with ``time.thread_time`` (a correctness bound on
  pathological inputs, not a benchmark; CPU time, so that the verdict does
  not depend on what else the machine is doing), nor more than
  ``WALL_LIMIT`` seconds of wall time (``time.perf_counter``: an entry point
  that waits or hangs instead of computing).

``check`` enforces the first and last; each target enforces the second with
``unchanged`` (or a store comparison) around its call.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path

from hypothesis import strategies as st

from planfold.kernel.errors import PlanfoldError

__all__ = [
    "CORPUS",
    "KNOWN_BUGS",
    "OUTCOMES",
    "TIME_LIMIT",
    "WALL_LIMIT",
    "Clock",
    "FuzzFinding",
    "KnownBug",
    "NotJSON",
    "Target",
    "canonical",
    "check",
    "corpus_files",
    "decode_json",
    "decode_text",
    "expect",
    "known_bug",
    "load_outcomes",
    "outcome_digest",
    "read_corpus_file",
    "record_outcomes",
    "save_to_corpus",
    "stable_repr",
    "unchanged",
]

#: Seconds of CPU one entry point call may take.
TIME_LIMIT = 1.0
#: Seconds of wall time one entry point call may take (waiting included).
WALL_LIMIT = 10.0
CORPUS = Path(__file__).resolve().parent / "corpus"
#: The recorded outcome of every corpus input (see ``outcome_digest``).
OUTCOMES = Path(__file__).resolve().parent / "outcomes.json"


class FuzzFinding(AssertionError):
    """An input broke a target's contract."""


class Clock:
    """Times each entry-point call made for one input: ``cpu`` is the most
    CPU time (of the calling thread) and ``elapsed`` the most wall time any
    of them took."""

    def __init__(self) -> None:
        self.cpu = 0.0
        self.elapsed = 0.0

    @contextmanager
    def timed(self) -> Iterator[None]:
        start, cpu = time.perf_counter(), time.thread_time()
        try:
            yield
        finally:
            self.cpu = max(self.cpu, time.thread_time() - cpu)
            self.elapsed = max(self.elapsed, time.perf_counter() - start)


@dataclass(frozen=True)
class Target:
    """One fuzz target: ``run(data, clock)`` feeds ``data`` to an entry point
    (timing only the entry point's calls with ``clock``), checks that nothing
    was written, and returns what the entry point returned (``stable_repr``
    text), or lets a ``PlanfoldError`` out on rejection. ``inputs`` generates
    hostile inputs."""

    name: str
    entry_point: str
    run: Callable[[bytes, Clock], str]
    inputs: st.SearchStrategy[bytes]


def expect(condition: bool, what: str) -> None:
    """Raise ``FuzzFinding`` saying ``what`` went wrong unless ``condition``."""
    if not condition:
        raise FuzzFinding(what)


@dataclass(frozen=True)
class KnownBug:
    """A reported, not yet fixed bug: ``error`` coming out of ``function``.

    The fuzz tests and the fuzz pass look past it so that they keep finding
    other bugs; its ``open-*`` corpus files and its regression test still
    fail on it (as strict expected failures) until it is fixed, and then
    this entry goes."""

    name: str
    error: type[Exception]
    function: str
    file: str


#: None open now. (Found and fixed so far: a non-string event kind hashed by
#: the envelope check and the fast fold, a ToolSpec field of an unhashable
#: type, a capsule goal holding NaN; their inputs are ``crash-*`` files.)
KNOWN_BUGS: tuple[KnownBug, ...] = ()


def known_bug(exc: BaseException) -> KnownBug | None:
    """The ``KNOWN_BUGS`` entry ``exc`` is an instance of, if any: the
    innermost frame in the project's own code must be the bug's function in
    the bug's file."""
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if "/kernel/" in frame.filename or "/adapters/" in frame.filename
    ]
    if not frames:
        return None
    innermost = frames[-1]
    for bug in KNOWN_BUGS:
        if isinstance(exc, bug.error) and innermost.name == bug.function and innermost.filename.endswith(bug.file):
            return bug
    return None


def check(target: Target, data: bytes, *, look_past_known: bool = True) -> str:
    """Run ``target`` on ``data`` and return its outcome (``outcome_of``);
    raise ``FuzzFinding`` if anything but a ``PlanfoldError`` comes out (a
    ``KNOWN_BUGS`` error only when ``look_past_known`` is false) or the entry
    point takes over ``TIME_LIMIT`` of CPU or ``WALL_LIMIT`` of wall time."""
    clock = Clock()
    try:
        outcome = "returned " + target.run(data, clock)
    except NotJSON:
        outcome = "not JSON: the harness's reader refused it"
    except PlanfoldError as exc:
        outcome = "refused " + stable_repr(exc)
    except FuzzFinding:
        raise
    except Exception as exc:
        bug = known_bug(exc) if look_past_known else None
        if bug is None:
            raise FuzzFinding(
                f"{target.entry_point} let an untyped {type(exc).__name__} out: {exc!s:.300}"
            ) from exc
        outcome = f"known bug: {bug.name}"
    if clock.cpu > TIME_LIMIT:
        raise FuzzFinding(f"{target.entry_point} took {clock.cpu:.2f}s of CPU on one input (limit {TIME_LIMIT}s)")
    if clock.elapsed > WALL_LIMIT:
        raise FuzzFinding(
            f"{target.entry_point} took {clock.elapsed:.2f}s of wall time on one input (limit {WALL_LIMIT}s)"
        )
    return outcome


def outcome_digest(outcome: str) -> str:
    """What ``OUTCOMES`` keeps of an outcome: a short SHA-256."""
    return hashlib.sha256(outcome.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def load_outcomes() -> dict[str, str]:
    """The recorded outcome digests, by ``<target>/<file name>``."""
    if not OUTCOMES.exists():
        return {}
    recorded: dict[str, str] = json.loads(OUTCOMES.read_text(encoding="utf-8"))
    return recorded


def record_outcomes(digests: Mapping[str, str]) -> None:
    """Write ``OUTCOMES`` (sorted, one entry a line, so diffs stay small)."""
    OUTCOMES.write_text(json.dumps(dict(sorted(digests.items())), indent=0) + "\n", encoding="utf-8")


def stable_repr(value: object) -> str:
    """A ``repr`` that is the same in every process: sets are sorted (their
    order follows string hashing, which changes per process), dataclasses
    and ``PlanfoldError``s show every field and attribute."""
    if isinstance(value, PlanfoldError):
        attrs = {k: v for k, v in sorted(vars(value).items()) if k != "message"}
        return f"{type(value).__name__}({value.message!r}, code={value.code!r}, {stable_repr(attrs)})"
    if is_dataclass(value) and not isinstance(value, type):
        inner = ", ".join(f"{f.name}={stable_repr(getattr(value, f.name))}" for f in fields(value))
        return f"{type(value).__name__}({inner})"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{stable_repr(k)}: {stable_repr(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(stable_repr(item) for item in value) + "]"
    if isinstance(value, AbstractSet):
        return "{" + ", ".join(sorted(stable_repr(item) for item in value)) + "}"
    return repr(value)


def canonical(value: object) -> str:
    """A text that changes whenever ``value`` (a JSON-shaped value, NaN and
    all) is changed in place."""
    return repr(value)


@contextmanager
def unchanged(*values: object) -> Iterator[None]:
    """Fail with ``FuzzFinding`` if the block changes any of ``values`` in
    place, whether it returns or raises."""
    before = [canonical(value) for value in values]
    try:
        yield
    finally:
        if [canonical(value) for value in values] != before:
            raise FuzzFinding("the entry point changed the input it was given")


class NotJSON(Exception):
    """The harness's own reader could not decode the bytes: the input never
    reaches the entry point (it is not a finding)."""


def decode_json(data: bytes) -> object:
    """Decode ``data`` as leniently as any JSON reader would: ``NaN`` and
    ``Infinity``, escaped lone surrogates and huge integers get through;
    the last of duplicate keys wins. Raises ``NotJSON`` otherwise."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise NotJSON(str(exc)) from exc


def decode_text(data: bytes) -> str:
    """Bytes to text the way a terminal reader would keep them: invalid
    UTF-8 survives as lone surrogates (``surrogateescape``)."""
    return data.decode("utf-8", "surrogateescape")


def corpus_files(target: str) -> list[Path]:
    """The corpus files kept for ``target``, in a stable order."""
    folder = CORPUS / target
    return sorted(path for path in folder.iterdir() if path.is_file()) if folder.is_dir() else []


def read_corpus_file(path: Path) -> bytes:
    """The input a corpus file holds (``.gz`` files are gzip-compressed)."""
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


#: Inputs above this size are kept gzip-compressed.
COMPRESS_ABOVE = 16 * 1024


def save_to_corpus(target: str, data: bytes, prefix: str = "crash") -> Path:
    """Keep ``data`` as a corpus file named after its content (compressed
    when large); return its path."""
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    name = f"{prefix}-{hashlib.sha256(data).hexdigest()[:16]}"
    if len(data) > COMPRESS_ABOVE:
        path = folder / f"{name}.gz"
        path.write_bytes(gzip.compress(data, mtime=0))
    else:
        path = folder / name
        path.write_bytes(data)
    return path
