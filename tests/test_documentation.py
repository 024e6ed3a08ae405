"""What the documentation names exists: every dotted module or attribute a
module docstring of the package names (``planfold.adapters.store.base``,
``kernel.turn.record_reply``, ``adapters.runtime.machine``), and every
``planfold.`` name in ``specs/README.md``, resolves to a module of this
checkout or an attribute of one."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: A dotted name of the package: with its ``planfold.`` prefix, or from the
#: top of one of its two folders.
NAME = re.compile(r"\b(planfold(?:\.\w+)+|(?:kernel|adapters)\.\w+(?:\.\w+)*)")


def resolves(name: str) -> bool:
    """Whether ``name`` (``planfold.`` prefixed or not) is a module of the
    package, or an attribute path below one."""
    parts = (name if name.startswith("planfold.") else f"planfold.{name}").split(".")
    for split in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attr in parts[split:]:
            if not hasattr(found, attr):
                return False
            found = getattr(found, attr)
        return True
    return False


def _docstring_names() -> list[tuple[str, str]]:
    named: list[tuple[str, str]] = []
    for folder in ("kernel", "adapters"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
            named += [(str(path.relative_to(ROOT)), name.rstrip(".")) for name in NAME.findall(doc)]
    return named


def test_the_resolver_tells_a_real_name_from_a_made_up_one() -> None:
    assert resolves("planfold.kernel.turn.record_reply") and resolves("adapters.runtime.machine.StepMachine")
    assert not resolves("kernel.plan_status") and not resolves("planfold.adapters.runtime.machine.NoSuchThing")


def test_module_docstrings_name_many_modules() -> None:
    assert len(_docstring_names()) > 50


@pytest.mark.parametrize(("where", "name"), _docstring_names())
def test_every_dotted_name_in_a_module_docstring_resolves(where: str, name: str) -> None:
    assert resolves(name), f"{where} names {name}, which does not exist"


def test_every_planfold_name_in_the_specs_readme_resolves() -> None:
    text = (ROOT / "specs" / "README.md").read_text(encoding="utf-8")
    names = [name.rstrip(".") for name in NAME.findall(text)]
    assert names
    assert [name for name in names if not resolves(name)] == []
