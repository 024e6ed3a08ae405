"""Strategies and small log builders shared by the plan tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from planfold.kernel.log import (
    ASSISTANT_MESSAGE,
    PLAN_MODE,
    REQUEST_HEADER,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
    Draft,
    Event,
)
from planfold.kernel.plan.artifact import PlanRef
from planfold.kernel.plan.spec import TODO_STATUSES, OpenQuestion, PlanScope, PlanSpec, Todo
from planfold.kernel.plan.spec_json import spec_to_json, summary_to_json
from planfold.kernel.plan.views import build_summary_view
from planfold.kernel.plan_events import approve_event, draft_event, start_event
from planfold.kernel.session import SessionState, apply_session_event

# Short readable words keep failures legible; blank-only text is never drawn
# where a value must not be blank.
words = st.text(alphabet="abcdefghij XYZ-_.é中", min_size=1, max_size=12).filter(lambda s: s.strip() != "")
todo_ids = st.text(alphabet="abcdef0123 ", min_size=1, max_size=4).filter(lambda s: s.strip() != "")


@st.composite
def todos(draw: st.DrawFn, min_size: int = 1, max_size: int = 4) -> tuple[Todo, ...]:
    ids = draw(st.lists(todo_ids, min_size=min_size, max_size=max_size, unique=True))
    return tuple(Todo(i, draw(words), draw(st.sampled_from(TODO_STATUSES))) for i in ids)


scopes = st.none() | st.builds(
    PlanScope,
    paths=st.lists(st.sampled_from(["src", "tests/", "docs/*.md", "README.md"]), max_size=3).map(tuple),
    effects=st.lists(st.sampled_from(["read", "write", "shell"]), max_size=2).map(tuple),
)


@st.composite
def valid_specs(draw: st.DrawFn) -> PlanSpec:
    """A spec that passes ``validate_plan_spec``."""
    return PlanSpec(
        goal=draw(words),
        steps=tuple(draw(st.lists(words, min_size=1, max_size=4))),
        constraints=tuple(draw(st.lists(words, max_size=3))),
        verify=tuple(draw(st.lists(words, min_size=1, max_size=3))),
        todos=draw(todos()),
        open_questions=tuple(OpenQuestion(q) for q in draw(st.lists(words, max_size=2))),
        scope=draw(scopes),
    )


@st.composite
def valid_candidates(draw: st.DrawFn, spec: PlanSpec) -> dict[str, Any]:
    """A summary candidate that passes the structural check against ``spec``."""
    ids = [t.id for t in spec.todos]
    return {
        "goal": draw(words),
        "key_steps": draw(st.lists(words, min_size=1, max_size=3)),
        "constraints": draw(st.lists(words, max_size=2)),
        "verify": draw(st.lists(words, min_size=1, max_size=2)),
        "active_todo_ids": draw(st.lists(st.sampled_from(ids), unique=True, max_size=len(ids))),
    }


def spec(
    goal: str = "Add an export command",
    steps: tuple[str, ...] = ("parse flags", "write the exporter"),
    todos_: tuple[Todo, ...] = (Todo("t1", "flags"), Todo("t2", "exporter")),
    **kw: Any,
) -> PlanSpec:
    """A small valid spec for example-based tests."""
    return PlanSpec(
        goal=goal,
        steps=steps,
        constraints=kw.pop("constraints", ("no new dependencies",)),
        verify=kw.pop("verify", ("the export test passes",)),
        todos=todos_,
        **kw,
    )


def plan_content(
    plan_id: str = "p1", revision: int = 1, the_spec: PlanSpec | None = None, **kw: Any
) -> dict[str, Any]:
    """A ``plan/artifact`` payload (a draft of ``spec()`` by default); any
    other payload field can be given or overridden by keyword."""
    the_spec = the_spec or spec()
    return {
        "action": kw.pop("action", "draft"),
        "plan_id": plan_id,
        "revision": revision,
        "spec": spec_to_json(the_spec),
        "summary": summary_to_json(kw.pop("summary", build_summary_view(the_spec))),
        "summary_source": kw.pop("summary_source", "runtime"),
        "summary_rejected": kw.pop("summary_rejected", []),
        **kw,
    }


GOOD_CANDIDATE: dict[str, Any] = {
    "goal": "Export command",
    "key_steps": ["flags", "exporter"],
    "constraints": [],
    "verify": ["export test"],
    "active_todo_ids": ["t1"],
}


@dataclass
class Session:
    """A log under construction with its incrementally folded state."""

    log: list[Event] = field(default_factory=list)
    state: SessionState = field(default_factory=SessionState)
    clock: int = 0
    turn: int = 0

    def add(self, event: Event | Draft) -> Event:
        """Append ``event``, or a draft as the next event at the next tick."""
        if isinstance(event, Draft):
            event = event.numbered(self.state.last_seq + 1, self.at())
        self.state = apply_session_event(self.state, event)
        self.log.append(event)
        return event

    def raw(self, kind: str, payload: dict[str, Any]) -> Event:
        self.clock += 1
        return self.add(Event(self.state.last_seq + 1, kind, self.clock, payload))

    def at(self) -> int:
        self.clock += 1
        return self.clock

    def mode(self, active: bool) -> None:
        self.raw(PLAN_MODE, {"active": active})

    def discuss(self, text: str = "why this way?") -> None:
        self.raw(USER_MESSAGE, {"text": text, "source": None})
        self.raw(ASSISTANT_MESSAGE, {"text": "because", "source": None})

    def request(self, answered: bool = True) -> None:
        """One whole turn with one request in the current mode, answered by
        the model (or, with ``answered=False``, whose model call failed)."""
        self.turn += 1
        self.raw(TURN_START, {"turn": self.turn})
        self.raw(REQUEST_HEADER, {"turn": self.turn, "step": 1, "plan_mode": self.state.plan_mode})
        if answered:
            self.raw(ASSISTANT_MESSAGE, {"text": "on it", "source": None})
        self.raw(TURN_END, {"turn": self.turn})


def current_ref(s: Session) -> PlanRef:
    """The reference of the session's current plan (there must be one)."""
    assert s.state.plan.current is not None
    return s.state.plan.current.ref


def planning() -> Session:
    """A session in plan mode, no turn open."""
    s = Session()
    s.mode(True)
    return s


def drafted(candidate: Any = GOOD_CANDIDATE) -> Session:
    """A session in plan mode with plan ``p1`` drafted from ``spec()`` (with
    ``candidate`` as its summary candidate)."""
    s = planning()
    s.add(draft_event(s.state, "p1", spec(), candidate))
    return s


def executing() -> Session:
    """``drafted()``, approved, back in build mode and started."""
    s = drafted()
    s.add(approve_event(s.state, current_ref(s)))
    s.mode(False)
    s.add(start_event(s.state, current_ref(s)))
    return s
