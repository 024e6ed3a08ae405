"""The kernel's typed refusals.

Every decision in the kernel is total: it returns a value or raises one of
these. Each error carries a stable kebab-case ``code`` that callers may route
on, and its context as attributes. The message says whose fault it was: the
caller's input, the stored log, or a concurrent writer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = [
    "KEBAB_CASE",
    "ConflictError",
    "GateError",
    "GoalError",
    "KernelError",
    "PayloadError",
    "PlanError",
    "PlanfoldError",
    "Problem",
    "ReplayError",
    "is_kebab_case",
]

#: The shape of every ``code`` and ``rule`` in planfold.
KEBAB_CASE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


def is_kebab_case(text: str) -> bool:
    """True when ``text`` is a stable kebab-case code such as ``seq-gap``."""
    return KEBAB_CASE.fullmatch(text) is not None


class PlanfoldError(Exception):
    """Root of every error planfold raises on purpose: ``except PlanfoldError``
    catches them all, and nothing else.

    ``code`` is stable and kebab-case; subclasses either fix it on the class or
    take it per instance (when one class covers several situations). Two
    families sit beneath it: ``KernelError``, the kernel's refusals of a
    decision or a log, and the adapters' ``AdapterError`` (storage, model
    clients, codecs, the runtime's own I/O).
    """

    code: str = "planfold-error"
    #: The other codes an instance may carry (besides the class's ``code``);
    #: the README's table of error codes lists exactly these.
    codes: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            if code != type(self).code and code not in type(self).codes:
                # A bug in planfold itself: every code is declared on its class.
                raise ValueError(f"{code!r} is not a declared code of {type(self).__name__}")
            self.code = code
        self.message = message

    def __reduce__(self) -> tuple[Any, ...]:
        # Keep errors picklable across processes (the storage contention tests
        # send them between workers): rebuild from the instance dict.
        return (_rebuild, (type(self), self.args, dict(self.__dict__)))


class KernelError(PlanfoldError):
    """Root of every refusal the kernel makes: the caller's input, or a stored
    log, does not satisfy a rule. Each machine has its own base beneath it
    (``PlanError``, ``GoalError``, ``GateError``)."""

    code = "kernel-error"


def _rebuild(cls: type[PlanfoldError], args: tuple[Any, ...], state: dict[str, Any]) -> PlanfoldError:
    err = cls.__new__(cls)
    Exception.__init__(err, *args)
    err.__dict__.update(state)
    return err


class ReplayError(KernelError):
    """A stored log is not a valid history: the log's fault, never repaired.

    ``position`` is the ``seq`` of the first bad event, ``rule`` the kebab-case
    name of the rule it breaks (``seq-gap``, ``stale-revision`` …) and
    ``detail`` a sentence for a human.
    """

    code = "replay-error"

    def __init__(self, position: int, rule: str, detail: str) -> None:
        if not is_kebab_case(rule):
            raise ValueError(f"replay rule {rule!r} is not kebab-case")
        super().__init__(f"invalid log at seq {position} [{rule}]: {detail}")
        self.position = position
        self.rule = rule
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a value: a kebab-case ``code``, where it is (a
    path such as ``payload.goal.max_rounds`` or ``plan_spec.todos[2].id``) and
    a sentence."""

    code: str
    where: str
    message: str


class PayloadError(KernelError):
    """A payload does not have the exact shape its kind requires.

    Raised by the typed reader (``kernel.payload``) with every ``problem``
    it found; folds turn it into a positioned ``ReplayError`` whose rule is
    the error's code: ``malformed-payload``, or the code a field declares for
    its own refusal (``unknown-version``, ``unknown-operation``).
    """

    code = "malformed-payload"
    codes = frozenset({"unknown-operation", "unknown-version"})

    def __init__(self, message: str, *, code: str | None = None, problems: Sequence[Problem] = ()) -> None:
        super().__init__(message, code=code)
        self.problems = tuple(problems)


class ConflictError(KernelError):
    """A compare-and-set append lost the race: another writer got there first.

    The caller's view is stale; it should reload and decide again.
    """

    code = "conflict"

    def __init__(self, session_id: str, expected_seq: int, actual_seq: int) -> None:
        super().__init__(
            f"session {session_id!r}: expected last seq {expected_seq}, "
            f"but the log is at {actual_seq} (a concurrent writer appended first)"
        )
        self.session_id = session_id
        self.expected_seq = expected_seq
        self.actual_seq = actual_seq


# --------------------------------------------------------------------------
# One base per machine: ``except GoalError`` catches every refusal of the goal
# machine (operations, authority, the /goal command), and so on.


class PlanError(KernelError):
    """Base of every refusal of the plan machines: a plan change the plan's
    state does not allow, an invalid plan spec or tool arguments, an
    ``exit_plan_mode`` that cannot start a review, a bad ``/plan`` command or
    plan policy."""

    code = "plan-error"


class GoalError(KernelError):
    """Base of every refusal of the goal machine: an operation the goal's
    state does not allow, an actor without the authority, a bad ``/goal``
    command. Every code it carries is in ``goal.GOAL_ERROR_CODES``."""

    code = "goal-error"


class GateError(KernelError):
    """Base of every refusal of the tool gate: an unknown phase or a bad
    policy (codes ``unknown-phase``, ``invalid-gate-policy``), an invalid
    tool declaration or registration (``ToolSpecError``) and a call built
    with halves that disagree (``ToolCallError``)."""

    code = "gate-error"
    codes = frozenset({"unknown-phase", "invalid-gate-policy"})
