"""Argument types shared by the ``planfold`` subcommands: each turns a bad
value into argparse's usage error instead of a traceback.

A number is checked against what it will be used for, not only against its
type: a timeout becomes a socket's or a thread's wait, which overflow far
below the largest float (``1e10`` seconds does not fit the platform's clock),
and a retry count is a loop that must end in a run a person waits for. So
each type has a ceiling (``MAX_SECONDS``, ``MAX_COUNT``) and refuses
infinity, not-a-number and anything past the ceiling by name.
"""

from __future__ import annotations

import argparse
import logging
import math

__all__ = ["LOG_LEVELS", "MAX_COUNT", "MAX_SECONDS", "count", "log_level", "positive_seconds"]

#: The names ``--log-level`` takes, quietest last.
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

#: The longest timeout an option takes: a week, far below where a socket's
#: or a thread's wait overflows the platform's clock.
MAX_SECONDS = 7 * 24 * 3600

#: The largest count an option takes (retries of one request).
MAX_COUNT = 1000


def positive_seconds(text: str) -> float:
    """A finite number of seconds above zero and at most ``MAX_SECONDS``."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"expected a number of seconds above 0 and at most {MAX_SECONDS} (a week), got {text!r}"
        )
    return value


def count(text: str) -> int:
    """A whole number from 0 to ``MAX_COUNT``."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_COUNT:
        raise argparse.ArgumentTypeError(f"expected a whole number from 0 to {MAX_COUNT}, got {text!r}")
    return value


def log_level(text: str) -> int:
    """A logging level by its name (``DEBUG`` … ``CRITICAL``, any case)."""
    name = text.strip().upper()
    if name not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"expected one of {', '.join(LOG_LEVELS)}, got {text!r}")
    return int(getattr(logging, name))
