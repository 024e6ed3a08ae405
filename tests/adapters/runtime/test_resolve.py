"""Resolving where a write lands: through symbolic links, chains, loops, links
out of the workspace, hard links and the directories a write reaches, on a
real directory and on the in-memory workspace alike; and what the runtimes
do with a resolver that raises."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from planfold.adapters.llm.model import ChatRequest, ChatResponse, ToolCall
from planfold.adapters.runtime.machine import TurnReport
from planfold.adapters.runtime.resolve import (
    DirectoryTree,
    ResolverError,
    TreeResolver,
    directory_resolver,
    resolve_effect,
    resolved_effects,
)
from planfold.adapters.runtime.tool_runner import ToolRunner
from planfold.adapters.runtime.toolset import default_registry
from planfold.adapters.runtime.workspace import ToolFailure, Workspace
from planfold.adapters.store.memory import MemoryStore
from planfold.kernel.plan.scope import Effect, ResolvedTarget
from planfold.kernel.session import fold_session
from planfold.kernel.tools.events import read_tool_result
from planfold.kernel.tools.spec import ToolSpec
from planfold.kernel.turn import CALL_INTERRUPTED
from tests.runtime_helpers import BrokenResolver, bootstrap, call, run_turns, say


def _places(resolved: tuple[ResolvedTarget, ...]) -> list[str | None]:
    return [target.path for target in resolved]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``repo/`` (the workspace) next to ``outside/``; ``repo/src`` holds a
    file, a link out, a link up and out, a chain, a loop and a dangling link."""
    root = tmp_path / "repo"
    (root / "src" / "sub").mkdir(parents=True)
    (root / "docs").mkdir()
    (tmp_path / "outside").mkdir()
    (root / "src" / "a.py").write_text("a")
    (root / "docs" / "guide.md").write_text("g")
    os.symlink("../../outside", root / "src" / "o")
    os.symlink("../docs", root / "src" / "d")
    os.symlink("d", root / "src" / "chain")
    os.symlink("loop2", root / "src" / "loop1")
    os.symlink("loop1", root / "src" / "loop2")
    os.symlink("nowhere/at/all", root / "src" / "dangling")
    os.symlink(str(root / "docs"), root / "src" / "absolute")
    os.symlink(str(tmp_path / "outside"), root / "src" / "absolute-out")
    return root


@pytest.mark.parametrize(
    ("path", "places"),
    [
        ("src/a.py", ["src/a.py"]),
        ("src/new/deeper/file", ["src/new/deeper/file"]),  # through its deepest existing ancestor
        ("./src//a.py", ["src/a.py"]),
        ("src/d/guide.md", ["docs/guide.md"]),
        ("src/d", ["src/d", "docs"]),  # where the name lives, where it leads
        ("src/d/", ["docs"]),  # a trailing slash follows the last link
        ("src/chain/x", ["docs/x"]),
        ("src/absolute/x", ["docs/x"]),  # an absolute link under the root
        ("src/dangling", ["src/dangling", "src/nowhere/at/all"]),
        ("src/sub/../a.py", ["src/a.py"]),
        ("src/d/../src/a.py", ["src/a.py"]),  # .. goes to the real parent (docs/..)
        ("src/new/../a.py", ["src/a.py"]),
    ],
)
def test_a_path_resolves_to_where_its_name_lives_and_where_it_leads(tree: Path, path: str, places: list[str]) -> None:
    assert _places(directory_resolver(tree).resolve(path)) == places


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("src/o/secret", "climbs out of the workspace"),
        ("src/o", "climbs out of the workspace"),
        ("src/absolute-out/x", "is outside the workspace"),
        ("src/loop1/x", "more than 40 links"),
        ("..", "climbs out of the workspace"),
        ("/etc/passwd", "is outside the workspace"),
        ("src/a\0b", "cannot be read"),
    ],
)
def test_a_path_that_leaves_the_workspace_or_loops_is_unresolvable(tree: Path, path: str, why: str) -> None:
    [target] = directory_resolver(tree).resolve(path)
    assert target.path is None and why in target.why


