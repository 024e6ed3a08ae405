"""``planfold serve``: JSON-RPC 2.0 over standard input and output.

Theory of operation
-------------------
One request per line in, one response per line out (UTF-8 JSON, no line
breaks inside); logs go to standard error only. Requests are answered in
order, one at a time; a batch (a JSON array) gets one array of responses.
A notification (no ``id``) is carried out and not answered, as JSON-RPC
says.

``handle`` never raises and never lets bad input end the server: a line that
is not JSON (or is nested deeper than ``MAX_DEPTH``, or holds a number no
JSON reader here can hold) is a parse error; a line longer than ``MAX_LINE``
bytes is skipped to its end and answered as an invalid request; a request of
the wrong shape, an unknown method and params that do not match the method's
params type (a wrong type, a missing or an unknown key) get the standard
errors. Every refusal of planfold's is an error whose ``data`` carries the
stable kebab-case ``code`` (and ``rule``, ``position`` and ``detail`` when
the log would be broken). A bug is an internal error, logged with its
traceback; the session it happened in is left as it was before the request
(every operation is atomic, see ``adapters.serve.host``). End of input ends
the server with status 0.

Sessions are opened by ``session/open`` and live until ``session/close`` or
the end of the process; any number may be open at once. Their logs are in
one store (``--db``), which other processes may share: a write that lost the
race to another writer is a ``conflict`` error and changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO

import cattrs
import msgspec

from ...kernel.errors import ConflictError, PlanfoldError, ReplayError
from ...kernel.goal.ops import GoalRequest
from ...kernel.plan.context import PromptParts
from ...kernel.plan.review import ChannelLost, Custom, Dismissed, ReviewAnswer, Selected, load_plan_policy
from ...kernel.tools.gate import DeploymentRule, GatePolicy
from ...kernel.tools.spec import ToolSpec
from ..llm import model
from ..loggers import logger
from ..runtime.machine import OutOfOrderError
from ..runtime.prompt import PromptConfig
from ..store.base import AppendRejectedError, Store
from ..store.session_log import Clock, LogSealedError
from ..structuring import exact_converter, problems
from . import protocol as p
from .errors import ServeError
from .host import HostConfig, HostSession
from .openrpc import openrpc_document

__all__ = ["MAX_DEPTH", "MAX_LINE", "Server", "SessionNotOpenError"]

#: The longest request line read; a longer one is skipped and refused.
MAX_LINE = 16 * 1024 * 1024
#: The deepest nesting of arrays and objects a request may have.
MAX_DEPTH = 160

log = logger(__name__)

Handler = Callable[[Any], object]


class SessionNotOpenError(ServeError):
    """The session is not open in this process (``session/open`` it first)."""

    code = "session-not-open"


class _RpcError(Exception):
    """A JSON-RPC error to answer with."""

    def __init__(self, code: int, message: str, data: dict[str, object]) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def _too_deep(value: object, limit: int) -> bool:
    """Whether ``value`` nests arrays and objects deeper than ``limit``."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _longest_text(value: object) -> int:
    """The length of the longest string in ``value`` (keys included): every
    method takes texts up to the same cap."""
    longest, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            longest = max(longest, len(item))
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return longest


#: Params are structured into the protocol's dataclasses by the exact
#: converter that structures snapshots and scripts too (``adapters.structuring``:
#: no coercion, the ``msgspec.Meta`` limits the OpenRPC document states
#: enforced). It lets an object carry unknown keys, which ``_unknown_key``
#: then names, after the type checks and the cap on texts.
_PARAMS = exact_converter(forbid_extra_keys=False)


def _structured(params: dict[str, Any], tp: type) -> object:
    """``params`` as a ``tp``; ``-32602`` naming every problem with its path,
    or the message of a kernel value's own refusal (``GoalRef`` …)."""
    try:
        return _PARAMS.structure(params, tp)
    except PlanfoldError as exc:
        raise _standard(-32602, exc.message, "invalid-params") from exc
    except (cattrs.BaseValidationError, TypeError, ValueError) as exc:
        refusal = _kernel_refusal(exc)
        if refusal is not None:
            raise _standard(-32602, refusal.message, "invalid-params") from exc
        raise _standard(-32602, "; ".join(problems(exc, "$")), "invalid-params") from exc


