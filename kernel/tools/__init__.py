"""The tool gate: which tools the model sees and may call, decided once.

- ``spec``: ``ToolSpec``, ``ToolCall`` and the registry of declared tools;
- ``gate``: the verdict table and ``decide`` (catalog and execution);
- ``shell``: the fail-closed classifier of shell commands;
- ``events``: the ``tool/*`` events and their readers.
"""

from . import events, gate, shell, spec
from .events import *
from .gate import *
from .shell import *
from .spec import *

__all__ = [
    *spec.__all__,
    *gate.__all__,
    *shell.__all__,
    *events.__all__,
]
