"""What the model clients do about a failed attempt: the outcome table, the
retry policy and the retry budget, shared by the synchronous and the asyncio
client.

Theory of operation
-------------------
What happens to an attempt's outcome is one table, ``OUTCOMES`` (its rows
are the first column; ``outcome_of`` picks the row of an error):

=============  ============================  ===================  ===========
row            what the server did           error                retried?
=============  ============================  ===================  ===========
(success)      2xx with a chat completion    (a ChatResponse)     --
bad-response   2xx with anything else        model-bad-response   never
rate-limited   429                           model-rate-limited   yes
server-busy    408 or 5xx                    model-http-error     yes
refused        any other status              model-http-error     never
unreachable    refused or dropped the link   model-unreachable    yes
               (also in the middle of a body)
timeout        missed the deadline           model-timeout        by policy
=============  ============================  ===================  ===========

A retried outcome waits before the next attempt: exactly the server's
``Retry-After`` (or ``retry-after-ms``) when it sent one, else exponential
backoff with jitter (``RetryPolicy.backoff``). A ``Retry-After`` longer than
``RetryPolicy.max_retry_after`` is honoured by not retrying: the error is
raised at once, and no retry is spent for it. A bad response is never
retried: a server that does not speak the protocol will not start speaking
it on the second try.

Retries come out of one budget (``RetryBudget``, ``RetryPolicy.max_retries``
retries per unit of work). Used alone, the unit is one ``complete`` call; a
runtime that holds the budget for a step (``RetryBudget.step``) shares it, so
its same-step retries and the client's retries together never exceed it. When
the budget is spent on a retryable failure the client raises
``ModelRetriesExhaustedError``, which counts every attempt of the unit and
carries the last failure as ``last``. Every error a client raises says
whether another attempt could help (``ModelError.retryable``): only an
exhausted budget leaves it true.

``Retrier.after`` is that decision for one failed attempt: the wait before
the next one, or the error to raise. A client loops ``attempt``, ``after``,
sleep (``time.sleep`` or ``asyncio.sleep``) and nothing else; each retry is
logged on ``planfold.adapters.llm.openai_policy`` at WARNING with the failure,
its HTTP status and the wait.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..loggers import logger
from .model import (
    ChatResponse,
    ModelBadRequestError,
    ModelError,
    ModelHTTPError,
    ModelRateLimitedError,
    ModelRetriesExhaustedError,
    ModelTimeoutError,
    ModelUnreachableError,
    RetryBudget,
)

__all__ = ["OUTCOMES", "Retrier", "RetryPolicy", "is_retryable", "log_attempt", "outcome_of"]

_log = logger(__name__)

#: The outcome table from the module docstring: outcome -> retried? (None:
#: ``RetryPolicy.retry_timeouts`` decides). ``outcome_of`` names the row.
OUTCOMES: Mapping[str, bool | None] = {
    "bad-response": False,
    "rate-limited": True,
    "server-busy": True,  # 408 and every 5xx
    "refused": False,  # any other non-2xx status
    "unreachable": True,
    "timeout": None,
}


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long to wait between attempts.

    ``max_retries`` counts attempts after the first. The n-th retry (n = 1, 2,
    …) waits ``min(max_delay, initial_delay * multiplier ** (n - 1))`` less a
    random fraction of up to ``jitter`` of it. Raises ``ModelBadRequestError``
    for a negative count or delay, or a jitter outside [0, 1].
    """

    max_retries: int = 3
    initial_delay: float = 0.5
    multiplier: float = 2.0
    max_delay: float = 8.0
    jitter: float = 0.25
    max_retry_after: float = 60.0
    retry_timeouts: bool = True

    def __post_init__(self) -> None:
        numbers = (self.max_retries, self.initial_delay, self.max_delay, self.max_retry_after)
        if min(numbers) < 0 or self.multiplier < 1:
            raise ModelBadRequestError(f"retry policy out of range: {self!r}")
        if not 0 <= self.jitter <= 1:
            raise ModelBadRequestError(f"retry jitter must be in [0, 1], got {self.jitter}")

    def backoff(self, retry: int, rand: float) -> float:
        """The wait before retry number ``retry`` (1-based), given ``rand`` in [0, 1)."""
        base = min(self.max_delay, self.initial_delay * self.multiplier ** (retry - 1))
        return base * (1 - self.jitter * rand)


def outcome_of(err: ModelError) -> str:
    """The ``OUTCOMES`` row a failed attempt falls in."""
    if isinstance(err, ModelTimeoutError):
        return "timeout"
    if isinstance(err, ModelUnreachableError):
        return "unreachable"
    if isinstance(err, ModelRateLimitedError):
        return "rate-limited"
    if isinstance(err, ModelHTTPError):
        busy = err.status == 408 or 500 <= err.status <= 599
        return "server-busy" if busy else "refused"
    return "bad-response"


def is_retryable(err: ModelError, policy: RetryPolicy) -> bool:
    """Whether ``err`` is worth another attempt under ``policy`` (see ``OUTCOMES``)."""
    retried = OUTCOMES[outcome_of(err)]
    return policy.retry_timeouts if retried is None else retried


@dataclass(frozen=True, slots=True)
class Retrier:
    """The retry decisions of a client (see the module docstring): ``where``
    names the server in the log (a URL without its password);
    ``on_retry(retry, error, delay)`` is called before each wait."""

    policy: RetryPolicy
    random: Callable[[], float]
    where: str
    on_retry: Callable[[int, ModelError, float], None] | None = None

    def after(self, err: ModelError, budget: RetryBudget, attempts: int) -> float:
        """The wait before the next attempt after the failed one that raised
        ``err``, the call's ``attempts``-th, a retry taken from ``budget``
        (the call's: the client's own or the one a runtime bound). Raises
        ``err`` when it is not retried (or the server asked for a longer wait
        than the policy allows), spending nothing of ``budget``, and
        ``ModelRetriesExhaustedError`` (after the call's ``attempts``) when
        ``budget`` is spent."""
        err.retryable = False
        if not is_retryable(err, self.policy):
            raise err
        asked = err.retry_after if isinstance(err, ModelHTTPError) else None
        if asked is not None and asked > self.policy.max_retry_after:
            raise err
        if not budget.take():
            exhausted = ModelRetriesExhaustedError(attempts, err)
            exhausted.retryable = True
            raise exhausted from err
        retry = budget.used
        delay = self.policy.backoff(retry, self.random()) if asked is None else asked
        status = f" HTTP {err.status}" if isinstance(err, ModelHTTPError) else ""
        _log.warning(
            "model server %s failed (%s%s); retry %d of %d in %.3fs",
            self.where, err.code, status, retry, budget.retries, delay,
        )  # fmt: skip
        if self.on_retry is not None:
            self.on_retry(retry, err, delay)
        return delay


def log_attempt(where: str, attempt: int, seconds: float, outcome: ChatResponse | ModelError) -> None:
    """The DEBUG record of one attempt of a model call to ``where``: its
    number within the call (1 first), how long it took and how it ended (the
    reply's finish reason, or the error's code and HTTP status)."""
    if not _log.isEnabledFor(logging.DEBUG):
        return
    if isinstance(outcome, ModelError):
        status = f" HTTP {outcome.status}" if isinstance(outcome, ModelHTTPError) else ""
        ended = f"failed ({outcome.code}{status})"
    else:
        ended = f"answered ({outcome.finish_reason or 'no finish reason'}, {len(outcome.tool_calls)} tool call(s))"
    _log.debug("model call to %s: attempt %d %s in %.1f ms", where, attempt, ended, seconds * 1000)
