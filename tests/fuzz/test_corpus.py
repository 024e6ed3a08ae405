"""Replay every kept input through its target on every test run.

``corpus/<target>/`` holds the seeds and every input that once broke a
target (``crash-*``, written by the fuzz pass) or that is worth keeping
(``case-*``). A file is named after its content, so the same input is never
kept twice.

Every other file's outcome (what the entry point returned, or the exact
refusal: error class, code, message and context) is pinned in
``outcomes.json``, so the corpus also notices a changed result or message.
After an intended change, re-record with ``python -m tests.fuzz --record``.

An ``open-*`` file still breaks its target: a bug that is reported and not
fixed yet. It is replayed as a strict expected failure, so the fix turns it
red until the file is renamed to ``crash-*``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz.harness import (
    CORPUS,
    FuzzFinding,
    check,
    corpus_files,
    load_outcomes,
    outcome_digest,
    read_corpus_file,
)
from tests.fuzz.targets import TARGETS, by_name

OPEN = pytest.mark.xfail(strict=True, raises=FuzzFinding, reason="open bug: rename the file to crash-* once fixed")
CASES = [
    pytest.param(
        target.name, path, id=f"{target.name}/{path.name}", marks=[OPEN] if path.name.startswith("open-") else []
    )
    for target in TARGETS
    for path in corpus_files(target.name)
]


RECORDED = load_outcomes()


@pytest.mark.parametrize(("name", "path"), CASES)
def test_corpus_input_keeps_the_contract_and_its_outcome(name: str, path: Path) -> None:
    outcome = check(by_name(name), read_corpus_file(path), look_past_known=False)
    key = f"{name}/{path.name}"
    assert key in RECORDED, f"{key} has no recorded outcome: record it with `python -m tests.fuzz --record`"
    assert outcome_digest(outcome) == RECORDED[key], (
        f"the outcome of {key} changed; it is now:\n{outcome[:3000]}\n"
        "if that is intended, re-record with `python -m tests.fuzz --record`"
    )


def test_every_recorded_outcome_belongs_to_a_corpus_file() -> None:
    kept = {f"{target.name}/{path.name}" for target in TARGETS for path in corpus_files(target.name)}
    assert set(RECORDED) <= kept, f"outcomes recorded for missing files: {sorted(set(RECORDED) - kept)}"


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
