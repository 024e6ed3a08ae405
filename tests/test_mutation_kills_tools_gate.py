"""Tests that pin what mutation testing found unpinned in tool values and
the gate's use of deployment classifiers: a bad classification or
classifier is refused with its exact error, and a classifier that raises,
answers nonsense or says no never lets a call through, while the first
read-only answer does."""

from __future__ import annotations

import pytest

from planfold.kernel.tools.gate import Allowed, GatePolicy, Refused, decide
from planfold.kernel.tools.spec import CallClassifier, Classification, ToolCall, ToolSpec, ToolSpecError

MYSTERY = ToolSpec("mystery", "Does something", {}, "unknown", "builtin")
CALL = ToolCall("c1", "mystery", {"x": 1})


def covers_all(tool: ToolSpec) -> bool:
    return True


def classifier(name: str, answer: object) -> CallClassifier:
    def classify(tool: ToolSpec, arguments: object) -> Classification:
        if isinstance(answer, Exception):
            raise answer
        return answer  # type: ignore[return-value]

    return CallClassifier(name, covers_all, classify)


def test_a_classification_must_have_a_boolean_verdict() -> None:
    with pytest.raises(ToolSpecError) as caught:
        Classification(1, "ok-code", "why")  # type: ignore[arg-type]
    err = caught.value
    assert (str(err), err.code, err.tool) == ("Classification.read_only must be a bool", "invalid-classification", "")


@pytest.mark.parametrize("code", ["Not Kebab", 7])
def test_a_classification_code_must_be_kebab_case(code: object) -> None:
    with pytest.raises(ToolSpecError) as caught:
        Classification(True, code, "why")  # type: ignore[arg-type]
    err = caught.value
    assert (str(err), err.code, err.tool) == (
        f"classification code {code!r} is not kebab-case",
        "invalid-classification",
        "",
    )


@pytest.mark.parametrize("name", ["Bad Name", 3])
def test_a_classifier_name_must_be_kebab_case(name: object) -> None:
    with pytest.raises(ToolSpecError) as caught:
        CallClassifier(name, covers_all, lambda tool, args: Classification(True, "ok", "ok"))  # type: ignore[arg-type]
    err = caught.value
    assert (str(err), err.code, err.tool) == (
        f"classifier name {name!r} is not kebab-case",
        "invalid-classification",
        "",
    )


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (ValueError("boom"), "classifier broken raised ValueError"),
        ("yes", "classifier broken gave no classification"),
        (Classification(False, "looks-risky", "it might write"), "it might write"),
    ],
)
def test_a_classifier_that_fails_or_says_no_refuses_the_call(answer: object, reason: str) -> None:
    verdict = decide("plan", GatePolicy(classifiers=(classifier("broken", answer),)), MYSTERY, CALL)
    assert isinstance(verdict, Refused)
    assert verdict.reason == f"mystery is not proven read-only in plan: {reason}"
    expected = "looks-risky" if isinstance(answer, Classification) else "classifier-failed"
    assert verdict.code == expected


def test_the_first_read_only_answer_wins_over_earlier_refusals() -> None:
    no = classifier("says-no", Classification(False, "looks-risky", "it might write"))
    yes = classifier("says-yes", Classification(True, "read-only", "it only reads"))
    verdict = decide("plan", GatePolicy(classifiers=(no, yes)), MYSTERY, CALL)
    assert verdict == Allowed("mystery", "plan", "executor", "classified-read-only")


def test_the_first_refusal_is_the_one_reported() -> None:
    first = classifier("first", Classification(False, "first-no", "first reason"))
    second = classifier("second", Classification(False, "second-no", "second reason"))
    verdict = decide("plan", GatePolicy(classifiers=(first, second)), MYSTERY, CALL)
    assert isinstance(verdict, Refused) and (verdict.code, verdict.reason) == (
        "first-no",
        "mystery is not proven read-only in plan: first reason",
    )
