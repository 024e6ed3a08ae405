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
- the conversation, derived from the log (``Conversation`` keeps what it
  read, so each request reads only the events since the one before): ``user/message`` (human, plugin
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

from ...kernel.log import (
    ASSISTANT_MESSAGE,
    TOOL_CALL,
    TOOL_REFUSED,
    TOOL_RESULT,
    USER_MESSAGE,
    Event,
    read_assistant_message,
    read_message,
)
from ...kernel.phase import RuntimePhase
from ...kernel.plan.context import (
    PromptParts,
    PromptSection,
    ViewChoice,
    ViewRequest,
    choose_plan_view,
    compose_prompt,
    runtime_phase,
)
from ...kernel.plan.review import PlanPolicy
from ...kernel.session import SessionState
from ...kernel.tools.events import read_tool_call, read_tool_notice, read_tool_result
from ...kernel.tools.spec import thaw_json
from ..llm.model import (
    AssistantMessage,
    ChatRequest,
    Message,
    SystemMessage,
    ToolCall,
    ToolDefinition,
    ToolMessage,
    UserMessage,
)
from ..views import Prefix
from .tool_runner import ToolRunner, tool_message_text

__all__ = [
    "DEFAULT_BASE_PROMPT",
    "DEFAULT_PLAN_POLICY",
    "Conversation",
    "PreparedRequest",
    "PromptConfig",
    "assemble_request",
    "conversation",
    "prepare_request",
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
    return list(Conversation().messages(events))


def _message_at(events: Sequence[Event], index: int) -> tuple[Message | None, int]:
    """The message the event at ``index`` starts (``None`` for an event that
    is no message) and the index after it: an ``assistant/message`` takes the
    ``tool/call`` events that follow it."""
    event = events[index]
    index += 1
    if event.kind == USER_MESSAGE:
        return UserMessage(read_message(event.payload).text), index
    if event.kind == ASSISTANT_MESSAGE:
        calls: list[ToolCall] = []
        while index < len(events) and events[index].kind == TOOL_CALL:
            calls.append(read_tool_call(events[index].payload))
            index += 1
        text = read_assistant_message(event.payload).text
        return (AssistantMessage(text or None, tuple(calls)) if calls else AssistantMessage(text)), index
    if event.kind in (TOOL_RESULT, TOOL_REFUSED):
        answered = read_tool_result(event.payload) if event.kind == TOOL_RESULT else read_tool_notice(event.payload)
        return ToolMessage(answered.call_id, tool_message_text(event), answered.tool), index
    return None, index


class Conversation:
    """``conversation(events)`` for a session log's events (a ``Prefix``):
    the messages of the events already read are kept, and each call reads
    only the events after them and hands out a view (no copy), so a step's
    cost does not grow with the history. An ``assistant/message`` at the
    very end is read again next time (its ``tool/call`` events may follow).
    Events that are not a longer view of the log read before (another log, a
    reload's, any other sequence) are read whole."""

    def __init__(self) -> None:
        self._messages: list[Message] = []
        self._source: object = None
        self._read = 0

    def messages(self, events: Sequence[Event], head: tuple[Message, ...] = ()) -> Prefix[Message]:
        """``head``, then every message of ``events`` (``conversation(events)``)."""
        end = len(events)
        read = self._read
        source = events.source if isinstance(events, Prefix) else None
        if source is None or source is not self._source or read > end:
            # a new list: views handed out earlier keep the old one
            self._messages, self._source, read = [], source, 0
        kept = self._messages
        tail: tuple[Message, ...] = ()
        index = read
        while index < end:
            start = index
            message, index = _message_at(events, index)
            if message is None:
                continue
            if index == end and events[start].kind == ASSISTANT_MESSAGE:
                tail = (message,)
                index = start
                break
            kept.append(message)
        self._read = index
        return Prefix(kept, len(kept), head, tail)


#: The tool definitions of a registry and policy in a phase, as the last
#: request of each runner made them (registries are immutable values, so a
#: runner's definitions change only when it is given another registry or policy).
_DEFINED: dict[tuple[int, int, str], tuple[object, object, tuple[ToolDefinition, ...]]] = {}


def _definitions(tools: ToolRunner, phase: RuntimePhase) -> tuple[ToolDefinition, ...]:
    key = (id(tools.registry), id(tools.policy), phase)
    known = _DEFINED.get(key)
    if known is not None and known[0] is tools.registry and known[1] is tools.policy:
        return known[2]
    made = _made_definitions(tools, phase)
    if len(_DEFINED) > 256:
        _DEFINED.clear()
    _DEFINED[key] = (tools.registry, tools.policy, made)
    return made


def _made_definitions(tools: ToolRunner, phase: RuntimePhase) -> tuple[ToolDefinition, ...]:
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
    messages: Conversation | None = None,
) -> PreparedRequest:
    """Derive the next request from the fold and the log (see the module doc);
    ``messages`` reads the conversation of a log it read before incrementally."""
    phase = runtime_phase(state)
    view = choose_plan_view(state, view_request or ViewRequest())
    sections = compose_prompt(config.parts, state, view, config.policy)
    system: list[Message] = [SystemMessage(f"[{s.name}]\n{s.text}") for s in sections]
    definitions = _definitions(tools, phase)
    if messages is None:
        request = ChatRequest((*system, *conversation(events)), definitions)
    else:
        request = ChatRequest(messages.messages(events, head=tuple(system)), definitions)
    return PreparedRequest(request, phase, view, sections, tuple(d.name for d in definitions))


def prepare_request(
    state: SessionState,
    events: Sequence[Event],
    asked: ViewRequest,
    *,
    first_request: bool,
    tools: ToolRunner,
    config: PromptConfig,
    messages: Conversation,
) -> PreparedRequest:
    """A step's request as the runtime and the host derive it: the view
    ``request_view`` completes from ``asked``, and the conversation read
    through ``messages``."""
    view = request_view(asked, state, first_request=first_request)
    return assemble_request(state, events=events, tools=tools, config=config, view_request=view, messages=messages)
