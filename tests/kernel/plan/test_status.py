"""The plan status table, the plan/artifact payloads, strict replay of
plan/artifact events (each refusal's rule, position and detail), the event
builders' refusals, and what each action does to the plan."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planfold.kernel.errors import PayloadError, ReplayError, is_kebab_case
from planfold.kernel.log import PLAN_ARTIFACT, Draft, Event
from planfold.kernel.plan.artifact import PLAN_STATUSES, STATUS_TABLE, PlanRef, PlanStatus
from planfold.kernel.plan.checks import CHECKS
from planfold.kernel.plan.events import PlanChangeError, classify_change
from planfold.kernel.plan.payload import PLAN_ACTIONS, PlanAction, plan_action_payload, read_plan_action
from planfold.kernel.plan.spec import OpenQuestion, PlanSpec, Todo, TodoStatus
from planfold.kernel.plan.spec_json import ExitPlanArgs
from planfold.kernel.plan.status import TRANSITIONS, apply_plan_event, fold_plans
from planfold.kernel.plan.views import build_summary_view
from planfold.kernel.plan_events import (
    approve_event,
    bootstrap_event,
    complete_event,
    draft_event,
    exit_plan_events,
    realign_event,
    reject_event,
    rewrite_event,
    start_event,
    supersede_event,
    todo_event,
    update_plan_events,
    verify_event,
    verify_fail_event,
)
from planfold.kernel.session import SessionState, apply_session_event, fold_session
from tests.plan_helpers import GOOD_CANDIDATE, Session, current_ref, drafted, executing, spec, valid_specs
from tests.plan_helpers import plan_content as content

# --------------------------------------------------------------------------
# The tables


def test_status_table_has_exactly_the_six_statuses() -> None:
    assert tuple(STATUS_TABLE) == PLAN_STATUSES
    assert PLAN_STATUSES == ("draft", "approved", "implicit", "executing", "completed", "superseded")


def test_every_row_names_known_statuses_actions_and_checks() -> None:
    for row in TRANSITIONS:
        assert row.source is None or row.source in STATUS_TABLE
        assert row.target in STATUS_TABLE
        assert row.action in PLAN_ACTIONS
        assert row.mode in (None, "plan", "build")
        assert all(check in CHECKS for check in row.checks), row
    assert {row.action for row in TRANSITIONS} == set(PLAN_ACTIONS)


def test_rows_are_unambiguous() -> None:
    keys = [(row.action, row.source, row.mode) for row in TRANSITIONS]
    assert len(keys) == len(set(keys))
    for action, source, mode in keys:
        if mode is None:  # an any-mode row leaves no room for a mode-specific one
            assert (action, source, "plan") not in keys and (action, source, "build") not in keys


def test_every_status_is_reachable_from_no_plan() -> None:
    reached: set[PlanStatus | None] = {None}
    frontier: list[PlanStatus | None] = [None]
    while frontier:
        source = frontier.pop()
        for row in TRANSITIONS:
            if row.source == source and row.target not in reached:
                reached.add(row.target)
                frontier.append(row.target)
    assert reached == {None, *PLAN_STATUSES}


def test_only_start_enters_execution_and_never_from_a_draft() -> None:
    entering = [r for r in TRANSITIONS if r.target == "executing" and r.source != "executing"]
    assert {(r.action, r.source) for r in entering} == {("start", "approved"), ("start", "implicit")}
    assert all(STATUS_TABLE[r.source].may_start for r in entering if r.source is not None)
    assert not STATUS_TABLE["draft"].may_start


def test_approval_is_only_given_by_approve() -> None:
    assert {(r.action, r.source) for r in TRANSITIONS if r.target == "approved"} == {("approve", "draft")}


# --------------------------------------------------------------------------
# Payloads


ACTIONS = [
    PlanAction("draft", "p", 1, spec=spec(), summary=build_summary_view(spec()), summary_source="runtime"),
    PlanAction("approve", "p", 2, spec_hash="h"),
    PlanAction("reject", "p", 2, spec_hash="h", note=None),
    PlanAction("todo", "p", 1, todo_id="t1", todo_status="done"),
    PlanAction("verify", "p", 1),
    PlanAction("verify-fail", "p", 1, note="red"),
    PlanAction("supersede", "p", 3, note=None),
]


@pytest.mark.parametrize("act", ACTIONS, ids=lambda a: a.action)
def test_payloads_round_trip(act: PlanAction) -> None:
    assert read_plan_action(plan_action_payload(act)) == act


@pytest.mark.parametrize(
    "act",
    [PlanAction("draft", "p", 1), PlanAction("approve", "p", 1), PlanAction("todo", "p", 1)],
    ids=lambda a: a.action,
)
def test_writing_an_incomplete_action_is_a_programming_error(act: PlanAction) -> None:
    with pytest.raises(ValueError, match="needs"):
        plan_action_payload(act)


@pytest.mark.parametrize(
    "act",
    [
        PlanAction("draft", "p", 1, spec=None, summary=build_summary_view(spec()), summary_source="runtime"),
        PlanAction("draft", "p", 1, spec=spec(), summary=None, summary_source="runtime"),
        PlanAction("rewrite", "p", 2, spec=spec(), summary=build_summary_view(spec()), summary_source=None),
        PlanAction("bootstrap", "p", 1, spec=None, summary=None, summary_source="model"),
    ],
)
def test_a_content_action_missing_any_one_part_cannot_be_written(act: PlanAction) -> None:
    with pytest.raises(ValueError) as info:
        plan_action_payload(act)
    assert str(info.value) == f"a {act.action} action needs spec, summary and summary_source"


@pytest.mark.parametrize("act", [PlanAction("approve", "p", 1), PlanAction("reject", "p", 1, note="why")])
def test_an_action_missing_its_one_needed_field_names_that_field_alone(act: PlanAction) -> None:
    # A reject's note may be null: it is never named as needed.
    with pytest.raises(ValueError) as info:
        plan_action_payload(act)
    assert str(info.value) == f"a {act.action} action needs spec_hash"


@pytest.mark.parametrize(
    "act",
    [
        PlanAction("todo", "p", 1, todo_id="t1", todo_status=None),
        PlanAction("todo", "p", 1, todo_id=None, todo_status="done"),
    ],
)
def test_a_todo_action_missing_its_id_or_status_cannot_be_written(act: PlanAction) -> None:
    with pytest.raises(ValueError) as info:
        plan_action_payload(act)
    assert str(info.value) == "a todo action needs todo_id and todo_status"


@pytest.mark.parametrize("blank", ["", "  "])
@pytest.mark.parametrize("action", ["approve", "reject", "start"])
def test_a_blank_spec_hash_is_malformed(action: str, blank: str) -> None:
    payload: dict[str, Any] = {"action": action, "plan_id": "p1", "revision": 1, "spec_hash": blank}
    if action == "reject":
        payload["note"] = None
    with pytest.raises(PayloadError) as info:
        read_plan_action(payload)
    assert info.value.message == "payload.spec_hash: must not be blank"


@pytest.mark.parametrize("blank", ["", "  "])
def test_a_blank_todo_id_is_malformed(blank: str) -> None:
    with pytest.raises(PayloadError) as info:
        read_plan_action({"action": "todo", "plan_id": "p1", "revision": 1, "todo_id": blank, "status": "done"})
    assert info.value.message == "payload.todo_id: must not be blank"


def test_an_unknown_todo_status_in_a_todo_action_names_the_allowed_ones() -> None:
    with pytest.raises(PayloadError) as info:
        read_plan_action({"action": "todo", "plan_id": "p1", "revision": 1, "todo_id": "t1", "status": "later"})
    assert info.value.message == (
        "payload.status: must be one of ['pending', 'in_progress', 'done', 'dropped'], got 'later'"
    )


# --------------------------------------------------------------------------
# Strict replay


def expect_replay(s: Session, payload: Any, rule: str) -> None:
    before = s.state
    event = Event(s.state.last_seq + 1, PLAN_ARTIFACT, s.clock + 1, payload)
    for _ in range(2):  # the same position every time it is asked
        with pytest.raises(ReplayError) as info:
            apply_session_event(s.state, event)
        assert (info.value.position, info.value.rule) == (event.seq, rule), info.value.detail
    with pytest.raises(ReplayError) as again:
        fold_session([*s.log, event])
    assert (again.value.position, again.value.rule) == (event.seq, rule)
    assert s.state == before


@pytest.mark.parametrize(
    "payload",
    [
        {"action": "publish", "plan_id": "p1", "revision": 1},
        {"action": "verify", "plan_id": "p1"},
        {"action": "verify", "plan_id": "p1", "revision": 1, "extra": 0},
        {"action": "verify", "plan_id": "", "revision": 1},
        {"action": "verify", "plan_id": "p1", "revision": True},
        {"action": "todo", "plan_id": "p1", "revision": 1, "todo_id": "t1", "status": "later"},
        [],
    ],
)
def test_malformed_payloads(payload: Any) -> None:
    expect_replay(executing(), payload, "malformed-payload")


def test_malformed_spec_inside_a_draft() -> None:
    s = Session()
    s.mode(True)
    bad = content()
    bad["spec"] = {**bad["spec"], "steps": "one"}
    expect_replay(s, bad, "malformed-payload")


def test_draft_rules() -> None:
    s = Session()
    expect_replay(s, content(), "wrong-mode")  # build mode: drafts come from plan mode
    s.mode(True)
    expect_replay(s, content(revision=2), "revision-gap")
    expect_replay(s, content(the_spec=spec(goal=" ")), "invalid-spec")
    blocking = spec(open_questions=(OpenQuestion("db?", True),))
    expect_replay(s, content(the_spec=blocking), "invalid-spec")
    s.raw(PLAN_ARTIFACT, content())
    expect_replay(s, content(plan_id="p2"), "transition-not-allowed")  # a live plan exists
    s.add(supersede_event(s.state))
    expect_replay(s, content(), "id-reused")
    s.raw(PLAN_ARTIFACT, content(plan_id="p2"))
    assert s.state.plan.current is not None and s.state.plan.current.id == "p2"


def test_summary_rules() -> None:
    s = Session()
    s.mode(True)
    other = build_summary_view(spec(todos_=(Todo("zz", "x"),)))
    expect_replay(s, content(summary=other), "invalid-summary")
    shorter = replace(build_summary_view(spec()), key_steps=("x",))
    expect_replay(s, content(summary=shorter), "invalid-summary")  # runtime must equal build
    expect_replay(s, content(summary=shorter, summary_source="model", summary_rejected=["x"]), "invalid-summary")
    s.raw(PLAN_ARTIFACT, content(summary=shorter, summary_source="model"))
    assert s.state.plan.summary_source == "model"


def test_rewrite_rules() -> None:
    s = drafted()
    changed = spec(goal="Add an import command too")
    expect_replay(s, content(revision=1, the_spec=changed, action="rewrite"), "stale-revision")
    expect_replay(s, content(revision=3, the_spec=changed, action="rewrite"), "revision-gap")
    expect_replay(s, content(plan_id="p9", revision=2, the_spec=changed, action="rewrite"), "plan-mismatch")
    expect_replay(s, content(revision=2, action="rewrite"), "rewrite-without-change")
    progressed = spec(todos_=(Todo("t1", "flags", "done"), Todo("t2", "exporter")))
    expect_replay(s, content(revision=2, the_spec=progressed, action="rewrite"), "rewrite-without-change")
    s.raw(PLAN_ARTIFACT, content(revision=2, the_spec=changed, action="rewrite"))
    assert s.state.plan.current is not None and s.state.plan.current.revision == 2


def test_approval_rules() -> None:
    s = drafted()
    ref = current_ref(s)
    approve = {"action": "approve", "plan_id": ref.plan_id, "revision": 1, "spec_hash": ref.spec_hash}
    expect_replay(s, {**approve, "plan_id": "p0"}, "approval-mismatch")
    expect_replay(s, {**approve, "spec_hash": "0" * 64}, "approval-mismatch")
    expect_replay(s, {**approve, "revision": 2}, "revision-gap")
    s.add(rewrite_event(s.state, spec(goal="other"), None))
    expect_replay(s, approve, "stale-revision")  # the approval of revision 1 is void
    reject = {"action": "reject", "plan_id": "p1", "revision": 2, "spec_hash": "0" * 64, "note": None}
    expect_replay(s, reject, "hash-mismatch")


def test_start_rules() -> None:
    s = drafted()
    ref = current_ref(s)
    start = {"action": "start", "plan_id": "p1", "revision": 1, "spec_hash": ref.spec_hash}
    expect_replay(s, start, "transition-not-allowed")  # a draft never starts
    s.add(approve_event(s.state, ref))
    expect_replay(s, start, "wrong-mode")  # plan mode is read-only
    s.mode(False)
    expect_replay(s, {**start, "spec_hash": "f" * 64}, "approval-mismatch")
    s.raw(PLAN_ARTIFACT, start)
    assert s.state.plan.status == "executing"


def test_execution_rules() -> None:
    s = executing()
    todo = {"action": "todo", "plan_id": "p1", "revision": 1, "todo_id": "t9", "status": "done"}
    expect_replay(s, todo, "unknown-todo")
    expect_replay(s, {**todo, "todo_id": "t1", "status": "pending"}, "todo-unchanged")
    expect_replay(s, {**todo, "todo_id": "t1", "revision": 0}, "malformed-payload")
    complete = {"action": "complete", "plan_id": "p1", "revision": 1}
    expect_replay(s, complete, "transition-not-allowed")  # only from verify
    s.add(verify_event(s.state))
    expect_replay(s, {"action": "verify", "plan_id": "p1", "revision": 1}, "transition-not-allowed")
    s.mode(True)
    expect_replay(s, complete, "wrong-mode")
    s.mode(False)
    s.raw(PLAN_ARTIFACT, complete)
    expect_replay(s, {"action": "supersede", "plan_id": "p1", "revision": 1, "note": None}, "transition-not-allowed")


# --------------------------------------------------------------------------
# What the replay checks say: rule, position and detail


def replay_refusal(s: Session, payload: dict[str, Any]) -> tuple[int, str, str]:
    """(position, rule, detail) of the refusal of ``payload`` as the next event."""
    event = Event(s.state.last_seq + 1, PLAN_ARTIFACT, s.clock + 1, payload)
    with pytest.raises(ReplayError) as info:
        apply_plan_event(s.state.plan, event, s.state.plan_mode)
    assert info.value.position == event.seq
    return info.value.position, info.value.rule, info.value.detail


def test_starting_an_approved_plan_keeps_its_approval_and_superseding_it_voids_the_approval() -> None:
    s = drafted()
    s.add(approve_event(s.state, current_ref(s)))
    ref = current_ref(s)
    s.mode(False)
    s.add(start_event(s.state, ref))
    assert (s.state.plan.status, s.state.plan.approval) == ("executing", ref)
    s.add(supersede_event(s.state))
    assert (s.state.plan.status, s.state.plan.approval) == ("superseded", None)


def test_a_reused_plan_id_is_named_in_the_refusal() -> None:
    s = drafted()
    s.add(supersede_event(s.state))
    _, rule, detail = replay_refusal(s, content())
    assert (rule, detail) == ("id-reused", "plan id 'p1' was used before")


def test_a_stale_revision_names_both_revisions() -> None:
    s = drafted()
    _, rule, detail = replay_refusal(s, content(revision=1, the_spec=spec(goal="other"), action="rewrite"))
    assert (rule, detail) == ("stale-revision", "revision 1 is older than revision 2")


def test_an_invalid_spec_refusal_lists_every_problem_separated_by_semicolons() -> None:
    s = Session()
    s.mode(True)
    _, rule, detail = replay_refusal(s, content(the_spec=spec(goal=" ", steps=())))
    assert (rule, detail) == ("invalid-spec", "goal: goal must not be empty; steps: steps must not be empty")


def test_an_adopted_model_summary_with_rejection_reasons_is_refused_with_the_reason() -> None:
    s = Session()
    s.mode(True)
    _, rule, detail = replay_refusal(s, content(summary_source="model", summary_rejected=["too long"]))
    assert (rule, detail) == ("invalid-summary", "an adopted model summary has no rejection reasons")


def test_a_rewrite_that_changes_nothing_says_a_rewrite_must_change_the_substance() -> None:
    _, rule, detail = replay_refusal(drafted(), content(revision=2, action="rewrite"))
    assert (rule, detail) == ("rewrite-without-change", "a rewrite must change the plan's substance")


def test_the_verify_phase_refusals_say_inside_or_outside() -> None:
    s = executing()
    _, rule, detail = replay_refusal(s, {"action": "verify-fail", "plan_id": "p1", "revision": 1, "note": None})
    assert (rule, detail) == ("transition-not-allowed", "only allowed inside the verify phase")
    s.add(verify_event(s.state))
    _, rule, detail = replay_refusal(s, {"action": "verify", "plan_id": "p1", "revision": 1})
    assert (rule, detail) == ("transition-not-allowed", "only allowed outside the verify phase")


def test_an_approved_plan_whose_standing_approval_covers_another_version_does_not_start() -> None:
    s = drafted()
    ref = current_ref(s)
    s.add(approve_event(s.state, ref))
    s.mode(False)
    start: dict[str, Any] = {"action": "start", "plan_id": "p1", "revision": 1, "spec_hash": ref.spec_hash}
    seq = s.state.last_seq + 1
    event = Event(seq, PLAN_ARTIFACT, s.clock + 1, start)
    for approval in (None, PlanRef("p1", 1, "0" * 64), PlanRef("p0", 1, ref.spec_hash)):
        state = replace(s.state.plan, approval=approval)
        with pytest.raises(ReplayError) as info:
            apply_plan_event(state, event, False)
        assert (info.value.position, info.value.rule, info.value.detail) == (
            seq,
            "approval-mismatch",
            "the approval does not cover this exact version",
        )
    assert apply_plan_event(s.state.plan, event, False).status == "executing"


# --------------------------------------------------------------------------
# Builders refuse with the same rules and change nothing


def test_builders_refuse_with_typed_errors() -> None:
    s = Session()
    cases: list[tuple[Any, str]] = [
        (verify_event, "no-plan"),
        (lambda st_: rewrite_event(st_, spec(), None), "no-plan"),
        (lambda st_: draft_event(st_, "p1", spec(), None), "wrong-mode"),
        (lambda st_: start_event(st_, PlanRef("p1", 1, "h")), "transition-not-allowed"),
    ]
    for build, code in cases:
        before = s.state
        with pytest.raises(PlanChangeError) as info:
            build(s.state)
        assert info.value.code == code and is_kebab_case(info.value.code)
        assert s.state == before
    s = drafted()
    with pytest.raises(PlanChangeError) as err:
        realign_event(s.state, "why")
    assert err.value.code == "transition-not-allowed" and err.value.action == "realign"
    with pytest.raises(PlanChangeError) as err:
        bootstrap_event(s.state, "p2", spec(), None)
    assert err.value.code == "transition-not-allowed"
    with pytest.raises(PlanChangeError) as err:
        draft_event(s.state, "p2", spec(goal=""), None)
    assert err.value.code == "transition-not-allowed"  # the live plan is checked first


@pytest.mark.parametrize(
    ("build", "action"),
    [
        (lambda state: rewrite_event(state, spec(), None), "rewrite"),
        (lambda state: todo_event(state, "t1", "done"), "todo"),
    ],
)
def test_a_change_to_no_plan_is_refused_naming_the_action(
    build: Callable[[SessionState], Draft], action: str
) -> None:
    with pytest.raises(PlanChangeError) as caught:
        build(SessionState())
    err = caught.value
    assert (err.code, err.action, err.detail) == ("no-plan", action, "the session has no plan")
    assert str(err) == f"cannot {action} the plan: the session has no plan"


def test_reject_keeps_the_draft_and_the_feedback() -> None:
    s = drafted()
    before = s.state.plan.current
    s.add(reject_event(s.state, current_ref(s), "split step two"))
    assert s.state.plan.current == before
    assert s.state.plan.feedback == "split step two"


def test_verify_failure_returns_to_execution() -> None:
    s = executing()
    s.add(verify_event(s.state))
    s.add(verify_fail_event(s.state, "a test failed"))
    assert s.state.plan.status == "executing" and not s.state.plan.verifying
    assert s.state.plan.verify_failures == 1
    with pytest.raises(PlanChangeError) as err:
        complete_event(s.state)
    assert err.value.code == "transition-not-allowed"


def test_approving_a_rejected_draft_clears_the_feedback() -> None:
    s = drafted()
    s.add(reject_event(s.state, current_ref(s), "split step two"))
    assert s.state.plan.feedback == "split step two"
    s.add(approve_event(s.state, current_ref(s)))
    assert s.state.plan.feedback is None and s.state.plan.status == "approved"


def test_rewriting_a_rejected_draft_clears_the_feedback() -> None:
    s = drafted()
    s.add(reject_event(s.state, current_ref(s), "split step two"))
    s.add(rewrite_event(s.state, spec(goal="Add an export command, in two steps"), None))
    assert s.state.plan.feedback is None
    assert s.state.plan.current is not None and s.state.plan.current.revision == 2


def verifying() -> Session:
    """``executing()`` in its verify phase."""
    s = executing()
    s.add(verify_event(s.state))
    assert s.state.plan.verifying
    return s


def test_a_rewrite_during_verification_ends_the_verify_phase() -> None:
    s = verifying()
    s.add(rewrite_event(s.state, spec(goal="Another goal"), None))
    plan = s.state.plan
    assert (plan.status, plan.verifying, plan.realign) == ("draft", False, "the plan was rewritten during execution")


def test_a_realignment_during_verification_ends_the_verify_phase() -> None:
    s = verifying()
    s.add(realign_event(s.state, "an effect outside the scope"))
    plan = s.state.plan
    assert (plan.status, plan.verifying, plan.realign) == ("draft", False, "an effect outside the scope")


@pytest.mark.parametrize("note", [None, ""])
def test_a_realignment_without_a_reason_gets_the_default_reason(note: str | None) -> None:
    s = verifying()
    s.raw(PLAN_ARTIFACT, {"action": "realign", "plan_id": "p1", "revision": 1, "note": note})
    assert s.state.plan.realign == "realignment was requested"


def test_todo_progress_keeps_revision_and_hash_and_moves_updated_at() -> None:
    s = executing()
    assert s.state.plan.current is not None
    ref, created = s.state.plan.current.ref, s.state.plan.current.created_at
    s.add(todo_event(s.state, "t1", "in_progress"))
    s.add(todo_event(s.state, "t1", "done"))
    cur = s.state.plan.current
    assert cur.ref == ref and cur.created_at == created and cur.updated_at == s.clock
    assert cur.summary.active_todo_ids == ("t2",)


# --------------------------------------------------------------------------
# Decisions over proposed changes


@given(valid_specs(), st.sampled_from(["goal", "step", "verify", "constraint", "todo", "question"]))
def test_classify_change(base: PlanSpec, part: str) -> None:
    assert classify_change(base, base) == "none"
    first = base.todos[0]
    flipped: TodoStatus = "done" if first.status != "done" else "pending"
    progressed = replace(base, todos=(replace(first, status=flipped), *base.todos[1:]))
    assert classify_change(base, progressed) == "progress"
    changed = {
        "goal": lambda: replace(base, goal=base.goal + " now"),
        "step": lambda: replace(base, steps=(*base.steps, "another")),
        "verify": lambda: replace(base, verify=base.verify[:-1]),
        "constraint": lambda: replace(base, constraints=(*base.constraints, "keep it small")),
        "todo": lambda: replace(base, todos=(*base.todos, Todo("new!", "more"))),
        "question": lambda: replace(base, open_questions=(*base.open_questions, OpenQuestion("?"))),
    }[part]()
    assert classify_change(base, changed) == "substantive"


def test_exit_plan_events_drafts_rewrites_or_does_nothing() -> None:
    s = Session()
    s.mode(True)
    (first,) = exit_plan_events(s.state, ExitPlanArgs(spec(), GOOD_CANDIDATE), "p1")
    s.add(first)
    assert exit_plan_events(s.state, ExitPlanArgs(spec(), None), "p2") == ()
    (second,) = exit_plan_events(s.state, ExitPlanArgs(spec(goal="new goal"), None), "p2")
    assert second.payload["action"] == "rewrite" and second.payload["plan_id"] == "p1"
    s.add(second)
    s.add(supersede_event(s.state))
    (third,) = exit_plan_events(s.state, ExitPlanArgs(spec(), None), "p2")
    assert third.payload["action"] == "draft" and third.payload["plan_id"] == "p2"


def test_update_plan_events_turns_progress_into_todo_events() -> None:
    s = executing()
    assert s.state.plan.current is not None
    todos = (Todo("t1", "flags", "done"), Todo("t2", "exporter", "in_progress"))
    drafts = update_plan_events(s.state, spec(todos_=todos), None)
    assert [read_plan_action(d.payload).action for d in drafts] == ["todo", "todo"]
    for event in drafts:
        s.add(event)
    assert s.state.plan.current.spec.todos == todos
    assert s.state.plan.current.revision == 1


@given(valid_specs())
def test_fold_plans_agrees_with_the_session_fold(the_spec: PlanSpec) -> None:
    s = Session()
    s.mode(True)
    s.add(draft_event(s.state, "p", the_spec, None))
    s.discuss()
    s.request()
    s.add(approve_event(s.state, current_ref(s)))
    assert fold_plans(s.log) == s.state.plan == fold_session(s.log).plan
