"""What the runtime's drivers share: one step machine wired to a model, the
executors and a review port, and how a human's input becomes a plan-mode
choice and a turn.

``Runtime`` (synchronous, ``adapters.runtime.loop``) is a ``Driver``: a
``StepMachine`` whose actions it carries out. ``AsyncRuntime`` (asyncio,
``adapters.runtime.aio``) drives the reducer itself (a ``DriverCore``, as
``StepMachine`` is) and shares the rest of this module with it: how a
human's input is read, the turn's view, the options and the step's retry
budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypedDict, TypeVar, Unpack

from ...kernel.plan.context import ViewRequest
from ...kernel.plan.mode import PlanModeView
from ...kernel.plan.review import parse_plan_command
from ...kernel.session import SessionState
from ..delegation import Delegated, Writable
from ..llm.model import RetryBudget
from ..provenance import ForkProvenance
from ..store.base import Store
from ..store.session_log import Clock, SessionLog, system_clock
from .machine import StepListener, StepMachine
from .prompt import PromptConfig
from .review import reachable
from .tool_runner import ToolRunner

__all__ = ["Driver", "DriverOptions", "HumanInput", "human_input", "step_budget", "with_attachments"]

M = TypeVar("M")
R = TypeVar("R")


def with_attachments(text: str, attachments: Sequence[str]) -> str:
    """The text of a user message with the names of its attachments listed
    after it (the message as recorded and sent to the model)."""
    if not attachments:
        return text
    listed = "\n".join(f"- {name}" for name in attachments)
    return f"{text}\n\nAttachments:\n{listed}" if text else f"Attachments:\n{listed}"


@dataclass(frozen=True, slots=True)
class HumanInput:
    """What a human's input asks: plan mode on or off (``None``: no
    ``/plan``), and the message of the turn to run (``None``: no turn)."""

    plan_mode: bool | None
    message: str | None
    rewriting: bool = False


def human_input(state: SessionState, text: str, attachments: Sequence[str] = ()) -> HumanInput:
    """Read a human's input: ``/plan`` (on, with a message to run a turn with,
    or ``off``) or a message. A ``/plan <message>`` turn with a live plan is
    about rewriting it, so it carries the full plan. ``/plan off`` takes no
    attachments: raises ``PlanCommandError`` (``attachments-with-off``)."""
    command = parse_plan_command(text, attachments)
    if command is None:
        return HumanInput(None, with_attachments(text, attachments))
    if command.message is None and not command.attachments:
        return HumanInput(command.target, None)
    message = with_attachments(command.message or "", command.attachments)
    return HumanInput(command.target, message, state.plan.live)


def turn_view(asked: HumanInput, view: ViewRequest | None) -> ViewRequest | None:
    """The view of the turn ``asked`` runs (``view`` completed)."""
    if not asked.rewriting:
        return view
    base = view or ViewRequest()
    return ViewRequest(base.user_asked_full, base.summary_insufficient, True, base.first_since_resume)


class DriverOptions(TypedDict, total=False):
    """A driver's settings: the ``clock`` its appends are stamped with, the
    ``prompt`` configuration, ``max_steps`` of a turn (16), ``max_tool_calls``
    of one reply (32), and the retries of one step: ``retry_budget``, by
    default the model client's own ``retry_budget``, else one of
    ``step_retries`` (2)."""

    clock: Clock
    prompt: PromptConfig | None
    max_steps: int
    step_retries: int
    max_tool_calls: int
    retry_budget: RetryBudget | None


def step_budget(model: object, options: DriverOptions) -> RetryBudget:
    """The size of one step's retry budget for a driver of ``model`` (see ``DriverOptions``)."""
    shared = getattr(model, "retry_budget", None)
    default = shared if isinstance(shared, RetryBudget) else RetryBudget(options.get("step_retries", 2))
    return options.get("retry_budget") or default


class Driver(Generic[M, R]):
    """A step machine over ``session_id`` of ``store``, with a ``model`` and a
    ``review`` port of the driver's kind. ``retry_budget`` is the retries of
    one step (see ``DriverOptions``).
    Raises ``ReplayError`` when the stored log does not fold strictly."""

    def __init__(
        self,
        store: Store,
        session_id: str,
        model: M,
        tools: ToolRunner,
        review: R | None = None,
        **options: Unpack[DriverOptions],
    ) -> None:
        self.model = model
        self.review = review
        self.machine = StepMachine(
            store, session_id, tools, clock=options.get("clock", system_clock), prompt=options.get("prompt"),
            max_steps=options.get("max_steps", 16), max_tool_calls=options.get("max_tool_calls", 32),
            retry_budget=step_budget(model, options), review_available=lambda: reachable(self.review),
        )

    log = Delegated[SessionLog]("machine")
    tools = Delegated[ToolRunner]("machine")
    retry_budget = Delegated[RetryBudget]("machine")
    step_listeners = Delegated[list[StepListener]]("machine")
    max_tool_calls = Writable[int]("machine")
    resumed = Delegated[bool]("machine")
    shown = Delegated[list[str]]("machine", doc="The plans put before the review port, in order.")

    def rewind(self, turn: int, new_session: str) -> ForkProvenance:
        """Rewind to turn ``turn``: a new session whose log is everything
        before that turn started (``StepMachine.fork``); this session stays
        as it is. Open a runtime on ``new_session`` to go on from there.
        Raises the store's typed refusals (``fork-turn-missing``,
        ``session-exists``)."""
        return self.machine.fork(new_session, turn=turn)

    plan_mode = Delegated[PlanModeView](
        "machine", doc="The mode as the user sees it: recorded, and pending (``None``: none)."
    )
