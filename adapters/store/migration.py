"""What the SQL stores' schema modules share: a forward migration step, the
report of a migration, and the refusal of a schema newer than the code
(``sqlite_schema`` and ``postgres_schema`` each keep their own steps and run
them their own way). A migration that ran steps is logged at INFO on
``planfold.adapters.store.migration`` (``logged``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from ..loggers import logger
from .base import SchemaTooNewError

__all__ = ["MigrationReport", "Step", "logged", "supported"]

_log = logger(__name__)

Conn = TypeVar("Conn")


@dataclass(frozen=True, slots=True)
class Step(Generic[Conn]):
    """One forward migration: ``apply`` takes a schema at ``version - 1`` to ``version``."""

    version: int
    name: str
    apply: Callable[[Conn], None]


@dataclass(frozen=True, slots=True)
class MigrationReport:
    """What ``migrate`` did: the versions before and after and the steps run."""

    from_version: int
    to_version: int
    applied: tuple[str, ...]


def supported(version: int, newest: int) -> int:
    """``version``, read from a store, unless it is newer than ``newest``, the
    newest this code knows: then ``SchemaTooNewError``, and the store is left
    untouched."""
    if version > newest:
        raise SchemaTooNewError(version, newest)
    return version


def logged(store: str, report: MigrationReport) -> MigrationReport:
    """``report``, logged when its migration ran any step (``store`` says
    which: ``SQLite``, ``PostgreSQL``)."""
    if report.applied:
        _log.info(
            "%s schema migrated from version %d to %d: %s",
            store, report.from_version, report.to_version, ", ".join(report.applied),
        )  # fmt: skip
    return report
