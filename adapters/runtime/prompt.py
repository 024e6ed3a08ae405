"""Deriving one model request from the session log.

Theory of operation
-------------------
A request is derived only after the pre-step listener has flushed any pending
plan-mode choice and recorded the request header, so everything here reads
the fold as the header describes it, and nothing else: the pending choice is
not an input. When the flush's append failed the choice is still pending and
the whole request (overlay, ``plan:policy``, plan view, phase, tools) is the
recorded state's, as its header says. It has three parts:

- the system prompt: the sections of ``kernel.plan.context.compose_prompt``
  (shared base, plan or build overlay, ``plan:policy``, the plan view chosen by
  ``choose_plan_view``), each as one system message, in that order;
- the conversation, rebuilt from the log: ``user/message`` (human, plugin
  notice or goal round), ``assistant/message`` with the ``tool/call`` events
  that follow it, and one tool message per answered call (``tool/result``,
  ``tool/refused``). ``plan/mode``, ``plan/artifact``, ``goal/change`` and the
  turn and header records never enter the conversation;
- the tools on offer: ``list_available_specs`` for the runtime phase, the same
  gate decision the execution check uses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from planfold.adapters.llm.model import (
    AssistantMessage,
    ChatRequest,
    Message,
    SystemMessage,
    ToolCall,
    ToolDefinition,
    ToolMessage,
    UserMessage,
)
from planfold.adapters.runtime.tool_runner import ToolRunner, read_call, tool_message_text
from planfold.kernel.log import ASSISTANT_MESSAGE, TOOL_CALL, TOOL_REFUSED, TOOL_RESULT, USER_MESSAGE, Event
from planfold.kernel.phase import RuntimePhase
from planfold.kernel.plan.context import (
    PromptParts,
    PromptSection,
    ViewChoice,
    ViewRequest,
    choose_plan_view,
    compose_prompt,
    runtime_phase,
)
from planfold.kernel.plan.review import PlanPolicy
from planfold.kernel.session import SessionState
from planfold.kernel.tools.spec import thaw_json

__all__ = [
    "DEFAULT_BASE_PROMPT",
    "DEFAULT_PLAN_POLICY",
    "PreparedRequest",
    "PromptConfig",
    "assemble_request",
    "conversation",
    "request_view",
]

DEFAULT_BASE_PROMPT = (
    "You are a careful coding agent working in a small workspace. Respect the project's "
    "rules and architecture, use only the tools you are offered, and explain what you do."
)
DEFAULT_PLAN_POLICY = PlanPolicy(
    "Planning policy: before changing anything, research the workspace with read-only "
    "tools and present one complete plan for review with exit_plan_mode."
)


@dataclass(frozen=True, slots=True)
class PromptConfig:
    """The deployment's prompt texts and its ``plan:policy`` section."""

    parts: PromptParts = field(default_factory=lambda: PromptParts(DEFAULT_BASE_PROMPT))
    policy: PlanPolicy | None = DEFAULT_PLAN_POLICY


@dataclass(frozen=True, slots=True)
class PreparedRequest:
    """The request to send, with what it was derived from: the runtime
    phase, the plan view chosen, the prompt sections and the tool names
    actually offered (the execution check refuses anything else)."""

    request: ChatRequest
    phase: RuntimePhase
    view: ViewChoice
    sections: tuple[PromptSection, ...]
    offered: tuple[str, ...]


def conversation(events: Sequence[Event]) -> list[Message]:
    """The user, assistant and tool messages recorded in ``events``."""
    out: list[Message] = []
    index = 0
    while index < len(events):
        event = events[index]
        index += 1
        if event.kind == USER_MESSAGE:
            out.append(UserMessage(str(event.payload["text"])))
        elif event.kind == ASSISTANT_MESSAGE:
            calls: list[ToolCall] = []
            while index < len(events) and events[index].kind == TOOL_CALL:
                calls.append(read_call(events[index].payload))
                index += 1
            text = str(event.payload["text"])
            if calls:
                out.append(AssistantMessage(text or None, tuple(calls)))
            else:
                out.append(AssistantMessage(text))
        elif event.kind in (TOOL_RESULT, TOOL_REFUSED):
            payload = event.payload
            out.append(ToolMessage(str(payload["call_id"]), tool_message_text(event), str(payload["tool"])))
    return out


def _definitions(tools: ToolRunner, phase: RuntimePhase) -> tuple[ToolDefinition, ...]:
    out = []
    for spec in tools.offered(phase):
        parameters = thaw_json(spec.parameters)
        assert isinstance(parameters, Mapping)
        out.append(ToolDefinition(spec.name, spec.description, parameters))
    return tuple(out)


def request_view(asked: ViewRequest, state: SessionState, *, first_request: bool) -> ViewRequest:
    """What the runtime knows of the next request (``asked``), completed from
    ``state``, the fold it is assembled from: after a "keep planning" review
    the plan-mode requests are about rewriting the plan, so they carry it in
    full until it is rewritten; ``first_request`` (the first request of a
    runtime that resumed a session) makes it the first since the resume."""
    rewriting = asked.rewriting or (state.plan_mode and state.plan.feedback is not None)
    first = asked.first_since_resume or first_request
    return ViewRequest(asked.user_asked_full, asked.summary_insufficient, rewriting, first)


def assemble_request(
    state: SessionState,
    *,
    events: Sequence[Event],
    tools: ToolRunner,
    config: PromptConfig,
    view_request: ViewRequest | None = None,
) -> PreparedRequest:
    """Derive the next request from the fold and the log (see the module doc)."""
    phase = runtime_phase(state)
    view = choose_plan_view(state, view_request or ViewRequest())
    sections = compose_prompt(config.parts, state, view, config.policy)
    system: list[Message] = [SystemMessage(f"[{s.name}]\n{s.text}") for s in sections]
    definitions = _definitions(tools, phase)
    request = ChatRequest(tuple(system + conversation(events)), definitions)
    return PreparedRequest(request, phase, view, sections, tuple(d.name for d in definitions))

