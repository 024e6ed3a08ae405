"""``python -m tests.mutation``: run mutmut on ``kernel/`` and print the score.

    python -m tests.mutation run [--jobs N] [--module kernel/plan/mode.py ...] [--mutants PATTERN ...]
                                 [--retry] [--fresh]
    python -m tests.mutation recheck [--jobs N] [--module kernel/plan/mode.py ...] [--retry]
    python -m tests.mutation score [--survivors] [--fail-under PERCENT]
    python -m tests.mutation equivalent NAME... --reason WHY

``run`` runs mutmut (configured under ``[tool.mutmut]`` in pyproject.toml;
results are cached in ``mutants/`` and a mutant is re-run when its function
changes; ``--module`` re-runs every mutant of those files, ``--mutants`` the
mutants whose names match (``planfold.kernel.step.x__next__mutmut_*``: one
function's, after it changed), ``--retry`` only
the ones not killed yet, ``--fresh`` starts from nothing), re-tests the
surviving mutants of functions that run before any test (at import, or while
the tests are collected) in fresh interpreters (see ``import_time``;
``recheck`` does only that; mutmut itself skips them, see ``launch``), and
then prints the score
as ``score`` does. The kernel is mutated as ``planfold.kernel`` (mutant names
read ``planfold.kernel.plan.mode.x_...``); files are named by their place in
the repository (``kernel/plan/mode.py``). The score is killed / all
non-equivalent mutants; ``tests/mutation/equivalent/`` lists the equivalent
ones, one file per kernel module laid out like ``kernel/``
(``equivalent/plan/mode.toml`` for ``kernel/plan/mode.py``), each with the
reason it cannot change behaviour.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from tests.mutation.import_time import (
    import_time_functions,
    kernel_caches,
    load_rechecked,
    mutated_path,
    recheck,
)
from tests.mutation.launch import EQUIVALENT, IMPORT_TIME
from tests.mutation.pytest_plugin import CACHES
from tests.mutation.score import SEPARATOR, Mutant, Score, load_equivalents, load_mutants, module_of, score

ROOT = Path(__file__).resolve().parents[2]
EQUIVALENTS = Path(__file__).resolve().parent / "equivalent"
COLUMNS = ("killed", "survived", "skipped", "no tests", "timeout", "suspicious", "not checked", "equivalent")


def report(result: Score, *, survivors: bool) -> str:
    """The per-file table, the stale equivalents, and the score line."""
    lines = [f"{'file':32}{'mutants':>8}" + "".join(f"{c:>12}" for c in COLUMNS) + f"{'score':>9}"]
    for file, counts in sorted(result.by_file.items()):
        total = sum(counts.values())
        denominator = total - counts["equivalent"]
        percent = 100.0 * counts["killed"] / denominator if denominator else 100.0
        lines.append(
            f"{file:32}{total:8}" + "".join(f"{counts[c]:12}" for c in COLUMNS) + f"{percent:8.1f}%"
        )
    if survivors and result.not_killed:
        lines.append("\nNot killed (kill with a test, or list in equivalent/*.toml with the reason):")
        lines.extend(mutant.show() for mutant in result.not_killed)
    if result.stale:
        lines.append("\nStale entries in equivalent/*.toml (they match no surviving mutant):")
        lines.extend(f"  {entry.file}::{entry.function}: {entry.line!r} -> {entry.mutant!r}" for entry in result.stale)
    lines.append(
        f"\nmutation score of kernel/: {result.killed} killed / {result.non_equivalent} non-equivalent mutants"
        f" = {result.percent:.1f} % ({result.total} mutants, {len(result.equivalent)} equivalent)"
    )
    return "\n".join(lines)


def module_patterns(file: str) -> list[str]:
    """mutmut name patterns for the mutants of kernel ``file`` and of no
    other module (a package's must not reach its submodules):
    ``kernel/plan/__init__.py`` -> ``planfold.kernel.plan.x_*`` and the
    same for methods."""
    return [f"{module_of(file)}.{prefix}*" for prefix in ("x_", "x" + SEPARATOR)]


def prune_copies(root: Path) -> list[str]:
    """Remove the files of ``mutants/`` copied from the checkout (its tests
    and ``[tool.mutmut] also_copy``) whose original is gone; their paths,
    relative to ``mutants/``. mutmut copies those trees again on every run
    but never deletes, so a module, test or page removed since would still
    run in the copy (and a test of the layering, say, would fail there)."""
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mutmut"]
    copies = root / "mutants"
    removed: list[str] = []
    for entry in ("tests/", *config.get("also_copy", [])):
        tree = copies / entry
        for path in sorted(tree.rglob("*")) if tree.is_dir() else []:
            relative = path.relative_to(copies)
            if path.is_file() and "__pycache__" not in relative.parts and not (root / relative).exists():
                path.unlink()
                removed.append(relative.as_posix())
    return removed


def run_mutmut(
    root: Path, jobs: int, modules: Sequence[str], *, fresh: bool, retry: bool, examples: int,
    mutants: Sequence[str] = (),
) -> int:
    if fresh:
        shutil.rmtree(root / "mutants", ignore_errors=True)
    prune_copies(root)
    patterns = [pattern for module in modules for pattern in module_patterns(module)] + list(mutants)
    if retry:
        # Only the mutants not killed yet (of the given modules, or of all).
        patterns = [
            m.name
            for m in load_mutants(root)
            if not m.killed and (not modules or any(m.file == module for module in modules))
        ]
        if not patterns:
            return 0
    # mutmut itself cannot kill a mutant of a function the kernel runs when
    # it is imported (see import_time): the launcher leaves those to the
    # recheck. (Functions that first run while the tests are collected stay
    # with mutmut: most run again in the tests, where the plugin's empty
    # caches let their mutants act; the recheck takes the rest.)
    (root / "mutants").mkdir(parents=True, exist_ok=True)
    listing = root / "mutants" / "import-time-functions.json"
    listing.write_text(json.dumps(sorted(import_time_functions(root))), encoding="utf-8")
    # Nor does it test the mutants listed as equivalent (see launch).
    equivalent = root / "mutants" / "equivalent-keys.json"
    equivalent.write_text(
        json.dumps(sorted(entry.key() for entry in load_equivalents(EQUIVALENTS))), encoding="utf-8"
    )
    command = [sys.executable, "-m", "tests.mutation.launch", "run", "--max-children", str(jobs), *patterns]
    # Every Hypothesis test is capped (through the tests.fuzz.budget plugin
    # that [tool.mutmut] loads) so that thousands of test runs stay affordable.
    # mutmut orders sys.path for its own processes; the mutated tree also goes
    # first on PYTHONPATH so that a process a test starts (python -m
    # planfold...) runs the mutated copy too, never the installed one. The
    # folders must exist before mutmut starts: Python skips, for good, a path
    # entry that was not a folder when it first looked there. Every pytest run
    # loads pytest_plugin, which empties the kernel's caches that mutmut's
    # forked workers would otherwise inherit full.
    (root / "mutants" / "src").mkdir(parents=True, exist_ok=True)
    addopts = f"{os.environ.get('PYTEST_ADDOPTS', '')} -p tests.mutation.pytest_plugin".strip()
    env = mutated_path(
        root,
        {
            **os.environ,
            "HYPOTHESIS_PROFILE": "default",
            "HYPOTHESIS_MAX_EXAMPLES": str(examples),
            "PYTEST_ADDOPTS": addopts,
            CACHES: " ".join(kernel_caches(root)),
            IMPORT_TIME: str(listing),
            EQUIVALENT: str(equivalent),
        },
    )
    return subprocess.run(command, cwd=root, env=env, check=False).returncode


def listing_of(file: str) -> Path:
    """The equivalents file of kernel ``file``: ``kernel/plan/mode.py`` ->
    ``equivalent/plan/mode.toml``."""
    return EQUIVALENTS / Path(file).relative_to("kernel").with_suffix(".toml")


def add_equivalents(root: Path, patterns: Sequence[str], reason: str) -> int:
    """Append an entry, with ``reason``, for every surviving mutant whose
    name matches one of ``patterns``, to the equivalents file of the
    mutant's kernel module (see ``listing_of``)."""
    chosen = [
        m for m in load_mutants(root) if not m.killed and any(fnmatch.fnmatchcase(m.name, p) for p in patterns)
    ]
    for m in chosen:
        listing = listing_of(m.file)
        listing.parent.mkdir(parents=True, exist_ok=True)
        if not listing.exists():
            listing.write_text(
                f"# Mutants of {m.file} that cannot change behaviour, each with the reason.\n"
                "# The format and the matching rules: tests/mutation/equivalent/README.md.\n",
                encoding="utf-8",
            )
        with listing.open("a", encoding="utf-8") as out:
            out.write(
                "\n[[equivalent]]\n"
                f"file = {_toml(m.file)}\nfunction = {_toml(m.function)}\n"
                f"line = {_toml(m.original)}\nmutant = {_toml(m.mutated)}\nreason = {_toml(reason)}\n"
            )
    print(f"listed {len(chosen)} mutants as equivalent")
    return 0 if chosen else 1


def _toml(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def with_rechecks(root: Path, mutants: list[Mutant]) -> list[Mutant]:
    """``mutants`` with the statuses found by re-testing import-time functions,
    for those mutmut did not kill: a kill by mutmut (a test added since the
    recheck, say) is evidence enough, whatever an earlier recheck found."""
    rechecked = load_rechecked(root, mutants)
    return [replace(m, status=rechecked[m.name]) if m.name in rechecked and not m.killed else m for m in mutants]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.mutation", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run mutmut, then print the score")
    again = commands.add_parser(
        "recheck", help="re-test mutants of functions that run before any test, then print the score"
    )
    run.add_argument("--fresh", action="store_true", help="discard cached results first")
    run.add_argument(
        "--mutants", nargs="+", default=[], metavar="PATTERN",
        help="re-test the mutants whose mutmut names match (planfold.kernel.step.x__next__mutmut_*)",
    )
    for sub in (run, again):
        sub.add_argument(
            "--module", action="append", default=[], help="re-test every mutant of this file (kernel/plan/mode.py)"
        )
        sub.add_argument("--retry", action="store_true", help="re-test only the mutants not killed yet")
        sub.add_argument("--jobs", type=int, default=2, help="mutants tested in parallel")
        sub.add_argument("--examples", type=int, default=20, help="cap on each Hypothesis test's examples")
    same = commands.add_parser("equivalent", help="list surviving mutants as equivalent, with a reason")
    same.add_argument("names", nargs="+", help="mutant names (shell-style patterns allowed)")
    same.add_argument("--reason", required=True, help="why none of them can change behaviour")
    same.add_argument("--root", type=Path, default=ROOT, help="the checkout whose results to read")
    for sub in (run, again, commands.add_parser("score", help="print the score of the last run")):
        sub.add_argument("--survivors", action="store_true", help="list every mutant not killed")
        sub.add_argument("--fail-under", type=float, default=None, help="exit 1 below this percentage")
        sub.add_argument("--root", type=Path, default=ROOT, help="the checkout to run in (default: this one)")
    args = parser.parse_args(argv)

    if args.command == "equivalent":
        return add_equivalents(args.root, args.names, args.reason)
    if args.command == "run":
        code = run_mutmut(
            args.root, args.jobs, args.module, fresh=args.fresh, retry=args.retry, examples=args.examples,
            mutants=args.mutants,
        )
        if code != 0:
            print(f"mutmut exited with {code}", file=sys.stderr)
            return code
    equivalents = load_equivalents(EQUIVALENTS)
    if args.command in ("run", "recheck"):
        mutants = load_mutants(args.root)
        # Named mutants confine the recheck to their files, as --module does.
        chosen = getattr(args, "mutants", [])
        named = {m.file for m in mutants if any(fnmatch.fnmatchcase(m.name, p) for p in chosen)}
        recheck(
            args.root,
            mutants,
            jobs=args.jobs,
            examples=args.examples,
            retry=args.retry,
            modules=[*args.module, *sorted(named)],
            equivalent={entry.key() for entry in equivalents},
        )
    result = score(with_rechecks(args.root, load_mutants(args.root)), equivalents)
    if not result.total:
        print("no mutation results: run `python -m tests.mutation run` first", file=sys.stderr)
        return 1
    print(report(result, survivors=args.survivors))
    if args.fail_under is not None and result.percent < args.fail_under:
        print(f"mutation score {result.percent:.1f} % is under {args.fail_under} %", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
