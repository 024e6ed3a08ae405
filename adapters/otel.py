"""OpenTelemetry traces of a session: turns, model calls, tool calls with the
gate's verdict, plan reviews and goal rounds (the ``otel`` extra).

Theory of operation
-------------------
Tracing is off unless a program asks for it: nothing in planfold imports
this module. ``instrument(store, model, tools, review)`` wraps the parts a
program hands to ``Runtime`` or ``AsyncRuntime`` and returns them as
``Instrumented``; the runtime is built on the wrapped parts and knows
nothing of tracing. The wrappers share one ``SessionTracer``:

- the store (``TracedStore``, or ``TracedAsyncStore`` for an
  ``AsyncStore``) sees every event the runtime appends, after
  the store accepted it: ``turn/start`` opens the turn's span (and, when
  the turn's first message is a goal's, a goal round's span around it),
  ``request/header`` gives the seq, step and attempt of the next model
  call, ``tool/call`` … ``tool/result`` or ``tool/refused`` are one tool
  call's span with the gate's verdict and rule, ``plan/artifact`` is an
  event on the turn's span, ``goal/change`` a span of its own, and
  ``turn/end`` ends the turn's spans;
- the model client (``TracedModel``, ``TracedAsyncModel``) puts every call
  in a span with the GenAI semantic conventions' attributes, as a child of
  the turn's span and the current span while the call runs (so an HTTP
  client's own spans nest under it);
- the tool runner (``TracedToolRunner``) makes a call's span current while
  its executor runs (without it, the span is still made from the log), and
  its gate gives an allowed call's basis, asked with the tools the last
  model request offered;
- the review port (``TracedReviewPort``, ``TracedAsyncReviewPort``) puts
  the human's review of a plan in a span with the answer.

Only what the store accepted is traced: an append that failed (a conflict,
a storage fault, a sealed log) leaves no trace, as it leaves no event.
Tracing never changes what the runtime does: a failure inside the tracer is
logged (``planfold.adapters.otel``, WARNING) and the append, model call or
tool call goes on. The spans are made with the tracer provider given to
``instrument`` (by default the global one, which records nothing until an
SDK is configured).

Give each runtime its own ``instrument`` call: its parts then share one
record of the session's open turn, and every span carries the session's id
and the seq of the event it stands for. The store underneath may be shared.
"""

from __future__ import annotations

import inspect
import json
import threading
import time
import urllib.parse
from collections.abc import AsyncIterator, Generator, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, fields
from typing import Any, Generic, TypeVar, overload

try:
    from opentelemetry import trace
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, TracerProvider
    from opentelemetry.util.types import AttributeValue
except ImportError as exc:  # without the otel extra
    raise ImportError(
        "planfold.adapters.otel needs OpenTelemetry's API: pip install 'planfold[otel]'"
    ) from exc

from .. import __version__
from ..kernel.goal.values import ClearChange, read_goal_change
from ..kernel.log import (
    GOAL_CHANGE,
    PLAN_ARTIFACT,
    REQUEST_HEADER,
    TOOL_CALL,
    TOOL_REFUSED,
    TOOL_RESULT,
    TOOL_WARNING,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
    Event,
    GoalSource,
    TurnPayload,
    read_message,
    read_request_header,
)
from ..kernel.payload import read_as
from ..kernel.phase import RUNTIME_PHASES, RuntimePhase
from ..kernel.plan.review import APPROVE, ChannelLost, Custom, Dismissed, ReviewAnswer, ReviewRequest, Selected
from ..kernel.session import SessionState
from ..kernel.tools.events import read_tool_call, read_tool_notice, read_tool_result
from ..kernel.tools.gate import Allowed, check_call
from ..kernel.tools.spec import ToolCall
from .llm.model import AsyncModelClient, ChatRequest, ChatResponse, ModelClient, ModelError, RetryBudget
from .loggers import logger
from .provenance import ForkProvenance
from .runtime.review import AsyncReviewPort, ReviewPort
from .runtime.tool_runner import ToolRunner
from .store.aio import AsyncSharedStore, AsyncStore
from .store.base import (
    AppendRequest,
    AppendResult,
    AuditReport,
    ForwardingStore,
    InvalidRequestError,
    Lease,
    SharedStore,
    Store,
)
from .store.projection import Projection

