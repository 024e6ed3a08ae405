"""The mutation score is computed from mutmut's files as documented:
mutants are described by place and change, equivalents match by that
description, and the score is killed / non-equivalent."""

from __future__ import annotations

import fnmatch
import functools
import json
import os
import sys
import types
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.mutation import __main__ as cli
from tests.mutation.import_time import (
    import_time_functions,
    kernel_caches,
    mangled,
    mirror_tests,
    mutated_path,
    narrowed,
    to_recheck,
)
from tests.mutation.launch import SKIPPED, Describer, leaving_out
from tests.mutation.launch import main as launch_main
from tests.mutation.pytest_plugin import empty_caches
from tests.mutation.score import (
    Equivalent,
    Mutant,
    load_equivalents,
    load_mutants,
    module_of,
    score,
    status_of,
)

MUTATED_FILE = '''\
def x_read_int__mutmut_orig(payload, key, *, minimum=None):
    value = payload[key]
    if minimum is not None and value < minimum:
        raise ValueError("too small")
    return value


def x_read_int__mutmut_1(payload, key, *, minimum=None):
    value = payload[key]
    if minimum is not None and value <= minimum:
        raise ValueError("too small")
    return value


def x_read_int__mutmut_2(payload, key, *, minimum=None):
    value = payload[key]
    if minimum is not None and value < minimum:
        raise ValueError("XXtoo smallXX")
    return value


class Box:
    def xǁBoxǁput__mutmut_orig(self, item, where="top"):
        return (where, item)

    def xǁBoxǁput__mutmut_1(self, item, where="XXtopXX"):
        return (where, item)
'''

