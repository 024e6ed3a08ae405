"""The fuzz harness itself: it must fail on exactly what breaks the
contract, or a green fuzz run proves nothing."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planfold.kernel.errors import KernelError, ReplayError
from planfold.kernel.session import fold_session
from tests.fuzz import __main__ as fuzz_main
from tests.fuzz import harness, inputs
from tests.fuzz.harness import (
    TIME_LIMIT,
    Clock,
    FuzzFinding,
    Target,
    check,
    decode_json,
    read_corpus_file,
    save_to_corpus,
    unchanged,
)
from tests.fuzz.minimize import minimize
from tests.fuzz.seeds import seed_logs
from tests.fuzz.targets import _long_log, by_name


def target(run: object) -> Target:
    return Target("probe", "probe()", run, st.just(b""))  # type: ignore[arg-type]


def test_a_typed_refusal_is_accepted() -> None:
    def refuse(data: bytes, clock: Clock) -> None:
        raise ReplayError(1, "seq-gap", "no")

    check(target(refuse), b"x")


@pytest.mark.parametrize("error", [ValueError("v"), TypeError("t"), RecursionError(), KeyError("k")])
def test_an_untyped_error_is_a_finding(error: Exception) -> None:
    def crash(data: bytes, clock: Clock) -> None:
        raise error

    with pytest.raises(FuzzFinding, match=type(error).__name__):
        check(target(crash), b"x")


def test_input_the_harness_cannot_decode_never_reaches_the_target() -> None:
    def decode(data: bytes, clock: Clock) -> None:
        decode_json(data)
        raise AssertionError("unreachable")

    check(target(decode), b"\xff{")
    check(target(decode), b"[" * 100_000)


def _spin(seconds: float) -> None:
    """Compute (not wait) for ``seconds`` of this thread's CPU time."""
    until = time.thread_time() + seconds
    while time.thread_time() < until:
        pass


def test_an_entry_point_that_computes_too_long_is_a_finding_but_slow_harness_work_is_not() -> None:
    def slow(data: bytes, clock: Clock) -> str:
        with clock.timed():
            _spin(TIME_LIMIT + 0.05)
        return ""

    def slow_outside(data: bytes, clock: Clock) -> str:
        _spin(TIME_LIMIT + 0.05)
        with clock.timed():
            pass
        return ""

    with pytest.raises(FuzzFinding, match="of CPU"):
        check(target(slow), b"x")
    check(target(slow_outside), b"x")


def test_waiting_counts_against_the_wall_limit_only(monkeypatch: pytest.MonkeyPatch) -> None:
    # A wait costs no CPU: a loaded machine cannot turn it into a finding,
    # but an entry point that hangs still is one.
    def waiting(data: bytes, clock: Clock) -> str:
        with clock.timed():
            time.sleep(0.3)
        return ""

    check(target(waiting), b"x")
    monkeypatch.setattr(harness, "WALL_LIMIT", 0.2)
    with pytest.raises(FuzzFinding, match="of wall time"):
        check(target(waiting), b"x")


@pytest.mark.parametrize("raises", [False, True])
def test_a_change_to_the_input_is_a_finding_whether_or_not_the_call_fails(raises: bool) -> None:
    value: dict[str, object] = {"a": [1, float("nan")]}
    with pytest.raises(FuzzFinding, match="changed the input"), unchanged(value):
        value["a"].append(2)  # type: ignore[attr-defined]
        if raises:
            raise KernelError("refused")
    with unchanged(value):
        pass


