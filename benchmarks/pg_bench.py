"""PostgreSQL: durable append against raw psycopg, eventsourcing and LangGraph,
and throughput with several writer processes.

Theory of operation
-------------------
The family starts a throwaway PostgreSQL server of its own
(``tests.pg_cluster``: the installed server, run as the ``postgres`` user
when this process is root, a unix socket in a temporary folder) with the
server's defaults, ``fsync=on`` and ``synchronous_commit=on``, so every
commit waits for its WAL flush. Each system writes into a schema of its own
on that one server.

*Durable append* writes one event per transaction:

- planfold's ``PostgresStore.append``: the strict fold onto the state it
  holds, the projection and the snapshot, then one statement
  (``planfold_append``: the session lock, the checks, the events, the
  session row, ``NOTIFY``) that is its own transaction;
- ``RawPg``: raw psycopg running the very same statement (the same SQL
  text, the same ``planfold_append`` function, on the same tables) with
  values it does not check or derive: no fold, no projection, an empty
  snapshot (the function still makes its checks: they are the statement);
- eventsourcing's PostgreSQL recorder (one ``save`` per event);
- LangGraph's Postgres checkpointer (one ``put`` per event, the event as the
  checkpoint's channel value), when ``langgraph-checkpoint-postgres`` is
  installed.

The systems append the same goal log, one event per transaction, taking
turns event by event (each event is appended by every system before the
next one is, in an order that rotates), so that a change in the machine's
load falls on all of them alike. The log is cut into rounds; a system's
throughput in a round is the round's events over the time its own appends
took, and each ratio is the median of the rounds' ratios.

*Writers* runs 1, 2, 4 and 8 processes, each appending its share of events
to a session of its own, one per transaction, and reports the total events
per second from the moment they are released until the last one is done.

When the server cannot be started, the family says so and measures nothing.
"""

from __future__ import annotations

import importlib
import json
import time
import uuid
from collections.abc import Callable, Sequence
from multiprocessing.synchronize import Event as MpEvent
from pathlib import Path
from typing import Any

import msgspec

from benchmarks.es_baseline import MISSING, EsLog, EventSourcing, load_eventsourcing
from benchmarks.harness import (
    FamilyResult,
    Measurement,
    Ratio,
    Scale,
    median,
    ratio,
    taking_turns,
    throughput,
)
from benchmarks.workloads import goal_events
from planfold.adapters.store.base import AppendRequest
from planfold.adapters.store.engine import created_goal_ids, starts_a_round
from planfold.kernel.log import Event

__all__ = ["POSTGRES", "RawPg", "run_postgres", "start_server"]

POSTGRES = "postgres-append"
SESSION = "bench-session"
WRITERS = (1, 2, 4, 8)
LANGGRAPH_MISSING = (
    "langgraph-checkpoint-postgres is not installed; install the bench extra: pip install -e '.[bench]'"
)

Appender = Callable[[Event], None]


class RawPg:
    """planfold's append statement, run by hand with nothing checked."""

    def __init__(self, url: str, *, setup: bool = True) -> None:
        """A connection of its own to ``url``; ``setup`` creates the tables
        and the function first (one of several on the same schema is enough)."""
        import psycopg  # noqa: PLC0415 (the postgres extra is optional)

        from planfold.adapters.store import postgres_schema as sql  # noqa: PLC0415
        from planfold.adapters.store.postgres import call_append  # noqa: PLC0415

        self.call = call_append
        self.conn = psycopg.connect(url, autocommit=True)
        self.encoder = msgspec.json.Encoder()
        self.has_row = False
        if setup:
            with self.conn.transaction():
                for step in sql.STEPS:
                    step.apply(self.conn)

    def append(self, session_id: str, expected_seq: int, events: Sequence[Event]) -> None:
        """The statement of ``PostgresStore.append`` in its one round trip
        (``planfold_append``), with the same arguments except what the fold
        derives: the row it passes is the last event as the goal column and
        an empty snapshot, which it also names as the snapshot it builds on.
        Whether the events start a round and the goal ids they create are
        read off the events as planfold reads them, so the server does the
        same work."""
        rows = [{"seq": e.seq, "kind": e.kind, "at": e.at, "payload": json.dumps(e.payload, separators=(",", ":"))}
                for e in events]  # fmt: skip
        created = [{"id": goal_id, "seq": seq} for goal_id, seq in created_goal_ids(events)]
        goals = self.encoder.encode(created).decode() if created else None
        last = events[-1]
        args = (
            session_id, expected_seq, self.has_row, "", "", None, "", None, None, None, starts_a_round(events),
            None, self.encoder.encode(rows).decode(), goals, events[0].at, last.at, session_id,
            "build", False, "", "", rows[-1]["payload"], last.seq, "", "",
        )  # fmt: skip
        found = self.call(self.conn, args)
        if found is not None:
            raise RuntimeError(f"raw append refused: {found}")
        self.has_row = True

    def close(self) -> None:
        self.conn.close()


