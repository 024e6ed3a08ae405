"""The kernel alone: fold throughput and the cost of ``import planfold.kernel``.

Theory of operation
-------------------
Fold throughput folds logs already in memory (no storage, no decoding):
``fold_plan_mode`` and ``fold_session`` over a coding-agent session,
``fold_plan_mode`` over a log of nothing but ``plan/mode`` events (every
event read), and ``fold_goal`` over a goal-only log (``benchmarks.workloads``);
each is repeated and its median events/s reported.

Import cost is measured as an embedder pays it: the wheel is built from this
checkout and installed into a fresh virtual environment (not the editable
install, whose finder changes what an import costs), and fresh interpreters
of that environment run, in turns, ``python -c "import planfold.kernel"`` and
``python -c "pass"``; what the import adds is the difference of their median
wall times (the goal takes the median of the differences of each pair run
one after the other, whose range is its spread). Each run of the first also passes ``-X importtime`` and the
median of the interpreter's own cumulative figure for ``planfold.kernel`` is
reported beside it, split into planfold's own module bodies (defining classes
and tables) and the standard-library modules they pull in that ``pass`` does
not. One untimed run of each comes first so that bytecode caches exist.

``import planfold.kernel`` loads the core only; each machine is imported on
first use. A third program imports every machine (``plan``, ``goal``,
``tools``, ``session``, ``graph``) and measures that whole cost (the worst
first use) the same way, held to its own goal (the median of the pairwise
differences with ``pass``).

The command line's own start is measured the same way: the wheel's
``planfold`` console script runs ``--version`` in turns with ``python -c
pass``, and the goal is the median of the pairs' quotients of wall times
(``--version`` imports no adapter: ``adapters.cli.entry``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import venv
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    FamilyResult,
    Measurement,
    Ratio,
    Scale,
    difference,
    median,
    ratio,
    stopwatch,
    throughput,
)
from benchmarks.workloads import START_AT, goal_events, session_events
from planfold.kernel.goal.fold import fold_goal
from planfold.kernel.log import PLAN_MODE, Event
from planfold.kernel.plan.mode import fold_plan_mode
from planfold.kernel.session import fold_session

__all__ = ["CORE", "ROOT", "import_cost", "importtime_split", "run_folds", "run_import"]

FOLD = "kernel-fold"
IMPORT = "kernel-import"
#: The repository root: the wheel is built from here.
ROOT = Path(__file__).resolve().parent.parent
_IMPORTTIME = re.compile(r"^import time:\s+(\d+)\s+\|\s+(\d+)\s+\|( *)(\S+)\s*$")


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


def _clean_env() -> dict[str, str]:
    """This process's environment without ``PYTHONPATH``, which would let the
    fresh environment see the checkout instead of the installed wheel, and
    without ``PYTHONDONTWRITEBYTECODE``, which would make every run compile
    the modules again (an installed package has its bytecode cached)."""
    return {name: value for name, value in os.environ.items() if name not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}


def install_fresh(workdir: Path) -> Path:
    """A fresh virtual environment under ``workdir`` with planfold's wheel
    installed (no dependencies: the kernel needs none); its python."""
    wheels = workdir / "wheel"
    pip = (sys.executable, "-m", "pip")
    build = (*pip, "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(ROOT))
    subprocess.run(build, check=True, capture_output=True, env=_clean_env())
    [wheel] = wheels.glob("planfold-*.whl")
    env = workdir / "import-env"
    venv.create(env, with_pip=False, clear=True)
    python = env / "bin" / "python"
    install = (*pip, "--python", str(python), "install", "--quiet", "--no-deps", "--no-index", str(wheel))
    subprocess.run(install, check=True, capture_output=True, env=_clean_env())
    return python


def _run(python: Path, code: str, *flags: str) -> tuple[float, str]:
    start = time.perf_counter()
    command = [str(python), *flags, "-c", code]
    done = subprocess.run(command, cwd=python.parent, capture_output=True, text=True, check=True, env=_clean_env())
    return time.perf_counter() - start, done.stderr


def importtime_split(stderr: str) -> tuple[float, float, float] | None:
    """From ``-X importtime`` output: the cumulative ms of every import tree
    rooted at a planfold module (``planfold.kernel``, and the core modules its
    first use imports), and how it splits into planfold's own modules (their
    bodies: class and table creation) and the other modules they pull in;
    None if no planfold module was imported."""
    rows = []
    for line in stderr.splitlines():
        found = _IMPORTTIME.match(line)
        if found:
            rows.append((int(found.group(1)), int(found.group(2)), len(found.group(3)), found.group(4)))
    if not rows:
        return None
    top_level = min(indent for _, _, indent, _ in rows)
    total = own = other = 0.0
    inside = False
    # A tree is printed children first, its root last: walk backwards so each
    # root is met before its subtree.
    for self_us, cumulative_us, indent, name in reversed(rows):
        ours = name == "planfold" or name.startswith("planfold.")
        if indent == top_level:
            inside = ours
            total += cumulative_us if ours else 0
        if inside:
            if ours:
                own += self_us
            else:
                other += self_us
    if not total:
        return None
    return total / 1000, own / 1000, other / 1000


IMPORT_KERNEL = "import planfold.kernel"
#: The first use of a core name: the log, the phase and the errors imported.
CORE = "from planfold.kernel import Event"
#: ``import planfold.kernel``, then every machine imported (the worst first use).
EVERY_NAME = "import planfold.kernel; from planfold.kernel import goal, graph, plan, session, tools"


VERSION = "planfold --version"


def _run_version(python: Path) -> float:
    """Seconds of one ``planfold --version`` by the environment's console script."""
    start = time.perf_counter()
    command = [str(python.parent / "planfold"), "--version"]
    subprocess.run(command, cwd=python.parent, capture_output=True, text=True, check=True, env=_clean_env())
    return time.perf_counter() - start