def test_an_absolute_path_under_the_root_resolves_inside_it(tree: Path) -> None:
    assert _places(directory_resolver(tree).resolve(str(tree / "src" / "a.py"))) == ["src/a.py"]


def test_a_file_with_another_hard_link_is_unresolvable_unless_the_deployment_allows_it(tree: Path) -> None:
    outside = tree.parent / "outside" / "secret"
    outside.write_text("s")
    os.link(outside, tree / "src" / "h")
    [target] = directory_resolver(tree).resolve("src/h")
    assert target.path is None and "2 hard links" in target.why
    assert _places(directory_resolver(tree, hard_links="allow").resolve("src/h")) == ["src/h"]


def test_a_directory_a_write_reaches_is_checked_with_every_link_beneath_it(tree: Path) -> None:
    (tree / "lib" / "inner").mkdir(parents=True)
    os.symlink("../../docs", tree / "lib" / "inner" / "to-docs")
    os.symlink("../src/sub", tree / "lib" / "to-sub")
    assert _places(directory_resolver(tree).resolve("lib")) == ["lib", "src/sub", "docs"]
    os.symlink("../../../outside", tree / "lib" / "inner" / "out")
    [target] = directory_resolver(tree).resolve("lib/")
    assert target.path is None and "climbs out" in target.why


def test_a_hard_link_or_special_file_beneath_a_directory_is_unresolvable(tree: Path) -> None:
    (tree / "lib").mkdir()
    os.link(tree / "src" / "a.py", tree / "lib" / "twin.py")
    [target] = directory_resolver(tree).resolve("lib")
    assert target.path is None and "'lib/twin.py' is a file with 2 hard links" in target.why
    os.unlink(tree / "lib" / "twin.py")
    os.mkfifo(tree / "lib" / "pipe")
    [target] = directory_resolver(tree).resolve("lib")
    assert target.path is None and "is not a file, a directory or a link" in target.why


