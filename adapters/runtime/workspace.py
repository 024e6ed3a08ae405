"""A tiny in-memory workspace and the tool executors that act on it.

Theory of operation
-------------------
The demo and the tests need real tools for the gate to let through or refuse,
without touching a disk. ``Workspace`` is a dict of path -> text. Its tools are
plain functions from decoded JSON arguments to a JSON result:

- ``read_file {path}`` -> ``{path, content}``
- ``list_files {}`` -> ``{paths: [...]}`` (sorted)
- ``write_file {path, content}`` -> ``{path, bytes}``

An executor checks its arguments itself and raises ``ToolInputError`` (code
``bad-tool-arguments``) or ``ToolFailure`` (code ``tool-failed``, e.g. a file
that does not exist); the runtime turns either into a structured error for
the model. Executors never decide whether they may run: that is the gate's job,
and the runtime only calls an executor after the gate allowed the call.
``writes`` counts successful writes so a test can prove a refused call
changed nothing.

The workspace may hold links, so that tests build link trees in memory:
``links`` maps a path to what a symbolic link there holds, and
``hard_links`` gives a file's number of names when it has more than one (its
other names are out of sight, as on a disk). Directories are implicit: every
path above a file or a link. ``resolver()`` resolves paths on it exactly as
on a real directory (``adapters.runtime.resolve``), with ``root`` the
absolute path it stands for (``None``: every absolute link leads out).
``read_file`` and ``write_file`` follow links like a file system; a path
whose links cannot be resolved is a ``tool-failed``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from ...kernel.payload import JSON
from ..errors import AdapterError
from .resolve import Entry, TreeResolver

__all__ = [
    "Executor",
    "ToolFailure",
    "ToolInputError",
    "Workspace",
    "WorkspaceTree",
]

Executor: TypeAlias = Callable[[Mapping[str, object]], Mapping[str, JSON]]


class ToolInputError(AdapterError):
    """The model called a tool with arguments it does not take (the model's fault)."""

    code = "bad-tool-arguments"


class ToolFailure(AdapterError):
    """A tool ran and failed (for example the file does not exist)."""

    code = "tool-failed"


def _string(args: Mapping[str, object], key: str, tool: str) -> str:
    value = args.get(key)
    if not isinstance(value, str):
        raise ToolInputError(f"{tool}: {key!r} must be a string")
    return value


def _exact(args: Mapping[str, object], keys: frozenset[str], tool: str) -> None:
    extra = sorted(str(k) for k in args if k not in keys)
    missing = sorted(keys - set(args))
    if extra or missing:
        raise ToolInputError(f"{tool}: missing {missing}, unexpected {extra}")


@dataclass
class Workspace:
    """Files (and links) in memory. ``executors()`` maps tool names to their
    functions."""

    files: dict[str, str] = field(default_factory=dict)
    writes: int = 0
    links: dict[str, str] = field(default_factory=dict)
    hard_links: dict[str, int] = field(default_factory=dict)
    root: str | None = None

    def resolver(self, *, hard_links: Literal["refuse", "allow"] = "refuse") -> TreeResolver:
        """The resolver of this workspace's paths (see the module doc)."""
        return TreeResolver(WorkspaceTree(self), hard_links=hard_links)

    def _real(self, path: str, tool: str) -> str:
        """Where ``path`` leads through the links (as named when there are none)."""
        if not self.links:
            return path
        landing = self.resolver().lead(path)
        if landing.path is None:
            raise ToolFailure(f"{tool}: {path!r} cannot be resolved: {landing.why}")
        return landing.path

    def read_file(self, args: Mapping[str, object]) -> Mapping[str, JSON]:
        _exact(args, frozenset({"path"}), "read_file")
        path = _string(args, "path", "read_file")
        real = self._real(path, "read_file")
        if real not in self.files:
            raise ToolFailure(f"read_file: no file {path!r} in the workspace")
        return {"path": path, "content": self.files[real]}

    def list_files(self, args: Mapping[str, object]) -> Mapping[str, JSON]:
        _exact(args, frozenset(), "list_files")
        return {"paths": sorted(self.files)}

    def write_file(self, args: Mapping[str, object]) -> Mapping[str, JSON]:
        _exact(args, frozenset({"path", "content"}), "write_file")
        path = _string(args, "path", "write_file")
        content = _string(args, "content", "write_file")
        if not path.strip():
            raise ToolInputError("write_file: 'path' must not be blank")
        self.files[self._real(path, "write_file")] = content
        self.writes += 1
        return {"path": path, "bytes": len(content.encode("utf-8"))}

    def executors(self) -> dict[str, Executor]:
        return {
            "read_file": self.read_file,
            "list_files": self.list_files,
            "write_file": self.write_file,
        }


@dataclass(frozen=True, slots=True)
class WorkspaceTree:
    """A ``Workspace`` as the resolver reads it (``Tree``)."""

    workspace: Workspace

    @property
    def root(self) -> str | None:
        return self.workspace.root

    def _names(self) -> list[str]:
        return [*self.workspace.files, *self.workspace.links]

    def entry(self, path: str) -> Entry:
        ws = self.workspace
        if path in ws.links:
            return Entry("link", ws.links[path])
        if path in ws.files:
            return Entry("file", nlink=ws.hard_links.get(path, 1))
        if not path or any(name.startswith(path + "/") for name in self._names()):
            return Entry("dir")
        return Entry("missing")

    def children(self, path: str) -> Sequence[str]:
        prefix = path + "/" if path else ""
        return sorted({name[len(prefix) :].split("/")[0] for name in self._names() if name.startswith(prefix)})
