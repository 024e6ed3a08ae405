"""The ``plan/artifact`` payloads: one type per shape, read and written by
the typed reader.

Every ``plan/artifact`` event carries ``action`` (one of ``PLAN_ACTIONS``),
``plan_id`` and ``revision``, plus what its action needs; the payload types
say exactly what (``PlanPayload``, a union tagged by ``action``):

- ``draft`` (a plan recorded from ``exit_plan_mode``), ``bootstrap`` (a
  minimal implicit plan made in build mode) and ``rewrite`` (a substantive
  change): ``spec``, ``summary``, ``summary_source`` (``model`` or
  ``runtime``) and ``summary_rejected`` (the kept reasons a model's candidate
  was not adopted) (``ContentPayload``);
- ``approve`` and ``start``: ``spec_hash``, binding them to one exact version
  (``HashPayload``);
- ``reject``: ``spec_hash`` and ``note``, the reviewer's feedback or null
  (``RejectPayload``);
- ``todo``: ``todo_id`` and ``status`` (``TodoPayload``);
- ``verify-fail``, ``realign`` and ``supersede``: ``note`` (why, or null)
  (``NotePayload``);
- ``verify`` and ``complete``: nothing more (``BarePayload``).

``read_plan_action`` reads a payload into a ``PlanAction``, the one value the
status machine works on (the fields an action does not carry are ``None``);
``plan_action_payload`` writes one, and a round trip is the identity.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, TypeAlias

from ..payload import JSON, FieldShape, NonBlank, Positive, object_of, read_as, shape_of
from .spec import PlanSpec, SummarySource, SummaryView, TodoStatus

__all__ = [
    "CONTENT_ACTIONS",
    "PLAN_ACTIONS",
    "BarePayload",
    "ContentPayload",
    "HashPayload",
    "NotePayload",
    "PlanAction",
    "PlanActionName",
    "PlanPayload",
    "RejectPayload",
    "TodoPayload",
    "action_of",
    "plan_action_payload",
    "read_plan_action",
]

ContentActionName = Literal["draft", "bootstrap", "rewrite"]
PlanActionName = Literal[
    ContentActionName,
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
PLAN_ACTIONS: tuple[PlanActionName, ...] = typing.get_args(PlanActionName)
#: Actions that carry a whole spec and summary.
CONTENT_ACTIONS: frozenset[PlanActionName] = frozenset(typing.get_args(ContentActionName))


@dataclass(frozen=True, slots=True)
class ContentPayload:
    """A plan's content: recorded (``draft``, ``bootstrap``) or rewritten."""

    action: ContentActionName
    plan_id: NonBlank
    revision: Positive
    spec: PlanSpec
    summary: SummaryView
    summary_source: SummarySource
    summary_rejected: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class HashPayload:
    """Approval of, or the start of execution of, one exact version."""

    action: Literal["approve", "start"]
    plan_id: NonBlank
    revision: Positive
    spec_hash: NonBlank


@dataclass(frozen=True, slots=True)
class RejectPayload:
    """The reviewer sent this exact version back, with feedback or none."""

    action: Literal["reject"]
    plan_id: NonBlank
    revision: Positive
    spec_hash: NonBlank
    note: str | None


@dataclass(frozen=True, slots=True)
class TodoPayload:
    """Progress of one todo of the executing plan."""

    action: Literal["todo"]
    plan_id: NonBlank
    revision: Positive
    todo_id: NonBlank
    status: TodoStatus


@dataclass(frozen=True, slots=True)
class NotePayload:
    """Verification failed, realignment is needed, or the plan is retired;
    the note says why (or is null)."""

    action: Literal["verify-fail", "realign", "supersede"]
    plan_id: NonBlank
    revision: Positive
    note: str | None


@dataclass(frozen=True, slots=True)
class BarePayload:
    """Execution enters verify, or verification passed."""

    action: Literal["verify", "complete"]
    plan_id: NonBlank
    revision: Positive


#: The payload of ``plan/artifact``, tagged by ``action``.
PlanPayload: TypeAlias = ContentPayload | HashPayload | RejectPayload | TodoPayload | NotePayload | BarePayload


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




@functools.cache
def _types() -> Mapping[str, type]:
    """Each action's payload type (read from the annotations on first use)."""
    return {
        action: member
        for member in typing.get_args(PlanPayload)
        for action in typing.get_args(typing.get_type_hints(member)["action"])
    }

#: The one field whose name differs between a payload and a ``PlanAction``.
_RENAMED = {"status": "todo_status"}
#: The fields every action carries, and one that always has a value.
_BASE = frozenset({"action", "plan_id", "revision", "summary_rejected"})


def _fields(cls: type) -> tuple[FieldShape, ...]:
    """The fields of a payload type, in order (from its shape, read once)."""
    return shape_of(cls).fields


def action_of(body: PlanPayload) -> PlanAction:
    """The ``PlanAction`` a ``plan/artifact`` payload (already read) records."""
    values = {_RENAMED.get(f.name, f.name): getattr(body, f.name) for f in _fields(type(body))}
    return PlanAction(**values)


def read_plan_action(payload: object) -> PlanAction:
    """Read a ``plan/artifact`` payload; raise ``PayloadError`` on a bad shape."""
    return action_of(read_as(PlanPayload, payload))


def plan_action_payload(act: PlanAction) -> dict[str, JSON]:
    """The stored payload of ``act`` (the inverse of ``read_plan_action``).

    Raises ``ValueError`` when ``act`` lacks a field its action needs (a bug
    in the caller, not a user error).
    """
    payload_type = _types()[act.action]
    values = {f.name: getattr(act, _RENAMED.get(f.name, f.name)) for f in _fields(payload_type)}
    needed = [_RENAMED.get(name, name) for name in values if name not in _BASE and name != "note"]
    if any(values[name] is None for name in values if name != "note"):
        listed = needed[0] if len(needed) == 1 else f"{', '.join(needed[:-1])} and {needed[-1]}"
        raise ValueError(f"a {act.action} action needs {listed}")
    return object_of(payload_type(**values))
