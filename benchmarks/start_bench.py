"""Cold starts: ``planfold --version``, one scripted turn and ``planfold
serve`` to its first answer, each in a fresh interpreter.

Theory of operation
-------------------
Start costs are measured as a user pays them: the wheel is built from this
checkout and installed into a fresh virtual environment (not the editable
install, whose finder changes what an import costs); the environment sees
the runtime's dependencies (msgspec, cattrs, httpx) through a ``.pth`` line
naming the site directory they are installed in, after its own. One untimed
run of each program comes first, so that bytecode caches exist; then
``import_runs`` rounds run, in turns, each of:

- ``python -c pass``, the bare interpreter: the baseline;
- ``planfold --version`` by the wheel's console script, which imports no
  machine (``adapters.cli.entry``), held to the goal of at most twice the
  bare interpreter's wall time (the median of the pairs' quotients);
- every kernel machine imported (``plan``, ``goal``, ``tools``,
  ``session``, ``graph``), for information;
- one scripted turn: a program that opens a new session on a new SQLite
  file through ``open_runtime``, runs one turn against a scripted model that
  answers with one line, and exits, for information;
- ``planfold serve --db :memory:`` from its start until its answer to a
  ``session/open`` request is read, for information.

Each is reported as its median wall time in ms and as a quotient over the
bare interpreter's time in the same round.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import venv
from collections.abc import Callable
from pathlib import Path

import msgspec

from benchmarks.harness import FamilyResult, Measurement, Ratio, Scale, median, ratio

__all__ = ["EVERY_MACHINE", "ROOT", "SCRIPTED_TURN", "install_fresh", "run_start", "serve_first_answer"]

START = "cold-start"
#: The repository root: the wheel is built from here.
ROOT = Path(__file__).resolve().parent.parent

#: Every machine of the kernel imported.
EVERY_MACHINE = "import planfold.kernel; from planfold.kernel import goal, graph, plan, session, tools"
#: One turn of a new session on a new SQLite file (argv[1]), the model scripted.
SCRIPTED_TURN = """\
import sys
from planfold.adapters.llm.model import ChatResponse
from planfold.adapters.llm.scripted import ScriptedClient
from planfold.adapters.runtime.toolset import open_runtime
from planfold.adapters.runtime.workspace import Workspace
from planfold.adapters.store.sqlite import SqliteStore
store = SqliteStore(sys.argv[1])
model = ScriptedClient.replies(ChatResponse("Noted.", finish_reason="stop"))
open_runtime(store, "cold", model, None, Workspace()).runtime.run_turn("Hello.")
store.close()
"""


def _clean_env() -> dict[str, str]:
    """This process's environment without ``PYTHONPATH``, which would let the
    fresh environment see the checkout instead of the installed wheel, and
    without ``PYTHONDONTWRITEBYTECODE``, which would make every run compile
    the modules again (an installed package has its bytecode cached)."""
    return {name: value for name, value in os.environ.items() if name not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}


def install_fresh(workdir: Path) -> Path:
    """A fresh virtual environment under ``workdir`` with planfold's wheel
    installed and this environment's dependencies visible after it; its python."""
    wheels = workdir / "wheel"
    pip = (sys.executable, "-m", "pip")
    build = (*pip, "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(ROOT))
    subprocess.run(build, check=True, capture_output=True, env=_clean_env())
    [wheel] = wheels.glob("planfold-*.whl")
    env = workdir / "start-env"
    venv.create(env, with_pip=False, clear=True)
    python = env / "bin" / "python"
    install = (*pip, "--python", str(python), "install", "--quiet", "--no-deps", "--no-index", str(wheel))
    subprocess.run(install, check=True, capture_output=True, env=_clean_env())
    own = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                         check=True, capture_output=True, text=True, env=_clean_env()).stdout.strip()
    # The dependencies' site directory as a plain path: its own .pth files
    # (the editable install's finder among them) are not processed.
    Path(own, "planfold-bench-dependencies.pth").write_text(str(Path(msgspec.__file__).parent.parent) + "\n")
    return python


def _wall(command: list[str], cwd: Path) -> float:
    """Milliseconds ``command`` takes to run to its end."""
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=True, env=_clean_env())
    return (time.perf_counter() - start) * 1000


def serve_first_answer(python: Path) -> float:
    """Milliseconds from starting the environment's ``planfold serve --db
    :memory:`` to reading its answer to one ``session/open``; then its input
    is closed and it is waited for."""
    request = msgspec.json.encode(
        {"jsonrpc": "2.0", "id": 1, "method": "session/open", "params": {"session": "cold"}}
    )
    start = time.perf_counter()
    child = subprocess.Popen(
        [str(python.parent / "planfold"), "serve", "--db", ":memory:"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=python.parent,
        env=_clean_env(),
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        child.stdin.write(request + b"\n")
        child.stdin.flush()
        answer = child.stdout.readline()
        elapsed = (time.perf_counter() - start) * 1000
    finally:
        child.stdin.close()
        child.wait(30)
        child.stdout.close()
    if b'"result"' not in answer:
        raise RuntimeError(f"planfold serve did not answer session/open: {answer!r}")
    return elapsed


PASS = "python -c 'pass'"
VERSION = "planfold --version"
MACHINES = "import planfold.kernel + every machine"
TURN = "one scripted turn (new session, SQLite)"
SERVE = "planfold serve to its first answer (session/open)"


def run_start(scale: Scale, workdir: Path) -> FamilyResult:
    """Wall ms of each cold start against a bare interpreter's, fresh
    interpreters of a wheel install, taken in turns."""
    python = install_fresh(workdir)
    cwd = python.parent
    db = iter(range(1_000_000))
    programs: dict[str, Callable[[], float]] = {
        PASS: lambda: _wall([str(python), "-c", "pass"], cwd),
        VERSION: lambda: _wall([str(cwd / "planfold"), "--version"], cwd),
        MACHINES: lambda: _wall([str(python), "-c", EVERY_MACHINE], cwd),
        TURN: lambda: _wall([str(python), "-c", SCRIPTED_TURN, str(workdir / f"turn-{next(db)}.db")], cwd),
        SERVE: lambda: serve_first_answer(python),
    }
    for program in programs.values():
        program()
    walls: dict[str, list[float]] = {name: [] for name in programs}
    for _ in range(scale.import_runs):
        for name, program in programs.items():
            walls[name].append(program())
    notes = {
        PASS: "the baseline",
        VERSION: "the wheel's console script; imports no machine",
        TURN: "open_runtime, one turn against a scripted model, exit",
        SERVE: "the wheel's console script, --db :memory:",
    }
    found = {
        name: Measurement(START, name, "ms", median(samples), tuple(samples), notes.get(name, ""))
        for name, samples in walls.items()
    }
    bare = found[PASS]
    ratios: list[Ratio] = [
        ratio(START, "planfold --version wall time / python -c pass", found[VERSION], bare,
              direction="at-most", bound=2.0,
              how="wall time of the wheel's console script over a bare interpreter's, run in turns; "
              "median of the pairs' quotients"),
    ]
    ratios += [
        ratio(START, f"{name} / python -c pass", found[name], bare, direction="at-most", bound=None,
              how="wall times in fresh interpreters, run in turns; median of the pairs' quotients; for information")
        for name in (MACHINES, TURN, SERVE)
    ]
    return FamilyResult(START, tuple(found.values()), tuple(ratios))
