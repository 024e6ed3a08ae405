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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeAlias

from ...kernel.payload import JSON
from ..errors import AdapterError

__all__ = [
    "Executor",
    "ToolFailure",
    "ToolInputError",
    "Workspace",
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
    """Files in memory. ``executors()`` maps tool names to their functions."""

    files: dict[str, str] = field(default_factory=dict)
    writes: int = 0

    def read_file(self, args: Mapping[str, object]) -> Mapping[str, JSON]:
        _exact(args, frozenset({"path"}), "read_file")
        path = _string(args, "path", "read_file")
        if path not in self.files:
            raise ToolFailure(f"read_file: no file {path!r} in the workspace")
        return {"path": path, "content": self.files[path]}

    def list_files(self, args: Mapping[str, object]) -> Mapping[str, JSON]:
        _exact(args, frozenset(), "list_files")
        return {"paths": sorted(self.files)}

    def write_file(self, args: Mapping[str, object]) -> Mapping[str, JSON]:
        _exact(args, frozenset({"path", "content"}), "write_file")
        path = _string(args, "path", "write_file")
        content = _string(args, "content", "write_file")
        if not path.strip():
            raise ToolInputError("write_file: 'path' must not be blank")
        self.files[path] = content
        self.writes += 1
        return {"path": path, "bytes": len(content.encode("utf-8"))}

    def executors(self) -> dict[str, Executor]:
        return {
            "read_file": self.read_file,
            "list_files": self.list_files,
            "write_file": self.write_file,
        }
