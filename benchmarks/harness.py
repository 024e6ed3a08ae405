"""What every benchmark family shares: the scale, timing, results and goals.

Theory of operation
-------------------
Absolute times on a shared two-core machine are noise, so every claim the
benchmark makes is a *ratio* between two things measured in the same run,
interleaved where that is possible (system A, system B, system A, ...). A
family module exposes ``run(scale, workdir)`` and returns a ``FamilyResult``:
its ``Measurement`` rows (what was timed, in which unit, every sample, their
median as the value) and its ``Ratio`` rows (a quotient of two measurements,
with the goal it is held to and whether the goal was met). A ratio of two
measurements taken in interleaved repetitions is the median of the
repetitions' own quotients, and their range is printed as its spread.

``Scale`` derives every workload size from one factor (``BENCH_SCALE``,
default 1.0 = the sizes the goals are stated for: histories of 1k, 100k and
1M events); a tiny factor runs the same code paths in seconds, which is what
the smoke test does, and a quick factor (0.1) is for a first look only.

A ratio whose baseline could not be measured (eventsourcing or LangGraph not
installed) has ``value`` ``None`` and ``met`` ``None``, and says why in its
note. Nothing in here decides what a miss means: ``benchmarks.bench`` exits
non-zero when a goal is missed or not measured.
"""

from __future__ import annotations

import math
import resource
import statistics
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeVar

__all__ = [
    "Direction",
    "FamilyResult",
    "Measurement",
    "Ratio",
    "Scale",
    "batched",
    "difference",
    "median",
    "ratio",
    "stopwatch",
    "throughput",
    "user_cpu",
]

T = TypeVar("T")
E = TypeVar("E")
Direction = Literal["at-least", "at-most"]

#: Full-size workloads (BENCH_SCALE=1): the sizes the goals are stated for.
#: ``small``/``mid``/``large`` are the three history lengths every growth
#: ratio compares (1k, 100k, 1M events).
_FULL = {
    "append_events": 1_500,
    "append_rounds": 10,
    "growth_appends": 400,
    "growth_repeats": 3,
    "group_events": 50_000,
    "group_batch": 1_000,
    "small_events": 1_000,
    "mid_events": 100_000,
    "large_events": 1_000_000,
    "build_batch": 20_000,
    "replay_repeats": 3,
    "open_repeats": 25,
    "memory_repeats": 3,
    "fold_events": 100_000,
    "fold_repeats": 3,
    "import_runs": 15,
    "serve_steps": 400,
    "concurrent_appends": 60,
    "concurrent_rounds": 5,
}
#: The smallest size each workload is cut to, so a tiny scale still runs every path.
_FLOOR = {
    "append_events": 6,
    "append_rounds": 2,
    # user CPU is counted in clock ticks: enough appends that a sample is never
    # 0 (60 were not, once an append took under 100 us of user CPU)
    "growth_appends": 400,
    "growth_repeats": 1,
    "group_events": 40,
    "group_batch": 10,
    "small_events": 20,
    "mid_events": 60,
    "large_events": 180,
    "build_batch": 25,
    "replay_repeats": 1,
    "open_repeats": 3,
    "memory_repeats": 1,
    "fold_events": 60,
    "fold_repeats": 1,
    "import_runs": 2,
    "serve_steps": 20,
    "concurrent_appends": 5,
    "concurrent_rounds": 2,
}


@dataclass(frozen=True, slots=True)
class Scale:
    """Every workload size of one run (see ``Scale.of``)."""

    factor: float
    append_events: int
    append_rounds: int
    group_events: int
    group_batch: int
    growth_appends: int
    growth_repeats: int
    small_events: int
    mid_events: int
    large_events: int
    build_batch: int
    replay_repeats: int
    open_repeats: int
    memory_repeats: int
    fold_events: int
    fold_repeats: int
    import_runs: int
    serve_steps: int
    concurrent_appends: int
    concurrent_rounds: int

    @classmethod
    def of(cls, factor: float) -> Scale:
        """Sizes for ``factor`` (1.0 = full size). Event counts scale linearly;
        repeat counts shrink with the square root so a small run still has
        several samples. ``ValueError`` for a factor that is not a positive
        finite number."""
        if not math.isfinite(factor) or factor <= 0:
            raise ValueError(f"BENCH_SCALE must be a positive number, got {factor!r}")
        sizes: dict[str, int] = {}
        for name, full in _FULL.items():
            shrink = math.sqrt(factor) if name.endswith(("_repeats", "_rounds", "_runs")) else factor
            sizes[name] = max(_FLOOR[name], round(full * shrink))
        sizes["mid_events"] = max(sizes["mid_events"], sizes["small_events"] * 3)
        sizes["large_events"] = max(sizes["large_events"], sizes["mid_events"] * 3)
        return cls(factor=factor, **sizes)


