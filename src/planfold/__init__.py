"""planfold: a correctness core for coding-agent runtimes.

``planfold.kernel`` holds the pure machines (plan mode, plans, goals, the tool
gate) over an append-only session log; ``planfold.adapters`` puts them on
storage, a model client, a runtime loop and a command line.

planfold logs on ``planfold.*`` loggers (a module's own name) and is silent
unless the application configures logging: the ``planfold`` logger has a
``NullHandler``.
"""

import logging

logging.getLogger(__name__).addHandler(logging.NullHandler())

__version__ = "0.1.0"
__all__ = ["__version__"]
