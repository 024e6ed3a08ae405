"""The ``plan/artifact`` payloads: one reader, one writer, exact shapes.

Every ``plan/artifact`` event carries ``action`` (one of ``PLAN_ACTIONS``),
``plan_id`` and ``revision``, plus what its action needs:

- ``draft`` (a plan recorded from ``exit_plan_mode``), ``bootstrap`` (a
  minimal implicit plan made in build mode) and ``rewrite`` (a substantive
  change): ``spec``, ``summary``, ``summary_source`` (``model`` or
  ``runtime``) and ``summary_rejected`` (the kept reasons a model's candidate
  was not adopted);
- ``approve`` and ``start``: ``spec_hash``, binding them to one exact version;
- ``reject``: ``spec_hash`` and ``note`` (the reviewer's feedback or null);
- ``todo``: ``todo_id`` and ``status``;
- ``verify-fail``, ``realign`` and ``supersede``: ``note`` (why, or null);
- ``verify`` and ``complete``: nothing more.

``read_plan_action`` demands exactly those keys and raises ``PayloadError``
otherwise; ``plan_action_payload`` writes them, and a round trip is the
identity.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, cast

from ..errors import PayloadError
from ..payload import (
    JSON,
    JSONObject,
    check_keys,
    read_int,
    read_optional_str,
    read_str,
    read_str_list,
)
from .spec import PlanSpec, SummarySource, SummaryView, TodoStatus
from .spec_json import read_todo_status, spec_from_json, spec_to_json, summary_from_json, summary_to_json

__all__ = [
    "CONTENT_ACTIONS",
    "PLAN_ACTIONS",
    "PlanAction",
    "PlanActionName",
    "plan_action_payload",
    "read_plan_action",
]

PlanActionName = Literal[
    "draft",
    "bootstrap",
    "rewrite",
    "approve",
    "reject",
    "start",
    "todo",
    "verify",
    "verify-fail",
    "complete",
    "realign",
    "supersede",
]
PLAN_ACTIONS: tuple[PlanActionName, ...] = (
    "draft",
    "bootstrap",
    "rewrite",
    "approve",
    "reject",
    "start",
    "todo",
    "verify",
    "verify-fail",
    "complete",
    "realign",
    "supersede",
)
#: Actions that carry a whole spec and summary.
CONTENT_ACTIONS: frozenset[PlanActionName] = frozenset({"draft", "bootstrap", "rewrite"})
_HASH_ACTIONS: frozenset[PlanActionName] = frozenset({"approve", "reject", "start"})
_NOTE_ACTIONS: frozenset[PlanActionName] = frozenset({"reject", "verify-fail", "realign", "supersede"})

_BASE = frozenset({"action", "plan_id", "revision"})
_EXTRA: Mapping[PlanActionName, frozenset[str]] = MappingProxyType(
    {
        action: frozenset(
            ({"spec", "summary", "summary_source", "summary_rejected"} if action in CONTENT_ACTIONS else set())
            | ({"spec_hash"} if action in _HASH_ACTIONS else set())
            | ({"note"} if action in _NOTE_ACTIONS else set())
            | ({"todo_id", "status"} if action == "todo" else set())
        )
        for action in PLAN_ACTIONS
    }
)


@dataclass(frozen=True, slots=True)
class PlanAction:
    """A parsed ``plan/artifact`` payload. Fields an action does not carry are
    ``None`` (or empty)."""

    action: PlanActionName
    plan_id: str
    revision: int
    spec: PlanSpec | None = None
    summary: SummaryView | None = None
    summary_source: SummarySource | None = None
    summary_rejected: tuple[str, ...] = ()
    spec_hash: str | None = None
    todo_id: str | None = None
    todo_status: TodoStatus | None = None
    note: str | None = None


def read_plan_action(payload: JSONObject) -> PlanAction:
    """Read a ``plan/artifact`` payload; raise ``PayloadError`` on a bad shape."""
    if not isinstance(payload, Mapping):
        raise PayloadError("plan/artifact payload must be an object")
    name = payload.get("action")
    if name not in PLAN_ACTIONS:
        raise PayloadError(f"plan/artifact 'action' must be one of {list(PLAN_ACTIONS)}, got {name!r}")
    action: PlanActionName = name
    body = check_keys(payload, _BASE | _EXTRA[action], where=f"plan/artifact {action} payload")
    plan_id = read_str(body, "plan_id", non_empty=True)
    revision = read_int(body, "revision", minimum=1)
    if action in CONTENT_ACTIONS:
        source = read_str(body, "summary_source")
        if source not in ("model", "runtime"):
            raise PayloadError(f"'summary_source' must be 'model' or 'runtime', got {source!r}")
        return PlanAction(
            action,
            plan_id,
            revision,
            spec=spec_from_json(body["spec"]),
            summary=summary_from_json(body["summary"]),
            summary_source=cast(SummarySource, source),
            summary_rejected=read_str_list(body, "summary_rejected"),
        )
    return PlanAction(
        action,
        plan_id,
        revision,
        spec_hash=read_str(body, "spec_hash", non_empty=True) if action in _HASH_ACTIONS else None,
        todo_id=read_str(body, "todo_id", non_empty=True) if action == "todo" else None,
        todo_status=read_todo_status(body, "status") if action == "todo" else None,
        note=read_optional_str(body, "note") if action in _NOTE_ACTIONS else None,
    )


def plan_action_payload(act: PlanAction) -> dict[str, JSON]:
    """The stored payload of ``act`` (the inverse of ``read_plan_action``).

    Raises ``ValueError`` when ``act`` lacks a field its action needs (a bug
    in the caller, not a user error).
    """
    out: dict[str, JSON] = {"action": act.action, "plan_id": act.plan_id, "revision": act.revision}
    if act.action in CONTENT_ACTIONS:
        if act.spec is None or act.summary is None or act.summary_source is None:
            raise ValueError(f"a {act.action} action needs spec, summary and summary_source")
        out["spec"] = spec_to_json(act.spec)
        out["summary"] = summary_to_json(act.summary)
        out["summary_source"] = act.summary_source
        out["summary_rejected"] = list(act.summary_rejected)
    if act.action in _HASH_ACTIONS:
        if act.spec_hash is None:
            raise ValueError(f"a {act.action} action needs spec_hash")
        out["spec_hash"] = act.spec_hash
    if act.action in _NOTE_ACTIONS:
        out["note"] = act.note
    if act.action == "todo":
        if act.todo_id is None or act.todo_status is None:
            raise ValueError("a todo action needs todo_id and todo_status")
        out["todo_id"] = act.todo_id
        out["status"] = act.todo_status
    return out
