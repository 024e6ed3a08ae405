"""The default tools and the wiring of a whole runtime for one session.

Theory of operation
-------------------
Every tool declares its own effect; the gate reads nothing else:

- ``read_file`` and ``list_files`` declare ``read``;
- ``write_file`` declares ``write`` (refused in plan mode and build bootstrap)
  and its ``path`` argument as its target (what the plan's scope checks);
- the runtime-owned tools (``kernel.tools.RUNTIME_TOOLS``) are routed to the
  plan runner, never to an executor, each only in its phases:
  ``exit_plan_mode`` (plan), ``bootstrap_plan`` (build_bootstrap),
  ``update_todo`` (build_execute, verify), ``report_verification`` (verify).
  What they declare does not matter to the gate; they declare ``unknown``.

``open_runtime`` wires a ``SessionLog`` on a store, the tools, the plan runner
and the prompt into a ``Runtime``; a deployment may add its own tools and
executors (an executor under a runtime-owned name is refused). Plan ids are
derived from the seq they will be recorded at (``plan-<seq>``), so they stay
fresh across restarts without any process counter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict, Unpack

from ...kernel.payload import JSONObject
from ...kernel.plan.spec_json import PlanArgs
from ...kernel.plan.tools import TodoUpdate, VerificationReport
from ...kernel.tools.gate import GatePolicy
from ...kernel.tools.spec import ToolRegistry, ToolSpec
from ..codec.schema import tool_parameters
from ..llm.model import AsyncModelClient, ModelClient
from ..options import refuse_unknown
from ..store.base import Store
from ..store.session_log import Clock, SessionLog, system_clock
from .aio import AsyncRuntime
from .loop import Runtime
from .prompt import PromptConfig
from .resolve import Resolver
from .review import AsyncReviewPort, ReviewPort
from .tool_runner import AsyncExecutor, ToolRunner
from .workspace import Executor, Workspace

__all__ = [
    "BOOTSTRAP_PLAN",
    "EXIT_PLAN_MODE",
    "LIST_FILES",
    "READ_FILE",
    "REPORT_VERIFICATION",
    "UPDATE_TODO",
    "WRITE_FILE",
    "RuntimeOptions",
    "Session",
    "default_registry",
    "open_async_runtime",
    "open_runtime",
    "runtime_registry",
]

_PATH: JSONObject = {"type": "string", "description": "workspace-relative path"}
#: The runtime-owned tools' arguments, as the kernel's decoders read them.
_PLAN_ARGS: JSONObject = tool_parameters(PlanArgs)

READ_FILE = ToolSpec(
    "read_file",
    "Read one file of the workspace.",
    {"type": "object", "properties": {"path": _PATH}, "required": ["path"]},
    effect="read",
    origin="builtin",
)
LIST_FILES = ToolSpec(
    "list_files", "List the workspace's files.", {"type": "object", "properties": {}}, effect="read", origin="builtin"
)
WRITE_FILE = ToolSpec(
    "write_file",
    "Create or replace one file of the workspace.",
    {
        "type": "object",
        "properties": {"path": _PATH, "content": {"type": "string"}},
        "required": ["path", "content"],
    },
    effect="write",
    origin="builtin",
    target_args=("path",),
)
EXIT_PLAN_MODE = ToolSpec(
    "exit_plan_mode",
    "Present your complete plan for human review and, once approved, leave plan mode.",
    _PLAN_ARGS,
    effect="unknown",
    origin="builtin",
)
BOOTSTRAP_PLAN = ToolSpec(
    "bootstrap_plan",
    "In build mode without a plan: record a minimal plan before changing anything. It starts executing at once.",
    _PLAN_ARGS,
    effect="unknown",
    origin="builtin",
)
UPDATE_TODO = ToolSpec(
    "update_todo",
    "Report the progress of one todo of the plan you are executing.",
    tool_parameters(TodoUpdate),
    effect="unknown",
    origin="builtin",
)
REPORT_VERIFICATION = ToolSpec(
    "report_verification",
    "After execution: report whether the plan's verify list holds. A failure sends the plan back to execution.",
    tool_parameters(VerificationReport),
    effect="unknown",
    origin="builtin",
)


def runtime_registry(tools: Sequence[ToolSpec], extra: Sequence[ToolSpec] = ()) -> ToolRegistry:
    """A session's registry, registered once for the whole session:
    ``tools``, the runtime-owned ones, then ``extra`` (a ``planfold serve``
    host gives its own tools as ``tools``; ``default_registry`` gives the
    default tools, then a deployment's own). Raises ``ToolSpecError`` for a
    clash, a runtime-owned name or an invalid declaration."""
    return ToolRegistry.of(*tools, EXIT_PLAN_MODE, BOOTSTRAP_PLAN, UPDATE_TODO, REPORT_VERIFICATION, *extra)


def default_registry(extra: Sequence[ToolSpec] = ()) -> ToolRegistry:
    """The default tools' registry (``runtime_registry``), with ``extra``
    after the runtime-owned tools."""
    return runtime_registry((READ_FILE, LIST_FILES, WRITE_FILE), extra)


@dataclass
class Session:
    """A wired session: its log, runtime and workspace."""

    log: SessionLog
    runtime: Runtime
    workspace: Workspace


class RuntimeOptions(TypedDict, total=False):
    """The keyword options ``open_runtime`` and ``open_async_runtime`` share.

    ``clock`` stamps the events (the system clock by default); ``policy`` is
    the gate's (``GatePolicy()`` by default); ``prompt`` the prompt's
    configuration; ``tools`` and ``executors`` the deployment's own, added to
    the defaults; ``resolver`` finds where writes land for the plan's scope
    (by default the workspace's)."""

    clock: Clock
    policy: GatePolicy | None
    prompt: PromptConfig | None
    tools: Sequence[ToolSpec]
    executors: Mapping[str, Executor] | None
    resolver: Resolver | None


def open_runtime(
    store: Store,
    session_id: str,
    model: ModelClient,
    review: ReviewPort | None,
    workspace: Workspace,
    **options: Unpack[RuntimeOptions],
) -> Session:
    """Open ``session_id`` on ``store`` (strict replay) and wire a runtime,
    with the deployment's own ``tools`` and ``executors`` added to the
    defaults (see ``RuntimeOptions``). Raises ``ReplayError`` when the stored
    log breaks a rule, and ``ToolSpecError`` for a tool or executor that may
    not be installed (a clash, a runtime-owned name). ``resolver`` finds where
    writes land for the plan's scope: by default ``workspace``'s; a deployment
    whose executors act on a real directory gives ``directory_resolver`` of it."""
    runner = _runner(workspace, options, "open_runtime")
    runtime = Runtime(store, session_id, model, runner, review, clock=_clock(options), prompt=_prompt(options))
    return Session(runtime.log, runtime, workspace)


def open_async_runtime(
    store: Store,
    session_id: str,
    model: AsyncModelClient,
    review: AsyncReviewPort | ReviewPort | None,
    workspace: Workspace,
    *,
    async_executors: Mapping[str, AsyncExecutor] | None = None,
    **options: Unpack[RuntimeOptions],
) -> AsyncRuntime:
    """``open_runtime`` for asyncio programs: an ``AsyncRuntime`` with the
    deployment's awaited ``async_executors`` beside its other executors. It
    reads the session from ``store``: call it in a worker thread
    (``asyncio.to_thread``) when that must not block the event loop. Raises
    as ``open_runtime`` does."""
    runner = _runner(workspace, options, "open_async_runtime", async_executors)
    return AsyncRuntime(store, session_id, model, runner, review, clock=_clock(options), prompt=_prompt(options))


def _clock(options: RuntimeOptions) -> Clock:
    return options.get("clock", system_clock)


def _prompt(options: RuntimeOptions) -> PromptConfig:
    return options.get("prompt") or PromptConfig()


def _runner(
    workspace: Workspace,
    options: RuntimeOptions,
    where: str,
    async_executors: Mapping[str, AsyncExecutor] | None = None,
) -> ToolRunner:
    refuse_unknown(options, RuntimeOptions.__annotations__, where)
    return ToolRunner(
        default_registry(options.get("tools", ())),
        options.get("policy") or GatePolicy(),
        {**workspace.executors(), **(options.get("executors") or {})},
        dict(async_executors or {}),
        options.get("resolver") or workspace.resolver(),
    )
