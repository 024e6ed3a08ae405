"""Progress on stderr: a bar with rate and time left on a terminal, and on
anything else no carriage returns, at most an occasional plain line."""

from __future__ import annotations

import io
from collections.abc import Callable

from planfold.adapters.cli.progress import LONG_REPLAY, Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _clock(step: float) -> Callable[[], float]:
    """A clock that advances ``step`` seconds each time it is read."""
    now = [0.0]

    def read() -> float:
        now[0] += step
        return now[0]

    return read


def _replay(bar: Progress, total: int, label: str = "log") -> None:
    bar.start(total, label)
    for done in range(1, total + 1):
        bar.update(done)
    bar.finish()


def test_a_terminal_gets_a_bar_redrawn_in_place_with_rate_and_time_left() -> None:
    stream = Terminal()
    bar = Progress(stream, steps=10, clock=_clock(0.001))
    _replay(bar, 1_000)
    text = stream.getvalue()
    frames = text.split("\r")[1:]
    assert 10 <= len(frames) <= 12 and bar.drawn == len(frames) + 1
    assert "ev/s ETA 0:00:" in frames[5] and frames[5].startswith("log [")
    assert frames[-1].startswith("log [" + "#" * 30 + "] 1000/1000 100%") and text.endswith("\n")


def test_a_stream_that_is_not_a_terminal_gets_no_carriage_returns_and_only_occasional_lines() -> None:
    slow = io.StringIO()
    _replay(Progress(slow, clock=_clock(0.001), interval=10.0), LONG_REPLAY * 3)  # 30 s on this clock
    lines = slow.getvalue().splitlines()
    assert "\r" not in slow.getvalue()
    assert 3 <= len(lines) <= 4
    assert lines[0].startswith("log: ") and lines[0].endswith("%)")
    assert lines[-1].startswith(f"log: {LONG_REPLAY * 3} events in ")
    fast = io.StringIO()
    _replay(Progress(fast, clock=_clock(0.0), interval=10.0), LONG_REPLAY)
    assert fast.getvalue() == ""  # long, but done before the first line was due


def test_asked_for_progress_on_a_stream_that_is_not_a_terminal_prints_one_closing_line() -> None:
    stream = io.StringIO()
    _replay(Progress(stream, enabled=True, clock=_clock(0.0)), 50, "short")
    assert stream.getvalue() == "short: 50 events in 0.0s\n"


def test_no_progress_means_nothing_even_on_a_terminal() -> None:
    stream = Terminal()
    bar = Progress(stream, enabled=False)
    _replay(bar, LONG_REPLAY)
    assert bar.drawn == 0 and stream.getvalue() == ""


def test_a_log_measured_in_bytes_shows_megabytes_read_and_counts_events_folded() -> None:
    stream = Terminal()
    bar = Progress(stream, steps=4, clock=_clock(0.001))
    bar.start(4_000_000, "log", unit="bytes")
    for done in (65_536, 1_200_000, 2_100_000, 2_200_000, 4_000_000):
        bar.update(done, events=done // 100)
    bar.finish()
    frames = stream.getvalue().split("\r")[1:]
    assert [f.split("] ")[1].split(" MB")[0] for f in frames] == ["0.0/4.0", "1.2/4.0", "2.2/4.0", "4.0/4.0"]
    quiet = io.StringIO()
    bar = Progress(quiet, enabled=True, clock=_clock(0.0))
    bar.start(500, "small", unit="bytes")
    bar.update(500, events=7)
    bar.finish()
    assert quiet.getvalue() == "small: 7 events in 0.0s\n"


def test_a_log_of_unknown_length_reports_nothing() -> None:
    stream = Terminal()
    bar = Progress(stream, enabled=True)
    bar.start(0, "pipe", unit="bytes")
    bar.update(10_000, events=100)
    bar.finish()
    assert stream.getvalue() == "" and bar.drawn == 0
