"""The pytest plugin of mutation runs: ``python -m tests.mutation run`` loads
it into every pytest run of mutmut (through ``PYTEST_ADDOPTS``).

Cold caches. mutmut tests each mutant in a process forked from one that has
already run every test, so every cache the kernel fills on first use (the
payload readers it compiles, the session's table of steps, ``functools``
caches) is full, built by the unmutated code: a mutant of a function that
builds a cache entry could never act. The run lists the kernel's caches (the
module-level private dicts that are empty once every kernel module is
imported, and the ``functools`` caches; see ``import_time.kernel_caches``) in
``PLANFOLD_MUTATION_CACHES``, and every test session starts by emptying
them, so the entries are built again with the mutant switched on. The clean
run goes through the same start, so a dict that is not a cache shows up
there as a failing test.

Which tests a mutant is tried against. mutmut runs a mutant only against the
tests that called its function in its stats run. A function that only runs
while a cache entry is built (a payload reader's builder, say) would be
recorded for the first test that needed the entry and for no other, since
every later test finds the entry built; its mutants would then "survive"
tests that would have killed them. So in the stats run the caches are emptied
before every test, and each such function is recorded for every test that
needs what it builds.

Child processes. The run puts the mutated tree first on ``PYTHONPATH``, so a
process a test starts (``python -m planfold ...``, a program written to a
temporary folder) imports the mutated kernel and, through the inherited
``MUTANT_UNDER_TEST``, has the same mutant switched on as its test. In
mutmut's stats run that variable says ``stats``: the mutated functions then
record themselves in mutmut's state, which reads mutmut's configuration from
the working directory, and a child working anywhere else fails. The test
process keeps its own copy of the mode (mutmut falls back to it when the
variable is gone), so the variable is dropped for the stats run only;
children then run the kernel's original functions, which is all that run
needs."""

from __future__ import annotations

import os
import sys

import pytest

#: The variable naming the caches to empty: ``module:name`` entries separated by spaces.
CACHES = "PLANFOLD_MUTATION_CACHES"


def empty_caches(names: str) -> None:
    """Empty every cache ``names`` lists whose module is loaded."""
    for entry in names.split():
        module_name, _, attribute = entry.partition(":")
        module = sys.modules.get(module_name)
        cache = getattr(module, attribute, None)
        if callable(getattr(cache, "cache_clear", None)):
            cache.cache_clear()  # type: ignore[union-attr]
        elif isinstance(cache, dict):
            cache.clear()


#: Whether this pytest run is mutmut's stats run (set when it is configured).
_STATS: list[bool] = [False]


def pytest_configure(config: pytest.Config) -> None:
    empty_caches(os.environ.get(CACHES, ""))
    if os.environ.get("MUTANT_UNDER_TEST") == "stats":
        _STATS[0] = True
        del os.environ["MUTANT_UNDER_TEST"]


def pytest_runtest_setup(item: pytest.Item) -> None:
    if _STATS[0]:
        empty_caches(os.environ.get(CACHES, ""))