__all__ = [
    "ATTEMPT",
    "GATE_RULE",
    "GATE_VERDICT",
    "GOAL_ID",
    "GOAL_OPERATION",
    "GOAL_REVISION",
    "GOAL_ROUND",
    "REVIEW_ANSWER",
    "REVIEW_APPROVED",
    "SEQ",
    "SESSION_ID",
    "STEP",
    "TURN",
    "Instrumented",
    "SessionTracer",
    "TracedAsyncModel",
    "TracedAsyncReviewPort",
    "TracedAsyncStore",
    "TracedModel",
    "TracedReviewPort",
    "TracedStore",
    "TracedToolRunner",
    "instrument",
]

_log = logger(__name__)

#: The attributes planfold puts on its spans (the GenAI ones are the
#: semantic conventions' own names, written where they are set).
SESSION_ID = "planfold.session.id"
SEQ = "planfold.seq"
TURN = "planfold.turn"
STEP = "planfold.step"
ATTEMPT = "planfold.attempt"
GATE_VERDICT = "planfold.gate.verdict"
GATE_RULE = "planfold.gate.rule"
REVIEW_ANSWER = "planfold.review.answer"
REVIEW_APPROVED = "planfold.review.approved"
GOAL_ID = "planfold.goal.id"
GOAL_REVISION = "planfold.goal.revision"
GOAL_ROUND = "planfold.goal.round"
GOAL_OPERATION = "planfold.goal.operation"

S = TypeVar("S")
M = TypeVar("M")
R = TypeVar("R")
A = TypeVar("A")


# --------------------------------------------------------------------------
# What the tracer keeps of a session


@dataclass
class _Call:
    """A recorded call not answered yet: its ``tool/call`` seq and name, and
    its span once the call is being answered."""

    seq: int
    tool: str
    span: Span | None = None
    #: the gate's basis and route for an allowed call, when the tracer knows the request's phase
    basis: tuple[str, str] | None = None


@dataclass
class _Session:
    """One session's open spans and the facts the next spans need."""

    session_id: str
    turn: Span | None = None
    turn_number: int = 0
    round: Span | None = None
    #: the last request header: its seq, turn and step, and the step's attempt
    header: tuple[int, int, int, int] | None = None
    steps: dict[tuple[int, int], int] = field(default_factory=dict)
    calls: dict[str, _Call] = field(default_factory=dict)
    #: when the call answered next began to be answered (ns): the reply, or the previous answer
    answering_since: int = 0
    refusals: int = 0


