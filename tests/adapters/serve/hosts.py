"""What every host program of ``examples/`` must leave behind when it has
driven its plan-then-build session over ``planfold serve``."""

from __future__ import annotations

import subprocess
from pathlib import Path

from planfold.adapters.cli.main import main
from planfold.adapters.store.sqlite import SqliteStore
from planfold.kernel.session import fold_session


def check_a_completed_session(done: subprocess.CompletedProcess[str], db: Path, session: str) -> None:
    """The host exited 0 saying the plan completed in build mode; the store
    audits clean and ``session`` folds to a completed plan in build mode with
    no turn left open."""
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mode build, plan plan-" in done.stdout and "completed" in done.stdout
    assert main(["audit", "--db", str(db)]) == 0
    with SqliteStore(db) as store:
        state = fold_session(store.read(session))
    assert state.plan.current is not None and state.plan.current.status == "completed"
    assert not state.plan_mode and not state.turns.open
