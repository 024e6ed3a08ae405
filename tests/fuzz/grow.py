"""Grow the corpus by coverage: ``python -m tests.fuzz.grow --target NAME``.

Generates inputs with the target's Hypothesis strategy and keeps, as
``case-*`` corpus files, those that make the kernel take a branch that no
kept input takes yet (branch coverage of ``kernel/``, measured per input).
The corpus replay then pins each new input's exact outcome, which is what
notices a mutated message or a mutated decision on that branch. Needs the
``coverage`` package (installed with the ``mutation`` extra); record the new
outcomes afterwards with ``python -m tests.fuzz --record``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings

from tests.fuzz.harness import FuzzFinding, Target, check, corpus_files, read_corpus_file, save_to_corpus
from tests.fuzz.targets import TARGETS, by_name

KERNEL = Path(__file__).resolve().parents[2] / "kernel"


def generate(target: Target, count: int) -> list[bytes]:
    """``count`` inputs from the target's strategy."""
    found: list[bytes] = []

    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(target.inputs)
    def collect(data: bytes) -> None:
        found.append(data)

    collect()
    return found


class BranchMeter:
    """The kernel branches one call takes, measured with coverage.py."""

    def __init__(self) -> None:
        coverage: Any = importlib.import_module("coverage")
        self.cov = coverage.Coverage(branch=True, include=[str(KERNEL / "*")], data_file=None)

    def branches(self, target: Target, data: bytes) -> set[tuple[str, int, int]] | None:
        """The branches ``data`` takes, or ``None`` when it breaks the target."""
        self.cov.erase()
        self.cov.start()
        try:
            check(target, data, look_past_known=False)
        except FuzzFinding:
            return None
        finally:
            self.cov.stop()
        measured = self.cov.get_data()
        return {(name, *arc) for name in measured.measured_files() for arc in measured.arcs(name) or ()}


def grow(target: Target, count: int) -> list[Path]:
    """Add the generated inputs that take new branches; return their files."""
    meter = BranchMeter()
    seen: set[tuple[str, int, int]] = set()
    for path in corpus_files(target.name):
        seen |= meter.branches(target, read_corpus_file(path)) or set()
    added: list[Path] = []
    for data in generate(target, count):
        taken = meter.branches(target, data)
        if taken is not None and not taken <= seen:
            seen |= taken
            added.append(save_to_corpus(target.name, data, "case"))
    return added


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.grow", description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", action="append", choices=[t.name for t in TARGETS], required=True)
    parser.add_argument("--examples", type=int, default=2000, help="inputs generated per target")
    args = parser.parse_args(argv)
    for name in args.target:
        added = grow(by_name(name), args.examples)
        print(f"{name}: {len(added)} new corpus files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
