"""Peak memory of a replay: 1M events against 100k, from SQLite and from JSON Lines.

Theory of operation
-------------------
A replay must not hold the log: its memory may not grow with the number of
events, nor with the goal ids a strict fold must remember to refuse a reused
one (``planfold replay`` keeps those off its states, on disk past a bound:
``adapters.store.spill``). Each measurement is a fresh
child process (``benchmarks.memory_child``) that imports the ``planfold``
command, takes its peak resident set size so far as a baseline, runs
``planfold replay FILE`` on the stored goal log (``benchmarks.logs``, at
``mid_events`` and ``large_events``: the SQLite database, then the same log
as JSON Lines) and reports its peak again; the difference is the memory the
replay added. The child's peak comes from ``resource.getrusage`` (KiB on
Linux). Children run in interleaved repetitions; the goal is that the
median memory added at 1M events is at most twice that at 100k events, for
each source.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from benchmarks.harness import FamilyResult, Measurement, Ratio, Scale, median, ratio
from benchmarks.kernel_bench import ROOT
from benchmarks.logs import stored_log

__all__ = ["ChildFailedError", "replay_memory", "run_memory"]

MEMORY = "replay-memory"


class ChildFailedError(RuntimeError):
    """The child replay did not report a clean replay: a benchmark or replay bug."""


def replay_memory(path: Path, command: str = "replay") -> tuple[float, float]:
    """MiB added by ``planfold replay path`` (or ``command``: ``report``) in a
    fresh child, and its wall seconds."""
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.memory_child", str(path), command],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )
    if done.returncode != 0:
        raise ChildFailedError(f"replay child failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    report = json.loads(done.stdout)
    if report["status"] != 0:
        raise ChildFailedError(f"planfold {command} {path} exited {report['status']}")
    return max(report["peak_kib"] - report["baseline_kib"], 1) / 1024, float(report["seconds"])


def run_memory(scale: Scale, workdir: Path) -> FamilyResult:
    """Peak memory added by replaying the large goal log over the mid one."""
    root = workdir.parent / "logs"
    logs = {
        "mid": stored_log(root, "goal", scale.mid_events, scale.build_batch),
        "large": stored_log(root, "goal", scale.large_events, scale.build_batch),
    }
    sources: dict[str, Callable[[str], Path]] = {
        "SQLite": lambda which: logs[which].db,
        "JSON Lines": lambda which: logs[which].jsonl,
    }
    added: dict[tuple[str, str], list[float]] = {(s, w): [] for s in sources for w in logs}
    seconds: dict[tuple[str, str], list[float]] = {(s, w): [] for s in sources for w in logs}
    for _ in range(scale.memory_repeats):
        for source, path_of in sources.items():
            for which in logs:
                mib, took = replay_memory(path_of(which))
                added[(source, which)].append(mib)
                seconds[(source, which)].append(took)
    found = {
        key: Measurement(MEMORY, f"planfold replay, {logs[key[1]].count:,} events, {key[0]}: memory added", "MiB",
                         median(s), tuple(s), "peak RSS of a child after the replay minus before it")
        for key, s in added.items()
    }
    timing = [
        Measurement(MEMORY, f"planfold replay, {logs[key[1]].count:,} events, {key[0]}: wall time", "s",
                    median(s), tuple(s), "inside the child")
        for key, s in seconds.items()
    ]
    ratios: tuple[Ratio, ...] = tuple(
        ratio(MEMORY, f"replay memory added, {source}: {logs['large'].count:,} / {logs['mid'].count:,} events",
              found[(source, "large")], found[(source, "mid")], direction="at-most", bound=2.0,
              how="MiB added to a child's peak RSS by planfold replay, median of the repetitions' ratios")
        for source in sources
    )
    return FamilyResult(MEMORY, (*found.values(), *timing), ratios)
