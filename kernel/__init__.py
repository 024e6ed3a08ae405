"""planfold's kernel: pure, immutable reducers over an append-only session log.

Standard library only; no clock, randomness, I/O or global state: time and
ids are inputs, and every decision returns a value or raises a ``KernelError``.
It imports its own modules relatively, so it can also be vendored by copying.

Here: the session log and its fold (``log``, ``session``), the runtime phase
(``phase``) and the errors (``errors``). Each machine is a package with its own
surface: ``plan`` (plan mode, plan artifact, review, context), ``goal`` (the
goal lifecycle) and ``tools`` (the tool gate). ``graph`` extracts the state
diagrams from the machines' tables.
"""

from . import errors, goal, log, phase, plan, session, tools
from .errors import *
from .log import *
from .phase import *
from .session import *

__all__ = ["goal", "plan", "tools", *errors.__all__, *log.__all__, *phase.__all__, *session.__all__]
