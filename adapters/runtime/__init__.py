"""The runtime loop: turns, pre-steps and the pending-choice flush, runtime-owned
tools, the review port and the goal service; where a call's writes land
(``resolve``) and planfold's own shell executor (``shell_executor``).
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from . import (
        aio,
        driver,
        goal_lease,
        goal_lease_aio,
        goal_service,
        loop,
        machine,
        prompt,
        resolve,
        review,
        shell_executor,
        tool_runner,
        toolset,
        workspace,
    )
    from .aio import *
    from .driver import *
    from .goal_lease import *
    from .goal_lease_aio import *
    from .goal_service import *
    from .loop import *
    from .machine import *
    from .prompt import *
    from .resolve import *
    from .review import *
    from .shell_executor import *
    from .tool_runner import *
    from .toolset import *
    from .workspace import *

    __all__ = [
        *aio.__all__,
        *driver.__all__,
        *goal_lease.__all__,
        *goal_lease_aio.__all__,
        *goal_service.__all__,
        *loop.__all__,
        *machine.__all__,
        *prompt.__all__,
        *resolve.__all__,
        *review.__all__,
        *shell_executor.__all__,
        *tool_runner.__all__,
        *toolset.__all__,
        *workspace.__all__,
    ]
else:
    from .._lazy import lazy_modules

    __getattr__, __dir__ = lazy_modules(
        __name__,
        globals(),
        (
            "aio",
            "driver",
            "goal_lease",
            "goal_lease_aio",
            "goal_service",
            "loop",
            "machine",
            "prompt",
            "resolve",
            "review",
            "shell_executor",
            "tool_runner",
            "toolset",
            "workspace",
        ),
    )