class SessionTracer:
    """The spans of the sessions one runtime's parts see (see the module
    doc): fed by ``TracedStore`` with every accepted event, asked by the
    model, tool and review wrappers for their parent span and seq."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self._lock = threading.RLock()
        self._sessions: dict[str, _Session] = {}
        self._current: str | None = None
        #: the traced tool runner (its registry and policy are the gate's)
        self.runner: ToolRunner | None = None
        #: the tool names the last model request offered
        self._offered: tuple[str, ...] | None = None
        #: the phases whose catalog is exactly those names, per set of names
        self._phases: dict[tuple[str, ...], tuple[RuntimePhase, ...]] = {}

    def _basis(self, call: ToolCall) -> tuple[str, str] | None:
        """The gate's basis and route for ``call`` as the last request
        offered it, when the gate allowed it; ``None`` when it refused, when
        no request or runner is known, or when the phases whose catalog the
        request showed do not agree (a ``stable`` catalog shows every tool
        in every phase)."""
        runner, names = self.runner, self._offered
        if runner is None or names is None:
            return None
        phases = self._phases.get(names)
        if phases is None:
            phases = tuple(
                phase for phase in RUNTIME_PHASES
                if tuple(spec.name for spec in runner.offered(phase)) == names
            )  # fmt: skip
            self._phases[names] = phases
        answers = set()
        for phase in phases:
            verdict = check_call(runner.registry, phase, runner.policy, call, names)
            answers.add((verdict.basis, verdict.route) if isinstance(verdict, Allowed) else None)
        return answers.pop() if len(answers) == 1 else None

    # -- the log -----------------------------------------------------------

    def observe(self, session_id: str, events: Sequence[Event]) -> None:
        """Record what ``events`` (appended to ``session_id``, in order) open,
        answer and end. A failure here is logged, never raised."""
        try:
            with self._lock:
                s = self._sessions.get(session_id)
                if s is None:
                    s = self._sessions[session_id] = _Session(session_id)
                for index, event in enumerate(events):
                    self._event(s, event, events[index + 1 :])
        except Exception as exc:  # tracing must never break an append
            _log.warning("session %r: tracing the append failed: %s", session_id, exc, exc_info=exc)

    def _event(self, s: _Session, event: Event, rest: Sequence[Event]) -> None:
        kind = event.kind
        if kind == TURN_START:
            self._open_turn(s, event, rest)
        elif kind == TURN_END:
            self._close_turn(s, event)
        elif kind == REQUEST_HEADER:
            header = read_request_header(event.payload)
            key = (header.turn, header.step)
            attempt = s.steps.get(key, -1) + 1
            s.steps[key] = attempt
            s.header = (event.seq, header.turn, header.step, attempt)
        elif kind == TOOL_CALL:
            call = read_tool_call(event.payload)
            if not any(c.span is not None for c in s.calls.values()):
                s.answering_since = time.time_ns()
            s.calls[call.id] = _Call(event.seq, call.name, basis=self._basis(call))
        elif kind in (TOOL_REFUSED, TOOL_WARNING):
            self._notice(s, event)
        elif kind == TOOL_RESULT:
            result = read_tool_result(event.payload)
            span = self._call_span(s, result.call_id, result.tool)
            span.set_attribute("planfold.tool.ok", result.ok)
            span.set_attribute("planfold.tool.result_seq", event.seq)
            if not result.ok:
                error = _error_code(result.output) or "tool-failed"
                span.set_attribute("error.type", error)
                span.set_status(Status(StatusCode.ERROR, error))
            self._answered(s, result.call_id)
        elif kind == PLAN_ARTIFACT and s.turn is not None:
            payload = event.payload
            attributes: dict[str, str | int] = {SEQ: event.seq}
            for name in ("action", "plan_id", "revision", "status", "todo_id"):
                value = payload.get(name)
                if isinstance(value, str | int) and not isinstance(value, bool):
                    attributes[f"planfold.plan.{name}"] = value
            s.turn.add_event("planfold.plan", attributes)
        elif kind == GOAL_CHANGE:
            self._goal_change(s, event)

    def _open_turn(self, s: _Session, event: Event, rest: Sequence[Event]) -> None:
        self._end_spans(s, event.seq)  # a turn a stopped process left open
        body: TurnPayload = read_as(TurnPayload, event.payload)
        s.turn_number = body.turn
        s.refusals, s.calls, s.steps = 0, {}, {}
        first = next((e for e in rest if e.kind == USER_MESSAGE), None)
        source = None if first is None else read_message(first.payload).source
        parent = None
        if isinstance(source, GoalSource) and first is not None:
            s.round = self.tracer.start_span(
                "planfold.goal.round",
                attributes={
                    SESSION_ID: s.session_id, SEQ: first.seq, GOAL_ID: source.goal_id,
                    GOAL_REVISION: source.revision, GOAL_ROUND: source.round, TURN: s.turn_number,
                },
            )  # fmt: skip
            parent = trace.set_span_in_context(s.round)
        s.turn = self.tracer.start_span(
            "planfold.turn", context=parent, attributes={SESSION_ID: s.session_id, SEQ: event.seq, TURN: s.turn_number}
        )
        self._current = s.session_id

    def _close_turn(self, s: _Session, event: Event) -> None:
        if s.turn is not None:
            s.turn.set_attribute("planfold.turn.end_seq", event.seq)
            s.turn.set_attribute("planfold.turn.refusals", s.refusals)
        self._end_spans(s, event.seq)

    def _end_spans(self, s: _Session, seq: int) -> None:
        """End the open turn's spans: calls left unanswered, the turn, its round."""
        for call in s.calls.values():
            if call.span is not None:
                call.span.set_attribute("planfold.tool.unanswered_at", seq)
                call.span.end()
        s.calls = {}
        for span in (s.turn, s.round):
            if span is not None:
                span.end()
        s.turn, s.round, s.header = None, None, None

    def _notice(self, s: _Session, event: Event) -> None:
        notice = read_tool_notice(event.payload, event.kind)
        span = self._call_span(s, notice.call_id, notice.tool)
        refused = event.kind == TOOL_REFUSED
        span.set_attribute(GATE_VERDICT, "refused" if refused else "warned")
        span.set_attribute(GATE_RULE, notice.code)
        attributes: dict[str, str | int] = {
            SEQ: event.seq, GATE_RULE: notice.code, "planfold.gate.reason": notice.reason,
            "planfold.gate.phase": notice.phase, "gen_ai.tool.name": notice.tool, "gen_ai.tool.call.id": notice.call_id,
        }  # fmt: skip
        if notice.hint:
            attributes["planfold.gate.hint"] = notice.hint
        name = "planfold.tool.refused" if refused else "planfold.tool.warning"
        span.add_event(name, attributes)
        if refused:
            s.refusals += 1
            if s.turn is not None:
                s.turn.add_event(name, attributes)
            self._answered(s, notice.call_id)

    def _answered(self, s: _Session, call_id: str) -> None:
        call = s.calls.pop(call_id, None)
        if call is not None and call.span is not None:
            call.span.end()
        s.answering_since = time.time_ns()

    def _call_span(self, s: _Session, call_id: str, tool: str) -> Span:
        """The span of a call being answered, started when it began to be
        answered (see ``_Session.answering_since``)."""
        call = s.calls.get(call_id)
        if call is None:  # a call of a turn this tracer did not see
            call = s.calls[call_id] = _Call(0, tool)
        if call.span is None:
            call.span = self.tracer.start_span(
                f"execute_tool {call.tool}",
                context=None if s.turn is None else trace.set_span_in_context(s.turn),
                start_time=s.answering_since or None,
                attributes={
                    SESSION_ID: s.session_id, SEQ: call.seq, TURN: s.turn_number,
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.tool,
                    "gen_ai.tool.call.id": call_id, GATE_VERDICT: "allowed",
                },
            )  # fmt: skip
            if call.basis is not None:
                call.span.set_attribute(GATE_RULE, call.basis[0])
                call.span.set_attribute("planfold.gate.route", call.basis[1])
        return call.span

    def _goal_change(self, s: _Session, event: Event) -> None:
        change = read_goal_change(event.payload)
        ref = change.cleared if isinstance(change, ClearChange) else change.goal
        attributes: dict[str, str | int] = {
            SESSION_ID: s.session_id, SEQ: event.seq, GOAL_OPERATION: change.operation,
            GOAL_ID: ref.id, GOAL_REVISION: ref.revision,
        }  # fmt: skip
        if not isinstance(change, ClearChange):
            attributes["planfold.goal.phase"] = change.goal.phase
            attributes["planfold.goal.rounds_started"] = change.rounds_started
        parent = None if s.turn is None else trace.set_span_in_context(s.turn)
        self.tracer.start_span("planfold.goal.change", context=parent, attributes=attributes).end()

    # -- what the other wrappers ask ----------------------------------------

    def _start(
        self,
        name: str,
        parent: Context | None,
        attributes: Mapping[str, AttributeValue],
        kind: SpanKind = SpanKind.INTERNAL,
    ) -> Span:
        """A started span, or (when the tracer fails, which is logged) one
        that records nothing."""
        try:
            return self.tracer.start_span(name, context=parent, kind=kind, attributes=attributes)
        except Exception as exc:  # tracing must never break a call
            _log.warning("tracing %r failed: %s", name, exc, exc_info=exc)
            return trace.INVALID_SPAN

    def _session(self) -> _Session | None:
        return None if self._current is None else self._sessions.get(self._current)

    @contextmanager
    def model_call(
        self, request: ChatRequest, request_model: str | None, server: Mapping[str, str | int] | None = None
    ) -> Iterator[Span]:
        """A model call's span, current while the call runs, as a child of
        the open turn's span; a ``ModelError`` is recorded with its code.
        The tools ``request`` offers are what the gate's basis of the
        reply's calls is asked with."""
        with self._lock:
            self._offered = request.tool_names
            s = self._session()
            attributes: dict[str, str | int] = {"gen_ai.operation.name": "chat", **(server or {})}
            if request_model:
                attributes["gen_ai.request.model"] = request_model
            parent = None
            if s is not None:
                attributes.update({SESSION_ID: s.session_id, "gen_ai.conversation.id": s.session_id})
                if s.header is not None:
                    seq, turn, step, attempt = s.header
                    attributes.update({SEQ: seq, TURN: turn, STEP: step, ATTEMPT: attempt})
                if s.turn is not None:
                    parent = trace.set_span_in_context(s.turn)
        name = f"chat {request_model}" if request_model else "chat"
        span = self._start(name, parent, attributes, SpanKind.CLIENT)
        with trace.use_span(span, end_on_exit=True):
            try:
                yield span
            except ModelError as exc:
                span.set_attribute("error.type", exc.code)
                raise

    @contextmanager
    def tool_call(self, call_id: str, tool: str) -> Iterator[Span]:
        """The span of the call whose executor runs, current meanwhile."""
        with self._lock:
            s = self._session()
            try:
                span = None if s is None else self._call_span(s, call_id, tool)
            except Exception as exc:  # tracing must never break a tool call
                _log.warning("tracing the call %r failed: %s", call_id, exc, exc_info=exc)
                span = trace.INVALID_SPAN
        if span is None:
            span = self._start(f"execute_tool {tool}", None, {"gen_ai.tool.call.id": call_id})
            with trace.use_span(span, end_on_exit=True):
                yield span
            return
        with trace.use_span(span, end_on_exit=False):
            yield span

    @contextmanager
    def review(self, request: ReviewRequest) -> Iterator[_ReviewSpan]:
        """A plan review's span, as a child of the open turn's span, with the
        seq of the ``exit_plan_mode`` call it answers."""
        with self._lock:
            s = self._session()
            attributes: dict[str, str | int | Sequence[str]] = {"planfold.review.options": list(request.options)}
            parent = None
            if s is not None:
                attributes[SESSION_ID] = s.session_id
                attributes[TURN] = s.turn_number
                pending = next(iter(s.calls.items()), None)
                if pending is not None:
                    call_id, call = pending
                    attributes.update({SEQ: call.seq, "gen_ai.tool.call.id": call_id, "gen_ai.tool.name": call.tool})
                if s.turn is not None:
                    parent = trace.set_span_in_context(s.turn)
        span = self._start("planfold.review", parent, attributes)
        with trace.use_span(span, end_on_exit=True):
            marked = _ReviewSpan(span)
            try:
                yield marked
            except Exception:
                span.set_attribute(REVIEW_ANSWER, "channel-lost")
                span.set_attribute(REVIEW_APPROVED, False)
                raise