CODES = {
    "planfold.kernel.sample.x_read_int__mutmut_1": 1,
    "planfold.kernel.sample.x_read_int__mutmut_2": 0,
    "planfold.kernel.sample.xǁBoxǁput__mutmut_1": 33,
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    # mutmut's layout: the kernel mutated where the namespace links it.
    folder = tmp_path / "mutants" / "src" / "planfold" / "kernel"
    folder.mkdir(parents=True)
    (folder / "sample.py").write_text(MUTATED_FILE, encoding="utf-8")
    (folder / "sample.py.meta").write_text(json.dumps({"exit_code_by_key": CODES}), encoding="utf-8")
    return tmp_path


def test_results_outside_the_mutated_kernel_are_not_counted(root: Path) -> None:
    # A left-over result of the old top-level layout, or of another copied
    # tree, is not a kernel mutant.
    old = root / "mutants" / "kernel"
    old.mkdir()
    (old / "sample.py").write_text(MUTATED_FILE, encoding="utf-8")
    (old / "sample.py.meta").write_text(
        json.dumps({"exit_code_by_key": {"kernel.sample.x_read_int__mutmut_1": 0}}), encoding="utf-8"
    )
    assert sorted(m.name for m in load_mutants(root)) == sorted(CODES)


def test_mutants_are_described_by_file_function_and_change(root: Path) -> None:
    mutants = {mutant.name: mutant for mutant in load_mutants(root)}
    first = mutants["planfold.kernel.sample.x_read_int__mutmut_1"]
    assert (first.status, first.file, first.function) == ("killed", "kernel/sample.py", "read_int")
    assert (first.original, first.mutated) == (
        "if minimum is not None and value < minimum:",
        "if minimum is not None and value <= minimum:",
    )
    second = mutants["planfold.kernel.sample.x_read_int__mutmut_2"]
    assert (second.status, second.mutated) == ("survived", 'raise ValueError("XXtoo smallXX")')
    method = mutants["planfold.kernel.sample.xǁBoxǁput__mutmut_1"]
    assert (method.status, method.function) == ("no tests", "Box.put")
    assert method.original.endswith('where="top"):') and method.mutated.endswith('where="XXtopXX"):')


def test_equivalents_match_by_description_and_leave_the_denominator(root: Path) -> None:
    mutants = load_mutants(root)
    listed = Equivalent(
        "kernel/sample.py",
        "read_int",
        'raise  ValueError("too small")',  # whitespace does not matter
        'raise ValueError("XXtoo smallXX")',
        "the message is never shown to anyone in this sample",
    )
    stale = Equivalent("kernel/sample.py", "read_int", "gone", "gone too", "a line that no longer exists here")
    result = score(mutants, [listed, stale])
    assert (result.total, result.killed, result.non_equivalent) == (3, 1, 2)
    assert [m.name for m in result.equivalent] == ["planfold.kernel.sample.x_read_int__mutmut_2"]
    assert [m.status for m in result.not_killed] == ["no tests"]
    assert result.stale == (stale,)
    assert result.percent == 50.0
    assert result.by_file["kernel/sample.py"] == {"killed": 1, "equivalent": 1, "no tests": 1}


def test_a_killed_mutant_is_never_counted_as_equivalent(root: Path) -> None:
    mutants = load_mutants(root)
    killed = next(m for m in mutants if m.killed)
    entry = Equivalent(killed.file, killed.function, killed.original, killed.mutated, "listed by mistake, it is killed")
    result = score(mutants, [entry])
    assert result.killed == 1 and not result.equivalent and result.stale == (entry,)


@pytest.mark.parametrize(
    ("code", "status"),
    [
        (0, "survived"),
        (1, "killed"),
        (3, "killed"),
        (33, "no tests"),
        (36, "timeout"),
        (None, "not checked"),
        (99, "suspicious"),
    ],
)
def test_exit_codes_mean_what_mutmut_means(code: int | None, status: str) -> None:
    assert status_of(code) == status


def test_an_equivalent_without_a_reason_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "equivalent.toml"
    path.write_text('[[equivalent]]\nfile = "f"\nfunction = "g"\nline = "a"\nmutant = "b"\nreason = "no"\n')
    with pytest.raises(ValueError, match="needs a real reason"):
        load_equivalents(path)


def test_the_committed_equivalents_load_and_each_names_a_kernel_file() -> None:
    entries = load_equivalents(cli.EQUIVALENTS)
    assert entries
    for entry in entries:
        assert entry.file.startswith("kernel/") and (cli.ROOT / entry.file).is_file(), entry


def test_each_equivalents_file_lists_only_its_own_module() -> None:
    listings = sorted(cli.EQUIVALENTS.rglob("*.toml"))
    assert listings
    for listing in listings:
        files = {entry.file for entry in load_equivalents(listing)}
        assert all(cli.listing_of(file) == listing for file in files), listing


def test_an_equivalents_file_is_laid_out_like_the_kernel_module_it_lists() -> None:
    assert cli.listing_of("kernel/plan/mode.py") == cli.EQUIVALENTS / "plan" / "mode.toml"
    assert cli.listing_of("kernel/plan/__init__.py") == cli.EQUIVALENTS / "plan" / "__init__.toml"
    assert cli.listing_of("kernel/log.py") == cli.EQUIVALENTS / "log.toml"


def test_equivalents_load_from_every_file_below_a_directory_in_path_order(tmp_path: Path) -> None:
    entry = '[[equivalent]]\nfile = "kernel/{0}.py"\nfunction = "f"\nline = "a"\nmutant = "b"\nreason = "{1}"\n'
    (tmp_path / "plan").mkdir()
    (tmp_path / "plan" / "mode.toml").write_text(entry.format("plan/mode", "the flag is read only for its truth"))
    (tmp_path / "b.toml").write_text(entry.format("b", "both branches return the same value"))
    (tmp_path / "a.toml").write_text(entry.format("a", "the value is overwritten before use"))
    (tmp_path / "notes.md").write_text("not a listing")
    assert [e.file for e in load_equivalents(tmp_path)] == ["kernel/a.py", "kernel/b.py", "kernel/plan/mode.py"]


@pytest.mark.parametrize(
    ("file", "module"),
    [
        ("kernel/log.py", "planfold.kernel.log"),
        ("kernel/plan/mode.py", "planfold.kernel.plan.mode"),
        ("kernel/plan/__init__.py", "planfold.kernel.plan"),
        ("kernel/__init__.py", "planfold.kernel"),
    ],
)
def test_a_kernel_file_is_mutated_as_its_module_in_the_namespace(file: str, module: str) -> None:
    assert module_of(file) == module


def test_re_running_a_module_selects_its_own_mutants_and_not_its_submodules() -> None:
    names = [
        "planfold.kernel.plan.x_read__mutmut_1",
        "planfold.kernel.plan.xǁPlanǁstatus__mutmut_2",
        "planfold.kernel.plan.mode.x_decide__mutmut_1",
        "planfold.kernel.plan.modex.x_decide__mutmut_1",
        "planfold.kernel.log.x_check__mutmut_1",
    ]

    def chosen(file: str) -> list[str]:
        return [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in cli.module_patterns(file))]

    assert chosen("kernel/plan/__init__.py") == names[:2]
    assert chosen("kernel/plan/mode.py") == ["planfold.kernel.plan.mode.x_decide__mutmut_1"]


