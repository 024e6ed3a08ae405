"""Where a call's writes really land: the targets of its effects, resolved
through links, before the plan's scope is checked.

Theory of operation
-------------------
The kernel's scope check (``kernel.plan.scope``) is pure: it reads the paths a
call names and, when they are given, the places those paths really land
(``ResolvedTarget``). Finding those places takes I/O, so it is done here, by a
``Resolver`` the ``ToolRunner`` holds, for every path of every effect of a
call (``resolved_effects``), before the kernel decides.

One algorithm, ``TreeResolver``, serves every workspace; a ``Tree`` is what it
reads of one: an entry at a time, never following a link itself (``lstat``
and ``readlink``). ``DirectoryTree`` reads a real directory;
``WorkspaceTree`` (``adapters.runtime.workspace``) reads the in-memory
workspace and its links. ``directory_resolver(root)`` and
``Workspace.resolver()`` build each.

A path resolves component by component from the workspace root, like the
kernel's own path walk: ``.`` and empty components are skipped, ``..`` goes to
the real parent of where the walk is (climbing above the root is
unresolvable), and a symbolic link is replaced by what it holds (a relative
link is read against the directory it is in; an absolute one must name a
place under the root's real path, anything else leads out of the
workspace). At most ``max_links`` links are followed for one path (a loop is
unresolvable). A component that does not exist ends the lookups: the rest of
the path is where the write would create it (``mkdir -p``), so a path whose
parent does not exist yet resolves through its deepest existing ancestor.

Each path gives every place a write through it can reach:

- where its name lives (every component but the last resolved): what
  ``rm`` and ``mv`` change, and ``ln`` creates;
- where it leads (the last component followed too, as ``tee``, ``touch``,
  ``truncate``, ``chmod`` and a redirection do; a trailing ``/`` makes every
  command follow it);
- when that is an existing directory, everything under it that leads
  elsewhere: every link beneath it, resolved the same way, and the
  directories they lead to, up to ``max_entries`` entries (a recursive
  ``chmod``, ``chown``, ``cp`` or ``rm`` reaches all of it; more entries than
  that is unresolvable).

Hard links cannot be followed: a file's other names are nowhere to be found
from one of them. The rule is fail-closed: an existing regular file with more
than one hard link, where a path leads or anywhere beneath it, is
unresolvable, unless the deployment builds its resolver with
``hard_links="allow"`` (it knows its workspace holds no hard link to a file
outside it). So is an entry that is neither a file, a directory nor a link (a
device, a socket, a FIFO), and a path that cannot be read (``OSError``).

What is resolved is true when it is read: an executor that runs later acts on
the tree as it is then. The security page (docs/security.md) says what a deployment
adds to close that window.
"""

from __future__ import annotations

import os
import posixpath
import stat
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal, Protocol

from ...kernel.plan.scope import Effect, ResolvedTarget
from ...kernel.plan.tools import execution_effects
from ...kernel.tools.spec import ToolCall, ToolRegistry
from ..errors import AdapterError

__all__ = [
    "MAX_ENTRIES",
    "MAX_LINKS",
    "DirectoryTree",
    "Entry",
    "EntryKind",
    "Resolver",
    "ResolverError",
    "Tree",
    "TreeResolver",
    "directory_resolver",
    "resolve_effect",
    "resolved_effects",
]

#: Links followed for one path before it counts as a loop (as Linux's 40).
MAX_LINKS = 40
#: Entries checked beneath a directory a write reaches.
MAX_ENTRIES = 10_000

