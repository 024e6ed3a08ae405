"""The time-boxed fuzz pass: ``python -m tests.fuzz --seconds N``.

It splits ``N`` seconds between the fuzz targets (each one fuzzed in rounds
of Hypothesis examples under the ``fuzz`` profile until its equal share is
spent) and the Hypothesis state machines of the test suite (every test
module that defines a ``RuleBasedStateMachine``, run by pytest under the
``fuzz`` profile in rounds sized to fit ``MACHINE_SHARE`` of the budget). A
round that has started is finished, so the pass may overrun by one round.

``--seed S`` makes the pass reproducible: a fixed amount of work instead of
a time budget (``--rounds`` rounds of every target, ``--machine-examples``
examples of every state machine) with every round's generation seeded from
``S`` (CI passes the commit), so the same commit always gets the same verdict
and a finding replays with the command the report prints.

``--record`` instead records the outcome of every corpus input in
``outcomes.json`` (after an intended change of a result or a message).

A target's failing input, shrunk by ``minimize`` (Hypothesis's shrinker has
no time bound, so it is off here), is written to
``tests/fuzz/corpus/<target>/crash-<hash>`` so that every later test run
replays it; a failing state machine is reported with Hypothesis's
reproduction blob. The exit status is 1 when anything failed.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, seed, settings

import tests.conftest  # noqa: F401  (registers the Hypothesis profiles)
from tests.fuzz.harness import (
    OUTCOMES,
    Target,
    check,
    corpus_files,
    outcome_digest,
    read_corpus_file,
    record_outcomes,
    save_to_corpus,
)
from tests.fuzz.minimize import minimize
from tests.fuzz.targets import TARGETS

TESTS = Path(__file__).resolve().parent.parent
ROOT = TESTS.parent
ROUND_EXAMPLES = 200
#: The part of the budget that goes to the state machines (the rest is
#: shared equally by the targets).
MACHINE_SHARE = 0.35


@dataclass
class Report:
    name: str
    seconds: float = 0.0
    examples: int = 0
    rounds: int = 0
    failure: str | None = None
    lines: list[str] = field(default_factory=list)


def round_seed(base: str, name: str, number: int) -> int:
    """The Hypothesis seed of round ``number`` of ``name`` in a pass seeded ``base``."""
    return int.from_bytes(hashlib.sha256(f"{base}/{name}/{number}".encode()).digest()[:8], "big")


def fuzz_target(target: Target, budget: float, *, base_seed: str | None = None, rounds: int = 0) -> Report:
    """Fuzz ``target`` for ``budget`` seconds, or with ``base_seed`` for exactly
    ``rounds`` seeded rounds; keep a failing input in the corpus."""
    report = Report(target.name)
    start = time.monotonic()
    last_failing: list[bytes] = []

    @settings(
        settings.get_profile("fuzz"),
        max_examples=ROUND_EXAMPLES,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )
    @given(target.inputs)
    def one_round(data: bytes) -> None:
        report.examples += 1
        try:
            check(target, data)
        except BaseException:
            last_failing[:] = [data]
            raise

    def more() -> bool:
        if base_seed is not None:
            return report.rounds < rounds
        return time.monotonic() - start < budget

    while more():
        report.rounds += 1
        run = one_round if base_seed is None else seed(round_seed(base_seed, target.name, report.rounds))(one_round)
        try:
            run()
        except Exception as exc:
            report.failure = f"{type(exc).__name__}: {exc!s:.500}"
            if last_failing:
                data = minimize(target, last_failing[0])
                path = save_to_corpus(target.name, data)
                report.lines.append(f"kept as {path.relative_to(ROOT)} ({len(data)} bytes): {data[:160]!r}")
            if base_seed is not None:
                report.lines.append(
                    f"replay: python -m tests.fuzz --seed {base_seed} --rounds {report.rounds} "
                    f"--target {target.name} --no-machines"
                )
            break
    report.seconds = time.monotonic() - start
    return report


def machine_modules() -> list[Path]:
    """Test modules that define a Hypothesis state machine."""
    return sorted(
        path
        for path in TESTS.rglob("test_*.py")
        if "RuleBasedStateMachine" in path.read_text(encoding="utf-8") and "fuzz" not in path.parts
    )


def fuzz_machines(budget: float, *, base_seed: str | None = None, examples_each: int = 0) -> Report:
    """Run the state machines under the ``fuzz`` profile in rounds that fit
    ``budget``, or with ``base_seed`` in one seeded round of ``examples_each``
    examples."""
    report = Report("state machines")
    modules = [str(path.relative_to(ROOT)) for path in machine_modules()]
    if not modules:
        report.failure = "no state machine modules found"
        return report
    start = time.monotonic()
    examples = examples_each if base_seed is not None else 10
    env = {**os.environ, "HYPOTHESIS_PROFILE": "fuzz"}
    seeded = [] if base_seed is None else [f"--hypothesis-seed={round_seed(base_seed, 'machines', 1)}"]
    while True:
        remaining = budget - (time.monotonic() - start)
        if base_seed is None and remaining <= 0:
            break
        env["HYPOTHESIS_MAX_EXAMPLES"] = str(examples)
        began = time.monotonic()
        pytest = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "tests.fuzz.budget", "-p", "no:cacheprovider"]
        result = subprocess.run(
            [*pytest, *seeded, *modules],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        took = time.monotonic() - began
        report.rounds += 1
        report.examples += examples
        if result.returncode != 0:
            report.failure = f"pytest exited with {result.returncode}"
            report.lines.extend((result.stdout + result.stderr).strip().splitlines()[-60:])
            if base_seed is not None:
                report.lines.append(
                    f"replay: HYPOTHESIS_PROFILE=fuzz HYPOTHESIS_MAX_EXAMPLES={examples_each} "
                    f"python -m pytest -p tests.fuzz.budget {seeded[0]} {' '.join(modules)}"
                )
            break
        if base_seed is not None:
            break
        remaining = budget - (time.monotonic() - start)
        # Size the next round to fill about 80 % of what is left.
        per_example = took / examples
        examples = min(20_000, int(remaining * 0.8 / per_example))
        if examples < 10:
            break
    report.seconds = time.monotonic() - start
    report.lines.insert(0, "modules: " + ", ".join(modules))
    return report


def record() -> int:
    """Record the outcome of every corpus input (``open-*`` ones excepted)."""
    digests: dict[str, str] = {}
    for target in TARGETS:
        for path in corpus_files(target.name):
            if not path.name.startswith("open-"):
                outcome = check(target, read_corpus_file(path), look_past_known=False)
                digests[f"{target.name}/{path.name}"] = outcome_digest(outcome)
    record_outcomes(digests)
    print(f"recorded {len(digests)} outcomes in {OUTCOMES.relative_to(ROOT)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="time budget of the whole pass")
    parser.add_argument("--target", action="append", choices=[t.name for t in TARGETS], help="only these targets")
    parser.add_argument("--no-machines", action="store_true", help="skip the state machines")
    parser.add_argument("--record", action="store_true", help="only record the corpus outcomes, then exit")
    parser.add_argument("--seed", help="reproducible pass: fixed work, every round seeded from this text (a commit)")
    parser.add_argument("--rounds", type=int, default=3, help=f"with --seed: rounds of {ROUND_EXAMPLES} per target")
    parser.add_argument("--machine-examples", type=int, default=200, help="with --seed: examples per state machine")
    args = parser.parse_args(argv)
    if args.record:
        return record()

    targets = [t for t in TARGETS if not args.target or t.name in args.target]
    machines = 0.0 if args.no_machines else args.seconds * (MACHINE_SHARE if targets else 1.0)
    share = (args.seconds - machines) / max(len(targets), 1)
    if args.seed is not None:
        print(f"reproducible pass, seed {args.seed!r}: {args.rounds} rounds a target, "
              f"{args.machine_examples} examples a machine")
    reports = [fuzz_target(target, share, base_seed=args.seed, rounds=args.rounds) for target in targets]
    if not args.no_machines:
        reports.append(fuzz_machines(machines, base_seed=args.seed, examples_each=args.machine_examples))

    failed = False
    for report in reports:
        status = "FAILED" if report.failure else "ok"
        print(
            f"{report.name:16} {status:6} {report.examples:7} examples "
            f"in {report.rounds:3} rounds, {report.seconds:6.1f}s"
        )
        if report.failure:
            failed = True
            print(f"    {report.failure}")
        for line in report.lines if report.failure else report.lines[:1]:
            print(f"    {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
