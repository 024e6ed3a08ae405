"""A runtime over a scripted model and a one-file workspace, and a turn of it
run in a fresh interpreter: for the tests of what planfold does to a program
that only embeds it (no logging configured, no tracing imported)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from planfold.adapters.llm.model import ChatResponse
from planfold.adapters.llm.scripted import ScriptedClient
from planfold.adapters.runtime.loop import Runtime
from planfold.adapters.runtime.tool_runner import ToolRunner
from planfold.adapters.runtime.toolset import default_registry
from planfold.adapters.runtime.workspace import Workspace
from planfold.adapters.store.memory import MemoryStore

ROOT = Path(__file__).resolve().parents[2]


def scripted_runtime(store: MemoryStore, *replies: ChatResponse) -> Runtime:
    """Session ``s`` on ``store``, its model answering ``replies`` in turn."""
    workspace = Workspace({"a.txt": "alpha"})
    tools = ToolRunner(default_registry(), executors=workspace.executors(), resolver=workspace.resolver())
    return Runtime(store, "s", ScriptedClient.replies(*replies), tools)


def turn_in_a_fresh_interpreter(replies: str, then: str = "") -> subprocess.CompletedProcess[str]:
    """Run one turn of ``scripted_runtime`` over a memory store in a new Python
    process: ``replies`` is the Python text of its replies (``call`` and ``say``
    of ``tests.runtime_helpers`` are imported), ``then`` more lines of the
    program to run after the turn. What the process did, with its output."""
    program = (
        "import sys\n"
        "from tests.runtime_helpers import call, say\n"
        "from tests.adapters.scripted_turn import scripted_runtime\n"
        "from planfold.adapters.store.memory import MemoryStore\n"
        f"scripted_runtime(MemoryStore(), {replies}).submit('go')\n"
        f"{then}"
    )
    return subprocess.run([sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, check=False)