@dataclass(frozen=True, slots=True)
class _ReviewSpan:
    span: Span

    def answered(self, answer: A) -> A:
        """Record the human's answer (what the runtime will read it as) and
        hand it on."""
        if isinstance(answer, Selected):
            kind, approved = "selected", APPROVE in answer.options
            self.span.set_attribute("planfold.review.selected", [str(o) for o in answer.options])
        elif isinstance(answer, Custom):
            kind, approved = "custom", False
        elif isinstance(answer, Dismissed):
            kind, approved = "dismissed", False
        elif isinstance(answer, ChannelLost):
            kind, approved = "channel-lost", False
        else:
            kind, approved = "malformed", False
        self.span.set_attribute(REVIEW_ANSWER, kind)
        self.span.set_attribute(REVIEW_APPROVED, approved)
        return answer


def _error_code(output: str) -> str | None:
    """The ``code`` of a failed call's structured error output, if it has one."""
    try:
        body = json.loads(output)
    except ValueError:
        return None
    error = body.get("error") if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, str) else None


# --------------------------------------------------------------------------
# The wrappers


class TracedStore(ForwardingStore):
    """``inner`` with every accepted append shown to ``tracer`` (an
    idempotent retry that wrote nothing is not shown again). An append is
    handed on whole, its ``lease`` too, as every wrapper hands it
    (``base.AppendRequest``): the store below fences it, so a traced wrapper
    of a shared store fences too. ``follow`` and the goal lease operations
    pass through when ``inner`` is a ``SharedStore``; otherwise they raise
    ``InvalidRequestError``."""

    def __init__(self, inner: Store, tracer: SessionTracer) -> None:
        super().__init__(inner)
        self.tracer = tracer

    def append(self, request: AppendRequest) -> AppendResult:
        """The request handed on whole (a fenced one too: the store below fences it)."""
        result = self.inner.append(request)
        if not result.replayed:
            self.tracer.observe(request.session_id, request.events)
        return result

    def _shared(self, what: str) -> SharedStore:
        if not isinstance(self.inner, SharedStore):
            raise InvalidRequestError(f"{what} needs a shared store; {type(self.inner).__name__} is not one")
        return self.inner

    def follow(
        self, session_id: str, after_seq: int = 0, *, timeout: float | None = None
    ) -> Generator[Event, None, None]:
        return self._shared("following a session").follow(session_id, after_seq, timeout=timeout)

    def acquire_lease(self, session_id: str, holder: str, ttl_ms: int) -> Lease:
        return self._shared("a goal lease").acquire_lease(session_id, holder, ttl_ms)

    def release_lease(self, lease: Lease) -> bool:
        return self._shared("a goal lease").release_lease(lease)

    def lease(self, session_id: str) -> Lease | None:
        return self._shared("a goal lease").lease(session_id)


