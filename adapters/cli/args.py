"""Argument types shared by the command lines (``planfold`` and
``python -m planfold.adapters.specgen.vectors``): each turns a bad value into
argparse's usage error instead of a traceback."""

from __future__ import annotations

import argparse

__all__ = ["count", "positive_seconds"]


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
