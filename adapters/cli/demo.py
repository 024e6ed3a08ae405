"""``planfold demo``: one whole session on the embedded defaults.

Theory of operation
-------------------
The demo runs a session against a SQLite file (or the PostgreSQL database of
a ``postgresql://`` URL, through ``store.opener.open_store``) and, by default, the scripted
model of ``adapters.cli.demo_script`` (``--base-url``/``--model`` point it at a
real OpenAI-compatible server instead; a real model's path is its own, so only
the scripted run is checked step by step). Each run starts a NEW session in the
file (``demo-1``, ``demo-2`` …), so earlier runs stay in the file and stay
auditable.

It prints numbered sections with one line per appended event (its seq, kind
and meaning), then an honest summary of what the log says, and the command
that audits it again (``command`` is how the user ran planfold, e.g.
``.venv/bin/planfold`` after ``make demo``, so the hint works as printed).
The demo returns the session id and whether the final audit passed; the CLI
exits non-zero when it did not. When the model cannot be used (a real server
that is down, refuses or answers garbage, after the retry budget is spent)
the first turn ends with a model error: the demo stops there, audits what it
wrote, and says why (``model_error``).

A real model takes its own path, and the demo follows it without failing:
when plan mode is still on after the first turn (the model never presented
a plan) the user turns it off; a goal operation the goal's state does not
allow (resuming a goal that is still active and armed) is skipped with a
note instead of ending the run. Whatever the model did, the log it wrote is
audited.
"""

from __future__ import annotations

import itertools
import os
import shlex
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from ...kernel.errors import PlanfoldError
from ...kernel.log import Event
from ...kernel.session import fold_session
from ..llm.model import ModelClient
from ..llm.scripted import ScriptedClient
from ..runtime.goal_service import GoalService
from ..runtime.machine import TurnReport
from ..runtime.review import ReviewPort
from ..runtime.toolset import Session, open_runtime
from ..runtime.workspace import Workspace
from ..store.engine import LogStore
from ..store.opener import open_store
from .demo_script import DEMO_FILES, TASK, after_restart_model, demo_reviewer, first_model
from .describe import describe, goal_text, plan_text, shown, summarize

__all__ = ["DemoResult", "command_name", "next_session_id", "run_demo"]


@dataclass
class DemoResult:
    """What the demo did: its session, the events by kind, the audit, and
    ``model_error`` when the model could not be used (the demo stopped)."""

    session_id: str
    last_seq: int
    audit_ok: bool
    counts: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    model_error: str | None = None


def command_name(argv0: str | None = None) -> str:
    """How to run planfold again as the user ran it: ``planfold`` when that
    name on the PATH is this very program, else the program's path (relative
    to the working directory when it lies below it, e.g.
    ``.venv/bin/planfold``)."""
    program = argv0 if argv0 is not None else sys.argv[0]
    name = os.path.basename(program)
    if not name.startswith("planfold"):
        return "planfold"
    found = shutil.which(name)
    if found is not None and os.path.realpath(found) == os.path.realpath(program):
        return name
    relative = os.path.relpath(os.path.abspath(program))
    return relative if not relative.startswith("..") else os.path.abspath(program)


def next_session_id(store: LogStore) -> str:
    """``demo-N`` for the first N not used in the file yet."""
    used = set(store.session_ids())
    return next(f"demo-{n}" for n in itertools.count(1) if f"demo-{n}" not in used)


class _Out:
    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.section_no = 0

    def section(self, title: str) -> None:
        self.section_no += 1
        self.line(f"\n{self.section_no}. {title}")

    def line(self, text: str = "") -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

    def event(self, event: Event) -> None:
        self.line(f"   seq {event.seq:>3}  {shown(event.kind):<17} {describe(event)}")


def _ticks(start: int = 1_700_000_000_000) -> Callable[[], int]:
    counter = itertools.count()
    return lambda: start + 1000 * next(counter)


