"""``planfold report`` against ``planfold replay`` of the same log: time and peak memory.

Theory of operation
-------------------
A report folds its log strictly, as a replay does, and also keeps what the
page shows: counts, bounded lists, the transitions each machine took. What
that costs is measured against the replay of the same log, in the same
run: the coding-agent session log (``benchmarks.logs``, shape ``session``:
turns, tool calls, plan-mode flips, goals) stored in SQLite at about 10k
events (``mid_events`` / 10) and at ``mid_events`` (100k). Each measurement
is a fresh child process (``benchmarks.memory_child``) that runs ``planfold
replay FILE`` or ``planfold report FILE -o PAGE`` and reports the wall
seconds the command took and the memory it added to the child's peak
resident size. Children run in interleaved repetitions (replay, report,
replay, report …), and each ratio is the median of the repetitions' own
quotients (report over replay), with their range as its spread.

The ratios are shown, not held to a goal, except one that the report's
design promises: the memory a report adds at 100k events is at most twice
what it adds at 10k (it folds incrementally and lists a bounded number of
items, so it does not grow with the log).
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.harness import FamilyResult, Measurement, Ratio, Scale, median, ratio
from benchmarks.logs import stored_log
from benchmarks.memory_bench import replay_memory

__all__ = ["run_report"]

REPORT = "report-generation"


def run_report(scale: Scale, workdir: Path) -> FamilyResult:
    """Time and memory of ``planfold report`` over ``planfold replay`` at two sizes."""
    root = workdir.parent / "logs"
    sizes = {
        "small": max(scale.small_events, scale.mid_events // 10),
        "mid": scale.mid_events,
    }
    logs = {which: stored_log(root, "session", count, scale.build_batch) for which, count in sizes.items()}
    commands = ("replay", "report")
    mib: dict[tuple[str, str], list[float]] = {(c, w): [] for c in commands for w in logs}
    seconds: dict[tuple[str, str], list[float]] = {(c, w): [] for c in commands for w in logs}
    for _ in range(scale.memory_repeats):
        for which, log in logs.items():
            for command in commands:
                added, took = replay_memory(log.db, command)
                mib[(command, which)].append(added)
                seconds[(command, which)].append(took)

    def measured(key: tuple[str, str], unit: str, samples: list[float]) -> Measurement:
        command, which = key
        what = "memory added" if unit == "MiB" else "wall time"
        return Measurement(REPORT, f"planfold {command}, {logs[which].count:,} events: {what}", unit,
                           median(samples), tuple(samples), "in a fresh child, SQLite, session-shaped log")

    memory = {key: measured(key, "MiB", s) for key, s in mib.items()}
    timing = {key: measured(key, "s", s) for key, s in seconds.items()}
    ratios: list[Ratio] = []
    for which, log in logs.items():
        ratios.append(ratio(REPORT, f"report / replay time, {log.count:,} events", timing[("report", which)],
                            timing[("replay", which)], direction="at-most", bound=None,
                            how="wall seconds of planfold report over planfold replay of the same log, per repetition"))
        ratios.append(ratio(REPORT, f"report / replay memory added, {log.count:,} events",
                            memory[("report", which)], memory[("replay", which)], direction="at-most", bound=None,
                            how="MiB a child's peak RSS grew by, report over replay of the same log"))
    ratios.append(ratio(REPORT, f"report memory added: {logs['mid'].count:,} / {logs['small'].count:,} events",
                        memory[("report", "mid")], memory[("report", "small")], direction="at-most", bound=2.0,
                        how="MiB added by planfold report at the larger log over the smaller, per repetition"))
    notes = (f"logs: {logs['small'].describe()}; {logs['mid'].describe()}",)
    return FamilyResult(REPORT, (*memory.values(), *timing.values()), tuple(ratios), notes)
