"""Argument types shared by the command lines (``planfold`` and
``python -m planfold.adapters.specgen.vectors``): each turns a bad value into
argparse's usage error instead of a traceback."""

from __future__ import annotations

import argparse
import logging

__all__ = ["LOG_LEVELS", "count", "log_level", "positive_seconds"]

#: The names ``--log-level`` takes, quietest last.
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def positive_seconds(text: str) -> float:
    """A finite number of seconds above zero."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def count(text: str) -> int:
    """A whole number, 0 or more."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number, 0 or more, got {text!r}")
    return value


def log_level(text: str) -> int:
    """A logging level by its name (``DEBUG`` … ``CRITICAL``, any case)."""
    name = text.strip().upper()
    if name not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"expected one of {', '.join(LOG_LEVELS)}, got {text!r}")
    return int(getattr(logging, name))
