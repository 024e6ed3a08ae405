"""specs/errors.md, the one table of planfold's errors and codes, is generated
from the error classes and kept fresh; every code in it is stable kebab-case."""

from __future__ import annotations

from pathlib import Path

from planfold.adapters.specgen.errors_table import error_classes, error_table
from planfold.kernel.errors import KernelError, PlanfoldError, is_kebab_case

ROOT = Path(__file__).resolve().parents[3]


def test_the_committed_error_table_is_the_one_the_classes_generate() -> None:
    committed = (ROOT / "specs" / "errors.md").read_text(encoding="utf-8")
    assert committed == error_table(), "specs/errors.md is stale: run `make diagrams` and commit it"


def test_every_error_class_is_a_row_with_its_codes() -> None:
    table = error_table()
    for cls in error_classes():
        row = next(line for line in table.splitlines() if line.startswith(f"| `{cls.__name__}` "))
        for code in {cls.code, *cls.codes}:
            assert f"`{code}`" in row, (cls, code)


def test_every_code_is_kebab_case_and_every_error_says_when_it_is_raised() -> None:
    for cls in error_classes():
        assert all(is_kebab_case(code) for code in {cls.code, *cls.codes}), cls
        assert cls.__doc__ and cls.__doc__.strip(), f"{cls.__name__} has no docstring"


def test_the_kernel_and_adapter_families_are_apart_under_one_root() -> None:
    classes = error_classes()
    kernel = [c for c in classes if c.__module__.startswith("planfold.kernel") and c is not PlanfoldError]
    adapters = [c for c in classes if c.__module__.startswith("planfold.adapters")]
    assert kernel and adapters
    assert all(issubclass(c, KernelError) for c in kernel)
    assert not any(issubclass(c, KernelError) for c in adapters)
    assert all(issubclass(c, PlanfoldError) for c in classes)


def test_the_readme_points_to_the_error_table() -> None:
    assert "specs/errors.md" in (ROOT / "README.md").read_text(encoding="utf-8")
