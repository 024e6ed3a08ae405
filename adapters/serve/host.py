"""One session driven step by step by a host runtime: the step machine's
operations as ``planfold serve``'s methods.

Theory of operation
-------------------
A runtime written in another language calls the model, runs the executors
and asks its human itself, and asks planfold for everything else. Each
JSON-RPC method maps onto one operation of the session's ``StepMachine``
(``adapters.runtime.machine``), the very machine ``Runtime`` and
``AsyncRuntime`` drive, so a host that drives the demo's conversation gets
the log ``planfold demo`` writes (a test holds this): ``turn/start`` is
``start_turn``, ``step/begin`` ``begin_step``, ``step/context`` ``request``,
``step/reply`` ``reply``, ``tool/dispatch`` ``dispatch``, ``tool/result``
``tool_result``, ``review/answer`` ``review_answer``, ``turn/end``
``end_turn``. This module only turns the machine's results into the
protocol's (``adapters.serve.protocol``) and adds what only a host has: its
goal (``adapters.serve.goals``: ``goal/*``, ``/goal`` and a goal round's
``turn/start``) and the facts it records (``events/append``: what
``kernel.turn.unrecordable`` allows).

Each operation writes what the machine decides, one append per transition
(``step/begin`` records a queued plan-mode choice in its own append before
the request header): a refusal changes nothing, and when an append fails
(a conflict with another writer, a storage failure) the ones before it
stand, the process state is the one after them, and the error is the failed
append's own. ``user/command``, ``events/append`` and the goal operations
are units of the machine (``StepMachine.atomic``): all their events in one
append or none, the goal activation put back too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ...kernel.goal.command import parse_goal_command
from ...kernel.log import Draft, MessageSource
from ...kernel.payload import JSONObject
from ...kernel.plan.context import ViewRequest, runtime_phase
from ...kernel.plan.mode import StepVerdict
from ...kernel.plan.review import ReviewAnswer
from ...kernel.plan.review import parse_plan_command as parse_plan
from ...kernel.tools.gate import GatePolicy, Refused, Verdict
from ...kernel.tools.spec import ToolSpec
from ...kernel.turn import unrecordable
from ..llm import model
from ..llm.openai_wire import encode_message, plain_json
from ..runtime.driver import human_input
from ..runtime.machine import StepMachine
from ..runtime.prompt import PromptConfig
from ..runtime.tool_runner import ToolRunner
from ..runtime.toolset import runtime_registry
from ..store.base import Store
from ..store.session_log import Clock
from . import protocol as p
from .errors import NotRecordableError
from .goals import HostGoals

__all__ = ["HostConfig", "HostSession", "runtime_registry"]


@dataclass(frozen=True, slots=True)
class HostConfig:
    """The host's tools, its gate policy, its prompt texts and how many calls
    of one reply are taken."""

    tools: tuple[ToolSpec, ...] = ()
    policy: GatePolicy = field(default_factory=GatePolicy)
    prompt: PromptConfig = field(default_factory=PromptConfig)
    max_tool_calls: int = 32


class HostSession:
    """One session of ``store`` driven by a host (see the module doc)."""

    def __init__(self, store: Store, session_id: str, clock: Clock, config: HostConfig | None = None) -> None:
        config = config or HostConfig()
        tools = ToolRunner(runtime_registry(config.tools), config.policy)
        self.machine = StepMachine(
            store, session_id, tools, clock=clock, prompt=config.prompt, max_tool_calls=config.max_tool_calls
        )
        self.log = self.machine.log
        self.goals = HostGoals(self.machine)

    @property
    def session_id(self) -> str:
        return self.log.session_id

    @property
    def stage(self) -> p.Stage:
        return self.machine.stage

    def info(self) -> p.SessionInfo:
        state, m = self.log.state, self.machine
        return p.SessionInfo(
            self.session_id, state.last_seq, state.agent_mode, runtime_phase(state), state.turns.turn,
            state.turns.open, state.plan.current, state.goal.current, m.pending, self.goals.armed,
            m.stage, m.awaiting_call, m.next_step,
        )

    def fork(self, new_session: str, *, at: int | None = None, turn: int | None = None) -> p.Forked:
        """Fork this session at seq ``at``, or at the start of turn ``turn``
        (``StepMachine.fork``)."""
        made = self.machine.fork(new_session, at=at, turn=turn)
        return p.Forked(new_session, made.source, made.seq, made.prefix_sha256)

    # -- user input ---------------------------------------------------------

    def choose(self, active: bool) -> p.ChoiceResult:
        outcome = self.machine.choose(active)
        return p.ChoiceResult(outcome, self.machine.pending, self.log.last_seq)

    def command(self, text: str, attachments: Sequence[str] = ()) -> p.CommandResult:
        """A line a human typed: ``/plan``, ``/goal`` or a message (the text
        to start a turn with, attachments listed after it)."""
        return self.goals.unit(lambda: self._command(text, tuple(attachments)))

    def _command(self, text: str, attachments: tuple[str, ...]) -> p.CommandResult:
        goal = parse_goal_command(text)
        if goal is not None and parse_plan(text, attachments) is None:
            return self.goals.command(goal)
        asked = human_input(self.machine.state, text, attachments)
        if asked.plan_mode is None:
            return p.CommandResult("message", message=asked.message, last_seq=self.log.last_seq)
        outcome = self.machine.choose(asked.plan_mode)
        return p.CommandResult("plan", outcome, asked.message, asked.rewriting, last_seq=self.log.last_seq)

    # -- turns and steps ----------------------------------------------------

    def start_turn(self, text: str, *, goal_round: bool = False, view: ViewRequest | None = None) -> p.TurnStarted:
        """Open a turn; a goal round is attributed to the goal when
        ``should_continue`` allows it now (``HostGoals.admit``)."""
        source: MessageSource | None = None
        number: int | None = None
        if goal_round:
            source, number = self.goals.admit()
        report = self.machine.start_turn(text, source, view)
        return p.TurnStarted(report.turn, report.first_seq, self.log.last_seq, number)

    def end_turn(self) -> p.TurnEnded:
        turn = self.log.state.turns.turn
        self.machine.end_turn()
        return p.TurnEnded(turn, self.log.last_seq)

    def begin_step(self, step: int, verdict: StepVerdict = "accepted") -> p.StepBegun:
        begun = self.machine.begin_step(step, verdict)
        phase = runtime_phase(self.log.state)
        return p.StepBegun(begun.accepted, begun.flushed, begun.started, begun.header_seq, phase, self.log.last_seq)

    def context(self, conversation: bool = False) -> p.RequestContext:
        """What the step's request is made of."""
        prepared = self.machine.request()
        state = self.machine.request_state
        tools = tuple(
            p.ToolInfo(t.name, t.description, dict(plain_json(t.parameters)))  # type: ignore[call-overload]
            for t in prepared.request.tools
        )
        messages: tuple[dict[str, Any], ...] | None = None
        if conversation:
            messages = tuple(encode_message(m) for m in prepared.request.messages if m.role != "system")
        return p.RequestContext(prepared.phase, state.agent_mode, prepared.view, prepared.sections, tools, messages)

    def reply(self, response: model.ChatResponse) -> p.ReplyRecorded:
        recorded = self.machine.reply(response)
        pairs = zip(recorded.calls, recorded.verdicts, strict=True)
        verdicts = tuple(_verdict(call.id, call.name, v) for call, v in pairs)
        return p.ReplyRecorded(verdicts, self.machine.follow, recorded.ended_by, recorded.error, self.log.last_seq)

    def dispatch(self, call_id: str, *, review_available: bool = True) -> p.ToolAction:
        done = self.machine.dispatch(call_id, review_available=review_available)
        left = len(self.machine.calls_left)
        review = None if done.review is None else p.ReviewInfo(done.review.plan, done.review.options)
        call = done.call
        return p.ToolAction(call.id, call.name, done.action, done.ok, done.output, review, left, self.log.last_seq)

    def tool_result(self, call_id: str, ok: bool, output: str) -> p.ToolAnswered:
        written = self.machine.tool_result(call_id, ok, output)
        return p.ToolAnswered(call_id, ok, output, written.seq, len(self.machine.calls_left))

    def review_answer(self, call_id: str, answer: ReviewAnswer) -> p.ToolAnswered:
        reviewed, seq = self.machine.review_answer(call_id, answer)
        result, status = reviewed.result, reviewed.outcome.status
        return p.ToolAnswered(call_id, result.ok, result.output, seq, len(self.machine.calls_left), status)

    # -- recorded facts -------------------------------------------------------

    def append_events(self, events: Sequence[tuple[str, JSONObject]]) -> p.Appended:
        """Record facts that decide nothing (``kernel.turn.unrecordable``
        refuses the rest): seq and time are the log's; the strict fold checks
        them."""
        return self.goals.unit(lambda: self._append_events(tuple(events)))

    def _append_events(self, events: tuple[tuple[str, JSONObject], ...]) -> p.Appended:
        self.machine.require("events/append", "idle", "turn", "step")
        for kind, payload in events:
            why = unrecordable(kind, payload)
            if why is not None:
                raise NotRecordableError.of(kind, why)
        written = self.log.append([Draft(kind, payload) for kind, payload in events])
        return p.Appended(written[0].seq, written[-1].seq)


def _verdict(call_id: str, tool: str, verdict: Verdict) -> p.CallVerdict:
    if isinstance(verdict, Refused):
        return p.CallVerdict(call_id, tool, verdict.phase, False, None, verdict)
    return p.CallVerdict(call_id, tool, verdict.phase, True, verdict.route, verdict.warning)
