"""The TypeScript types of ``planfold serve`` and the TypeScript host in
``examples/``: ``planfold-rpc.d.ts`` is what json-schema-to-typescript makes
of the committed OpenRPC document (regenerated here and compared; its header
records the document's SHA-256, which is checked even without Node), it has
no ``any``, and ``host.mts`` compiles under ``tsc --strict`` against it and
drives a plan-mode turn whose log audits clean.

The tests that run Node need it and the npm packages of ``examples/`` (``npm
ci`` there): without them they are skipped, or fail under
PLANFOLD_REQUIRE_NODE=1 (``tests.system_programs``)."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

from planfold.adapters.serve.openrpc import OPENRPC_FILE, openrpc_text
from tests.adapters.serve.hosts import check_a_completed_session
from tests.system_programs import EXAMPLES, node, node_packages

ROOT = Path(__file__).resolve().parents[3]
DOCUMENT = ROOT / "specs" / OPENRPC_FILE
TYPES = EXAMPLES / "planfold-rpc.d.ts"
FIX = "regenerate with `make diagrams` (node examples/generate-types.mjs) and commit examples/planfold-rpc.d.ts"


def _run(*command: str | Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(part) for part in command], capture_output=True, text=True, timeout=timeout, check=False, cwd=EXAMPLES
    )


def _code(text: str) -> str:
    """``text`` without its comments and string literals."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.DOTALL)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', text)


def test_the_types_record_the_sha256_of_the_committed_openrpc_document() -> None:
    recorded = re.search(r"openrpc-sha256: ([0-9a-f]{64})", TYPES.read_text(encoding="utf-8"))
    assert recorded is not None, f"examples/planfold-rpc.d.ts has no openrpc-sha256 header: {FIX}"
    assert DOCUMENT.read_text(encoding="utf-8") == openrpc_text()
    assert recorded.group(1) == hashlib.sha256(DOCUMENT.read_bytes()).hexdigest(), f"the types are stale: {FIX}"


def test_the_types_have_no_any() -> None:
    code = _code(TYPES.read_text(encoding="utf-8"))
    assert "export interface PlanfoldMethods" in code and "export type RpcErrorCode" in code
    assert re.findall(r"\bany\b", code) == []


def test_the_comment_stripper_sees_an_any_of_code_and_not_one_of_prose() -> None:
    text = '/** any JSON value */\nexport type A = any; // any\nexport type B = "any";\n'
    assert re.findall(r"\bany\b", _code(text)) == ["any"]


def test_the_committed_types_are_what_the_generator_makes_of_the_document(tmp_path: Path) -> None:
    program = node()
    node_packages()
    fresh = tmp_path / "planfold-rpc.d.ts"
    done = _run(program, "generate-types.mjs", DOCUMENT, fresh)
    assert done.returncode == 0, done.stdout + done.stderr
    assert fresh.read_text(encoding="utf-8") == TYPES.read_text(encoding="utf-8"), FIX


def test_the_types_name_every_method_with_its_params_and_result() -> None:
    methods = [method["name"] for method in json.loads(DOCUMENT.read_text(encoding="utf-8"))["methods"]]
    code = TYPES.read_text(encoding="utf-8")
    for name in methods:
        assert f'"{name}": {{' in code, name
    assert "params: ToolResultParams;\n    result: ToolAnswered;" in code


def test_the_typescript_host_compiles_under_tsc_strict_and_drives_a_plan_mode_turn(tmp_path: Path) -> None:
    program = node()
    modules = node_packages()
    build = tmp_path / "build"
    tsc = modules / "typescript" / "bin" / "tsc"
    compiled = _run(program, tsc, "-p", "tsconfig.json", "--strict", "--outDir", build)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    db = tmp_path / "host.sqlite"
    command = (sys.executable, "-m", "planfold.adapters.cli", "serve")
    done = _run(program, build / "host.mjs", db, *command, timeout=120)
    check_a_completed_session(done, db, "typescript-1")
    assert "/plan: committed" in done.stdout and "exit_plan_mode: approved" in done.stdout
