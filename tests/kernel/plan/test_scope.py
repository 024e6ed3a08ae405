"""Plan scope: effects outside it are flagged and send the plan to realignment."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planfold.kernel.plan.events import PlanChangeError
from planfold.kernel.plan.scope import Effect, ResolvedTarget, check_scope, path_in_scope
from planfold.kernel.plan.spec import PlanScope
from planfold.kernel.plan_events import approve_event, draft_event, scope_realign_event, start_event
from tests.plan_helpers import Session, spec

SCOPED = spec(scope=PlanScope(paths=("src/", "docs/*.md", "README.md"), effects=("read", "write")))


@pytest.mark.parametrize(
    ("path", "inside"),
    [
        ("src/app.py", True),
        ("src", True),
        ("src/deep/er/x.py", True),
        ("./src/app.py", True),
        ("docs/guide.md", True),
        ("README.md", True),
        ("srcs/app.py", False),
        ("docs/guide.txt", False),
        ("src/../secrets.env", False),
        ("../outside/src/x.py", False),
        ("/etc/passwd", False),
        ("", False),
    ],
)
def test_path_coverage(path: str, inside: bool) -> None:
    assert path_in_scope(path, SCOPED.scope.paths if SCOPED.scope else ()) is inside


def test_blank_and_absolute_patterns_cover_nothing() -> None:
    assert not path_in_scope("a.py", ["", "/", "/a.py", "../a.py"])
    assert path_in_scope("a/b.py", ["."])


@pytest.mark.parametrize(
    ("path", "patterns"),
    [
        ("/etc/passwd", ["/etc"]),
        ("/etc/passwd", ["/"]),
        ("", ["."]),
        ("..", ["."]),
        ("..", [".."]),
        ("../outside.py", ["."]),
    ],
)
def test_a_path_that_leaves_the_workspace_is_in_no_scope(path: str, patterns: list[str]) -> None:
    assert not path_in_scope(path, patterns)


@pytest.mark.parametrize(
    ("path", "pattern", "covered"),
    [
        ("src/a.py", "src/", True),
        ("src/a.py", "src//", True),
        ("src/a.py", "src ", False),
        ("build/other.py", "build/X", False),
        ("build/X/a.py", "build/X/", True),
        ("X/a.py", "X/", True),
    ],
)
def test_patterns_are_literal_but_for_trailing_slashes(path: str, pattern: str, covered: bool) -> None:
    assert path_in_scope(path, [pattern]) is covered


def test_every_violation_is_listed() -> None:
    verdict = check_scope(
        SCOPED,
        [
            Effect("write", "src/a.py"),
            Effect("shell"),
            Effect("write", "tests/t.py"),
            Effect("write", "../x"),
            Effect("network", "docs/x.md"),
        ],
    )
    assert [(v.effect, v.code) for v in verdict.violations] == [
        (Effect("shell"), "effect-outside-scope"),
        (Effect("write", "tests/t.py"), "path-outside-scope"),
        (Effect("write", "../x"), "path-escapes"),
        (Effect("network", "docs/x.md"), "effect-outside-scope"),
    ]
    assert verdict.realign_needed and "tests/t.py" in verdict.reason


def test_an_effect_whose_targets_cannot_be_determined_is_outside_a_scope_with_paths() -> None:
    verdict = check_scope(SCOPED, [Effect.unknown("write"), Effect("write"), Effect("write", "src/a.py")])
    assert [(v.effect, v.code) for v in verdict.violations] == [(Effect.unknown("write"), "target-unknown")]
    assert [v.message for v in verdict.violations] == [
        "what the write effect acts on cannot be determined, so it cannot be kept inside the plan's scope"
    ]
    assert "cannot be determined" in verdict.reason
    # without a path axis the targets do not matter; the effect kind still does
    effects_only = spec(scope=PlanScope(effects=("write",)))
    assert check_scope(effects_only, [Effect.unknown("write")]).violations == ()
    assert [v.code for v in check_scope(effects_only, [Effect.unknown("shell")]).violations] == [
        "effect-outside-scope"
    ]
    assert check_scope(spec(), [Effect.unknown("shell")]).violations == ()


def _resolved(path: str, *places: str | None, why: str = "a link loop") -> Effect:
    return Effect("write", path, resolved=tuple(ResolvedTarget(p, "" if p else why) for p in places))


def test_a_path_named_inside_the_scope_that_lands_outside_it_is_refused_where_it_lands() -> None:
    effect = _resolved("src/o/secret", "src/o/secret", "outside/secret")
    [violation] = check_scope(SCOPED, [effect]).violations
    assert (violation.effect, violation.code) == (effect, "resolved-outside-scope")
    assert violation.message == "path 'src/o/secret' really lands at 'outside/secret', outside the plan's scope"


def test_a_path_that_lands_inside_the_scope_wherever_it_leads_passes() -> None:
    assert check_scope(SCOPED, [_resolved("src/l", "src/l", "docs/a.md", "README.md")]).violations == ()


def test_a_path_whose_landing_cannot_be_resolved_is_refused_with_the_resolvers_reason() -> None:
    effect = _resolved("src/h", "src/h", None, why="a file with 2 hard links")
    [violation] = check_scope(SCOPED, [effect]).violations
    assert (violation.effect, violation.code) == (effect, "target-unresolvable")
    assert violation.message == (
        "where path 'src/h' lands cannot be resolved (a file with 2 hard links), so it cannot be kept "
        "inside the plan's scope"
    )


def test_every_place_a_path_lands_outside_the_scope_is_listed() -> None:
    effect = _resolved("src/x", None, "tests/x", "src/y", "etc/z")
    assert [v.code for v in check_scope(SCOPED, [effect]).violations] == [
        "target-unresolvable",
        "resolved-outside-scope",
        "resolved-outside-scope",
    ]


def test_a_resolution_that_found_no_place_at_all_is_refused() -> None:
    effect = Effect("write", "src/a.py", resolved=())
    [violation] = check_scope(SCOPED, [effect]).violations
    assert (violation.effect, violation.code) == (effect, "target-unresolvable")
    assert violation.message == (
        "where path 'src/a.py' lands was not resolved, so it cannot be kept inside the plan's scope"
    )


def test_where_a_path_lands_is_checked_only_when_its_name_is_inside_a_scope_with_paths() -> None:
    outside = Effect("write", "tests/t.py", resolved=(ResolvedTarget(None, "loop"),))
    escaping = Effect("write", "../t.py", resolved=(ResolvedTarget(None, "outside"),))
    assert [v.code for v in check_scope(SCOPED, [outside, escaping]).violations] == [
        "path-outside-scope",
        "path-escapes",
    ]
    effects_only = spec(scope=PlanScope(effects=("write",)))
    assert check_scope(effects_only, [_resolved("src/a", None, "etc/x")]).violations == ()
    assert check_scope(spec(), [_resolved("src/a", None, "etc/x")]).violations == ()


def test_an_unresolved_effect_is_checked_by_its_name_alone() -> None:
    assert check_scope(SCOPED, [Effect("write", "src/a.py")]).violations == ()


@given(st.lists(st.builds(Effect, st.sampled_from(["read", "write", "shell"]), st.none() | st.text())))
def test_no_scope_flags_nothing(effects: list[Effect]) -> None:
    verdict = check_scope(spec(), effects)
    assert verdict.violations == () and not verdict.realign_needed


@given(st.lists(st.builds(Effect, st.just("write"), st.none() | st.text(max_size=8))))
def test_empty_axes_are_unrestricted(effects: list[Effect]) -> None:
    assert check_scope(spec(scope=PlanScope()), effects).violations == ()


def test_leaving_scope_during_execution_sends_the_plan_to_realignment() -> None:
    s = Session()
    s.mode(True)
    s.add(draft_event(s.state, "p1", SCOPED, None))
    assert s.state.plan.current is not None
    s.add(approve_event(s.state, s.state.plan.current.ref))
    s.mode(False)
    s.add(start_event(s.state, s.state.plan.current.ref))
    assert scope_realign_event(s.state, [Effect("write", "src/x.py")]) is None
    event = scope_realign_event(s.state, [Effect("write", "Makefile")])
    assert event is not None
    s.add(event)
    assert s.state.plan.status == "draft" and s.state.plan.approval is None
    assert s.state.plan.realign is not None and "Makefile" in s.state.plan.realign
    with pytest.raises(PlanChangeError) as err:  # already a draft: nothing more to realign
        scope_realign_event(s.state, [Effect("write", "Makefile")])
    assert err.value.code == "transition-not-allowed"
    s.mode(True)
    s.add(approve_event(s.state, s.state.plan.current.ref))  # realigned: same version
    assert s.state.plan.realign is None and s.state.plan.status == "approved"


def test_no_plan_no_realignment() -> None:
    assert scope_realign_event(Session().state, [Effect("write", "x")]) is None
