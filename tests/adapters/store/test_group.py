"""The group commit queue (``adapters.store.group``), with plain functions for
commits: an item alone commits alone; items that wait while one commits are
committed together, in the order they came, each answered its own result or
error, and only after their group's commit; a limit splits them; an error out
of a group's commit is the answer of every item it left unanswered."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import pytest

from planfold.adapters.store.group import CommitGroup, Pending


class Commits:
    """Commits items (numbers): alone, the first one held until ``waiting``
    others wait; together, each answered its double, or a ``ValueError`` for
    a negative one, or the whole group fails when it holds a 13."""

    def __init__(self, waiting: int, limit: int | None = None) -> None:
        self.alone_items: list[int] = []
        self.groups: list[list[int]] = []
        self.waiting = waiting
        self.released = threading.Event()  # the first item is no longer held
        self.group: CommitGroup[int, int] = CommitGroup(self.alone, self.together, limit=limit)

    def alone(self, item: int) -> int:
        self.alone_items.append(item)
        if len(self.alone_items) == 1:
            deadline = time.monotonic() + 30
            while self.group.waiting() < self.waiting:
                assert time.monotonic() < deadline
                time.sleep(0.002)
            self.released.set()
        if item < 0:
            raise ValueError(item)
        return item * 2

    def together(self, batch: Sequence[Pending[int, int]]) -> None:
        items = [pending.item for pending in batch]
        self.groups.append(items)
        if 13 in items:
            raise OSError("the commit failed")
        for pending in batch:
            if pending.item < 0:
                pending.fail(ValueError(pending.item))
            else:
                pending.answer(pending.item * 2)


def submit_at_once(commits: Commits, items: list[int]) -> list[object]:
    """The first item, then (while it commits) the others, one thread each,
    started in order; what each was answered."""
    outcomes: list[object] = [None] * len(items)

    def run(index: int) -> None:
        try:
            outcomes[index] = commits.group.submit(items[index])
        except Exception as exc:  # the item's answer, checked by the test
            outcomes[index] = exc

    threads = [threading.Thread(target=run, args=(index,)) for index in range(len(items))]
    threads[0].start()
    time.sleep(0.02)
    for index, thread in enumerate(threads[1:], 1):
        thread.start()
        while commits.group.waiting() < index and not commits.released.is_set():  # in the order they came
            time.sleep(0.001)
    for thread in threads:
        thread.join(30)
    return outcomes


def test_an_item_alone_commits_alone() -> None:
    commits = Commits(waiting=0)
    assert commits.group.submit(4) == 8
    with pytest.raises(ValueError, match="-1"):
        commits.group.submit(-1)
    assert (commits.alone_items, commits.groups) == ([4, -1], [])


def test_items_waiting_while_one_commits_are_committed_together_each_with_its_own_answer() -> None:
    commits = Commits(waiting=4)
    outcomes = submit_at_once(commits, [1, 2, -3, 4, 5])
    assert outcomes[:2] == [2, 4] and outcomes[3:] == [8, 10]
    assert isinstance(outcomes[2], ValueError)
    assert (commits.alone_items, commits.groups) == ([1], [[2, -3, 4, 5]])


def test_a_limit_splits_the_waiting_items_into_groups_in_the_order_they_came() -> None:
    commits = Commits(waiting=5, limit=2)
    assert submit_at_once(commits, [1, 2, 3, 4, 5, 6]) == [2, 4, 6, 8, 10, 12]
    assert commits.groups == [[2, 3], [4, 5]] and commits.alone_items == [1, 6]


def test_a_failed_group_commit_is_the_answer_of_every_item_it_left_unanswered() -> None:
    commits = Commits(waiting=3)
    outcomes = submit_at_once(commits, [1, 2, 13, 4])
    assert outcomes[0] == 2
    assert all(isinstance(outcome, OSError) for outcome in outcomes[1:])
    assert len({id(outcome) for outcome in outcomes[1:]}) == 3  # each caller raises its own copy
    assert commits.group.submit(3) == 6  # the next commit goes on as usual


def test_a_group_of_no_items_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one"):
        CommitGroup(lambda item: item, lambda batch: None, limit=0)
