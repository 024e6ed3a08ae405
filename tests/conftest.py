"""Hypothesis profiles, chosen with HYPOTHESIS_PROFILE: ``default`` is fast for
local runs, ``ci`` runs more examples, ``fuzz`` is for long runs. Proxy
settings of the environment are removed from every test, and so are
``OPENAI_API_KEY`` and ``OPENAI_BASE_URL``: the model clients honour them, and
the tests' servers are on loopback (the proxy and default tests set their
own). ``pg_cluster`` is a throwaway PostgreSQL server for the whole test
session, started by the first test that asks for it; ``pg_url`` gives a test
an empty schema of its own on it. Where no PostgreSQL server is installed the
tests that use it are skipped, or fail under PLANFOLD_REQUIRE_POSTGRES=1 (as
tests that need Graphviz or Node do: ``tests.system_programs``)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from tests.pg_cluster import Cluster
from tests.system_programs import postgres

settings.register_profile("default", max_examples=60, deadline=None)
settings.register_profile(
    "ci",
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile(
    "fuzz",
    max_examples=20_000,
    stateful_step_count=100,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    print_blob=True,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(autouse=True)
def _no_proxy_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in list(os.environ):
        if name.lower() in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "openai_api_key", "openai_base_url"):
            monkeypatch.delenv(name)
    yield


# --------------------------------------------------------------------------
# PostgreSQL: one throwaway server per test session, started on first use


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """A PostgreSQL server of the test session's own (see ``tests.pg_cluster``):
    skipped where none is installed (``tests.system_programs``), failed when an
    installed server cannot start."""
    postgres()
    with Cluster() as cluster:
        yield cluster


@pytest.fixture
def pg_url(pg_cluster: Cluster) -> Iterator[str]:
    """A URL whose ``search_path`` is a fresh schema, dropped after the test."""
    schema = f"t_{uuid.uuid4().hex[:16]}"
    yield pg_cluster.schema_url(schema)
    pg_cluster.drop_schema(schema)


# --------------------------------------------------------------------------
# CI: PLANFOLD_REQUIRE_POSTGRES=1 fails a run in which any test was skipped or
# no test that uses the PostgreSQL server passed (a server that cannot start
# fails its tests; this catches them being skipped or left out instead).

# PLANFOLD_REQUIRE_CHROMIUM=1 does the same for the report's browser tests
# (tests/adapters/report/test_browser.py, whose ``chromium`` fixture fails
# under it when the browser is missing): CI fails unless one of them passed.

_ran: dict[str, int] = {"skipped": 0, "postgres": 0, "chromium": 0}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "pg_cluster" in getattr(item, "fixturenames", ()):
            item.user_properties.append(("uses_postgres", True))
        if "chromium" in getattr(item, "fixturenames", ()):
            item.user_properties.append(("uses_chromium", True))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped:
        _ran["skipped"] += 1
    elif report.when == "call" and report.passed:
        if ("uses_postgres", True) in report.user_properties:
            _ran["postgres"] += 1
        if ("uses_chromium", True) in report.user_properties:
            _ran["chromium"] += 1


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if exitstatus != 0:
        return
    required = [(name, what) for name, what in (("POSTGRES", "PostgreSQL"), ("CHROMIUM", "Chromium"))
                if os.environ.get(f"PLANFOLD_REQUIRE_{name}") == "1"]
    for name, what in required:
        problems = []
        if _ran["skipped"]:
            problems.append(f"{_ran['skipped']} test(s) were skipped")
        if not _ran[name.lower()]:
            problems.append(f"no {what} test ran")
        if problems:
            session.config.get_terminal_writer().line(f"PLANFOLD_REQUIRE_{name}: {'; '.join(problems)}", red=True)
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
