"""The fuzz target for the plan's scope over a tree of links: shell lines a
model sends, checked against a scope on a workspace that holds symbolic and
hard links.

An input is one JSON object: ``scope`` (path patterns), ``tree`` (path ->
``"file"``, ``"dir"``, ``"link:TEXT"`` for a symbolic link holding TEXT, or
``"hard:NAME"`` for a hard link to the tree's file NAME, ``@out`` for a file
outside the workspace) and ``commands`` (shell lines). The entry point is
what the runtime does before a shell call runs: ``execution_effects``, each
path resolved on the in-memory workspace (``resolve_effect``), then
``check_scope``. Link texts under ``/ws`` stand for the workspace root.

Beyond "only typed errors", the same tree is built on disk in a temporary
directory (the entries a disk can hold: plain relative names, under real
directories) and the target checks that the directory resolver finds the
same places as the in-memory one, and that every path of a call the kernel
admitted really lands (``os.path.realpath``) inside the workspace and the
scope.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path

from planfold.adapters.runtime.resolve import directory_resolver, resolve_effect
from planfold.adapters.runtime.workspace import Workspace
from planfold.kernel.payload import JSON
from planfold.kernel.plan.scope import Effect, ResolvedTarget, check_scope, path_in_scope
from planfold.kernel.plan.spec import PlanScope, PlanSpec, Todo
from planfold.kernel.plan.tools import execution_effects
from planfold.kernel.tools.spec import ToolSpec
from tests.fuzz.harness import Clock, NotJSON, Target, decode_json, expect, stable_repr, unchanged
from tests.fuzz.inputs import json_inputs

__all__ = ["SCOPE_TARGETS"]

BASH = ToolSpec("bash", "Run a command", {"type": "object"}, "write", "shell")
VIRTUAL_ROOT = "/ws"
MAX_ENTRIES = 40
MAX_COMMANDS = 8
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,32}")
Tree = dict[str, tuple[str, str]]


def _clean(path: str) -> bool:
    parts = path.split("/")
    return len(parts) <= 6 and all(_NAME.fullmatch(p) and p not in (".", "..") for p in parts)


def _kept(tree: Mapping[str, object]) -> Tree:
    """The entries a disk can hold, in order: ``path -> (kind, value)``."""
    kept: Tree = {}
    for path, entry in tree.items():
        if not isinstance(entry, str) or not _clean(path) or path in kept:
            continue
        kind, _, value = entry.partition(":")
        parents = ["/".join(path.split("/")[:i]) for i in range(1, path.count("/") + 1)]
        if any(kept.get(parent, ("dir", ""))[0] != "dir" for parent in parents):
            continue
        if any(name.startswith(path + "/") for name in kept):
            continue
        if kind == "link" and value and "\0" not in value and len(value) <= 200:
            kept[path] = ("link", value)
        elif kind == "hard":
            kept[path] = ("hard", value if kept.get(value, ("", ""))[0] in ("file", "hard") else "@out")
        elif entry in ("file", "dir"):
            kept[path] = (entry, "")
    return kept


def _memory(kept: Tree) -> Workspace:
    files = {path: "" for path, (kind, _) in kept.items() if kind in ("file", "hard")}
    links = {path: value for path, (kind, value) in kept.items() if kind == "link"}
    group: dict[str, str] = {}
    for path, (kind, value) in kept.items():
        if kind == "file":
            group[path] = path
        elif kind == "hard":
            group[path] = "@out" if value == "@out" else group[value]
    sizes = {name: list(group.values()).count(name) + (name == "@out") for name in set(group.values())}
    hard = {path: sizes[g] for path, g in group.items() if sizes[g] > 1}
    return Workspace(files, links=links, hard_links=hard, root=VIRTUAL_ROOT)


def _build(kept: Tree, top: Path) -> Path:
    root, outside = top / "ws", top / "out"
    root.mkdir()
    outside.mkdir()
    (outside / "f").write_text("outside")
    for path, (kind, value) in kept.items():
        full = root / path
        full.parent.mkdir(parents=True, exist_ok=True)
        if kind == "dir":
            full.mkdir(exist_ok=True)
        elif kind == "file":
            full.write_text(path)
        elif kind == "link":
            text = str(root) + value[len(VIRTUAL_ROOT) :] if value.split("/")[:2] == ["", "ws"] else value
            os.symlink(text, full)
        else:
            os.link(outside / "f" if value == "@out" else root / value, full)
    return root


def _spec(scope: list[str]) -> PlanSpec:
    return PlanSpec("fuzz", ("s",), (), ("v",), (Todo("t1", "t"),), scope=PlanScope(paths=tuple(scope)))


def _real_place(root: Path, path: str) -> list[str | None]:
    """Where ``path`` really lands by ``realpath``: its name and its lead."""
    base = str(root)

    def place(real: str) -> str | None:
        if real == base:
            return "."
        return real[len(base) + 1 :] if real.startswith(base + "/") else None

    head, tail = os.path.split(os.path.join(base, path))
    name = place(os.path.realpath(head))
    named = None if name is None else tail if name == "." else f"{name}/{tail}"
    return [named if tail not in ("", ".", "..") else name, place(os.path.realpath(os.path.join(base, path)))]


def _run_scope_links(data: bytes, clock: Clock) -> str:
    document = decode_json(data)
    if not isinstance(document, dict) or set(document) - {"scope", "tree", "commands"}:
        raise NotJSON("not {scope, tree, commands}")
    scope, tree, commands = document.get("scope"), document.get("tree"), document.get("commands")
    if not isinstance(scope, list) or not all(isinstance(p, str) for p in scope) or not scope:
        raise NotJSON("scope is a non-empty list of patterns")
    if not isinstance(tree, dict) or len(tree) > MAX_ENTRIES:
        raise NotJSON(f"tree is an object of at most {MAX_ENTRIES} entries")
    if not isinstance(commands, list) or len(commands) > MAX_COMMANDS:
        raise NotJSON(f"commands is a list of at most {MAX_COMMANDS} lines")
    kept = _kept(tree)
    workspace = _memory(kept)
    spec = _spec(scope)
    outcomes: list[object] = []
    with tempfile.TemporaryDirectory() as top:
        root = _build(kept, Path(top))
        disk = directory_resolver(root)
        for command in commands:
            arguments: dict[str, JSON] = {"command": command}
            with unchanged(arguments), clock.timed():
                effects = execution_effects(BASH, arguments)
                resolved = [resolve_effect(workspace.resolver(), effect) for effect in effects]
                verdict = check_scope(spec, resolved)
            outcomes.append((command, verdict))
            for effect in resolved:
                _agree(effect, None if effect.path is None or effect.resolved is None else disk.resolve(effect.path))
            if not verdict.violations:
                for effect in resolved:
                    _inside(root, effect, scope)
    return stable_repr(outcomes)


def _agree(effect: Effect, on_disk: tuple[ResolvedTarget, ...] | None) -> None:
    if on_disk is None or effect.resolved is None:
        return
    memory = [target.path for target in effect.resolved]
    disk = [target.path for target in on_disk]
    expect(memory == disk, f"{effect.path!r}: the in-memory resolver found {memory}, the directory one {disk}")


def _inside(root: Path, effect: Effect, scope: list[str]) -> None:
    if effect.path is None:
        return
    places = _real_place(root, effect.path)
    expect(
        all(place is not None and path_in_scope(place, scope) for place in places),
        f"the kernel admitted {effect.path!r}, which really lands at {places}, outside the scope",
    )


_SEEDS: list[dict[str, JSON]] = [
    {
        "scope": ["src/"],
        "tree": {"src/a.py": "file", "src/o": "link:../../out", "src/h": "hard:@out", "src/docs": "link:../docs"},
        "commands": ["cat src/a.py | tee src/o/secret", "truncate -s 0 src/h", "touch src/docs/x", "touch src/b"],
    },
    {
        "scope": ["src/"],
        "tree": {
            "src/dl": "link:/ws/docs", "docs": "dir", "src/l": "link:l", "src/c": "link:d", "src/d": "link:../src",
        },
        "commands": [
            "rm -rf src/dl/", "mkdir -p src/l/x", "chmod 777 src/c", "ln -s ../../x src/y", "chmod -R 777 src",
        ],
    },
    {
        "scope": ["a/", "b/*.md"],
        "tree": {"a/f": "file", "a/g": "hard:a/f", "b/x.md": "link:../a/f", "a/up": "link:..", "c": "link:/etc"},
        "commands": ["touch b/x.md", "cp a/f a/up", "mv a/f b/", "touch a/g", "touch c/passwd"],
    },
]
_KEYS = ("scope", "tree", "commands", "file", "dir", "link:..", "link:/ws", "hard:@out", "src/", "src/o/x")

SCOPE_TARGETS: tuple[Target, ...] = (
    Target("scope_links", "check_scope", _run_scope_links, json_inputs(_SEEDS, _KEYS)),
)