class TracedAsyncStore:
    """``TracedStore`` for an ``AsyncStore`` (``AsyncRuntime.open``): every
    accepted append is shown to ``tracer``; everything else is the inner
    store's, awaited. An append is handed on whole, its ``lease`` too (the
    store below fences it); ``follow`` and the goal lease operations pass
    through when ``inner`` is an ``AsyncSharedStore``; otherwise they raise
    ``InvalidRequestError``."""

    def __init__(self, inner: AsyncStore, tracer: SessionTracer) -> None:
        self.inner = inner
        self.tracer = tracer

    async def append(self, request: AppendRequest) -> AppendResult:
        """The request handed on whole (a fenced one too: the store below fences it)."""
        result = await self.inner.append(request)
        if not result.replayed:
            self.tracer.observe(request.session_id, request.events)
        return result

    def _shared(self, what: str) -> AsyncSharedStore:
        if not isinstance(self.inner, AsyncSharedStore):
            raise InvalidRequestError(f"{what} needs a shared store; {type(self.inner).__name__} is not one")
        return self.inner

    async def head(self, session_id: str) -> int:
        return await self.inner.head(session_id)

    async def read(self, session_id: str, after: int = 0) -> tuple[Event, ...]:
        return await self.inner.read(session_id, after)

    async def load(self, session_id: str, *, incremental: bool = False) -> SessionState:
        return await self.inner.load(session_id, incremental=incremental)

    async def projection(self, session_id: str) -> Projection:
        return await self.inner.projection(session_id)

    async def audit(self, session_id: str) -> AuditReport:
        return await self.inner.audit(session_id)

    async def session_ids(self) -> tuple[str, ...]:
        return await self.inner.session_ids()

    async def fork(self, source_session: str, at: int, new_session: str) -> ForkProvenance:
        return await self.inner.fork(source_session, at, new_session)

    async def provenance(self, session_id: str) -> ForkProvenance | None:
        return await self.inner.provenance(session_id)

    async def import_fork(
        self, session_id: str, events: Sequence[Event], provenance: ForkProvenance, idempotency_key: str | None = None
    ) -> AppendResult:
        return await self.inner.import_fork(session_id, events, provenance, idempotency_key)

    async def close(self) -> None:
        await self.inner.close()

    def follow(self, session_id: str, after_seq: int = 0, *, timeout: float | None = None) -> AsyncIterator[Event]:
        return self._shared("following a session").follow(session_id, after_seq, timeout=timeout)

    async def acquire_lease(self, session_id: str, holder: str, ttl_ms: int) -> Lease:
        return await self._shared("a goal lease").acquire_lease(session_id, holder, ttl_ms)

    async def release_lease(self, lease: Lease) -> bool:
        return await self._shared("a goal lease").release_lease(lease)

    async def lease(self, session_id: str) -> Lease | None:
        return await self._shared("a goal lease").lease(session_id)