EntryKind = Literal["missing", "file", "dir", "link", "other"]


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry of a tree, not followed: its kind, what a link holds, and how
    many hard links a file has."""

    kind: EntryKind
    link: str = ""
    nlink: int = 1


class Tree(Protocol):
    """What a resolver reads of a workspace. Paths are relative to the root,
    ``/``-separated, ``""`` for the root itself; nothing is followed."""

    @property
    def root(self) -> str | None:
        """The absolute path the root stands for (absolute links are read
        against it), or ``None``: every absolute link leads out."""
        ...

    def entry(self, path: str) -> Entry:
        """The entry at ``path`` (``missing`` when there is none or a
        component above it is not a directory). May raise ``OSError``."""
        ...

    def children(self, path: str) -> Sequence[str]:
        """The names in the directory at ``path``. May raise ``OSError``."""
        ...


class Resolver(Protocol):
    """The port: every place a write through ``path`` can land."""

    def resolve(self, path: str) -> tuple[ResolvedTarget, ...]:
        """Never raises; an unresolvable path is a ``ResolvedTarget(None, why)``."""
        ...


class ResolverError(AdapterError):
    """A resolver raised instead of answering, which its port forbids: the
    fault of whoever supplied the resolver, not of the call or the model.
    The call was not run; the driver abandoned its turn (the runtimes close
    it at once, its calls answered as interrupted; ``planfold serve``'s host
    closes it with ``turn/end`` or its next ``turn/start``)."""

    code = "resolver-failed"

    def __init__(self, call: ToolCall, cause: Exception) -> None:
        super().__init__(
            f"the resolver raised {cause!r} finding where call {call.id!r} ({call.name}) would write; a resolver "
            "answers an unresolvable path instead of raising, so its supplier is at fault: the call was not run "
            "and its turn was abandoned"
        )
        self.call_id = call.id
        self.tool = call.name


class _Unresolvable(Exception):
    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def _parts(path: str) -> list[str]:
    """The components still to walk, the next one last (a stack)."""
    return list(reversed(path.split("/")))


@dataclass(frozen=True, slots=True)
class TreeResolver:
    """Resolves paths on one ``Tree`` (see the module doc)."""

    tree: Tree
    max_links: int = MAX_LINKS
    max_entries: int = MAX_ENTRIES
    hard_links: Literal["refuse", "allow"] = "refuse"

    def resolve(self, path: str) -> tuple[ResolvedTarget, ...]:
        try:
            places = [self._follow(path, follow_last=False), self._follow(path, follow_last=True)]
            places += self._beneath(places[-1])
        except _Unresolvable as exc:
            return (ResolvedTarget(None, exc.why),)
        except (OSError, ValueError) as exc:
            return (ResolvedTarget(None, f"{path!r} cannot be read: {exc}"),)
        return tuple(ResolvedTarget(place) for place in dict.fromkeys(places))

    def lead(self, path: str) -> ResolvedTarget:
        """Only where ``path`` leads, every link followed (what a read or a
        write of its content opens); never raises."""
        try:
            return ResolvedTarget(self._follow(path, follow_last=True))
        except _Unresolvable as exc:
            return ResolvedTarget(None, exc.why)
        except (OSError, ValueError) as exc:
            return ResolvedTarget(None, f"{path!r} cannot be read: {exc}")

    def _inside(self, absolute: str) -> list[str]:
        """The components of an absolute path under the root, to walk."""
        root = self.tree.root
        if root is not None:
            base = root.rstrip("/")
            if absolute == base or absolute.startswith(base + "/"):
                return _parts(absolute[len(base) :])
        raise _Unresolvable(f"{absolute!r} is outside the workspace")

    def _follow(self, path: str, *, follow_last: bool) -> str:
        """Where ``path`` leads from the root (its last component followed
        only with ``follow_last``), relative to the root."""
        pending = self._inside(path) if path.startswith("/") else _parts(path)
        done: list[str] = []
        links = 0
        while pending:
            part = pending.pop()
            if part in ("", "."):
                continue
            if part == "..":
                if not done:
                    raise _Unresolvable(f"{path!r} climbs out of the workspace")
                done.pop()
                continue
            here = "/".join([*done, part])
            entry = self.tree.entry(here)
            if entry.kind == "link" and (pending or follow_last):
                links += 1
                if links > self.max_links:
                    raise _Unresolvable(f"{path!r} goes through more than {self.max_links} links (a loop?)")
                if not entry.link:
                    raise _Unresolvable(f"{here!r} is an empty link")
                if entry.link.startswith("/"):
                    done = []
                    pending += self._inside(entry.link)
                else:
                    pending += _parts(entry.link)
                continue
            done.append(part)
        return "/".join(done) or "."

    def _check_entry(self, place: str, entry: Entry) -> None:
        if entry.kind == "file" and entry.nlink > 1 and self.hard_links == "refuse":
            raise _Unresolvable(
                f"{place!r} is a file with {entry.nlink} hard links, whose other names may be outside the scope"
            )
        if entry.kind == "other":
            raise _Unresolvable(f"{place!r} is not a file, a directory or a link")

    def _beneath(self, real: str) -> list[str]:
        """The places a write that leads to ``real`` reaches beyond it."""
        key = "" if real == "." else real
        entry = self.tree.entry(key)
        self._check_entry(real, entry)
        if entry.kind != "dir":
            return []
        found: list[str] = []
        queue, seen, count = [key], {key}, 0
        while queue:
            directory = queue.pop()
            for name in self.tree.children(directory):
                count += 1
                if count > self.max_entries:
                    raise _Unresolvable(f"{real!r} holds more than {self.max_entries} entries to check")
                here = f"{directory}/{name}" if directory else name
                child = self.tree.entry(here)
                self._check_entry(here, child)
                if child.kind == "link":
                    place = self._follow(here, follow_last=True)
                    found.append(place)
                    here = "" if place == "." else place
                    child = self.tree.entry(here)
                    self._check_entry(place, child)
                if child.kind == "dir" and here not in seen:
                    seen.add(here)
                    queue.append(here)
        return found


@dataclass(frozen=True, slots=True)
class DirectoryTree:
    """A real directory, read with ``lstat`` and ``readlink``. ``base`` is
    the root's real path (``directory_resolver`` takes care of it)."""

    base: str

    @property
    def root(self) -> str | None:
        return self.base

    def _full(self, path: str) -> str:
        return os.path.join(self.base, path) if path else self.base

    def entry(self, path: str) -> Entry:
        full = self._full(path)
        try:
            info = os.lstat(full)
        except (FileNotFoundError, NotADirectoryError):
            return Entry("missing")
        if stat.S_ISLNK(info.st_mode):
            return Entry("link", os.readlink(full))
        if stat.S_ISDIR(info.st_mode):
            return Entry("dir")
        if stat.S_ISREG(info.st_mode):
            return Entry("file", nlink=info.st_nlink)
        return Entry("other")

    def children(self, path: str) -> Sequence[str]:
        return sorted(os.listdir(self._full(path)))


