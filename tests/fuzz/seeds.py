"""Valid inputs the fuzz strategies start from and mutate.

The session logs are written by the kernel's own producers (goal operations,
plan payload writers), so they stay valid as the payload formats evolve; a
test checks that every seed log folds cleanly.
"""

from __future__ import annotations

from planfold.kernel.goal.continuation import budget_block, round_message
from planfold.kernel.goal.fold import fold_goal
from planfold.kernel.goal.ops import clear, complete, create, edit, pause, resume
from planfold.kernel.goal.values import DISARMED, GoalRef
from planfold.kernel.log import (
    ASSISTANT_MESSAGE,
    PLAN_ARTIFACT,
    PLAN_MODE,
    REQUEST_HEADER,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
    Draft,
    Event,
    number_drafts,
)
from planfold.kernel.payload import JSON
from planfold.kernel.plan.artifact import PlanRef
from planfold.kernel.plan.payload import PlanAction, plan_action_payload
from planfold.kernel.plan.spec import PlanSpec, Todo, spec_hash
from planfold.kernel.plan.spec_json import decode_exit_plan_args
from planfold.kernel.plan.views import build_summary_view
from planfold.kernel.plan_events import (
    approve_event,
    exit_plan_events,
    realign_event,
    reject_event,
    start_event,
    update_plan_events,
)
from planfold.kernel.session import SessionState, fold_session
from tests.plan_mode_helpers import choice_events

__all__ = [
    "EXIT_PLAN_ARGS",
    "LOG_KEYS",
    "PLAN_SPEC_KEYS",
    "SEED_LOGS",
    "event_record",
    "seed_logs",
]

SPEC = PlanSpec(
    goal="Make the importer reject duplicate rows",
    steps=("Read the importer", "Add the duplicate check", "Run the tests"),
    constraints=("Keep the public API",),
    verify=("make test",),
    todos=(Todo("t1", "Add the check"), Todo("t2", "Add a regression test")),
)

#: Valid ``exit_plan_mode`` arguments: a spec, with and without a candidate.
EXIT_PLAN_ARGS: tuple[dict[str, JSON], ...] = (
    {
        "plan_spec": {
            "goal": "Make the importer reject duplicate rows",
            "steps": ["Read the importer", "Add the duplicate check"],
            "verify": ["make test"],
            "todos": [{"id": "t1", "text": "Add the check"}, {"id": "t2", "text": "Test it", "status": "pending"}],
            "constraints": ["Keep the public API"],
            "open_questions": ["Which rows count as equal?", {"text": "Ask the owner?", "blocking": False}],
            "scope": {"paths": ["src/importer.py"], "effects": ["write"]},
        },
        "summary_candidate": {
            "goal": "Reject duplicate rows",
            "key_steps": ["Add the duplicate check"],
            "constraints": ["Keep the public API"],
            "verify": ["make test"],
            "active_todo_ids": ["t1", "t2"],
        },
    },
    {
        "plan_spec": {
            "goal": "Fix the flaky test",
            "steps": ["Reproduce it"],
            "verify": ["pytest -x"],
            "todos": [{"id": "a", "text": "Reproduce"}],
        }
    },
)

#: Field names the plan decoder knows, for the mutators to reuse.
PLAN_SPEC_KEYS: tuple[str, ...] = (
    "plan_spec",
    "summary_candidate",
    "goal",
    "steps",
    "verify",
    "todos",
    "constraints",
    "open_questions",
    "scope",
    "paths",
    "effects",
    "id",
    "text",
    "status",
    "blocking",
    "key_steps",
    "active_todo_ids",
)


def _draft(plan_id: str, action: str = "draft", revision: int = 1, spec: PlanSpec = SPEC) -> dict[str, JSON]:
    return plan_action_payload(
        PlanAction(
            action,  # type: ignore[arg-type]
            plan_id,
            revision,
            spec=spec,
            summary=build_summary_view(spec),
            summary_source="runtime",
        )
    )


