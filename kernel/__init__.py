"""planfold's kernel: pure, immutable reducers over an append-only session log.

Standard library only; no clock, randomness, I/O or global state: time and
ids are inputs, and every decision returns a value or raises a ``KernelError``.
It imports its own modules relatively, so it can also be vendored by copying.

Here: the log's events and envelope (``log``), the runtime phase (``phase``)
and the errors (``errors``), whose names this package re-exports. Each
machine has a surface of its own: ``plan`` (plan mode, plan artifact, review,
context), ``goal`` (the goal lifecycle), ``tools`` (the tool gate),
``session`` (the fold of every machine over one log), ``plan_events`` (the
builders of ``plan/artifact`` drafts) and ``decisions`` (what a runtime asks,
one call per decision), which fold through the session, and ``graph`` (the
state diagrams read from the machines' tables).

Nothing is imported until it is used: ``import planfold.kernel`` costs next
to nothing, the first core name (``from planfold.kernel import Event``)
imports the three core modules, and a machine is imported by its own name
(``from planfold.kernel import plan``). Type checkers read the imports below
as written; every name is defined once, in its module's ``__all__``.
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from . import decisions, errors, goal, graph, log, phase, plan, plan_events, session, tools
    from .errors import *
    from .log import *
    from .phase import *

    __all__ = [
        "decisions",
        "goal",
        "graph",
        "plan",
        "plan_events",
        "session",
        "tools",
        *errors.__all__,
        *log.__all__,
        *phase.__all__,
    ]
else:
    _CORE = ("errors", "log", "phase")
    _MACHINES = ("decisions", "goal", "graph", "plan", "plan_events", "session", "tools")

    def __getattr__(name):
        """A module of the kernel by its name, ``__all__``, or a name of one of
        the core modules; ``AttributeError`` for anything else."""
        from importlib import import_module  # noqa: PLC0415 (nothing is imported before it is used)

        if name in _CORE or name in _MACHINES:
            return import_module(f"{__name__}.{name}")
        # Import statements, which -X importtime reports (import_module is not)
        from .errors import __all__ as _errors  # noqa: F401, PLC0415
        from .log import __all__ as _log  # noqa: F401, PLC0415
        from .phase import __all__ as _phase  # noqa: F401, PLC0415

        core = [globals()[module] for module in _CORE]
        if name == "__all__":
            value = [*_MACHINES, *(each for module in core for each in module.__all__)]
        else:
            owner = next((module for module in core if name in module.__all__), None)
            if owner is None:
                raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
            value = getattr(owner, name)
        globals()[name] = value
        return value

    def __dir__():
        return sorted({*globals(), *__getattr__("__all__")})
