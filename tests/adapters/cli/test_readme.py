"""The documentation runs as written: after ``make demo`` on a fresh clone,
every command line in the ``sh`` and ``console`` blocks of the README and of
each page of ``docs/`` works exactly as printed, a ``console`` block's output
is the real output, and the hint the demo prints works too. Each page runs
in a clone of its own, where the demo has run."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.docs_blocks import DOCS, ROOT, page_blocks, runs_apart
from tests.pg_cluster import bindir
from tests.system_programs import go, postgres

README = ROOT / "README.md"
COMMAND_PAGES = [
    page
    for page in sorted(DOCS.glob("*.md"))
    if any(b.language in {"sh", "console"} and not runs_apart(b) for b in page_blocks(page))
]
#: The pages whose blocks start a PostgreSQL server of their own.
SERVER_PAGES = frozenset({"storage.md"})


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
    # the Go host's sources (docs/serve.md builds and runs it): a copy, so the build writes nothing here
    shutil.copytree(ROOT / "examples" / "go", clone / "examples" / "go")
    return clone


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


def _run_blocks(page: Path, clone: Path, env: dict[str, str] | None = None) -> tuple[list[str], str]:
    """Run every ``sh`` and ``console`` block of ``page`` in ``clone``: the
    commands that ran, and the hint ``make demo`` printed (if a block ran it)."""
    ran: list[str] = []
    hint = ""
    for block in page_blocks(page):
        if block.language not in {"sh", "console"} or runs_apart(block):
            continue
        lines = block.body.splitlines()
        commands = lines if block.language == "sh" else [line for line in lines if line.startswith("$ ")]
        for line in commands:
            assert not line.startswith(("planfold ", "$ planfold ")), f"{line!r}: the command is .venv/bin/planfold"
        if block.language == "sh":
            for line in filter(None, lines):
                command = line.split("#")[0].strip()
                if command == "make demo":
                    hint = _demo(clone)
                    continue
                if command.startswith("make "):
                    continue  # the other targets run this very test suite
                done = _sh(line, clone, env)
                assert done.returncode == 0, f"{block.where}: {line}\n{done.stdout}{done.stderr}"
                ran.append(command)
            continue
        ran += _run_console(lines, clone, block.where, env)
    return ran, hint


def _run_console(lines: list[str], clone: Path, where: str, env: dict[str, str] | None = None) -> list[str]:
    """Run each ``$`` line of a ``console`` block in ``clone`` and check that it
    prints the lines the block shows after it, exactly; the commands that ran."""
    shown: list[tuple[str, list[str]]] = []
    for line in lines:
        if line.startswith("$ "):
            shown.append((line[2:], []))
        else:
            shown[-1][1].append(line)
    for command, printed in shown:
        done = _sh(command, clone, env)
        assert (done.stdout + done.stderr).splitlines() == printed, f"{where}: {command}"
    return [command for command, _ in shown]


def _demo(clone: Path) -> str:
    """Run ``make demo``'s recipe in ``clone``; the audit hint it printed."""
    hint = ""
    for recipe in _make_recipe("demo"):
        done = _sh(recipe, clone)
        assert done.returncode == 0, done.stdout + done.stderr
        hint = done.stdout.split("check it again with: ")[1].splitlines()[0]
    return hint


def test_every_command_in_the_readme_runs_as_written(tmp_path: Path) -> None:
    clone = _clone(tmp_path)
    _, hint = _run_blocks(README, clone)
    assert hint == ".venv/bin/planfold audit --db demo.sqlite --session demo-1"
    done = _sh(hint, clone)
    assert done.returncode == 0 and "demo-1: ok" in done.stdout


def test_the_pages_with_commands_include_the_command_line_report_serve_and_storage() -> None:
    assert {"command-line.md", "report-and-fork.md", "serve.md", "storage.md"} <= {page.name for page in COMMAND_PAGES}


def _the_command_line_page_ran(ran: list[str], clone: Path) -> None:
    assert any(command.startswith(".venv/bin/planfold replay --db bad.jsonl") for command in ran)
    assert len(ran) >= 12 and any(command.startswith(".venv/bin/planfold import - ") for command in ran)
    assert (clone / "copy.sqlite").is_file() and (clone / "stdin.sqlite").is_file()


def _the_go_host_ran_its_session(ran: list[str], clone: Path) -> None:
    assert ran[-1] == ".venv/bin/planfold audit --db go-host.sqlite --session go-1"
    assert _sh(ran[-1], clone).stdout.startswith("go-1: ok, 35 events, 1 turns, mode build")


#: What a page's run must also have done, beyond every line succeeding, and
#: the programs it needs (checked first, so a missing one is named).
PAGE_CHECKS: dict[str, tuple[Callable[[list[str], Path], None], Callable[[], str] | None]] = {
    "command-line.md": (_the_command_line_page_ran, None),
    "serve.md": (_the_go_host_ran_its_session, go),
}


@pytest.mark.parametrize("page", COMMAND_PAGES, ids=lambda page: page.name)
def test_every_command_of_each_page_runs_as_written_after_make_demo(page: Path, tmp_path: Path) -> None:
    check, needs = PAGE_CHECKS.get(page.name, (None, None))
    if needs is not None:
        needs()
    clone = _clone(tmp_path)
    _demo(clone)
    if page.name in SERVER_PAGES:
        with _server_home() as env:
            ran, _ = _run_blocks(page, clone, env)
    else:
        ran, _ = _run_blocks(page, clone)
    assert ran
    if check is not None:
        check(ran, clone)


@contextlib.contextmanager
def _server_home() -> Iterator[dict[str, str]]:
    """The environment the storage page's commands run in: ``HOME`` a new
    folder and ``pg_config`` on the ``PATH``. PostgreSQL refuses to run as
    root, so as root that folder belongs to the ``postgres`` user, and the
    page's server commands run as that user. A server the page left running
    is stopped at the end, and the folder removed."""
    postgres()
    home = Path(tempfile.mkdtemp(prefix="planfold-docs-"))
    if os.geteuid() == 0:
        shutil.chown(home, "postgres")
    env = {"HOME": str(home), "PATH": f"{bindir()}:{os.environ['PATH']}"}
    try:
        yield env
    finally:
        if (home / "planfold-pg" / "postmaster.pid").exists():
            _sh('"$(pg_config --bindir)/pg_ctl" -D "$HOME/planfold-pg" -m immediate -w stop', home, env)
        shutil.rmtree(home, ignore_errors=True)


def _sh(line: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = os.environ | (env or {})
    command = ["bash", "-c", line]
    if env is not None and os.geteuid() == 0 and line.startswith('"$(pg_config'):
        command = ["runuser", "-u", "postgres", "--", "env", f"HOME={env['HOME']}", f"PATH={env['PATH']}", *command]
    return subprocess.run(command, cwd=cwd, env=full, capture_output=True, text=True, check=False)
