"""Replay every kept input through its target on every test run.

``corpus/<target>/`` holds the seeds and every input that once broke a
target (``crash-*``, written by the fuzz pass) or that is worth keeping
(``case-*``). A file is named after its content, so the same input is never
kept twice.

An ``open-*`` file still breaks its target: a bug that is reported and not
fixed yet. It is replayed as a strict expected failure, so the fix turns it
red until the file is renamed to ``crash-*``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz.harness import CORPUS, FuzzFinding, check, corpus_files, read_corpus_file
from tests.fuzz.targets import TARGETS, by_name

OPEN = pytest.mark.xfail(strict=True, raises=FuzzFinding, reason="open bug: rename the file to crash-* once fixed")
CASES = [
    pytest.param(
        target.name, path, id=f"{target.name}/{path.name}", marks=[OPEN] if path.name.startswith("open-") else []
    )
    for target in TARGETS
    for path in corpus_files(target.name)
]


@pytest.mark.parametrize(("name", "path"), CASES)
def test_corpus_input_keeps_the_contract(name: str, path: Path) -> None:
    check(by_name(name), read_corpus_file(path), look_past_known=False)


def test_corpus_files_are_named_by_their_role() -> None:
    roles = ("seed-", "case-", "crash-", "open-")
    odd = [path.name for target in TARGETS for path in corpus_files(target.name) if not path.name.startswith(roles)]
    assert not odd, f"corpus files named without a role prefix {roles}: {odd}"


def test_every_corpus_folder_belongs_to_a_target() -> None:
    names = {target.name for target in TARGETS}
    folders = {path.name for path in CORPUS.iterdir() if path.is_dir()}
    assert folders <= names, f"corpus folders with no target (never replayed): {sorted(folders - names)}"


def test_every_target_has_a_corpus() -> None:
    empty = [target.name for target in TARGETS if not corpus_files(target.name)]
    assert not empty, f"targets with no corpus: {empty}"
