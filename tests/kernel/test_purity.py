"""The kernel imports nothing outside the standard library, nothing from
adapters/, and touches no clock, randomness or I/O."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

KERNEL = Path(__file__).resolve().parents[2] / "kernel"
STDLIB = frozenset(sys.stdlib_module_names)
# Standard-library modules that would smuggle in a clock, randomness, I/O or
# process state: a pure reducer has no use for any of them.
IMPURE = frozenset(
    {
        "asyncio", "datetime", "io", "logging", "multiprocessing", "os", "pathlib",
        "random", "secrets", "shutil", "socket", "sqlite3", "subprocess", "sys",
        "tempfile", "threading", "time", "urllib", "uuid",
    }
)


def kernel_modules() -> list[Path]:
    return sorted(KERNEL.rglob("*.py"))


def imported_roots(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name.split(".")[0]) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import: inside the kernel by construction
                continue
            found.append((node.lineno, (node.module or "").split(".")[0]))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in {"__import__", "open", "eval", "exec"}
        ):
            found.append((node.lineno, f"<call {node.func.id}>"))
    return found


#: The modules that may call ``exec``: the typed reader makes a reading
#: function per payload type from the type's own fields (no input ever
#: reaches the source it runs).
EXEC_ALLOWED = frozenset({"payload.py"})


def violations(path: Path) -> list[str]:
    out = []
    for line, root in imported_roots(path):
        if root == "kernel" or (root in STDLIB and root not in IMPURE):
            continue
        if root == "<call exec>" and path.name in EXEC_ALLOWED and path.parent == KERNEL:
            continue
        out.append(f"{path.name}:{line}: {root}")
    return out


def test_kernel_has_modules() -> None:
    assert len(kernel_modules()) >= 5


@pytest.mark.parametrize("path", kernel_modules(), ids=lambda p: p.name)
def test_kernel_module_is_pure(path: Path) -> None:
    assert violations(path) == []


def test_purity_check_catches_forbidden_imports(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import msgspec\nfrom adapters import cli\nimport time\nfrom os import path\n"
        "import json\nfrom kernel.log import Event\nx = open('f')\n"
    )
    assert violations(bad) == [
        "bad.py:1: msgspec",
        "bad.py:2: adapters",
        "bad.py:3: time",
        "bad.py:4: os",
        "bad.py:7: <call open>",
    ]
