"""A child process that replays one log with ``planfold replay`` and reports its memory.

Run as ``python -m benchmarks.memory_child FILE``: it imports the command
first, takes the peak resident set size so far as its baseline, runs
``planfold replay FILE --no-progress`` (its output discarded), and prints one
JSON object: the baseline and the peak after the replay (KiB, from
``resource.getrusage``), the exit status and the wall seconds of the replay.
"""

from __future__ import annotations

import io
import json
import resource
import sys
import time

from planfold.adapters.cli.main import main


def _peak_kib() -> int:
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def run(path: str) -> dict[str, float]:
    """Replay ``path`` through the command and measure it."""
    baseline = _peak_kib()
    started = time.perf_counter()
    status = main(["replay", path, "--no-progress"], out=io.StringIO(), err=io.StringIO())
    return {
        "baseline_kib": baseline,
        "peak_kib": _peak_kib(),
        "status": status,
        "seconds": time.perf_counter() - started,
    }


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1])))