def _ref(action: str, plan_id: str, revision: int = 1, **extra: JSON) -> dict[str, JSON]:
    return {"action": action, "plan_id": plan_id, "revision": revision, **extra}


class _Log:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.turn = 0

    def add(self, kind: str, payload: dict[str, JSON]) -> None:
        self.events.append(Event(len(self.events) + 1, kind, 1000 + 10 * len(self.events), payload))

    def turn_start(self) -> None:
        self.turn += 1
        self.add(TURN_START, {"turn": self.turn})

    def turn_end(self) -> None:
        self.add(TURN_END, {"turn": self.turn})

    def next_seq(self) -> tuple[int, int]:
        return len(self.events) + 1, 1000 + 10 * len(self.events)


def _plan_session() -> list[Event]:
    """Plan mode, a draft, its approval, then execution through verify."""
    log = _Log()
    log.turn_start()
    log.add(USER_MESSAGE, {"text": "/plan fix the importer", "source": None})
    log.add(PLAN_MODE, {"active": True})
    log.add(REQUEST_HEADER, {"turn": 1, "step": 1, "plan_mode": True})
    log.add(ASSISTANT_MESSAGE, {"text": "Here is the plan.", "source": None})
    log.add(PLAN_ARTIFACT, _draft("p1"))
    log.add(PLAN_ARTIFACT, _ref("approve", "p1", spec_hash=spec_hash(SPEC)))
    log.add(PLAN_MODE, {"active": False})
    log.add(REQUEST_HEADER, {"turn": 1, "step": 2, "plan_mode": False})
    log.add(PLAN_ARTIFACT, _ref("start", "p1", spec_hash=spec_hash(SPEC)))
    log.add(PLAN_ARTIFACT, _ref("todo", "p1", todo_id="t1", status="done"))
    log.add(PLAN_ARTIFACT, _ref("verify", "p1"))
    log.add(PLAN_ARTIFACT, _ref("verify-fail", "p1", note="a test failed"))
    log.add(PLAN_ARTIFACT, _ref("verify", "p1"))
    log.add(PLAN_ARTIFACT, _ref("complete", "p1"))
    log.turn_end()
    return log.events


def _bootstrap_session() -> list[Event]:
    """Build mode: an implicit plan, a rewrite, a supersede."""
    log = _Log()
    log.turn_start()
    log.add(REQUEST_HEADER, {"turn": 1, "step": 1, "plan_mode": False})
    log.add(PLAN_ARTIFACT, _draft("b1", "bootstrap"))
    changed = PlanSpec(SPEC.goal, (*SPEC.steps, "Write the changelog"), SPEC.constraints, SPEC.verify, SPEC.todos)
    log.add(PLAN_ARTIFACT, _draft("b1", "rewrite", 2, changed))
    log.add(PLAN_ARTIFACT, _ref("supersede", "b1", 2, note=None))
    log.add(REQUEST_HEADER, {"turn": 1, "step": 2, "plan_mode": False})
    log.turn_end()
    return log.events


def _goal_session() -> list[Event]:
    """A goal created, two rounds, paused and resumed, with a plugin notice."""
    log = _Log()
    log.turn_start()
    seq, at = log.next_seq()
    created = create(fold_goal(log.events), "g1", "Ship the importer", 3, actor="user", at=at)
    log.events.append(created.numbered(seq, at))
    for _ in range(2):
        seq, at = log.next_seq()
        log.events.append(round_message(fold_goal(log.events), "continue").numbered(seq, at))
        log.add(REQUEST_HEADER, {"turn": 1, "step": 1 if _ == 0 else 2, "plan_mode": False})
    log.add(USER_MESSAGE, {"text": "note", "source": {"type": "plugin", "plugin": "lint"}})
    seq, at = log.next_seq()
    state = fold_goal(log.events)
    assert state.current is not None
    log.events.append(pause(state, state.current.ref, actor="user", at=at).numbered(seq, at))
    seq, at = log.next_seq()
    state = fold_goal(log.events)
    assert state.current is not None
    log.events.append(resume(state, state.current.ref, DISARMED, actor="user", at=at).numbered(seq, at))
    log.turn_end()
    return log.events