def _kernel_refusal(exc: BaseException) -> PlanfoldError | None:
    """The first kernel value's refusal among the problems of ``exc``."""
    if isinstance(exc, PlanfoldError):
        return exc
    for inner in getattr(exc, "exceptions", ()):
        found = _kernel_refusal(inner)
        if found is not None:
            return found
    return None


def _unknown_key(raw: object, typed: object, path: str = "$") -> str | None:
    """The first key of ``raw`` that the structured value ``typed`` (as
    plain data) does not have."""
    if isinstance(raw, dict) and isinstance(typed, dict):
        for key, value in raw.items():
            where = f"{path}.{key}"
            if key not in typed:
                return where
            found = _unknown_key(value, typed[key], where)
            if found is not None:
                return found
    elif isinstance(raw, list) and isinstance(typed, list) and len(raw) == len(typed):
        for index, (value, kept) in enumerate(zip(raw, typed, strict=True)):
            found = _unknown_key(value, kept, f"{path}[{index}]")
            if found is not None:
                return found
    return None


def _context(exc: PlanfoldError) -> dict[str, object]:
    """An error's own attributes that are plain data (for ``data``)."""
    out: dict[str, object] = {}
    for name, value in sorted(vars(exc).items()):
        if name in ("message", "code") or name.startswith("_"):
            continue
        try:
            out[name] = msgspec.to_builtins(value)
        except (TypeError, ValueError):
            continue
    return out


def error_for(exc: PlanfoldError) -> _RpcError:
    """The JSON-RPC error a planfold refusal is answered with."""
    data: dict[str, object] = {"code": exc.code, "detail": exc.message, **_context(exc)}
    if isinstance(exc, ReplayError | AppendRejectedError):
        return _RpcError(-32001, exc.message, data)
    if isinstance(exc, ConflictError):
        return _RpcError(-32002, exc.message, data)
    if isinstance(exc, LogSealedError):
        data["stage"] = "execute"
        return _RpcError(-32003, exc.message, data)
    if isinstance(exc, OutOfOrderError | SessionNotOpenError):
        return _RpcError(-32003, exc.message, data)
    return _RpcError(-32000, exc.message, data)


def _standard(code: int, detail: str, planfold_code: str) -> _RpcError:
    return _RpcError(code, p.JSONRPC_ERRORS[code][0], {"code": planfold_code, "detail": detail})


# --------------------------------------------------------------------------
# Params into kernel values


def _tool_spec(decl: p.ToolDecl) -> ToolSpec:
    return ToolSpec(
        decl.name, decl.description, decl.parameters, effect=decl.effect, origin=decl.origin,
        read_only_hint=decl.read_only_hint, category=decl.category, target_args=decl.target_args,
    )


def _policy(gate: p.GateConfig) -> GatePolicy:
    rules = tuple(
        DeploymentRule(r.action, r.pattern, None if r.phases is None else frozenset(r.phases)) for r in gate.rules
    )
    return GatePolicy(gate.catalog, gate.enforcement, rules, gate.default_action)


def _prompt(prompt: p.PromptConfigParams) -> PromptConfig:
    policy = None if prompt.plan_policy is None else load_plan_policy({"section": prompt.plan_policy})
    return PromptConfig(PromptParts(prompt.base, prompt.plan_overlay, prompt.build_overlay), policy)


def _tool_call(call: p.ModelToolCall) -> model.ToolCall:
    """The call as the model port sees it: decoded from its raw text, as a
    model client does (depth, Unicode and shape problems are kept for the
    gate to refuse)."""
    if call.arguments_json is not None:
        if call.arguments is not None:
            raise _standard(-32602, f"call {call.id!r}: give arguments or arguments_json, not both", "invalid-params")
        return model.ToolCall.parse(call.id, call.name, call.arguments_json)
    raw = "{}" if call.arguments is None else json.dumps(call.arguments, ensure_ascii=False)
    return model.ToolCall.parse(call.id, call.name, raw)


def _response(params: p.ReplyParams) -> model.ChatResponse:
    calls = tuple(_tool_call(c) for c in params.tool_calls)
    return model.ChatResponse(params.text, calls, params.finish_reason, refusal=params.refusal)


