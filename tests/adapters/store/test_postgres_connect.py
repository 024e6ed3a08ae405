"""Opening a PostgreSQL store fails fast on a wrong URL: a wrong database,
user, port or host is ``store-unreachable`` with the driver's own message
within the connect timeout, not a pool timeout, on one readable line; the
URL's password never shows in the error."""

from __future__ import annotations

import time
from urllib.parse import quote

import pytest

from planfold.adapters.store.base import InvalidRequestError, StoreUnavailableError, StoreUnreachableError
from planfold.adapters.store.opener import open_store
from planfold.adapters.store.postgres import PostgresStore
from planfold.adapters.store.postgres_schema import driver_message
from tests.pg_cluster import Cluster


def _wrong(cluster: Cluster, what: str) -> tuple[str, str]:
    """A URL with one thing wrong, and what the driver says about it."""
    if what == "database":
        return cluster.url("no_such_database"), 'database "no_such_database" does not exist'
    if what == "user":
        return cluster.url().replace("postgres@", "nobody@"), 'role "nobody" does not exist'
    if what == "port":
        return cluster.url(port="1"), "No such file or directory"
    host = quote(str(cluster.root / "elsewhere"), safe="")
    return f"postgresql://postgres@/postgres?host={host}", "No such file or directory"


@pytest.mark.parametrize("what", ["database", "user", "port", "host"])
def test_a_wrong_url_fails_at_once_with_the_drivers_message(pg_cluster: Cluster, what: str) -> None:
    url, said = _wrong(pg_cluster, what)
    started = time.monotonic()
    with pytest.raises(StoreUnreachableError) as caught:
        open_store(url, connect_timeout=1)
    assert time.monotonic() - started < 2.0  # not a pool timeout (30 s)
    err = caught.value
    assert err.code == "store-unreachable" and err.outcome == "not-applied"
    assert isinstance(err, StoreUnavailableError)
    assert said in err.message
    assert "\n" not in err.message and "\t" not in err.message and "\\n" not in err.message


def test_a_refused_connection_reads_as_one_line_with_the_drivers_hint(pg_cluster: Cluster) -> None:
    with pytest.raises(StoreUnreachableError) as caught:
        open_store(pg_cluster.url(port="1"), connect_timeout=1)
    detail = caught.value.message.partition(": cannot connect to ")[2]
    assert "No such file or directory. Is the server running locally" in detail
    assert detail.count("\n") == 0 and "  " not in detail


def test_the_drivers_message_keeps_each_address_and_joins_each_hint_to_its_line() -> None:
    said = Exception(
        'connection failed: connection to server at "10.0.0.1", port 5432 failed: Connection refused\n'
        "\tIs the server running on that host and accepting TCP/IP connections?\n"
        'connection to server at "10.0.0.2", port 5432 failed: timeout expired\n'
        "\n"
    )
    assert driver_message(said) == (
        'connection failed: connection to server at "10.0.0.1", port 5432 failed: Connection refused. '
        "Is the server running on that host and accepting TCP/IP connections?; "
        'connection to server at "10.0.0.2", port 5432 failed: timeout expired'
    )
    assert driver_message(Exception("FATAL: no such role:\n\tcheck the URL.\n\tthen retry")) == (
        "FATAL: no such role: check the URL. then retry"
    )
    assert driver_message(Exception("  one line  ")) == "one line"
    assert driver_message(Exception("")) == ""


def test_the_password_of_an_unreachable_url_never_shows(pg_cluster: Cluster) -> None:
    url = pg_cluster.url("no_such_database").replace("postgres@", "postgres:hunter2@")
    with pytest.raises(StoreUnreachableError) as caught:
        open_store(url, read_only=True, connect_timeout=1)
    assert "hunter2" not in caught.value.message and "postgres:***@" in caught.value.message


@pytest.mark.parametrize("seconds", [0, -1, 3601, float("nan"), True])
def test_a_connect_timeout_out_of_range_is_refused(seconds: float) -> None:
    with pytest.raises(InvalidRequestError, match="connect_timeout"):
        PostgresStore("postgresql://postgres@/postgres", connect_timeout=seconds)


def test_a_right_url_opens_within_the_connect_timeout(pg_url: str) -> None:
    with open_store(pg_url, connect_timeout=1) as store:
        assert store.session_ids() == ()


def test_an_operation_that_cannot_get_a_connection_fails_after_the_store_timeout(pg_cluster: Cluster) -> None:
    """What a request meets during an outage: no connection to be had. With
    every pooled connection taken, the next operation is refused after the
    store timeout (serve's ``--store-timeout``), not the default 30 s."""
    store = open_store(pg_cluster.url(), timeout=1.0)
    assert isinstance(store, PostgresStore)
    backend = store.backend
    assert backend.timeout == 1.0
    pool = backend._current_pool()
    held = [pool.getconn(timeout=5) for _ in range(backend.pool_size)]
    try:
        started = time.monotonic()
        with pytest.raises(StoreUnavailableError):
            store.head("s")
        assert time.monotonic() - started < 10
    finally:
        for conn in held:
            pool.putconn(conn)
        store.close()
