"""Rewinding a session to a turn: a fork just before the turn starts.

Theory of operation
-------------------
A turn K starts with its ``turn/start`` event (payload ``{"turn": K}``), so
"rewind to turn K" is a fork at the seq just before it
(``Store.fork(source, turn_start_seq(...) - 1, new_session)``): the new
session holds everything before turn K, and its next turn is turn K again.
``turn_start_seq`` reads the log as it goes (``scan`` where the store has it,
``read`` otherwise) and stops at the turn's start, each ``turn/start`` read
by its kind's reader (a stored one that does not read is the log's fault: the
positioned ``ReplayError`` a fold would give). A turn the log never started
is ``ForkTurnMissingError``; turn K starting at seq 1 leaves nothing to keep,
which the fork refuses (``fork-seq-missing``: start a new session instead).

``check_fork`` makes every check ``Store.fork`` makes, on any store and
through reads only (a read-only store will do): the ids, the new session
absent (no log, no row), the source's log reaching ``at`` and its first
``at`` events folding strictly with seqs unbroken. A caller that must not
write when a fork is refused (``planfold fork``, whose opening for writing
would create or migrate the database) runs it first on a read-only store and
opens for writing only when it passes; the fork itself checks again in its
own transaction.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...kernel.errors import PayloadError, ReplayError
from ...kernel.log import TURN_START, Event, TurnPayload
from ...kernel.payload import read_as
from ...kernel.session import SessionState, apply_session_event
from ..provenance import ForkProvenance
from .base import (
    ForkSeqMissingError,
    ForkSourceMissingError,
    InvalidRequestError,
    SessionError,
    SessionExistsError,
    Store,
    check_fork_request,
    check_session_id,
)

__all__ = ["ForkTurnMissingError", "check_fork", "fork_at_turn", "turn_start_seq"]


class ForkTurnMissingError(SessionError):
    """The session never started the turn a rewind names (the caller's
    fault; nothing was written)."""

    code = "fork-turn-missing"

    def __init__(self, session_id: str, turn: int, last_turn: int) -> None:
        started = f"its turns run from 1 to {last_turn}" if last_turn else "it has started no turn"
        super().__init__(session_id, f"has no turn {turn}: {started}")
        self.turn = turn
        self.last_turn = last_turn


def _events(store: Store, session_id: str) -> Iterable[Event]:
    scan = getattr(store, "scan", None)
    return scan(session_id) if callable(scan) else store.read(session_id)


def turn_start_seq(store: Store, session_id: str, turn: int) -> int:
    """The seq of the ``turn/start`` of turn ``turn`` in the session's log;
    ``ForkTurnMissingError`` when the log never started it."""
    check_session_id(session_id)
    if isinstance(turn, bool) or not isinstance(turn, int) or turn < 1:
        raise InvalidRequestError(f"a turn is an integer of at least 1, got {turn!r}")
    last = 0
    for event in _events(store, session_id):
        if event.kind == TURN_START:
            try:
                body: TurnPayload = read_as(TurnPayload, event.payload)
            except PayloadError as exc:
                raise ReplayError(event.seq, exc.code, exc.message) from exc
            if body.turn == turn:
                return event.seq
            last = max(last, body.turn)
    raise ForkTurnMissingError(session_id, turn, last)


def fork_at_turn(store: Store, source_session: str, turn: int, new_session: str) -> ForkProvenance:
    """Rewind to turn ``turn``: fork ``source_session`` into ``new_session``
    just before the turn's ``turn/start`` (see the module docstring). The
    fork's errors are ``Store.fork``'s, plus ``ForkTurnMissingError``."""
    check_session_id(new_session)
    start = turn_start_seq(store, source_session, turn)
    return store.fork(source_session, start - 1, new_session)


def check_fork(store: Store, source_session: str, at: int, new_session: str) -> int:
    """``at`` when ``Store.fork(source_session, at, new_session)`` would not
    be refused, by reads alone (see the module docstring); otherwise the
    refusal the fork would give (``InvalidRequestError``,
    ``SessionExistsError``, ``ForkSourceMissingError``,
    ``ForkSeqMissingError``, or the positioned ``ReplayError`` of a prefix
    that does not fold)."""
    upto = check_fork_request(source_session, at, new_session)
    held = store.head(new_session)
    if held:
        raise SessionExistsError(new_session, f"its log ends at seq {held}")
    if new_session in store.session_ids():
        raise SessionExistsError(new_session, "it has a session row")
    head = store.head(source_session)
    if head == 0:
        raise ForkSourceMissingError(source_session)
    if upto > head:
        raise ForkSeqMissingError(source_session, upto, head)
    state = SessionState()
    for event in _events(store, source_session):
        if event.seq > upto:
            break
        state = apply_session_event(state, event)
    if state.last_seq != upto:
        why = f"its seqs run unbroken only to {state.last_seq} and go on after {upto} (a hand-edited log)"
        raise ForkSeqMissingError(source_session, upto, head, why)
    return upto