def _turn(out: _Out, report: TurnReport) -> None:
    extra = f", {report.retries} retr{'y' if report.retries == 1 else 'ies'}" if report.retries else ""
    out.line(f"   -> turn {report.turn}: {report.steps} request(s){extra}, ended by {report.ended_by}")
    if report.error:
        out.line(f"   -> error: {shown(report.error)}")


def _goal_op(out: _Out, what: str, op: Callable[[], object]) -> bool:
    """Run a goal operation; a refusal (the goal's state does not allow it,
    since a real model took its own path) is narrated, not fatal."""
    try:
        op()
    except PlanfoldError as exc:
        out.line(f"   ({what} skipped: [{exc.code}] {shown(exc.message)})")
        return False
    return True


def run_demo(
    db: str,
    stream: TextIO,
    *,
    model: ModelClient | None = None,
    review: ReviewPort | None = None,
    clock: Callable[[], int] | None = None,
    command: str = "planfold",
) -> DemoResult:
    """Run the demo session in ``db`` and print what happens to ``stream``;
    ``command`` is how the closing hint runs planfold."""
    out = _Out(stream)
    scripted = model is None
    tick = clock or _ticks()
    workspace = Workspace(dict(DEMO_FILES))
    store = open_store(db)
    session_id = next_session_id(store)
    out.line(f"planfold demo: a whole session in {shown(db)}, session {session_id!r}")
    out.line("(each run starts a new session; earlier ones stay in the file)")
    out.line(f"model: {'the scripted demo model (offline)' if scripted else 'a real OpenAI-compatible server'}")

    first = model or first_model()
    session = open_runtime(store, session_id, first, review or demo_reviewer(), workspace, clock=tick)
    session.log.observers.append(out.event)
    runtime = session.runtime

    out.section("/plan: the user turns plan mode on between turns (appended at once)")
    out.line(f"   /plan -> {runtime.submit('/plan')}")

    out.section(f"Turn 1 in plan mode: {TASK!r}")
    out.line("   read tools allowed; write_file is not offered, and a forged call is refused;")
    out.line("   exit_plan_mode records a draft, a human approves it, the exit lands silently")
    out.line("   at the next pre-step, then the approved version executes; update_todo records")
    out.line("   the todo as done; the model stops with no todo open, so the runtime enters")
    out.line("   verify, and report_verification (passed) completes the plan")
    report = runtime.submit(TASK)
    assert isinstance(report, TurnReport)
    _turn(out, report)
    if report.ended_by == "model-error":
        out.line("   the model could not be used, so the demo stops here")
        out.section("Audit: strict replay of the log, and the stored projection against the fold")
        result = _audit(store, session_id, out)
        store.close()
        result.model_error = report.error
        return result
    for plan in session.runtime.shown:
        out.line("   the plan the reviewer saw:")
        for text in plan.splitlines()[:6]:
            out.line(f"   | {shown(text)}")
    written = "farewell" in workspace.files.get("greet.py", "")
    out.line(f"   workspace writes: {workspace.writes}; greet.py now has farewell(): {written}")
    if session.log.state.plan_mode:
        out.line("   plan mode is still on (the model did not present a plan): the user turns it off")
        out.line(f"   /plan off -> {runtime.submit('/plan off')}")

    goals = GoalService(session.log, "agent-1", lambda: f"goal-{session.log.last_seq + 1}")
    out.section("A goal with a budget of 2 rounds, driven until the budget blocks it")
    out.line("   round 1 is in build mode with no plan (read-only): the model reads, records a")
    out.line("   minimal plan with bootstrap_plan (runtime-owned; it starts at the next step),")
    out.line("   writes README.md inside the plan's scope, fails its first verification (back")
    out.line("   to execution, recorded as verify-fail), fixes the file, and passes")
    objective = "Keep README.md and greet.py consistent"
    _goal_op(out, "creating the goal", lambda: goals.create(goals.agent, objective, max_rounds=2))
    drive = goals.drive(goals.agent, runtime)
    out.line(f"   -> rounds run: {list(drive.rounds)}; stopped: {drive.stopped}; armed: {goals.activation.armed}")

    both = all(name in workspace.files.get("README.md", "") for name in ("greet(", "farewell("))
    out.line(f"   README.md names greet() and farewell(): {both}")

    out.section("The human raises the cap to 3 and resumes (armed again)")
    _goal_op(out, "raising the cap", lambda: goals.edit(goals.agent, max_rounds=3))
    _goal_op(out, "resuming", lambda: goals.resume(goals.agent))
    out.line(f"   -> armed: {goals.activation.armed}")

    out.section("Simulated restart: the store is closed and reopened, process state is new")
    store.close()
    store = open_store(db)
    second = model or after_restart_model()
    session = open_runtime(store, session_id, second, review or demo_reviewer(), workspace, clock=tick)
    session.log.observers.append(out.event)
    goals = GoalService(session.log, "agent-1", lambda: f"goal-{session.log.last_seq + 1}")
    view = goals.get(goals.agent)
    if view is not None:
        g = view.goal
        out.line(f"   goal {g.id}: {g.phase}, revision {g.revision}, rounds {g.rounds_started}/{g.max_rounds}")
    out.line(f"   activation after the restart: {'armed' if goals.activation.armed else 'DISARMED'}")
    drive = goals.drive(goals.agent, session.runtime)
    out.line(f"   the round driver does nothing on its own: stopped: {drive.stopped}")

    out.section("The human resumes; the driver runs the last round and the budget blocks the goal")
    _goal_op(out, "resuming", lambda: goals.resume(goals.agent))
    drive = goals.drive(goals.agent, session.runtime)
    out.line(f"   -> rounds run: {list(drive.rounds)}; stopped: {drive.stopped}; armed: {goals.activation.armed}")

    out.section("Audit: strict replay of the log, and the stored projection against the fold")
    result = _audit(store, session_id, out)
    store.close()
    if scripted:
        for client in (first, second):
            if isinstance(client, ScriptedClient) and client.remaining:
                result.problems.append(f"the scripted model has {client.remaining} unused step(s)")
                result.audit_ok = False
    _summary(out, result, session, db, command)
    return result


