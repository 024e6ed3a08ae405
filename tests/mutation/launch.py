"""``python -m tests.mutation.launch ARGS``: ``mutmut ARGS``, leaving the
mutants of functions that run before any test to the fresh-interpreter
recheck (``import_time``).

mutmut forks its workers from a process that has already imported the
kernel, so a mutant of a function that runs at import time (or while the
tests are collected) is never switched on in them: mutmut can only find it
"survived", after running every test mapped to it. This launcher runs mutmut
in this process with one change: the list of mutants to test, once mutmut has
made it, leaves those out, and records each of them not decided yet as
``skipped`` (mutmut's code 34), which the score counts as not killed until
the recheck decides it. The functions are named (mangled as mutmut names
them) in the JSON file that ``PLANFOLD_MUTATION_IMPORT_TIME`` points to.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Collection, Sequence
from typing import Any

__all__ = ["IMPORT_TIME", "SKIPPED", "leaving_out", "main"]

#: The environment variable naming the JSON list of import-time functions.
IMPORT_TIME = "PLANFOLD_MUTATION_IMPORT_TIME"
#: mutmut's exit code for a mutant it was told not to test.
SKIPPED = 34


def function_of(mutant: str) -> str:
    """The mangled function of a mutant name (``...x_f__mutmut_3`` -> ``...x_f``)."""
    return mutant.rsplit("__mutmut_", 1)[0]


def leaving_out(
    collect: Callable[..., tuple[list[Any], Any]], functions: Collection[str]
) -> Callable[..., tuple[list[Any], Any]]:
    """mutmut's ``collect_source_file_mutation_data`` without the mutants of
    ``functions``; each of those whose result is still unknown is saved as
    ``SKIPPED``. Its items are (mutation data, mutant name, result)."""

    def collected(*args: Any, **kwargs: Any) -> tuple[list[Any], Any]:
        mutants, by_path = collect(*args, **kwargs)
        kept = []
        for item in mutants:
            data, name, result = item
            if function_of(name) not in functions:
                kept.append(item)
            elif result is None:
                data.exit_code_by_key[name] = SKIPPED
                data.save()
        return kept, by_path

    return collected


def main(argv: Sequence[str]) -> None:
    import mutmut.__main__ as mutmut  # noqa: PLC0415 (mutmut sets its start method when first imported)

    path = os.environ.get(IMPORT_TIME)
    if path:
        with open(path, encoding="utf-8") as listing:
            functions = frozenset(json.load(listing))
        mutmut.collect_source_file_mutation_data = leaving_out(
            mutmut.collect_source_file_mutation_data, functions
        )
    # This process imported the checkout's own tests package (as the parent
    # of this module); mutmut runs pytest in-process on the copy under
    # mutants/, whose conftest would then resolve against the checkout's
    # package and be refused as a mismatch. Forget it: pytest imports the
    # copy's.
    for name in [name for name in sys.modules if name == "tests" or name.startswith("tests.")]:
        del sys.modules[name]
    mutmut.cli(args=list(argv), prog_name="mutmut")


if __name__ == "__main__":
    main(sys.argv[1:])
