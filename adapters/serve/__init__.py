"""``planfold serve``: the correctness core over JSON-RPC 2.0 on stdin/stdout,
for host runtimes written in other languages (protocol types, the host-driven
session and its goal, the server, its OpenRPC document, a small Python client).
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .client import RemoteError, ServeClient
    from .errors import NotRecordableError, RoundNotAdmittedError, ServeError
    from .goals import HostGoals
    from .host import HostConfig, HostSession, runtime_registry
    from .server import MAX_DEPTH, MAX_LINE, Server, SessionNotOpenError

__all__ = [
    "MAX_DEPTH", "MAX_LINE", "HostConfig", "HostGoals", "HostSession", "NotRecordableError", "RemoteError",
    "RoundNotAdmittedError", "ServeClient", "ServeError", "Server", "SessionNotOpenError", "runtime_registry",
]  # fmt: skip

if not TYPE_CHECKING:
    from .._lazy import lazy_modules

    __getattr__, __dir__ = lazy_modules(__name__, globals(), ("client", "errors", "goals", "host", "server"))
