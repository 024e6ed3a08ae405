"""planfold's benchmarks: planfold against raw SQLite and the eventsourcing
library, every result a ratio measured in the same run.

Run them with ``make bench`` or ``python -m benchmarks`` (``BENCH_SCALE``
shrinks the workloads; ``--help`` lists the options). One module per
measurement family; ``benchmarks.harness`` holds what they share.
"""
