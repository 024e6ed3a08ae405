"""``planfold serve``: the correctness core over JSON-RPC 2.0 on stdin/stdout,
for host runtimes written in other languages (protocol types, the host-driven
session, the server, its OpenRPC document, a small Python client).
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .client import (
        RemoteError,
        ServeClient,
    )
    from .command import (
        MEMORY,
        add_serve_arguments,
        parse_ticks,
        run_serve,
        store_for,
        ticks,
    )
    from .errors import (
        NotRecordableError,
        RoundNotAdmittedError,
        ServeError,
    )
    from .host import (
        HostConfig,
        HostSession,
        runtime_registry,
    )
    from .server import (
        MAX_DEPTH,
        MAX_LINE,
        Server,
        SessionNotOpenError,
    )

__all__ = [
    "MAX_DEPTH",
    "MAX_LINE",
    "MEMORY",
    "HostConfig",
    "HostSession",
    "NotRecordableError",
    "RemoteError",
    "RoundNotAdmittedError",
    "ServeClient",
    "ServeError",
    "Server",
    "SessionNotOpenError",
    "add_serve_arguments",
    "parse_ticks",
    "run_serve",
    "runtime_registry",
    "store_for",
    "ticks",
]

if not TYPE_CHECKING:
    from .._lazy import lazy_names

    __getattr__, __dir__ = lazy_names(
        __name__,
        globals(),
        {
            "HostConfig": "host",
            "HostSession": "host",
            "MAX_DEPTH": "server",
            "MAX_LINE": "server",
            "MEMORY": "command",
            "NotRecordableError": "errors",
            "RemoteError": "client",
            "RoundNotAdmittedError": "errors",
            "ServeClient": "client",
            "ServeError": "errors",
            "Server": "server",
            "SessionNotOpenError": "server",
            "add_serve_arguments": "command",
            "parse_ticks": "command",
            "run_serve": "command",
            "runtime_registry": "host",
            "store_for": "command",
            "ticks": "command",
        },
    )
