"""The audit commands under hostile input: a goal change whose payload is not
an object, text that is not Unicode, control characters in what a log names,
and option values no clock can hold. Each is a message and an exit status,
the same verdict from every command that reads a log, and nothing on the
auditor's terminal that the log chose."""

from __future__ import annotations

import io
import json
import re
import shlex
import sys
from pathlib import Path

import pytest

from planfold.adapters.cli.demo import run_demo
from planfold.adapters.cli.text import shown
from planfold.adapters.codec import encode_jsonl
from planfold.adapters.specgen.vectors import VECTOR_DIR
from planfold.adapters.store.sqlite_readonly import open_read_only
from tests.adapters.cli.running import run_cli
from tests.adapters.store.test_spill import goals_then

SPECS = Path(__file__).resolve().parents[3] / "specs"


# --------------------------------------------------------------------------
# A goal change whose payload is not an object


@pytest.mark.parametrize("payload", [b"[1, 2]", b'"create"', b"null", b"7"])
def test_replay_of_a_non_object_goal_payload_after_a_create_is_a_positioned_malformed_payload(
    tmp_path: Path, payload: bytes
) -> None:
    created = encode_jsonl(goals_then(1)[:1])
    log = tmp_path / "goals.jsonl"
    log.write_bytes(created + b'{"seq":2,"kind":"goal/change","at":20,"payload":%s}\n' % payload)
    for command in ("replay", "audit"):
        code, out, err = run_cli(command, "--db", str(log), "--json")
        (session,) = json.loads(out)["sessions"]
        assert code == 1 and err == ""
        assert (session["error"]["position"], session["error"]["line"], session["error"]["rule"]) == (
            2, 2, "malformed-payload"
        )
        assert session["events"] == 1
        code, out, err = run_cli(command, "--db", str(log))
        assert code == 1 and "BAD LOG at seq 2 (line 2) [malformed-payload]" in out and err == ""


# --------------------------------------------------------------------------
# Option values no clock can hold


@pytest.mark.parametrize("value", ["1e10", "1e300", "604801", "inf", "-inf", "nan", "1e400", "0", "-1", "9" * 400])
@pytest.mark.parametrize(
    "argv",
    [
        ["demo", "--db", "{DB}", "--base-url", "http://127.0.0.1:9/v1", "--timeout"],
        ["conform", "{DIR}", "--command", "/nonexistent/planfold-impl", "--timeout"],
        ["serve", "--db", ":memory:", "--connect-timeout"],
    ],
)
def test_a_timeout_no_clock_can_hold_is_a_usage_error_not_a_traceback(
    tmp_path: Path, argv: list[str], value: str
) -> None:
    given = [word.replace("{DB}", str(tmp_path / "d.sqlite")).replace("{DIR}", str(tmp_path)) for word in argv]
    code, out, err = run_cli(*given[:-1], f"{given[-1]}={value}")
    assert code == 2 and out == ""
    assert "usage:" in err and given[-1] in err and "seconds" in err
    assert not (tmp_path / "d.sqlite").exists()


@pytest.mark.parametrize("value", ["1e10", "-1", "x", "inf", "1001", "9" * 5000, "1" + "0" * 30])
def test_a_retry_count_that_is_not_a_small_whole_number_is_a_usage_error(tmp_path: Path, value: str) -> None:
    code, out, err = run_cli("demo", "--db", str(tmp_path / "d.sqlite"), f"--retries={value}")
    assert code == 2 and out == ""
    assert "usage:" in err and "--retries" in err
    assert not (tmp_path / "d.sqlite").exists()


@pytest.mark.parametrize("value", ["1e10", "-1", "x:1", "0:-5", str(2**52 + 1), "0:" + str(2**32 + 1), "1" + "0" * 30])
def test_a_serve_clock_no_event_can_hold_is_a_usage_error(tmp_path: Path, value: str) -> None:
    code, out, err = run_cli("serve", "--db", ":memory:", f"--ticks={value}")
    assert code == 2 and out == ""
    assert "usage:" in err and "--ticks" in err


# --------------------------------------------------------------------------
# Control characters a log or a file name holds never reach the terminal


#: Every character a terminal may act on: C0, DEL and C1.
CONTROLS = "".join(map(chr, [*range(0x20), 0x7F, *range(0x80, 0xA0)]))


