"""The review port: how ``exit_plan_mode`` puts a plan before a human.

Theory of operation
-------------------
Plan review is not a permission decision: it asks "is this plan good?", not
"may this action run?". The runtime therefore has a port of its own for it,
separate from any tool approval. A ``ReviewPort`` is shown a
``ReviewRequest`` (the rendered markdown plan and the options on offer) and
returns one ``ReviewAnswer`` (``Selected``, ``Custom``, ``Dismissed`` or
``ChannelLost``, from ``kernel.plan.review``; a ``Selected`` answer may
carry typed text beside the selection). What an answer *means* is the
kernel's ``decide_review``; the port only carries it.

A port reports whether a human can be reached right now (``available``); a
runtime with no reachable reviewer fails ``exit_plan_mode`` closed. A port that
raises while a review is open counts as ``ChannelLost``: the plan is not
approved and plan mode stays on.

``ScriptedReviewer`` answers from a fixed list, for the offline demo and the
tests, and keeps every request it was shown so a test can check what the
human saw.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ...kernel.plan.review import (
    APPROVE,
    KEEP_PLANNING,
    ChannelLost,
    Custom,
    Dismissed,
    ReviewAnswer,
    ReviewRequest,
    Selected,
)

__all__ = [
    "AsyncReviewPort",
    "ReviewPort",
    "ScriptedReviewer",
    "approve",
    "ask",
    "ask_async",
    "checked_answer",
    "keep_planning",
    "reachable",
]


@runtime_checkable
class AsyncReviewPort(Protocol):
    """A review port for the asyncio runtime: ``review`` is a coroutine."""

    @property
    def available(self) -> bool:
        """Whether a human can be asked right now."""
        ...

    async def review(self, request: ReviewRequest) -> ReviewAnswer:
        """Show ``request`` and return the human's answer (may raise: the
        runtime then treats the review as ``ChannelLost``)."""
        ...


@runtime_checkable
class ReviewPort(Protocol):
    """Anything that can show a plan to a human and bring back one answer."""

    @property
    def available(self) -> bool:
        """Whether a human can be asked right now."""
        ...

    def review(self, request: ReviewRequest) -> ReviewAnswer:
        """Show ``request`` and return the human's answer (may raise: the
        runtime then treats the review as ``ChannelLost``)."""
        ...


def approve(notes: str | None = None) -> ReviewAnswer:
    """The one clean approval, with optional typed notes for the model."""
    return Selected((APPROVE,), notes or "")


def keep_planning(feedback: str | None = None) -> ReviewAnswer:
    """Keep planning, with optional typed feedback (a bare "Keep planning"
    records none)."""
    return Selected((KEEP_PLANNING,), feedback or "")


@dataclass
class ScriptedReviewer:
    """A reviewer that gives the scripted answers in order.

    When the script runs out it answers ``ChannelLost`` (the human went away),
    which fails closed. ``shown`` keeps every request, in order.
    """

    answers: list[ReviewAnswer] = field(default_factory=list)
    available: bool = True
    shown: list[ReviewRequest] = field(default_factory=list)

    @classmethod
    def of(cls, answers: Iterable[ReviewAnswer]) -> ScriptedReviewer:
        return cls(list(answers))

    def review(self, request: ReviewRequest) -> ReviewAnswer:
        self.shown.append(request)
        if not self.answers:
            return ChannelLost()
        return self.answers.pop(0)


def reachable(port: object | None) -> bool:
    """Whether a human can be asked through ``port`` now: its ``available``
    (no port, or one that does not say: no)."""
    return port is not None and bool(getattr(port, "available", False))


def ask(port: ReviewPort | None, request: ReviewRequest) -> ReviewAnswer:
    """Put ``request`` to ``port``, containing its failures: a missing port, or
    one that raises, gives ``ChannelLost``; a port that answers something that
    is not a well-formed ``ReviewAnswer`` (options and text must be strings)
    gives ``Dismissed``."""
    if port is None:
        return ChannelLost()
    try:
        answer = port.review(request)
    except Exception:
        return ChannelLost()
    return checked_answer(answer)


async def ask_async(port: AsyncReviewPort | ReviewPort | None, request: ReviewRequest) -> ReviewAnswer:
    """``ask`` for the asyncio runtime: an async port is awaited, a
    synchronous one runs in a worker thread (a human's answer may take
    long); failures are contained the same way."""
    if port is None:
        return ChannelLost()
    try:
        if inspect.iscoroutinefunction(port.review):
            answer: object = await port.review(request)
        else:
            answer = await asyncio.to_thread(port.review, request)
    except Exception:
        return ChannelLost()
    return checked_answer(answer)


def checked_answer(answer: object) -> ReviewAnswer:
    """``answer`` when it is a well-formed ``ReviewAnswer``, else ``Dismissed``."""
    if isinstance(answer, Dismissed | ChannelLost):
        return answer
    if isinstance(answer, Custom) and isinstance(answer.text, str):
        return answer
    if (
        isinstance(answer, Selected)
        and isinstance(answer.options, tuple)
        and all(isinstance(option, str) for option in answer.options)
        and isinstance(answer.text, str)
    ):
        return answer
    return Dismissed()
