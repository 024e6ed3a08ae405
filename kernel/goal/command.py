"""The ``/goal`` command: control verbs first, objectives second.

Theory of operation
-------------------
A user controls the goal with one command. The parser looks at the first word
after ``/goal`` and, when it is one of ``CONTROL_VERBS`` (in any letter case),
treats the input as that control command, before any text could be taken as
an objective. So ``/goal clear`` always clears and is never a new goal called
"clear", and ``/goal pause now`` is refused as a malformed pause rather than
silently creating the goal "pause now". An objective that really starts with a
control word is written with the explicit verb: ``/goal new pause the
rollout``.

| input                      | command                                  |
|----------------------------|------------------------------------------|
| ``/goal``                  | ``show``: status of the current goal     |
| ``/goal <objective>``      | ``create`` with that objective           |
| ``/goal new <objective>``  | ``create``, even if it starts with a verb |
| ``/goal edit <objective>`` | ``edit`` the objective                   |
| ``/goal pause``            | ``pause``                                |
| ``/goal resume``           | ``resume``                               |
| ``/goal complete``         | ``complete``                             |
| ``/goal clear``            | ``clear``                                |

Text that does not start with the word ``/goal`` (``/goals``, ``/goalkeeper``)
is not this command: the parser returns ``None``. Objectives are trimmed;
validating them further is the operation's job.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from ..errors import GoalError

__all__ = [
    "CONTROL_VERBS",
    "GoalCommand",
    "GoalCommandError",
    "GoalVerb",
    "parse_goal_command",
]

GoalVerb = Literal["show", "create", "edit", "pause", "resume", "complete", "clear"]

#: Words recognised as control verbs right after ``/goal``, and the command
#: each one means. ``True`` marks verbs that take an objective after them.
CONTROL_VERBS: Mapping[str, tuple[GoalVerb, bool]] = {
    "new": ("create", True),
    "edit": ("edit", True),
    "pause": ("pause", False),
    "resume": ("resume", False),
    "complete": ("complete", False),
    "clear": ("clear", False),
}

_NAME = "/goal"


class GoalCommandError(GoalError):
    """A ``/goal`` command the user must correct. Codes:
    ``missing-objective`` (``/goal new`` or ``/goal edit`` with no text),
    ``unexpected-argument`` (text after a verb that takes none)."""

    codes = frozenset({"missing-objective", "unexpected-argument"})


@dataclass(frozen=True, slots=True)
class GoalCommand:
    """A parsed ``/goal``: the verb and, for create and edit, the objective."""

    verb: GoalVerb
    objective: str | None = None


def parse_goal_command(text: str) -> GoalCommand | None:
    """Parse a ``/goal`` command; ``None`` when ``text`` is not one.

    Raises ``GoalCommandError`` for a control verb used wrongly.
    """
    head, rest = _split_ws(text)
    if head != _NAME:
        return None
    if not rest:
        return GoalCommand("show")
    word, argument = _split_ws(rest)
    control = CONTROL_VERBS.get(word.lower())
    if control is None:
        return GoalCommand("create", rest)
    verb, takes_objective = control
    if takes_objective:
        if not argument:
            raise GoalCommandError(
                f"/goal {word.lower()} needs an objective after it", code="missing-objective"
            )
        return GoalCommand(verb, argument)
    if argument:
        raise GoalCommandError(
            f"/goal {word.lower()} takes nothing after it; to set a goal that starts with "
            f"{word!r}, write /goal new {rest}",
            code="unexpected-argument",
        )
    return GoalCommand(verb)


def _split_ws(text: str) -> tuple[str, str]:
    """The first word of ``text`` and the trimmed rest (split at any whitespace)."""
    parts = text.split(maxsplit=1)
    if not parts:
        return "", ""
    return parts[0], (parts[1].strip() if len(parts) > 1 else "")
