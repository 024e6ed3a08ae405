"""planfold is silent as a library; the ``planfold`` command sends its logs
to stderr: warnings by default, more with ``-v`` / ``-vv`` or
``--log-level``, and leaves the loggers as it found them."""

from __future__ import annotations

import io
import logging
import subprocess
import sys
from pathlib import Path

import planfold
from planfold.adapters.cli.main import main


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), out=out, err=err, stdin=io.BytesIO())
    return status, out.getvalue(), err.getvalue()


MIGRATED = "planfold INFO planfold.adapters.store.migration: SQLite schema migrated from version 0"


def test_the_library_logs_nowhere_unless_the_application_says_where() -> None:
    logger = logging.getLogger(planfold.__name__)
    assert [type(h) for h in logger.handlers] == [logging.NullHandler]


def test_the_kernel_and_the_version_import_no_logging_and_the_first_module_that_logs_silences_planfold() -> None:
    code = (
        "import sys\n"
        "import planfold, planfold.kernel.session, planfold.kernel.plan, planfold.kernel.goal, planfold.kernel.tools\n"
        "from planfold.adapters.cli.entry import main\n"
        "main(['--version'])\n"
        "print('logging' in sys.modules)\n"
        "import logging\n"
        "import planfold.adapters.store.session_log\n"
        "print([type(h).__name__ for h in logging.getLogger('planfold').handlers])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[1:] == ["False", "['NullHandler']"]


def test_the_command_shows_info_logs_only_when_asked(tmp_path: Path) -> None:
    status, _, err = run("demo", "--db", str(tmp_path / "quiet.sqlite"))
    assert status == 0 and MIGRATED not in err
    status, _, err = run("-v", "demo", "--db", str(tmp_path / "verbose.sqlite"))
    assert status == 0 and MIGRATED in err
    status, _, err = run("--log-level", "info", "demo", "--db", str(tmp_path / "level.sqlite"))
    assert status == 0 and MIGRATED in err
    status, _, err = run("-vv", "--log-level", "ERROR", "demo", "--db", str(tmp_path / "error.sqlite"))
    assert status == 0 and MIGRATED not in err  # --log-level wins over -v


def test_the_command_leaves_the_planfold_logger_as_it_found_it(tmp_path: Path) -> None:
    logger = logging.getLogger("planfold")
    before = (logger.level, list(logger.handlers))
    assert run("-vv", "demo", "--db", str(tmp_path / "d.sqlite"))[0] == 0
    assert (logger.level, list(logger.handlers)) == before


def test_an_unknown_log_level_is_a_usage_error() -> None:
    status, _, err = run("--log-level", "loud", "replay", "-")
    assert status == 2 and "expected one of DEBUG, INFO, WARNING, ERROR, CRITICAL, got 'loud'" in err
