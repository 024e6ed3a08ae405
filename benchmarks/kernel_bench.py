"""The kernel alone: fold throughput.

Theory of operation
-------------------
Fold throughput folds logs already in memory (no storage, no decoding):
``fold_plan_mode`` and ``fold_session`` over a coding-agent session,
``fold_plan_mode`` over a log of nothing but ``plan/mode`` events (every
event read), and ``fold_goal`` over a goal-only log (``benchmarks.workloads``);
each is repeated and its median events/s reported. What starting a program
costs is ``benchmarks.start_bench``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    FamilyResult,
    Measurement,
    Scale,
    median,
    stopwatch,
    throughput,
)
from benchmarks.workloads import START_AT, goal_events, session_events
from planfold.kernel.goal.fold import fold_goal
from planfold.kernel.log import PLAN_MODE, Event
from planfold.kernel.plan.mode import fold_plan_mode
from planfold.kernel.session import fold_session

__all__ = ["ROOT", "run_folds"]

FOLD = "kernel-fold"
#: The repository root.
ROOT = Path(__file__).resolve().parent.parent


def _fold_rate(fold: Callable[[Iterable[Event]], Any], events: list[Event], repeats: int) -> list[float]:
    return [throughput(len(events), stopwatch(lambda: fold(events))[0]) for _ in range(repeats)]


def run_folds(scale: Scale, workdir: Path) -> FamilyResult:
    """Events/s of the plan-mode, goal and session folds over in-memory logs."""
    del workdir  # nothing is written
    session = list(session_events(scale.fold_events))
    goals = list(goal_events(scale.fold_events))
    toggles = [
        Event(seq, PLAN_MODE, START_AT + seq, {"active": seq % 3 != 0}) for seq in range(1, scale.fold_events + 1)
    ]
    rows = (
        ("fold_plan_mode (session log)", fold_plan_mode, session),
        ("fold_plan_mode (plan/mode events only)", fold_plan_mode, toggles),
        ("fold_goal (goal log)", fold_goal, goals),
        ("fold_session (session log)", fold_session, session),
        ("fold_session (goal log)", fold_session, goals),
    )
    found = []
    for name, fold, events in rows:
        samples = _fold_rate(fold, events, scale.fold_repeats)
        found.append(Measurement(FOLD, name, "events/s", median(samples), tuple(samples),
                                 f"{len(events)} events in memory"))
    return FamilyResult(FOLD, tuple(found), ())
