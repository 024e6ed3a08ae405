"""Writers sharing one SQLite store get through while another process writes
to the same file (``adapters.store.sqlite_turns``): the store's threads,
each on a session of its own, are not starved by a process that appends in
a loop. Counts, not times: the threads' appends are compared with what the
other process made meanwhile."""

from __future__ import annotations

import threading
from pathlib import Path

from planfold.adapters.store.base import AppendRequest
from planfold.adapters.store.sqlite import SqliteStore
from tests.storage_workers import batch_after, steady_writer, stress_context

THREADS = 4
#: Appends each thread of the shared store makes.
EACH = 150
#: How many times a thread's appends the other process may make meanwhile
#: (SQLite's busy handler alone let it make about sixty times as many).
SHARE = 10


def test_the_threads_of_a_shared_store_all_get_through_while_another_process_writes(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    store = SqliteStore(path)
    store.append(AppendRequest("warm", 0, batch_after(0, 1)))  # the file exists, migrated, before the other opens it
    ctx = stress_context()
    stop = ctx.Event()
    theirs, ours = ctx.Pipe(duplex=False)
    other = ctx.Process(target=steady_writer, args=(str(path), "other", stop, ours))
    other.start()
    try:
        assert theirs.poll(120) and theirs.recv() == 0  # the other process is writing
        done = [0] * THREADS
        failures: list[BaseException] = []

        def work(index: int) -> None:
            session = f"thread-{index}"
            try:
                for head in range(EACH):
                    store.append(AppendRequest(session, head, batch_after(head, 1)))
                    done[index] += 1
            except BaseException as exc:  # reported below
                failures.append(exc)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        stop.set()
        assert theirs.poll(120)
        made = theirs.recv()
    finally:
        stop.set()
        other.join(60)
    assert failures == []
    assert done == [EACH] * THREADS
    assert made <= SHARE * EACH, f"the other process made {made} appends while each thread made {EACH}"
    assert store.head("other") == made
    for index in range(THREADS):
        assert store.read(f"thread-{index}") == tuple(batch_after(0, EACH))
        assert store.audit(f"thread-{index}").ok
    store.close()