class _Model:
    def __init__(self, inner: object, tracer: SessionTracer, request_model: str | None) -> None:
        self.inner = inner
        self.tracer = tracer
        named = getattr(inner, "model", None)
        self.request_model = request_model or (named if isinstance(named, str) else None)
        base_url = getattr(inner, "base_url", None)
        #: ``server.address`` and ``server.port`` of a client with a ``base_url``
        self.server: dict[str, str | int] = {}
        if isinstance(base_url, str):
            parts = urllib.parse.urlsplit(base_url)
            if parts.hostname:
                self.server["server.address"] = parts.hostname
                self.server["server.port"] = parts.port or (443 if parts.scheme == "https" else 80)
        budget = getattr(inner, "retry_budget", None)
        #: the client's retry budget, which the runtime shares (``RetryBudget``)
        self.retry_budget = budget if isinstance(budget, RetryBudget) else None


def _described(span: Span, response: ChatResponse) -> ChatResponse:
    """``response``, its GenAI attributes (those the server reported) set on ``span``."""
    if response.model:
        span.set_attribute("gen_ai.response.model", response.model)
    if response.finish_reason:
        span.set_attribute("gen_ai.response.finish_reasons", [response.finish_reason])
    usage = response.usage
    if usage is not None and usage.prompt_tokens is not None:
        span.set_attribute("gen_ai.usage.input_tokens", usage.prompt_tokens)
    if usage is not None and usage.completion_tokens is not None:
        span.set_attribute("gen_ai.usage.output_tokens", usage.completion_tokens)
    span.set_attribute("planfold.response.tool_calls", len(response.tool_calls))
    latency = getattr(response, "latency_ms", None)
    if isinstance(latency, int | float) and not isinstance(latency, bool):
        span.set_attribute("planfold.response.latency_ms", latency)
    if response.refusal is not None:
        span.add_event("planfold.model.refusal", {"gen_ai.response.finish_reasons": [response.finish_reason or ""]})
    return response


