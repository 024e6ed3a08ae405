"""One Hypothesis test per fuzz target: hostile inputs in, only typed errors
out, nothing written from rejected input, no input over a second.

The ``fuzz`` profile (and ``python -m tests.fuzz``) runs these for longer."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from tests.fuzz.harness import check
from tests.fuzz.targets import by_name

# Size attacks (a million-character line, a 20 000-event log) are slow to
# generate; the health check would otherwise flag them.
fuzz_settings = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

REPLAY = by_name("replay")
EXIT_PLAN_ARGS = by_name("exit_plan_args")
PLAN_COMMAND = by_name("plan_command")
GOAL_COMMAND = by_name("goal_command")
PLAN_POLICY = by_name("plan_policy")
SHELL_COMMAND = by_name("shell_command")
SHELL_CALL = by_name("shell_call")


@fuzz_settings
@given(REPLAY.inputs)
def test_fuzz_replay(data: bytes) -> None:
    check(REPLAY, data)


@fuzz_settings
@given(EXIT_PLAN_ARGS.inputs)
def test_fuzz_exit_plan_args(data: bytes) -> None:
    check(EXIT_PLAN_ARGS, data)


@fuzz_settings
@given(PLAN_COMMAND.inputs)
def test_fuzz_plan_command(data: bytes) -> None:
    check(PLAN_COMMAND, data)


@fuzz_settings
@given(GOAL_COMMAND.inputs)
def test_fuzz_goal_command(data: bytes) -> None:
    check(GOAL_COMMAND, data)


@fuzz_settings
@given(PLAN_POLICY.inputs)
def test_fuzz_plan_policy(data: bytes) -> None:
    check(PLAN_POLICY, data)


@fuzz_settings
@given(SHELL_COMMAND.inputs)
def test_fuzz_shell_command(data: bytes) -> None:
    check(SHELL_COMMAND, data)


@fuzz_settings
@given(SHELL_CALL.inputs)
def test_fuzz_shell_call(data: bytes) -> None:
    check(SHELL_CALL, data)


CODEC_EVENT = by_name("codec_event")
JSONL_IMPORT = by_name("jsonl_import")
STORE_APPEND = by_name("store_append")


@fuzz_settings
@given(CODEC_EVENT.inputs)
def test_fuzz_codec_event(data: bytes) -> None:
    check(CODEC_EVENT, data)


@settings(fuzz_settings, max_examples=min(settings().max_examples, 40))
@given(JSONL_IMPORT.inputs)
def test_fuzz_jsonl_import(data: bytes) -> None:
    check(JSONL_IMPORT, data)


@settings(fuzz_settings, max_examples=min(settings().max_examples, 40))
@given(STORE_APPEND.inputs)
def test_fuzz_store_append(data: bytes) -> None:
    check(STORE_APPEND, data)


GATE_CALL = by_name("gate_call")
PLAN_TOOL_ARGS = by_name("plan_tool_args")
TOOL_SPEC = by_name("tool_spec")
CAPSULE = by_name("capsule")


@settings(fuzz_settings, max_examples=min(settings().max_examples, 40))
@given(GATE_CALL.inputs)
def test_fuzz_gate_call(data: bytes) -> None:
    check(GATE_CALL, data)


@fuzz_settings
@given(PLAN_TOOL_ARGS.inputs)
def test_fuzz_plan_tool_args(data: bytes) -> None:
    check(PLAN_TOOL_ARGS, data)


@fuzz_settings
@given(TOOL_SPEC.inputs)
def test_fuzz_tool_spec(data: bytes) -> None:
    check(TOOL_SPEC, data)


@fuzz_settings
@given(CAPSULE.inputs)
def test_fuzz_capsule(data: bytes) -> None:
    check(CAPSULE, data)


SERVE = by_name("serve")


@settings(fuzz_settings, max_examples=min(settings().max_examples, 40))
@given(SERVE.inputs)
def test_fuzz_serve(data: bytes) -> None:
    check(SERVE, data)


SCOPE_LINKS = by_name("scope_links")


@settings(fuzz_settings, max_examples=min(settings().max_examples, 40))
@given(SCOPE_LINKS.inputs)
def test_fuzz_scope_links(data: bytes) -> None:
    check(SCOPE_LINKS, data)


DAMAGED_DATABASE = by_name("damaged_database")


@settings(fuzz_settings, max_examples=min(settings().max_examples, 40))
@given(DAMAGED_DATABASE.inputs)
def test_fuzz_damaged_database(data: bytes) -> None:
    check(DAMAGED_DATABASE, data)
