"""Opening a store by its target (``adapters.store.opener``): a PostgreSQL
URL without the optional driver installed is the caller's to fix, and says
which extra to install."""

from __future__ import annotations

import pytest

from planfold.adapters.store.base import InvalidRequestError
from planfold.adapters.store.opener import postgres_extra


def test_a_missing_postgres_driver_is_an_invalid_request_that_names_the_extra() -> None:
    expected = r"pip install 'planfold\[postgres\]' \(No module named 'psycopg'\)"
    with pytest.raises(InvalidRequestError, match=expected), postgres_extra():
        raise ImportError("No module named 'psycopg'")


def test_an_import_that_works_passes_through_untouched() -> None:
    with postgres_extra():
        from planfold.adapters.store.postgres import PostgresStore  # noqa: PLC0415

    assert PostgresStore.__name__ == "PostgresStore"
