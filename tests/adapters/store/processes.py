"""Processes of the store tests: a child forked from a test that holds an open
store, and the writer processes the crash tests start, kill and reap."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from multiprocessing.context import ForkServerContext
from multiprocessing.process import BaseProcess
from typing import Any, TypeVar

S = TypeVar("S")


def run_in_a_forked_child(child: Callable[[S, Any], None], store: S) -> tuple[object, BaseProcess]:
    """Fork this process as it is (a plain fork, open connections and all),
    run ``child(store, out)`` in the child, and give back what it put on the
    queue ``out`` and the child, ended (killed if it hangs)."""
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    proc = ctx.Process(target=child, args=(store, out), daemon=True)
    proc.start()
    try:
        result: object = out.get(timeout=60)
    finally:
        proc.join(timeout=30)
        if proc.is_alive():
            proc.kill()
    return result, proc


def kill(proc: BaseProcess) -> None:
    """SIGKILL ``proc`` (no cleanup of any kind, as a crash) and wait until it is gone."""
    if proc.pid is not None and proc.is_alive():
        os.kill(proc.pid, signal.SIGKILL)
    proc.join(timeout=30)
    assert not proc.is_alive(), "a killed writer did not exit"


class Writers:
    """The writer processes of one crash round, each started with the write
    end of a pipe it reports on as its last argument; ``readers`` are the read
    ends, in the order the writers started."""

    def __init__(self, ctx: ForkServerContext) -> None:
        self.ctx = ctx
        self.procs: list[BaseProcess] = []
        self.readers: list[Connection] = []

    def start(self, target: Callable[..., None], *args: object) -> BaseProcess:
        reader, writer = self.ctx.Pipe(duplex=False)
        proc = self.ctx.Process(target=target, args=(*args, writer), daemon=True)
        proc.start()
        writer.close()  # the child holds the only write end: EOF once it dies
        self.procs.append(proc)
        self.readers.append(reader)
        return proc


@contextlib.contextmanager
def writer_processes(ctx: ForkServerContext) -> Iterator[Writers]:
    """Writers for the ``with`` block: however it ends, each one still alive
    is killed and every pipe closed."""
    writers = Writers(ctx)
    try:
        yield writers
    finally:
        for proc in writers.procs:
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=10)
        for reader in writers.readers:
            reader.close()
