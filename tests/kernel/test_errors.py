"""The errors every refusal is made of: their codes and messages, the
kebab-case rule for codes and replay rules, and pickling with every
attribute (stores send errors between processes)."""

from __future__ import annotations

import pickle

import pytest

from planfold.kernel.errors import ConflictError, KernelError, PayloadError, ReplayError, is_kebab_case


@pytest.mark.parametrize(
    "error",
    [
        ReplayError(7, "seq-gap", "expected seq 7, found 9"),
        ConflictError("s1", 3, 5),
        PayloadError("'turn' must be an integer"),
        PayloadError("unknown operation 'x'", code="unknown-operation"),
    ],
)
def test_an_error_survives_pickling_with_every_attribute(error: KernelError) -> None:
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert (copy.args, copy.code, copy.message) == (error.args, error.code, error.message)
    assert vars(copy) == vars(error)
    assert str(copy) == str(error)


def test_a_conflict_says_both_seqs_and_keeps_them() -> None:
    err = ConflictError("s1", 3, 5)
    assert (err.session_id, err.expected_seq, err.actual_seq, err.code) == ("s1", 3, 5, "conflict")
    assert str(err) == "session 's1': expected last seq 3, but the log is at 5 (a concurrent writer appended first)"


def test_a_replay_error_says_where_and_why() -> None:
    err = ReplayError(4, "time-regressed", "at went back")
    assert (err.position, err.rule, err.detail, err.code) == (4, "time-regressed", "at went back", "replay-error")
    assert str(err) == err.message == "invalid log at seq 4 [time-regressed]: at went back"


def test_a_code_its_class_does_not_declare_or_a_rule_that_is_not_kebab_case_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match=r"^'my-code' is not a declared code of KernelError$"):
        KernelError("x", code="my-code")
    with pytest.raises(ValueError, match=r"^'unknown-phase' is not a declared code of PayloadError$"):
        PayloadError("x", code="unknown-phase")
    with pytest.raises(ValueError, match=r"^replay rule 'SeqGap' is not kebab-case$"):
        ReplayError(1, "SeqGap", "x")
    assert KernelError("plain").code == "kernel-error"
    assert PayloadError("coded", code="unknown-version").code == "unknown-version"
    assert PayloadError("named", code="malformed-payload").code == "malformed-payload"


@pytest.mark.parametrize(
    ("text", "kebab"),
    [
        ("seq-gap", True),
        ("a", True),
        ("a1-b2", True),
        ("Seq-gap", False),
        ("seq--gap", False),
        ("-a", False),
        ("", False),
    ],
)
def test_kebab_case_is_lower_case_words_joined_by_single_hyphens(text: str, kebab: bool) -> None:
    assert is_kebab_case(text) is kebab
