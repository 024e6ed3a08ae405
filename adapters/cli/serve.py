"""The ``planfold serve`` command line.

Theory of operation
-------------------
``planfold serve --db FILE`` opens the store, then answers JSON-RPC requests
on standard input until it ends (``adapters.serve.server``). Standard output
carries responses only: while the server runs, ``sys.stdout`` points at
standard error, so nothing printed by accident can corrupt the protocol.
Logs go to standard error, as the ``planfold`` command sets them up
(``adapters.cli.main``): INFO by default, ``-vv`` (DEBUG) adds one line per
request (which ``serve -v`` did before ``-v`` counted for every command).

``--db`` is a SQLite file, a ``postgresql://`` URL (with the postgres
extra installed), or ``:memory:`` for a store that lives only as long as the
process (to try the protocol). ``--ticks START[:STEP]`` replaces
the wall clock with one that reads START, START+STEP, … milliseconds (STEP
defaults to 1000), so a scripted session writes the same log on every run.
``--connect-timeout S`` bounds the first connection to a PostgreSQL server
(default 5 s): a wrong URL fails at once with the driver's message.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Callable

from ..loggers import logger
from ..redact import redact_url
from ..serve.server import Server
from ..store.base import Store
from ..store.memory import MemoryStore
from ..store.opener import DEFAULT_CONNECT_TIMEOUT, DEFAULT_STORE_TIMEOUT, open_store
from ..store.session_log import Clock, system_clock
from .args import positive_seconds

__all__ = ["MEMORY", "add_serve_arguments", "parse_ticks", "run_serve", "store_for", "ticks"]

#: The ``--db`` value of a store kept in memory.
MEMORY = ":memory:"


def ticks(start: int, step: int = 1000) -> Clock:
    """A clock that reads ``start``, ``start + step``, … (one step per reading)."""
    counter = itertools.count()
    return lambda: start + step * next(counter)


#: The largest ``--ticks`` START and STEP: a million readings stay below 2**53.
MAX_TICK_START, MAX_TICK_STEP = 2**52, 2**32


def parse_ticks(text: str) -> tuple[int, int]:
    """``START[:STEP]`` as two integers (``argparse`` reports a ``ValueError``)."""
    start, _, step = text.partition(":")
    values = int(start), int(step or "1000")
    if not (0 <= values[0] <= MAX_TICK_START and 0 <= values[1] <= MAX_TICK_STEP):
        # an event's time is a safe integer: a larger clock reading is a log the fold refuses
        raise ValueError(f"ticks: START from 0 to 2**52, STEP from 0 to 2**32, got {text!r}")
    return values


def store_for(
    db: str, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT, timeout: float = DEFAULT_STORE_TIMEOUT
) -> Store:
    """The store ``--db`` names: a SQLite file, a ``postgresql://`` URL (its
    first connection within ``connect_timeout`` seconds, each operation's
    wait for a connection within ``timeout``), or ``:memory:``."""
    return MemoryStore() if db == MEMORY else open_store(db, connect_timeout=connect_timeout, timeout=timeout)


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db", required=True, help=f"the store: a SQLite file, a postgresql:// URL, or {MEMORY} (kept in memory)"
    )
    parser.add_argument(
        "--ticks",
        type=parse_ticks,
        metavar="START[:STEP]",
        help="a deterministic clock (milliseconds) instead of the wall clock, for reproducible runs",
    )
    parser.add_argument(
        "--connect-timeout",
        type=positive_seconds,
        default=DEFAULT_CONNECT_TIMEOUT,
        metavar="S",
        help=f"seconds the first connection to a PostgreSQL server may take (default {DEFAULT_CONNECT_TIMEOUT:g})",
    )
    parser.add_argument(
        "--store-timeout",
        type=positive_seconds,
        default=DEFAULT_STORE_TIMEOUT,
        metavar="S",
        help="seconds one request waits for a PostgreSQL connection, so during an outage each fails"
        f" after about that long (default {DEFAULT_STORE_TIMEOUT:g})",
    )


def run_serve(args: argparse.Namespace, clock: Callable[[], int] | None = None) -> int:
    """Serve until standard input ends; the exit status (0)."""
    if clock is None:
        clock = ticks(*args.ticks) if args.ticks else system_clock
    store = store_for(args.db, args.connect_timeout, args.store_timeout)
    stdout, sys.stdout = sys.stdout, sys.stderr
    try:
        logger(__name__).info("ready on stdin/stdout (store %s)", redact_url(args.db))
        return Server(store, clock).serve(sys.stdin.buffer, stdout.buffer)
    finally:
        sys.stdout = stdout
        store.close()
