"""The audit commands under hostile input: a goal change whose payload is not
an object, text that is not Unicode, control characters in what a log names,
and option values no clock can hold. Each is a message and an exit status,
the same verdict from every command that reads a log, and nothing on the
auditor's terminal that the log chose."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from planfold.adapters.cli.main import main
from planfold.adapters.codec import encode_jsonl
from tests.adapters.cli.test_spill import goals_then


def _run(*argv: str, stdin: bytes = b"") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err, stdin=io.BytesIO(stdin))
    return code, out.getvalue(), err.getvalue()


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
        code, out, err = _run(command, str(log), "--json")
        (session,) = json.loads(out)["sessions"]
        assert code == 1 and err == ""
        assert (session["error"]["position"], session["error"]["line"], session["error"]["rule"]) == (
            2, 2, "malformed-payload"
        )
        assert session["events"] == 1
        code, out, err = _run(command, str(log))
        assert code == 1 and "BAD LOG at seq 2 (line 2) [malformed-payload]" in out and err == ""


# --------------------------------------------------------------------------
# Option values no clock can hold


@pytest.mark.parametrize("value", ["1e10", "1e300", "604801", "inf", "-inf", "nan", "1e400", "0", "-1", "9" * 400])
@pytest.mark.parametrize(
    "argv",
    [
        ["demo", "--db", "{DB}", "--base-url", "http://127.0.0.1:9/v1", "--timeout"],
        ["conform", "{DIR}", "--command", "/nonexistent/planfold-impl", "--timeout"],
    ],
)
def test_a_timeout_no_clock_can_hold_is_a_usage_error_not_a_traceback(
    tmp_path: Path, argv: list[str], value: str
) -> None:
    given = [word.replace("{DB}", str(tmp_path / "d.sqlite")).replace("{DIR}", str(tmp_path)) for word in argv]
    code, out, err = _run(*given[:-1], f"{given[-1]}={value}")
    assert code == 2 and out == ""
    assert "usage:" in err and "--timeout" in err and "seconds" in err
    assert not (tmp_path / "d.sqlite").exists()


@pytest.mark.parametrize("value", ["1e10", "-1", "x", "inf", "1001", "9" * 5000, "1" + "0" * 30])
def test_a_retry_count_that_is_not_a_small_whole_number_is_a_usage_error(tmp_path: Path, value: str) -> None:
    code, out, err = _run("demo", "--db", str(tmp_path / "d.sqlite"), f"--retries={value}")
    assert code == 2 and out == ""
    assert "usage:" in err and "--retries" in err
    assert not (tmp_path / "d.sqlite").exists()


@pytest.mark.parametrize("value", ["1e10", "-1", "x:1", "0:-5", str(2**52 + 1), "0:" + str(2**32 + 1), "1" + "0" * 30])
def test_a_serve_clock_no_event_can_hold_is_a_usage_error(tmp_path: Path, value: str) -> None:
    code, out, err = _run("serve", "--db", ":memory:", f"--ticks={value}")
    assert code == 2 and out == ""
    assert "usage:" in err and "--ticks" in err
