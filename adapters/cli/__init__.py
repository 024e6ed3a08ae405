"""The ``planfold`` command: demo, replay, audit, export, import, conform."""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .demo import (
        DemoResult,
        command_name,
        next_session_id,
        run_demo,
    )
    from .main import (
        EXIT_STATUS,
        main,
    )

__all__ = [
    "EXIT_STATUS",
    "DemoResult",
    "command_name",
    "main",
    "next_session_id",
    "run_demo",
]

if not TYPE_CHECKING:
    from .._lazy import lazy_names

    __getattr__, __dir__ = lazy_names(
        __name__,
        globals(),
        {
            "DemoResult": "demo",
            "EXIT_STATUS": "main",
            "command_name": "demo",
            "main": "main",
            "next_session_id": "demo",
            "run_demo": "demo",
        },
    )