def test_fresh_interpreters_find_the_mutated_tree_before_any_installed_copy(tmp_path: Path) -> None:
    env = mutated_path(tmp_path, {"PYTHONPATH": "/installed/src"})
    assert env["PYTHONPATH"].split(os.pathsep) == [
        str(tmp_path.resolve() / "mutants" / "src"),
        str(tmp_path.resolve() / "mutants"),
        "/installed/src",
    ]
    assert mutated_path(tmp_path, {})["PYTHONPATH"].split(os.pathsep)[0] == str(tmp_path.resolve() / "mutants" / "src")


def test_score_command_prints_the_score_and_enforces_the_floor(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["score", "--root", str(root), "--survivors"]) == 0
    out = capsys.readouterr().out
    assert "mutation score of kernel/: 1 killed / 3 non-equivalent mutants = 33.3 %" in out
    assert "planfold.kernel.sample.xǁBoxǁput__mutmut_1" in out
    assert cli.main(["score", "--root", str(root), "--fail-under", "90"]) == 1


def test_score_without_results_is_an_error(tmp_path: Path) -> None:
    assert cli.main(["score", "--root", str(tmp_path)]) == 1


def test_show_names_the_mutant_and_its_change() -> None:
    mutant = Mutant("kernel.a.x_f__mutmut_1", "survived", "kernel/a.py", "f", "x < 1", "x <= 1")
    assert mutant.show().splitlines() == ["kernel/a.py::f [survived] kernel.a.x_f__mutmut_1", "  - x < 1", "  + x <= 1"]


@pytest.mark.parametrize(
    ("qualname", "expected"),
    [
        ("_rows", "planfold.kernel.tools.gate.x__rows"),
        ("_verifying.<locals>.check", "planfold.kernel.tools.gate.x__verifying"),
        ("CallClassifier.__post_init__", "planfold.kernel.tools.gate.xǁCallClassifierǁ__post_init__"),
        ("<module>", None),
        ("<dictcomp>", None),
    ],
)
def test_import_time_code_maps_to_the_function_mutmut_mutates(qualname: str, expected: str | None) -> None:
    assert mangled("planfold.kernel.tools.gate", qualname) == expected


def test_the_functions_a_fresh_kernel_import_runs_are_found_in_every_subpackage() -> None:
    # Importing every kernel module runs at least the class bodies and the
    # module-level table builders; each comes out under its mutmut name.
    found = import_time_functions(cli.ROOT)
    assert all(name.startswith("planfold.kernel.") and (".x_" in name or ".xǁ" in name) for name in found)
    modules = {name.rpartition(".x")[0] for name in found}
    assert {"planfold.kernel.plan.status", "planfold.kernel.tools.gate"} <= modules


