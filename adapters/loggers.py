"""planfold's loggers: each module logs on its own name under ``planfold``,
and the library is silent until the application configures logging.

The ``planfold`` logger gets its ``NullHandler`` here, when the first module
that logs is imported, and not when ``planfold`` itself is: importing
``logging`` costs more than importing the whole kernel, which logs nothing,
and ``planfold --version`` imports no module that logs.
"""

from __future__ import annotations

import logging

__all__ = ["logger"]

logging.getLogger("planfold").addHandler(logging.NullHandler())


def logger(name: str) -> logging.Logger:
    """The logger called ``name`` (a module's ``__name__``, under ``planfold``)."""
    return logging.getLogger(name)
