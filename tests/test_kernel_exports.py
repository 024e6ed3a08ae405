"""kernel/__init__.py resolves its public names lazily; the runtime table and
the names type checkers see must be the same, and every one must resolve."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import kernel

INIT = Path(kernel.__file__)


def type_checking_imports() -> dict[str, tuple[str, str]]:
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    out: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module is not None
                for alias in imp.names:
                    out[alias.asname or alias.name] = (imp.module, alias.name)
    return out


def test_type_checking_names_equal_the_runtime_table() -> None:
    static = type_checking_imports()
    assert static == kernel._WHERE
    assert sorted(static) == kernel.__all__


def test_every_public_name_resolves_to_its_module_attribute() -> None:
    for name, (module, attr) in kernel._WHERE.items():
        assert getattr(kernel, name) is getattr(importlib.import_module(module), attr), name


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        kernel.no_such_name  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_importing_kernel_loads_no_machine_until_used() -> None:
    code = (
        "import sys, kernel; "
        "print(sorted(m for m in sys.modules if m.startswith('kernel.'))); "
        "kernel.fold_session; "
        "print('kernel.session' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["[]", "True"]
