"""Tests that pin what mutation testing found unpinned in the shell
classifier: the exact verdict and reason at every boundary (length, tab and
control characters, pipeline length), for command names that are not plain,
for words joined across quotes and pipes, and for each operator."""

from __future__ import annotations

import pytest

from planfold.kernel.tools.shell import SHELL_HINTS, classify_command, classify_shell_call
from planfold.kernel.tools.spec import ToolSpec

READ_ONLY = "every command is a read-only command"
NOT_PLAIN = "{!r} is not a plain command name (glob, assignment or path)"


@pytest.mark.parametrize(
    "line",
    [
        "ls " + "a" * 1997,  # exactly the longest line allowed
        "\tls",
        "ls\t-la",
        "find . -name x | wc -l",
        "rg -n x | wc",
        "ls|wc",
        "ls | rg x",
        "cat a | grep b | head -1 | wc -l",  # the longest pipeline allowed
        "l's' -la",  # a word joined across a quote
    ],
)
def test_a_plain_read_only_line_is_admitted(line: str) -> None:
    verdict = classify_command(line)
    assert (verdict.read_only, verdict.code, verdict.reason, verdict.hint) == (True, "shell-read-only", READ_ONLY, "")


@pytest.mark.parametrize(
    ("line", "code", "reason"),
    [
        ("ls " + "a" * 1998, "shell-too-long", "the command is 2001 characters long"),
        ("ls\x01", "shell-control-character", "control character U+0001 at 2"),
        ("a=b ls", "shell-command-not-allowed", NOT_PLAIN.format("a=b")),
        ("a=b", "shell-command-not-allowed", NOT_PLAIN.format("a=b")),
        ("./ls", "shell-command-not-allowed", NOT_PLAIN.format("./ls")),
        ("'' ls", "shell-command-not-allowed", NOT_PLAIN.format("")),
        ("find *.py|wc -l", "shell-unsafe-glob", "find with unquoted glob '*.py'"),
        ("find *.py -type f", "shell-unsafe-glob", "find with unquoted glob '*.py'"),
        ("cat a | grep b | head -1 | wc -l | tail", "shell-chaining", "a pipeline of 5 commands (at most 4)"),
        ("ls |& cat", "shell-chaining", "'|&' chains commands"),
        ("cat <<EOF", "shell-heredoc", "heredoc or here-string '<<'"),
        ("cat <(ls)", "shell-substitution", "process substitution '<('"),
        ("ls >(cat)", "shell-substitution", "process substitution '>('"),
        ("ls &> f", "shell-redirection", "output redirection '&>'"),
        ("ls & ls", "shell-chaining", "'&' runs commands in the background or chains them"),
        ("ls $HOME", "shell-substitution", "'$' expands or substitutes"),
        ("ls `pwd`", "shell-substitution", "'`' expands or substitutes"),
        ("ls (a)", "shell-grouping", "'(' groups commands"),
        ("ls {a}", "shell-grouping", "'{' groups commands"),
        ('ls "$x"', "shell-substitution", "'$' inside double quotes"),
        ('ls "a\\b"', "shell-special-character", "'\\\\' inside double quotes"),
    ],
)
def test_a_line_that_is_not_provably_read_only_is_refused_saying_why(line: str, code: str, reason: str) -> None:
    verdict = classify_command(line)
    assert (verdict.read_only, verdict.code, verdict.reason, verdict.hint) == (False, code, reason, SHELL_HINTS[code])


def test_a_command_that_is_not_text_or_a_tool_that_is_not_a_shell_is_refused() -> None:
    verdict = classify_command(3)  # type: ignore[arg-type]
    assert (verdict.code, verdict.reason) == ("shell-bad-arguments", "the command must be a string")
    reader = ToolSpec("reader", "Read", {}, "read", "builtin")
    verdict = classify_shell_call(reader, {"command": "ls"})
    assert (verdict.code, verdict.reason) == ("shell-not-applicable", "reader is not a shell tool")