def test_a_directory_with_more_entries_than_the_bound_is_unresolvable(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    for name in "abcd":
        (tmp_path / "lib" / name).write_text(name)
    [target] = TreeResolver(DirectoryTree(str(tmp_path)), max_entries=3).resolve("lib")
    assert target.path is None and "'lib' holds more than 3 entries" in target.why
    assert _places(TreeResolver(DirectoryTree(str(tmp_path)), max_entries=4).resolve("lib")) == ["lib"]


def test_a_link_loop_beneath_a_directory_is_walked_once(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "f").write_text("f")
    os.symlink("..", tmp_path / "lib" / "up")
    os.symlink(".", tmp_path / "lib" / "here")
    # here leads back to lib, up to the root, whose lib is not walked again
    assert _places(TreeResolver(DirectoryTree(str(tmp_path))).resolve("lib")) == ["lib", "."]


def test_an_empty_link_is_unresolvable() -> None:
    ws = Workspace({"src/a.py": "a"}, links={"src/e": ""})
    [target] = ws.resolver().resolve("src/e")
    assert target.path is None and "empty link" in target.why


# --------------------------------------------------------------------------
# The in-memory workspace resolves the same way


def _memory() -> Workspace:
    return Workspace(
        {"src/a.py": "a", "docs/guide.md": "g", "secrets.env": "s"},
        links={"src/d": "../docs", "src/up": "../..", "src/abs": "/ws/docs", "src/loop": "loop"},
        hard_links={"src/a.py": 2},
        root="/ws",
    )


@pytest.mark.parametrize(
    ("path", "places"),
    [
        ("src/d/x", ["docs/x"]),
        ("src/d", ["src/d", "docs"]),
        ("src/abs/guide.md", ["docs/guide.md"]),
        ("src/new/file", ["src/new/file"]),
        ("src/up/x", [None]),
        ("src/loop", [None]),
        ("src/a.py", [None]),  # two hard links
        ("src", [None]),  # a directory holding a hard-linked file
    ],
)
def test_the_in_memory_workspace_resolves_like_a_directory(path: str, places: list[str | None]) -> None:
    assert _places(_memory().resolver().resolve(path)) == places


def test_in_memory_absolute_links_lead_out_without_a_root() -> None:
    ws = Workspace({"docs/x": ""}, links={"src/abs": "/docs"})
    [target] = ws.resolver().resolve("src/abs/x")
    assert target.path is None and "outside the workspace" in target.why


def test_the_in_memory_tools_read_and_write_through_links() -> None:
    ws = Workspace({"docs/guide.md": "g"}, links={"src/d": "../docs", "src/out": "../../x"})
    ws.write_file({"path": "src/d/new.md", "content": "n"})
    assert ws.files["docs/new.md"] == "n" and "src/d/new.md" not in ws.files
    assert ws.read_file({"path": "src/d/guide.md"}) == {"path": "src/d/guide.md", "content": "g"}
    with pytest.raises(ToolFailure, match="cannot be resolved"):
        ws.write_file({"path": "src/out/y", "content": "n"})
    assert ws.writes == 1


# --------------------------------------------------------------------------
# Effects


def test_only_effects_with_a_path_inside_the_workspace_by_name_are_resolved() -> None:
    resolver = _memory().resolver()
    for effect in (Effect("shell"), Effect.unknown("write"), Effect("write", "/etc/x"), Effect("write", "a/../../x")):
        assert resolve_effect(resolver, effect) == effect
    resolved = resolve_effect(resolver, Effect("write", "src/d/x"))
    assert resolved == Effect("write", "src/d/x", resolved=(ResolvedTarget("docs/x"),))


def test_a_calls_effects_are_resolved_by_the_runners_resolver() -> None:
    bash = ToolSpec("bash", "Run a command.", {"type": "object"}, "unknown", "shell")
    runner = ToolRunner(default_registry((bash,)), resolver=_memory().resolver())
    effects = resolved_effects(
        runner.registry, runner.resolver, ToolCall.of("c1", "bash", {"command": "touch src/d/x docs/y"})
    )
    assert [(e.path, _places(e.resolved or ())) for e in effects] == [
        ("src/d/x", ["docs/x"]),
        ("docs/y", ["docs/y"]),
    ]
    assert resolved_effects(runner.registry, runner.resolver, ToolCall.of("c2", "nope", {})) == ()


def test_the_default_resolver_knows_no_links() -> None:
    runner = ToolRunner(default_registry())
    call = ToolCall.of("c1", "write_file", {"path": "src/a.py", "content": ""})
    assert resolved_effects(runner.registry, runner.resolver, call) == (
        Effect("write", "src/a.py", resolved=(ResolvedTarget("src/a.py"),)),
    )


# --------------------------------------------------------------------------
# A resolver that breaks its port


class _Replies:
    """A model that records a plan, writes a file once, then only says it is done."""

    def __init__(self) -> None:
        self.replies = [bootstrap(), call("write_file", {"path": "new.txt", "content": "x"}, "w1")]

    def complete(self, request: ChatRequest) -> ChatResponse:
        return self.replies.pop(0) if self.replies else say("done")


@pytest.mark.parametrize("driver", ["sync", "asyncio"])
def test_a_resolver_that_raises_ends_the_turn_with_a_typed_error_runs_nothing_and_the_next_turn_runs(
    driver: str,
) -> None:
    store, workspace = MemoryStore(), Workspace()
    tools = ToolRunner(default_registry(), executors=workspace.executors(), resolver=BrokenResolver())
    failed, report = run_turns(driver, store, _Replies(), tools, ("write it", "again"))
    assert isinstance(failed, ResolverError) and failed.code == "resolver-failed"
    assert "'w1'" in failed.message and "the disk under new.txt went away" in failed.message
    assert isinstance(failed.__cause__, OSError)
    assert "new.txt" not in workspace.files and workspace.writes == 0
    events = store.read("s1")
    answers = [read_tool_result(e.payload) for e in events if e.kind == "tool/result"][1:]
    assert [(a.call_id, a.ok, CALL_INTERRUPTED in a.output) for a in answers] == [("w1", False, True)]
    assert isinstance(report, TurnReport) and report.turn == 2 and report.ended_by == "reply"
    assert report.closed_turn is None  # the failed turn was closed at once
    assert fold_session(events) == store.load("s1") and store.audit("s1").ok
