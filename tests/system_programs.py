"""The programs of the machine some tests run, found or accounted for.

Theory of operation
-------------------
Five kinds of test need a program that pip does not install: Graphviz's
``dot`` (the machines' SVGs), a PostgreSQL server (the PostgreSQL store, on a
throwaway server of the tests' own, ``tests.pg_cluster``), Node 20 or later
with the npm packages of ``examples/`` (the JavaScript and TypeScript hosts of
``planfold serve`` and the TypeScript types generated from its OpenRPC
document) Chromium (the report's browser tests, ``tests.adapters.report.
browser``) and Go (the Go host of ``planfold serve`` in ``examples/go``,
standard library only). Each such test asks here for its program. On a developer's machine
a missing program skips the test, and the skip says what to install; CI sets
``PLANFOLD_REQUIRE_GRAPHVIZ``, ``PLANFOLD_REQUIRE_POSTGRES``,
``PLANFOLD_REQUIRE_NODE``, ``PLANFOLD_REQUIRE_CHROMIUM`` and
``PLANFOLD_REQUIRE_GO`` to 1, and then the
test fails instead, saying the same. A program that is there but broken is never a skip: the test runs and
fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Literal, NoReturn

import pytest

from tests.pg_cluster import ClusterError, bindir

__all__ = ["EXAMPLES", "REQUIRE", "chromium", "go", "graphviz", "missing", "node", "node_packages", "postgres"]

ROOT = Path(__file__).resolve().parents[1]
#: The examples' folder: the hosts, their package.json and package-lock.json.
EXAMPLES = ROOT / "examples"

System = Literal["graphviz", "postgres", "node", "chromium", "go"]

#: The variable that turns each system's skip into a failure.
REQUIRE: dict[System, str] = {
    "graphviz": "PLANFOLD_REQUIRE_GRAPHVIZ",
    "postgres": "PLANFOLD_REQUIRE_POSTGRES",
    "node": "PLANFOLD_REQUIRE_NODE",
    "chromium": "PLANFOLD_REQUIRE_CHROMIUM",
    "go": "PLANFOLD_REQUIRE_GO",
}


def missing(system: System, why: str) -> NoReturn:
    """Skip the running test because ``why`` (a program of ``system`` is not
    there), or fail it when the run requires ``system``."""
    variable = REQUIRE[system]
    if os.environ.get(variable) == "1":
        pytest.fail(f"{variable}=1 and {why}", pytrace=False)
    pytest.skip(f"{why} (CI installs it and sets {variable}=1)")


def graphviz() -> str:
    """The path of Graphviz's ``dot``."""
    found = shutil.which("dot")
    if found is None:
        missing("graphviz", "Graphviz's dot is not on the PATH: install Graphviz (Debian: apt-get install graphviz)")
    return found


def postgres() -> Path:
    """The folder of the PostgreSQL server's programs (``tests.pg_cluster.bindir``)."""
    try:
        return bindir()
    except ClusterError as exc:
        missing("postgres", str(exc))


def node() -> str:
    """The path of Node, version 20 or later."""
    found = shutil.which("node")
    if found is None:
        missing("node", "node is not on the PATH: install Node 20 or later")
    version = subprocess.run([found, "--version"], capture_output=True, text=True, check=True, timeout=60).stdout
    major = int(version.strip().lstrip("v").split(".")[0])
    if major < 20:
        missing("node", f"node is {version.strip()}: the examples need Node 20 or later")
    return found


def node_packages() -> Path:
    """``examples/node_modules`` with the packages ``package-lock.json`` pins
    (TypeScript, json-schema-to-typescript, Node's types)."""
    modules = EXAMPLES / "node_modules"
    for package in ("typescript", "json-schema-to-typescript", "@types/node"):
        if not (modules / package / "package.json").is_file():
            missing("node", f"{package} is not in examples/node_modules: run `npm ci` in examples/")
    return modules


def chromium() -> str:
    """The path of Chromium, with Playwright for Python there to drive it
    (``tests.adapters.report.browser``)."""
    from tests.adapters.report.browser import ChromiumMissingError, chromium_path, playwright_missing  # noqa: PLC0415

    try:
        found = chromium_path()
    except ChromiumMissingError as exc:
        missing("chromium", str(exc))
    why = playwright_missing()
    if why is not None:
        missing("chromium", why)
    return found


#: The oldest Go the Go host is written for (Debian 12's golang-go).
GO_MINIMUM = (1, 19)


def go() -> str:
    """The path of the Go toolchain's ``go``, version 1.19 or later."""
    found = shutil.which("go")
    if found is None:
        missing("go", "go is not on the PATH: install Go 1.19 or later (Debian: apt-get install golang-go)")
    version = subprocess.run([found, "env", "GOVERSION"], capture_output=True, text=True, check=True, timeout=60)
    numbers = version.stdout.strip().removeprefix("go").split(".")
    if tuple(int(part) for part in numbers[:2] if part.isdigit()) < GO_MINIMUM:
        missing("go", f"go is {version.stdout.strip()}: the Go host needs Go 1.19 or later")
    return found
