"""Taking a SQLite file's write lock in turns with other connections.

Theory of operation
-------------------
SQLite gives its write lock to whoever asks while it is free; it keeps no
queue. A connection that finds it taken waits in SQLite's busy handler,
which sleeps 1, 2, 5, 10, ... up to 100 ms between looks. Against another
process that writes in a loop (it commits, and asks again some tens of
microseconds later) such a waiter nearly never looks at the right moment: a
store whose appends wait behind one connection (group commit) got a few
hundred appends through in the time the other process made twenty
thousand.

So the store's connections run without SQLite's busy handler (``PRAGMA
busy_timeout = 0`` once the file is open) and wait for locks themselves,
within the store's busy timeout as before (then ``store-busy``). A read
transaction that meets a lock (in WAL mode only while another connection
recovers the file) is rolled back and run again a little later
(``ConnectionKeeper``). A write transaction's ``BEGIN IMMEDIATE`` is
``WriteTurns.begin``:

- It asks for the lock at once; while the lock is taken it looks again
  every ``POLL`` seconds (every millisecond at most, once it has waited
  ``PATIENT`` seconds), so it sees the lock free within a fraction of
  another writer's transaction instead of tens of milliseconds later. Having
  to wait marks the file contended for ``CONTENDED`` seconds.
- While the file is contended, once one of its write transactions has
  committed, the next waits until another connection has committed
  (SQLite's ``PRAGMA data_version`` changes exactly then), for at most
  ``HANDOFF`` seconds: the turn passes to the writer that waited. The
  store's group commit makes this wait before its next leader takes the
  appends waiting (``hand_over``), so the appends that come meanwhile join
  that group and the pause costs little. A wait that runs out means no one
  took the turn: the connection hands over no more until it meets the lock
  taken again.

Two connections that both do this take turns, so neither starves, and each
of this store's turns holds a whole group of appends. A writer that does
not take turns (an older planfold, another program) still finds the lock
free at every handoff. While nothing contends, a write transaction costs
what it did.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

from .sqlite_schema import Connection, is_busy

__all__ = ["CONTENDED", "HANDOFF", "PATIENT", "POLL", "WriteTurns"]

#: How long (seconds) a file counts as contended after the last sign of another writer.
CONTENDED = 1.0
#: The longest a contended connection waits (seconds) for another to take its turn.
HANDOFF = 0.005
#: How long (seconds) a waiting connection sleeps between looks at the lock at first.
POLL = 0.00005
#: After waiting this long (seconds) for the lock, the looks space out up to a millisecond apart.
PATIENT = 0.01
_SLOWEST = 0.001


class WriteTurns:
    """Takes the write lock for one connection (see the module docstring);
    ``busy_timeout_ms`` is how long it may wait for it, ``handoff`` how long
    (seconds) it waits for another connection to take its turn."""

    def __init__(self, busy_timeout_ms: int, *, handoff: float = HANDOFF) -> None:
        self.busy_timeout_ms = busy_timeout_ms
        self.handoff = handoff
        #: Until when (``time.monotonic``) the file counts as contended.
        self.contended_until = 0.0
        #: Whether turns are handed over (the last handoff was taken).
        self.handing_over = False
        #: ``data_version`` as this connection's last write transaction
        #: committed while contended (``None``: no turn to hand over).
        self.version: int | None = None

    @property
    def contended(self) -> bool:
        """Whether another connection wrote lately (see the module docstring)."""
        return time.monotonic() < self.contended_until

    def begin(self, conn: Connection) -> None:
        """``BEGIN IMMEDIATE`` on ``conn``, in turn with other writers."""
        if self.version is not None:
            self.hand_over(lambda: int(conn.execute("PRAGMA data_version").fetchone()[0]))
        start: float | None = None
        pause = POLL
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if not is_busy(exc):
                    raise
                now = time.monotonic()
                self.contended_until = now + CONTENDED
                self.handing_over = True
                if start is None:
                    start = now
                elif now - start >= self.busy_timeout_ms / 1000:
                    raise
                if now - start >= PATIENT:
                    pause = min(pause * 2, _SLOWEST)
            time.sleep(pause)

    def hand_over(self, data_version: Callable[[], int]) -> None:
        """When it is another writer's turn, wait until another connection
        commits (``data_version()`` reads this connection's ``PRAGMA
        data_version``), at most ``handoff`` seconds. The store's group
        commit calls this before its leader takes the appends waiting."""
        version, self.version = self.version, None
        if version is None:
            return
        deadline = time.monotonic() + self.handoff
        while data_version() == version:
            if time.monotonic() >= deadline:
                self.handing_over = False  # no one took the turn
                return
            time.sleep(POLL)

    def ending(self, conn: Connection, *, wrote: bool) -> None:
        """The write transaction begun by ``begin`` on ``conn`` is about to
        commit (``wrote``: having changed rows): while turns are handed
        over, its ``data_version`` now (no other connection can commit
        before it ends) is what the next turn waits to see change. A
        transaction that wrote nothing, or was rolled back, hands nothing
        over: no other connection sees it end, and the appends that wait
        were refused by it (a stale expected seq) and read the head again,
        which another writer's turn would make stale once more."""
        self.version = None
        if wrote and self.handing_over and self.contended:
            try:
                self.version = int(conn.execute("PRAGMA data_version").fetchone()[0])
            except sqlite3.Error:
                self.version = None

