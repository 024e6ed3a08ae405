"""A pytest plugin: ``-p tests.fuzz.budget`` caps every Hypothesis test at
``HYPOTHESIS_MAX_EXAMPLES`` examples (when that is set), on top of the
profile ``HYPOTHESIS_PROFILE`` names. The fuzz pass uses it to fit rounds of
the ``fuzz`` profile into a time budget; mutation testing uses it to keep a
run over thousands of mutants affordable."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    cap = os.environ.get("HYPOTHESIS_MAX_EXAMPLES")
    if cap is None:
        return
    parent = settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
    settings.register_profile("fuzz-round", parent, max_examples=int(cap))
    settings.load_profile("fuzz-round")
