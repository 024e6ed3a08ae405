"""The JavaScript host in ``examples/`` runs under Node against ``planfold
serve`` and drives a whole plan-then-build session whose log audits clean."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from planfold.adapters.cli.main import main
from planfold.adapters.store.sqlite import SqliteStore
from planfold.kernel.session import fold_session

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "serve_client.mjs"
NODE = shutil.which("node")


def _major(node: str) -> int:
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout
    return int(version.strip().lstrip("v").split(".")[0])


def test_the_javascript_host_drives_a_plan_then_build_session_whose_log_audits_clean(tmp_path: Path) -> None:
    assert NODE is not None, "the example needs Node 20 or later on the PATH"
    assert _major(NODE) >= 20
    db = tmp_path / "example.sqlite"
    done = subprocess.run(
        [NODE, str(EXAMPLE), str(db), sys.executable, "-m", "planfold.adapters.cli", "serve"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mode build, plan plan-" in done.stdout and "completed" in done.stdout
    assert main(["audit", str(db)]) == 0
    with SqliteStore(db) as store:
        state = fold_session(store.read("example-1"))
    assert state.plan.current is not None and state.plan.current.status == "completed"
    assert not state.plan_mode and not state.turns.open
