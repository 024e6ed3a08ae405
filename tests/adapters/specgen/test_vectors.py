"""Conformance vectors: every replay rule of every machine has one, each
expected result is what the fold says, and the runner checks planfold, a
callable and a command alike.

The rules are collected from the kernel's source, not listed by hand: every
string that reaches the ``rule`` of a ``ReplayError`` (directly, or through a
helper whose parameter flows there, such as ``_fail(seq, rule, ...)``), every
``code=`` of a ``PayloadError`` and every ``Code`` a payload type gives a
field (the fold reports it as the rule), ``malformed-payload`` for a module
that reads payloads with the typed reader (``read_as``, ``reader_of``) or
raises a ``PayloadError`` without a code, and every key of a
``*_REPLAY_RULES`` mapping.
"""

from __future__ import annotations

import ast
import importlib
import json
import shlex
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from planfold.adapters.cli.conform import conform_main
from planfold.adapters.specgen.vector_cases import Case, cases
from planfold.adapters.specgen.vectors import (
    SHIPPED_VECTORS,
    VECTOR_DIR,
    ConformCommandError,
    MalformedRecordError,
    VectorFormatError,
    answer,
    conform,
    expected_result,
    planfold_answer,
    read_log,
    read_records,
    summarize,
    write_vectors,
)
from planfold.kernel.log import Event
from planfold.kernel.session import SessionState

KERNEL = Path(__file__).resolve().parents[3] / "kernel"

#: Which family of machines owns the rules raised in each kernel module.
MACHINES: Mapping[str, str] = {
    "log": "log",
    "session": "session",
    "plan/mode": "plan_mode",
    "decisions": "plan_mode",
    "goal/values": "goal",
    "goal/fold": "goal",
    "plan/status": "plan",
    "plan/payload": "plan",
    "plan/spec_json": "plan",
    "plan/checks": "plan",
    "tools/events": "tools",
}
#: Modules that raise payload or replay errors outside any fold of the log.
NOT_FOLDED: Mapping[str, str] = {
    "errors": "defines the errors",
    "payload": "the generic readers every machine's readers call",
    "plan/capsule": "reads a stored state capsule, which is not a log event",
    "plan/tools": "decodes the arguments of the runtime-owned tools, which are not log events",
}

#: Rules a module can raise that no log can trigger, and why.
NOT_REPLAY: Mapping[tuple[str, str], str] = {
    ("plan_mode", "transition-not-allowed"): (
        "raised by decide_request_header when asked for a header outside a turn, never by a fold; "
        "the turn fold reports the same rule on replay (log.transition-not-allowed-header)"
    ),
    ("plan", "unknown-todo-status"): (
        "the exit_plan_mode decoder's code for a todo status it does not know (the model's arguments, not a "
        "log event); a stored spec with an unknown status is malformed-payload (plan.malformed-payload)"
    ),
}


def _literal(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _rule_arg(call: ast.Call, index: int, name: str) -> ast.AST | None:
    if len(call.args) > index and not any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
        return call.args[index]
    return next((kw.value for kw in call.keywords if kw.arg == name), None)


def rules_in(source: str) -> set[str]:
    """Every rule name a module can raise (see the module docstring)."""
    tree = ast.parse(source)
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)]
    sinks: dict[str, tuple[int, str]] = {"ReplayError": (1, "rule")}
    functions = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)]
    found: set[str] = set()
    changed = True
    while changed:  # a helper whose parameter reaches a sink is a sink too
        changed = False
        for func in functions:
            params = [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]
            for call in ast.walk(func):
                if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
                    continue
                sink = sinks.get(call.func.id)
                arg = sink and _rule_arg(call, *sink)
                if isinstance(arg, ast.Name) and arg.id in (p.arg for p in params) and func.name not in sinks:
                    position = [p.arg for p in params].index(arg.id)
                    sinks[func.name] = (position, arg.id)
                    changed = True
                    defaults = [*func.args.defaults, *func.args.kw_defaults]
                    found.update(d for d in map(_literal, defaults) if d)
    for call in calls:
        name = call.func.id  # type: ignore[attr-defined]
        if name in sinks:
            found.update(filter(None, [_literal(_rule_arg(call, *sinks[name]))]))
        if name == "PayloadError":
            # A payload error without a code has the class's: malformed-payload.
            codes = [_literal(kw.value) for kw in call.keywords if kw.arg == "code"]
            found.update(filter(None, codes or ["malformed-payload"]))
        if name in ("read_as", "reader_of"):
            # The typed reader refuses a bad shape as malformed-payload ...
            found.add("malformed-payload")
        if name == "Code":
            # ... or with the code the field declares.
            found.update(filter(None, [_literal(call.args[0]) if call.args else None]))
    return found


