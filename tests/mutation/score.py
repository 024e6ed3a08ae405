"""Read mutmut's results and compute the mutation score of ``kernel/``.

mutmut mutates the kernel where the namespace links it,
``src/planfold/kernel`` (``source_paths`` in pyproject.toml), so a mutant is
named ``planfold.kernel.<module>.x_<function>__mutmut_<n>``. It keeps, for
every mutated source file, ``mutants/<file>.meta`` (the exit code of the test
run against each mutant) next to ``mutants/<file>`` (the file with every
mutant written out as a function of its own). A mutant is described here by
where it is and what it changes: the file (named by its place in the
repository, ``kernel/plan/mode.py``), the function,
the original line(s) and the mutated line(s). That description survives
re-numbering (mutmut numbers mutants per function, so an edit shifts the
numbers), and it is how ``equivalent/*.toml`` lists the mutants that cannot
change behaviour, each with the reason.

The score is killed / (all - equivalent). Killed means the tests failed (or
timed out, or crashed) with the mutant in place; survived, no tests,
suspicious and not checked all count against the score.
"""

from __future__ import annotations

import ast
import difflib
import json
import tomllib
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "KILLED",
    "Equivalent",
    "Mutant",
    "Score",
    "describe",
    "functions_of",
    "load_equivalents",
    "load_mutants",
    "module_of",
    "score",
    "split_name",
    "status_of",
]

SEPARATOR = "ǁ"  # mutmut's separator in the mangled names of methods

#: Where mutmut reads the kernel, relative to the checkout: the namespace's
#: link to ``kernel/``. A file below it is named by what follows
#: ``src/planfold/`` (``kernel/log.py``), which is also its repository path.
NAMESPACE = "src/planfold/"
KERNEL_SOURCE = NAMESPACE + "kernel"


def module_of(file: str) -> str:
    """The module mutmut names after kernel ``file``:
    ``kernel/plan/mode.py`` -> ``planfold.kernel.plan.mode``, and a
    package's ``__init__.py`` -> the package."""
    dotted = "planfold." + file.removesuffix(".py").replace("/", ".")
    return dotted.removesuffix(".__init__")

#: mutmut's exit codes, by the status they mean.
_STATUS_BY_CODE: Mapping[int | None, str] = {
    0: "survived",
    1: "killed",
    3: "killed",
    2: "interrupted",
    5: "no tests",
    33: "no tests",
    34: "skipped",
    35: "suspicious",
    36: "timeout",
    24: "timeout",
    -24: "timeout",
    152: "timeout",
    255: "timeout",
    37: "caught by type check",
    -11: "segfault",
    -9: "segfault",
    None: "not checked",
}

#: Statuses in which the tests noticed the mutant.
KILLED = frozenset({"killed", "timeout", "caught by type check", "segfault"})


def status_of(code: int | None) -> str:
    """The status mutmut's exit ``code`` stands for (unknown codes are
    suspicious, as mutmut itself treats them)."""
    return _STATUS_BY_CODE.get(code, "suspicious")


@dataclass(frozen=True)
class Mutant:
    """One mutant: its mutmut name and status, and what it changes."""

    name: str
    status: str
    file: str
    function: str
    original: str
    mutated: str

    @property
    def killed(self) -> bool:
        return self.status in KILLED

    def key(self) -> tuple[str, str, str, str]:
        return (self.file, self.function, _norm(self.original), _norm(self.mutated))

    def show(self) -> str:
        return f"{self.file}::{self.function} [{self.status}] {self.name}\n  - {self.original}\n  + {self.mutated}"


def _norm(text: str) -> str:
    return "\n".join(" ".join(line.split()) for line in text.strip().splitlines())


def split_name(name: str) -> tuple[str, str]:
    """``planfold.kernel.log.x_check_envelope__mutmut_3`` -> (``check_envelope``,
    ``x_check_envelope``); methods come out as ``Class.method``."""
    mangled = name.rpartition(".")[2]
    base = mangled.rsplit("__mutmut_", 1)[0]
    if base.startswith("x" + SEPARATOR):
        _, cls, method = base.split(SEPARATOR)
        return f"{cls}.{method}", base
    return base.removeprefix("x_"), base


