"""Lazy re-exports for the adapter packages: each package's ``__init__``
lists its public names statically (``__all__``), and a type checker reads
them from the modules named in its ``TYPE_CHECKING`` imports; at run time
``lazy_names`` imports a name's module only when the name is first used, so
importing one module of a package never imports the others (nor the
optional drivers some of them need, such as psycopg)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str, namespace: dict[str, Any], where: Mapping[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` (whose globals are
    ``namespace``): a name of ``where`` comes from the module it names (and
    is kept), anything else is ``AttributeError``."""

    def getattr_(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *where})

    return getattr_, dir_
