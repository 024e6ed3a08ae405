"""Small records shared by the tests of the kernel's makers and of the
snapshot codec: both must let a record's own checks run, or not, as they
promise."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Checked"]


@dataclass(frozen=True, slots=True)
class Checked:
    """A record whose ``__post_init__`` refuses a negative number."""

    n: int

    def __post_init__(self) -> None:
        if self.n < 0:
            raise ValueError("negative")