def _lifecycle_session() -> list[Event]:
    """A plan rejected, rewritten, approved, started and realigned, and a
    goal that spends its budget, is blocked, edited, resumed, completed and
    cleared, all written by the kernel's own event producers."""
    log = _Log()

    def add(*drafts: Draft) -> None:
        log.events.extend(number_drafts(drafts, len(log.events), log.next_seq()[1]))

    def state() -> SessionState:
        return fold_session(log.events)

    def plan_ref() -> PlanRef:
        current = state().plan.current
        assert current is not None
        return current.ref

    def goal_ref() -> GoalRef:
        current = state().goal.current
        assert current is not None
        return current.ref

    log.turn_start()
    log.events.extend(choice_events(log.events, True, log.next_seq()[1]))
    log.add(REQUEST_HEADER, {"turn": 1, "step": 1, "plan_mode": True})
    args = decode_exit_plan_args(EXIT_PLAN_ARGS[0])
    add(*exit_plan_events(state(), args, "p1"))
    add(reject_event(state(), plan_ref(), "say which rows"))
    changed = PlanSpec(args.spec.goal, (*args.spec.steps, "Compare whole rows"), (), args.spec.verify, args.spec.todos)
    add(*update_plan_events(state(), changed, None))
    add(approve_event(state(), plan_ref()))
    log.events.extend(choice_events(log.events, False, log.next_seq()[1]))
    log.add(REQUEST_HEADER, {"turn": 1, "step": 2, "plan_mode": False})
    add(start_event(state(), plan_ref()))
    add(realign_event(state(), "an edit left the scope"))
    seq, at = log.next_seq()
    log.events.append(create(state().goal, "g1", "Ship the importer", 1, actor="user", at=at).numbered(seq, at))
    seq, at = log.next_seq()
    log.events.append(round_message(state().goal, "continue").numbered(seq, at))
    seq, at = log.next_seq()
    blocked = budget_block(state().goal, at=at)
    assert blocked is not None
    log.events.append(blocked.numbered(seq, at))
    seq, at = log.next_seq()
    log.events.append(edit(state().goal, goal_ref(), max_rounds=3, actor="user", at=at).numbered(seq, at))
    seq, at = log.next_seq()
    log.events.append(resume(state().goal, goal_ref(), DISARMED, actor="user", at=at).numbered(seq, at))
    seq, at = log.next_seq()
    log.events.append(complete(state().goal, goal_ref(), actor="model", at=at).numbered(seq, at))
    seq, at = log.next_seq()
    log.events.append(clear(state().goal, goal_ref(), actor="user", at=at).numbered(seq, at))
    log.turn_end()
    return log.events


def seed_logs() -> tuple[list[Event], ...]:
    """Fresh copies of the valid seed logs."""
    return (_plan_session(), _bootstrap_session(), _goal_session(), _lifecycle_session())


def event_record(event: Event) -> dict[str, JSON]:
    """The JSON object a log line holds for ``event``."""
    return {"seq": event.seq, "kind": event.kind, "at": event.at, "payload": dict(event.payload)}


#: The seed logs as JSON values (a list of event records each).
SEED_LOGS: tuple[list[dict[str, JSON]], ...] = tuple(
    [event_record(event) for event in log] for log in seed_logs()
)

#: Field names a log holds, for the mutators to reuse.
LOG_KEYS: tuple[str, ...] = (
    "seq",
    "kind",
    "at",
    "payload",
    "turn",
    "step",
    "plan_mode",
    "active",
    "text",
    "source",
    "type",
    "plugin",
    "goal_id",
    "revision",
    "round",
    "action",
    "plan_id",
    "spec",
    "summary",
    "spec_hash",
    "todo_id",
    "status",
    "note",
    "operation",
    "goal",
    "id",
    "objective",
    "phase",
    "max_rounds",
    TURN_START,
    REQUEST_HEADER,
    PLAN_MODE,
    PLAN_ARTIFACT,
    USER_MESSAGE,
)
