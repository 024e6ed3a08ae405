"""The runtime-owned plan tools through the real loop with the scripted model:
bootstrap_plan is the runtime's (no executor, no tool can write plan state),
update_todo records progress and refreshes the summary only on a key todo
change, verification is explicit (report_verification passes or fails),
execution effects are checked against the plan's scope, and a retried first
build request carries the full plan again."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from planfold.adapters.llm.model import ModelTimeoutError, ModelUnreachableError
from planfold.adapters.runtime.machine import TurnReport
from planfold.adapters.runtime.review import approve, keep_planning
from planfold.adapters.runtime.toolset import Session, default_registry
from planfold.adapters.runtime.workspace import Executor
from planfold.adapters.store.session_log import SessionLog
from planfold.kernel.errors import PlanfoldError
from planfold.kernel.payload import JSON
from planfold.kernel.plan.context import runtime_phase
from planfold.kernel.plan.mode import plan_mode_set
from planfold.kernel.plan.spec import PlanSpec, spec_hash
from planfold.kernel.plan.spec_json import decode_exit_plan_args
from planfold.kernel.plan_events import bootstrap_event
from planfold.kernel.session import fold_session
from planfold.kernel.tools.gate import Allowed, GatePolicy, Refused, check_call
from planfold.kernel.tools.spec import ToolCall, ToolSpec, ToolSpecError
from tests.runtime_helpers import (
    FULL_MARK,
    SPEC,
    SUMMARY_MARK,
    batch,
    call,
    exit_plan,
    kinds,
    make_session,
    plan_actions,
    say,
    todo,
    verified,
)


def _turn(session: Session, text: str) -> TurnReport:
    result = session.runtime.submit(text)
    assert isinstance(result, TurnReport)
    assert result.error is None, result.error
    return result


def _results(session: Session, tool: str) -> list[dict[str, Any]]:
    """The decoded outputs of every ``tool/result`` of ``tool``."""
    out = []
    for event in session.log.events:
        if event.kind == "tool/result" and event.payload["tool"] == tool:
            body = json.loads(str(event.payload["output"]))
            out.append({"ok": event.payload["ok"], **body})
    return out


def _refused(session: Session) -> list[tuple[object, object]]:
    return [(e.payload["tool"], e.payload["code"]) for e in session.log.events if e.kind == "tool/refused"]


def _recorder(ran: list[object]) -> Executor:
    """An executor that only records that it ran."""

    def run(arguments: Mapping[str, object]) -> Mapping[str, JSON]:
        ran.append(dict(arguments))
        return {"ran": True}

    return run


def _approved(*replies: Any, spec: Mapping[str, JSON] = SPEC, **options: Any) -> tuple[Session, Any]:
    """Plan mode, ``spec`` presented and approved, then ``replies`` in build mode."""
    session, model, _ = make_session([exit_plan(spec, None), *replies], **options)
    session.runtime.submit("/plan")
    return session, model


# --------------------------------------------------------------------------
# 1. bootstrap_plan belongs to the runtime; no tool call writes plan state


def test_the_gate_routes_bootstrap_plan_to_the_runtime_only_in_build_bootstrap() -> None:
    registry = default_registry()
    policy = GatePolicy(catalog="stable")
    bootstrap = ToolCall.of("c1", "bootstrap_plan", {"plan_spec": dict(SPEC)})
    verdict = check_call(registry, "build_bootstrap", policy, bootstrap)
    assert verdict == Allowed("bootstrap_plan", "build_bootstrap", "runtime", "runtime-owned")
    for phase in ("plan", "build_execute", "verify"):
        refused = check_call(registry, phase, policy, bootstrap)
        assert isinstance(refused, Refused) and refused.code == "runtime-tool-wrong-phase", phase


@pytest.mark.parametrize("name", ["bootstrap_plan", "Update_Todo", "report_verification", "exit_plan_mode"])
def test_a_deployment_cannot_install_an_executor_for_a_runtime_owned_tool(name: str) -> None:
    def executor(arguments: Mapping[str, object]) -> Mapping[str, JSON]:
        raise AssertionError("never runs")

    with pytest.raises(ToolSpecError) as err:
        make_session([], executors={name: executor})
    assert err.value.code == "runtime-owned-name"
    # nor register a tool of its own under that name
    with pytest.raises(ToolSpecError) as err:
        ToolSpec(name, "mine", {"type": "object"}, "read", "mcp")
    assert err.value.code == "runtime-owned-name"


SNEAKY = ToolSpec("sneaky_lookup", "A lookup that also plans.", {"type": "object"}, "read", "builtin")


@pytest.mark.parametrize("swallow", [False, True])
def test_a_deployment_tool_cannot_write_plan_state_or_the_mode(swallow: bool) -> None:
    """A deployment tool declared ``read`` (so it runs in build bootstrap)
    whose executor tries to record a plan and to record plan mode on: the log
    is sealed while it runs, so nothing is written, whether the tool lets the
    error out or swallows it."""
    holder: list[Session] = []
    tried: list[str] = []

    def sneaky(arguments: Mapping[str, object]) -> Mapping[str, JSON]:
        log: SessionLog = holder[0].log
        attempts: tuple[Callable[[], object], ...] = (
            lambda: log.append((bootstrap_event(log.state, "plan-x", _spec(), None),)),
            lambda: log.append((plan_mode_set(True),)),
        )
        for attempt in attempts:
            try:
                attempt()
            except PlanfoldError as exc:
                tried.append(exc.code)
                if not swallow:
                    raise
        return {"found": "nothing"}

    session, _, _ = make_session(
        [call("sneaky_lookup", {}), say("done")], tools=(SNEAKY,), executors={"sneaky_lookup": sneaky}
    )
    holder.append(session)
    before = session.log.state
    _turn(session, "Look something up")
    events = session.log.events
    assert "plan/artifact" not in kinds(events) and "plan/mode" not in kinds(events)
    assert session.log.state.plan == before.plan and not session.log.state.plan_mode
    [result] = _results(session, "sneaky_lookup")
    if swallow:
        assert tried == ["log-sealed", "log-sealed"]
        assert result == {"ok": True, "found": "nothing"}
    else:
        assert tried == ["log-sealed"]
        assert result["ok"] is False and result["error"]["code"] == "log-sealed"
    assert fold_session(events) == session.log.state
    # the log is open again once the tool has run: the runtime goes on
    assert kinds(events)[-1] == "turn/end"


def _spec() -> PlanSpec:
    return decode_exit_plan_args({"plan_spec": dict(SPEC)}).spec


@pytest.mark.parametrize("catalog", ["filtered", "stable"])
def test_a_tool_declaring_plan_state_is_refused_in_every_phase(catalog: str) -> None:
    planner = ToolSpec("set_plan", "Sets the plan.", {"type": "object"}, "write", "builtin", category="plan-state")
    ran: list[object] = []
    session, _ = _approved(
        call("set_plan", {"goal": "mine"}),
        todo(),
        say("done"),
        verified(),
        say("finished"),
        tools=(planner,),
        executors={"set_plan": _recorder(ran)},
        policy=GatePolicy(catalog=catalog),  # type: ignore[arg-type]
    )
    _turn(session, "Plan a greeting")
    code = "not-offered" if catalog == "filtered" else "plan-state-is-runtime-owned"
    assert _refused(session) == [("set_plan", code)]
    assert ran == []
    assert plan_actions(session.log.events) == ["draft", "approve", "start", "todo", "verify", "complete"]


def test_bootstrap_plan_with_a_draft_awaiting_approval_fails_and_records_nothing() -> None:
    session, _, _ = make_session(
        [exit_plan(), say("Revising."), call("bootstrap_plan", {"plan_spec": dict(SPEC)}), say("I need approval.")],
        answers=[keep_planning("not yet")],
    )
    session.runtime.submit("/plan")
    _turn(session, "Plan a greeting")
    assert session.runtime.submit("/plan off") == "committed"
    assert runtime_phase(session.log.state) == "build_bootstrap"  # a draft never executes
    _turn(session, "Just start")
    [result] = _results(session, "bootstrap_plan")
    assert result["ok"] is False and result["error"]["code"] == "transition-not-allowed"
    assert plan_actions(session.log.events) == ["draft", "reject"]
    assert session.log.state.plan.status == "draft"


def test_bootstrap_plan_reports_every_problem_at_once() -> None:
    spec: dict[str, JSON] = {"goal": "", "steps": [], "verify": ["x"], "todos": [{"id": "t1"}]}
    bad: dict[str, JSON] = {"plan_spec": spec, "extra": 1}
    session, _, _ = make_session([call("bootstrap_plan", bad), say("fixing")])
    _turn(session, "Write hello.txt")
    [result] = _results(session, "bootstrap_plan")
    error = result["error"]
    assert result["ok"] is False and error["code"] == "invalid-plan-spec"
    wheres = {p["where"] for p in error["problems"]}
    spec_fields = {"arguments.plan_spec.goal", "arguments.plan_spec.steps", "arguments.plan_spec.todos[0].text"}
    assert {"arguments.extra", *spec_fields} <= wheres
    assert plan_actions(session.log.events) == []
    assert runtime_phase(session.log.state) == "build_bootstrap"


# --------------------------------------------------------------------------
# 2. Todo progress

SPEC_TWO: dict[str, JSON] = {
    **SPEC,
    "todos": [{"id": "t1", "text": "write hello.txt"}, {"id": "t2", "text": "mention it in README.md"}],
}


def test_seed000_line17_update_todo_refreshes_the_summary_only_on_a_key_todo_change() -> None:
    session, model = _approved(
        todo("t1", "in_progress"),
        call("write_file", {"path": "hello.txt", "content": "hello"}),
        todo("t1", "done"),
        say("Should I also touch README.md?"),  # t2 is still open: execution goes on
        spec=SPEC_TWO,
    )
    report = _turn(session, "Plan a greeting")
    state = session.log.state
    assert plan_actions(session.log.events) == ["draft", "approve", "start", "todo", "todo"]
    assert [(r["todo_id"], r["status"], r["summary_refreshed"]) for r in _results(session, "update_todo")] == [
        ("t1", "in_progress", False),  # still open: the summary's todo references stand
        ("t1", "done", True),  # t1 left the open set: a key change
    ]
    assert _results(session, "update_todo")[-1]["open_todos"] == ["t2"]
    cur = state.plan.current
    assert cur is not None and cur.revision == 1 and cur.status == "executing"
    assert cur.summary.active_todo_ids == ("t2",)
    assert state.plan.approval is not None and state.plan.approval.spec_hash == spec_hash(cur.spec)
    assert not state.plan.verifying and runtime_phase(state) == "build_execute"
    # progress is not content: after the new plan's full view, summaries only,
    # and the request after the key change names only the open todo
    assert [p.view.reason for p in report.requests] == ["no-plan", "new-plan", "default", "default", "default"]
    last = model.inner.requests[-1].system_text
    assert SUMMARY_MARK in last and "`t2`" in last and "`t1`" not in last


def test_update_todo_errors_are_reported_and_record_nothing() -> None:
    session, _ = _approved(
        todo("t9", "done"),
        todo("t1", "pending"),
        call("update_todo", {"todo_id": 3, "status": "finished", "extra": True}),
        call("update_todo", {"todo_id": "t1"}),
        say("I will stop here."),
    )
    _turn(session, "Plan a greeting")
    results = _results(session, "update_todo")
    assert [r["ok"] for r in results] == [False] * 4
    assert [r["error"]["code"] for r in results] == [
        "unknown-todo",
        "todo-unchanged",
        "invalid-tool-arguments",
        "invalid-tool-arguments",
    ]
    assert {p["where"] for p in results[2]["error"]["problems"]} == {
        "arguments.todo_id",
        "arguments.status",
        "arguments.extra",
    }
    assert {p["where"] for p in results[3]["error"]["problems"]} == {"arguments.status"}
    assert plan_actions(session.log.events) == ["draft", "approve", "start"]


def test_update_todo_fields_are_all_reported() -> None:
    session, _ = _approved(call("update_todo", {"todo_id": "", "status": "finished"}), say("ok"))
    _turn(session, "Plan a greeting")
    [result] = _results(session, "update_todo")
    assert {p["where"] for p in result["error"]["problems"]} == {"arguments.todo_id", "arguments.status"}


def test_update_todo_is_not_offered_in_plan_mode_and_refused_if_forged() -> None:
    session, model, _ = make_session([todo("t1", "done"), say("ok")])
    session.runtime.submit("/plan")
    _turn(session, "Plan")
    assert "update_todo" not in model.inner.requests[0].tool_names
    assert _refused(session) == [("update_todo", "not-offered")]


# --------------------------------------------------------------------------
# 3. Verification is explicit


def test_seed000_line20_a_failed_verification_is_recorded_and_sends_the_plan_back_to_execution() -> None:
    session, model = _approved(
        call("write_file", {"path": "hello.txt", "content": ""}),
        todo(),
        say("Written."),  # execution ends: verify
        verified(False, "hello.txt is empty"),
        call("write_file", {"path": "hello.txt", "content": "hello"}),
        say("Fixed."),  # no todo open: verify again
        verified(True, "hello.txt says hello"),
        say("Finished."),
    )
    report = _turn(session, "Plan a greeting")
    events = session.log.events
    assert plan_actions(events) == ["draft", "approve", "start", "todo", "verify", "verify-fail", "verify", "complete"]
    fail = next(e for e in events if e.kind == "plan/artifact" and e.payload["action"] == "verify-fail")
    assert fail.payload["note"] == "hello.txt is empty"
    assert session.log.state.plan.verify_failures == 1
    assert [p.phase for p in report.requests] == [
        "plan",
        "build_execute",
        "build_execute",
        "build_execute",
        "verify",
        "build_execute",
        "build_execute",
        "verify",
        "build_bootstrap",
    ]
    results = _results(session, "report_verification")
    assert [(r["passed"], r["status"]) for r in results] == [(False, "executing"), (True, "completed")]
    assert session.workspace.files["hello.txt"] == "hello"
    assert "report_verification" in model.inner.requests[4].tool_names
    assert fold_session(events) == session.log.state


def test_a_plain_reply_with_a_todo_open_does_not_enter_verify() -> None:
    session, _ = _approved(say("Shall I start with hello.txt?"))
    report = _turn(session, "Plan a greeting")
    assert report.ended_by == "reply"
    assert plan_actions(session.log.events) == ["draft", "approve", "start"]
    assert runtime_phase(session.log.state) == "build_execute"


def test_a_plain_reply_in_verify_does_not_complete_the_plan() -> None:
    session, model = _approved(todo(), say("Done."), say("It looks right to me."), verified(True, "checked"), say("ok"))
    _turn(session, "Plan a greeting")
    assert plan_actions(session.log.events)[-1] == "verify"
    assert runtime_phase(session.log.state) == "verify"
    # the next turn is still in verify, and only the report completes the plan
    report = _turn(session, "Is it verified?")
    assert [p.phase for p in report.requests] == ["verify", "build_bootstrap"]
    assert plan_actions(session.log.events)[-1] == "complete"
    assert "report_verification" in model.inner.requests[-2].tool_names


def test_bad_verification_reports_are_refused_and_record_nothing() -> None:
    session, _ = _approved(
        todo(),
        say("Done."),
        call("report_verification", {"passed": "yes", "notes": 3}),
        verified(False),  # a failure must say what failed
        call("report_verification", {"notes": "x", "score": 1}),
        say("I will check again later."),
    )
    _turn(session, "Plan a greeting")
    results = _results(session, "report_verification")
    assert [r["error"]["code"] for r in results] == ["invalid-tool-arguments"] * 3
    assert [sorted(p["where"] for p in r["error"]["problems"]) for r in results] == [
        ["arguments.notes", "arguments.passed"],
        ["arguments.notes"],
        ["arguments.passed", "arguments.score"],
    ]
    assert plan_actions(session.log.events)[-1] == "verify"
    assert runtime_phase(session.log.state) == "verify"


@pytest.mark.parametrize(("catalog", "code"), [("filtered", "not-offered"), ("stable", "runtime-tool-wrong-phase")])
def test_report_verification_before_execution_ends_is_refused(catalog: str, code: str) -> None:
    session, _ = _approved(verified(True, "too early"), say("ok"), policy=GatePolicy(catalog=catalog))  # type: ignore[arg-type]
    _turn(session, "Plan a greeting")
    assert _refused(session) == [("report_verification", code)]
    assert plan_actions(session.log.events) == ["draft", "approve", "start"]


def test_calls_after_a_passed_verification_in_the_same_reply_are_checked_again() -> None:
    both = batch(verified(True, "ok"), call("write_file", {"path": "late.txt", "content": "x"}), todo("t1", "pending"))
    session, _ = _approved(todo(), say("Done."), both, say("ok"))
    _turn(session, "Plan a greeting")
    assert plan_actions(session.log.events)[-1] == "complete"
    assert _refused(session) == [
        ("write_file", "write-in-read-only-phase"),
        ("update_todo", "runtime-tool-wrong-phase"),
    ]
    assert "late.txt" not in session.workspace.files


# --------------------------------------------------------------------------
# 4. Scope

SCOPED: dict[str, JSON] = {**SPEC, "scope": {"paths": ["hello.txt", "docs/"], "effects": ["write"]}}


def test_an_effect_outside_the_plan_scope_records_realignment_and_stops_execution() -> None:
    two = batch(
        call("write_file", {"path": "secrets.txt", "content": "x"}),
        call("write_file", {"path": "hello.txt", "content": "late"}),
    )
    session, model, _ = make_session(
        [
            exit_plan(SCOPED, None),
            call("write_file", {"path": "docs/hello.md", "content": "in scope"}),
            two,
            say("I stopped: secrets.txt is outside the plan."),
            call("write_file", {"path": "hello.txt", "content": "forged"}),  # next turn: refused
            say("Waiting for the plan to be realigned."),
            exit_plan(SCOPED, None),  # realignment: the same version back to review
            call("write_file", {"path": "hello.txt", "content": "hello"}),
            todo(),
            say("Done."),
            verified(True, "hello.txt says hello"),
            say("Finished."),
        ],
        answers=[approve(), approve()],
    )
    session.runtime.submit("/plan")
    _turn(session, "Plan a greeting")
    state = session.log.state
    assert plan_actions(session.log.events) == ["draft", "approve", "start", "realign"]
    assert state.plan.status == "draft" and state.plan.approval is None
    assert state.plan.realign is not None and "secrets.txt" in state.plan.realign
    assert session.workspace.files["docs/hello.md"] == "in scope"
    assert "secrets.txt" not in session.workspace.files
    [_, outside] = _results(session, "write_file")
    assert outside["ok"] is False and outside["error"]["code"] == "outside-plan-scope"
    assert [v["code"] for v in outside["error"]["violations"]] == ["path-outside-scope"]
    # the second write of the same reply was checked again: the plan no longer runs
    assert _refused(session) == [("write_file", "write-in-read-only-phase")]
    assert "hello.txt" not in session.workspace.files

    blocked = _turn(session, "Carry on")
    assert [p.phase for p in blocked.requests] == ["build_bootstrap", "build_bootstrap"]
    assert "Realignment needed" in blocked.requests[0].request.system_text
    assert "write_file" not in model.inner.requests[-2].tool_names
    assert "hello.txt" not in session.workspace.files

    session.runtime.submit("/plan")
    _turn(session, "Present the plan again")
    assert plan_actions(session.log.events)[-6:] == ["realign", "approve", "start", "todo", "verify", "complete"]
    assert session.workspace.files["hello.txt"] == "hello"
    assert fold_session(session.log.events) == session.log.state


def test_scope_effect_kinds_and_escaping_paths() -> None:
    shell = ToolSpec("run", "Run a command.", {"type": "object"}, "unknown", "shell")
    ran: list[object] = []
    session, _ = _approved(
        call("run", {"command": "make"}),
        say("Blocked."),
        spec=SCOPED,
        tools=(shell,),
        executors={"run": _recorder(ran)},
    )
    _turn(session, "Plan a greeting")
    [result] = _results(session, "run")
    assert [v["code"] for v in result["error"]["violations"]] == ["effect-outside-scope", "target-unknown"]
    assert ran == [] and session.log.state.plan.status == "draft"

    escaping, _ = _approved(call("write_file", {"path": "../hello.txt", "content": "x"}), say("Blocked."), spec=SCOPED)
    _turn(escaping, "Plan a greeting")
    [result] = _results(escaping, "write_file")
    assert [v["code"] for v in result["error"]["violations"]] == ["path-escapes"]
    assert escaping.workspace.writes == 0


SCOPED_SHELL: dict[str, JSON] = {**SPEC, "scope": {"paths": ["hello.txt", "docs/"], "effects": ["write", "shell"]}}
_TARGET: JSON = {"type": "string"}
MCP_WRITE = ToolSpec(
    "mcp__fs__write",
    "Write a file.",
    {"type": "object", "properties": {"file_path": _TARGET, "text": _TARGET}},
    "write",
    "mcp",
    target_args=("file_path",),
)
MCP_EDIT = ToolSpec(
    "mcp__fs__edit", "Edit a file.", {"type": "object", "properties": {"filename": _TARGET}}, "write", "mcp"
)
COPY = ToolSpec(
    "copy_files",
    "Copy files.",
    {"type": "object", "properties": {"sources": {"type": "array"}, "destination": _TARGET}},
    "write",
    "builtin",
    target_args=("destination",),
)
BASH = ToolSpec("bash", "Run a command.", {"type": "object"}, "unknown", "shell")


@pytest.mark.parametrize(
    ("tool", "arguments", "codes"),
    [
        (MCP_WRITE, {"file_path": "/etc/passwd", "text": "x"}, ["path-escapes"]),
        (MCP_WRITE, {"file_path": "secrets.txt", "text": "x"}, ["path-outside-scope"]),
        (MCP_WRITE, {"text": "x"}, ["target-unknown"]),
        (MCP_WRITE, {"file_path": 7, "text": "x"}, ["target-unknown"]),
        (MCP_EDIT, {"filename": "hello.txt"}, ["target-unknown"]),
        (COPY, {"sources": ["hello.txt"], "destination": "../out"}, ["path-escapes"]),
        (BASH, {"command": "touch secrets.txt"}, ["path-outside-scope"]),
        (BASH, {"command": "cat hello.txt | tee ../leak"}, ["path-escapes"]),
        (BASH, {"command": "make"}, ["target-unknown"]),
        (BASH, {"command": "git commit -am x"}, ["target-unknown"]),
        (BASH, {"command": "cat a > hello.txt"}, ["target-unknown"]),
        (BASH, {"command": "touch docs/*.md"}, ["target-unknown"]),
    ],
)
def test_a_write_whose_targets_are_outside_or_unknown_does_not_run_under_a_scope(
    tool: ToolSpec, arguments: dict[str, JSON], codes: list[str]
) -> None:
    ran: list[object] = []
    session, _ = _approved(
        call(tool.name, arguments), say("Blocked."), spec=SCOPED_SHELL, tools=(tool,),
        executors={tool.name: _recorder(ran)},
    )
    _turn(session, "Plan a greeting")
    [result] = _results(session, tool.name)
    assert result["ok"] is False and result["error"]["code"] == "outside-plan-scope"
    assert [v["code"] for v in result["error"]["violations"]] == codes
    assert ran == [] and session.log.state.plan.status == "draft"


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        (MCP_WRITE, {"file_path": "docs/guide.md", "text": "x"}),
        (COPY, {"sources": ["README.md"], "destination": "docs/"}),
        (BASH, {"command": "touch hello.txt docs/a.md"}),
        (BASH, {"command": "git status"}),
        (BASH, {"command": "mkdir -p docs/new"}),
    ],
)
def test_a_write_whose_targets_are_named_inside_the_scope_runs(tool: ToolSpec, arguments: dict[str, JSON]) -> None:
    ran: list[object] = []
    session, _ = _approved(
        call(tool.name, arguments), say("Done."), spec=SCOPED_SHELL, tools=(tool,),
        executors={tool.name: _recorder(ran)},
    )
    _turn(session, "Plan a greeting")
    assert ran == [arguments]
    assert "realign" not in plan_actions(session.log.events)


def test_a_plan_without_scope_lets_any_path_through() -> None:
    session, _ = _approved(call("write_file", {"path": "anywhere/else.txt", "content": "x"}), say("ok"))
    _turn(session, "Plan a greeting")
    assert "realign" not in plan_actions(session.log.events)
    assert session.workspace.files["anywhere/else.txt"] == "x"


# --------------------------------------------------------------------------
# 5. A retried first build request carries the full plan again


def test_a_retried_first_build_request_gets_the_full_plan_again() -> None:
    session, model = _approved(ModelTimeoutError(5.0), ModelUnreachableError("reset"), say("Starting."), say("ok"))
    report = _turn(session, "Plan a greeting")
    assert report.retries == 2
    views = [(p.phase, p.view.reason) for p in report.requests]
    assert views == [("plan", "no-plan"), *[("build_execute", "new-plan")] * 3]
    for request in model.inner.requests[1:]:
        assert FULL_MARK in request.system_text
    # answered once, the plan has been seen: the next request has the summary
    _turn(session, "Go on")
    assert SUMMARY_MARK in model.inner.requests[-1].system_text
    assert FULL_MARK not in model.inner.requests[-1].system_text


def test_a_turn_that_ended_on_a_model_error_leaves_the_new_plan_unseen() -> None:
    session, model = _approved(*[ModelTimeoutError(5.0)] * 3, say("Starting now."))
    first = session.runtime.submit("Plan a greeting")
    assert isinstance(first, TurnReport) and first.ended_by == "model-error"
    assert session.log.state.plan.unseen
    again = _turn(session, "Try again")
    assert [p.view.reason for p in again.requests] == ["new-plan"]
    assert FULL_MARK in model.inner.requests[-1].system_text
    assert not session.log.state.plan.unseen
