"""One convention for every command: the store is named with ``--db``
(the positional FILE of replay, audit and report still works, with a
deprecation note), the global options go before or after the command,
``-v`` counts (INFO, then DEBUG with the HTTP client's loggers), and
``planfold completion`` prints a completion script written from the parser."""

from __future__ import annotations

import io
import json
import logging
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from planfold.adapters.cli.completion import SHELLS, completion_script
from planfold.adapters.cli.main import POSITIONAL_STORE, _parser
from planfold.adapters.store.sqlite import SqliteStore
from tests.adapters.cli.running import run_cli
from tests.chat_server import Answer, ChatServer, completion

#: The commands that read or write a store, and the rest (which name none).
STORE_COMMANDS = ("demo", "replay", "audit", "report", "export", "import", "fork", "serve")
NO_STORE = {"conform": "reads a folder of conformance vectors", "completion": "prints a script"}
DEPRECATED = "naming the store without --db is deprecated and goes in the next release"


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("options") / "demo.sqlite"
    assert run_cli("demo", "--db", str(db))[0] == 0
    return db


def test_every_command_is_either_one_that_names_a_store_or_one_that_names_none() -> None:
    _, commands = _parser(io.StringIO(), io.StringIO())
    assert set(commands) == set(STORE_COMMANDS) | set(NO_STORE)


@pytest.mark.parametrize("command", STORE_COMMANDS)
def test_every_command_that_names_a_store_takes_it_as_db(command: str) -> None:
    _, commands = _parser(io.StringIO(), io.StringIO())
    help_text = commands[command].format_help()
    assert "--db" in help_text, command


def test_each_command_runs_against_the_store_its_db_names(demo_db: Path, tmp_path: Path) -> None:
    db = str(demo_db)
    for argv in (["replay", "--db", db], ["audit", "--db", db, "--session", "demo-1"]):
        status, out, err = run_cli(*argv)
        assert (status, err) == (0, "") and out.startswith("demo-1: ok, 99 events")
    status, page, err = run_cli("report", "--db", db, "--session", "demo-1")
    assert (status, err) == (0, "") and page.startswith("<!DOCTYPE html>")
    log = tmp_path / "demo-1.jsonl"
    assert run_cli("export", "--db", db, "--session", "demo-1", "-o", str(log))[0] == 0
    copy = tmp_path / "copy.sqlite"
    assert run_cli("import", str(log), "--db", str(copy), "--session", "copy")[:2] == (
        0, f"imported 99 events into copy in {copy}\n")
    status, out, _ = run_cli("fork", "--db", str(copy), "copy", "early", "--at", "10")
    assert status == 0 and out.startswith(f"forked copy at seq 10 into early in {copy}")
    assert _served("serve", "--db", ":memory:")
    with SqliteStore(copy) as store:
        assert store.session_ids() == ("copy", "early")


@pytest.mark.parametrize("command", POSITIONAL_STORE)
def test_the_positional_file_still_names_the_store_with_a_deprecation_note(command: str, demo_db: Path) -> None:
    argv = [command, str(demo_db), "--session", "demo-1"]
    status, out, err = run_cli(*argv)
    assert status == 0 and err == f"planfold {command}: {DEPRECATED}: use planfold {command} --db FILE\n"
    assert out == run_cli(command, "--db", str(demo_db), "--session", "demo-1")[1]


@pytest.mark.parametrize("command", POSITIONAL_STORE)
def test_a_store_named_twice_or_not_at_all_is_a_usage_error(command: str, demo_db: Path) -> None:
    status, out, err = run_cli(command, "--db", str(demo_db), str(demo_db))
    assert (status, out) == (2, "") and "the store is named twice" in err and DEPRECATED not in err
    status, out, err = run_cli(command)
    assert (status, out) == (2, "") and "the following arguments are required: --db" in err


MIGRATED = "planfold INFO planfold.adapters.store.migration: SQLite schema migrated"


def test_the_global_options_are_taken_before_or_after_the_command(tmp_path: Path) -> None:
    for index, argv in enumerate((["-v", "demo"], ["demo", "-v"], ["demo", "--log-level", "info"])):
        status, _, err = run_cli(*argv, "--db", str(tmp_path / f"{index}.sqlite"))
        assert status == 0 and MIGRATED in err, argv
    status, _, err = run_cli("-v", "demo", "--db", str(tmp_path / "quiet.sqlite"), "--log-level", "ERROR")
    assert status == 0 and MIGRATED not in err  # a --log-level after the command wins