def test_equivalents_listed_from_the_command_line_load_and_match(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed = tmp_path / "equivalent"
    monkeypatch.setattr(cli, "EQUIVALENTS", listed)
    reason = 'the message "quoted" is never shown in this sample'
    pattern = "planfold.kernel.sample.x_read_int__mutmut_*"
    assert cli.main(["equivalent", pattern, "--root", str(root), "--reason", reason]) == 0
    assert [path.name for path in listed.iterdir()] == ["sample.toml"]
    entries = load_equivalents(listed)
    assert [(e.function, e.mutant, e.reason) for e in entries] == [
        ("read_int", 'raise ValueError("XXtoo smallXX")', reason)
    ]
    assert len(score(load_mutants(root), entries).equivalent) == 1
    assert cli.main(["equivalent", "planfold.kernel.nothing.*", "--root", str(root), "--reason", reason]) == 1


def test_a_recheck_retests_what_it_has_not_decided_and_with_retry_what_it_did_not_kill_in_the_files_named() -> None:
    def mutant(name: str, status: str, file: str = "kernel/a.py") -> Mutant:
        return Mutant(f"planfold.kernel.a.x_f__mutmut_{name}", status, file, "f", "x", "y")

    mutants = [
        mutant("1", "killed"),  # mutmut killed it
        mutant("2", "survived"),  # never rechecked
        mutant("3", "survived"),  # rechecked: killed
        mutant("4", "survived"),  # rechecked: survived
        mutant("5", "no tests", "kernel/b.py"),  # rechecked: survived, in another file
    ]
    done = {m.name: s for m, s in zip(mutants[2:], ["killed", "survived", "survived"], strict=True)}
    functions = {"planfold.kernel.a.x_f"}

    def names(**options: object) -> list[str]:
        chosen = to_recheck(mutants, functions, done, **options)  # type: ignore[arg-type]
        return [m.name.rpartition("_")[2] for m in chosen]

    assert names() == ["2"]
    assert names(retry=True) == ["2", "4", "5"]
    assert names(modules={"kernel/b.py"}) == ["5"]  # the named files only
    assert names(modules={"kernel/a.py"}, retry=True) == ["2", "4"]
    assert to_recheck(mutants, set(), done, retry=True) == []  # not a function that runs before any test
    listed = {mutants[1].key()}  # a.py's change (all its mutants make it) listed as equivalent
    assert names(equivalent=listed) == []
    assert names(retry=True, equivalent=listed) == ["5"]


def test_a_recheck_decides_only_what_mutmut_did_not_kill(tmp_path: Path) -> None:
    # A test added after a recheck kills a mutant in mutmut's next run; the
    # recheck's older "survived" must not override that kill.
    def mutant(name: str, status: str) -> Mutant:
        return Mutant(f"planfold.kernel.a.x_f__mutmut_{name}", status, "kernel/a.py", "f", "x", "y")

    mutants = [mutant("1", "killed"), mutant("2", "skipped"), mutant("3", "survived")]
    (tmp_path / "mutants").mkdir()
    cache = {m.name: {"change": ["x", "y"], "code": code} for m, code in zip(mutants, [0, 1, 0], strict=True)}
    (tmp_path / "mutants" / "import-time.json").write_text(json.dumps(cache), encoding="utf-8")
    assert [m.status for m in cli.with_rechecks(tmp_path, mutants)] == ["killed", "killed", "survived"]


def test_the_kernels_caches_are_its_private_dicts_left_empty_by_the_imports_and_its_functools_caches(
    tmp_path: Path,
) -> None:
    kernel = tmp_path / "kernel"
    kernel.mkdir()
    (kernel / "__init__.py").write_text("")
    (kernel / "store.py").write_text(
        "import functools\n"
        "_CACHE = {}\n"  # filled on first use: a cache
        "_TABLE = {'a': 1}\n"  # filled at import: a table
        "PUBLIC = {}\n"
        "@functools.cache\n"
        "def built(x):\n"
        "    return x\n"
    )
    (tmp_path / "src" / "planfold").mkdir(parents=True)
    (tmp_path / "src" / "planfold" / "__init__.py").write_text("")
    (tmp_path / "src" / "planfold" / "kernel").symlink_to(Path("..", "..", "kernel"), target_is_directory=True)
    assert kernel_caches(tmp_path) == ["planfold.kernel.store:_CACHE", "planfold.kernel.store:built"]


def test_the_plugin_empties_the_listed_caches_of_loaded_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    cache, table = {"a": 1}, {"b": 2}
    built = functools.cache(lambda x: x)
    built(1)
    module = types.ModuleType("planfold_cache_sample")
    module._CACHE, module._TABLE, module.built = cache, table, built  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    empty_caches("planfold_cache_sample:_CACHE planfold_cache_sample:built planfold_not_loaded:_CACHE")
    assert (cache, table, built.cache_info().currsize) == ({}, {"b": 2}, 0)


def test_a_recheck_first_runs_the_tests_that_mirror_the_mutated_module_in_the_runs_copy_of_the_tests(
    tmp_path: Path,
) -> None:
    tests = tmp_path / "mutants" / "tests" / "kernel" / "plan"
    tests.mkdir(parents=True)
    for name in ("test_checks.py", "test_checks_table.py", "test_checkset.py", "test_status.py"):
        (tests / name).write_text("")
    (tmp_path / "tests" / "kernel" / "plan").mkdir(parents=True)
    (tmp_path / "tests" / "kernel" / "plan" / "test_spec.py").write_text("")  # not in the run's copy
    assert mirror_tests(tmp_path, "kernel/plan/checks.py") == [
        "tests/kernel/plan/test_checks.py",
        "tests/kernel/plan/test_checks_table.py",
    ]
    assert mirror_tests(tmp_path, "kernel/plan/spec.py") == []
    assert mirror_tests(tmp_path, "kernel/goal/ops.py") == []


def test_a_narrowed_selection_keeps_every_option_and_replaces_only_the_folder_of_tests() -> None:
    selection = ["-p", "no:cacheprovider", "tests/", "-m", "not slow", "--ignore=tests/mutation"]
    assert narrowed(selection, ["tests/kernel/a.py", "tests/kernel/b.py"]) == [
        "-p", "no:cacheprovider", "tests/kernel/a.py", "tests/kernel/b.py", "-m", "not slow", "--ignore=tests/mutation",
    ]


def test_the_launcher_leaves_import_time_mutants_to_the_recheck_marking_the_undecided_ones_skipped() -> None:
    class Data:
        def __init__(self) -> None:
            self.exit_code_by_key: dict[str, int | None] = {}
            self.saved = 0

        def save(self) -> None:
            self.saved += 1

    data = Data()
    at_import = "planfold.kernel.a.x__table"
    items = [
        (data, f"{at_import}__mutmut_1", None),  # undecided: skipped, left to the recheck
        (data, f"{at_import}__mutmut_2", 0),  # decided before: left as it is
        (data, "planfold.kernel.a.x_decide__mutmut_1", None),  # an ordinary function: mutmut tests it
        (data, "planfold.kernel.a.x__table_rows__mutmut_1", None),  # another function with a longer name
    ]

    def collect(*, mutant_names: tuple[str, ...]) -> tuple[list[Any], str]:
        assert mutant_names == ("chosen",)
        return list(items), "by path"

    kept, by_path = leaving_out(collect, {at_import})(mutant_names=("chosen",))
    assert by_path == "by path"
    assert [name for _, name, _ in kept] == [
        "planfold.kernel.a.x_decide__mutmut_1",
        "planfold.kernel.a.x__table_rows__mutmut_1",
    ]
    assert data.exit_code_by_key == {f"{at_import}__mutmut_1": SKIPPED} and data.saved == 1
    assert status_of(SKIPPED) == "skipped"


def test_the_launcher_leaves_listed_equivalents_untested_and_the_score_counts_them_equivalent(root: Path) -> None:
    class Data:
        path = "src/planfold/kernel/sample.py"

        def __init__(self) -> None:
            self.exit_code_by_key: dict[str, int | None] = {}
            self.saved = 0

        def save(self) -> None:
            self.saved += 1

    listed = Equivalent(
        "kernel/sample.py",
        "read_int",
        'raise ValueError("too small")',
        'raise ValueError("XXtoo smallXX")',
        "the message is never shown to anyone in this sample",
    )
    # An entry whose line no longer matches its mutant (the code changed)
    # leaves that mutant to mutmut.
    changed = Equivalent("kernel/sample.py", "Box.put", "gone", "gone too", "a line that no longer exists here")
    keys = {entry.key() for entry in (listed, changed)}
    describer = Describer(root)
    data = Data()
    names = sorted(CODES)
    items = [(data, name, None) for name in names]

    def collect(*, mutant_names: tuple[str, ...]) -> tuple[list[Any], None]:
        return list(items), None

    def is_listed(of: Any, name: str) -> bool:
        return describer.key(of.path, name) in keys

    kept, _ = leaving_out(collect, set(), is_listed)(mutant_names=())
    assert [name for _, name, _ in kept] == [
        "planfold.kernel.sample.x_read_int__mutmut_1",
        "planfold.kernel.sample.xǁBoxǁput__mutmut_1",
    ]
    assert data.exit_code_by_key == {"planfold.kernel.sample.x_read_int__mutmut_2": SKIPPED}
    # The description is the score's own: the skipped mutant counts as
    # equivalent, not against the score.
    skipped = [replace(m, status="skipped") if m.name in data.exit_code_by_key else m for m in load_mutants(root)]
    result = score(skipped, [listed])
    assert [m.name for m in result.equivalent] == ["planfold.kernel.sample.x_read_int__mutmut_2"]


def test_the_launcher_forgets_the_checkouts_tests_package_before_mutmut_runs_pytest_on_the_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # mutmut runs pytest in this process on the copy under mutants/; a tests
    # package still imported from the checkout would make the copy's
    # conftest resolve against it (an import-path mismatch on a second run).
    import mutmut.__main__ as mutmut  # noqa: PLC0415 (as the launcher imports it)

    seen: list[list[str]] = []

    def cli(*, args: list[str], prog_name: str) -> None:
        seen.append(sorted(name for name in sys.modules if name == "tests" or name.startswith("tests.")))

    monkeypatch.setattr(mutmut, "cli", cli)
    monkeypatch.delenv("PLANFOLD_MUTATION_IMPORT_TIME", raising=False)
    kept = {name: module for name, module in sys.modules.items() if name == "tests" or name.startswith("tests.")}
    assert "tests" in kept and "tests.mutation" in kept
    try:
        launch_main(["run"])
    finally:
        sys.modules.update(kept)  # the rest of this test session goes on with its own
    assert seen == [[]]
