"""``planfold audit``'s verdict on one session of a store, as a value.

Theory of operation
-------------------
``audit_verdict(store, session_id)`` is what ``planfold audit`` decides
about a session of a database, for anything else that shows that decision
(the report's audit line): the strict fold of the log (its first bad event
is a finding with the fold's rule and position), then ``Store.audit``, whose
mismatches between the log and what is stored beside it each become a
finding with a rule:

- ``projection-mismatch``: a column of the stored session row differs from
  the fold's projection;
- ``snapshot-mismatch``: the stored snapshot decodes to another state, or
  does not decode;
- ``provenance-mismatch``: a fork's first events do not hash to its
  recorded digest, or its recorded seq is past its log;
- ``provenance-source-mismatch``: the fork's source session is in the same
  store and its first events are missing or hash otherwise (a fork imported
  with a recomputed digest that claims a source it did not come from).

The verdict passes when there is no finding; ``planfold audit`` exits 1
exactly when a session's verdict fails. It only reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ...kernel.errors import ReplayError
from ..provenance import ForkProvenance
from .base import Store, check_session_id
from .engine import SOURCE_MISMATCH

__all__ = ["AuditFinding", "AuditVerdict", "audit_verdict", "finding_of"]


@dataclass(frozen=True, slots=True)
class AuditFinding:
    """One reason a session fails its audit: a kebab-case ``rule``, the seq
    of the first bad event when there is one (``position``), and ``detail``
    for people."""

    rule: str
    position: int | None
    detail: str


@dataclass(frozen=True, slots=True)
class AuditVerdict:
    """``planfold audit``'s verdict on one session (see the module docstring):
    ``last_seq`` is the seq the strict fold reached, ``snapshot`` what the
    audit found of the stored snapshot (``None`` when the fold failed first)."""

    session_id: str
    last_seq: int
    findings: tuple[AuditFinding, ...]
    snapshot: Literal["current", "stale", "absent"] | None
    provenance: ForkProvenance | None

    @property
    def ok(self) -> bool:
        """True when the session passes its audit."""
        return not self.findings

    @property
    def rules(self) -> tuple[str, ...]:
        """The rules of the findings, in order, each once."""
        return tuple(dict.fromkeys(finding.rule for finding in self.findings))

    def text(self) -> str:
        """One line for people: the verdict and the rules it failed."""
        if self.ok:
            return "passes planfold audit"
        return "FAILS planfold audit: " + ", ".join(self.rules)


def finding_of(mismatch: str) -> AuditFinding:
    """The finding of one mismatch of ``Store.audit`` (its text begins with
    what differs: a projection column, ``snapshot``, ``provenance`` or the
    source rule)."""
    head, _, rest = mismatch.partition(":")
    detail = rest.strip() or mismatch
    if head == SOURCE_MISMATCH:
        return AuditFinding(SOURCE_MISMATCH, None, detail)
    if head == "provenance":
        return AuditFinding("provenance-mismatch", None, detail)
    if head == "snapshot":
        return AuditFinding("snapshot-mismatch", None, detail)
    return AuditFinding("projection-mismatch", None, mismatch)


def audit_verdict(store: Store, session_id: str) -> AuditVerdict:
    """``planfold audit``'s verdict on ``session_id`` in ``store`` (see the
    module docstring). Storage failures come out as the store's errors."""
    check_session_id(session_id)
    try:
        report = store.audit(session_id)
    except ReplayError as exc:
        position = exc.position if isinstance(exc.position, int) and not isinstance(exc.position, bool) else None
        finding = AuditFinding(exc.rule, position, exc.detail)
        last = 0 if position is None else max(0, position - 1)
        return AuditVerdict(session_id, last, (finding,), None, store.provenance(session_id))
    findings = tuple(finding_of(mismatch) for mismatch in report.mismatches)
    return AuditVerdict(session_id, report.last_seq, findings, report.snapshot, report.provenance)