class EsPgLog(EsLog):
    """One eventsourcing application on its PostgreSQL recorder."""

    def __init__(self, lib: EventSourcing, socket_dir: str, schema: str) -> None:
        env = {
            "PERSISTENCE_MODULE": "eventsourcing.postgres",
            "POSTGRES_DBNAME": "postgres",
            "POSTGRES_HOST": socket_dir,
            "POSTGRES_PORT": "5432",
            "POSTGRES_USER": "postgres",
            "POSTGRES_PASSWORD": "",
            "POSTGRES_SCHEMA": schema,
            "CREATE_TABLE": "y",
        }
        self.lib = lib
        self.app: Any = lib.application(env=env)


class LangGraphLog:
    """LangGraph's Postgres checkpointer, one checkpoint per event."""

    def __init__(self, url: str) -> None:
        from langgraph.checkpoint.base import empty_checkpoint  # noqa: PLC0415 (optional)
        from langgraph.checkpoint.postgres import PostgresSaver  # noqa: PLC0415 (optional)

        self._context = PostgresSaver.from_conn_string(url)
        self.saver = self._context.__enter__()
        self.saver.setup()
        self.empty = empty_checkpoint
        self.config: Any = {"configurable": {"thread_id": SESSION, "checkpoint_ns": ""}}

    def append(self, event: Event) -> None:
        checkpoint = self.empty()
        checkpoint["id"] = str(uuid.uuid6()) if hasattr(uuid, "uuid6") else str(uuid.uuid1())
        checkpoint["channel_values"] = {"event": {"seq": event.seq, "kind": event.kind, "at": event.at,
                                                  "payload": dict(event.payload)}}  # fmt: skip
        checkpoint["channel_versions"] = {"event": event.seq}
        self.config = self.saver.put(self.config, checkpoint, {"step": event.seq}, {"event": event.seq})

    def close(self) -> None:
        self._context.__exit__(None, None, None)


def _writer(url: str, session: str, count: int, start: MpEvent, out: Any) -> None:
    from planfold.adapters.store.postgres import PostgresStore  # noqa: PLC0415 (a fresh process)

    events = list(goal_events(count))
    with PostgresStore(url, pool_size=1) as store:
        start.wait(60)
        for event in events:
            store.append(AppendRequest(session, event.seq - 1, [event]))
    out.put(count)


def _writers(cluster: Any, processes: int, per_writer: int) -> float:
    """Total events/s of ``processes`` writers on sessions of their own."""
    from tests.storage_workers import stress_context  # noqa: PLC0415

    url = cluster.schema_url(f"writers_{processes}")
    from planfold.adapters.store.postgres import PostgresStore  # noqa: PLC0415

    PostgresStore(url).close()
    ctx = stress_context()
    start, out = ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=_writer, args=(url, f"w{i}", per_writer, start, out), daemon=True)
        for i in range(processes)
    ]
    for proc in procs:
        proc.start()
    time.sleep(0.5)  # every writer has opened its store
    began = time.perf_counter()
    start.set()
    total = sum(out.get(timeout=600) for _ in procs)
    seconds = time.perf_counter() - began
    for proc in procs:
        proc.join(30)
    return throughput(total, seconds)


