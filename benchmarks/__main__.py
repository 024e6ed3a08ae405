"""``python -m benchmarks``: see ``benchmarks.bench``."""

from benchmarks.bench import main

raise SystemExit(main())
