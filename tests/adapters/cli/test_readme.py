"""The README runs as written: after ``make demo`` on a fresh clone, every
command line in its ``sh`` and ``console`` blocks works exactly as printed,
a ``console`` block's output is the real output, and the hint the demo
prints works too."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "README.md"
BLOCK = re.compile(r"^```(sh|console)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def _make_recipe(target: str) -> list[str]:
    """The recipe of ``target`` in the Makefile, with its variables filled in."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    # each variable's first definition: the default one (VENV is defined again for another PYTHON)
    variables = dict(reversed(re.findall(r"^(\w+)\s*[:?]?=\s*(.*?)\s*$", text, re.MULTILINE)))
    body = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", text, re.MULTILINE)
    assert body is not None, f"the Makefile has no {target} target"

    def fill(line: str) -> str:
        while (found := re.search(r"\$\((\w+)\)", line)) is not None:
            line = line.replace(found.group(0), variables[found.group(1)])
        return line

    return [fill(line.strip()) for line in body.group(1).splitlines()]


def _clone(tmp_path: Path) -> Path:
    """A directory laid out as a fresh clone after the Makefile built
    ``.venv``: its ``.venv/bin/planfold`` is the console script pip writes
    for ``[project.scripts]``, running the planfold under test, and
    ``specs/`` is the repository's."""
    clone = tmp_path / "clone"
    program = clone / ".venv" / "bin" / "planfold"
    program.parent.mkdir(parents=True)
    script = f"#!{sys.executable}\nimport sys\nfrom planfold.adapters.cli.main import main\nsys.exit(main())\n"
    program.write_text(script, encoding="utf-8")
    program.chmod(0o755)
    (clone / "specs").symlink_to(ROOT / "specs")
    return clone


def _sh(line: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", line], cwd=cwd, capture_output=True, text=True, check=False)


def test_the_make_targets_install_the_command_the_readme_runs_and_demo_installs_the_runtime_alone() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["scripts"]["planfold"] == "planfold.adapters.cli.entry:main"
    assert "license" not in project or isinstance(project["license"], str)  # no deprecated {text = ...} table
    # make demo installs the runtime alone; make test adds the dev extra, make bench the bench extra
    runtime = _make_recipe(r"\$\(RUNTIME\)")
    assert "-m venv .venv" in " ".join(runtime) and ".venv/bin/python -m pip install --quiet -e ." in runtime
    assert not [line for line in runtime if "[" in line]
    assert _make_recipe(r"\$\(STAMP\)")[0] == ".venv/bin/python -m pip install --quiet -e '.[dev]'"
    assert _make_recipe(r"\$\(BENCH\)")[0] == ".venv/bin/python -m pip install --quiet -e '.[dev,bench]'"
    assert _make_recipe("demo") == [".venv/bin/planfold demo --db demo.sqlite"]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^demo: \$\(RUNTIME\)$", makefile, re.MULTILINE)
    assert re.search(r"^unit: \$\(STAMP\)$", makefile, re.MULTILINE)
    assert re.search(r"^bench: \$\(BENCH\)$", makefile, re.MULTILINE)


def test_every_command_in_the_readme_runs_as_written(tmp_path: Path) -> None:
    clone = _clone(tmp_path)
    text = README.read_text(encoding="utf-8")
    blocks = BLOCK.findall(text)
    assert len(blocks) >= 3
    ran: list[str] = []
    hint = ""
    for kind, body in blocks:
        lines = body.splitlines()
        for line in lines:
            assert not line.startswith(("planfold ", "$ planfold ")), f"{line!r}: the command is .venv/bin/planfold"
        if kind == "sh":
            for line in filter(None, lines):
                command = line.split("#")[0].strip()
                if command == "make demo":
                    for recipe in _make_recipe("demo"):
                        done = _sh(recipe, clone)
                        assert done.returncode == 0, done.stdout + done.stderr
                        hint = done.stdout.split("check it again with: ")[1].splitlines()[0]
                    continue
                if command.startswith("make "):
                    continue  # the other targets run this very test suite
                done = _sh(line, clone)
                assert done.returncode == 0, f"{line}\n{done.stdout}{done.stderr}"
                ran.append(command)
            continue
        expected: dict[str, list[str]] = {}
        order: list[str] = []
        for line in lines:
            if line.startswith("$ "):
                order.append(line[2:])
                expected[line[2:]] = []
            else:
                expected[order[-1]].append(line)
        for command in order:
            done = _sh(command, clone)
            assert (done.stdout + done.stderr).splitlines() == expected[command], command
            ran.append(command)
    assert hint == ".venv/bin/planfold audit --db demo.sqlite --session demo-1"
    done = _sh(hint, clone)
    assert done.returncode == 0 and "demo-1: ok" in done.stdout
    assert any(command.startswith(".venv/bin/planfold replay --db bad.jsonl") for command in ran)
    assert len(ran) >= 8
