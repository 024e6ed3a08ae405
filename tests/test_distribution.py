"""The distribution as a runtime developer installs it: one import package,
``planfold``, that lives beside distributions owning the names ``kernel`` and
``adapters``, and a public surface that a consumer's ``mypy --strict`` sees.
From the installed wheel alone, ``python -m planfold`` is the command line,
``planfold conform`` checks the conformance vectors the wheel ships, and the
store contract suite runs (its ``contract`` extra names pytest and Hypothesis);
the README's installation lines name the wheel this build makes.

The wheel is built from this checkout without build isolation (setuptools is
in the dev extra) and installed into a fresh virtual environment; the adapters' dependencies
(msgspec, cattrs, httpx) come from the test's own environment through a
path entry, so nothing is fetched. The wheel carries the license text."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import sysconfig
import textwrap
import venv
import zipfile
from pathlib import Path

import pytest

import planfold
import planfold.kernel

ROOT = Path(__file__).resolve().parents[1]
MACHINES = ("plan", "goal", "tools", "session", "graph")


def _run(*command: str | Path, cwd: Path | None = None) -> str:
    # nothing from the caller's environment may put another planfold on the path
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME"}}
    done = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{command} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _wheel(source: Path, out: Path) -> Path:
    _run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", out, source)
    [wheel] = out.glob("*.whl")
    return wheel


def _stand_in(tmp: Path) -> Path:
    """A distribution that ships top-level ``kernel`` and ``adapters``, as
    the PyPI distributions of those names do."""
    project = tmp / "stand-in"
    bodies = {"kernel": "class Kernel:\n    name = 'stand-in'\n", "adapters": "ADAPTERS = 'stand-in'\n"}
    for name, body in bodies.items():
        (project / name).mkdir(parents=True)
        (project / name / "__init__.py").write_text(body, encoding="utf-8")
    (project / "pyproject.toml").write_text(
        textwrap.dedent(
            """
            [build-system]
            requires = ["setuptools>=77"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "stand-in-kernel-adapters"
            version = "1.0"

            [tool.setuptools]
            packages = ["kernel", "adapters"]
            """
        ),
        encoding="utf-8",
    )
    return _wheel(project, tmp / "stand-in-dist")


@pytest.fixture(scope="module")
def planfold_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _wheel(ROOT, tmp_path_factory.mktemp("dist"))


def _installed(wheel: Path, tmp: Path) -> Path:
    """A fresh virtual environment with ``wheel`` installed; its other
    packages (msgspec, cattrs, httpx, pytest, Hypothesis) come from the test's own
    environment through a path entry (which runs no editable install's .pth),
    so nothing is fetched. Returns its python."""
    env = tmp / "env"
    venv.create(env, with_pip=False)
    python = env / "bin" / "python"
    site = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip())
    (site / "zz-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    _run(sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps", "--no-index", wheel)
    return python


def test_the_wheel_installs_exactly_one_top_level_package_planfold(planfold_wheel: Path) -> None:
    names = zipfile.ZipFile(planfold_wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"planfold"}
    assert "planfold/kernel/py.typed" in names and "planfold/adapters/py.typed" in names
    assert "planfold/py.typed" in names  # a consumer's mypy reads `from planfold import ...` as typed
    assert "planfold/kernel/plan/mode.py" in names and "planfold/adapters/store/sqlite.py" in names


def test_the_wheel_carries_the_apache_license_text_and_its_metadata_names_it(planfold_wheel: Path) -> None:
    wheel = zipfile.ZipFile(planfold_wheel)
    [shipped] = [name for name in wheel.namelist() if name.endswith(".dist-info/licenses/LICENSE")]
    text = wheel.read(shipped).decode("utf-8")
    assert text == (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text and "APPENDIX: How to apply the Apache License" in text
    [metadata] = [name for name in wheel.namelist() if name.endswith(".dist-info/METADATA")]
    lines = wheel.read(metadata).decode("utf-8").splitlines()
    assert "License-Expression: Apache-2.0" in lines and "License-File: LICENSE" in lines


def test_planfold_and_a_distribution_owning_kernel_and_adapters_install_and_import_side_by_side(
    planfold_wheel: Path, tmp_path: Path
) -> None:
    env = tmp_path / "env"
    venv.create(env, with_pip=False)
    python = env / "bin" / "python"
    site = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip())
    # msgspec (and nothing of planfold: the editable install is a .pth that
    # a path entry does not run) from the test's own environment
    (site / "zz-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    pip = (sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps", "--no-index")
    _run(*pip, _stand_in(tmp_path), planfold_wheel)
    probe = (
        "import kernel, adapters, planfold, planfold.kernel, planfold.adapters.store.sqlite;"
        "from planfold.kernel.plan import fold_plan_mode;"
        f"print(kernel.Kernel.name, adapters.ADAPTERS, planfold.kernel.__file__.startswith({str(site)!r}),"
        " fold_plan_mode([]))"
    )
    assert _run(python, "-c", probe, cwd=tmp_path).split() == ["stand-in", "stand-in", "True", "False"]
    # removing the stand-in leaves planfold whole
    _run(sys.executable, "-m", "pip", "--python", python, "uninstall", "--quiet", "--yes", "stand-in-kernel-adapters")
    assert _run(python, "-c", "import planfold.kernel.goal; print('ok')", cwd=tmp_path).strip() == "ok"
    assert not (site / "kernel").exists() and (site / "planfold" / "kernel" / "__init__.py").is_file()


def test_a_consumer_importing_every_public_name_type_checks_under_mypy_strict(tmp_path: Path) -> None:
    names = sorted(planfold.kernel.__all__)
    machines = {name: sorted(importlib.import_module(f"planfold.kernel.{name}").__all__) for name in MACHINES}
    lines = ["from __future__ import annotations", "", "from planfold.kernel import ("]
    lines += [f"    {name}," for name in names]
    lines.append(")")
    for machine, exported in machines.items():
        lines.append(f"from planfold.kernel.{machine} import (")
        lines += [f"    {name} as {machine}_{name}," for name in exported]
        lines.append(")")
    lines += ["", "every = ["]
    lines += [f"    {name}," for name in names]
    lines += [f"    {machine}_{name}," for machine, exported in machines.items() for name in exported]
    lines += ["]", "print(len(every))", ""]
    consumer = tmp_path / "consumer.py"
    consumer.write_text("\n".join(lines), encoding="utf-8")
    mypy = (sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / ".mypy"))
    out = subprocess.run(
        [*mypy, str(consumer)],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Success: no issues found in 1 source file" in out.stdout


def test_the_wheel_ships_the_conformance_vectors_and_the_contract_extra(planfold_wheel: Path) -> None:
    wheel = zipfile.ZipFile(planfold_wheel)
    shipped = {
        name.removeprefix("planfold/adapters/specgen/conformance/")
        for name in wheel.namelist()
        if name.startswith("planfold/adapters/specgen/conformance/")
    }
    published = {path.name for path in (ROOT / "specs" / "vectors").iterdir()}
    assert shipped == published and len(shipped) > 50
    [metadata] = [name for name in wheel.namelist() if name.endswith(".dist-info/METADATA")]
    lines = wheel.read(metadata).decode("utf-8").splitlines()
    assert "Provides-Extra: contract" in lines
    contract = {line.split(";")[0].removeprefix("Requires-Dist: ") for line in lines if "extra == \"contract\"" in line}
    assert {name.split(">")[0] for name in contract} == {"pytest", "hypothesis"}


def test_from_the_installed_wheel_python_m_planfold_runs_and_conform_checks_the_shipped_vectors(
    planfold_wheel: Path, tmp_path: Path
) -> None:
    python = _installed(planfold_wheel, tmp_path)
    assert _run(python, "-m", "planfold", "--version", cwd=tmp_path).strip() == f"planfold {planfold.__version__}"
    where = _run(python, "-c", "import planfold; print(planfold.__file__)", cwd=tmp_path).strip()
    assert where.startswith(str(tmp_path / "env"))
    vectors = len(list((ROOT / "specs" / "vectors").glob("*.jsonl")))
    assert _run(python, "-m", "planfold", "conform", cwd=tmp_path).strip() == f"{vectors}/{vectors} vectors passed"


def test_the_store_contract_suite_runs_from_the_installed_wheel(planfold_wheel: Path, tmp_path: Path) -> None:
    python = _installed(planfold_wheel, tmp_path)
    consumer = tmp_path / "consumer"
    consumer.mkdir()
    (consumer / "test_my_store.py").write_text(
        textwrap.dedent(
            """
            import pytest
            from planfold.adapters.store.contract import StoreContract, StoreKit
            from planfold.adapters.store.memory import MemoryStore

            class TestMyStore(StoreContract):
                example_divisor = 10

                @pytest.fixture
                def store_maker(self):
                    return lambda clock: StoreKit.same(MemoryStore(clock=clock))
            """
        ),
        encoding="utf-8",
    )
    out = _run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_my_store.py", cwd=consumer)
    assert " passed" in out and "failed" not in out and "skipped" not in out


def test_the_readme_installs_from_a_checkout_and_from_the_wheel_this_build_makes(planfold_wheel: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Installing", 1)[1].split("\n## ", 1)[0]
    assert "pip install planfold\n" not in readme and "pip install planfold`" not in readme
    assert "pip install ." in section and "pip wheel --no-deps -w dist ." in section
    assert f"pip install dist/{planfold_wheel.name}" in section
    assert "python -m planfold" in section


def test_a_consumer_of_the_installed_wheel_runs_the_quick_start_and_type_checks_it_under_mypy_strict(
    planfold_wheel: Path, tmp_path: Path
) -> None:
    from tests.docs_blocks import run_program  # noqa: PLC0415
    from tests.test_embedding import quick_start  # noqa: PLC0415

    python = _installed(planfold_wheel, tmp_path)
    work = tmp_path / "consumer"
    paths = []
    for index, block in enumerate(quick_start()):
        folder = work / f"quick_{index}"
        folder.mkdir(parents=True)
        done = run_program(python, block, folder)
        assert done.returncode == 0, done.stdout + done.stderr
        assert block.shown is not None and done.stdout.splitlines() == block.shown.splitlines()
        paths.append(work / f"quick_{index}.py")
        paths[-1].write_text(block.body, encoding="utf-8")
    where = _run(python, "-c", "import planfold; print(planfold.__file__)", cwd=work).strip()
    assert where.startswith(str(tmp_path / "env"))
    assert "Success" in _run(python, "-m", "mypy", "--strict", "--no-incremental", *paths, cwd=work)
