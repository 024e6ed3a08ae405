"""What a database hands back, read as the store's values.

Theory of operation
-------------------
The SQLite and PostgreSQL backends read the same columns out of the same
tables (the session row, the idempotency keys, the goal leases, the forks),
so they read them with the same functions. A value that is not of the type
the schema promises is only ever in a hand-edited database: an integer
column reads as -1 then (which never matches a fold, so an audit reports
it) and a text column as the value's text, never as a crash in the reader.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..provenance import ForkProvenance
from .base import Lease, stored_int
from .engine import KnownKey, SessionRow
from .projection import Projection

__all__ = ["stored_int", "stored_key", "stored_lease", "stored_provenance", "stored_row"]


def stored_lease(session_id: str, holder: object, token: object, expires_at: object, ttl_ms: object) -> Lease | None:
    """A goal lease row's columns as a ``Lease`` (``None`` for no row: a NULL holder)."""
    if holder is None:
        return None
    return Lease(session_id, str(holder), stored_int(token), stored_int(expires_at), stored_int(ttl_ms))


def stored_key(request_hash: object, first_seq: object, last_seq: object) -> KnownKey:
    """What an idempotency key answered, from its row's columns."""
    return KnownKey(str(request_hash), stored_int(first_seq), stored_int(last_seq))


def stored_row(columns: Sequence[Any]) -> SessionRow:
    """A session row from its columns in the order both backends select
    them: log seq, agent mode, plan mode (a boolean, or SQLite's 1), current
    plan, its summary, goal, then the fold format and state."""
    log_seq, agent_mode, plan_mode, plan, summary, goal, fold_format, fold_state = columns
    projection = Projection(stored_int(log_seq), str(agent_mode), plan_mode == 1, str(plan), str(summary), str(goal))
    return SessionRow(projection, str(fold_format), str(fold_state))


def stored_provenance(columns: Sequence[Any]) -> ForkProvenance:
    """A fork's provenance from its row's columns: source session, seq, prefix digest."""
    source, seq, digest = columns
    return ForkProvenance(str(source), stored_int(seq), str(digest))
