"""The client's retry behaviour, in lockstep with a small model, over real HTTP.

A Hypothesis state machine plans arbitrary sequences of server answers
(success, 429 with and without Retry-After, 5xx, dropped connections, client
errors, malformed bodies, waits longer than the policy accepts) on a loopback
``ChatServer`` and calls the real ``OpenAIClient`` (``AsyncRetryMachine``:
the real ``AsyncOpenAIClient``). A few lines of obviously
correct bookkeeping predict, for each call, its outcome, how many answers it
consumes and the waits it chooses; invariants compare that with what the
server received and the client slept.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from hypothesis import event, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from planfold.adapters.llm.model import ChatRequest, ModelError, ModelRetriesExhaustedError, UserMessage
from planfold.adapters.llm.openai import RetryPolicy
from tests.adapters.llm.clients import Blocking, Kind, Maker
from tests.chat_server import Answer, ChatServer, completion

REQUEST = ChatRequest((UserMessage("go"),))
#: What ``random()`` returns on its 1st, 2nd, … call (then round again).
RANDS = (0.0, 0.5, 0.999, 0.25)
MAX_RETRY_AFTER = 10.0

#: kind -> (status, error code of that answer, retried by the client?)
KINDS: dict[str, tuple[int, str, bool]] = {
    "ok": (200, "", False),
    "429": (429, "model-rate-limited", True),
    "500": (500, "model-http-error", True),
    "503": (503, "model-http-error", True),
    "drop": (0, "model-unreachable", True),
    "400": (400, "model-http-error", False),
    "bad": (200, "model-bad-response", False),
}


@dataclass(frozen=True)
class Planned:
    kind: str
    retry_after: int | None  # seconds, for 429/503
    marker: int

    def answer(self) -> Answer:
        status = KINDS[self.kind][0]
        headers = {} if self.retry_after is None else {"Retry-After": str(self.retry_after)}
        if self.kind == "ok":
            return Answer(body=completion(f"answer {self.marker}"))
        if self.kind == "drop":
            return Answer(drop=True)
        if self.kind == "bad":
            return Answer(body=b"definitely not json")
        return Answer(status, b"error %d" % self.marker, headers)


Outcome = tuple[object, ...]


class RetryMachine(RuleBasedStateMachine):
    kind: Kind = "sync"

    def __init__(self) -> None:
        super().__init__()
        self.server = ChatServer().__enter__()
        self.sleeps: list[float] = []
        self.rand_calls = 0
        self.policy = RetryPolicy()
        self.maker = Maker(self.kind)
        self.client: Blocking | None = None
        self.queue: deque[Planned] = deque()
        self.expected_requests = 0
        self.expected_sleeps: list[float] = []
        self.markers = 0

    def _random(self) -> float:
        value = RANDS[self.rand_calls % len(RANDS)]
        self.rand_calls += 1
        return value

    @initialize(max_retries=st.integers(0, 3), jitter=st.sampled_from([0.0, 0.25, 1.0]))
    def make_client(self, max_retries: int, jitter: float) -> None:
        self.policy = RetryPolicy(
            max_retries=max_retries, jitter=jitter, max_retry_after=MAX_RETRY_AFTER
        )
        note(f"policy {self.policy}")
        self.client = self.maker(
            self.server.base_url,
            "m",
            retry=self.policy,
            sleep=self.sleeps.append,
            random=self._random,
            timeout_s=5.0,
        )

    @rule(
        kind=st.sampled_from(sorted(KINDS)),
        retry_after=st.none() | st.sampled_from([0, 1, 3, 3600]),
    )
    def plan(self, kind: str, retry_after: int | None) -> None:
        if kind not in ("429", "503"):
            retry_after = None
        self.markers += 1
        planned = Planned(kind, retry_after, self.markers)
        note(f"plan {planned}")
        self.server.plan(planned.answer())
        self.queue.append(planned)

    def predict(self) -> tuple[Outcome, int, list[float]] | None:
        """(outcome, answers consumed, waits), or None if the plan would run out."""
        waits: list[float] = []
        rand_calls = self.rand_calls
        for attempt, planned in enumerate(self.queue, start=1):
            _, code, retried = KINDS[planned.kind]
            if planned.kind == "ok":
                return ("ok", f"answer {planned.marker}"), attempt, waits
            if not retried:
                return (code,), attempt, waits
            if planned.retry_after is not None and planned.retry_after > MAX_RETRY_AFTER:
                return (code,), attempt, waits
            if attempt > self.policy.max_retries:
                return ("exhausted", attempt, code), attempt, waits
            if planned.retry_after is not None:
                waits.append(float(planned.retry_after))
            else:
                rand = RANDS[rand_calls % len(RANDS)]
                rand_calls += 1
                waits.append(self.policy.backoff(attempt, rand))
        return None

    @precondition(lambda self: self.client is not None and self.predict() is not None)
    @rule()
    def call(self) -> None:
        assert self.client is not None
        prediction = self.predict()
        assert prediction is not None
        expected, consumed, waits = prediction
        actual: Outcome
        try:
            actual = ("ok", self.client.complete(REQUEST).text)
        except ModelRetriesExhaustedError as err:
            actual = ("exhausted", err.attempts, err.last.code)
        except ModelError as err:
            actual = (err.code,)
        note(f"call -> {actual}, expected {expected} after {consumed} answer(s)")
        assert actual == expected
        event(f"call outcome: {actual[0]}")
        for _ in range(consumed):
            self.queue.popleft()
        self.expected_requests += consumed
        self.expected_sleeps += waits

    @invariant()
    def server_saw_exactly_the_predicted_requests(self) -> None:
        assert len(self.server.received) == self.expected_requests

    @invariant()
    def client_waited_exactly_as_predicted(self) -> None:
        assert self.sleeps == self.expected_sleeps

    @invariant()
    def unused_answers_are_still_planned(self) -> None:
        assert self.server.pending == len(self.queue)
        assert self.server.unplanned == 0

    @invariant()
    def waits_stay_within_policy(self) -> None:
        assert all(0 <= s <= max(self.policy.max_delay, MAX_RETRY_AFTER) for s in self.sleeps)

    def teardown(self) -> None:
        self.maker.close()
        self.server.close()


RetryMachine.TestCase.settings = settings(max_examples=max(10, settings().max_examples // 3))
TestRetryMachine = RetryMachine.TestCase


class AsyncRetryMachine(RetryMachine):
    kind: Kind = "async"


AsyncRetryMachine.TestCase.settings = RetryMachine.TestCase.settings
TestAsyncRetryMachine = AsyncRetryMachine.TestCase