def _acts_on_a_terminal(text: str) -> set[str]:
    """The control characters in ``text``, line ends aside."""
    return {char for char in text.replace("\n", "") if char in CONTROLS}


@pytest.fixture(scope="module")
def hostile_log(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The demo's log with its plan id and goal id holding control characters."""
    directory = tmp_path_factory.mktemp("hostile")
    db = directory / "demo.sqlite"
    run_demo(str(db), io.StringIO())
    text = encode_jsonl(open_read_only(str(db)).read("demo-1")).decode()
    plans = set(re.findall(r'"plan_id":"([^"]+)"', text))
    (goal,) = set(re.findall(r'"goal":\{"id":"([^"]+)"', text))
    for number, plan in enumerate(sorted(plans)):
        text = text.replace(plan, f"pl\\u001b]0;pwned\\u0007an-{number}")
    text = text.replace(goal, "go\\r\\u009b2Jal\\u007f")
    return text.encode()


def test_shown_escapes_every_control_character_and_keeps_the_rest() -> None:
    assert shown(CONTROLS) == "".join(
        {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(char, f"\\x{ord(char):02x}") for char in CONTROLS
    )
    assert shown("plan-1 rev 2, completed: ünïcode ✓ \u00a0") == "plan-1 rev 2, completed: ünïcode ✓ \u00a0"
    assert shown("a bad \udcff byte") == "a bad \\xff byte"
    assert shown("a lone \ud800") == "a lone \\ud800"


@pytest.mark.parametrize("command", ["replay", "audit"])
def test_replay_and_audit_escape_control_characters_in_ids_and_file_names(
    tmp_path: Path, hostile_log: bytes, command: str
) -> None:
    log = tmp_path / "lo\x1b[2Jg\x07.jsonl"
    log.write_bytes(hostile_log)
    db = tmp_path / "d\x1b[31mb.sqlite"
    session = "se\x1b]0;title\x07ss\rion\x9b"
    assert run_cli("import", str(log), "--db", str(db), "--session", session)[0] == 0
    for argv in ([str(log)], [str(db)], [str(db), "--session", session], ["-"]):
        code, out, err = run_cli(command, "--db", *argv, "--progress", stdin=hostile_log)
        assert code == 0, (out, err)
        assert _acts_on_a_terminal(out) == set() and _acts_on_a_terminal(err) == set(), (out, err)
        assert "plan: pl\\x1b]0;pwned\\x07an-" in out and "go\\r\\x9b2Jal\\x7f rev" in out
    code, out, err = run_cli(command, "--db", str(db), "--progress")
    assert "se\\x1b]0;title\\x07ss\\rion\\x9b: ok" in out
    assert "se\\x1b]0;title\\x07ss\\rion\\x9b: " in err  # the progress line names the session too
    code, out, err = run_cli(command, "--db", str(log))
    assert out.startswith("lo\\x1b[2Jg\\x07: ok")


def test_refusals_escape_the_names_they_repeat(tmp_path: Path) -> None:
    db = tmp_path / "d.sqlite"
    log = tmp_path / "log.jsonl"
    log.write_bytes(b"")
    runs = [
        run_cli("replay", "--db", str(tmp_path / "no\x1b[2Jsuch\x07.jsonl")),
        run_cli("export", "--db", str(tmp_path / "\x1b]0;x\x07.sqlite"), "--session", "s"),
        run_cli("replay", "a", "b\x1b[2J"),  # a usage error quoting the argument
        run_cli("import", str(log), "--db", str(db), "--session", "s\x1b[1m"),
    ]
    for code, out, err in runs:
        assert code == 2 and _acts_on_a_terminal(out + err) == set(), (out, err)


def test_conform_escapes_the_vector_names_and_the_answers_it_repeats(tmp_path: Path) -> None:
    vector = sorted((SPECS / VECTOR_DIR).glob("*.expected.json"))[0]
    name = vector.name.removesuffix(".expected.json")
    hostile = "ve\x1b[2Jctor\x07"
    (tmp_path / f"{hostile}.expected.json").write_bytes(vector.read_bytes())
    (tmp_path / f"{hostile}.jsonl").write_bytes(vector.with_name(f"{name}.jsonl").read_bytes())
    liar = f"{shlex.quote(sys.executable)} -c 'print(\"\\x1b]0;pwned\\x07\")'"
    code, out, err = run_cli("conform", str(tmp_path), "--command", liar)
    assert code == 1 and "FAIL ve\\x1b[2Jctor\\x07: " in out
    assert _acts_on_a_terminal(out) == set() and _acts_on_a_terminal(err) == set(), (out, err)
    code, out, err = run_cli("conform", str(tmp_path / "no\x1b[2Jne"))
    assert code == 2 and _acts_on_a_terminal(out + err) == set(), (out, err)


# --------------------------------------------------------------------------
# One reader of JSON Lines, one verdict

_FIRST = b'{"seq":1,"kind":"turn/start","at":1000,"payload":{"turn":1}}'

#: Second lines that replay and import once judged apart, and their neighbours.
SECOND_LINES = {
    "a lone high surrogate escape": b'{"seq":2,"kind":"turn/end","at":2000,"payload":{"turn":1,"x":"\\ud800"}}',
    "a lone high surrogate before a letter": b'{"seq":2,"kind":"turn/end","at":2000,"payload":{"x":"\\ud800y"}}',
    "a lone low surrogate escape": b'{"seq":2,"kind":"turn/end","at":2000,"payload":{"turn":1,"x":"\\udc00"}}',
    "a surrogate in a key": b'{"seq":2,"kind":"turn/end","at":2000,"payload":{"\\udfff":1}}',
    "a surrogate in the kind": b'{"seq":2,"kind":"turn/\\ud800","at":2000,"payload":{"turn":1}}',
    "a number out of range": b'{"seq":2,"kind":"turn/end","at":2000,"payload":{"turn":1,"x":1e400}}',
    "NaN": b'{"seq":2,"kind":"turn/end","at":2000,"payload":{"turn":NaN}}',
    "a seq written as a string": b'{"seq":"2","kind":"turn/end","at":2000,"payload":{"turn":1}}',
    "a seq that is a boolean": b'{"seq":true,"kind":"turn/end","at":2000,"payload":{"turn":1}}',
    "a fractional at": b'{"seq":2,"kind":"turn/end","at":2.5,"payload":{"turn":1}}',
    "a payload that is an array": b'{"seq":2,"kind":"turn/end","at":2000,"payload":[1]}',
    "a payload nested too deeply": b'{"seq":2,"kind":"turn/end","at":2000,"payload":{"x":%s}}'
    % (b"[" * 200 + b"]" * 200),
    "a missing payload": b'{"seq":2,"kind":"turn/end","at":2000}',
    "an extra field": b'{"seq":2,"kind":"turn/end","at":2000,"payload":{"turn":1},"x":0}',
    "a blank line": b"",
    "bytes that are not UTF-8": b'{"seq":2,"kind":"turn/end","at":2000,"payload":{"x":"\xff"}}',
    "an encoded surrogate": b'{"seq":2,"kind":"turn/end","at":2000,"payload":{"x":"\xed\xa0\x80"}}',
    "trailing text": b'{"seq":2,"kind":"turn/end","at":2000,"payload":{"turn":1}} x',
    "an array": b"[]",
}


@pytest.mark.parametrize("second", SECOND_LINES.values(), ids=SECOND_LINES.keys())
def test_replay_and_import_give_one_verdict_on_every_line(tmp_path: Path, second: bytes) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes(_FIRST + b"\n" + second + b"\n")
    code, out, err = run_cli("replay", "--db", str(log), "--json")
    (session,) = json.loads(out)["sessions"]
    assert code == 1 and err == "" and session["ok"] is False
    assert session["error"]["line"] == 2
    db = tmp_path / "d.sqlite"
    code, out, err = run_cli("import", str(log), "--db", str(db), "--session", "s", "--json")
    assert code == 1 and err == ""
    assert json.loads(out)["error"] == session["error"]
    assert not db.exists()
    code, out, err = run_cli("import", str(log), "--db", str(db), "--session", "s")
    assert code == 1 and f"BAD LOG at {'line 2' if session['error']['position'] is None else 'seq'}" in err


def test_a_lone_surrogate_is_named_as_such(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes(_FIRST + b"\n" + SECOND_LINES["a lone high surrogate before a letter"] + b"\n")
    code, out, _ = run_cli("replay", "--db", str(log))
    assert code == 1 and "[malformed-record]" in out and "surrogate" in out
