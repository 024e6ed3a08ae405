"""One Hypothesis test per fuzz target: hostile inputs in, only typed errors
out, nothing written from rejected input, no input over a second.

The ``fuzz`` profile (and ``python -m tests.fuzz``) runs these for longer."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz.harness import Target, check
from tests.fuzz.targets import TARGETS

# Size attacks (a million-character line, a 20 000-event log) are slow to
# generate; the health check would otherwise flag them.
fuzz_settings = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Targets that write stores or databases, or start a host, run at most 40
# examples under the default profile. The command line's target is fuzzed by
# the command line's own tests.
SLOW = {"jsonl_import", "store_append", "gate_call", "serve", "scope_links", "damaged_database"}
QUICK_TARGETS = [target for target in TARGETS if target.name not in SLOW and target.name != "cli"]
SLOW_TARGETS = [target for target in TARGETS if target.name in SLOW]


def target_name(target: Target) -> str:
    return target.name


@fuzz_settings
@pytest.mark.parametrize("target", QUICK_TARGETS, ids=target_name)
@given(data=st.data())
def test_a_target_lets_only_typed_errors_out(target: Target, data: st.DataObject) -> None:
    check(target, data.draw(target.inputs))


@settings(fuzz_settings, max_examples=min(settings().max_examples, 40))
@pytest.mark.parametrize("target", SLOW_TARGETS, ids=target_name)
@given(data=st.data())
def test_a_slow_target_lets_only_typed_errors_out(target: Target, data: st.DataObject) -> None:
    check(target, data.draw(target.inputs))
