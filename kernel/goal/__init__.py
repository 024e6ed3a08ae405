"""The goal machine: long-running goals as an event-sourced lifecycle (seed 004).

- ``values``: ``GoalSnapshot``, ``GoalRef``, the transition table and the
  ``goal/change`` payload builders and reader;
- ``fold``: the strict fold (``fold_goal``) and its replay rules;
- ``ops``: the compare-and-set operations and their refusals;
- ``continuation``: rounds, the budget and ``should_continue``;
- ``command``: the ``/goal`` command parser.
"""

from . import command, continuation, fold, ops, values
from .command import *
from .continuation import *
from .fold import *
from .ops import *
from .values import *

__all__ = [
    *values.__all__,
    *fold.__all__,
    *ops.__all__,
    *continuation.__all__,
    *command.__all__,
]
