"""A child process that replays one log with ``planfold replay`` and reports its memory.

Run as ``python -m benchmarks.memory_child FILE``: it imports the command
first, then takes its baseline, runs ``planfold replay FILE --no-progress``
(its output discarded), and prints one JSON object: the baseline and the
peak resident set size after the replay (KiB), how they were read, the exit
status and the wall seconds of the replay. ``python -m
benchmarks.memory_child FILE report`` measures ``planfold report FILE``
instead, its page written to a temporary file.

On Linux the peak is the process's own high-water mark (``VmHWM`` in
``/proc/self/status``), reset to the current resident size just before the
replay (``5`` written to ``/proc/self/clear_refs``), and the baseline is that
resident size (``VmRSS``). ``resource.getrusage`` is not used there: its
``ru_maxrss`` carries the parent's peak across ``fork`` and ``exec``, so a
child of a large benchmark process would start at the parent's size.
Elsewhere the baseline and the peak are both ``ru_maxrss``.
"""

from __future__ import annotations

import io
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

from planfold.adapters.cli.main import main

_STATUS = Path("/proc/self/status")


def _status_kib(field: str) -> int:
    for line in _STATUS.read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def _reset_peak() -> bool:
    """Reset this process's peak resident size to its current size (Linux)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        _status_kib("VmHWM")
    except (OSError, KeyError):
        return False
    return True


def run(path: str, command: str = "replay") -> dict[str, object]:
    """Replay (or report) ``path`` through the command and measure it."""
    with tempfile.TemporaryDirectory() as scratch:
        argv = (["replay", "--db", path, "--no-progress"] if command == "replay"
                else ["report", "--db", path, "-o", f"{scratch}/r.html"])
        own = _reset_peak()
        baseline = _status_kib("VmRSS") if own else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        started = time.perf_counter()
        status = main(argv, out=io.StringIO(), err=io.StringIO())
        seconds = time.perf_counter() - started
    peak = _status_kib("VmHWM") if own else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "baseline_kib": baseline,
        "peak_kib": peak,
        "method": "VmRSS/VmHWM" if own else "ru_maxrss",
        "status": status,
        "seconds": seconds,
    }


if __name__ == "__main__":
    print(json.dumps(run(*sys.argv[1:3])))
