"""The ``/goal`` parser: control verbs are recognised before any text is
taken as an objective."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planfold.kernel.goal.command import CONTROL_VERBS, GoalCommand, GoalCommandError, parse_goal_command


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ("/goal", GoalCommand("show")),
        ("  /goal  ", GoalCommand("show")),
        ("/goal ship the importer", GoalCommand("create", "ship the importer")),
        ("/goal   ship   it  ", GoalCommand("create", "ship   it")),
        ("/goal new pause the rollout", GoalCommand("create", "pause the rollout")),
        ("/goal edit ship it with docs", GoalCommand("edit", "ship it with docs")),
        ("/goal pause", GoalCommand("pause")),
        ("/goal resume", GoalCommand("resume")),
        ("/goal complete", GoalCommand("complete")),
        ("/goal clear", GoalCommand("clear")),
        ("/goal CLEAR", GoalCommand("clear")),
        ("/goal\tclear\n", GoalCommand("clear")),
        ("/goal Pause", GoalCommand("pause")),
        ("/goal clearly a goal", GoalCommand("create", "clearly a goal")),
    ],
)
def test_parse(text: str, command: GoalCommand) -> None:
    assert parse_goal_command(text) == command


@pytest.mark.parametrize("text", ["", "goal", "/goals", "/goalkeeper clear", "hello /goal clear", "/plan"])
def test_not_a_goal_command(text: str) -> None:
    assert parse_goal_command(text) is None


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("/goal new", "missing-objective"),
        ("/goal edit   ", "missing-objective"),
        ("/goal clear now", "unexpected-argument"),
        ("/goal pause after verification", "unexpected-argument"),
        ("/goal resume please", "unexpected-argument"),
        ("/goal complete it", "unexpected-argument"),
    ],
)
def test_a_misused_verb_is_refused(text: str, code: str) -> None:
    with pytest.raises(GoalCommandError) as info:
        parse_goal_command(text)
    assert info.value.code == code


@pytest.mark.parametrize(
    ("text", "code", "message"),
    [
        ("/goal NEW", "missing-objective", "/goal new needs an objective after it"),
        ("/goal Edit   ", "missing-objective", "/goal edit needs an objective after it"),
        (
            "/goal PAUSE now",
            "unexpected-argument",
            "/goal pause takes nothing after it; to set a goal that starts with 'PAUSE', write /goal new PAUSE now",
        ),
    ],
)
def test_a_misused_goal_verb_is_refused_with_the_verb_in_lower_case(text: str, code: str, message: str) -> None:
    with pytest.raises(GoalCommandError) as caught:
        parse_goal_command(text)
    assert (caught.value.code, str(caught.value)) == (code, message)


@given(st.sampled_from(sorted(CONTROL_VERBS)), st.sampled_from(["", " ", "  \t"]))
def test_a_control_verb_is_never_an_objective(verb: str, tail: str) -> None:
    for spelling in (verb, verb.upper(), verb.title()):
        try:
            command = parse_goal_command(f"/goal {spelling}{tail}")
        except GoalCommandError as exc:
            assert exc.code == "missing-objective"
            assert CONTROL_VERBS[verb][1]
            continue
        assert command is not None
        assert command.verb == CONTROL_VERBS[verb][0]
        assert command.objective is None


@given(st.text())
def test_any_text_parses_or_is_refused_with_a_code(text: str) -> None:
    try:
        command = parse_goal_command("/goal " + text)
    except GoalCommandError as exc:
        assert exc.code in ("missing-objective", "unexpected-argument")
        return
    assert command is not None
    if command.objective is not None:
        assert command.objective == command.objective.strip() != ""
        first = command.objective.split(maxsplit=1)[0].lower()
        explicit = text.split(maxsplit=1)[0].lower() in ("new", "edit")
        assert explicit or first not in CONTROL_VERBS


def test_edit_takes_any_objective_literally_too() -> None:
    assert parse_goal_command("/goal edit pause later") == GoalCommand("edit", "pause later")


@given(st.text(min_size=1).filter(lambda t: t.strip() != ""))
def test_new_takes_any_objective_literally(objective: str) -> None:
    assert parse_goal_command(f"/goal new {objective}") == GoalCommand("create", objective.strip())
