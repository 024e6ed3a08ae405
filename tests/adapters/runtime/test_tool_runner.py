"""A tool executor that crashes: the model is told ``tool-crashed`` and the
traceback goes to the ``planfold`` log, never into the turn."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping

import pytest

from planfold.adapters.llm import model
from planfold.adapters.llm.model import ToolCall
from planfold.adapters.runtime.tool_runner import ToolRunner, reply_of, usage_of
from planfold.adapters.runtime.toolset import default_registry
from planfold.adapters.runtime.workspace import ToolFailure
from planfold.kernel.log import USAGE_VERSION, ModelUsage
from planfold.kernel.payload import JSON

LOGGER = "planfold.adapters.runtime.tool_runner"


def broken(arguments: Mapping[str, object]) -> Mapping[str, JSON]:
    raise ZeroDivisionError("the tool divided by zero")


def refusing(arguments: Mapping[str, object]) -> Mapping[str, JSON]:
    raise ToolFailure("no such file: a.md")


def _read_file(
    caplog: pytest.LogCaptureFixture, executor: Callable[[Mapping[str, object]], Mapping[str, JSON]], level: int
) -> tuple[bool, str, logging.LogRecord]:
    """Run one ``read_file`` call whose executor is ``executor``, capturing the
    runner's log from ``level`` up: whether the call succeeded, what the model
    is told, and the one record the runner logged."""
    runner = ToolRunner(default_registry(), executors={"read_file": executor})
    with caplog.at_level(level, logger=LOGGER):
        ok, output = runner.execute(ToolCall.of("c1", "read_file", {"path": "a.md"}))
    (record,) = [r for r in caplog.records if r.name == LOGGER]
    return ok, output, record


def test_an_executor_that_raises_is_a_crashed_call_and_its_traceback_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ok, output, record = _read_file(caplog, broken, logging.WARNING)
    assert not ok and json.loads(output)["error"]["code"] == "tool-crashed"
    assert record.levelno == logging.WARNING
    assert record.getMessage() == "the executor of 'read_file' (call 'c1') raised ZeroDivisionError"
    assert record.exc_info is not None and record.exc_info[0] is ZeroDivisionError
    assert "the tool divided by zero" in caplog.text  # the traceback is in the log


def test_a_typed_refusal_of_an_executor_is_no_crash_and_only_the_runs_debug_record(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ok, output, record = _read_file(caplog, refusing, logging.DEBUG)
    assert not ok and json.loads(output)["error"]["code"] == "tool-failed"
    assert record.levelno == logging.DEBUG and record.exc_info is None
    assert record.getMessage().startswith("tool 'read_file' (call 'c1'): allowed, ran failed (tool-failed) in ")


def test_the_reply_carries_what_its_call_cost_as_the_kernel_records_it() -> None:
    tokens = model.Usage(model.TokenCount(1200), model.TokenCount(35), model.TokenCount(1235), model.TokenCount(1024))
    reply = reply_of(model.ChatResponse("x", (), "stop", tokens, latency_ms=840))
    assert reply.usage == ModelUsage(USAGE_VERSION, 840, 1200, 35, 1024)
    assert usage_of(model.ChatResponse("x", latency_ms=12)) == ModelUsage(USAGE_VERSION, 12)
    assert usage_of(model.ChatResponse("x")) is None  # a client that measures nothing records nothing


def test_a_count_the_log_cannot_hold_is_left_out_of_the_usage() -> None:
    odd = model.Usage(model.TokenCount(-3), model.TokenCount(2**60), None, model.TokenCount(5))
    assert usage_of(model.ChatResponse("x", usage=odd, latency_ms=-1)) == ModelUsage(USAGE_VERSION, None, None, None, 5)
    assert usage_of(model.ChatResponse("x", usage=model.Usage(model.TokenCount(-1)), latency_ms=-5)) is None