def collected_rules() -> dict[tuple[str, str], str]:
    """(machine, rule) -> the module it was found in."""
    out: dict[tuple[str, str], str] = {}
    for path in sorted(KERNEL.rglob("*.py")):
        module = path.relative_to(KERNEL).with_suffix("").as_posix()
        for rule in rules_in(path.read_text(encoding="utf-8")):
            if module in MACHINES:
                out[(MACHINES[module], rule)] = module
    return out


def documented_rules() -> set[str]:
    """Every key of every ``*_REPLAY_RULES`` mapping in the kernel."""
    out: set[str] = set()
    for path in sorted(KERNEL.rglob("*.py")):
        dotted = path.relative_to(KERNEL).with_suffix("").as_posix().replace("/", ".")
        module = importlib.import_module(f"planfold.kernel.{dotted}".removesuffix(".__init__"))
        for name, value in vars(module).items():
            if name.endswith("_REPLAY_RULES") and isinstance(value, Mapping):
                out.update(value)
    return out


CASES = cases()
COVERED = {(case.machine, case.rule) for case in CASES if case.rule is not None}


# --------------------------------------------------------------------------
# Coverage


def test_every_replay_rule_of_every_machine_has_a_vector() -> None:
    wanted = {key for key in collected_rules() if key not in NOT_REPLAY}
    missing = sorted(wanted - COVERED)
    assert not missing, f"replay rules without a conformance vector (add one in adapters/vector_cases.py): {missing}"


def test_every_vector_names_a_rule_its_machine_raises() -> None:
    unknown = sorted(COVERED - set(collected_rules()))
    assert not unknown, f"vectors for rules no kernel module raises: {unknown}"


def test_every_documented_replay_rule_has_a_vector() -> None:
    missing = sorted(documented_rules() - {rule for _, rule in COVERED})
    assert not missing, f"documented replay rules without a vector: {missing}"


def test_the_exclusions_are_still_real() -> None:
    assert set(NOT_REPLAY) <= set(collected_rules())


def test_every_module_that_raises_a_rule_belongs_to_a_machine() -> None:
    raising = {
        path.relative_to(KERNEL).with_suffix("").as_posix()
        for path in KERNEL.rglob("*.py")
        if rules_in(path.read_text(encoding="utf-8"))
    }
    unassigned = raising - set(NOT_FOLDED) - set(MACHINES)
    assert not unassigned, f"assign these modules to a machine in MACHINES (or to NOT_FOLDED): {sorted(unassigned)}"


def test_the_collector_follows_helpers_and_defaults() -> None:
    source = (
        "def _fail(seq, rule, detail):\n    return ReplayError(seq, rule, detail)\n"
        "def _check(x, *, mismatch='plan-mismatch'):\n    raise _fail(x, mismatch, 'd')\n"
        "def f():\n    _check(1, mismatch='approval-mismatch')\n    raise _fail(1, 'seq-gap', 'd')\n"
        "    raise PayloadError('m', code='unknown-version')\n    raise ReplayError(1, 'header-mismatch', 'd')\n"
    )
    assert rules_in(source) == {"plan-mismatch", "approval-mismatch", "seq-gap", "unknown-version",
                                "header-mismatch"}
    assert rules_in("def g():\n    raise PayloadError('bad shape')\n") == {"malformed-payload"}


def test_valid_and_invalid_logs_are_both_present() -> None:
    assert any(case.rule is None for case in CASES)
    assert len({case.name for case in CASES}) == len(CASES)


# --------------------------------------------------------------------------
# Expected results


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_expected_result_is_what_the_fold_says(case: Case) -> None:
    result = expected_result(case)
    if case.rule is None:
        assert result["ok"] is True and isinstance(result["state"], dict)
    else:
        assert result == {"ok": False, "position": case.position, "rule": case.rule}


def test_a_mislabelled_case_is_refused() -> None:
    case = next(case for case in CASES if case.rule == "round-gap")
    for wrong in (Case(case.name, case.machine, "", case.lines, "round-over-cap", case.position),
                  Case(case.name, case.machine, "", case.lines, case.rule, 1),
                  Case(case.name, case.machine, "", case.lines)):
        with pytest.raises(ValueError, match="declared"):
            expected_result(wrong)


