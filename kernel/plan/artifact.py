"""A session's plan as a value: its six statuses, the artifact and the fold state.

``STATUS_TABLE`` documents the statuses; the transitions between them are the
table of ``status`` (``TRANSITIONS``), whose checks (``checks``) read the
``PlanState`` defined here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, Protocol

from ..phase import AgentMode
from .spec import PlanSpec, SummarySource, SummaryView, spec_hash

__all__ = [
    "LIVE_STATUSES",
    "PLAN_STATUSES",
    "STATUS_TABLE",
    "PlanArtifact",
    "PlanFacts",
    "PlanRef",
    "PlanState",
    "PlanStatus",
    "StatusInfo",
]

PlanStatus = Literal["draft", "approved", "implicit", "executing", "completed", "superseded"]
PLAN_STATUSES: tuple[PlanStatus, ...] = (
    "draft",
    "approved",
    "implicit",
    "executing",
    "completed",
    "superseded",
)


@dataclass(frozen=True, slots=True)
class StatusInfo:
    """What a status means: ``live`` (the plan still guides the session),
    ``may_start`` (execution may begin from it) and a sentence."""

    live: bool
    may_start: bool
    doc: str


STATUS_TABLE: Mapping[PlanStatus, StatusInfo] = MappingProxyType(
    {
        "draft": StatusInfo(True, False, "recorded from exit_plan_mode; awaits approval"),
        "approved": StatusInfo(True, True, "approved at an exact id, revision and content hash"),
        "implicit": StatusInfo(True, True, "minimal plan made by build bootstrap"),
        "executing": StatusInfo(True, False, "being carried out (verify is a sub-phase)"),
        "completed": StatusInfo(False, False, "verified and finished"),
        "superseded": StatusInfo(False, False, "replaced; no longer guides the session"),
    }
)
LIVE_STATUSES: frozenset[PlanStatus] = frozenset(s for s, info in STATUS_TABLE.items() if info.live)



@dataclass(frozen=True, slots=True)
class PlanRef:
    """One exact version of a plan: what an approval is bound to."""

    plan_id: str
    revision: int
    spec_hash: str


@dataclass(frozen=True, slots=True)
class PlanArtifact:
    """The current plan. ``updated_at`` moves only when content changes
    (draft, rewrite, todo progress), never on a status change."""

    id: str
    revision: int
    status: PlanStatus
    spec: PlanSpec
    summary: SummaryView
    created_at: int
    updated_at: int

    @property
    def ref(self) -> PlanRef:
        return PlanRef(self.id, self.revision, spec_hash(self.spec))


@dataclass(frozen=True, slots=True)
class PlanState:
    """The plan fold. An empty log has no plan.

    ``approval`` is the approved version (``None`` unless approved and not
    voided since); ``realign`` says why the plan must be realigned before it
    may run again; ``unseen`` is true until a build-mode request has carried
    the current content and been answered (the next build-mode
    ``assistant/message``: a request whose model call failed reached no one,
    so its retry carries the content again); ``feedback`` is the last
    rejection's.
    """

    current: PlanArtifact | None = None
    approval: PlanRef | None = None
    verifying: bool = False
    realign: str | None = None
    feedback: str | None = None
    summary_source: SummarySource = "runtime"
    summary_rejected: tuple[str, ...] = ()
    unseen: bool = False
    used_ids: frozenset[str] = frozenset()
    verify_failures: int = 0

    @property
    def status(self) -> PlanStatus | None:
        return None if self.current is None else self.current.status

    @property
    def live(self) -> bool:
        return self.current is not None and STATUS_TABLE[self.current.status].live


class PlanFacts(Protocol):
    """What the plan machines read of a session: the recorded plan mode (and
    the agent mode it gives) and the plan fold. A session state
    (``kernel.session.SessionState``) is one; the plan machines never need
    the rest of the session."""

    @property
    def plan_mode(self) -> bool: ...

    @property
    def agent_mode(self) -> AgentMode: ...

    @property
    def plan(self) -> PlanState: ...