def import_cost(python: Path, runs: int) -> tuple[dict[str, list[float]], list[tuple[float, float, float]]]:
    """Wall ms of ``runs`` runs each of ``import planfold.kernel``, ``pass``,
    ``CORE``, ``EVERY_NAME`` and ``planfold --version`` by ``python``'s
    environment, taken in turns, and the ``-X importtime`` split
    (``importtime_split``) of ``CORE``."""
    codes = (IMPORT_KERNEL, "pass", CORE, EVERY_NAME)
    for code in codes:
        _run(python, code)
    _run_version(python)
    walls: dict[str, list[float]] = {code: [] for code in (*codes, VERSION)}
    reported: list[tuple[float, float, float]] = []
    for _ in range(runs):
        for code in codes:
            seconds, _ = _run(python, code)
            walls[code].append(seconds * 1000)
        walls[VERSION].append(_run_version(python) * 1000)
        _, stderr = _run(python, CORE, "-X", "importtime")
        split = importtime_split(stderr)
        if split is not None:
            reported.append(split)
    return walls, reported


def run_import(scale: Scale, workdir: Path) -> FamilyResult:
    """What ``import planfold.kernel`` adds to a fresh interpreter's start,
    in ms, in a non-editable install; and, beside it, what the first use of
    the core and of every machine add."""
    python = install_fresh(workdir)
    walls, reported = import_cost(python, scale.import_runs)
    with_kernel, bare, core, every_name, version = (
        walls[code] for code in (IMPORT_KERNEL, "pass", CORE, EVERY_NAME, VERSION)
    )
    found = [
        Measurement(IMPORT, f"python -c '{IMPORT_KERNEL}'", "ms", median(with_kernel), tuple(with_kernel)),
        Measurement(IMPORT, "python -c 'pass'", "ms", median(bare), tuple(bare)),
        Measurement(IMPORT, "import planfold.kernel adds (wall, difference of medians)", "ms",
                    median(with_kernel) - median(bare), ()),
        Measurement(IMPORT, f"python -c '{CORE}'", "ms", median(core), tuple(core)),
        Measurement(IMPORT, "the core (log, phase, errors) adds (wall, difference of medians)", "ms",
                    median(core) - median(bare), (), "the first use of a core name"),
        Measurement(IMPORT, "import planfold.kernel + every machine", "ms", median(every_name), tuple(every_name)),
        Measurement(IMPORT, "every machine adds (wall, difference of medians)", "ms",
                    median(every_name) - median(bare), (), "the first use of every machine"),
    ]
    by_version = Measurement(IMPORT, VERSION, "ms", median(version), tuple(version), "the wheel's console script")
    found.append(by_version)
    labels = (
        f"{CORE} (-X importtime, cumulative)",
        "  of which planfold modules' own bodies",
        "  of which other modules they import",
    )
    for column, label in enumerate(labels):
        values = [split[column] for split in reported]
        if values:
            found.append(Measurement(IMPORT, label, "ms", median(values), tuple(values)))
    ratios: tuple[Ratio, ...] = (
        difference(IMPORT, "import planfold.kernel adds (ms)", found[0], found[1], bound=15.0,
                   how="wall ms of 'import planfold.kernel' minus 'pass' run just after it, fresh interpreters, "
                   "wheel install; median of the pairs"),
        difference(IMPORT, "importing every kernel machine adds (ms)", found[5], found[1], bound=25.0,
                   how=f"wall ms of '{EVERY_NAME}' minus 'pass', fresh interpreters, wheel install; "
                   "median of the pairs"),
        ratio(IMPORT, "planfold --version wall time / python -c pass", by_version, found[1],
              direction="at-most", bound=2.0,
              how="wall time of the wheel's console script over a bare interpreter's, run in turns; "
              "median of the pairs' quotients"),
    )
    return FamilyResult(IMPORT, tuple(found), ratios)