def start_server() -> tuple[Any, str]:
    """A throwaway server of a family's own (``tests.pg_cluster``), started,
    or ``None`` and why the family measures nothing."""
    try:
        importlib.import_module("planfold.adapters.store.postgres")  # the postgres extra is optional
        from tests.pg_cluster import Cluster, ClusterError  # noqa: PLC0415
    except ImportError as exc:
        return None, f"not measured: {exc}"
    try:
        cluster = Cluster()
        cluster.start()
    except ClusterError as exc:
        return None, f"not measured: the PostgreSQL server could not start: {exc}"
    return cluster, ""


def run_postgres(scale: Scale, workdir: Path) -> FamilyResult:
    """Durable append on PostgreSQL against raw psycopg, eventsourcing and
    LangGraph, and throughput with 1, 2, 4 and 8 writers."""
    cluster, why = start_server()
    if cluster is None:
        return FamilyResult(POSTGRES, (), (), (why,))
    from planfold.adapters.store.postgres import PostgresStore  # noqa: PLC0415 (importable: the server started)

    notes: list[str] = []
    closers: list[Callable[[], None]] = []
    try:
        events = list(goal_events(scale.append_events + 1))
        first, rest = events[0], events[1:]
        store = PostgresStore(cluster.schema_url("planfold"))
        closers.append(store.close)
        raw = RawPg(cluster.schema_url("raw"))
        closers.append(raw.close)
        settings = store.settings()
        notes.append(
            f"PostgreSQL {settings['server_version']}, synchronous_commit={settings['synchronous_commit']}, "
            f"isolation {settings['default_transaction_isolation']}; one server, a schema per system"
        )
        def planfold(event: Event) -> None:
            store.append(AppendRequest(SESSION, event.seq - 1, [event]))

        systems: dict[str, Appender] = {
            "planfold": planfold,
            "raw-psycopg": lambda e: raw.append(SESSION, e.seq - 1, [e]),
        }
        lib = load_eventsourcing()
        if lib is not None:
            cluster.schema_url("eventsourcing")  # creates the schema
            es = EsPgLog(lib, str(cluster.root), "eventsourcing")
            closers.append(es.close)
            aggregate = es.start()
            systems["eventsourcing"] = lambda e: es.append(aggregate, e)
        else:
            notes.append(MISSING)
        try:
            graph = LangGraphLog(cluster.schema_url("langgraph"))
            closers.append(graph.close)
            systems["langgraph"] = graph.append
        except ImportError:
            notes.append(LANGGRAPH_MISSING)
        for append in systems.values():
            append(first)
        samples = taking_turns(systems, rest, scale.append_rounds)
        detail = f"{len(rest)} goal-log events, one per transaction, synchronous_commit=on"
        found = {n: Measurement(POSTGRES, n, "events/s", median(s), tuple(s), detail) for n, s in samples.items()}
        per_writer = max(10, scale.append_events // 4)
        writers = {
            n: Measurement(POSTGRES, f"planfold, {n} writer process(es)", "events/s", rate, (rate,),
                           f"{n} x {per_writer} events, each writer on its own session")
            for n in WRITERS
            for rate in (_writers(cluster, n, per_writer),)
        }  # fmt: skip
    finally:
        for close in reversed(closers):
            close()
        cluster.destroy()
    how = "events/s, median of interleaved rounds"
    ratios: list[Ratio] = [
        ratio(POSTGRES, "postgres append: planfold / raw psycopg (same statements)", found["planfold"],
              found["raw-psycopg"], direction="at-least", bound=0.9, how=how),
        ratio(POSTGRES, "postgres append: planfold / eventsourcing", found["planfold"], found.get("eventsourcing"),
              direction="at-least", bound=1.0, how=how, missing=MISSING),
        ratio(POSTGRES, "postgres append: planfold / LangGraph checkpointer", found["planfold"],
              found.get("langgraph"), direction="at-least", bound=1.0, how=how, missing=LANGGRAPH_MISSING),
        *(
            ratio(POSTGRES, f"postgres writers: {n} processes / 1", writers[n], writers[1], direction="at-least",
                  bound=None, how="total events/s, each writer on its own session")
            for n in WRITERS[1:]
        ),
    ]  # fmt: skip
    return FamilyResult(POSTGRES, (*found.values(), *writers.values()), tuple(ratios), tuple(notes))
