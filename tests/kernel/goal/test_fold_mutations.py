"""Every single mutation at every position of generated valid goal logs.

Valid logs are built with the real operations (and checked valid by both the
kernel and the plain model in ``tests.goal_model``). Each mutant is folded by
the kernel and checked by the model: when the model finds a first bad event,
the kernel must reject the mutant at that position with that rule (whole and
incremental folds alike, the incremental one keeping the valid prefix); when
the model finds the mutant still valid, the kernel must accept it with the
same state.
"""

from __future__ import annotations

from hypothesis import event, given, note, settings

from planfold.kernel.errors import ReplayError
from planfold.kernel.goal.fold import GOAL_REPLAY_RULES, GoalFold, advance_goal_fold, fold_goal
from planfold.kernel.log import Event
from tests.goal_logs import MUTATIONS, valid_logs
from tests.goal_model import check_log, same_goal_state, to_state


def check_mutant(mutant: list[Event]) -> str:
    """Compare kernel and model on one mutant; return the rule (or "valid")."""
    model, failure = check_log(mutant)
    whole = advance_goal_fold(GoalFold(), mutant)
    half = len(mutant) // 2
    chunked = advance_goal_fold(advance_goal_fold(GoalFold(), mutant[:half]), mutant[half:])
    assert chunked == whole
    assert same_goal_state(whole.state, to_state(model)), "the fold keeps exactly the valid prefix"
    if failure is None:
        assert whole.failure is None
        assert same_goal_state(fold_goal(mutant), to_state(model))
        return "valid"
    assert whole.failure is not None, f"kernel accepted a mutant the model rejects: {failure}"
    assert (whole.failure.position, whole.failure.rule) == failure
    assert failure[1] in GOAL_REPLAY_RULES
    try:
        fold_goal(mutant)
    except ReplayError as exc:
        assert (exc.position, exc.rule) == failure
    else:
        raise AssertionError("fold_goal accepted an invalid log")
    # Asking again gives the same answer.
    again = advance_goal_fold(whole, mutant)
    assert again == whole
    return failure[1]


@settings(max_examples=min(settings().max_examples, 150))
@given(valid_logs())
def test_every_mutation_at_every_position_is_judged_like_the_model(log: list[Event]) -> None:
    model, failure = check_log(log)
    assert failure is None
    assert same_goal_state(fold_goal(log), to_state(model))
    for position in range(len(log)):
        for name, mutation in MUTATIONS.items():
            mutant = mutation(log, position)
            if mutant is None:
                continue
            note(f"{name} at index {position}")
            outcome = check_mutant(mutant)
            event(f"{name}: {outcome}")
