"""Execution, todo progress and verification through the real runtime loop,
driven by Hypothesis against a small model of the rules.

The session starts with an approved three-todo plan executing. Each rule is
one whole turn: the model (a queue the rule fills; a plain "ok" when empty)
reports a todo's status, reports a verification, or just replies. The model
written from the rules says what the runtime must record: a todo change is
refused for an unknown id or an unchanged status, and refreshes the summary
exactly when the set of open todos changes; a plain reply ends execution
(``verify``) only when no todo is open; ``report_verification`` is offered
only in verify, where it completes the plan or sends it back to execution.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field

from hypothesis import note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from planfold.adapters.llm.model import ChatRequest, ChatResponse
from planfold.adapters.runtime.review import ScriptedReviewer, approve
from planfold.adapters.runtime.toolset import open_runtime
from planfold.adapters.runtime.workspace import Workspace
from planfold.adapters.store.memory import MemoryStore
from planfold.kernel.payload import JSON
from planfold.kernel.plan.context import runtime_phase
from planfold.kernel.plan.spec import TODO_STATUSES, spec_hash
from planfold.kernel.session import fold_session
from tests.runtime_helpers import FILES, SPEC, exit_plan, say, ticking, todo, verified

TODOS = ("t1", "t2", "t3")
SPEC_THREE: dict[str, JSON] = {**SPEC, "todos": [{"id": t, "text": f"do {t}"} for t in TODOS]}
OPEN = ("pending", "in_progress")


@dataclass
class QueueModel:
    """Answers with the queued replies, then a plain "ok"."""

    queue: deque[ChatResponse] = field(default_factory=deque)
    requests: list[ChatRequest] = field(default_factory=list)

    def complete(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        return self.queue.popleft() if self.queue else say("ok")


@dataclass
class Model:
    statuses: dict[str, str] = field(default_factory=lambda: dict.fromkeys(TODOS, "pending"))
    verifying: bool = False
    completed: bool = False
    failures: int = 0

    def open(self) -> tuple[str, ...]:
        return tuple(t for t in TODOS if self.statuses[t] in OPEN)

    def phase(self) -> str:
        if self.completed:
            return "build_bootstrap"
        return "verify" if self.verifying else "build_execute"

    def stop(self) -> None:
        """The model ended a step without tool calls."""
        if not self.completed and not self.verifying and not self.open():
            self.verifying = True


class ExecutionMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.client = QueueModel()
        self.session = open_runtime(
            MemoryStore(),
            "exec",
            self.client,
            ScriptedReviewer.of([approve()]),
            Workspace(dict(FILES)),
            clock=ticking(),
        )
        self.session.runtime.submit("/plan")
        self.client.queue.append(exit_plan(SPEC_THREE, None))
        self.session.runtime.run_turn("Plan the work")
        self.model = Model()
        state = self.session.log.state
        assert state.plan.status == "executing" and state.plan.current is not None
        self.hash = spec_hash(state.plan.current.spec)

    def turn(self, reply: ChatResponse | None) -> list[dict[str, object]]:
        """One turn; the answers (results and refusals) it recorded."""
        if reply is not None:
            self.client.queue.append(reply)
        first = self.session.log.last_seq + 1
        report = self.session.runtime.run_turn("Go on")
        assert report.error is None, report.error
        answers = []
        for event in self.session.log.events[first - 1 :]:
            if event.kind == "tool/result":
                answers.append({"ok": event.payload["ok"], **json.loads(str(event.payload["output"]))})
            elif event.kind == "tool/refused":
                answers.append({"refused": event.payload["code"]})
        return answers

    @rule(todo_id=st.sampled_from((*TODOS, "t9")), status=st.sampled_from(TODO_STATUSES))
    def update_todo(self, todo_id: str, status: str) -> None:
        m = self.model
        note(f"update_todo {todo_id} -> {status} (phase {m.phase()}, todos {m.statuses})")
        [answer] = self.turn(todo(todo_id, status))
        if m.completed:
            assert answer == {"refused": "not-offered"}
        elif todo_id not in m.statuses:
            assert answer["ok"] is False and answer["error"]["code"] == "unknown-todo"  # type: ignore[index]
        elif m.statuses[todo_id] == status:
            assert answer["ok"] is False and answer["error"]["code"] == "todo-unchanged"  # type: ignore[index]
        else:
            before = m.open()
            m.statuses[todo_id] = status
            assert answer["ok"] is True
            assert answer["summary_refreshed"] is (before != m.open())
            assert answer["open_todos"] == list(m.open())
        m.stop()

    @rule(passed=st.booleans())
    def report_verification(self, passed: bool) -> None:
        m = self.model
        note(f"report_verification passed={passed} (phase {m.phase()})")
        [answer] = self.turn(verified(passed, "checked the verify list"))
        if not m.verifying:
            assert answer == {"refused": "not-offered"}
        elif passed:
            assert answer["ok"] is True and answer["status"] == "completed"
            m.verifying, m.completed = False, True
        else:
            assert answer["ok"] is True and answer["status"] == "executing"
            m.verifying, m.failures = False, m.failures + 1
        m.stop()

    @precondition(lambda self: not self.model.completed)
    @rule()
    def plain_reply(self) -> None:
        note(f"a plain reply (phase {self.model.phase()}, open {self.model.open()})")
        assert self.turn(None) == []
        self.model.stop()

    @invariant()
    def replay_gives_the_same_state(self) -> None:
        assert fold_session(self.session.log.events) == self.session.log.state

    @invariant()
    def the_phase_is_the_models(self) -> None:
        assert runtime_phase(self.session.log.state) == self.model.phase()
        assert self.session.log.state.plan.verifying == self.model.verifying

    @invariant()
    def progress_is_not_content(self) -> None:
        cur = self.session.log.state.plan.current
        assert cur is not None and cur.revision == 1 and spec_hash(cur.spec) == self.hash
        assert {t.id: t.status for t in cur.spec.todos} == self.model.statuses

    @invariant()
    def the_summary_names_exactly_the_open_todos(self) -> None:
        cur = self.session.log.state.plan.current
        assert cur is not None
        # the summary started with every todo open and follows each key change
        assert cur.summary.active_todo_ids == self.model.open()

    @invariant()
    def every_failed_verification_is_recorded(self) -> None:
        assert self.session.log.state.plan.verify_failures == self.model.failures
        fails = [e for e in self.session.log.events if e.payload.get("action") == "verify-fail"]
        assert len(fails) == self.model.failures


# Each step runs whole turns: fewer examples and steps than the profile's
# (the ci and fuzz profiles still scale them up to these caps).
_PROFILE = settings.default or settings()
ExecutionMachine.TestCase.settings = settings(
    max_examples=min(_PROFILE.max_examples, 40),
    stateful_step_count=min(_PROFILE.stateful_step_count, 15),
)
test_execution_machine = ExecutionMachine.TestCase
