"""Each adapter package but the command line (whose one public name, ``main``,
is also its module's) re-exports its public names: a static ``__all__``
whose every name resolves, to the object its module defines, and importing
one module of a package imports none of its siblings (the names load on
first use)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

PACKAGES = ("llm", "report", "runtime", "serve", "specgen", "store")


@pytest.mark.parametrize("package", PACKAGES)
def test_every_name_a_package_exports_is_the_object_its_module_defines(package: str) -> None:
    module = importlib.import_module(f"planfold.adapters.{package}")
    names = module.__all__
    assert isinstance(names, list) and len(set(names)) == len(names) and names
    for name in names:
        value = getattr(module, name)
        owner = getattr(value, "__module__", None)
        if owner is not None and owner.startswith(f"planfold.adapters.{package}."):
            assert getattr(importlib.import_module(owner), name, value) is value
    assert set(names) <= set(dir(module))
    with pytest.raises(AttributeError):
        getattr(module, "no_such_name")  # noqa: B009


def test_the_top_level_and_the_package_names_are_the_same_objects() -> None:
    import planfold  # noqa: PLC0415
    from planfold.adapters import runtime, store  # noqa: PLC0415

    assert planfold.Runtime is runtime.Runtime and planfold.open_store is store.open_store


def test_the_store_package_keeps_the_helpers_its_modules_share_to_themselves() -> None:
    from planfold.adapters import store  # noqa: PLC0415

    shared_inside = {"Opening", "read_view", "view_statements", "write_statements", "outlast", "has_table"}
    assert shared_inside.isdisjoint(store.__all__)
    assert shared_inside.isdisjoint(dir(store))


def test_importing_one_module_of_a_package_imports_none_of_its_siblings() -> None:
    probe = (
        "import sys, planfold.adapters.runtime.machine as m;"
        "print(sorted(n for n in sys.modules if n.startswith('planfold.adapters.runtime.')))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded = eval(done.stdout)  # a printed list of module names
    assert "planfold.adapters.runtime.aio" not in loaded and "planfold.adapters.runtime.shell_executor" not in loaded