class TracedModel(_Model):
    """A ``ModelClient`` whose every call is a span (see ``SessionTracer.model_call``)."""

    inner: ModelClient

    def __init__(self, inner: ModelClient, tracer: SessionTracer, request_model: str | None = None) -> None:
        super().__init__(inner, tracer, request_model)

    def complete(self, request: ChatRequest) -> ChatResponse:
        with self.tracer.model_call(request, self.request_model, self.server) as span:
            return _described(span, self.inner.complete(request))


class TracedAsyncModel(_Model):
    """An ``AsyncModelClient`` whose every call is a span."""

    inner: AsyncModelClient

    def __init__(self, inner: AsyncModelClient, tracer: SessionTracer, request_model: str | None = None) -> None:
        super().__init__(inner, tracer, request_model)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        with self.tracer.model_call(request, self.request_model, self.server) as span:
            return _described(span, await self.inner.complete(request))


@dataclass
class TracedToolRunner(ToolRunner):
    """A ``ToolRunner`` that makes a call's span current while its executor
    runs (``tracer``: ``None`` runs them untraced)."""

    tracer: SessionTracer | None = None

    @classmethod
    def of(cls, runner: ToolRunner, tracer: SessionTracer) -> TracedToolRunner:
        """``runner``'s registry, policy, executors and resolver, traced."""
        traced = cls(**{f.name: getattr(runner, f.name) for f in fields(ToolRunner)}, tracer=tracer)
        tracer.runner = traced
        return traced

    def _span(self, call: ToolCall) -> AbstractContextManager[object]:
        """The call's span, current while its executor runs (nothing untraced)."""
        return nullcontext() if self.tracer is None else self.tracer.tool_call(call.id, call.name)

    def execute(self, call: ToolCall) -> tuple[bool, str]:
        with self._span(call):
            return super().execute(call)

    async def execute_async(self, call: ToolCall) -> tuple[bool, str]:
        with self._span(call):
            return await super().execute_async(call)


class _Review:
    """What both traced review ports share: the inner port, the tracer and
    the port's availability."""

    inner: ReviewPort | AsyncReviewPort

    def __init__(self, inner: ReviewPort | AsyncReviewPort, tracer: SessionTracer) -> None:
        self.inner = inner
        self.tracer = tracer

    @property
    def available(self) -> bool:
        return bool(self.inner.available)


