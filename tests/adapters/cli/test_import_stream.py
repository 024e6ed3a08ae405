"""``planfold import`` reads its log twice and holds neither: a first pass
checks it as ``replay`` does, a second writes it in batches inside one
transaction (a log from standard input or a pipe is read back from a private
copy); a log that changes between the passes, like every other refusal,
writes nothing; progress is reported on stderr when asked for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import planfold.adapters.cli.main as cli
from planfold.adapters.codec import encode_jsonl
from planfold.adapters.store.importing import import_stream
from planfold.adapters.store.sqlite import SqliteStore
from planfold.kernel.session import fold_session
from tests.adapters.cli.running import run_cli
from tests.adapters.store.test_spill import goals_then

LOG = goals_then(30)


def test_a_log_on_standard_input_is_imported_whole_from_a_private_copy(tmp_path: Path) -> None:
    db = tmp_path / "in.sqlite"
    status, out, err = run_cli("import", "-", "--db", str(db), "--session", "s", "--json", stdin=encode_jsonl(LOG))
    assert (status, err) == (0, "") and json.loads(out) == {"session": "s", "events": 60}
    with SqliteStore(db) as store:
        assert store.read("s") == tuple(LOG) and store.audit("s").ok
        assert store.load("s", incremental=True) == fold_session(LOG)
    assert list(tmp_path.iterdir()) == [db]  # the copy is gone, and was never beside the database


def test_a_log_that_changes_between_the_passes_is_refused_and_nothing_is_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log, db = tmp_path / "log.jsonl", tmp_path / "d.sqlite"
    log.write_bytes(encode_jsonl(LOG))

    def changing(*args: object, **kwargs: object) -> object:
        log.write_bytes(encode_jsonl(goals_then(31)))  # another valid log, written after the check
        return import_stream(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(cli, "import_stream", changing)
    status, out, err = run_cli("import", str(log), "--db", str(db), "--session", "s")
    assert (status, out) == (2, "")
    assert err == f"planfold import: nothing imported: {log} changed while it was imported\n"
    with SqliteStore(db) as store:
        assert store.session_ids() == () and store.head("s") == 0


def test_importing_a_log_into_a_session_that_holds_it_or_another_names_which(tmp_path: Path) -> None:
    log, db = tmp_path / "log.jsonl", tmp_path / "d.sqlite"
    log.write_bytes(encode_jsonl(LOG))
    assert run_cli("import", str(log), "--db", str(db), "--session", "s")[0] == 0
    status, _, err = run_cli("import", "-", "--db", str(db), "--session", "s", stdin=encode_jsonl(LOG))
    assert status == 2 and "already holds this log (60 events)" in err
    status, _, err = run_cli("import", "-", "--db", str(db), "--session", "s", stdin=encode_jsonl(LOG[:10]))
    assert status == 2 and "already holds 60 events; import writes only into an empty session" in err


def test_import_reports_its_check_and_its_write_on_stderr_when_asked(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes(encode_jsonl(LOG))
    status, out, err = run_cli("import", str(log), "--db", str(tmp_path / "d.sqlite"), "--session", "s", "--progress")
    assert status == 0 and out.startswith("imported 60 events into s")
    lines = err.splitlines()  # the check (read in bytes, counted in events), then the write
    assert len(lines) == 2 and all(line.startswith("s: 60 events in ") for line in lines), err
    status, _, err = run_cli("import", str(log), "--db", str(tmp_path / "e.sqlite"), "--session", "s", "--no-progress")
    assert (status, err) == (0, "")
