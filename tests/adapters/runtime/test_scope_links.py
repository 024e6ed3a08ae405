"""The plan's scope decides on where a write really lands, end to end: a
session opened with ``open_runtime``, planfold's bash executor and the
directory resolver on a real workspace, a plan whose scope is ``src/``, and
each way a shell line could reach outside it through a link. Each is
refused (``outside-plan-scope``, the plan goes back to draft) and nothing
outside the scope changes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from planfold.adapters.llm.script_format import Expectation, ScriptStep
from planfold.adapters.llm.scripted import ScriptedClient
from planfold.adapters.runtime.resolve import directory_resolver
from planfold.adapters.runtime.review import ScriptedReviewer, approve
from planfold.adapters.runtime.shell_executor import ShellExecutor
from planfold.adapters.runtime.toolset import Session, open_runtime
from planfold.adapters.runtime.workspace import Workspace
from planfold.adapters.store.memory import MemoryStore
from planfold.kernel.payload import JSON
from planfold.kernel.tools.spec import ToolSpec
from tests.runtime_helpers import SPEC, call, exit_plan, plan_actions, say, ticking

BASH = ToolSpec("bash", "Run a command.", {"type": "object"}, "unknown", "shell")
SCOPED: dict[str, JSON] = {**SPEC, "scope": {"paths": ["src/"], "effects": ["write", "shell"]}}


@pytest.fixture
def world(tmp_path: Path) -> Path:
    """``repo/`` (the workspace: ``src/`` in scope, ``docs/`` not) next to
    ``outside/``, with links already in the tree."""
    root, outside = tmp_path / "repo", tmp_path / "outside"
    (root / "src").mkdir(parents=True)
    (root / "docs").mkdir()
    (outside / "dir").mkdir(parents=True)
    (root / "src" / "a.py").write_text("a\n")
    (root / "docs" / "guide.md").write_text("guide\n")
    (outside / "file").write_text("precious\n")
    (outside / "file").chmod(0o600)
    (outside / "dir" / "keep").write_text("keep\n")
    os.symlink("../../outside", root / "src" / "o")  # checked in: a link out of the workspace
    os.symlink("../../outside/file", root / "src" / "l")
    os.symlink("../../outside/dir", root / "src" / "dl")
    os.symlink("../docs", root / "src" / "docs")  # a link out of the scope, inside the workspace
    os.link(outside / "file", root / "src" / "h")  # a hard link to a file outside
    return root


def _snapshot(top: Path) -> dict[str, tuple[str, int, str]]:
    """Every entry under ``top``: kind, mode and content (or link text)."""
    out: dict[str, tuple[str, int, str]] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            info = path.lstat()
            if path.is_symlink():
                out[str(path.relative_to(top))] = ("link", info.st_mode, os.readlink(path))
            elif path.is_dir():
                out[str(path.relative_to(top))] = ("dir", info.st_mode, "")
            else:
                out[str(path.relative_to(top))] = ("file", info.st_mode, path.read_text())
    return out


def _outside_the_scope(root: Path) -> dict[str, Any]:
    """What must not change: the world around the workspace, and the
    workspace but for ``src/``."""
    world = _snapshot(root.parent)
    return {k: v for k, v in world.items() if not k.startswith("repo/src/") or k == "repo/src/h"}


def _session(root: Path, line: str) -> Session:
    replies = [exit_plan(SCOPED, None), call("bash", {"command": line}), say("Stopped.")]
    model = ScriptedClient(ScriptStep(r, Expectation()) for r in replies)
    session = open_runtime(
        MemoryStore(),
        "s1",
        model,
        ScriptedReviewer.of([approve()]),
        Workspace(),
        clock=ticking(),
        tools=(BASH,),
        executors={"bash": ShellExecutor(str(root), timeout=10)},
        resolver=directory_resolver(root),
    )
    session.runtime.submit("/plan")
    session.runtime.submit("Plan the change")
    return session


def _bash_result(session: Session) -> dict[str, Any]:
    [event] = [e for e in session.log.events if e.kind == "tool/result" and e.payload["tool"] == "bash"]
    return {"ok": event.payload["ok"], **json.loads(str(event.payload["output"]))}


@pytest.mark.parametrize(
    ("line", "code"),
    [
        ("ln -s ../../outside src/o2", "path-escapes"),  # ln names what it links to
        ("ln ../outside/file src/h2", "path-escapes"),
        ("cat src/a.py | tee src/o/secret", "target-unresolvable"),  # through a checked-in link
        ("chmod 777 src/l", "target-unresolvable"),
        ("truncate -s 0 src/h", "target-unresolvable"),  # a hard link to a file outside
        ("rm -rf src/dl/", "target-unresolvable"),
        ("mkdir -p src/o/new", "target-unresolvable"),
        ("touch src/o/new-file", "target-unresolvable"),
        ("touch src/docs/new.md", "resolved-outside-scope"),
        ("cp src/a.py src/docs", "resolved-outside-scope"),
        ("chmod -R 777 src", "target-unresolvable"),  # src holds links out
    ],
)
def test_a_shell_line_that_would_write_outside_the_scope_through_a_link_is_refused_and_changes_nothing(
    world: Path, line: str, code: str
) -> None:
    before = _outside_the_scope(world)
    session = _session(world, line)
    result = _bash_result(session)
    assert result["ok"] is False and result["error"]["code"] == "outside-plan-scope"
    assert code in [v["code"] for v in result["error"]["violations"]]
    assert plan_actions(session.log.events)[-1] == "realign" and session.log.state.plan.status == "draft"
    assert _outside_the_scope(world) == before
    assert not (world / "src" / "o2").exists() and not (world / "src" / "h2").exists()


def test_a_write_that_stays_inside_the_scope_runs_on_the_disk(world: Path) -> None:
    session = _session(world, "mkdir -p src/pkg && touch src/pkg/mod.py")  # && is unknown: refused
    assert _bash_result(session)["error"]["violations"][0]["code"] == "target-unknown"
    session = _session(world, "touch src/a.py src/new.py")
    assert _bash_result(session) == {"ok": True, "exit_code": 0, "stdout": "", "stderr": ""}
    assert (world / "src" / "new.py").exists()
    assert "realign" not in plan_actions(session.log.events)


def test_a_read_only_git_line_runs_under_a_scope(world: Path) -> None:
    session = _session(world, "git status")
    result = _bash_result(session)
    assert result["ok"] is True and "realign" not in plan_actions(session.log.events)


def test_the_in_memory_workspace_refuses_a_write_through_its_links_too() -> None:
    workspace = Workspace({"src/a.py": "a", "docs/guide.md": "g"}, links={"src/docs": "../docs"})
    replies = [
        exit_plan(SCOPED, None),
        call("write_file", {"path": "src/docs/guide.md", "content": "forged"}),
        say("Stopped."),
    ]
    session = open_runtime(
        MemoryStore(),
        "s1",
        ScriptedClient(ScriptStep(r, Expectation()) for r in replies),
        ScriptedReviewer.of([approve()]),
        workspace,
        clock=ticking(),
    )
    session.runtime.submit("/plan")
    session.runtime.submit("Plan the change")
    [event] = [e for e in session.log.events if e.kind == "tool/result" and e.payload["tool"] == "write_file"]
    output = json.loads(str(event.payload["output"]))
    assert [v["code"] for v in output["error"]["violations"]] == ["resolved-outside-scope"]
    assert workspace.files["docs/guide.md"] == "g" and workspace.writes == 0
