"""Shrink a failing input while it keeps failing the same way.

Hypothesis's own shrinker has no time bound, so the time-boxed fuzz pass
generates without it and shrinks here instead: whole lines first, then
ever smaller slices of bytes, within a few seconds."""

from __future__ import annotations

import time

from tests.fuzz.harness import FuzzFinding, Target, check

__all__ = ["failure_kind", "minimize"]


def failure_kind(target: Target, data: bytes) -> str | None:
    """How ``data`` breaks ``target`` (the finding up to its first colon),
    or ``None`` when it does not."""
    try:
        check(target, data)
    except FuzzFinding as finding:
        return str(finding).split(":")[0]
    return None


def minimize(target: Target, data: bytes, seconds: float = 20.0) -> bytes:
    """A smaller input that fails ``target`` in the same way as ``data``."""
    kind = failure_kind(target, data)
    if kind is None:
        return data
    deadline = time.monotonic() + seconds

    def same(candidate: bytes) -> bool:
        return time.monotonic() < deadline and failure_kind(target, candidate) == kind

    lines = data.split(b"\n")
    index = len(lines) - 1
    while index >= 0 and len(lines) > 1 and time.monotonic() < deadline:
        candidate = lines[:index] + lines[index + 1 :]
        if same(b"\n".join(candidate)):
            lines = candidate
        index -= 1
    data = b"\n".join(lines)
    size = len(data) // 2
    while size >= 1 and time.monotonic() < deadline:
        start = 0
        while start < len(data) and time.monotonic() < deadline:
            shorter = data[:start] + data[start + size :]
            if same(shorter):
                data = shorter
            else:
                start += size
        size //= 2
    return data
