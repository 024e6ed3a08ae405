"""One Hypothesis test per fuzz target: hostile inputs in, only typed errors
out, nothing written from rejected input, no input over a second.

The ``fuzz`` profile (and ``python -m tests.fuzz``) runs these for longer."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import HealthCheck, given, settings

from tests.fuzz.harness import check
from tests.fuzz.targets import by_name

# Size attacks (a million-character line, a 20 000-event log) are slow to
# generate; the health check would otherwise flag them.
fuzz_settings = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def fuzz_test(name: str, *, at_most: int | None = None) -> Callable[[], None]:
    """The test of one target: its inputs through the harness's check; a slow
    target (one that writes stores or starts a host) runs at most `at_most`
    examples under the default profile."""
    target = by_name(name)
    chosen = fuzz_settings
    if at_most is not None:
        chosen = settings(fuzz_settings, max_examples=min(settings().max_examples, at_most))

    def run(data: bytes) -> None:
        check(target, data)

    # Hypothesis keys its example database by the function's name and source:
    # each target keeps its own entry.
    run.__name__ = run.__qualname__ = f"test_fuzz_{name}"
    return chosen(given(target.inputs)(run))


test_fuzz_replay = fuzz_test("replay")
test_fuzz_exit_plan_args = fuzz_test("exit_plan_args")
test_fuzz_plan_command = fuzz_test("plan_command")
test_fuzz_goal_command = fuzz_test("goal_command")
test_fuzz_plan_policy = fuzz_test("plan_policy")
test_fuzz_shell_command = fuzz_test("shell_command")
test_fuzz_shell_call = fuzz_test("shell_call")
test_fuzz_codec_event = fuzz_test("codec_event")
test_fuzz_jsonl_import = fuzz_test("jsonl_import", at_most=40)
test_fuzz_store_append = fuzz_test("store_append", at_most=40)
test_fuzz_gate_call = fuzz_test("gate_call", at_most=40)
test_fuzz_plan_tool_args = fuzz_test("plan_tool_args")
test_fuzz_tool_spec = fuzz_test("tool_spec")
test_fuzz_capsule = fuzz_test("capsule")
test_fuzz_serve = fuzz_test("serve", at_most=40)
test_fuzz_scope_links = fuzz_test("scope_links", at_most=40)
test_fuzz_damaged_database = fuzz_test("damaged_database", at_most=40)
