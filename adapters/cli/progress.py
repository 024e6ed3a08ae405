"""Progress of a long replay, reported on stderr.

Theory of operation
-------------------
A replay folds one event at a time; ``Progress`` says how far it got. What it
writes depends on where the stream goes:

- a terminal gets a bar redrawn in place (carriage return, no newline until
  the end) with the rate and the time left:
  ``label [#########.....] 6000/10000 60% 41,200 ev/s ETA 0:00:01``;
- anything else (a file, a pipe, a CI log) gets no carriage returns at all:
  a plain line at most once every ``interval`` seconds
  (``label: 6000/10000 events (60%)``), so a fast replay prints nothing, and
  a final line only when it printed before or was asked for.

Whether to report at all: on a terminal, always; elsewhere only for long logs
(``LONG_REPLAY`` events or more), so that a slow replay in a pipeline still
says it is alive. ``enabled=True`` (``--progress``) reports however short the
log is, ``False`` (``--no-progress``) never. It never writes to stdout, so
``--json`` output stays clean. ``clock`` is injectable so that tests need not
wait.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["LONG_REPLAY", "Progress"]

#: Logs at least this long are reported even when stderr is not a terminal.
LONG_REPLAY = 10_000
#: Seconds between two plain lines on a stream that is not a terminal.
INTERVAL = 10.0
_WIDTH = 30


def _clock_text(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


class Progress:
    """Reports ``done/total`` of one log at a time on ``stream`` (see the
    module docstring). ``steps`` bounds the redraws of the bar per log."""

    def __init__(
        self,
        stream: TextIO,
        *,
        enabled: bool | None = None,
        steps: int = 100,
        clock: Callable[[], float] = time.monotonic,
        interval: float = INTERVAL,
    ) -> None:
        self.stream = stream
        self.enabled = enabled
        self.steps = max(1, steps)
        self.clock = clock
        self.interval = interval
        #: How many times something was written (bar frames or lines).
        self.drawn = 0
        self._total = 0
        self._label = ""
        self._every = 1
        self._active = False
        self._started = 0.0
        self._last_line = 0.0
        self._lines = 0
        isatty = getattr(stream, "isatty", None)
        try:
            self.terminal = bool(isatty()) if callable(isatty) else False
        except (OSError, ValueError):
            self.terminal = False

    def _wanted(self, total: int) -> bool:
        if self.enabled is not None:
            return self.enabled and total > 0
        return total > 0 and (self.terminal or total >= LONG_REPLAY)

    def start(self, total: int, label: str) -> None:
        self._total, self._label = total, label
        self._every = max(1, total // self.steps)
        self._active = self._wanted(total)
        self._started = self._last_line = self.clock()
        self._lines = 0
        if self._active and self.terminal:
            self._frame(0)

    def update(self, done: int) -> None:
        if not self._active:
            return
        if self.terminal:
            if done % self._every == 0 or done == self._total:
                self._frame(done)
            return
        now = self.clock()
        if now - self._last_line >= self.interval:
            self._last_line = now
            self._write(f"{self._label}: {done}/{self._total} events ({100 * done // self._total}%)\n")
            self._lines += 1

    def finish(self) -> None:
        if self._active:
            if self.terminal:
                self._write("\n")
            elif self._lines or self.enabled:
                elapsed = self.clock() - self._started
                self._write(f"{self._label}: {self._total} events in {elapsed:.1f}s\n")
        self._active = False

    def _rate(self, done: int) -> str:
        elapsed = self.clock() - self._started
        if done <= 0 or elapsed <= 0:
            return ""
        rate = done / elapsed
        left = (self._total - done) / rate
        return f" {rate:,.0f} ev/s ETA {_clock_text(left)}"

    def _frame(self, done: int) -> None:
        filled = _WIDTH * done // self._total if self._total else _WIDTH
        bar = "#" * filled + "." * (_WIDTH - filled)
        percent = 100 * done // self._total if self._total else 100
        self._write(f"\r{self._label} [{bar}] {done}/{self._total} {percent}%{self._rate(done)}")

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()
        self.drawn += 1
