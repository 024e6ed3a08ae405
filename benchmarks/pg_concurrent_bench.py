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
connections as there are writers). The baseline is ``RawPg``
(``benchmarks.pg_bench``) on the same threads, each with a connection of its
own: every append is one transaction running planfold's own statement
(``planfold_append``, the same SQL on the same tables) with values it does not
check or derive, which is what psycopg offers a program that does not group
commits. Each system writes into a schema of its own on the one server.

For 1 and ``WRITERS`` writers each system runs ``concurrent_rounds`` rounds of
``concurrent_appends`` appends per writer, the systems taking turns round by
round (the order alternating); a round's throughput is its appends over its
wall time. The goal: planfold's events/s over raw psycopg's with
``WRITERS`` writers (the median of the rounds' quotients). The notes give the
CPU time this process spent per append on each side (user and system, every
thread), which is what a client adds to the server's work.

When the server cannot be started, the family says so and measures nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from benchmarks.concurrent_bench import writers_round
from benchmarks.harness import FamilyResult, Measurement, Ratio, Scale, median, ratio
from benchmarks.pg_bench import RawPg
from benchmarks.workloads import goal_events
from planfold.kernel.log import Event

__all__ = ["FAMILY", "WRITERS", "run_pg_concurrent"]

FAMILY = "postgres-concurrent"
#: The numbers of writers measured; the goal is stated for the largest.
COUNTS = (1, 8)
WRITERS = COUNTS[-1]
SYSTEMS = ("planfold", "raw-psycopg")

Append = Callable[[str, Event], None]


def _cpu() -> float:
    """This process's CPU seconds so far (user and system, every thread)."""
    times = os.times()
    return times.user + times.system


def run_pg_concurrent(scale: Scale, workdir: Path) -> FamilyResult:
    """Events/s of 1 and ``WRITERS`` writer threads through one ``PostgresStore``
    and through raw psycopg (a connection per thread, one transaction per append)."""
    try:
        from planfold.adapters.store.postgres import PostgresStore  # noqa: PLC0415
        from tests.pg_cluster import Cluster, ClusterError  # noqa: PLC0415
    except ImportError as exc:
        return FamilyResult(FAMILY, (), (), (f"not measured: {exc}",))
    try:
        cluster = Cluster()
        cluster.start()
    except ClusterError as exc:
        return FamilyResult(FAMILY, (), (), (f"not measured: the PostgreSQL server could not start: {exc}",))
    per_round, rounds = scale.concurrent_appends, scale.concurrent_rounds
    events = list(goal_events(per_round * rounds))
    rates: dict[tuple[str, int], list[float]] = {(s, n): [] for s in SYSTEMS for n in COUNTS}
    cpu: dict[tuple[str, int], float] = dict.fromkeys(rates, 0.0)
    closers: list[Callable[[], None]] = []
    try:
        stores = {}
        raws: dict[int, list[RawPg]] = {}
        for n in COUNTS:
            store = PostgresStore(cluster.schema_url(f"planfold_{n}"), pool_size=n)
            closers.append(store.close)
            stores[n] = store
            url = cluster.schema_url(f"raw_{n}")
            raws[n] = [RawPg(url, setup=w == 0) for w in range(n)]
            closers.extend(raw.close for raw in raws[n])
        settings = stores[WRITERS].settings()

        def planfold(n: int) -> Append:
            store = stores[n]

            def append(session: str, event: Event) -> None:
                store.append(session, event.seq - 1, [event])

            return append

        def raw(n: int) -> Append:
            by_session = {f"writer-{w}": log for w, log in enumerate(raws[n])}

            def append(session: str, event: Event) -> None:
                by_session[session].append(session, event.seq - 1, [event])

            return append

        for index in range(rounds):
            chunk = events[index * per_round : (index + 1) * per_round]
            for n in COUNTS:
                sessions = [f"writer-{w}" for w in range(n)]
                order = [("planfold", planfold(n)), ("raw-psycopg", raw(n))]
                for name, append in order if index % 2 == 0 else order[::-1]:
                    before = _cpu()
                    rate, _ = writers_round(append, sessions, chunk)
                    cpu[(name, n)] += _cpu() - before
                    rates[(name, n)].append(rate)
    finally:
        for close in reversed(closers):
            close()
        cluster.destroy()
    detail = f"{per_round} goal-log events per writer per round, one per call, synchronous_commit=on"
    found = {
        key: Measurement(FAMILY, f"{key[0]}, {key[1]} writer thread{'s' if key[1] > 1 else ''}", "events/s",
                         median(samples), tuple(samples), detail)
        for key, samples in rates.items()
    }  # fmt: skip
    appends = {n: n * per_round * rounds for n in COUNTS}
    notes = (
        f"PostgreSQL {settings['server_version']}, synchronous_commit={settings['synchronous_commit']}; "
        "one server, a schema per system and writer count",
        "this process's CPU per append (user + system, all threads): "
        + "; ".join(f"{s}, {n} writer(s): {cpu[(s, n)] / appends[n] * 1e6:.0f} us" for n in COUNTS for s in SYSTEMS),
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
