"""A strict replay whose memory does not grow with the goal ids a log has used.

Theory of operation
-------------------
The strict fold refuses a goal id that a log creates twice, so its state
remembers every id created so far (``GoalState.used_ids``): about 20,000 ids
at a million events of a goal-heavy log, some 100 bytes each in memory. A
replay that reads its log as a stream (``planfold replay``) would otherwise
grow with the history by that much, however little else it holds.

``SpillingFold`` folds each event with the kernel's own
``apply_session_event`` and then takes the ids the event added out of the
state it hands back, so the states it passes between events hold none. The
ids it has taken are kept by the replay instead: the newest ``keep`` of them
in a set, the older ones in a table of a private temporary SQLite database
(created on the first move, deleted by SQLite when it is closed; its page
cache is capped, so the table lives on disk, not in memory).

A reused id is refused exactly where and as the whole fold refuses it.
Before a ``goal/change`` that creates a goal is folded, its id is looked up
among the ids the replay holds; when it is there, the state the event is
folded onto is made to know it as used (``knowing_goal_ids``, as a store's
append does with its index), so the kernel's own checks run on a state that
differs from the whole fold's only in ids this event does not name: it raises
its ``ReplayError`` (``id-reused`` at that seq, naming the id, or whatever
check comes first) exactly as the whole fold does. The ids take no part in a
state's equality, so every state equals the whole fold's.

Every other event costs a comparison of its kind and a check that the
folded state holds no ids.

``fold_records`` is the strict fold of a whole log as ``replay``, ``check``
and ``report`` read it: ``(line, event)`` records folded one at a time as
they are read, through a ``SpillingFold``, stopping at the first bad record
(a malformed line of a JSON Lines log, a bad fork record, a stored payload
that does not decode, an event the fold refuses), which it names.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from types import TracebackType

from ...kernel.errors import ReplayError
from ...kernel.idset import IdSet
from ...kernel.log import GOAL_CHANGE, Event
from ...kernel.session import SessionState, apply_session_event
from ..codec import RecordError
from ..provenance import ForkRecordError
from .engine import created_goal_ids, knowing_goal_ids

__all__ = ["KEEP", "FoldStop", "SpillingFold", "fold_records"]

#: How many ids a replay keeps in memory before it moves them to disk.
KEEP = 1024

#: The temporary database's page cache, in KiB (SQLite's negative cache_size).
CACHE_KIB = 64

_NONE = IdSet()


class SpillingFold:
    """Fold a session strictly, keeping the goal ids it has used off its states.

    ``fold(state, event)`` is ``apply_session_event(state, event)`` with the
    state's ``goal.used_ids`` emptied (it raises the same ``ReplayError`` at
    the same events, for every log, when every state it is given came from
    it); use it as a context manager, or ``close()`` it, to delete its table.
    ``keep`` (default ``KEEP``) is how many ids it holds in memory; below 1 it
    raises ``ValueError``.
    """

    def __init__(self, keep: int | None = None) -> None:
        keep = KEEP if keep is None else keep
        if keep < 1:
            raise ValueError(f"keep must be at least 1, not {keep}")
        self._keep = keep
        self._recent: set[str] = set()
        self._disk: sqlite3.Connection | None = None

    def fold(self, state: SessionState, event: Event) -> SessionState:
        """``event`` folded onto ``state``; raises ``ReplayError`` at a bad event."""
        # A payload that is not an object creates nothing: the fold below
        # refuses it (``malformed-payload`` at its seq) before anything else.
        holding = self._recent or self._disk is not None
        if event.kind == GOAL_CHANGE and holding and isinstance(event.payload, Mapping):
            held = [goal_id for goal_id, _ in created_goal_ids((event,)) if self._holds(goal_id)]
            if held:
                state = knowing_goal_ids(state, held)
        folded = apply_session_event(state, event)
        added = folded.goal.used_ids
        if not added:
            return folded
        self._recent.update(added)
        if len(self._recent) >= self._keep:
            self._move()
        return replace(folded, goal=replace(folded.goal, used_ids=_NONE))

    def held(self) -> int:
        """How many ids the replay holds (in memory and on disk)."""
        on_disk = 0 if self._disk is None else int(self._disk.execute("SELECT count(*) FROM ids").fetchone()[0])
        return len(self._recent) + on_disk

    def in_memory(self) -> int:
        """How many of them it holds in memory (at most ``keep``)."""
        return len(self._recent)

    def _holds(self, goal_id: str) -> bool:
        if goal_id in self._recent:
            return True
        if self._disk is None:
            return False
        return self._disk.execute("SELECT 1 FROM ids WHERE id = ?", (goal_id,)).fetchone() is not None

    def _move(self) -> None:
        if self._disk is None:
            self._disk = sqlite3.connect("", isolation_level=None)
            self._disk.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            self._disk.execute("PRAGMA journal_mode = OFF")
            self._disk.execute("PRAGMA synchronous = OFF")
            self._disk.execute("CREATE TABLE ids (id TEXT PRIMARY KEY) WITHOUT ROWID")
        with self._disk:
            self._disk.execute("BEGIN")
            self._disk.executemany("INSERT OR IGNORE INTO ids (id) VALUES (?)", ((i,) for i in self._recent))
        self._recent.clear()

    def close(self) -> None:
        """Delete the table and forget every id (the states folded stay valid;
        the fold is not meant to be used again)."""
        if self._disk is not None:
            self._disk.close()
            self._disk = None
        self._recent.clear()

    def __enter__(self) -> SpillingFold:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


@dataclass(frozen=True, slots=True)
class FoldStop:
    """The first bad record of a log: its seq (``None`` when unreadable), its
    line in a JSON Lines log (``None`` in a database), the rule it breaks and
    the detail, and the event when it could be read."""

    position: int | None
    line: int | None
    rule: str
    detail: str
    event: Event | None = None


def _refused(exc: ReplayError, line: int | None, event: Event | None) -> FoldStop:
    position = exc.position if isinstance(exc.position, int) and not isinstance(exc.position, bool) else None
    return FoldStop(position, line, exc.rule, exc.detail, event)


def fold_records(
    records: Iterable[tuple[int | None, Event]], visit: Callable[[SessionState, SessionState, Event], None]
) -> tuple[SessionState, FoldStop | None]:
    """Fold ``records`` strictly from the empty state (see the module),
    calling ``visit(before, after, event)`` for each event folded; the state
    the fold reached, and where it stopped (``None``: at the end)."""
    state = SessionState()
    with SpillingFold() as fold:
        try:
            for line, event in records:
                try:
                    after = fold.fold(state, event)
                except ReplayError as exc:
                    return state, _refused(exc, line, event)
                visit(state, after, event)
                state = after
        except RecordError as exc:  # a line of a JSON Lines log that is not a record
            return state, FoldStop(exc.seq, exc.line, exc.code, exc.detail)
        except ForkRecordError as exc:
            return state, FoldStop(None, exc.line, exc.code, exc.message)
        except ReplayError as exc:  # a stored payload that does not decode
            return state, _refused(exc, None, None)
    return state, None