def test_the_summary_of_an_empty_log() -> None:
    assert summarize(SessionState()) == {
        "last_seq": 0, "plan_mode": False, "agent_mode": "build", "plan": None, "goal": None,
    }


INVALID = [case for case in CASES if case.rule is not None]
JUNK = st.fixed_dictionaries(
    {"kind": st.sampled_from(["turn/start", "plan/mode", "x/y", "goal/change"]),
     "payload": st.dictionaries(st.sampled_from(["turn", "active", "a"]), st.integers() | st.booleans(), max_size=2)}
)


@given(st.sampled_from(INVALID), st.lists(JUNK, max_size=4))
def test_the_first_bad_event_decides_whatever_follows(case: Case, tail: list[dict[str, object]]) -> None:
    note(case.name)
    events = [Event(line["seq"], str(line["kind"]), line["at"], line["payload"]) for line in case.lines]  # type: ignore[arg-type]
    start = len(events)
    more = [Event(start + i + 1, str(j["kind"]), 10**9 + i, j["payload"]) for i, j in enumerate(tail)]  # type: ignore[arg-type]
    assert answer(events + more) == answer(events) == {"ok": False, "position": case.position, "rule": case.rule}
    assert answer(events[:-1])["ok"] is True


# --------------------------------------------------------------------------
# Files


@pytest.fixture(scope="module")
def vector_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("vectors")
    write_vectors(directory)
    return directory


