"""Plan scope: where execution may act, and what happens when it acts elsewhere.

Theory of operation
-------------------
A ``PlanSpec`` may declare a ``scope``: workspace-relative path patterns and
effect names (``write``, ``shell``, ``network`` … whatever the deployment's
tools declare). ``check_scope`` compares the effects an execution step had
(or is about to have) against it and lists every violation:

- ``effect-outside-scope``: the effect's kind is not one of ``scope.effects``;
- ``path-outside-scope``: the path matches none of ``scope.paths``;
- ``path-escapes``: the path is absolute or climbs out of the workspace
  (``..`` after normalisation), so no relative pattern can cover it;
- ``target-unknown``: what the effect acts on cannot be determined (a write
  tool that declares no target arguments or was called without them, a
  shell line whose writes the classifier cannot name), so nothing shows it
  stays inside ``scope.paths``: it fails closed;
- ``target-unresolvable``: the path as named is inside the scope, but where
  it really lands could not be resolved (a link loop, a link out of the
  workspace, a file with other hard links, a path that could not be read);
- ``resolved-outside-scope``: the path as named is inside the scope, but it
  really lands outside it (through a symbolic link, or a directory that
  holds one).

A path names a place; links decide where a write lands. The kernel does no
I/O, so it decides on targets already resolved: the runtime asks its
resolver for every path of a call's effects and hands each effect over with
``resolved``, the ``ResolvedTarget`` values it found (where the name itself
lives and where it leads, each relative to the workspace root, or ``None``
with the reason it could not be resolved). Every resolved target must be in
the scope too; an empty ``resolved`` shows nothing, so it is refused like
an unresolvable one. An effect whose ``resolved`` is ``None`` was not
resolved at all: it is checked by its name alone (what a pure caller gets;
the runtime always resolves). The resolved targets are checked only when the
name passes, so each effect is refused for the first reason found.

A pattern covers a path when it is the same path, a directory above it, or a
glob (``fnmatch`` rules, where ``*`` also crosses ``/``) that matches it. Paths
are normalised first, so ``src/../secrets`` is ``secrets``, not ``src/…``.

A spec without a scope declares no boundary, and an empty list leaves that
axis unrestricted: nothing is flagged there. Any violation means the plan no
longer describes what execution does: ``kernel.plan_events.scope_realign_event``
then builds the ``realign`` that sends the plan back for realignment.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal

from .spec import PlanScope, PlanSpec

__all__ = [
    "Effect",
    "ResolvedTarget",
    "ScopeVerdict",
    "ScopeViolation",
    "check_scope",
    "path_in_scope",
]


@dataclass(frozen=True, slots=True)
class ResolvedTarget:
    """Where a named path really lands, as a resolver found it: ``path``
    relative to the workspace root, or ``None`` when it could not be resolved
    (``why`` says why: a link loop, a link out of the workspace, a file with
    other hard links …)."""

    path: str | None
    why: str = ""


@dataclass(frozen=True, slots=True)
class Effect:
    """One thing execution does: an effect kind and, if it touches one, a
    workspace-relative path. ``targets_known`` is false when what it acts on
    cannot be determined (``Effect.unknown``); ``path`` is then ``None``.
    ``resolved`` is where ``path`` really lands (see the module doc), or
    ``None`` when it was not resolved."""

    kind: str
    path: str | None = None
    targets_known: bool = True
    resolved: tuple[ResolvedTarget, ...] | None = None

    @classmethod
    def unknown(cls, kind: str) -> Effect:
        """An effect of ``kind`` whose targets cannot be determined."""
        return cls(kind, None, targets_known=False)


ViolationCode = Literal[
    "effect-outside-scope",
    "path-outside-scope",
    "path-escapes",
    "target-unknown",
    "target-unresolvable",
    "resolved-outside-scope",
]


@dataclass(frozen=True, slots=True)
class ScopeViolation:
    """One effect outside the plan's scope, and why."""

    effect: Effect
    code: ViolationCode
    message: str


@dataclass(frozen=True, slots=True)
class ScopeVerdict:
    """Every violation found; the plan needs realignment when there is one."""

    violations: tuple[ScopeViolation, ...] = ()

    @property
    def realign_needed(self) -> bool:
        return bool(self.violations)

    @property
    def reason(self) -> str:
        return "; ".join(v.message for v in self.violations)


def _normalise(path: str) -> str | None:
    """The normalised relative path, or ``None`` when it leaves the workspace."""
    if not path or path.startswith("/"):
        return None
    norm = posixpath.normpath(path)
    if norm == ".." or norm.startswith("../"):
        return None
    return norm


def path_in_scope(path: str, patterns: Iterable[str]) -> bool:
    """Whether some pattern covers ``path`` (same path, a directory above it,
    or a matching glob). A path that leaves the workspace is never covered."""
    norm = _normalise(path)
    if norm is None:
        return False
    for pattern in patterns:
        stripped = pattern.rstrip("/")
        base = _normalise(stripped) if stripped else None
        if base is not None and (base in (".", norm) or norm.startswith(base + "/")):
            return True
        if fnmatchcase(norm, pattern):
            return True
    return False


def _check_resolved(
    scope: PlanScope, effect: Effect, path: str, resolved: tuple[ResolvedTarget, ...]
) -> list[ScopeViolation]:
    """The violations of where ``path`` (inside the scope by name) really lands."""
    if not resolved:
        message = f"where path {path!r} lands was not resolved, so it cannot be kept inside the plan's scope"
        return [ScopeViolation(effect, "target-unresolvable", message)]
    out: list[ScopeViolation] = []
    for target in resolved:
        if target.path is None:
            out.append(
                ScopeViolation(
                    effect,
                    "target-unresolvable",
                    f"where path {path!r} lands cannot be resolved ({target.why}), so it cannot be kept inside "
                    "the plan's scope",
                )
            )
        elif not path_in_scope(target.path, scope.paths):
            out.append(
                ScopeViolation(
                    effect,
                    "resolved-outside-scope",
                    f"path {path!r} really lands at {target.path!r}, outside the plan's scope",
                )
            )
    return out


def _check(scope: PlanScope, effect: Effect) -> list[ScopeViolation]:
    out: list[ScopeViolation] = []
    if scope.effects and effect.kind not in scope.effects:
        out.append(ScopeViolation(effect, "effect-outside-scope", f"effect {effect.kind!r} is not in the plan's scope"))
    if scope.paths and not effect.targets_known:
        out.append(
            ScopeViolation(
                effect,
                "target-unknown",
                f"what the {effect.kind} effect acts on cannot be determined, so it cannot be kept inside "
                "the plan's scope",
            )
        )
    if scope.paths and effect.path is not None:
        if _normalise(effect.path) is None:
            out.append(ScopeViolation(effect, "path-escapes", f"path {effect.path!r} leaves the workspace"))
        elif not path_in_scope(effect.path, scope.paths):
            out.append(
                ScopeViolation(effect, "path-outside-scope", f"path {effect.path!r} is outside the plan's scope")
            )
        elif effect.resolved is not None:
            out.extend(_check_resolved(scope, effect, effect.path, effect.resolved))
    return out


def check_scope(spec: PlanSpec, effects: Iterable[Effect]) -> ScopeVerdict:
    """Every effect outside ``spec``'s scope. Never raises."""
    if spec.scope is None:
        return ScopeVerdict()
    scope = spec.scope
    return ScopeVerdict(tuple(v for effect in effects for v in _check(scope, effect)))

