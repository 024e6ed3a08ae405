"""A pytest plugin for mutation runs: ``python -m tests.mutation run`` loads
it into every pytest run of mutmut (through ``PYTEST_ADDOPTS``), so that a
process a test starts runs the mutated kernel without breaking mutmut's
test-mapping run.

The run puts the mutated tree first on ``PYTHONPATH``, so a child process
(``python -m planfold ...``, a program written to a temporary folder) imports
the mutated kernel and, through the inherited ``MUTANT_UNDER_TEST``, has the
same mutant switched on as its test. In mutmut's stats run that variable
says ``stats``: the mutated functions then record themselves in mutmut's
state, which reads mutmut's configuration from the working directory, and a
child working anywhere else fails. The test process keeps its own copy of
the mode (mutmut falls back to it when the variable is gone), so the variable
is dropped for the stats run only; children then run the kernel's original
functions, which is all that run needs."""

from __future__ import annotations

import os

import pytest


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("MUTANT_UNDER_TEST") == "stats":
        del os.environ["MUTANT_UNDER_TEST"]
