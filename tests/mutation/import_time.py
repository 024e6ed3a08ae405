"""Re-test the mutants of functions that run before any test does.

mutmut forks its test workers from a process that has already imported the
kernel and collected the tests, so a function the kernel calls at import time
(a builder of a module-level table, a factory of checks) or while the tests
are collected (a reader compiled and cached the first time a test module
uses it) has already run, unmutated, before any mutant is switched on: its
mutants survive whatever the tests do. This module finds those functions (by
profiling a fresh import of ``planfold.kernel`` and every module below it,
then a collection of the mutation test selection), and re-tests each of
their mutants that mutmut did not kill in a fresh interpreter with the
mutant switched on from the start, running the whole mutation test selection
(``[tool.mutmut]`` in pyproject.toml) with ``-x``. That interpreter gets
``mutants/src`` first on its path, as mutmut's own workers do, so it imports
the mutated ``planfold`` and not the one the editable install points at.

Results are kept in ``mutants/import-time.json``, keyed by mutant name and
valid only while the mutant still makes the same change.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Collection, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tests.mutation.score import KERNEL_SOURCE, KILLED, SEPARATOR, Mutant, module_of, status_of

__all__ = [
    "import_time_functions",
    "kernel_caches",
    "load_rechecked",
    "mangled",
    "mirror_tests",
    "mutated_path",
    "narrowed",
    "recheck",
    "selection",
    "to_recheck",
]

# Every module of the kernel package, subpackages included, then (given
# pytest arguments) a collection of those tests; calls are kept by the real
# path of their file, so the link in the namespace and its target name the
# same file. Also the kernel's caches as the imports leave them: private
# module-level dicts still empty, and functools caches. argv: the kernel
# folder, the output file, pytest's arguments.
_PROFILE = """
import importlib, json, os, pkgutil, sys
top = os.path.realpath(sys.argv[1]) + os.sep
calls = set()
def profile(frame, event, arg):
    if event == "call":
        filename = os.path.realpath(frame.f_code.co_filename)
        if filename.startswith(top):
            calls.add((filename[len(top):], frame.f_code.co_qualname))
sys.setprofile(profile)
import planfold.kernel
for info in pkgutil.walk_packages(planfold.kernel.__path__, "planfold.kernel."):
    importlib.import_module(info.name)
sys.setprofile(None)
caches = sorted(
    f"{name}:{attribute}"
    for name, module in list(sys.modules.items())
    if name.split(".")[:2] == ["planfold", "kernel"]
    for attribute, value in vars(module).items()
    if getattr(value, "__module__", name) == name
    and (
        callable(getattr(value, "cache_clear", None))
        or (type(value) is dict and not value and attribute.startswith("_") and not attribute.startswith("__"))
    )
)
sys.setprofile(profile)
if sys.argv[3:]:
    import pytest
    code = pytest.main(["--collect-only", "-qq", *sys.argv[3:]])
    if code != 0:
        sys.exit(f"collecting the tests failed (pytest exit {code})")
sys.setprofile(None)
if not os.path.realpath(planfold.kernel.__file__).startswith(top):
    sys.exit("planfold.kernel was imported from " + planfold.kernel.__file__ + ", not from " + top)
with open(sys.argv[2], "w", encoding="utf-8") as out:
    json.dump({"calls": sorted(calls), "caches": caches}, out)
