"""Lazy re-exports for the adapter packages: a package's ``__init__`` names
its public modules; type checkers read ``from .module import *`` of each
(and ``__all__`` joined from theirs), while at run time ``lazy_modules``
imports them only when one of the package's names is first asked for, so
importing one module of a package never imports the others. A module whose
optional driver is not installed (psycopg for the PostgreSQL store) is left
out until one of its names is asked for, which then raises its
``ImportError``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from importlib import import_module
from types import ModuleType
from typing import Any

__all__ = ["lazy_modules"]


def lazy_modules(
    package: str, namespace: dict[str, Any], modules: Sequence[str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` (whose globals are
    ``namespace``), re-exporting the ``__all__`` of each of ``modules``."""
    missing: dict[str, ImportError] = {}

    def loaded() -> list[ModuleType]:
        found = []
        for name in modules:
            try:
                found.append(import_module(f"{package}.{name}"))
            except ImportError as exc:  # an optional driver that is not installed
                missing[name] = exc
        return found

    def getattr_(name: str) -> object:
        present = loaded()
        if name == "__all__":
            value: object = [each for module in present for each in module.__all__]
        else:
            owner = next((module for module in present if name in module.__all__), None)
            if owner is None:
                if missing:
                    raise AttributeError(
                        f"module {package!r} has no attribute {name!r} (not loaded: {sorted(missing)})"
                    )
                raise AttributeError(f"module {package!r} has no attribute {name!r}")
            value = getattr(owner, name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *(each for module in loaded() for each in module.__all__)})

    return getattr_, dir_
