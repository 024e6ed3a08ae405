"""``planfold report`` against ``planfold replay`` of the same log: time,
peak memory, and the page's size against its stated bound.

Theory of operation
-------------------
A report folds its log strictly, as a replay does, and also keeps what the
page shows: counts, bounded lists, the transitions each machine took, and
every event as a compact compressed index with payloads up to a budget
(``adapters.report.events``). What that costs is measured against the
replay of the same log, in the same run: the coding-agent session log
(``benchmarks.logs``, shape ``session``: turns, tool calls, plan-mode flips,
goals) stored in SQLite at about 10k events (``mid_events`` / 10), at
``mid_events`` (100k) and at ``large_events`` (1M). Each measurement is a
fresh child process (``benchmarks.memory_child``) that runs ``planfold
replay FILE`` or ``planfold report FILE -o PAGE`` and reports the wall
seconds the command took, the memory it added to the child's peak resident
size, and the page's size. Children run in interleaved repetitions (replay,
report, replay, report …; the 1M log once each), and each ratio is the
median of the repetitions' own quotients (report over replay), with their
range as its spread.

Two goals are held: the memory a report adds at 100k events is at most
twice what it adds at 10k (it folds incrementally and keeps bounded lists
and compressed chunks, so it does not grow with the log as the events do),
and at every size the page is within the bound the docs state
(``events.page_bound``: 2 MiB for the summary, the payloads' budget of
4 MiB plus one chunk of 1 MiB, and 12 bytes per event for the index).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks.harness import FamilyResult, Measurement, Ratio, Scale, median, ratio
from benchmarks.kernel_bench import ROOT
from benchmarks.logs import stored_log
from benchmarks.memory_bench import ChildFailedError
from planfold.adapters.report.events import page_bound

__all__ = ["run_report"]

REPORT = "report-generation"
MIB = 1024 * 1024


def _child(path: Path, command: str) -> tuple[float, float, int]:
    """MiB added, wall seconds and page bytes of ``planfold command path`` in a fresh child."""
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.memory_child", str(path), command],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )
    if done.returncode != 0:
        raise ChildFailedError(f"{command} child failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    report = json.loads(done.stdout)
    if report["status"] != 0:
        raise ChildFailedError(f"planfold {command} {path} exited {report['status']}")
    added = max(report["peak_kib"] - report["baseline_kib"], 1) / 1024
    return added, float(report["seconds"]), int(report.get("page_bytes", 0))


def run_report(scale: Scale, workdir: Path) -> FamilyResult:
    """Time, memory and page size of ``planfold report`` over ``planfold replay`` at three sizes."""
    root = workdir.parent / "logs"
    sizes = {
        "small": max(scale.small_events, scale.mid_events // 10),
        "mid": scale.mid_events,
        "large": scale.large_events,
    }
    logs = {which: stored_log(root, "session", count, scale.build_batch) for which, count in sizes.items()}
    commands = ("replay", "report")
    mib: dict[tuple[str, str], list[float]] = {(c, w): [] for c in commands for w in logs}
    seconds: dict[tuple[str, str], list[float]] = {(c, w): [] for c in commands for w in logs}
    pages: dict[str, list[float]] = {w: [] for w in logs}
    for repetition in range(scale.memory_repeats):
        for which, log in logs.items():
            if which == "large" and repetition:
                continue  # the 1M log once: minutes each
            for command in commands:
                added, took, page = _child(log.db, command)
                mib[(command, which)].append(added)
                seconds[(command, which)].append(took)
                if command == "report":
                    pages[which].append(page / MIB)

    def measured(key: tuple[str, str], unit: str, samples: list[float]) -> Measurement:
        command, which = key
        what = "memory added" if unit == "MiB" else "wall time"
        return Measurement(REPORT, f"planfold {command}, {logs[which].count:,} events: {what}", unit,
                           median(samples), tuple(samples), "in a fresh child, SQLite, session-shaped log")

    memory = {key: measured(key, "MiB", s) for key, s in mib.items()}
    timing = {key: measured(key, "s", s) for key, s in seconds.items()}
    page_size = {
        which: Measurement(REPORT, f"planfold report, {logs[which].count:,} events: page size", "MiB",
                           median(samples), tuple(samples), "the HTML file written")
        for which, samples in pages.items()
    }
    bounds = {
        which: Measurement(REPORT, f"page bound, {logs[which].count:,} events", "MiB",
                           page_bound(logs[which].count) / MIB, (page_bound(logs[which].count) / MIB,),
                           "events.page_bound, as docs/report-and-fork.md states it")
        for which in logs
    }
    ratios: list[Ratio] = []
    for which, log in logs.items():
        ratios.append(ratio(REPORT, f"report / replay time, {log.count:,} events", timing[("report", which)],
                            timing[("replay", which)], direction="at-most", bound=None,
                            how="wall seconds of planfold report over planfold replay of the same log, per repetition"))
        ratios.append(ratio(REPORT, f"report / replay memory added, {log.count:,} events",
                            memory[("report", which)], memory[("replay", which)], direction="at-most", bound=None,
                            how="MiB a child's peak RSS grew by, report over replay of the same log"))
        ratios.append(ratio(REPORT, f"page size / its bound, {log.count:,} events", page_size[which],
                            bounds[which], direction="at-most", bound=1.0,
                            how="bytes of the page over events.page_bound for the log's events"))
    ratios.append(ratio(REPORT, f"report memory added: {logs['mid'].count:,} / {logs['small'].count:,} events",
                        memory[("report", "mid")], memory[("report", "small")], direction="at-most", bound=2.0,
                        how="MiB added by planfold report at the larger log over the smaller, per repetition"))
    notes = tuple(f"log: {log.describe()}" for log in logs.values())
    measurements = (*memory.values(), *timing.values(), *page_size.values(), *bounds.values())
    return FamilyResult(REPORT, measurements, tuple(ratios), notes)