def _answer(params: p.ReviewAnswerParams) -> ReviewAnswer:
    if params.answer == "selected":
        return Selected(params.options, params.text or "")
    if params.answer == "custom":
        if params.text is None:
            raise _standard(-32602, "a custom answer needs its text", "invalid-params")
        return Custom(params.text)
    return Dismissed() if params.answer == "dismissed" else ChannelLost()


# --------------------------------------------------------------------------
# The server


class Server:
    """Every open session of one store, and the JSON-RPC dispatch."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.sessions: dict[str, HostSession] = {}
        self.handlers: Mapping[str, Handler] = {
            "session/open": self._open,
            "session/read": lambda q: self._session(q.session).info(),
            "session/close": self._close,
            "session/fork": lambda q: self._session(q.session).fork(q.new_session, at=q.at, turn=q.turn),
            "user/choose": lambda q: self._session(q.session).choose(q.active),
            "user/command": lambda q: self._session(q.session).command(q.text, q.attachments),
            "turn/start": lambda q: self._session(q.session).start_turn(q.text, goal_round=q.goal_round, view=q.view),
            "step/begin": lambda q: self._session(q.session).begin_step(q.step, q.verdict),
            "step/context": lambda q: self._session(q.session).context(q.conversation),
            "step/reply": lambda q: self._session(q.session).reply(_response(q)),
            "tool/dispatch": lambda q: self._session(q.session).dispatch(
                q.call_id, review_available=q.review_available
            ),
            "tool/result": lambda q: self._session(q.session).tool_result(q.call_id, q.ok, q.output),
            "review/answer": lambda q: self._session(q.session).review_answer(q.call_id, _answer(q)),
            "turn/end": lambda q: self._session(q.session).end_turn(),
            "goal/create": lambda q: self._session(q.session).goals.goal(
                GoalRequest("create", "user", goal_id=q.goal_id or "", objective=q.objective, max_rounds=q.max_rounds)
            ),
            "goal/edit": lambda q: self._session(q.session).goals.goal(
                GoalRequest("edit", "user", q.ref, objective=q.objective, max_rounds=q.max_rounds)
            ),
            "goal/pause": lambda q: self._session(q.session).goals.goal(GoalRequest("pause", "user", q.ref)),
            "goal/resume": lambda q: self._session(q.session).goals.goal(GoalRequest("resume", "user", q.ref)),
            "goal/complete": lambda q: self._session(q.session).goals.goal(GoalRequest("complete", "user", q.ref)),
            "goal/block": lambda q: self._session(q.session).goals.goal(
                GoalRequest("block", "user", q.ref, reason=q.reason)
            ),
            "goal/clear": lambda q: self._session(q.session).goals.goal(GoalRequest("clear", "user", q.ref)),
            "goal/should_continue": lambda q: self._session(q.session).goals.should_continue(),
            "events/append": lambda q: self._session(q.session).append_events(
                [(e.kind, e.payload) for e in q.events]
            ),
        }
        missing = set(p.METHODS) ^ set(self.handlers)
        if missing:
            raise AssertionError(f"methods and handlers differ: {sorted(missing)}")

    # -- sessions -----------------------------------------------------------

    def _session(self, session_id: str) -> HostSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise SessionNotOpenError(f"session {session_id!r} is not open here; call session/open first")
        return session

    def _open(self, params: p.SessionOpenParams) -> p.SessionInfo:
        if params.session in self.sessions:
            raise OutOfOrderError(
                f"session {params.session!r} is already open here (session/close it to open it again)",
                self.sessions[params.session].stage,
                code="session-open",
            )
        tools = tuple(_tool_spec(t) for t in params.tools)
        config = HostConfig(tools, _policy(params.gate), _prompt(params.prompt), params.max_tool_calls)
        session = HostSession(self.store, params.session, self.clock, config)
        self.sessions[params.session] = session
        return session.info()

    def _close(self, params: p.SessionParams) -> p.SessionClosed:
        session = self._session(params.session)
        del self.sessions[params.session]
        return p.SessionClosed(params.session, session.log.last_seq)

    # -- JSON-RPC -------------------------------------------------------------

    def handle(self, line: bytes) -> bytes | None:
        """The response line (without its newline) for one request line, or
        ``None`` when nothing is to be answered (notifications, blank lines).
        Never raises."""
        if not line.strip():
            return None
        try:
            message = msgspec.json.decode(line)
            if _too_deep(message, MAX_DEPTH):
                raise _standard(-32700, f"the request nests deeper than {MAX_DEPTH} levels", "too-deep")
        except _RpcError as exc:
            return self._encode(_error(None, exc))
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as exc:
            return self._encode(_error(None, _standard(-32700, str(exc), "parse-error")))
        if isinstance(message, list):
            if not message:
                return self._encode(_error(None, _standard(-32600, "an empty batch", "invalid-request")))
            answers = [answer for answer in map(self._one, message) if answer is not None]
            return self._encode(answers) if answers else None
        answer = self._one(message)
        return None if answer is None else self._encode(answer)

    def _encode(self, answer: object) -> bytes:
        try:
            return msgspec.json.encode(answer)
        except Exception as exc:  # a result that cannot be written is a bug, never a crash
            log.exception("cannot encode a response")
            rid = answer.get("id") if isinstance(answer, dict) else None
            error = _RpcError(-32603, "Internal error", {"code": "internal-error", "detail": str(exc)})
            return msgspec.json.encode(_error(rid, error))

    def _one(self, message: object) -> dict[str, object] | None:
        if not isinstance(message, dict):
            return _error(None, _standard(-32600, "a request must be a JSON object", "invalid-request"))
        rid = message.get("id")
        if isinstance(rid, bool) or not isinstance(rid, int | str | None):
            return _error(None, _standard(-32600, "id must be a string, an integer or null", "invalid-request"))
        problem = _envelope_problem(message)
        if problem is not None:
            return _error(rid, _standard(-32600, problem, "invalid-request"))
        notification = "id" not in message
        method = str(message["method"])
        try:
            result = self._call(method, message.get("params", {}))
        except _RpcError as exc:
            log.debug("%s: error %s [%s]", method, exc.code, exc.data.get("code"))
            return None if notification else _error(rid, exc)
        log.debug("%s: ok", method)
        if notification:
            return None
        return {"jsonrpc": "2.0", "id": rid, "result": result}

    def _call(self, method: str, params: object) -> object:
        if method == "rpc.discover":
            return openrpc_document()
        spec = p.METHODS.get(method)
        if spec is None:
            raise _standard(-32601, f"no method {method!r}", "method-not-found")
        if not isinstance(params, dict):
            raise _standard(-32602, "params must be an object (by name)", "invalid-params")
        typed = _structured(params, spec.params)
        long = _longest_text(params)
        if long > p.MAX_TEXT:
            raise _standard(-32602, f"a text of {long} characters is longer than {p.MAX_TEXT}", "invalid-params")
        unknown = _unknown_key(params, _PARAMS.unstructure(typed))
        if unknown is not None:
            raise _standard(-32602, f"unknown key {unknown}", "invalid-params")
        try:
            return self.handlers[method](typed)
        except _RpcError:
            raise
        except PlanfoldError as exc:
            raise error_for(exc) from exc
        except Exception as exc:
            log.exception("internal error in %s", method)
            raise _RpcError(-32603, "Internal error", {"code": "internal-error", "detail": repr(exc)}) from exc

    def serve(self, reader: BinaryIO, writer: BinaryIO) -> int:
        """Answer requests from ``reader`` on ``writer`` until end of input;
        returns the exit status (0)."""
        while True:
            line = reader.readline(MAX_LINE + 1)
            if not line:
                return 0
            if len(line) > MAX_LINE and not line.endswith(b"\n"):
                while (rest := reader.readline(MAX_LINE + 1)) and not rest.endswith(b"\n"):
                    pass
                error = _standard(-32600, f"a request line is longer than {MAX_LINE} bytes", "request-too-large")
                answer: bytes | None = self._encode(_error(None, error))
            else:
                answer = self.handle(line)
            if answer is not None:
                try:
                    writer.write(answer + b"\n")
                    writer.flush()
                except BrokenPipeError:
                    log.info("the host closed its end; stopping")
                    return 0


def _envelope_problem(message: dict[str, object]) -> str | None:
    if message.get("jsonrpc") != "2.0":
        return 'jsonrpc must be "2.0"'
    if not isinstance(message.get("method"), str):
        return "method must be a string"
    extra = sorted(set(message) - {"jsonrpc", "id", "method", "params"})
    if extra:
        return f"unknown member(s) {extra}"
    return None


def _error(rid: object, error: _RpcError) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": error.code, "message": error.message, "data": error.data}}
