"""The state capsule: a compact, canonical statement of where a session stands,
for re-injection after the context was compacted.

Theory of operation
-------------------
Context compaction drops old messages, and with them the model's sense of
mode, plan and goal. The capsule restates them from the fold, never from the
conversation: the agent mode and runtime phase, the current plan's id,
revision, status and content hash, whether it needs realignment, its summary,
and a goal summary supplied by the caller (any JSON object, or ``None``; the
goal machine owns its shape).

``build_capsule`` derives it from a session state (``PlanFacts``); its ``hash`` is sha256
over the canonical JSON of everything else, so two capsules of the same state
are byte-identical and a tampered or stale one is visible. ``check_capsule``
lists the fields on which a capsule disagrees with the state folded from the
log (empty: it matches); ``capsule_from_json`` reads a stored capsule strictly
and refuses one whose hash does not match its content.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, cast

from ..errors import PayloadError
from ..payload import JSON, Opaque, SafeInt, read_as
from ..phase import AgentMode, RuntimePhase
from .artifact import PlanFacts, PlanStatus
from .context import runtime_phase
from .spec import SummaryView, spec_hash
from .spec_json import summary_to_json

__all__ = [
    "CAPSULE_FIELDS",
    "StateCapsule",
    "build_capsule",
    "capsule_from_json",
    "capsule_matches",
    "capsule_to_json",
    "check_capsule",
    "render_capsule",
]

CAPSULE_FIELDS: tuple[str, ...] = (
    "mode",
    "phase",
    "plan_id",
    "revision",
    "status",
    "spec_hash",
    "realign",
    "summary",
    "goal",
)


@dataclass(frozen=True, slots=True)
class StateCapsule:
    """Mode, phase, plan identity and summary, goal, and a hash over them.
    ``goal_json`` is the goal summary as canonical JSON (hashable, immutable);
    ``goal`` decodes it."""

    mode: AgentMode
    phase: RuntimePhase
    plan_id: str | None
    revision: int | None
    status: PlanStatus | None
    spec_hash: str | None
    realign: str | None
    summary: SummaryView | None
    goal_json: str | None
    hash: str

    @property
    def goal(self) -> JSON:
        import json  # noqa: PLC0415 (json is imported on first use, not with the kernel)

        return None if self.goal_json is None else cast(JSON, json.loads(self.goal_json))


def _canonical(value: object) -> str:
    import json  # noqa: PLC0415 (see Capsule.goal)

    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def _not_json(exc: TypeError | ValueError) -> str:
    """Why ``_canonical`` refused a value, in words that do not depend on the
    Python version (json words its refusal of NaN differently across them)."""
    if isinstance(exc, ValueError):
        return "it holds a number JSON cannot carry (NaN or an infinity)"
    return str(exc)


def _canonical_goal(goal: Mapping[str, JSON]) -> str:
    """The goal's canonical JSON; ``PayloadError`` when it holds a value JSON
    cannot carry (NaN, Infinity, a non-JSON object)."""
    try:
        return _canonical(goal)
    except (TypeError, ValueError) as exc:
        raise PayloadError(f"capsule 'goal' is not plain JSON: {_not_json(exc)}") from exc


def _body(capsule_fields: Mapping[str, JSON]) -> dict[str, JSON]:
    return {key: capsule_fields[key] for key in CAPSULE_FIELDS}


def _hash(body: Mapping[str, JSON]) -> str:
    import hashlib  # noqa: PLC0415 (hashlib is imported on first use, not with the kernel)

    return hashlib.sha256(_canonical(body).encode("ascii")).hexdigest()


def _fields(capsule: StateCapsule) -> dict[str, JSON]:
    return {
        "mode": capsule.mode,
        "phase": capsule.phase,
        "plan_id": capsule.plan_id,
        "revision": capsule.revision,
        "status": capsule.status,
        "spec_hash": capsule.spec_hash,
        "realign": capsule.realign,
        "summary": None if capsule.summary is None else summary_to_json(capsule.summary),
        "goal": capsule.goal,
    }


def build_capsule(state: PlanFacts, goal: Mapping[str, JSON] | None = None) -> StateCapsule:
    """The capsule of ``state`` with the caller's goal summary.

    Raises ``PayloadError`` when ``goal`` is not JSON (the caller's fault).
    """
    try:
        goal_json = None if goal is None else _canonical(goal)
    except (TypeError, ValueError) as exc:
        raise PayloadError(f"the goal summary is not JSON: {_not_json(exc)}") from exc
    cur = state.plan.current
    draft = StateCapsule(
        mode=state.agent_mode,
        phase=runtime_phase(state),
        plan_id=None if cur is None else cur.id,
        revision=None if cur is None else cur.revision,
        status=None if cur is None else cur.status,
        spec_hash=None if cur is None else spec_hash(cur.spec),
        realign=state.plan.realign,
        summary=None if cur is None else cur.summary,
        goal_json=goal_json,
        hash="",
    )
    return _with_hash(draft)


def _with_hash(capsule: StateCapsule) -> StateCapsule:
    fields = _fields(capsule)
    return StateCapsule(
        capsule.mode,
        capsule.phase,
        capsule.plan_id,
        capsule.revision,
        capsule.status,
        capsule.spec_hash,
        capsule.realign,
        capsule.summary,
        capsule.goal_json,
        _hash(_body(fields)),
    )


def capsule_to_json(capsule: StateCapsule) -> dict[str, JSON]:
    """The stored form: every field plus ``hash``."""
    return {**_fields(capsule), "hash": capsule.hash}


def _object_or_null(value: object) -> bool:
    return value is None or isinstance(value, Mapping)


def _same(value: object) -> object:
    return value


@dataclass(frozen=True, slots=True)
class _StoredCapsule:
    """A capsule as it is stored: ``goal`` is the goal summary itself."""

    mode: AgentMode
    phase: RuntimePhase
    plan_id: str | None
    revision: SafeInt | None
    status: PlanStatus | None
    spec_hash: str | None
    realign: str | None
    summary: SummaryView | None
    goal: Annotated[object, Opaque(_object_or_null, _same)]
    hash: str


def capsule_from_json(payload: object) -> StateCapsule:
    """Read a stored capsule strictly; raise ``PayloadError`` on a bad shape
    or when its hash does not match its content."""
    body: _StoredCapsule = read_as(_StoredCapsule, payload, "capsule")
    capsule = StateCapsule(
        mode=body.mode,
        phase=body.phase,
        plan_id=body.plan_id,
        revision=body.revision,
        status=body.status,
        spec_hash=body.spec_hash,
        realign=body.realign,
        summary=body.summary,
        goal_json=_canonical_goal(body.goal) if isinstance(body.goal, Mapping) else None,
        hash=body.hash,
    )
    if _with_hash(capsule).hash != capsule.hash:
        raise PayloadError("capsule hash does not match its content")
    return capsule


def check_capsule(
    capsule: StateCapsule, state: PlanFacts, goal: Mapping[str, JSON] | None = None
) -> tuple[str, ...]:
    """The fields on which ``capsule`` disagrees with ``state`` (folded from
    the log) and ``goal``; ``hash`` is listed when the capsule's own hash is
    not that of its content. Empty when it matches."""
    expected = build_capsule(state, goal)
    have, want = _fields(capsule), _fields(expected)
    diff = [key for key in CAPSULE_FIELDS if have[key] != want[key]]
    if _with_hash(capsule).hash != capsule.hash:
        diff.append("hash")
    return tuple(diff)


def capsule_matches(capsule: StateCapsule, state: PlanFacts, goal: Mapping[str, JSON] | None = None) -> bool:
    """Whether ``capsule`` is exactly what the log gives."""
    return not check_capsule(capsule, state, goal)


def render_capsule(capsule: StateCapsule) -> str:
    """The capsule as a short prompt section."""
    lines = [f"Session state (capsule {capsule.hash[:12]}): mode {capsule.mode}, phase {capsule.phase}."]
    if capsule.plan_id is None:
        lines.append("No current plan.")
    else:
        lines.append(f"Plan {capsule.plan_id}, revision {capsule.revision}, {capsule.status}.")
    if capsule.realign is not None:
        lines.append(f"Realignment needed: {capsule.realign}")
    if capsule.summary is not None:
        s = capsule.summary
        lines.append(f"Goal of the plan: {s.goal}")
        lines.append("Key steps: " + "; ".join(s.key_steps))
        if s.constraints:
            lines.append("Constraints: " + "; ".join(s.constraints))
        lines.append("Verify: " + "; ".join(s.verify))
        lines.append("Active todos: " + (", ".join(s.active_todo_ids) or "none"))
    if capsule.goal_json is not None:
        lines.append(f"Goal: {capsule.goal_json}")
    return "\n".join(lines) + "\n"
