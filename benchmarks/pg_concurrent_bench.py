"""PostgreSQL, concurrent writers: appends from many threads through one store.

Theory of operation
-------------------
The threads of one process (a server running many agent sessions) append
the goal log (``benchmarks.workloads``), each to a session of its own, one
event per call, all of them at once (they start together at a barrier), on a
throwaway PostgreSQL server of the family's own (``tests.pg_cluster``) with
the server's defaults, ``fsync=on`` and ``synchronous_commit=on``, so every
commit waits for its WAL flush.

planfold's writers share one ``PostgresStore`` (a pool of as many
connections as there are writers), whose group commit gives the appends
waiting at the same time one transaction, one round trip and one flush (each
still with its own compare-and-set and strict fold). The baseline is
``RawPg`` (``benchmarks.pg_bench``) on the same threads, each with a
connection of its own: every append is one transaction running planfold's
own statement (``planfold_append``, the same SQL on the same tables) with
values it does not check or derive, which is what psycopg offers a program
that does not group commits. Each system writes into a schema of its own on
the one server.

For 1 and ``WRITERS`` writers each system runs ``concurrent_rounds`` rounds of
``concurrent_appends`` appends per writer, the systems taking turns round by
round (``benchmarks.concurrent_bench.turns``); a round's throughput is its
appends over its wall time. The goal: planfold's events/s over raw psycopg's
with ``WRITERS`` writers (the median of the rounds' quotients). The notes give
the CPU time this process spent per append on each side (user and system,
every thread), which is what a client adds to the server's work.

When the server cannot be started, the family says so and measures nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from benchmarks.concurrent_bench import Append, rates, store_appender, turns
from benchmarks.harness import FamilyResult, Ratio, Scale, ratio
from benchmarks.pg_bench import RawPg, start_server
from benchmarks.workloads import goal_events
from planfold.kernel.log import Event

__all__ = ["FAMILY", "WRITERS", "run_pg_concurrent"]

FAMILY = "postgres-concurrent"
#: The numbers of writers measured; the goal is stated for the largest.
COUNTS = (1, 8)
WRITERS = COUNTS[-1]


def _raw(logs: list[RawPg]) -> Append:
    """Appends through the connection of the session's writer."""
    by_session = {f"writer-{w}": log for w, log in enumerate(logs)}

    def append(session: str, event: Event) -> None:
        by_session[session].append(session, event.seq - 1, [event])

    return append


def run_pg_concurrent(scale: Scale, workdir: Path) -> FamilyResult:
    """Events/s of 1 and ``WRITERS`` writer threads through one ``PostgresStore``
    and through raw psycopg (a connection per thread, one transaction per append)."""
    cluster, why = start_server()
    if cluster is None:
        return FamilyResult(FAMILY, (), (), (why,))
    from planfold.adapters.store.postgres import PostgresStore  # noqa: PLC0415 (importable: the server started)

    per_round, rounds = scale.concurrent_appends, scale.concurrent_rounds
    events = list(goal_events(per_round * rounds))
    closers: list[Callable[[], None]] = []
    try:
        stores = {n: PostgresStore(cluster.schema_url(f"planfold_{n}"), pool_size=n) for n in COUNTS}
        closers.extend(store.close for store in stores.values())
        raws: dict[int, list[RawPg]] = {}
        for n in COUNTS:
            url = cluster.schema_url(f"raw_{n}")
            raws[n] = [RawPg(url, setup=w == 0) for w in range(n)]
            closers.extend(raw.close for raw in raws[n])
        settings = stores[WRITERS].settings()
        systems = {
            "planfold": {n: store_appender(store) for n, store in stores.items()},
            "raw-psycopg": {n: _raw(logs) for n, logs in raws.items()},
        }
        done = list(turns(systems, events, per_round, rounds))
    finally:
        for close in reversed(closers):
            close()
        cluster.destroy()
    detail = f"{per_round} goal-log events per writer per round, one per call, synchronous_commit=on"
    found = rates(FAMILY, done, detail, "writer thread")
    cpu = {key: sum(t.cpu for t in done if (t.system, t.writers) == key) / (key[1] * per_round * rounds)
           for key in found}  # fmt: skip
    notes = (
        f"PostgreSQL {settings['server_version']}, synchronous_commit={settings['synchronous_commit']}; "
        "one server, a schema per system and number of writers",
        "this process's CPU per append (user + system, every thread): "
        + "; ".join(f"{s}, {n} writer(s): {seconds * 1e6:.0f} us" for (s, n), seconds in sorted(cpu.items())),
    )
    how = "events/s of the same writer threads appending at once, median of the rounds' quotients"
    ratios: tuple[Ratio, ...] = (
        ratio(FAMILY, f"PostgreSQL, {WRITERS} writers: planfold / raw psycopg, one transaction per append "
              f"(same {WRITERS} threads)", found[("planfold", WRITERS)], found[("raw-psycopg", WRITERS)],
              direction="at-least", bound=2.0, how=how),
        ratio(FAMILY, "PostgreSQL, one writer: planfold / raw psycopg", found[("planfold", 1)],
              found[("raw-psycopg", 1)], direction="at-least", bound=None, how=how),
    )  # fmt: skip
    return FamilyResult(FAMILY, tuple(found.values()), ratios, notes)
