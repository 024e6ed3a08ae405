"""Keyword options that several functions take alike, declared once.

Theory of operation
-------------------
Where a synchronous and an asyncio twin take the same keyword options, the
options are one ``TypedDict`` (``total=False``) and each twin takes
``**options: Unpack[TheOptions]``: the type checker checks every keyword
against it. ``refuse_unknown`` keeps, when run, what a plain signature did:
a keyword the function does not take raises ``TypeError``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

__all__ = ["refuse_unknown"]


def refuse_unknown(options: Mapping[str, object], known: Collection[str], where: str) -> None:
    """Raise ``TypeError`` (the caller's mistake) for a key of ``options`` not in ``known``."""
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise TypeError(f"{where}() got unexpected keyword arguments: {', '.join(unknown)}")
