"""The plan's scope over random trees of links, driven by Hypothesis.

A workspace directory on disk (``ws/``, next to ``out/``) and an in-memory
``Workspace`` are built in lockstep: each rule adds the same directory,
file, symbolic link (relative or absolute, into the workspace, out of it,
dangling, chained, looping) or hard link (to a file inside the workspace or
outside it) to both. The plan's scope is ``a/``; the tree starts with the directories ``a/b``
and ``c``. For every generated write
target the machine checks:

- the in-memory resolver and the directory resolver find the same places;
- the kernel never admits a target whose real location is outside the
  scope: the model is ``os.path.realpath`` on the disk (where the name lives,
  where it leads, where every link beneath a directory it reaches leads), a
  loop (a link left in ``realpath``'s answer) or a file with other hard
  links is unresolvable;
- it admits every target the model finds inside the scope, and its place is
  ``realpath``'s;
- a write the kernel admitted, made for real through the path, changes
  nothing outside the scope.
"""

from __future__ import annotations

import errno
import os
import posixpath
import shutil
import tempfile
from pathlib import Path

from hypothesis import event, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from planfold.adapters.runtime.resolve import directory_resolver, resolve_effect
from planfold.adapters.runtime.workspace import Workspace
from planfold.kernel.plan.scope import Effect, check_scope, path_in_scope
from planfold.kernel.plan.spec import PlanScope
from tests.plan_helpers import spec

SCOPE = ("a/",)
SCOPED = spec(scope=PlanScope(paths=SCOPE))
NAMES = ("a/x", "a/l", "a/m", "a/b/y", "a/b/m", "a/b/d", "c/z", "c/l", "l2", "x")
LINK_TARGETS = (
    ".", "..", "../..", "../c", "../a", "b", "x", "l", "../../out", "../../out/f", "../../out/d",
    "../../../out", "a/b", "../a/b/../../c", "missing/deeper", "@ws/a", "@ws/c/z", "@ws/..", "@out", "@out/f",
)  # fmt: skip
TARGETS = (
    "a", "a/", "a/b", *NAMES, *(n + "/" for n in NAMES), "a/l/new", "a/m/f", "a/b/../x", "a/l/../z", "a/new/file",
    "c/l/q", "a/b/m/w", "a/b/d/y", "a/l/l/x", "a/x/q", "a/l/z", "a/m/z", "a/b/y/z", "a/b/m/z/", "a/b/d/z",
)  # fmt: skip


def _model(root: Path, path: str) -> tuple[set[str | None], bool]:
    """Every place a write through ``path`` reaches, by ``realpath``, as
    workspace-relative paths (``None``: outside the workspace or a loop),
    and whether a hard-linked or special file is among them."""
    base = str(root)

    def place(real: str) -> str | None:
        prefix = ""
        for part in Path(real).relative_to("/").parts:
            prefix += "/" + part
            if os.path.islink(prefix):
                return None  # a loop left unresolved
        if real == base:
            return "."
        return real[len(base) + 1 :] if real.startswith(base + "/") else None

    full = os.path.join(base, path)
    try:  # realpath leaves a loop unresolved and applies a later '..' by name; the system refuses the path
        os.stat(posixpath.dirname(full))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return {None}, False
    lead = os.path.realpath(full)
    head, tail = posixpath.split(full)
    parent = place(os.path.realpath(head))  # the name itself may well be a link
    if not tail or parent is None:
        name = parent if tail else place(lead)
    else:
        name = tail if parent == "." else f"{parent}/{tail}"
    places, blocked = {name, place(lead)}, False
    if os.path.isfile(lead) and os.stat(lead).st_nlink > 1:
        blocked = True
    queue = [lead] if os.path.isdir(lead) and place(lead) is not None else []
    seen = set(queue)
    while queue:
        directory = queue.pop()
        for entry in os.listdir(directory):
            here = os.path.join(directory, entry)
            real = os.path.realpath(here)
            if os.path.islink(here):
                places.add(place(real))
            if os.path.isfile(real) and os.stat(real).st_nlink > 1:
                blocked = True
            if os.path.isdir(real) and place(real) is not None and real not in seen:
                seen.add(real)
                queue.append(real)
    return places, blocked


class LinkTreeMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.top = Path(os.path.realpath(tempfile.mkdtemp()))
        self.root = self.top / "ws"
        self.out = self.top / "out"
        (self.out / "d").mkdir(parents=True)
        self.root.mkdir()
        (self.out / "f").write_text("outside\n")
        for directory in ("a/b", "c"):  # the tree grows from these
            (self.root / directory).mkdir(parents=True)
        self.memory = Workspace(root=str(self.root))
        self.names: dict[str, int] = {}  # a hard-link group for every file name

    def teardown(self) -> None:
        shutil.rmtree(self.top)

    # ---------------------------------------------------------------- building

    def _free(self, path: str) -> bool:
        """``path`` is free and every directory above it is a real one."""
        parent = posixpath.dirname(path)
        prefix = self.root
        for part in parent.split("/") if parent else ():
            prefix = prefix / part
            if prefix.is_symlink() or not prefix.is_dir():
                return False
        return not os.path.lexists(self.root / path)

    def _link_text(self, target: str) -> str:
        if target.startswith("@ws"):
            return str(self.root) + target[3:]
        if target.startswith("@out"):
            return str(self.out) + target[4:]
        return target

    @rule(path=st.sampled_from(NAMES))
    def make_dir(self, path: str) -> None:
        if self._free(path):
            note(f"mkdir {path}")
            (self.root / path).mkdir()

    @rule(path=st.sampled_from(NAMES))
    def make_file(self, path: str) -> None:
        if self._free(path):
            note(f"file {path}")
            (self.root / path).write_text(path)
            self.memory.files[path] = path
            self.names[path] = len(self.names)

    @rule(path=st.sampled_from(NAMES), text=st.sampled_from(LINK_TARGETS))
    def make_symlink(self, path: str, text: str) -> None:
        if self._free(path):
            text = self._link_text(text)
            note(f"symlink {path} -> {text}")
            os.symlink(text, self.root / path)
            self.memory.links[path] = text

    @rule(path=st.sampled_from(NAMES), data=st.data())
    def make_hard_link(self, path: str, data: st.DataObject) -> None:
        if not self._free(path):
            return
        source = data.draw(st.sampled_from([*sorted(self.names), "@out/f"]))
        note(f"hard link {path} = {source}")
        if source == "@out/f":
            os.link(self.out / "f", self.root / path)
            self.names[path] = -1
        else:
            os.link(self.root / source, self.root / path)
            self.names[path] = self.names[source]
        self.memory.files[path] = path
        self._count_links()

    def _count_links(self) -> None:
        groups = list(self.names.values())
        outside = 1 + groups.count(-1)  # out/f's own name
        self.memory.hard_links = {
            name: outside if group == -1 else groups.count(group)
            for name, group in self.names.items()
            if group == -1 or groups.count(group) > 1
        }

    # ---------------------------------------------------------------- checking

    def _outside_scope(self) -> dict[str, tuple[bool, int, str]]:
        seen: dict[str, tuple[bool, int, str]] = {}
        for dirpath, dirnames, filenames in os.walk(self.top):
            for entry in dirnames + filenames:
                here = Path(dirpath, entry)
                relative = str(here.relative_to(self.root)) if here.is_relative_to(self.root) else None
                if relative is not None and path_in_scope(relative, SCOPE):
                    continue
                info = here.lstat()
                body = os.readlink(here) if here.is_symlink() else here.read_text() if here.is_file() else ""
                seen[str(here)] = (here.is_symlink(), info.st_mode, body)
        return seen

    @rule(path=st.sampled_from(TARGETS))
    def write(self, path: str) -> None:
        disk = directory_resolver(self.root).resolve(path)
        memory = self.memory.resolver().resolve(path)
        note(f"write {path}: {disk}")
        assert memory == disk
        verdict = check_scope(SCOPED, [resolve_effect(directory_resolver(self.root), Effect("write", path))])
        places, blocked = _model(self.root, path)
        inside = all(p is not None and path_in_scope(p, SCOPE) for p in places)
        note(f"model: {places}, blocked={blocked}, inside={inside}")
        codes: list[str] = sorted({v.code for v in verdict.violations})
        for code in codes or ["admitted"]:
            event(code)
        if not verdict.violations:
            assert inside and not blocked, (places, blocked)
        if inside and not blocked and path_in_scope(path, SCOPE):
            assert verdict.violations == (), verdict.reason
            lead = self.memory.resolver().lead(path).path
            assert lead == os.path.relpath(os.path.realpath(self.root / path), self.root)
            self._write_for_real(path, lead)

    @precondition(lambda self: bool(self.memory.links))
    @rule(data=st.data(), suffix=st.sampled_from(("", "/", "/z", "/b/y", "/x", "/../z", "/l/z")))
    def write_through_a_link(self, data: st.DataObject, suffix: str) -> None:
        self.write(data.draw(st.sampled_from(sorted(self.memory.links))) + suffix)

    def _write_for_real(self, path: str, lead: str | None) -> None:
        full = os.path.realpath(self.root / path)
        if path.endswith("/") or lead is None or os.path.isdir(full) or not os.path.isdir(os.path.dirname(full)):
            return
        before = self._outside_scope()
        try:
            with open(self.root / path, "a") as handle:
                handle.write("w")
        except OSError:  # through a file or a missing directory: the write itself fails
            return
        event("written for real")
        if lead not in self.memory.files:
            self.memory.files[lead] = ""
            self.names[lead] = len(self.names)
        assert self._outside_scope() == before

    @invariant()
    def out_is_untouched(self) -> None:
        assert (self.out / "f").read_text() == "outside\n"


# Each example builds a tree on disk: fewer examples than the profile's (the
# ci and fuzz profiles still scale them up to these caps).
_PROFILE = settings.default or settings()
LinkTreeMachine.TestCase.settings = settings(
    max_examples=min(_PROFILE.max_examples, 150),
    stateful_step_count=min(_PROFILE.stateful_step_count, 30),
    deadline=None,
)
TestLinkTreeMachine = LinkTreeMachine.TestCase
