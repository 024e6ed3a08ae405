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

A log read from a file as a stream is measured in bytes (``unit="bytes"``:
the bar moves as the file is read, ``12.5/37.0 MB``, and the rate and the
closing line count the events folded); a database's log in events.

Whether to report at all: on a terminal, always; elsewhere only for long logs
(``LONG_REPLAY`` events, or ``LONG_REPLAY_BYTES`` bytes, or more), so that a
slow replay in a pipeline still says it is alive. ``enabled=True`` (``--progress``) reports however short the
log is, ``False`` (``--no-progress``) never. It never writes to stdout, so
``--json`` output stays clean. ``clock`` is injectable so that tests need not
wait.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal, TextIO

from .text import shown

__all__ = ["LONG_REPLAY", "LONG_REPLAY_BYTES", "Progress", "Unit"]

Unit = Literal["events", "bytes"]
#: Logs at least this long are reported even when stderr is not a terminal.
LONG_REPLAY = 10_000
#: The same for a log measured in bytes (about as many events).
LONG_REPLAY_BYTES = 1_000_000
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
        self._unit: Unit = "events"
        self._every = 1
        self._next = 0
        self._events = 0
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
        long = LONG_REPLAY if self._unit == "events" else LONG_REPLAY_BYTES
        return total > 0 and (self.terminal or total >= long)

    def start(self, total: int, label: str, *, unit: Unit = "events") -> None:
        """A new log of ``total`` ``unit``s (0: unknown, nothing reported)."""
        self._total, self._label, self._unit = total, shown(label), unit
        self._every = max(1, total // self.steps)
        self._next = self._every
        self._events = 0
        self._active = self._wanted(total)
        self._started = self._last_line = self.clock()
        self._lines = 0
        if self._active and self.terminal:
            self._frame(0)

    def update(self, done: int, *, events: int | None = None) -> None:
        """``done`` of the total so far (``events`` folded so far, when the
        log is measured in bytes)."""
        self._events = done if events is None else events
        if not self._active:
            return
        if self.terminal:
            if done >= self._next or done == self._total:
                self._next = done + self._every
                self._frame(done)
            return
        now = self.clock()
        if now - self._last_line >= self.interval:
            self._last_line = now
            self._write(f"{self._label}: {self._amount(done)} ({100 * done // self._total}%)\n")
            self._lines += 1

    def finish(self) -> None:
        if self._active:
            if self.terminal:
                self._write("\n")
            elif self._lines or self.enabled:
                elapsed = self.clock() - self._started
                count = self._total if self._unit == "events" else self._events
                self._write(f"{self._label}: {count} events in {elapsed:.1f}s\n")
        self._active = False

    def _amount(self, done: int) -> str:
        if self._unit == "events":
            return f"{done}/{self._total} events"
        return f"{done / 1e6:.1f}/{self._total / 1e6:.1f} MB"

    def _rate(self, done: int) -> str:
        elapsed = self.clock() - self._started
        if done <= 0 or elapsed <= 0:
            return ""
        left = (self._total - done) / (done / elapsed)
        return f" {self._events / elapsed:,.0f} ev/s ETA {_clock_text(left)}"

    def _frame(self, done: int) -> None:
        filled = _WIDTH * done // self._total if self._total else _WIDTH
        bar = "#" * filled + "." * (_WIDTH - filled)
        percent = 100 * done // self._total if self._total else 100
        amount = f"{done}/{self._total}" if self._unit == "events" else self._amount(done)
        self._write(f"\r{self._label} [{bar}] {amount} {percent}%{self._rate(done)}")

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()
        self.drawn += 1