"""


def mutated_path(root: Path, env: dict[str, str]) -> dict[str, str]:
    """``env`` with the mutated tree first on ``PYTHONPATH`` (``mutants/src``
    for ``planfold``, then ``mutants`` for the tests), as mutmut arranges
    ``sys.path`` for its workers; entries already there come after."""
    mutants = root.resolve() / "mutants"
    paths = [str(mutants / "src"), str(mutants)]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    return {**env, "PYTHONPATH": os.pathsep.join(paths)}


def mangled(module: str, qualname: str) -> str | None:
    """mutmut's name for the function whose code ``qualname`` runs in
    ``module`` (the outermost function for nested code), or ``None`` for
    module-level code, lambdas and comprehensions outside any function."""
    outer = qualname.split(".<locals>", 1)[0]
    if outer.startswith("<") or outer.endswith(">"):
        return None
    if "." in outer:
        cls, method = outer.rsplit(".", 1)
        return f"{module}.x{SEPARATOR}{cls.split('.')[-1]}{SEPARATOR}{method}"
    return f"{module}.x_{outer}"


def _profile(root: Path, collect: Sequence[str]) -> dict[str, Any]:
    """Run ``_PROFILE`` on ``root``'s kernel (imported through ``root/src``,
    ahead of any installed copy) in a fresh interpreter, in ``root``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root.resolve() / "src"), env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "profile.json"
        result = subprocess.run(
            [sys.executable, "-c", _PROFILE, str(root / KERNEL_SOURCE), str(out), *collect],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(f"profiling the kernel import failed: {result.stderr.strip()}")
        found: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return found


def kernel_caches(root: Path) -> list[str]:
    """The caches of ``root``'s kernel as ``module:name`` (what
    ``pytest_plugin`` empties): the private module-level dicts that are
    still empty once every kernel module is imported, and the ``functools``
    caches."""
    caches: list[str] = _profile(root, ())["caches"]
    return caches


def import_time_functions(root: Path, collect: Sequence[str] = ()) -> set[str]:
    """The mangled names of the kernel functions a fresh import of
    ``root``'s kernel runs, and then a collection of the tests pytest's
    arguments ``collect`` select (run in ``root``)."""
    found: set[str] = set()
    for relative, qualname in _profile(root, collect)["calls"]:
        name = mangled(module_of(f"kernel/{relative}"), qualname)
        if name is not None:
            found.add(name)
    return found


def selection(root: Path) -> list[str]:
    """The pytest arguments of the mutation test selection (``[tool.mutmut]``)."""
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mutmut"]
    return [*config.get("pytest_add_cli_args", []), *config.get("pytest_add_cli_args_test_selection", [])]


def mirror_tests(root: Path, file: str) -> list[str]:
    """The test files that mirror kernel ``file`` (``kernel/plan/checks.py``
    -> ``tests/kernel/plan/test_checks.py`` and ``test_checks_*.py``) in
    the copy of the tests the run uses, ``root/mutants/tests``, as paths
    relative to ``root/mutants``: the tests most likely to kill its mutants."""
    source = Path(file)
    tree = root / "mutants"
    folder = tree / "tests" / source.parent
    if not folder.is_dir():
        return []
    found = [folder / f"test_{source.stem}.py", *sorted(folder.glob(f"test_{source.stem}_*.py"))]
    return [str(path.relative_to(tree)) for path in found if path.is_file()]


def narrowed(selection: Sequence[str], paths: Sequence[str]) -> list[str]:
    """The test selection's pytest arguments with its folder of tests
    (``tests/``) replaced by ``paths``: the same options, deselections and
    markers, over fewer files."""
    out: list[str] = []
    for argument in selection:
        out.extend(paths if argument in ("tests", "tests/") else [argument])
    return out


def _run(
    root: Path, mutant: str, examples: int, timeout: float, first: Sequence[str] = ()
) -> tuple[int | None, float]:
    """Run the mutation test selection with ``mutant`` switched on in a fresh
    interpreter: mutmut's code for the outcome, and the seconds it took. The
    test files ``first`` (see ``mirror_tests``) run before the whole
    selection, which only runs when they do not kill the mutant: a verdict
    is the same either way, and most mutants die in their own tests."""
    env = mutated_path(
        root,
        {
            **os.environ,
            "MUTANT_UNDER_TEST": mutant,
            "HYPOTHESIS_PROFILE": "default",
            "HYPOTHESIS_MAX_EXAMPLES": str(examples),
            "PYTHONDONTWRITEBYTECODE": "1",
        },
    )
    start = time.monotonic()

    def pytest(arguments: Sequence[str]) -> int | None:
        command = [sys.executable, "-m", "pytest", "--rootdir=.", "-x", "-q", "--tb=no", *arguments]
        try:
            return subprocess.run(
                command, cwd=root / "mutants", env=env, capture_output=True, check=False, timeout=timeout
            ).returncode
        except subprocess.TimeoutExpired:
            return None

    chosen = selection(root)
    # A failing test or a collection error (a module the mutant keeps from
    # importing) in the mirroring tests kills the mutant; anything else
    # leaves the verdict to the whole selection.
    if first and pytest(narrowed(chosen, first)) in (1, 2):
        return 1, time.monotonic() - start
    exit_code = pytest(chosen)
    if exit_code is None:
        return 36, time.monotonic() - start  # mutmut's code for a timeout
    # Translated to mutmut's codes: a failing test, or a collection error, kills it.
    return {0: 0, 5: 5}.get(exit_code, 1), time.monotonic() - start


def _cache_path(root: Path) -> Path:
    return root / "mutants" / "import-time.json"


def load_rechecked(root: Path, mutants: Iterable[Mutant]) -> dict[str, str]:
    """The statuses a recheck found, for the mutants that still make the
    change they made when rechecked."""
    path = _cache_path(root)
    if not path.exists():
        return {}
    cache = json.loads(path.read_text(encoding="utf-8"))
    out: dict[str, str] = {}
    for mutant in mutants:
        entry = cache.get(mutant.name)
        if entry is not None and entry["change"] == [mutant.original, mutant.mutated]:
            out[mutant.name] = status_of(entry["code"])
    return out


def to_recheck(
    mutants: Iterable[Mutant],
    functions: Collection[str],
    done: Mapping[str, str],
    *,
    retry: bool = False,
    modules: Collection[str] = (),
    equivalent: Collection[tuple[str, str, str, str]] = (),
) -> list[Mutant]:
    """The mutants ``recheck`` re-tests: those of ``functions`` (mangled
    names) that mutmut did not kill, of the files ``modules`` only when some
    are named, unless a recheck already decided them (``done``: status by
    mutant name) and, with ``retry`` or for a file of ``modules``, killed
    them. A mutant listed as equivalent (its ``key`` in ``equivalent``) is
    not re-tested: the score counts it equivalent whatever a recheck would
    say, and as a listed mutant survives every test, re-testing it costs a
    whole run of the selection for nothing."""

    def settled(mutant: Mutant) -> bool:
        status = done.get(mutant.name)
        return status is not None and (status in KILLED or not (retry or mutant.file in modules))

    return [
        m
        for m in mutants
        if not m.killed
        and m.key() not in equivalent
        and (not modules or m.file in modules)
        and not settled(m)
        and m.name.rsplit("__mutmut_", 1)[0] in functions
    ]


def recheck(
    root: Path,
    mutants: Sequence[Mutant],
    *,
    jobs: int,
    examples: int,
    retry: bool = False,
    modules: Collection[str] = (),
    equivalent: Collection[tuple[str, str, str, str]] = (),
) -> dict[str, str]:
    """Re-test every mutant of a function that runs before any test (see
    the module doc) that mutmut did not kill, that is not listed as
    equivalent (keys in ``equivalent``) and that is not rechecked yet; with
    ``retry``, also those a recheck did not kill (a test may kill them now),
    and likewise those of the files ``modules`` (``kernel/log.py``). Return
    the new statuses."""
    functions = import_time_functions(root, selection(root))
    done = load_rechecked(root, mutants)
    todo = to_recheck(mutants, functions, done, retry=retry, modules=modules, equivalent=equivalent)
    if not todo:
        return {}
    clean, took = _run(root, "", examples, timeout=3600)
    if clean != 0:
        raise RuntimeError(f"the mutation test selection fails without any mutant (pytest exit {clean})")
    timeout = 3 * took + 30
    print(
        f"re-testing {len(todo)} mutants of functions that run before any test, in fresh interpreters"
        f" ({took:.0f}s per clean run)"
    )
    path = _cache_path(root)
    cache = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    found: dict[str, str] = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = pool.map(lambda m: _run(root, m.name, examples, timeout, mirror_tests(root, m.file)), todo)
        for mutant, (code, _) in zip(todo, results, strict=True):
            cache[mutant.name] = {"code": code, "change": [mutant.original, mutant.mutated]}
            found[mutant.name] = status_of(code)
            path.write_text(json.dumps(cache, indent=1, sort_keys=True), encoding="utf-8")
            print(f"  {found[mutant.name]:10} {mutant.name}")
    return found
