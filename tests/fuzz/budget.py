"""A pytest plugin for the fuzz pass: ``-p tests.fuzz.budget`` caps every
Hypothesis test at ``FUZZ_MAX_EXAMPLES`` examples, on top of the profile that
``HYPOTHESIS_PROFILE`` names (so a round of the ``fuzz`` profile fits a time
budget)."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    cap = os.environ.get("FUZZ_MAX_EXAMPLES")
    if cap is None:
        return
    parent = settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
    settings.register_profile("fuzz-round", parent, max_examples=int(cap))
    settings.load_profile("fuzz-round")
