"""The session's mode and runtime phase: what the runtime is doing.

``AgentMode`` is ``plan`` while plan mode is active, else ``build``.

- ``plan``: plan mode is active; read, research, ask, produce a plan.
- ``build_bootstrap``: build mode with no executable plan yet; read-only until
  a minimal ``implicit`` plan exists.
- ``build_execute``: carrying out the current plan.
- ``verify``: checking the result; belongs to execution only.

The plan work derives the phase from the session fold; the tool gate decides
per phase.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["READ_ONLY_PHASES", "RUNTIME_PHASES", "AgentMode", "RuntimePhase"]

AgentMode = Literal["plan", "build"]

RuntimePhase = Literal["plan", "build_bootstrap", "build_execute", "verify"]

RUNTIME_PHASES: tuple[RuntimePhase, ...] = ("plan", "build_bootstrap", "build_execute", "verify")

#: Phases in which nothing may write.
READ_ONLY_PHASES: frozenset[RuntimePhase] = frozenset({"plan", "build_bootstrap"})
