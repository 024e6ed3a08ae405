"""The session log's storage: one ``Store`` protocol (and ``AsyncStore``, its
operations awaited), memory, SQLite and PostgreSQL backends,
the projection and snapshot, and ``SessionLog`` (decide on fresh state, append).
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from . import aio, aio_memory, base, fork, memory, migration, opener, postgres, session_log, sqlite
    from .aio import *
    from .aio_memory import *
    from .base import *
    from .fork import *
    from .memory import *
    from .migration import *
    from .opener import *
    from .postgres import *
    from .session_log import *
    from .sqlite import *

    __all__ = [
        *base.__all__,
        *aio.__all__,
        *aio_memory.__all__,
        *memory.__all__,
        *sqlite.__all__,
        *postgres.__all__,
        *opener.__all__,
        *session_log.__all__,
        *fork.__all__,
        *migration.__all__,
    ]
else:
    from .._lazy import lazy_modules

    __getattr__, __dir__ = lazy_modules(
        __name__, globals(), (
            "base", "aio", "aio_memory", "memory", "sqlite", "postgres", "opener", "session_log", "fork", "migration",
        ),
    )
