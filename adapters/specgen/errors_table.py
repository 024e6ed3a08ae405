"""The table of every error planfold raises and every code it carries.

Each error class declares its codes (``code``, and ``codes`` for the others an
instance may carry: ``PlanfoldError`` refuses an undeclared one), and its
docstring says when it is raised. This module reads both from the classes
themselves and writes ``specs/errors.md``; a test regenerates it and fails
when the committed table is stale, so the table cannot drift from the code.

    python -m planfold.adapters.specgen.errors_table specs
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import pkgutil
from collections.abc import Iterator, Sequence
from pathlib import Path

from ...kernel.errors import PlanfoldError

__all__ = ["error_classes", "error_table", "main"]

_PACKAGES = ("planfold.kernel", "planfold.adapters")


def _import_everything() -> None:
    for name in _PACKAGES:
        package = importlib.import_module(name)
        for info in pkgutil.walk_packages(package.__path__, f"{name}."):
            if not info.name.endswith("__main__"):
                importlib.import_module(info.name)


def _subclasses(cls: type[PlanfoldError]) -> Iterator[type[PlanfoldError]]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def error_classes() -> list[type[PlanfoldError]]:
    """Every error class of planfold (importing every module first), the root
    included, ordered by family and then by where it is defined."""
    _import_everything()
    found = {cls for cls in _subclasses(PlanfoldError) if cls.__module__.startswith(_PACKAGES)}
    return [PlanfoldError, *sorted(found, key=lambda c: (_family(c), c.__module__, c.__name__))]


def _family(cls: type[PlanfoldError]) -> int:
    """The kernel's errors first, then the adapters'."""
    return 0 if cls.__module__.startswith("planfold.kernel") else 1


def _codes(cls: type[PlanfoldError]) -> str:
    return ", ".join(f"`{code}`" for code in [cls.code, *sorted(cls.codes - {cls.code})])


def _when(cls: type[PlanfoldError]) -> str:
    doc = inspect.getdoc(cls) or ""
    return " ".join(doc.split("\n\n")[0].split()).replace("|", "\\|")


def error_table() -> str:
    """``specs/errors.md``: one row per error class."""
    lines = [
        "# Errors and their codes",
        "",
        "Generated from the error classes by `python -m planfold.adapters.specgen.errors_table specs`",
        "(`make diagrams`); do not edit by hand. `except PlanfoldError` catches every row;",
        "`KernelError` is the kernel's refusals, with one base per machine (`PlanError`,",
        "`GoalError`, `GateError`), and `AdapterError` the shell's. A code is stable and",
        "kebab-case; route on it, never on a message.",
        "",
        "| error | beneath | codes | raised when |",
        "|---|---|---|---|",
    ]
    for cls in error_classes():
        base = cls.__mro__[1].__name__ if cls is not PlanfoldError else "Exception"
        where = f"{cls.__module__}.{cls.__qualname__}"
        lines.append(f"| `{cls.__name__}` (`{where}`) | `{base}` | {_codes(cls)} | {_when(cls)} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write specs/errors.md from the error classes.")
    parser.add_argument("out_dir", help="the specs directory")
    args = parser.parse_args(argv)
    target = Path(args.out_dir) / "errors.md"
    target.write_text(error_table(), encoding="utf-8")
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
