"""planfold's kernel: pure, immutable reducers over an append-only session log.

Standard library only; no clock, randomness, I/O or global state: time and
ids are inputs, and every decision returns a value or raises a ``KernelError``.
It imports its own modules relatively, so it can also be vendored by copying.

Here: the log's events and envelope (``log``), the runtime phase (``phase``)
and the errors (``errors``). Each machine has a surface of its own, imported
on first use (``from planfold.kernel import plan``), so that importing the
core stays cheap: ``plan`` (plan mode, plan artifact, review, context),
``goal`` (the goal lifecycle), ``tools`` (the tool gate), ``session`` (the fold
of every machine over one log) and ``graph`` (the state diagrams read from
the machines' tables).
"""

from . import errors, log, phase
from .errors import *
from .log import *
from .phase import *

__all__ = ["goal", "graph", "plan", "session", "tools", *errors.__all__, *log.__all__, *phase.__all__]
