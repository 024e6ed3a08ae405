"""planfold: a correctness core for coding-agent runtimes.

``planfold.kernel`` holds the pure machines (plan mode, plans, goals, the tool
gate) over an append-only session log; ``planfold.adapters`` puts them on
storage, a model client, a runtime and a command line. The names below are
what an embedding needs; each is imported on first use, so ``import
planfold.kernel`` stays as cheap as the kernel alone.

Raised by everything here: ``PlanfoldError`` (with a stable kebab-case
``code``): ``KernelError`` for the kernel's refusals (``ReplayError`` when a
log breaks a rule), ``AdapterError`` for the shell's (``StoreError`` for
storage).

planfold logs on ``planfold.*`` loggers (a module's own name) and is silent
unless the application configures logging: the ``planfold`` logger has a
``NullHandler`` from the first module that logs (``planfold.adapters.loggers``;
the kernel logs nothing, and importing it imports no ``logging``).
"""

__version__ = "0.1.0"

__all__ = (
    "AdapterError",
    "AskModel",
    "AsyncModelClient",
    "AsyncOpenAIClient",
    "AsyncReviewPort",
    "AsyncRuntime",
    "ChatRequest",
    "ChatResponse",
    "GatePolicy",
    "GoalService",
    "InThread",
    "KernelError",
    "LeasedDriver",
    "MemoryStore",
    "ModelClient",
    "OpenAIClient",
    "PlanfoldError",
    "PromptConfig",
    "ReplayError",
    "Review",
    "ReviewPort",
    "RunTool",
    "Runtime",
    "ScriptedClient",
    "ScriptedReviewer",
    "StepMachine",
    "Store",
    "StoreError",
    "ToolCall",
    "ToolRunner",
    "ToolSpec",
    "TurnOver",
    "TurnReport",
    "Workspace",
    "__version__",
    "approve",
    "keep_planning",
    "open_async_runtime",
    "open_runtime",
    "open_store",
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .adapters.errors import AdapterError
    from .adapters.llm.model import AsyncModelClient, ChatRequest, ChatResponse, ModelClient, ToolCall
    from .adapters.llm.openai import AsyncOpenAIClient, OpenAIClient
    from .adapters.llm.scripted import ScriptedClient
    from .adapters.runtime.aio import AsyncRuntime, InThread
    from .adapters.runtime.goal_lease import LeasedDriver
    from .adapters.runtime.goal_service import GoalService
    from .adapters.runtime.loop import Runtime
    from .adapters.runtime.machine import AskModel, Review, RunTool, StepMachine, TurnOver, TurnReport
    from .adapters.runtime.prompt import PromptConfig
    from .adapters.runtime.review import AsyncReviewPort, ReviewPort, ScriptedReviewer, approve, keep_planning
    from .adapters.runtime.tool_runner import ToolRunner
    from .adapters.runtime.toolset import open_async_runtime, open_runtime
    from .adapters.runtime.workspace import Workspace
    from .adapters.store.base import Store, StoreError
    from .adapters.store.memory import MemoryStore
    from .adapters.store.opener import open_store
    from .kernel.errors import KernelError, PlanfoldError, ReplayError
    from .kernel.tools.gate import GatePolicy
    from .kernel.tools.spec import ToolSpec
else:
    #: Where each name lives (below ``planfold``).
    _WHERE = {
        "AdapterError": "adapters.errors",
        **dict.fromkeys(("AsyncModelClient", "ChatRequest", "ChatResponse", "ModelClient", "ToolCall"),
                        "adapters.llm.model"),
        **dict.fromkeys(("AsyncOpenAIClient", "OpenAIClient"), "adapters.llm.openai"),
        "ScriptedClient": "adapters.llm.scripted",
        **dict.fromkeys(("AsyncRuntime", "InThread"), "adapters.runtime.aio"),
        "LeasedDriver": "adapters.runtime.goal_lease",
        "GoalService": "adapters.runtime.goal_service",
        "Runtime": "adapters.runtime.loop",
        **dict.fromkeys(("AskModel", "Review", "RunTool", "StepMachine", "TurnOver", "TurnReport"),
                        "adapters.runtime.machine"),
        "PromptConfig": "adapters.runtime.prompt",
        **dict.fromkeys(("AsyncReviewPort", "ReviewPort", "ScriptedReviewer", "approve", "keep_planning"),
                        "adapters.runtime.review"),
        "ToolRunner": "adapters.runtime.tool_runner",
        **dict.fromkeys(("open_async_runtime", "open_runtime"), "adapters.runtime.toolset"),
        "Workspace": "adapters.runtime.workspace",
        **dict.fromkeys(("Store", "StoreError"), "adapters.store.base"),
        "MemoryStore": "adapters.store.memory",
        "open_store": "adapters.store.opener",
        **dict.fromkeys(("KernelError", "PlanfoldError", "ReplayError"), "kernel.errors"),
        "GatePolicy": "kernel.tools.gate",
        "ToolSpec": "kernel.tools.spec",
    }

    def __getattr__(name):
        """A public name, imported from its module on first use;
        ``AttributeError`` for anything else."""
        module = _WHERE.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        from importlib import import_module  # noqa: PLC0415 (nothing is imported before it is used)

        value = getattr(import_module(f"{__name__}.{module}"), name)
        globals()[name] = value
        return value

    def __dir__():
        return sorted({*globals(), *__all__})
