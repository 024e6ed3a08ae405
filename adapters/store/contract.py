"""The store contract, published: every ``Store`` must pass these tests.

Theory of operation
-------------------
``StoreContract`` is a base class of pytest tests. A backend (planfold's own
memory, SQLite and PostgreSQL stores, or a third party's) runs the whole
contract by subclassing it under a ``Test`` name and supplying one fixture,
``store_maker``: a function that takes the lease clock the test controls and
makes a fresh, empty store on it, saying how to open the same storage again
(``StoreKit``)::

    import pytest
    from planfold.adapters.store.contract import StoreContract, StoreKit

    class TestMyStore(StoreContract):
        @pytest.fixture
        def store_maker(self, tmp_path_factory):
            def make(clock):
                path = tmp_path_factory.mktemp("store") / "db"
                return StoreKit.reopening(lambda: MyStore(path, lease_clock=clock))
            return make

An async store (``adapters.store.aio.AsyncSharedStore``) runs the same
suite through its synchronous face: its maker returns
``StoreKit.of_async(open_it)``, where ``open_it()`` is a coroutine that opens
the store (or ``StoreKit.same_async(store)`` for one that lives in memory);
every call then runs the store's coroutine on a private event loop, so every
check of the suite, the state machine's included, applies unchanged.

The maker is called once per test and once per Hypothesis example, so it may
come from a fixture of any scope. The suite needs pytest and Hypothesis (the
``contract`` extra: ``pip install 'planfold[contract]'``). ``example_divisor`` scales down the examples of the expensive
property tests for slow backends (the active Hypothesis profile's budget
divided by it).

What the contract pins: an unknown session is an empty build session;
appends land in order and the projection and snapshot follow the strict
fold; compare-and-set conflicts change nothing; an idempotency key makes a
retried append land once and refuses a key reused for another append; bad
events and bad requests get typed errors and write nothing; reads hand out
fresh values; a closed store refuses everything; JSON Lines export and import
round-trip; a state machine of random appends, conflicts, retries, bad
appends and reopens agrees with a model that is a list of events per session;
``follow`` yields what is there and then what another store on the same
storage appends; goal leases are granted, extended, refused, expire, pass to
the next holder with a larger token, are released, and fence appends; a
goal id is never created twice, whether the store folds onto a state it
just wrote or one it resumed from its snapshot, and that snapshot does not
grow with the number of goals a log has had; a fork at any seq holds the
source's prefix byte for byte with the prefix's fold as its projection and
its provenance kept beside it (through a reopen, an export and an import),
is refused with a typed error that changes nothing when the source has no
such seq or the new session exists, lands whole or not at all when two
stores race for one new session, and leaves source and fork to go on
independently; the state machine forks too.
"""

from __future__ import annotations

import copy
import math
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from ...kernel.errors import ConflictError, PlanfoldError, ReplayError, is_kebab_case
from ...kernel.log import GOAL_CHANGE, USER_MESSAGE, Event, read_message
from ...kernel.payload import JSONObject
from ...kernel.session import SessionState, fold_session
from ..codec import MAX_DEPTH, CodecError, canonical_event, encode_jsonl
from ..provenance import ForkProvenance, ForkRecordError, encode_fork_record, prefix_digest
from .aio import AsyncSharedStore, BlockingStore
from .base import (
    AppendRejectedError,
    AppendRequest,
    AppendResult,
    Folded,
    ForkSeqMissingError,
    ForkSourceMissingError,
    IdempotencyMismatchError,
    InvalidRequestError,
    Lease,
    LeaseHeldError,
    LeaseLostError,
    ProvenanceMismatchError,
    SessionExistsError,
    SharedStore,
    Store,
    StoreClosedError,
    export_session,
    import_session,
)
from .contract_logs import FULL_SCRIPT, MOVES, LogBuilder, batch_after, build_log, logs
from .projection import Projection, project, snapshot_of

__all__ = ["ManualClock", "StoreContract", "StoreKit", "StoreMaker"]


def _goal_create(goal_id: str, seq: int) -> Event:
    """A create of an active goal ``goal_id`` at ``seq`` (time = seq)."""
    goal: JSONObject = {"id": goal_id, "revision": 1, "objective": "finish", "phase": "active", "max_rounds": 5,
                        "blocked_reason": None}
    payload: JSONObject = {"version": 1, "operation": "create", "goal": goal, "rounds_started": 0, "created_at": seq,
               "updated_at": seq}
    return Event(seq, GOAL_CHANGE, seq, payload)


def _goal_clear(goal_id: str, seq: int) -> Event:
    """The clear of goal ``goal_id``, created just before at revision 1, at ``seq``."""
    cleared: JSONObject = {"id": goal_id, "revision": 2}
    payload: JSONObject = {"version": 1, "operation": "clear", "cleared": cleared, "cleared_at": seq}
    return Event(seq, GOAL_CHANGE, seq, payload)


def fold_refusal(events: list[Event]) -> ReplayError:
    """The refusal of a replay of ``events`` (which must hold one)."""
    try:
        fold_session(events)
    except ReplayError as exc:
        return exc
    raise AssertionError("the log folds cleanly")


def _snapshot_size(store: Store, session_id: str) -> int:
    """How long the fold snapshot of a session's state is."""
    return len(snapshot_of(store.load(session_id, incremental=True))[1])


