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

It leaves out, the same way, the mutants ``equivalent/*.toml`` lists (by
their description, in the JSON file ``PLANFOLD_MUTATION_EQUIVALENT`` points
to), as the recheck does: such a mutant survives every test mapped to its
function, which makes it the dearest mutant to test, and the score counts it
as equivalent whatever mutmut finds. An entry that no longer describes a
mutant (the code changed) matches nothing, so that mutant is tested and the
entry shows as stale.
"""

from __future__ import annotations

import ast
import json
import os
import sys
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

from tests.mutation.score import NAMESPACE, Mutant, describe, functions_of, split_name

__all__ = ["EQUIVALENT", "IMPORT_TIME", "SKIPPED", "Describer", "leaving_out", "main"]

#: The environment variable naming the JSON list of import-time functions.
IMPORT_TIME = "PLANFOLD_MUTATION_IMPORT_TIME"
#: The environment variable naming the JSON list of the listed equivalents'
#: keys (``Equivalent.key()``: file, function, line, mutant).
EQUIVALENT = "PLANFOLD_MUTATION_EQUIVALENT"
#: mutmut's exit code for a mutant it was told not to test.
SKIPPED = 34


def function_of(mutant: str) -> str:
    """The mangled function of a mutant name (``...x_f__mutmut_3`` -> ``...x_f``)."""
    return mutant.rsplit("__mutmut_", 1)[0]


class Describer:
    """A mutant's description (``Mutant.key()``) from the mutated file mutmut
    wrote for it, ``mutants/<path>`` below ``root``; each file is read once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._files: dict[str, tuple[list[str], dict[str, ast.FunctionDef]]] = {}

    def key(self, path: str, name: str) -> tuple[str, str, str, str]:
        if path not in self._files:
            lines = (self.root / "mutants" / path).read_text(encoding="utf-8").splitlines()
            self._files[path] = (lines, functions_of(ast.parse("\n".join(lines))))
        lines, defs = self._files[path]
        function, base = split_name(name)
        original, mutated = describe(lines, defs, base, name)
        file = Path(path).as_posix().removeprefix(NAMESPACE)
        return Mutant(name, "", file, function, original, mutated).key()


def leaving_out(
    collect: Callable[..., tuple[list[Any], Any]],
    functions: Collection[str],
    listed: Callable[[Any, str], bool] = lambda data, name: False,
) -> Callable[..., tuple[list[Any], Any]]:
    """mutmut's ``collect_source_file_mutation_data`` without the mutants of
    ``functions`` and those ``listed(data, name)`` says are listed as
    equivalent; each of those whose result is still unknown is saved as
    ``SKIPPED``. Its items are (mutation data, mutant name, result)."""

    def collected(*args: Any, **kwargs: Any) -> tuple[list[Any], Any]:
        mutants, by_path = collect(*args, **kwargs)
        kept = []
        for item in mutants:
            data, name, result = item
            if function_of(name) not in functions and not listed(data, name):
                kept.append(item)
            elif result is None:
                data.exit_code_by_key[name] = SKIPPED
                data.save()
        return kept, by_path

    return collected


def main(argv: Sequence[str]) -> None:
    import mutmut.__main__ as mutmut  # noqa: PLC0415 (mutmut sets its start method when first imported)

    path = os.environ.get(IMPORT_TIME)
    functions: frozenset[str] = frozenset()
    if path:
        with open(path, encoding="utf-8") as listing:
            functions = frozenset(json.load(listing))
    keys: frozenset[tuple[str, ...]] = frozenset()
    path = os.environ.get(EQUIVALENT)
    if path:
        with open(path, encoding="utf-8") as listing:
            keys = frozenset(tuple(key) for key in json.load(listing))
    if functions or keys:
        describer = Describer(Path.cwd())
        mutmut.collect_source_file_mutation_data = leaving_out(
            mutmut.collect_source_file_mutation_data,
            functions,
            lambda data, name: bool(keys) and describer.key(str(data.path), name) in keys,
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