@dataclass(frozen=True, slots=True)
class Measurement:
    """One thing timed: ``value`` is the median of ``samples`` in ``unit``
    (``events/s`` is higher-is-better, ``ms`` and ``s`` lower-is-better)."""

    family: str
    subject: str
    unit: str
    value: float
    samples: tuple[float, ...]
    detail: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "family": self.family,
            "subject": self.subject,
            "unit": self.unit,
            "value": self.value,
            "samples": list(self.samples),
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True)
class Ratio:
    """A quotient of two measurements of the same run, held to a goal.

    ``value`` is ``None`` (and ``met`` ``None``) when one side is missing.
    ``bound`` is ``None`` for an informational ratio with no goal.
    ``samples`` are the quotient of each repetition (the sides' samples
    taken pairwise, in the order they were interleaved), whose range is the
    ``spread`` printed beside the value.
    """

    family: str
    name: str
    value: float | None
    direction: Direction
    bound: float | None
    how: str
    note: str = ""
    samples: tuple[float, ...] = ()

    @property
    def met(self) -> bool | None:
        if self.value is None or self.bound is None:
            return None
        return self.value >= self.bound if self.direction == "at-least" else self.value <= self.bound

    @property
    def goal(self) -> str:
        if self.bound is None:
            return "-"
        return f"{'>=' if self.direction == 'at-least' else '<='} {self.bound:g}"

    @property
    def spread(self) -> tuple[float, float] | None:
        """The lowest and highest quotient of one repetition, if there were any."""
        return (min(self.samples), max(self.samples)) if self.samples else None

    def to_json(self) -> dict[str, object]:
        return {
            "family": self.family,
            "name": self.name,
            "value": self.value,
            "goal": self.goal,
            "met": self.met,
            "how": self.how,
            "note": self.note,
            "samples": list(self.samples),
            "spread": None if self.spread is None else list(self.spread),
        }


@dataclass(frozen=True, slots=True)
class FamilyResult:
    """What one family measured, the ratios it derived, and notes for people."""

    family: str
    measurements: tuple[Measurement, ...]
    ratios: tuple[Ratio, ...]
    notes: tuple[str, ...] = field(default=())

    def measurement(self, subject: str) -> Measurement | None:
        """The measurement of ``subject`` in this family, if it was taken."""
        return next((m for m in self.measurements if m.subject == subject), None)


# --------------------------------------------------------------------------
# Timing


def stopwatch(fn: Callable[[], T]) -> tuple[float, T]:
    """Seconds ``fn`` took (wall clock, ``perf_counter``) and its result."""
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def user_cpu() -> float:
    """User CPU seconds of this process so far (``resource.getrusage``)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_utime


def taking_turns(
    systems: Mapping[str, Callable[[E], object]],
    events: Sequence[E],
    rounds: int,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, list[float]]:
    """Each system's throughput (events per second of ``clock``, wall time by
    default) in each of ``rounds`` rounds of ``events``. Within a round the
    systems take turns event by event, the order rotating from one event to
    the next, so every system meets the machine's load (a slow ``fsync``, a
    busy core) as the others do; a system's throughput in a round is the
    round's events over the time its own calls took."""
    per_round = max(1, len(events) // rounds)
    names = list(systems)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for index in range(rounds):
        chunk = events[index * per_round : (index + 1) * per_round]
        if not chunk:
            break
        spent = dict.fromkeys(names, 0.0)
        for position, event in enumerate(chunk):
            turn = position % len(names)
            for name in names[turn:] + names[:turn]:
                call = systems[name]
                start = clock()
                call(event)
                spent[name] += clock() - start
        for name in names:
            samples[name].append(throughput(len(chunk), spent[name]))
    return samples


def median(samples: Sequence[float]) -> float:
    """The median of a non-empty sample list (``ValueError`` when empty)."""
    if not samples:
        raise ValueError("no samples")
    return float(statistics.median(samples))


def throughput(count: int, seconds: float) -> float:
    """Events per second; a zero duration counts as the clock's resolution."""
    return count / max(seconds, 1e-9)


def ratio(
    family: str,
    name: str,
    numerator: Measurement | None,
    denominator: Measurement | None,
    *,
    direction: Direction,
    bound: float | None,
    how: str,
    missing: str = "",
) -> Ratio:
    """``numerator / denominator`` as a ``Ratio``; ``None`` (with ``missing``
    as the note) when either side was not measured. When both sides have as
    many samples (repetitions interleaved one against the other), the value
    is the median of the pairwise quotients and they are its samples;
    otherwise it is the quotient of the two medians."""
    if numerator is None or denominator is None or denominator.value <= 0:
        return Ratio(family, name, None, direction, bound, how, missing or "a side was not measured")
    pairs = tuple(
        a / b for a, b in zip(numerator.samples, denominator.samples, strict=False) if b > 0
    )
    if pairs and len(numerator.samples) == len(denominator.samples) == len(pairs):
        return Ratio(family, name, median(pairs), direction, bound, how, samples=pairs)
    return Ratio(family, name, numerator.value / denominator.value, direction, bound, how)


def difference(
    family: str, name: str, minuend: Measurement, subtrahend: Measurement, *, bound: float, how: str
) -> Ratio:
    """``minuend - subtrahend`` (same unit) held to at most ``bound``: the
    median of the pairwise differences, with them as its samples."""
    pairs = tuple(a - b for a, b in zip(minuend.samples, subtrahend.samples, strict=False))
    value = median(pairs) if pairs else minuend.value - subtrahend.value
    return Ratio(family, name, value, "at-most", bound, how, samples=pairs)


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """``items`` in lists of ``size`` (the last one may be shorter)."""
    if size < 1:
        raise ValueError("batch size must be positive")
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