class TracedReviewPort(_Review):
    """A ``ReviewPort`` whose every review is a span (see ``SessionTracer.review``)."""

    inner: ReviewPort

    def __init__(self, inner: ReviewPort, tracer: SessionTracer) -> None:
        super().__init__(inner, tracer)

    def review(self, request: ReviewRequest) -> ReviewAnswer:
        with self.tracer.review(request) as span:
            return span.answered(self.inner.review(request))


class TracedAsyncReviewPort(_Review):
    """An ``AsyncReviewPort`` whose every review is a span."""

    inner: AsyncReviewPort

    def __init__(self, inner: AsyncReviewPort, tracer: SessionTracer) -> None:
        super().__init__(inner, tracer)

    async def review(self, request: ReviewRequest) -> ReviewAnswer:
        with self.tracer.review(request) as span:
            return span.answered(await self.inner.review(request))


# --------------------------------------------------------------------------
# One call


@dataclass(frozen=True, slots=True)
class Instrumented(Generic[S, M, R]):
    """The traced parts to build a runtime on (``instrument``): the store,
    the model client, the tool runner and the review port (``None`` when
    none was given), all sharing ``tracer``."""

    store: S
    model: M
    tools: TracedToolRunner
    review: R | None
    tracer: SessionTracer


@overload
def instrument(
    store: AsyncStore,
    model: AsyncModelClient,
    tools: ToolRunner,
    review: AsyncReviewPort | ReviewPort | None = None,
    *,
    tracer_provider: TracerProvider | None = None,
    request_model: str | None = None,
) -> Instrumented[TracedAsyncStore, AsyncModelClient, AsyncReviewPort | ReviewPort]: ...


@overload
def instrument(
    store: Store,
    model: AsyncModelClient,
    tools: ToolRunner,
    review: AsyncReviewPort | ReviewPort | None = None,
    *,
    tracer_provider: TracerProvider | None = None,
    request_model: str | None = None,
) -> Instrumented[TracedStore, AsyncModelClient, AsyncReviewPort | ReviewPort]: ...


@overload
def instrument(
    store: Store,
    model: ModelClient,
    tools: ToolRunner,
    review: ReviewPort | None = None,
    *,
    tracer_provider: TracerProvider | None = None,
    request_model: str | None = None,
) -> Instrumented[TracedStore, ModelClient, ReviewPort]: ...


def instrument(
    store: Store | AsyncStore,
    model: ModelClient | AsyncModelClient,
    tools: ToolRunner,
    review: ReviewPort | AsyncReviewPort | None = None,
    *,
    tracer_provider: TracerProvider | None = None,
    request_model: str | None = None,
) -> Instrumented[Any, Any, Any]:
    """The parts a runtime is built on, traced (see the module doc): a
    ``Store`` for ``Runtime`` or ``AsyncRuntime``, an ``AsyncStore`` for
    ``AsyncRuntime.open``; an asyncio model client (``async def complete``)
    or review port stays one. ``tracer_provider`` makes the spans (by
    default the global provider); ``request_model`` names the model in the
    spans when the client has no ``model`` of its own
    (``gen_ai.request.model``)."""
    tracer = SessionTracer(trace.get_tracer("planfold", __version__, tracer_provider=tracer_provider))
    traced_store: TracedStore | TracedAsyncStore
    if inspect.iscoroutinefunction(store.append):
        traced_store = TracedAsyncStore(store, tracer)  # type: ignore[arg-type]
    else:
        traced_store = TracedStore(store, tracer)  # type: ignore[arg-type]
    runner = TracedToolRunner.of(tools, tracer)
    traced_review: TracedReviewPort | TracedAsyncReviewPort | None = None
    if review is not None:
        if inspect.iscoroutinefunction(review.review):
            traced_review = TracedAsyncReviewPort(review, tracer)  # type: ignore[arg-type]
        else:
            traced_review = TracedReviewPort(review, tracer)  # type: ignore[arg-type]
    traced_model: TracedModel | TracedAsyncModel
    if inspect.iscoroutinefunction(model.complete):
        traced_model = TracedAsyncModel(model, tracer, request_model)  # type: ignore[arg-type]
    else:
        traced_model = TracedModel(model, tracer, request_model)  # type: ignore[arg-type]
    return Instrumented(traced_store, traced_model, runner, traced_review, tracer)
