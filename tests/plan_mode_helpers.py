"""Small log builders shared by the plan-mode tests."""

from __future__ import annotations

from collections.abc import Sequence

from planfold.kernel.log import PLAN_MODE, REQUEST_HEADER, TURN_END, TURN_START, Event, last_seq


def append(log: Sequence[Event], kind: str, payload: dict[str, object], at: int = 0) -> list[Event]:
    return [*log, Event(last_seq(log) + 1, kind, at, payload)]  # type: ignore[arg-type]


def start_turn(log: Sequence[Event], turn: int) -> list[Event]:
    return append(log, TURN_START, {"turn": turn})


def end_turn(log: Sequence[Event], turn: int) -> list[Event]:
    return append(log, TURN_END, {"turn": turn})


def mode(log: Sequence[Event], active: bool) -> list[Event]:
    return append(log, PLAN_MODE, {"active": active})


def header(log: Sequence[Event], turn: int, step: int, plan_mode: bool) -> list[Event]:
    return append(log, REQUEST_HEADER, {"turn": turn, "step": step, "plan_mode": plan_mode})
