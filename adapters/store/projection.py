"""What a store keeps beside the log: the session row and the fold snapshot.

Theory of operation
-------------------
``project(state)`` is the one function that derives the session row's
human-readable columns from a fold state (agent mode, the current plan and its
summary in the kernel's stored JSON forms, the goal view). ``SESSION_SNAPSHOT``
encodes whole fold states exactly for fast incremental opens; its ``format``
changes whenever the state's shape or the reducer list changes, which makes
older snapshots stale rather than wrong. The goal ids a session has used
(``GoalState.used_ids``, an ``IdSet``) are transient: a store keeps them in
an index of its own (see ``adapters.store.engine``), so the snapshot written
on every append stays the same size however many goals the log has had.

Stores write both in the same transaction as the events they derive from.
``project_reusing`` derives the row of a state from the row of the state
before it, encoding the plan and the goal again only when they are other
objects (the same row as ``project``).
``snapshot_reusing`` encodes a state reusing the encoded parts of an earlier
one (the bytes are those of a fresh encoding); ``resume_state`` trusts a
stored snapshot only when its format is current, it decodes, and it is at the
log's last seq, and otherwise answers ``None`` so that the caller replays the
log. ``with_summary`` rebuilds the summary column of rows written before it
existed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields

import msgspec

from ...kernel.goal.values import GoalSnapshot
from ...kernel.idset import IdSet
from ...kernel.payload import maker
from ...kernel.plan.artifact import PlanArtifact
from ...kernel.plan.spec_json import spec_to_json, summary_to_json
from ...kernel.session import REDUCERS, SessionState
from .snapshot import SnapshotCodec, SnapshotError, SnapshotParts

__all__ = [
    "SESSION_SNAPSHOT",
    "Projection",
    "goal_json",
    "plan_json",
    "project",
    "project_reusing",
    "resume_state",
    "snapshot_of",
    "snapshot_reusing",
    "summary_json",
    "with_summary",
]


@dataclass(frozen=True, slots=True)
class Projection:
    """The session row's view of a fold state.

    ``current_plan_json`` is ``""`` when there is no plan;
    ``current_plan_summary_json`` is ``""`` only in rows written before the
    column existed (meaning: rebuild it on read); ``goal_json`` is ``""`` when
    there is no current goal.
    """

    last_seq: int = 0
    agent_mode: str = "build"
    plan_mode: bool = False
    current_plan_json: str = ""
    current_plan_summary_json: str = ""
    goal_json: str = ""


#: ``Projection(...)`` without its ``__init__`` (``kernel.payload.maker``): one per append.
_PROJECTION: Callable[..., Projection] = maker(Projection)


def plan_json(artifact: PlanArtifact | None) -> str:
    """The stored form of the current plan (spec and summary in the kernel's
    own JSON forms), ``""`` for none."""
    if artifact is None:
        return ""
    body = {
        "id": artifact.id,
        "revision": artifact.revision,
        "status": artifact.status,
        "spec": spec_to_json(artifact.spec),
        "summary": summary_to_json(artifact.summary),
        "created_at": artifact.created_at,
        "updated_at": artifact.updated_at,
    }
    return msgspec.json.encode(body).decode()


def summary_json(artifact: PlanArtifact | None) -> str:
    """The current plan's summary view, ``""`` for no plan."""
    return "" if artifact is None else msgspec.json.encode(summary_to_json(artifact.summary)).decode()


def goal_json(goal: GoalSnapshot | None) -> str:
    """The current goal as a JSON object, ``""`` for none."""
    return "" if goal is None else msgspec.json.encode(goal).decode()


def project(state: SessionState) -> Projection:
    """The session row that ``state`` determines (the only place it is derived)."""
    artifact = state.plan.current
    return _PROJECTION(
        state.last_seq,
        state.agent_mode,
        state.plan_mode,
        plan_json(artifact),
        summary_json(artifact),
        goal_json(state.goal.current),
    )


def project_reusing(state: SessionState, previous: SessionState, projection: Projection | None) -> Projection:
    """``project(state)``, taking the plan's and the goal's JSON columns from
    ``projection``, the projection of ``previous``, when ``state`` holds the
    very same plan or goal object (the kernel's values are immutable, so the
    same object gives the same JSON); ``project(state)`` when ``projection``
    is ``None``."""
    if projection is None:
        return project(state)
    artifact, goal = state.plan.current, state.goal.current
    if artifact is previous.plan.current:
        plan, summary = projection.current_plan_json, projection.current_plan_summary_json
    else:
        plan, summary = plan_json(artifact), summary_json(artifact)
    current_goal = projection.goal_json if goal is previous.goal.current else goal_json(goal)
    return _PROJECTION(state.last_seq, state.agent_mode, state.plan_mode, plan, summary, current_goal)


def _build_snapshot_codec() -> SnapshotCodec[SessionState] | None:
    reducers = ",".join(f"{r.__module__}.{r.__qualname__}" for r in REDUCERS)
    try:
        return SnapshotCodec(SessionState, extra=reducers, transient=(IdSet,))
    except SnapshotError:
        return None


#: Exact snapshots of session fold states, or ``None`` when some field of
#: ``SessionState`` has no exact encoding (stores then always replay).
SESSION_SNAPSHOT: SnapshotCodec[SessionState] | None = _build_snapshot_codec()


# --------------------------------------------------------------------------
# Rows and snapshots in a store


def with_summary(stored: Projection, state: SessionState) -> Projection:
    """``stored`` with an empty summary column rebuilt from ``state`` ("" means
    the row predates the column and the summary is rebuilt on read)."""
    if stored.current_plan_summary_json:
        return stored
    rebuilt = project(state).current_plan_summary_json
    return stored if not rebuilt else _replace_summary(stored, rebuilt)


def _replace_summary(stored: Projection, summary: str) -> Projection:
    values = {f.name: getattr(stored, f.name) for f in fields(stored)}
    values["current_plan_summary_json"] = summary
    return Projection(**values)


def resume_state(snapshot_format: str, snapshot: str, last_seq: int) -> SessionState | None:
    """The stored snapshot as a state, or ``None`` when it is absent, stale,
    undecodable or not at ``last_seq`` (the caller then replays the log)."""
    codec = SESSION_SNAPSHOT
    if codec is None or not snapshot or snapshot_format != codec.format:
        return None
    try:
        state = codec.decode(snapshot)
    except SnapshotError:
        return None
    return state if state.last_seq == last_seq else None


def snapshot_of(state: SessionState) -> tuple[str, str]:
    """``(format, text)`` of the snapshot to store for ``state``; ``("", "")``
    when states cannot be snapshotted (loads then replay the log)."""
    fold_format, text, _ = snapshot_reusing(state, None)
    return fold_format, text


def snapshot_reusing(state: SessionState, previous: SnapshotParts | None) -> tuple[str, str, SnapshotParts | None]:
    """``snapshot_of(state)`` and its encoded parts, encoding again only the
    parts of ``state`` that are not the very objects ``previous`` (the parts
    of an earlier snapshot) describes; ``None`` parts when there is no
    snapshot."""
    codec = SESSION_SNAPSHOT
    if codec is None:
        return "", "", None
    try:
        data, parts = codec.encode_reusing(state, previous)
    except SnapshotError:
        return "", "", None
    return codec.format, data.decode(), parts
