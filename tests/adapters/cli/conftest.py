"""``demo_db``: a store holding the offline demo's session, made once per test
module (a module that changes it changes only its own copy)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from planfold.adapters.cli.demo import run_demo


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("demo") / "demo.sqlite"
    run_demo(str(db), io.StringIO())
    return db
