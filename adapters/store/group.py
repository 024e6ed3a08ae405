"""Group commit: the appends of one process that wait at the same time share
one commit.

Theory of operation
-------------------
``CommitGroup.submit(item)`` commits one item (an append, in whatever form
its backend sends it) and answers its own result. An item that finds no
commit under way leads: it runs alone (``alone(item)``), exactly as without
grouping, and then hands the lead on. Items that come while a commit is under
way wait in a queue. When the commit ends, the lead passes to the first item
waiting, whose thread takes the items then waiting (all of them, or the first
``limit``), in the order they came, and commits them together
(``together(batch)``; a batch of one item runs ``alone``). ``together``
answers each item of the batch (``Pending.answer`` or ``Pending.fail``) only
once the shared commit is over, and only then is each waiting caller woken,
with its own answer, and the lead passed to the first item that came
meanwhile. A leading thread first runs ``before()`` (when given), before it
takes the items waiting: a wait there (the SQLite store's turn for the
file's write lock, ``adapters.store.sqlite_turns``) lets more items join
its group.

An exception out of ``together`` (which should answer every item itself) is
the answer of every item it left unanswered; an interruption of the leading
thread (``KeyboardInterrupt``) is that thread's, and every other item left
unanswered is told its outcome is unknown. Each process has its own queue: a
forked child starts with an empty one (the parent's lock and waiters are not
its own).
"""

from __future__ import annotations

import contextlib
import copy
import os
import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar, cast

from .base import StorageError

__all__ = ["CommitGroup", "Pending", "own_copy"]

I = TypeVar("I")  # noqa: E741 (an item)
R = TypeVar("R")


def own_copy(exc: BaseException) -> BaseException:
    """A copy of ``exc`` for one waiting caller (an exception object is raised
    in one thread), or ``exc`` itself when it cannot be copied."""
    try:
        return copy.copy(exc)
    except Exception:  # an uncopyable error is shared as it is
        return exc


class Pending(Generic[I, R]):
    """One item waiting to commit with a group, and its answer once the group
    committed (or failed); ``lead`` when it is handed the lead of the next group."""

    __slots__ = ("answered", "done", "error", "item", "lead", "result")

    def __init__(self, item: I) -> None:
        self.item = item
        self.done = threading.Event()
        self.lead = False
        self.answered = False
        self.result: R | None = None
        self.error: BaseException | None = None

    def answer(self, result: R) -> None:
        """The item's own result."""
        self.result, self.error, self.answered = result, None, True

    def fail(self, error: BaseException) -> None:
        """The item's own error."""
        self.result, self.error, self.answered = None, error, True


class _Queue(Generic[I, R]):
    """The items of one process waiting for a commit, and whether one of them
    leads (runs a commit) now."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.lock = threading.Lock()
        self.waiting: list[Pending[I, R]] = []
        self.leading = False


class CommitGroup(Generic[I, R]):
    """Commits items alone when nothing else is under way and together when
    they wait at the same time (see the module docstring)."""

    def __init__(
        self,
        alone: Callable[[I], R],
        together: Callable[[Sequence[Pending[I, R]]], None],
        *,
        limit: int | None = None,
        operation: str = "append",
        before: Callable[[], None] | None = None,
    ) -> None:
        if limit is not None and limit < 1:
            raise ValueError("a group holds at least one item")
        self.before = before
        self.alone = alone
        self.together = together
        self.limit = limit
        self.operation = operation
        self._state: _Queue[I, R] = _Queue()

    def submit(self, item: I) -> R:
        """Commit ``item``, alone or with the items waiting with it, and answer
        its own result (or raise its own error)."""
        state = self._queue()
        me: Pending[I, R] | None = None
        with state.lock:
            if state.leading:
                me = Pending(item)
                state.waiting.append(me)
            else:
                state.leading = True
        if me is None:
            # No commit under way, so no one waiting either: alone, as without grouping.
            try:
                self._before()
                return self.alone(item)
            finally:
                self._hand_over(state)
        me.done.wait()
        if me.lead:
            self._lead(state)
        if me.error is not None:
            raise me.error
        return cast("R", me.result)

    def waiting(self) -> int:
        """How many items wait for a commit now (for diagnostics and tests)."""
        state = self._queue()
        with state.lock:
            return len(state.waiting)

    def _queue(self) -> _Queue[I, R]:
        if self._state.pid != os.getpid():
            self._state = _Queue()
        return self._state

    def _hand_over(self, state: _Queue[I, R]) -> None:
        """The lead passes to the first item waiting, if any."""
        with state.lock:
            if state.waiting:
                state.waiting[0].lead = True
                state.waiting[0].done.set()
            else:
                state.leading = False

    def _lead(self, state: _Queue[I, R]) -> None:
        """Commit the items waiting (this one first), then hand the lead on and
        wake each with its own answer."""
        self._before()
        with state.lock:
            batch = state.waiting[: self.limit]
            state.waiting = state.waiting[len(batch) :]
        try:
            if len(batch) == 1:
                self._one(batch[0])
            else:
                self.together(batch)
        except Exception as exc:
            for pending in batch:
                if not pending.answered:
                    pending.fail(own_copy(exc))
        except BaseException as exc:
            lost = StorageError(self.operation, f"the group's commit was interrupted: {exc!r}", outcome="unknown")
            for pending in batch[1:]:
                if not pending.answered:
                    pending.fail(own_copy(lost))
            raise
        finally:
            self._hand_over(state)
            for pending in batch:
                pending.done.set()

    def _before(self) -> None:
        """``before()``, a courtesy wait: whatever it raises is left to the commit to meet."""
        if self.before is not None:
            with contextlib.suppress(Exception):
                self.before()

    def _one(self, pending: Pending[I, R]) -> None:
        try:
            pending.answer(self.alone(pending.item))
        except Exception as exc:
            pending.fail(exc)