def test_files_are_written_stably_and_stale_ones_removed(vector_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "old.jsonl").write_text("", encoding="utf-8")
    (tmp_path / "old.expected.json").write_text("{}", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("kept", encoding="utf-8")
    write_vectors(tmp_path)
    assert not (tmp_path / "old.jsonl").exists() and not (tmp_path / "old.expected.json").exists()
    assert (tmp_path / "notes.txt").exists()
    for path in vector_dir.iterdir():
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name


def test_every_line_is_an_event_and_every_sidecar_an_answer(vector_dir: Path) -> None:
    for case in CASES:
        lines = (vector_dir / f"{case.name}.jsonl").read_text(encoding="utf-8").splitlines()
        assert [json.loads(line) for line in lines] == [dict(line) for line in case.lines]
        assert all(list(json.loads(line)) == ["seq", "kind", "at", "payload"] for line in lines)
        sidecar = json.loads((vector_dir / f"{case.name}.expected.json").read_text(encoding="utf-8"))
        keys = {"description", "ok", "state"} if case.rule is None else {"description", "ok", "position", "rule"}
        assert set(sidecar) == keys and sidecar["description"] == case.description


def test_read_log_refuses_what_is_not_an_event_line(tmp_path: Path) -> None:
    bad = {"array.jsonl": "[1]\n", "keys.jsonl": '{"seq":1,"kind":"turn/start","at":1}\n',
           "json.jsonl": "{nope\n", "nan.jsonl": '{"seq":NaN,"kind":"a","at":1,"payload":{}}\n',
           "kind.jsonl": '{"seq":1,"kind":2,"at":1,"payload":{}}\n'}
    for name, text in bad.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        with pytest.raises(VectorFormatError):
            read_log(tmp_path / name)


# --------------------------------------------------------------------------
# The runner


def test_planfold_conforms_to_its_own_vectors(vector_dir: Path) -> None:
    report = conform(vector_dir)
    assert report.ok and len(report.outcomes) == len(CASES)


def test_a_wrong_answer_is_reported_by_name(vector_dir: Path) -> None:
    def off_by_one(path: Path) -> object:
        result = planfold_answer(path)
        if path.name == "goal.round-gap.jsonl":
            return {**result, "position": 3}
        return result

    report = conform(vector_dir, off_by_one)
    assert [outcome.name for outcome in report.failures] == ["goal.round-gap"]
    assert report.failures[0].actual == {"ok": False, "position": 3, "rule": "round-gap"}
    assert not report.ok


def test_extra_keys_in_an_answer_are_ignored(vector_dir: Path) -> None:
    report = conform(vector_dir, lambda path: {**planfold_answer(path), "detail": "why", "engine": "x"})
    assert report.ok


def test_a_broken_vector_file_fails_that_vector_only(vector_dir: Path, tmp_path: Path) -> None:
    for path in vector_dir.glob("valid.empty*"):
        shutil.copy(path, tmp_path / path.name)
    for path in vector_dir.glob("log.seq-gap.*"):
        shutil.copy(path, tmp_path / path.name)
    (tmp_path / "log.seq-gap.jsonl").write_text("not json\n", encoding="utf-8")
    report = conform(tmp_path)
    assert [(o.name, o.passed) for o in report.outcomes] == [("log.seq-gap", False), ("valid.empty", True)]
    assert "not JSON" in report.failures[0].problem


def _subset(vector_dir: Path, target: Path, names: tuple[str, ...]) -> Path:
    for name in names:
        for path in vector_dir.glob(f"{name}.*"):
            shutil.copy(path, target / path.name)
    return target


SUBSET = ("valid.goal-lifecycle", "plan.wrong-mode", "log.seq-gap-string")


def test_a_command_is_run_per_log_and_its_stdout_read(vector_dir: Path, tmp_path: Path) -> None:
    directory = _subset(vector_dir, tmp_path, SUBSET)
    report = conform(directory, [sys.executable, "-m", "planfold.adapters.specgen.vectors", "answer"])
    assert report.ok and len(report.outcomes) == len(SUBSET)


def test_a_failing_or_silent_command_fails_every_vector(vector_dir: Path, tmp_path: Path) -> None:
    directory = _subset(vector_dir, tmp_path, SUBSET)
    for command in ([sys.executable, "-c", "import sys; sys.exit(3)"], [sys.executable, "-c", "print('hello')"]):
        report = conform(directory, command)
        assert len(report.failures) == len(SUBSET), command
        assert all(outcome.problem for outcome in report.failures)


def test_a_command_that_cannot_be_started_stops_the_run_once(vector_dir: Path, tmp_path: Path) -> None:
    directory = _subset(vector_dir, tmp_path, SUBSET)
    with pytest.raises(ConformCommandError, match="could not run /nonexistent/planfold-impl"):
        conform(directory, ["/nonexistent/planfold-impl"])


def test_a_sidecar_that_is_not_json_fails_that_vector_only(vector_dir: Path, tmp_path: Path) -> None:
    directory = _subset(vector_dir, tmp_path, SUBSET)
    (directory / "plan.wrong-mode.expected.json").write_bytes(b"\xff{")
    report = conform(directory)
    assert [o.name for o in report.failures] == ["plan.wrong-mode"]
    assert "is not a JSON document" in report.failures[0].problem


def test_the_reader_names_the_line_and_the_seq_of_a_malformed_record() -> None:
    good = b'{"seq":1,"kind":"turn/start","at":1,"payload":{"turn":1}}\n'
    assert [n for n, _ in read_records(good + good)] == [1, 2]
    cases = {
        good + b'{"seq":2,"kind":"turn/end","at":1}\n': (2, 2),
        good + b"\n": (2, None),
        good + b"\xff\n": (2, None),
        b'{"seq":7,"kind":1,"at":1,"payload":{}}': (1, 7),
    }
    for data, (line, seq) in cases.items():
        with pytest.raises(MalformedRecordError) as caught:
            list(read_records(data))
        assert (caught.value.line, caught.value.seq) == (line, seq), data


def test_conform_main_exit_status(vector_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert conform_main([str(vector_dir)]) == 0
    assert f"{len(CASES)}/{len(CASES)} vectors passed" in capsys.readouterr().out
    subset = tmp_path / "subset"
    subset.mkdir()
    _subset(vector_dir, subset, SUBSET)
    liar = f"{shlex.quote(sys.executable)} -c 'print(1)'"
    assert conform_main([str(subset), "--command", liar]) == 1
    printed = capsys.readouterr().out
    assert printed.count("FAIL") == len(SUBSET) and f"0/{len(SUBSET)} vectors passed" in printed
    empty = tmp_path / "empty"
    empty.mkdir()
    assert conform_main([str(empty)]) == 2


def test_the_vectors_the_wheel_ships_are_the_published_ones() -> None:
    published = Path(__file__).resolve().parents[3] / "specs" / VECTOR_DIR
    fix = "regenerate with `make diagrams` and commit specs/vectors and adapters/specgen/conformance"
    shipped = {path.name: path.read_bytes() for path in SHIPPED_VECTORS.iterdir()}
    assert shipped == {path.name: path.read_bytes() for path in published.iterdir()}, fix
    assert len(shipped) == 2 * len(CASES)