def _served(*argv: str) -> str:
    """What ``planfold *argv`` (a serve command line, in a process of its own:
    it talks on the process's own stdin and stdout) logs while it answers one
    request."""
    request = {"jsonrpc": "2.0", "id": 1, "method": "session/read", "params": {"session": "s"}}
    done = subprocess.run([sys.executable, "-m", "planfold.adapters.cli", *argv], input=json.dumps(request) + "\n",
                          capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0 and json.loads(done.stdout)["id"] == 1, done.stderr
    return done.stderr


def test_verbose_counts_wherever_it_is_given_and_serve_logs_every_request_at_debug() -> None:
    quiet = _served("serve", "--db", ":memory:")
    assert quiet.startswith("planfold serve: ready on stdin/stdout") and "session/read" not in quiet
    assert "session/read" not in _served("serve", "--db", ":memory:", "-v")
    for argv in (["serve", "--db", ":memory:", "-vv"], ["-v", "serve", "--db", ":memory:", "-v"]):
        assert "planfold serve: session/read: " in _served(*argv), argv
    assert "ready" not in _served("serve", "--db", ":memory:", "--log-level", "WARNING")


def test_two_v_show_the_http_clients_debug_lines_of_a_model_call_and_one_does_not(tmp_path: Path) -> None:
    for verbosity, shown in (("-v", False), ("-vv", True)):
        with ChatServer() as server:
            server.plan(*[Answer(body=completion("done")) for _ in range(200)])
            db = str(tmp_path / f"{verbosity}.sqlite")
            argv = ["demo", "--db", db, "--base-url", server.base_url, "--timeout", "5", "--retries", "0", verbosity]
            status, _, err = run_cli(*argv)
        assert status == 0
        lines = err.splitlines()
        assert any(line.startswith("planfold DEBUG httpcore.") for line in lines) is shown, verbosity
        assert any(line.startswith("planfold INFO httpx: HTTP Request: POST") for line in lines) is shown
    for name in ("planfold", "httpx", "httpcore"):
        assert logging.getLogger(name).level == logging.NOTSET  # as the command found them


def _completed(script: str, *words: str, cwd: Path) -> list[str]:
    line = " ".join(f"'{word}'" for word in words)
    program = (
        f"{script}\nCOMP_WORDS=({line}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); COMPREPLY=()\n"
        '_planfold; printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    done = subprocess.run(["bash", "--norc", "--noprofile", "-c", program], cwd=cwd, capture_output=True,
                          text=True, check=True, timeout=60)
    return [word for word in done.stdout.splitlines() if word]


def test_the_bash_completion_completes_commands_options_values_and_files(tmp_path: Path) -> None:
    status, script, _ = run_cli("completion", "bash")
    assert status == 0 and script.startswith("# planfold completion for bash")
    (tmp_path / "demo.sqlite").write_bytes(b"")
    (tmp_path / "demo-1.jsonl").write_bytes(b"")
    cases = {
        ("planfold", "re"): ["replay", "report"],
        ("planfold", "--log-level", "D"): ["DEBUG"],
        ("planfold", "--log-level", "DEBUG", "au"): ["audit"],
        ("planfold", "replay", "--d"): ["--db"],
        ("planfold", "-v", "audit", "--db", "demo."): ["demo.sqlite"],
        ("planfold", "replay", "demo-"): ["demo-1.jsonl"],
        ("planfold", "export", "--db", "x", "--session", ""): [],
        ("planfold", "demo", "--timeout", ""): [],
        ("planfold", "completion", ""): ["bash", "zsh"],
        ("planfold", "fork", "--a"): ["--at"],
        ("planfold", "serve", "-v", "--t"): ["--ticks"],
    }
    for words, expected in cases.items():
        assert _completed(script, *words, cwd=tmp_path) == expected, words


def test_the_zsh_script_runs_the_bash_function_through_bashcompinit() -> None:
    parser, _ = _parser(io.StringIO(), io.StringIO())
    bash, zsh = (completion_script(parser, shell) for shell in SHELLS)
    assert run_cli("completion", "zsh")[1] == zsh
    head, _, body = zsh.partition("_planfold() {")
    assert "autoload -U +X bashcompinit && bashcompinit" in head
    assert body == bash.partition("_planfold() {")[2]
    if shutil.which("zsh"):
        done = subprocess.run(["zsh", "-f", "-c", zsh + "\nprint ${+functions[_planfold]}"], capture_output=True,
                              text=True, check=True, timeout=60)
        assert done.stdout.strip().endswith("1")


def test_completion_for_another_shell_is_a_usage_error() -> None:
    status, out, err = run_cli("completion", "fish")
    assert (status, out) == (2, "") and "invalid choice: 'fish'" in err
    parser, _ = _parser(io.StringIO(), io.StringIO())
    with pytest.raises(ValueError, match="no completion script for 'fish'"):
        completion_script(parser, "fish")