def _audit(store: LogStore, session_id: str, out: _Out) -> DemoResult:
    events = store.read(session_id)
    state = fold_session(events)  # raises ReplayError at the first bad event
    report = store.audit(session_id)
    counts: dict[str, int] = {}
    for event in events:
        counts[event.kind] = counts.get(event.kind, 0) + 1
    out.line(f"   strict replay: {len(events)} events, ok (last seq {state.last_seq})")
    out.line(f"   projection vs fold: {'ok' if report.ok else 'MISMATCH'} (snapshot {report.snapshot})")
    for mismatch in report.mismatches:
        out.line(f"   ! {mismatch}")
    return DemoResult(session_id, state.last_seq, report.ok, counts, list(report.mismatches))


def _summary(out: _Out, result: DemoResult, session: Session, db: str, command: str) -> None:
    state = session.log.state
    facts = summarize(state)
    out.section("Summary")
    c = result.counts
    out.line(f"   {result.last_seq} events in {facts['turns']} turns; {c.get('request/header', 0)} model requests")
    calls, refused, results = (c.get(k, 0) for k in ("tool/call", "tool/refused", "tool/result"))
    out.line(f"   tools: {calls} calls, {refused} refused, {results} results")
    out.line(f"   plan: {plan_text(facts['plan'])}")
    out.line(f"   goal: {goal_text(facts['goal'])}")
    out.line(f"   mode now: {facts['agent_mode']}")
    verdict = "passes" if result.audit_ok else "FAILS"
    again = f"{shlex.quote(command)} audit --db {shlex.quote(db)} --session {shlex.quote(result.session_id)}"
    out.line(f"   the log {verdict} the audit; check it again with: {shown(again)}")
    for problem in result.problems:
        out.line(f"   ! {shown(problem)}")