def test_corpus_files_round_trip_compressed_or_not(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(harness, "CORPUS", tmp_path)
    small, large = b"\x00\xff small", b"x" * (harness.COMPRESS_ABOVE + 1)
    paths = [save_to_corpus("t", small), save_to_corpus("t", large)]
    assert [read_corpus_file(path) for path in paths] == [small, large]
    assert paths[1].suffix == ".gz" and paths[1].stat().st_size < len(large) // 10
    assert harness.corpus_files("t") == sorted(paths)
    assert save_to_corpus("t", small) == paths[0]


def test_every_seed_log_is_a_valid_history() -> None:
    for log in seed_logs():
        assert fold_session(log).last_seq == len(log)


def test_a_long_log_folds_within_the_time_limit() -> None:
    check(by_name("replay"), _long_log(5_000))


def needle_target() -> Target:
    def run(data: bytes, clock: Clock) -> str:
        if b"X" in data:
            raise ValueError("found the needle")
        return "no needle"

    return Target("needle", "needle()", run, st.binary(min_size=1, max_size=64).map(lambda b: b + b"X" + b))


def test_minimize_keeps_the_failure_and_drops_the_rest() -> None:
    data = b'{"a": 1}\n{"b": "..X.."}\n{"c": 3}'
    assert minimize(needle_target(), data) == b"X"
    assert minimize(needle_target(), b"no needle") == b"no needle"


def test_the_fuzz_pass_keeps_a_failing_input_in_the_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(harness, "CORPUS", tmp_path)
    monkeypatch.setattr(fuzz_main, "ROOT", tmp_path)
    report = fuzz_main.fuzz_target(needle_target(), budget=5.0)
    assert report.failure is not None and "ValueError" in report.failure
    assert [read_corpus_file(path) for path in harness.corpus_files("needle")] == [b"X"]


def test_the_fuzz_pass_reports_a_clean_target_as_ok() -> None:
    report = fuzz_main.fuzz_target(by_name("plan_policy"), budget=0.5)
    assert report.failure is None and report.examples > 0 and report.rounds >= 1


def test_a_known_open_bug_is_looked_past_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    bug = harness.KnownBug("check_envelope hashes a non-string kind", TypeError, "check_envelope", "kernel/log.py")
    monkeypatch.setattr(harness, "KNOWN_BUGS", (bug,))
    # A stand-in raising from a function and file named like the known bug's.
    namespace: dict[str, Any] = {}
    exec(compile("def check_envelope():\n    raise TypeError('unhashable')\n", "/x/kernel/log.py", "exec"), namespace)

    def unhashable_kind(data: bytes, clock: Clock) -> str:
        namespace["check_envelope"]()
        return ""

    def elsewhere(data: bytes, clock: Clock) -> str:
        raise TypeError("unhashable type: 'list'")

    assert check(target(unhashable_kind), b"x") == "known bug: check_envelope hashes a non-string kind"
    with pytest.raises(FuzzFinding):
        check(target(unhashable_kind), b"x", look_past_known=False)
    with pytest.raises(FuzzFinding):
        check(target(elsewhere), b"x")


SPECIAL_INTS = [s for s in inputs.SPECIAL_SCALARS if isinstance(s, int) and not isinstance(s, bool)]


@pytest.mark.parametrize("scalar", SPECIAL_INTS, ids=[f"{len(str(s))}-digits" for s in SPECIAL_INTS])
def test_tweaking_any_hostile_int_draws_a_value(scalar: int) -> None:
    # float() of an int past the float range raises OverflowError; the tweak
    # must stand in the infinity of its sign instead of failing the generator.
    seen: list[object] = []

    @given(st.data())
    @settings(max_examples=60, database=None)
    def tweak(data: st.DataObject) -> None:
        seen.append(inputs._tweak(data.draw, scalar, ["section"]))

    tweak()
    floats = [value for value in seen if isinstance(value, float)]
    assert floats, "the float tweak was never drawn"
    assert all(value == float(scalar) for value in floats if abs(scalar) < 2**1023)
    assert all(math.isinf(value) and (value < 0) == (scalar < 0) for value in floats if abs(scalar) >= 2**1024)


def _recorded_pass(monkeypatch: pytest.MonkeyPatch, base_seed: str) -> list[bytes]:
    seen: list[bytes] = []

    def record(target: harness.Target, data: bytes) -> str:
        del target
        seen.append(data)
        return ""

    monkeypatch.setattr(fuzz_main, "check", record)
    report = fuzz_main.fuzz_target(by_name("plan_policy"), 0.0, base_seed=base_seed, rounds=2)
    assert report.rounds == 2 and report.failure is None
    return seen


def test_a_seeded_fuzz_pass_does_a_fixed_amount_of_work_and_repeats_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    first = _recorded_pass(monkeypatch, "0123abcd")
    again = _recorded_pass(monkeypatch, "0123abcd")
    other = _recorded_pass(monkeypatch, "4567ef01")
    assert len(first) == 2 * fuzz_main.ROUND_EXAMPLES
    assert first == again
    assert first != other
    assert fuzz_main.round_seed("c", "t", 1) != fuzz_main.round_seed("c", "t", 2)
