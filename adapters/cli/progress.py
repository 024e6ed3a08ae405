"""A small progress bar for long replays, drawn on stderr.

Theory of operation
-------------------
A replay folds one event at a time; the bar shows how far it got. It is
drawn only where someone can see it: when the stream is a terminal, or when
the log is long (``LONG_REPLAY`` events or more) so that a slow replay in a
pipeline still says it is alive. ``enabled=True`` or ``False`` overrides that
choice. It redraws at most ``steps`` times per log, so the bar never costs
more than the fold it reports on, and it never writes to stdout, so ``--json``
output stays clean.
"""

from __future__ import annotations

from typing import TextIO

__all__ = ["LONG_REPLAY", "Progress"]

#: Logs at least this long get a bar even when stderr is not a terminal.
LONG_REPLAY = 10_000
_WIDTH = 30


class Progress:
    """Draws ``label [#####.....] done/total`` on ``stream``."""

    def __init__(self, stream: TextIO, *, enabled: bool | None = None, steps: int = 100) -> None:
        self.stream = stream
        self.enabled = enabled
        self.steps = max(1, steps)
        self.drawn = 0
        self._total = 0
        self._label = ""
        self._every = 1
        self._active = False

    def _wanted(self, total: int) -> bool:
        if self.enabled is not None:
            return self.enabled and total > 0
        isatty = getattr(self.stream, "isatty", None)
        tty = bool(isatty()) if callable(isatty) else False
        return total > 0 and (tty or total >= LONG_REPLAY)

    def start(self, total: int, label: str) -> None:
        self._total, self._label = total, label
        self._every = max(1, total // self.steps)
        self._active = self._wanted(total)
        if self._active:
            self._draw(0)

    def update(self, done: int) -> None:
        if self._active and (done % self._every == 0 or done == self._total):
            self._draw(done)

    def finish(self) -> None:
        if self._active:
            self.stream.write("\n")
            self.stream.flush()
        self._active = False

    def _draw(self, done: int) -> None:
        filled = _WIDTH * done // self._total if self._total else _WIDTH
        bar = "#" * filled + "." * (_WIDTH - filled)
        self.stream.write(f"\r{self._label} [{bar}] {done}/{self._total}")
        self.stream.flush()
        self.drawn += 1
