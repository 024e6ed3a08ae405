"""The JavaScript host in ``examples/`` runs under Node against ``planfold
serve`` and drives a whole plan-then-build session whose log audits clean,
and its JSDoc type-checks under ``tsc --strict`` against the protocol's
generated types (without Node, or without the npm packages of ``examples/``,
the tests are skipped, or fail under PLANFOLD_REQUIRE_NODE=1: see
``tests.system_programs``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.adapters.serve.hosts import check_a_completed_session
from tests.system_programs import EXAMPLES, node, node_packages

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "serve_client.mjs"


def test_the_javascript_host_drives_a_plan_then_build_session_whose_log_audits_clean(tmp_path: Path) -> None:
    db = tmp_path / "example.sqlite"
    done = subprocess.run(
        [node(), str(EXAMPLE), str(db), sys.executable, "-m", "planfold.adapters.cli", "serve"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    check_a_completed_session(done, db, "example-1")


def test_the_javascript_host_type_checks_against_the_generated_types_under_tsc_strict() -> None:
    program = node()
    tsc = node_packages() / "typescript" / "bin" / "tsc"
    flags = ("--noEmit", "--allowJs", "--checkJs", "--strict", "--target", "es2022", "--module", "nodenext")
    done = subprocess.run(
        [program, str(tsc), *flags, EXAMPLE.name],
        capture_output=True, text=True, timeout=300, check=False, cwd=EXAMPLES,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert 'import("./planfold-rpc.js").RequestContext' in EXAMPLE.read_text(encoding="utf-8")