def functions_of(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    return {node.name: node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}


def describe(lines: list[str], defs: Mapping[str, ast.FunctionDef], base: str, name: str) -> tuple[str, str]:
    """The original and the mutated line(s) of mutant ``name`` (whose
    function's mangled name is ``base``) in a mutated file's ``lines``."""
    suffix = name.rsplit("__mutmut_", 1)[1]
    orig, mutant = defs[f"{base}__mutmut_orig"], defs[f"{base}__mutmut_{suffix}"]

    def body(node: ast.FunctionDef) -> list[str]:
        # Skip the signature line(s), which differ by name only; keep the
        # default values, which mutmut also mutates, via the whole header.
        text = lines[node.lineno - 1 : node.end_lineno]
        text[0] = text[0].replace(node.name, "FUNCTION", 1)
        return [line.strip() for line in text]

    a, b = body(orig), body(mutant)
    removed: list[str] = []
    added: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag != "equal":
            removed.extend(a[i1:i2])
            added.extend(b[j1:j2])
    return "\n".join(removed), "\n".join(added)


def load_mutants(root: Path) -> list[Mutant]:
    """Every mutant of the kernel mutmut has recorded under ``root/mutants``."""
    out: list[Mutant] = []
    for meta in sorted((root / "mutants" / KERNEL_SOURCE).rglob("*.py.meta")):
        codes: dict[str, int | None] = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
        if not codes:
            continue
        source = meta.with_suffix("")
        file = source.relative_to(root / "mutants" / NAMESPACE).as_posix()
        lines = source.read_text(encoding="utf-8").splitlines()
        defs = functions_of(ast.parse("\n".join(lines)))
        for name, code in sorted(codes.items()):
            function, base = split_name(name)
            original, mutated = describe(lines, defs, base, name)
            out.append(Mutant(name, status_of(code), file, function, original, mutated))
    return out


@dataclass(frozen=True)
class Equivalent:
    """A mutant that cannot change behaviour, and why."""

    file: str
    function: str
    line: str
    mutant: str
    reason: str

    def key(self) -> tuple[str, str, str, str]:
        return (self.file, self.function, _norm(self.line), _norm(self.mutant))


def load_equivalents(path: Path) -> list[Equivalent]:
    """The entries of one TOML file, or of every ``*.toml`` below a directory
    (in path order); each must give a reason. Raises ``ValueError`` for an
    entry without one."""
    files = sorted(path.rglob("*.toml")) if path.is_dir() else [path]
    entries = [
        Equivalent(**entry)
        for file in files
        for entry in tomllib.loads(file.read_text(encoding="utf-8")).get("equivalent", [])
    ]
    for entry in entries:
        if len(entry.reason.split()) < 4:
            raise ValueError(f"equivalent mutant in {entry.file}::{entry.function} needs a real reason")
    return entries


@dataclass(frozen=True)
class Score:
    """The result: counts per file and status, and the mutants by class."""

    by_file: Mapping[str, Counter[str]]
    killed: int
    equivalent: tuple[Mutant, ...]
    not_killed: tuple[Mutant, ...]
    stale: tuple[Equivalent, ...]

    @property
    def total(self) -> int:
        return sum(sum(counts.values()) for counts in self.by_file.values())

    @property
    def non_equivalent(self) -> int:
        return self.total - len(self.equivalent)

    @property
    def percent(self) -> float:
        return 100.0 * self.killed / self.non_equivalent if self.non_equivalent else 100.0


def score(mutants: Iterable[Mutant], equivalents: Iterable[Equivalent]) -> Score:
    """Score ``mutants``: a surviving mutant that matches an entry of
    ``equivalents`` is equivalent; an entry that matches no survivor is
    stale (the code changed, or a test now kills it)."""
    listed = {entry.key(): entry for entry in equivalents}
    used: set[tuple[str, str, str, str]] = set()
    by_file: dict[str, Counter[str]] = {}
    killed = 0
    equivalent: list[Mutant] = []
    not_killed: list[Mutant] = []
    for mutant in mutants:
        counts = by_file.setdefault(mutant.file, Counter())
        if mutant.killed:
            killed += 1
            counts["killed"] += 1
        elif mutant.key() in listed:
            used.add(mutant.key())
            equivalent.append(mutant)
            counts["equivalent"] += 1
        else:
            not_killed.append(mutant)
            counts[mutant.status] += 1
    stale = tuple(entry for key, entry in listed.items() if key not in used)
    return Score(by_file, killed, tuple(equivalent), tuple(not_killed), stale)
