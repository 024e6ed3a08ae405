"""The errors of ``planfold serve``: requests a session cannot take (the
host's fault); nothing changed."""

from __future__ import annotations

from ...kernel.turn import Unrecordable
from ..errors import AdapterError

__all__ = ["NotRecordableError", "RoundNotAdmittedError", "ServeError"]


class ServeError(AdapterError):
    """A request the session cannot take (the host's fault); nothing changed."""

    code = "serve-error"


class NotRecordableError(ServeError):
    """``events/append`` of an event that planfold decides (a plan, mode,
    goal, turn or tool event, or a goal round)."""

    code = "not-recordable"

    @classmethod
    def of(cls, kind: str, why: Unrecordable) -> NotRecordableError:
        """The refusal of an event of ``kind`` (``kernel.turn.unrecordable``
        says ``why``)."""
        if why == "goal-round":
            return cls("a goal round is admitted by turn/start, not recorded")
        return cls(f"{kind} events are decided by planfold, not recorded")


class RoundNotAdmittedError(ServeError):
    """``turn/start`` as a goal round when ``should_continue`` says stop."""

    code = "round-not-admitted"

    def __init__(self, reason: str) -> None:
        super().__init__(f"the goal may not start a round now: {reason}")
        self.reason = reason