def directory_resolver(
    root: str | os.PathLike[str], *, hard_links: Literal["refuse", "allow"] = "refuse"
) -> TreeResolver:
    """The resolver of the real directory ``root`` (its real path is taken
    once, here)."""
    return TreeResolver(DirectoryTree(os.path.realpath(root)), hard_links=hard_links)


def resolve_effect(resolver: Resolver, effect: Effect) -> Effect:
    """``effect`` with where its path really lands; an effect without a path,
    or whose path leaves the workspace by name (the kernel refuses it by its
    name alone), is returned as it is."""
    path = effect.path
    if path is None or path.startswith("/") or posixpath.normpath(path).split("/")[0] == "..":
        return effect
    return replace(effect, resolved=resolver.resolve(path))


def resolved_effects(registry: ToolRegistry, resolver: Resolver, call: ToolCall) -> tuple[Effect, ...]:
    """The effects ``call`` would have (``execution_effects`` of its tool in
    ``registry``; none for a tool it does not hold), each path resolved by
    ``resolver``: what the runtime hands the kernel's scope check. Raises only
    what a resolver that breaks its port raises (the drivers answer that
    with ``ResolverError``)."""
    spec = registry.get(call.name)
    if spec is None:
        return ()
    effects = execution_effects(spec, call.arguments or {})
    return tuple(resolve_effect(resolver, effect) for effect in effects)