class ManualClock:
    """A lease clock that moves only when told (integer milliseconds)."""

    def __init__(self, now: int = 1_700_000_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


@dataclass
class StoreKit:
    """A store under test; ``open_another`` opens one more store on the same
    storage (a store that lives only in memory returns itself); ``reopen``
    closes the store and opens it again; ``dispose`` runs once the test is over."""

    store: SharedStore
    open_another: Callable[[], SharedStore]
    dispose: Callable[[], None] = lambda: None
    others: list[SharedStore] = field(default_factory=list)

    @classmethod
    def same(cls, store: SharedStore) -> StoreKit:
        """A kit whose storage lives in the store itself."""
        return cls(store, lambda: store)

    @classmethod
    def reopening(cls, open_store: Callable[[], SharedStore], dispose: Callable[[], None] = lambda: None) -> StoreKit:
        """A kit that opens ``open_store()`` now and whenever another store is needed."""
        return cls(open_store(), open_store, dispose)

    @classmethod
    def of_async(
        cls, open_store: Callable[[], Awaitable[AsyncSharedStore]], dispose: Callable[[], None] = lambda: None
    ) -> StoreKit:
        """A kit for an async store: each store ``open_store()`` opens, seen
        through its synchronous face (``aio.BlockingStore``), so the whole
        suite runs against it unchanged."""
        return cls.reopening(lambda: BlockingStore.opening(open_store), dispose)

    @classmethod
    def same_async(cls, store: AsyncSharedStore) -> StoreKit:
        """A kit whose storage lives in the async store itself, seen through its synchronous face."""
        return cls.same(BlockingStore(store))

    def another(self) -> SharedStore:
        """One more store on the same storage, closed with the kit."""
        other = self.open_another()
        if other is not self.store:
            self.others.append(other)
        return other

    def reopen(self) -> SharedStore:
        """Close the store and open its storage again."""
        fresh = self.open_another()
        if fresh is not self.store:
            self.store.close()
            self.store = fresh
        return self.store

    def close(self) -> None:
        for other in self.others:
            other.close()
        self.store.close()
        self.dispose()


#: What the ``store_maker`` fixture gives: given the lease clock, a fresh,
#: empty store at every call.
StoreMaker = Callable[[ManualClock], StoreKit]


def _budget(divisor: int, floor: int = 10) -> int:
    """A fraction of the active Hypothesis profile's examples."""
    profile = settings.default
    return max(floor, (100 if profile is None else profile.max_examples) // divisor)


def _session_facts(store: Store, sid: str) -> tuple[Any, ...]:
    """Everything a caller can observe about one session."""
    return (store.head(sid), store.read(sid), store.load(sid), store.projection(sid), store.audit(sid))


def _assert_matches_fold(store: Store, sid: str, events: list[Event]) -> None:
    state = fold_session(events)
    assert store.head(sid) == len(events)
    assert store.read(sid) == tuple(canonical_event(e) for e in events)
    assert store.load(sid) == state
    assert store.load(sid, incremental=True) == state
    assert store.projection(sid) == project(state)
    report = store.audit(sid)
    assert report.ok, report.mismatches
    assert report.last_seq == len(events)


def _follow(store: Store, timeout: float) -> object:
    """A follow of session ``s`` with ``timeout``, asked of a store that must share."""
    assert isinstance(store, SharedStore)
    return store.follow("s", 0, timeout=timeout)


def _too_deep() -> list[Any]:
    value: list[Any] = []
    for _ in range(MAX_DEPTH + 1):
        value = [value]
    return value


#: Events that do not continue a log at ``h``, by the fold's rule.
REJECTS: list[tuple[str, Callable[[int], list[Event]]]] = [
    ("seq-gap", lambda h: [Event(h + 2, "user/message", 1000, {"text": "x", "source": None})]),
    ("seq-gap", lambda h: [*batch_after(h, 1), Event(h + 1, "turn/end", 1000, {"turn": 1})]),
    ("time-regressed", lambda h: [Event(h + 1, "user/message", 0, {"text": "x", "source": None})]),
    ("malformed-payload", lambda h: [Event(h + 1, "plan/mode", 1000, {"active": "yes"})]),
    ("unknown-kind", lambda h: [Event(h + 1, "plan/whatever", 1000, {})]),
    ("transition-not-allowed", lambda h: [Event(h + 1, "turn/end", 1000, {"turn": 9})]),
]

#: Requests no store may accept, with the typed error each gets.
BAD_REQUEST_IDS = [
    "empty-session-id",
    "blank-session-id",
    "session-id-not-text",
    "negative-expected-seq",
    "bool-expected-seq",
    "no-events",
    "events-not-a-sequence",
    "empty-key",
    "key-not-text",
    "payload-bytes",
    "not-an-event",
    "payload-too-deep",
    "session-id-lone-surrogate",
    "key-lone-surrogate",
    "expected-seq-past-64-bits",
    "time-past-64-bits",
    "payload-lone-surrogate",
    "kind-not-text",
    "kind-lone-surrogate",
    "read-position-not-int",
    "head-lone-surrogate",
    "head-empty-id",
    "load-empty-id",
    "audit-empty-id",
    "projection-empty-id",
    "fork-empty-source-id",
    "fork-empty-new-id",
    "fork-at-not-int",
    "fork-at-bool",
    "provenance-empty-id",
    "folded-not-a-fold",
    "folded-of-other-values",
    "follow-timeout-nan",
    "follow-timeout-inf",
    "follow-timeout-minus-inf",
    "follow-timeout-past-every-float",
]
BAD_REQUESTS: list[tuple[type[PlanfoldError], Callable[[Store], object]]] = [
    (InvalidRequestError, lambda s: s.append(AppendRequest("", 0, batch_after(0, 1)))),
    (InvalidRequestError, lambda s: s.append(AppendRequest("  ", 0, batch_after(0, 1)))),
    (InvalidRequestError, lambda s: s.append(AppendRequest(7, 0, batch_after(0, 1)))),  # type: ignore[arg-type]
    (InvalidRequestError, lambda s: s.append(AppendRequest("s", -1, batch_after(0, 1)))),
    (InvalidRequestError, lambda s: s.append(AppendRequest("s", True, batch_after(0, 1)))),
    (InvalidRequestError, lambda s: s.append(AppendRequest("s", 0, []))),
    (InvalidRequestError, lambda s: s.append(AppendRequest("s", 0, iter(batch_after(0, 1))))),  # type: ignore[arg-type]
    (InvalidRequestError, lambda s: s.append(AppendRequest("s", 0, batch_after(0, 1), ""))),
    (InvalidRequestError, lambda s: s.append(AppendRequest("s", 0, batch_after(0, 1), 5))),  # type: ignore[arg-type]
    (
        CodecError,
        lambda s: s.append(AppendRequest("s", 0, [Event(1, "user/message", 1, {"text": b"x", "source": None})])),
    ),
    (CodecError, lambda s: s.append(AppendRequest("s", 0, ["not an event"]))),  # type: ignore[list-item]
    (CodecError, lambda s: s.append(AppendRequest("s", 0, [Event(1, "tool/call", 1, {"v": _too_deep()})]))),
    (InvalidRequestError, lambda s: s.append(AppendRequest("\ud800", 0, batch_after(0, 1)))),
    (InvalidRequestError, lambda s: s.append(AppendRequest("s", 0, batch_after(0, 1), "\udc00"))),
    (InvalidRequestError, lambda s: s.append(AppendRequest("s", 2**63, batch_after(0, 1)))),
    (CodecError, lambda s: s.append(AppendRequest("s", 0, [Event(1, "turn/start", 2**63, {"turn": 1})]))),
    (
        CodecError,
        lambda s: s.append(AppendRequest("s", 0, [Event(1, "user/message", 1, {"text": "\ud800", "source": None})])),
    ),
    (CodecError, lambda s: s.append(AppendRequest("s", 0, [Event(1, ["turn/start"], 1, {"turn": 1})]))),  # type: ignore[arg-type]
    (CodecError, lambda s: s.append(AppendRequest("s", 0, [Event(1, "turn/\ud800", 1, {"turn": 1})]))),
    (InvalidRequestError, lambda s: s.read("s", "0")),  # type: ignore[arg-type]
    (InvalidRequestError, lambda s: s.head("\ud800")),
    (InvalidRequestError, lambda s: s.head("")),
    (InvalidRequestError, lambda s: s.load("")),
    (InvalidRequestError, lambda s: s.audit("")),
    (InvalidRequestError, lambda s: s.projection("")),
    (InvalidRequestError, lambda s: s.fork("", 1, "new")),
    (InvalidRequestError, lambda s: s.fork("s", 1, " ")),
    (InvalidRequestError, lambda s: s.fork("s", "1", "new")),  # type: ignore[arg-type]
    (InvalidRequestError, lambda s: s.fork("s", True, "new")),
    (InvalidRequestError, lambda s: s.provenance("")),
    (InvalidRequestError, lambda s: s.append(AppendRequest("s", 1, batch_after(1, 1), folded="x"))),  # type: ignore[arg-type]
    (
        InvalidRequestError,
        lambda s: s.append(AppendRequest("s", 1, batch_after(1, 1), folded=Folded("a", "b"))),  # type: ignore[arg-type]
    ),
    (InvalidRequestError, lambda s: _follow(s, math.nan)),
    (InvalidRequestError, lambda s: _follow(s, math.inf)),
    (InvalidRequestError, lambda s: _follow(s, -math.inf)),
    (InvalidRequestError, lambda s: _follow(s, 10**400)),
]

#: Changes of an append that make a reused key a different request.
KEY_REUSES: list[Callable[[], tuple[int, list[Event]]]] = [
    lambda: (0, [Event(1, "turn/start", 10, {"turn": 1}), Event(2, "turn/end", 20, {"turn": 1})]),
    lambda: (0, batch_after(0, 1)),
    lambda: (2, batch_after(2, 2)),
]

BAD_IMPORTS: list[tuple[bytes, type[Exception]]] = [
    (b'{"seq":1,"kind":"turn/start","at":1,"payload":{"turn":1}}\nnot json\n', CodecError),
    (b'{"seq":1,"kind":"turn/start","at":1,"payload":{"turn":"one"}}\n', ReplayError),
    (b'{"seq":2,"kind":"turn/start","at":1,"payload":{"turn":1}}\n', ReplayError),
]


class StoreContract:
    """The contract tests; subclass as ``Test...`` and supply ``store_maker``."""

    #: Divides the examples of the expensive property tests (slow backends raise it).
    example_divisor: ClassVar[int] = 3

    @pytest.fixture
    def clock(self) -> ManualClock:
        return ManualClock()

    @pytest.fixture
    def kit(self, store_maker: StoreMaker, clock: ManualClock) -> Iterator[StoreKit]:
        made = store_maker(clock)
        yield made
        made.close()

    # ----------------------------------------------------------------------
    # Happy paths

    def test_an_unknown_session_is_an_empty_build_session(self, kit: StoreKit) -> None:
        store = kit.store
        assert store.head("nobody") == 0
        assert store.read("nobody") == ()
        assert store.load("nobody") == SessionState()
        assert store.load("nobody", incremental=True) == SessionState()
        assert store.projection("nobody") == Projection()
        assert store.audit("nobody").ok
        assert store.session_ids() == ()

    def test_appends_land_in_order_and_the_projection_follows_the_fold(self, kit: StoreKit) -> None:
        log = build_log(FULL_SCRIPT).events
        head = 0
        for size in (1, 5, 2, 9, 100):
            batch = log[head : head + size]
            if not batch:
                break
            result = kit.store.append(AppendRequest("s", head, batch))
            assert result == AppendResult("s", head + 1, head + len(batch), replayed=False)
            head += len(batch)
            _assert_matches_fold(kit.store, "s", log[:head])
        assert kit.store.audit("s").snapshot == "current"
        _assert_matches_fold(kit.reopen(), "s", log)
        assert kit.store.session_ids() == ("s",)

    def test_any_valid_log_in_any_batches_loads_back_as_its_fold(self, store_maker: StoreMaker) -> None:
        @settings(
            max_examples=_budget(self.example_divisor + 1),
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        )
        @given(builder=logs(), sizes=st.lists(st.integers(min_value=1, max_value=6), min_size=1))
        def check(builder: LogBuilder, sizes: list[int]) -> None:
            made = store_maker(ManualClock())
            try:
                head, index = 0, 0
                while head < len(builder.events):
                    batch = builder.events[head : head + sizes[index % len(sizes)]]
                    made.store.append(AppendRequest("s", head, batch))
                    head, index = head + len(batch), index + 1
                _assert_matches_fold(made.store, "s", builder.events)
            finally:
                made.close()

        check()

    def test_sessions_are_independent(self, kit: StoreKit) -> None:
        kit.store.append(AppendRequest("a", 0, batch_after(0, 3)))
        kit.store.append(AppendRequest("b", 0, batch_after(0, 1)))
        _assert_matches_fold(kit.store, "a", batch_after(0, 3))
        _assert_matches_fold(kit.store, "b", batch_after(0, 1))
        assert kit.store.session_ids() == ("a", "b")

    def test_values_handed_out_or_in_are_never_shared_with_the_store(self, kit: StoreKit) -> None:
        payload: dict[str, Any] = {"text": "hi", "source": None}
        kit.store.append(AppendRequest("s", 0, [Event(1, "user/message", 1, payload)]))
        payload["text"] = "changed by the caller"
        read = kit.store.read("s")
        read[0].payload["text"] = "changed by a reader"  # type: ignore[index]
        assert kit.store.read("s")[0].payload == {"text": "hi", "source": None}

    # ----------------------------------------------------------------------
    # Compare-and-set

    @pytest.mark.parametrize("expected", [0, 1, 3, 7])
    def test_a_stale_or_future_expected_seq_is_a_conflict_and_changes_nothing(
        self, kit: StoreKit, expected: int
    ) -> None:
        kit.store.append(AppendRequest("s", 0, batch_after(0, 2)))
        before = _session_facts(kit.store, "s")
        with pytest.raises(ConflictError) as info:
            kit.store.append(AppendRequest("s", expected, batch_after(expected, 1)))
        assert (info.value.session_id, info.value.expected_seq, info.value.actual_seq) == ("s", expected, 2)
        assert info.value.code == "conflict"
        assert _session_facts(kit.store, "s") == before

    def test_a_conflict_is_reported_before_the_events_are_judged(self, kit: StoreKit) -> None:
        kit.store.append(AppendRequest("s", 0, batch_after(0, 2)))
        with pytest.raises(ConflictError):
            kit.store.append(AppendRequest("s", 0, [Event(99, "nonsense", -1, {})]))

    # ----------------------------------------------------------------------
    # Idempotency

    def test_a_retried_append_lands_exactly_once(self, kit: StoreKit) -> None:
        first = kit.store.append(AppendRequest("s", 0, batch_after(0, 2), "k1"))
        assert first.replayed is False
        again = kit.store.append(AppendRequest("s", 0, batch_after(0, 2), "k1"))
        assert again == AppendResult("s", 1, 2, replayed=True)
        kit.store.append(AppendRequest("s", 2, batch_after(2, 1), "k2"))
        # after the log moved on, and a restart
        late = kit.reopen().append(AppendRequest("s", 0, batch_after(0, 2), "k1"))
        assert late == AppendResult("s", 1, 2, replayed=True)
        _assert_matches_fold(kit.store, "s", batch_after(0, 3))

    def test_the_request_hash_ignores_key_order_in_payloads(self, kit: StoreKit) -> None:
        kit.store.append(AppendRequest("s", 0, [Event(1, "user/message", 1, {"text": "a", "source": None})], "k"))
        reordered = Event(1, "user/message", 1, {"source": None, "text": "a"})
        retry = kit.store.append(AppendRequest("s", 0, [reordered], "k"))
        assert retry.replayed

    @pytest.mark.parametrize("change", KEY_REUSES, ids=["other-events", "fewer-events", "other-expected-seq"])
    def test_a_key_reused_for_a_different_append_is_refused(
        self, kit: StoreKit, change: Callable[[], tuple[int, list[Event]]]
    ) -> None:
        kit.store.append(AppendRequest("s", 0, batch_after(0, 2), "k"))
        before = _session_facts(kit.store, "s")
        expected, events = change()
        with pytest.raises(IdempotencyMismatchError) as info:
            kit.store.append(AppendRequest("s", expected, events, "k"))
        assert (info.value.session_id, info.value.key, info.value.code) == ("s", "k", "idempotency-mismatch")
        assert _session_facts(kit.store, "s") == before

    def test_keys_belong_to_one_session(self, kit: StoreKit) -> None:
        kit.store.append(AppendRequest("a", 0, batch_after(0, 1), "k"))
        assert kit.store.append(AppendRequest("b", 0, batch_after(0, 2), "k")).replayed is False
        assert kit.store.head("b") == 2

    def test_a_key_whose_append_failed_is_not_remembered(self, kit: StoreKit) -> None:
        kit.store.append(AppendRequest("s", 0, batch_after(0, 1)))
        with pytest.raises(ConflictError):
            kit.store.append(AppendRequest("s", 0, batch_after(0, 1), "k"))
        with pytest.raises(AppendRejectedError):
            kit.store.append(AppendRequest("s", 1, [Event(3, "turn/start", 100, {"turn": 1})], "k"))
        assert kit.store.append(AppendRequest("s", 1, batch_after(1, 1), "k")) == AppendResult("s", 2, 2)

    # ----------------------------------------------------------------------
    # Concurrent writers

    def test_concurrent_appends_through_one_store_land_once_each_and_refused_ones_not_at_all(
        self, kit: StoreKit
    ) -> None:
        """Threads append at once through one store (a store may commit them
        together): to a session of their own, with a key and a retry of it,
        one the fold refuses, and to one session they all share, where most
        lose the compare-and-set. Every acknowledged append is in the log
        exactly once, in its place; no refused one is, nor anything of it."""
        store, writers, rounds = kit.store, 8, 10
        acknowledged: list[str] = []
        refused: list[str] = []
        failures: list[BaseException] = []
        lock = threading.Lock()
        start = threading.Barrier(writers)

        def message(seq: int, text: str, at: int | None = None) -> Event:
            return Event(seq, USER_MESSAGE, seq if at is None else at, {"text": text, "source": None})

        def writer(number: int) -> None:
            own = f"own-{number}"
            try:
                start.wait()
                for i in range(rounds):
                    text = f"{number}-{i}"
                    result = store.append(AppendRequest(own, i, [message(i + 1, text)], f"k-{text}"))
                    assert result == AppendResult(own, i + 1, i + 1)
                    assert store.append(AppendRequest(own, i, [message(i + 1, text)], f"k-{text}")).replayed
                    with pytest.raises(AppendRejectedError):  # back in time: the fold refuses it
                        store.append(AppendRequest(own, i + 1, [message(i + 2, f"late {text}", at=0)]))
                    head = store.head("shared")
                    try:
                        store.append(AppendRequest("shared", head, [message(head + 1, f"shared {text}")]))
                        outcome = acknowledged
                    except ConflictError:
                        outcome = refused
                    with lock:
                        outcome.append(f"shared {text}")
            except BaseException as exc:
                failures.append(exc)

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(writers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert failures == []
        for reopen in (False, True):
            current = kit.reopen() if reopen else store
            for number in range(writers):
                events = [message(i + 1, f"{number}-{i}") for i in range(rounds)]
                _assert_matches_fold(current, f"own-{number}", events)
            shared = [read_message(event.payload).text for event in current.read("shared")]
            assert sorted(shared) == sorted(acknowledged)
            assert not set(shared) & set(refused)
            assert current.audit("shared").ok

    # ----------------------------------------------------------------------
    # Bad input: a clear typed error, and nothing written

    @pytest.mark.parametrize(("rule", "make"), REJECTS, ids=[f"{rule}-{n}" for n, (rule, _) in enumerate(REJECTS)])
    def test_events_that_do_not_continue_the_log_are_rejected_and_nothing_is_written(
        self, kit: StoreKit, rule: str, make: Callable[[int], list[Event]]
    ) -> None:
        kit.store.append(AppendRequest("s", 0, batch_after(0, 4)))
        before = _session_facts(kit.store, "s")
        with pytest.raises(AppendRejectedError) as info:
            kit.store.append(AppendRequest("s", 4, make(4), "key"))
        err = info.value
        assert (err.code, err.rule, err.session_id) == ("append-rejected", rule, "s")
        assert err.position >= 5
        assert _session_facts(kit.store, "s") == before
        assert _session_facts(kit.reopen(), "s") == before

    @pytest.mark.parametrize("reopened", [False, True], ids=["same-store", "reopened"])
    def test_a_goal_id_is_never_created_twice_however_the_store_resumed(
        self, kit: StoreKit, reopened: bool
    ) -> None:
        first = [_goal_create("g1", 1), _goal_clear("g1", 2), _goal_create("g2", 3), _goal_clear("g2", 4)]
        kit.store.append(AppendRequest("s", 0, first))
        store = kit.reopen() if reopened else kit.store
        before = _session_facts(store, "s")
        # g1 again at seq 7, and a later event that breaks another rule: the
        # reuse is what is reported, at its own seq, as a replay reports it.
        reused = [_goal_create("g3", 5), _goal_clear("g3", 6), _goal_create("g1", 7), Event(8, GOAL_CHANGE, 1, {})]
        with pytest.raises(AppendRejectedError) as info:
            store.append(AppendRequest("s", 4, reused))
        assert (info.value.position, info.value.rule) == (7, "id-reused")
        assert info.value.detail == fold_refusal([*first, *reused]).detail
        assert _session_facts(store, "s") == before
        store.append(AppendRequest("s", 4, reused[:2]))
        again = kit.reopen()
        for goal_id in ("g2", "g3"):
            with pytest.raises(AppendRejectedError, match="id-reused"):
                again.append(AppendRequest("s", 6, [_goal_create(goal_id, 7)]))
        again.append(AppendRequest("s", 6, [_goal_create("g4", 7)]))
        assert again.load("s", incremental=True) == again.load("s") == fold_session(again.read("s"))
        assert again.audit("s").ok

    def test_the_snapshot_does_not_grow_with_the_goals_a_log_has_had(self, kit: StoreKit) -> None:
        events: list[Event] = []
        for n in range(40):
            events += [_goal_create(f"goal-{n:03}", 2 * n + 1), _goal_clear(f"goal-{n:03}", 2 * n + 2)]
        kit.store.append(AppendRequest("s", 0, events[:2]))
        one = _snapshot_size(kit.store, "s")
        kit.store.append(AppendRequest("s", 2, events[2:]))
        assert _snapshot_size(kit.store, "s") <= one + 8  # the seq and time of the last event may get longer
        assert kit.reopen().load("s", incremental=True).goal == fold_session(events).goal

    @pytest.mark.parametrize(("error", "call"), BAD_REQUESTS, ids=BAD_REQUEST_IDS)
    def test_a_bad_request_gets_a_typed_error_and_changes_nothing(
        self, kit: StoreKit, error: type[PlanfoldError], call: Callable[[Store], object]
    ) -> None:
        kit.store.append(AppendRequest("s", 0, batch_after(0, 1)))
        before = _session_facts(kit.store, "s")
        with pytest.raises(error) as info:
            call(kit.store)
        assert is_kebab_case(info.value.code)
        assert _session_facts(kit.store, "s") == before
        assert kit.store.session_ids() == ("s",)

    def test_read_positions_beyond_the_log_are_just_empty(self, kit: StoreKit) -> None:
        kit.store.append(AppendRequest("s", 0, batch_after(0, 3)))
        assert kit.store.read("s", 2) == (batch_after(0, 3)[2],)
        assert kit.store.read("s", 2**70) == ()
        assert kit.store.read("s", -5) == tuple(batch_after(0, 3))

    def test_a_closed_store_refuses_everything_with_store_closed(self, kit: StoreKit) -> None:
        kit.store.append(AppendRequest("s", 0, batch_after(0, 1)))
        kit.store.close()
        kit.store.close()  # idempotent
        calls: list[Callable[[], object]] = [
            lambda: kit.store.append(AppendRequest("s", 1, batch_after(1, 1))),
            lambda: kit.store.head("s"),
            lambda: kit.store.read("s"),
            lambda: kit.store.load("s"),
            lambda: kit.store.load("s", incremental=True),
            lambda: kit.store.projection("s"),
            lambda: kit.store.audit("s"),
            kit.store.session_ids,
            lambda: kit.store.fork("s", 1, "new"),
            lambda: kit.store.provenance("s"),
        ]
        for call in calls:
            with pytest.raises(StoreClosedError) as info:
                call()
            assert info.value.code == "store-closed"

    # ----------------------------------------------------------------------
    # JSON Lines export and import

    def test_export_then_import_reproduces_the_session_once(self, kit: StoreKit) -> None:
        log = build_log(FULL_SCRIPT).events
        kit.store.append(AppendRequest("src", 0, log))
        data = export_session(kit.store, "src")
        first = import_session(kit.store, "copy", data)
        assert first == AppendResult("copy", 1, len(log))
        assert import_session(kit.store, "copy", data) == AppendResult("copy", 1, len(log), replayed=True)
        _assert_matches_fold(kit.store, "copy", log)
        assert export_session(kit.store, "copy") == data
        assert import_session(kit.store, "empty", b"") is None
        assert kit.store.head("empty") == 0

    def test_importing_into_a_session_with_events_is_a_conflict(self, kit: StoreKit) -> None:
        kit.store.append(AppendRequest("src", 0, batch_after(0, 3)))
        kit.store.append(AppendRequest("busy", 0, batch_after(0, 1)))
        with pytest.raises(ConflictError):
            import_session(kit.store, "busy", export_session(kit.store, "src"))
        assert kit.store.head("busy") == 1

    @pytest.mark.parametrize(("data", "error"), BAD_IMPORTS, ids=["not-json", "bad-payload", "seq-gap"])
    def test_a_bad_import_is_refused_before_anything_is_written(
        self, kit: StoreKit, data: bytes, error: type[Exception]
    ) -> None:
        with pytest.raises(error):
            import_session(kit.store, "copy", data)
        assert kit.store.head("copy") == 0
        assert kit.store.session_ids() == ()

    # ----------------------------------------------------------------------
    # Forks

    def test_a_fork_holds_the_first_n_events_with_their_fold_and_its_provenance(self, kit: StoreKit) -> None:
        log = build_log(FULL_SCRIPT).events
        kit.store.append(AppendRequest("src", 0, log[:7]))
        kit.store.append(AppendRequest("src", 7, log[7:]))
        source = export_session(kit.store, "src")
        for at in sorted({1, 2, 7, 8, len(log) // 2, len(log)}):
            new = f"fork-{at}"
            provenance = kit.store.fork("src", at, new)
            assert provenance == ForkProvenance("src", at, prefix_digest(log[:at]))
            _assert_matches_fold(kit.store, new, log[:at])
            assert kit.store.provenance(new) == provenance
            assert kit.store.audit(new).provenance == provenance
            exported = export_session(kit.store, new)
            assert exported == b"".join(source.splitlines(keepends=True)[:at]) + encode_fork_record(provenance) + b"\n"
        _assert_matches_fold(kit.store, "src", log)  # the source is unchanged
        assert kit.store.provenance("src") is None and kit.store.audit("src").provenance is None
        reopened = kit.reopen()
        assert reopened.provenance("fork-8") == ForkProvenance("src", 8, prefix_digest(log[:8]))
        _assert_matches_fold(reopened, "fork-8", log[:8])

    @pytest.mark.parametrize(
        ("source", "at", "new", "error"),
        [
            ("src", 4, "src", SessionExistsError),
            ("src", 2, "other", SessionExistsError),
            ("src", 5, "new", ForkSeqMissingError),
            ("src", 2**70, "new", ForkSeqMissingError),
            ("src", 0, "new", ForkSeqMissingError),
            ("src", -3, "new", ForkSeqMissingError),
            ("nobody", 1, "new", ForkSourceMissingError),
            ("nobody", 1, "other", SessionExistsError),
        ],
        ids=[
            "into-itself", "into-a-session-with-events", "past-the-head", "past-64-bits", "at-zero", "negative",
            "no-source", "no-source-and-the-new-exists",
        ],
    )  # fmt: skip
    def test_a_refused_fork_gets_a_typed_error_and_changes_nothing(
        self, kit: StoreKit, source: str, at: int, new: str, error: type[PlanfoldError]
    ) -> None:
        kit.store.append(AppendRequest("src", 0, batch_after(0, 4)))
        kit.store.append(AppendRequest("other", 0, batch_after(0, 1)))

        def facts(store: Store) -> dict[str, tuple[Any, ...]]:
            return {sid: (*_session_facts(store, sid), store.provenance(sid)) for sid in ("src", "other", "new")}

        before = facts(kit.store)
        with pytest.raises(error) as info:
            kit.store.fork(source, at, new)
        assert is_kebab_case(info.value.code)
        expected_code = {
            SessionExistsError: "session-exists",
            ForkSeqMissingError: "fork-seq-missing",
            ForkSourceMissingError: "fork-source-missing",
        }[error]
        assert info.value.code == expected_code
        assert facts(kit.store) == before
        assert facts(kit.reopen()) == before
        assert kit.store.session_ids() == ("other", "src")

    def test_the_source_and_its_fork_go_on_independently(self, kit: StoreKit) -> None:
        source = build_log(FULL_SCRIPT)
        kit.store.append(AppendRequest("src", 0, source.events))
        at = max(n for n in range(1, len(source.events) // 2) if not source.prefix(n).state.turns.open)
        kit.store.fork("src", at, "fork")
        fork = source.prefix(at)
        for builder, sid in ((source, "src"), (fork, "fork")):
            head = len(builder.events)
            assert builder.turn(f"only in {sid}")
            kit.store.append(AppendRequest(sid, head, builder.events[head:]))
        _assert_matches_fold(kit.store, "src", source.events)
        _assert_matches_fold(kit.store, "fork", fork.events)
        assert kit.store.read("fork")[:at] == kit.store.read("src")[:at]
        assert kit.store.read("fork")[at:] != kit.store.read("src")[at : len(fork.events)]
        again = kit.reopen()
        _assert_matches_fold(again, "src", source.events)
        _assert_matches_fold(again, "fork", fork.events)
        assert again.provenance("fork") == ForkProvenance("src", at, prefix_digest(source.events[:at]))

    def test_a_fork_of_a_fork_names_its_own_source(self, kit: StoreKit) -> None:
        log = build_log(FULL_SCRIPT).events
        kit.store.append(AppendRequest("a", 0, log))
        kit.store.fork("a", 20, "b")
        assert kit.store.fork("b", 10, "c") == ForkProvenance("b", 10, prefix_digest(log[:10]))
        _assert_matches_fold(kit.store, "c", log[:10])

    @pytest.mark.parametrize("reopened", [False, True], ids=["same-store", "reopened"])
    def test_the_goal_ids_of_the_prefix_stay_used_in_the_fork(self, kit: StoreKit, reopened: bool) -> None:
        first = [_goal_create("g1", 1), _goal_clear("g1", 2), _goal_create("g2", 3), _goal_clear("g2", 4)]
        kit.store.append(AppendRequest("s", 0, first))
        kit.store.fork("s", 2, "f")
        store = kit.reopen() if reopened else kit.store
        with pytest.raises(AppendRejectedError, match="id-reused"):
            store.append(AppendRequest("f", 2, [_goal_create("g1", 3)]))
        store.append(AppendRequest("f", 2, [_goal_create("g2", 3)]))  # created in the source after the fork: fresh here
        assert store.audit("f").ok

    def test_two_stores_forking_into_one_new_session_land_one_fork_whole(self, kit: StoreKit) -> None:
        log = build_log(FULL_SCRIPT).events
        kit.store.append(AppendRequest("src", 0, log))
        stores = [kit.store, kit.another()]
        outcomes: list[object] = [None, None]
        barrier = threading.Barrier(2)

        def race(index: int, at: int) -> None:
            barrier.wait(30)
            try:
                outcomes[index] = stores[index].fork("src", at, "new")
            except BaseException as exc:  # reported below
                outcomes[index] = exc

        threads = [threading.Thread(target=race, args=(i, at), daemon=True) for i, at in enumerate((5, 17))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        won = [o for o in outcomes if isinstance(o, ForkProvenance)]
        lost = [o for o in outcomes if not isinstance(o, ForkProvenance)]
        assert len(won) == 1 and len(lost) == 1 and isinstance(lost[0], SessionExistsError), outcomes
        _assert_matches_fold(kit.store, "new", log[: won[0].seq])
        assert kit.store.provenance("new") == won[0]

    def test_a_forks_export_imports_with_its_provenance_and_a_false_one_is_refused(self, kit: StoreKit) -> None:
        source = build_log(FULL_SCRIPT)
        kit.store.append(AppendRequest("src", 0, source.events))
        provenance = kit.store.fork("src", 8, "fork")  # between turns
        fork = source.prefix(8)
        assert fork.turn("only in the fork")
        kit.store.append(AppendRequest("fork", 8, fork.events[8:]))
        data = export_session(kit.store, "fork")
        assert data.endswith(encode_fork_record(provenance) + b"\n")
        n = len(fork.events)
        assert import_session(kit.store, "copy", data) == AppendResult("copy", 1, n)
        assert import_session(kit.store, "copy", data) == AppendResult("copy", 1, n, replayed=True)
        assert kit.store.provenance("copy") == provenance
        assert export_session(kit.reopen(), "copy") == data
        body = encode_jsonl(kit.store.read("fork"))
        false = [
            ForkProvenance("src", 8, "0" * 64),
            ForkProvenance("src", n + 1, provenance.prefix_sha256),
            ForkProvenance("src", 7, provenance.prefix_sha256),
        ]
        for wrong in false:
            with pytest.raises(ProvenanceMismatchError) as info:
                import_session(kit.store, "bad", body + encode_fork_record(wrong) + b"\n")
            assert info.value.code == "provenance-mismatch"
        with pytest.raises(ForkRecordError):
            import_session(kit.store, "bad", body + b'{"fork":{"source":"src","seq":0,"prefix_sha256":"x"}}\n')
        with pytest.raises(CodecError):  # a fork record that is not the last line
            import_session(kit.store, "bad", encode_fork_record(provenance) + b"\n" + body)
        assert kit.store.head("bad") == 0 and kit.store.provenance("bad") is None
        assert kit.store.session_ids() == ("copy", "fork", "src")

    # ----------------------------------------------------------------------
    # Following a session

    def test_follow_yields_the_events_after_a_position_then_ends_after_its_timeout(self, kit: StoreKit) -> None:
        kit.store.append(AppendRequest("s", 0, batch_after(0, 5)))
        assert tuple(kit.store.follow("s", 2, timeout=0)) == tuple(batch_after(2, 3))
        assert tuple(kit.store.follow("nobody", 0, timeout=0)) == ()

    def test_follow_yields_what_another_store_appends_while_it_waits(self, kit: StoreKit) -> None:
        kit.store.append(AppendRequest("s", 0, batch_after(0, 1)))
        writer = kit.another()
        seen: list[Event] = []
        failures: list[BaseException] = []
        started = threading.Event()

        def write() -> None:
            try:
                started.wait(30)
                for head in range(1, 6):
                    # not the followed session
                    writer.append(AppendRequest("other", head - 1, batch_after(head - 1, 1)))
                    writer.append(AppendRequest("s", head, batch_after(head, 1)))
            except BaseException as exc:  # reported below
                failures.append(exc)

        thread = threading.Thread(target=write, daemon=True)
        thread.start()
        follower = kit.store.follow("s", 0, timeout=30)
        for event in follower:
            seen.append(event)
            if len(seen) == 1:
                started.set()
            if len(seen) == 6:
                break
        follower.close()
        thread.join(30)
        assert failures == []
        assert tuple(seen) == tuple(batch_after(0, 6))

    def test_follow_with_a_timeout_longer_than_any_single_wait_yields_a_later_append(self, kit: StoreKit) -> None:
        kit.store.append(AppendRequest("s", 0, batch_after(0, 1)))
        follower = kit.store.follow("s", 0, timeout=1e10)
        seen: list[Event] = []
        failures: list[BaseException] = []
        first = threading.Event()

        def follow() -> None:
            try:
                for event in follower:
                    seen.append(event)
                    first.set()
                    if len(seen) == 2:
                        return
            except BaseException as exc:  # reported below
                failures.append(exc)
                first.set()

        thread = threading.Thread(target=follow, daemon=True)
        thread.start()
        assert first.wait(30)
        kit.another().append(AppendRequest("s", 1, batch_after(1, 1)))  # while the follower waits, or about to
        thread.join(30)
        assert failures == []
        assert tuple(seen) == tuple(batch_after(0, 2))
        follower.close()

    @pytest.mark.parametrize("bad", [-1.0, "1", True], ids=["negative", "text", "bool"])
    def test_follow_refuses_a_timeout_that_is_not_seconds(self, kit: StoreKit, bad: object) -> None:
        with pytest.raises(InvalidRequestError):
            kit.store.follow("s", 0, timeout=bad)  # type: ignore[arg-type]

    # ----------------------------------------------------------------------
    # Goal leases

    def test_a_free_lease_is_granted_and_a_live_one_is_refused_to_another_holder(
        self, kit: StoreKit, clock: ManualClock
    ) -> None:
        assert kit.store.lease("s") is None
        lease = kit.store.acquire_lease("s", "host-a", 1_000)
        assert lease == Lease("s", "host-a", 1, clock.now + 1_000, 1_000)
        assert kit.store.lease("s") == lease
        clock.advance(999)
        with pytest.raises(LeaseHeldError) as info:
            kit.store.acquire_lease("s", "host-b", 1_000)
        assert (info.value.code, info.value.holder, info.value.expires_at) == ("lease-held", "host-a", lease.expires_at)
        assert kit.another().lease("s") == lease

    def test_the_holder_extends_its_live_lease_and_keeps_its_token(self, kit: StoreKit, clock: ManualClock) -> None:
        first = kit.store.acquire_lease("s", "host-a", 1_000)
        clock.advance(500)
        again = kit.store.acquire_lease("s", "host-a", 2_000)
        assert (again.token, again.expires_at, again.ttl_ms) == (first.token, clock.now + 2_000, 2_000)

    def test_an_expired_lease_goes_to_the_next_holder_with_a_larger_token(
        self, kit: StoreKit, clock: ManualClock
    ) -> None:
        first = kit.store.acquire_lease("s", "host-a", 1_000)
        clock.advance(1_000)
        assert kit.store.lease("s") is None
        second = kit.store.acquire_lease("s", "host-b", 1_000)
        assert second.holder == "host-b" and second.token > first.token
        clock.advance(1_000)
        third = kit.store.acquire_lease("s", "host-b", 1_000)  # its own lease expired: a new grant
        assert third.token > second.token

    def test_a_fenced_append_with_the_live_lease_lands_and_extends_it(
        self, kit: StoreKit, clock: ManualClock
    ) -> None:
        lease = kit.store.acquire_lease("s", "host-a", 1_000)
        clock.advance(900)
        assert kit.store.append(AppendRequest("s", 0, batch_after(0, 2), lease=lease)) == AppendResult("s", 1, 2)
        current = kit.store.lease("s")
        assert current is not None and (current.token, current.expires_at) == (lease.token, clock.now + 1_000)
        clock.advance(900)
        kit.store.append(AppendRequest("s", 2, batch_after(2, 1), lease=lease))  # still live thanks to the extension
        assert kit.store.head("s") == 3

    def test_a_fenced_append_with_an_expired_lease_is_refused_and_writes_nothing(
        self, kit: StoreKit, clock: ManualClock
    ) -> None:
        lease = kit.store.acquire_lease("s", "host-a", 1_000)
        kit.store.append(AppendRequest("s", 0, batch_after(0, 1), lease=lease))
        before = _session_facts(kit.store, "s")
        clock.advance(1_000)
        with pytest.raises(LeaseLostError) as info:
            kit.store.append(AppendRequest("s", 1, batch_after(1, 1), "k", lease=lease))
        assert (info.value.code, info.value.holder, info.value.token) == ("lease-lost", "host-a", lease.token)
        assert _session_facts(kit.store, "s") == before
        # the key was not spent
        assert kit.store.append(AppendRequest("s", 1, batch_after(1, 1), "k")) == AppendResult("s", 2, 2)

    def test_a_lease_taken_over_fences_out_its_old_holder_for_good(self, kit: StoreKit, clock: ManualClock) -> None:
        old = kit.store.acquire_lease("s", "host-a", 1_000)
        clock.advance(1_000)
        new = kit.another().acquire_lease("s", "host-b", 5_000)
        with pytest.raises(LeaseLostError):
            kit.store.append(AppendRequest("s", 0, batch_after(0, 1), lease=old))
        assert kit.store.acquire_lease("s", "host-b", 5_000).token == new.token
        with pytest.raises(LeaseLostError):  # even a holder name that matches needs the token
            forged = Lease("s", "host-b", old.token, new.expires_at, 5_000)
            kit.store.append(AppendRequest("s", 0, batch_after(0, 1), lease=forged))
        assert kit.store.head("s") == 0

    def test_a_round_without_the_lease_is_refused_while_another_holder_has_it(
        self, kit: StoreKit, clock: ManualClock
    ) -> None:
        log = build_log(("goal:create", "turn")).events
        kit.store.append(AppendRequest("s", 0, log))
        goal = kit.store.load("s").goal.current
        assert goal is not None
        source: dict[str, str | int] = {"type": "goal", "goal_id": goal.id, "revision": goal.revision, "round": 1}
        round_ = [Event(len(log) + 1, USER_MESSAGE, log[-1].at, {"text": "go on", "source": source})]
        chat = [Event(len(log) + 1, USER_MESSAGE, log[-1].at, {"text": "hello", "source": None})]
        lease = kit.another().acquire_lease("s", "host-b", 1_000)
        with pytest.raises(LeaseHeldError):
            kit.store.append(AppendRequest("s", len(log), round_))
        assert kit.store.append(AppendRequest("s", len(log), chat)) == AppendResult("s", len(log) + 1, len(log) + 1)
        round_ = [Event(len(log) + 2, USER_MESSAGE, log[-1].at, {"text": "go on", "source": source})]
        assert kit.store.append(AppendRequest("s", len(log) + 1, round_, lease=lease)).last_seq == len(log) + 2
        assert kit.store.load("s").goal.current.rounds_started == 1  # type: ignore[union-attr]

    def test_a_released_lease_is_free_at_once_and_a_second_release_changes_nothing(
        self, kit: StoreKit, clock: ManualClock
    ) -> None:
        lease = kit.store.acquire_lease("s", "host-a", 60_000)
        assert kit.store.release_lease(lease) is True
        assert kit.store.release_lease(lease) is False
        assert kit.store.lease("s") is None
        with pytest.raises(LeaseLostError):
            kit.store.append(AppendRequest("s", 0, batch_after(0, 1), lease=lease))
        assert kit.store.acquire_lease("s", "host-b", 1_000).token > lease.token

    def test_leases_outlive_a_reopen(self, kit: StoreKit, clock: ManualClock) -> None:
        lease = kit.store.acquire_lease("s", "host-a", 1_000)
        assert kit.reopen().lease("s") == lease
        kit.store.append(AppendRequest("s", 0, batch_after(0, 1), lease=lease))

    @pytest.mark.parametrize(
        "call",
        [
            lambda s: s.acquire_lease("", "h", 1_000),
            lambda s: s.acquire_lease("s", "", 1_000),
            lambda s: s.acquire_lease("s", "h\x00", 1_000),
            lambda s: s.acquire_lease("s", "h", 0),
            lambda s: s.acquire_lease("s", "h", True),
            lambda s: s.acquire_lease("s", "h", 86_400_001),
            lambda s: s.append(AppendRequest("s", 0, batch_after(0, 1), lease=Lease("other", "h", 1, 2, 3))),
            lambda s: s.append(AppendRequest("s", 0, batch_after(0, 1), lease="h")),  # type: ignore[arg-type]
            lambda s: s.release_lease("h"),
            lambda s: s.lease(""),
        ],
        ids=[
            "empty-session", "empty-holder", "holder-with-nul", "zero-ttl", "bool-ttl", "ttl-past-a-day",
            "lease-of-another-session", "lease-not-a-lease", "release-not-a-lease", "lease-of-empty-session",
        ],
    )  # fmt: skip
    def test_a_bad_lease_request_gets_a_typed_error_and_changes_nothing(
        self, kit: StoreKit, call: Callable[[SharedStore], object]
    ) -> None:
        with pytest.raises(InvalidRequestError):
            call(kit.store)
        assert kit.store.lease("s") is None and kit.store.head("s") == 0

    # ----------------------------------------------------------------------
    # The state machine

    def test_random_appends_conflicts_retries_and_reopens_agree_with_a_list_model(
        self, store_maker: StoreMaker
    ) -> None:
        class Machine(StoreMachine):
            def __init__(self) -> None:
                super().__init__(store_maker)

        run_state_machine_as_test(
            Machine,
            settings=settings(
                max_examples=_budget(self.example_divisor),
                deadline=None,
                suppress_health_check=[HealthCheck.too_slow],
            ),
        )


# --------------------------------------------------------------------------
# The state machine: random appends, conflicts, retries and reopens against a
# model that is just a list of events per session.

SESSIONS = ("a", "b", "c", "f")


@dataclass
class Keyed:
    """The last keyed append that landed in a session."""

    key: str
    expected: int
    events: list[Event]
    result: AppendResult


@dataclass
class Model:
    builders: dict[str, LogBuilder] = field(default_factory=lambda: {s: LogBuilder() for s in SESSIONS})
    keyed: dict[str, Keyed] = field(default_factory=dict)
    keys: int = 0
    provenance: dict[str, ForkProvenance] = field(default_factory=dict)


class StoreMachine(RuleBasedStateMachine):
    """Drives one store and the model in lockstep."""

    def __init__(self, maker: StoreMaker) -> None:
        super().__init__()
        self.kit = maker(ManualClock())
        self.model = Model()

    def teardown(self) -> None:
        self.kit.close()

    def _events(self, sid: str) -> list[Event]:
        return self.model.builders[sid].events

    @rule(
        sid=st.sampled_from(SESSIONS),
        moves=st.lists(st.sampled_from(MOVES), min_size=1, max_size=3),
        keyed=st.booleans(),
    )
    def append(self, sid: str, moves: list[str], keyed: bool) -> None:
        builder = copy.deepcopy(self.model.builders[sid])
        head = len(builder.events)
        for move in moves:
            builder.apply(move)
        if len(builder.events) == head:
            assert builder.turn()  # every drawn move was refused right now; a turn always fits
        new = builder.events[head:]
        note(f"append {sid} at {head}: {[e.kind for e in new]} (moves {moves})")
        key = None
        if keyed:
            self.model.keys += 1
            key = f"key-{self.model.keys}"
        result = self.kit.store.append(AppendRequest(sid, head, new, key))
        assert result == AppendResult(sid, head + 1, head + len(new))
        self.model.builders[sid] = builder
        if key is not None:
            self.model.keyed[sid] = Keyed(key, head, new, result)

    @rule(sid=st.sampled_from(SESSIONS), offset=st.integers(min_value=-3, max_value=3).filter(bool))
    def stale_append(self, sid: str, offset: int) -> None:
        head = len(self._events(sid))
        expected = max(0, head + offset)
        if expected == head:
            expected = head + 1
        note(f"stale append {sid}: expected {expected}, head {head}")
        with pytest.raises(ConflictError) as info:
            self.kit.store.append(AppendRequest(sid, expected, batch_after(expected, 1)))
        assert info.value.actual_seq == head

    @precondition(lambda self: bool(self.model.keyed))
    @rule(data=st.data())
    def retry(self, data: st.DataObject) -> None:
        sid = data.draw(st.sampled_from(sorted(self.model.keyed)))
        keyed = self.model.keyed[sid]
        note(f"retry {sid} with {keyed.key}")
        again = self.kit.store.append(AppendRequest(sid, keyed.expected, keyed.events, keyed.key))
        assert again == AppendResult(sid, keyed.result.first_seq, keyed.result.last_seq, replayed=True)

    @precondition(lambda self: bool(self.model.keyed))
    @rule(data=st.data())
    def reuse_key(self, data: st.DataObject) -> None:
        sid = data.draw(st.sampled_from(sorted(self.model.keyed)))
        keyed = self.model.keyed[sid]
        head = len(self._events(sid))
        note(f"reuse {keyed.key} in {sid} for a different append")
        with pytest.raises(IdempotencyMismatchError):
            self.kit.store.append(AppendRequest(sid, head, [Event(head + 1, "plan/nope", 0, {})], keyed.key))

    def _reject(self, sid: str, rule_name: str, make: Callable[[int], list[Event]]) -> None:
        head = len(self._events(sid))
        note(f"rejected append {sid}: {rule_name}")
        with pytest.raises(AppendRejectedError) as info:
            self.kit.store.append(AppendRequest(sid, head, make(head)))
        assert info.value.position > head

    @rule(sid=st.sampled_from(SESSIONS), which=st.sampled_from([r for r in REJECTS if r[0] != "time-regressed"]))
    def rejected(self, sid: str, which: tuple[str, Callable[[int], list[Event]]]) -> None:
        self._reject(sid, *which)

    @precondition(lambda self: any(self._events(s) for s in SESSIONS))
    @rule(data=st.data())
    def time_regressed(self, data: st.DataObject) -> None:
        sid = data.draw(st.sampled_from([s for s in SESSIONS if self._events(s)]))
        self._reject(sid, *next(r for r in REJECTS if r[0] == "time-regressed"))

    @rule()
    def reopen(self) -> None:
        note("reopen")
        self.kit.reopen()

    @rule(source=st.sampled_from(SESSIONS), new=st.sampled_from(SESSIONS), at=st.integers(min_value=-1, max_value=40))
    def fork(self, source: str, new: str, at: int) -> None:
        events = self._events(source)
        note(f"fork {source} at {at} into {new} (heads {len(events)} and {len(self._events(new))})")
        error: type[Exception] | None = None
        if at < 1:
            error = ForkSeqMissingError
        elif self._events(new):
            error = SessionExistsError
        elif not events:
            error = ForkSourceMissingError
        elif at > len(events):
            error = ForkSeqMissingError
        if error is not None:
            with pytest.raises(error):
                self.kit.store.fork(source, at, new)
            return
        provenance = self.kit.store.fork(source, at, new)
        assert provenance == ForkProvenance(source, at, prefix_digest(events[:at]))
        self.model.builders[new] = self.model.builders[source].prefix(at)
        self.model.provenance[new] = provenance

    @invariant()
    def heads_match(self) -> None:
        for sid in SESSIONS:
            assert self.kit.store.head(sid) == len(self._events(sid))

    @invariant()
    def logs_match(self) -> None:
        for sid in SESSIONS:
            assert self.kit.store.read(sid) == tuple(canonical_event(e) for e in self._events(sid))

    @invariant()
    def loads_are_the_fold(self) -> None:
        for sid in SESSIONS:
            state = self.model.builders[sid].state
            assert self.kit.store.load(sid) == state
            assert self.kit.store.load(sid, incremental=True) == state

    @invariant()
    def projections_are_the_fold(self) -> None:
        for sid in SESSIONS:
            assert self.kit.store.projection(sid) == project(self.model.builders[sid].state)
            assert self.kit.store.audit(sid).ok

    @invariant()
    def provenance_is_kept(self) -> None:
        for sid in SESSIONS:
            assert self.kit.store.provenance(sid) == self.model.provenance.get(sid)

    @invariant()
    def only_sessions_with_events_exist(self) -> None:
        assert self.kit.store.session_ids() == tuple(s for s in SESSIONS if self._events(s))
