"""The built-in shell classifier proves a command line read-only or refuses it.

Example tables pin the codes; property tests show that every generated write
form is refused, every generated plain read is accepted, arbitrary text never
crashes it, and anything it accepts is, by an independent tokenizer
(``shlex``), a pipe of allow-listed commands with no shell operator.
"""

from __future__ import annotations

import re
import shlex

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from planfold.kernel.payload import JSON
from planfold.kernel.tools.shell import (
    COMMAND_RUNNERS,
    GIT_READS,
    INTERPRETERS,
    MAX_PIPELINE,
    READ_ONLY_COMMANDS,
    SHELL_CLASSIFIER,
    SHELL_HINTS,
    WRITE_COMMANDS,
    classify_command,
    classify_shell_call,
    shell_write_targets,
)
from planfold.kernel.tools.spec import Classification, ToolSpec
from tests.gate_helpers import READ_TOOLS, SHELL_TOOLS, any_shell_write, read_command

GIT_READS_BY_NAME = tuple(GIT_READS)

ACCEPTED = [
    "ls",
    "ls -la src",
    "cat README.md",
    "cat 'a file with spaces.txt'",
    'grep -rn "def main" .',
    "grep -c x *.py",
    "rg -n 'fn main' --type rust",
    "find . -name '*.py' -type f",
    "head -n 20 notes.txt | grep TODO | wc -l",
    "tail -n 5 a.log",
    "wc -l a b c",
    "stat -c %s file",
    "pwd",
    "cat ~/notes.md",
    "grep -e '$HOME;|>' file",
]

REFUSED = [
    ("", "shell-empty"),
    ("   \t ", "shell-empty"),
    ("cat " + "x" * 3000, "shell-too-long"),
    ("\u0441at README.md", "shell-non-ascii"),
    ("cat a \uff1e b", "shell-non-ascii"),
    ("ls\u200b", "shell-non-ascii"),
    ("ls\nrm -rf x", "shell-control-character"),
    ("ls\x00", "shell-control-character"),
    ("ls\x7f", "shell-control-character"),
    ("cat 'unterminated", "shell-unparseable"),
    ('grep "x', "shell-unparseable"),
    ("| cat", "shell-unparseable"),
    ("cat |", "shell-unparseable"),
    ("ls | | wc", "shell-unparseable"),
    ("cat a > b", "shell-redirection"),
    ("cat a >> b", "shell-redirection"),
    ("ls 2>/dev/null", "shell-redirection"),
    ("ls &> out", "shell-redirection"),
    ("wc < a", "shell-redirection"),
    ("cat <<EOF", "shell-heredoc"),
    ("cat <<< hi", "shell-heredoc"),
    ("cat $(ls)", "shell-substitution"),
    ("cat `ls`", "shell-substitution"),
    ("ls $HOME", "shell-substitution"),
    ('grep "$(id)" f', "shell-substitution"),
    ("cat <(ls)", "shell-substitution"),
    ("ls >(wc)", "shell-substitution"),
    ("ls; rm -rf .", "shell-chaining"),
    ("ls && rm x", "shell-chaining"),
    ("ls || rm x", "shell-chaining"),
    ("ls & rm x", "shell-chaining"),
    ("ls |& wc", "shell-chaining"),
    (" | ".join(["ls"] * (MAX_PIPELINE + 1)), "shell-chaining"),
    ("(ls)", "shell-grouping"),
    ("{ ls; }", "shell-grouping"),
    ("cat a\\ b", "shell-special-character"),
    ('grep "a\\"b" f', "shell-special-character"),
    ("ls # comment", "shell-special-character"),
    ("ls !x", "shell-special-character"),
    ("python -c 'print(1)'", "shell-interpreter"),
    ("python3 script.py", "shell-interpreter"),
    ("node -e 'x'", "shell-interpreter"),
    ("perl -e 'unlink q(a)'", "shell-interpreter"),
    ("bash -c ls", "shell-interpreter"),
    ("sh script", "shell-interpreter"),
    ("env ls", "shell-command-runner"),
    ("xargs rm", "shell-command-runner"),
    ("sudo cat a", "shell-command-runner"),
    ("tee out", "shell-write-command"),
    ("cat a | tee b", "shell-write-command"),
    ("sed -i s/a/b/ f", "shell-write-command"),
    ("sed -n p f", "shell-write-command"),
    ("git diff --output=x", "shell-git-option"),
    ("git commit -am x", "shell-git-subcommand"),
    ("rm -rf .", "shell-write-command"),
    ("awk '{print}' f", "shell-write-command"),
    ("tree -o x", "shell-write-command"),
    ("sort -o f f", "shell-write-command"),
    ("echo hi", "shell-command-not-allowed"),
    ("/bin/cat a", "shell-command-not-allowed"),
    ("FOO=1 ls", "shell-command-not-allowed"),
    ("c* a", "shell-command-not-allowed"),
    ("''", "shell-command-not-allowed"),
    ("find . -delete", "shell-unsafe-option"),
    ("find . -exec rm '{}' +", "shell-unsafe-option"),
    ("find . '-exec' rm '{}' +", "shell-unsafe-option"),
    ("find . -fprint out", "shell-unsafe-option"),
    ("rg --pre ./x foo", "shell-unsafe-option"),
    ("rg --pre=x foo", "shell-unsafe-option"),
    ("rg -z foo", "shell-unsafe-option"),
    ("rg -iz foo", "shell-unsafe-option"),
    ("rg --hostname-bin=x foo", "shell-unsafe-option"),
    ("rg --search-zip foo", "shell-unsafe-option"),
    ("rg --search-zip=yes foo", "shell-unsafe-option"),
    ("find *", "shell-unsafe-glob"),
    ("rg foo src/*", "shell-unsafe-glob"),
]


@pytest.mark.parametrize("line", ACCEPTED)
def test_plain_reads_are_read_only(line: str) -> None:
    result = classify_command(line)
    assert result.read_only, result
    assert result.code == "shell-read-only"


@pytest.mark.parametrize(("line", "code"), REFUSED)
def test_write_forms_are_refused_with_their_code(line: str, code: str) -> None:
    result = classify_command(line)
    assert not result.read_only
    assert result.code == code, result
    assert result.reason
    assert result.hint == SHELL_HINTS[code]


@pytest.mark.parametrize("line", ["grep '|' f", "grep ';&<>()' f", 'grep "a|b" f'])
def test_quoted_operators_are_literal(line: str) -> None:
    assert classify_command(line).read_only
    assert _shlex_view(line) is not None


def test_the_allow_list_shares_no_name_with_the_refused_families() -> None:
    refused = set(WRITE_COMMANDS) | INTERPRETERS | COMMAND_RUNNERS
    assert not READ_ONLY_COMMANDS & refused
    assert {"tee", "sed", "python", "python3", "bash", "sh", "env", "xargs"} <= refused


# --------------------------------------------------------------------------
# git: its reads are read-only, everything else fails closed

GIT_READ_LINES = [
    "git status",
    "git status -s",
    "git status --short --branch",
    "git --no-pager status --porcelain=v1",
    "git log",
    "git log -5",
    "git log -n 3 --oneline",
    "git log --oneline --graph --decorate --all",
    "git log -p -- app.py",
    "git log --stat --since=2.weeks --author=ann",
    "git log --format='%h %an %s' -10",
    "git log --pretty=oneline --pretty HEAD",
    "git log -S needle --pickaxe-all",
    "git diff",
    "git diff --cached --stat",
    "git diff HEAD~2 -- app.py | head -n 40",
    "git diff --name-only main...HEAD",
    "git diff -U5 --no-ext-diff --no-textconv",
    "git show HEAD",
    "git show --stat HEAD~1",
    "git show HEAD:README.md",
    "git blame README.md",
    "git blame -L 1,20 app.py",
    "git blame -w -M app.py",
    "git grep -n TODO",
    "git grep -in -e todo -- src",
    "git grep -c main HEAD",
    "git rev-parse HEAD",
    "git rev-parse --abbrev-ref HEAD",
    "git rev-parse --show-toplevel",
    "git ls-files",
    "git ls-files -m --exclude-standard",
    "git branch",
    "git branch -a -v",
    "git branch --show-current",
    "git branch --list 'feat*'",
    "git branch --contains HEAD",
    "git tag",
    "git tag -l 'v1.*'",
    "git tag --list --sort=-creatordate",
]


@pytest.mark.parametrize("line", GIT_READ_LINES)
def test_read_only_git_commands_are_read_only(line: str) -> None:
    verdict = classify_command(line)
    assert (verdict.read_only, verdict.code) == (True, "shell-read-only"), verdict


GIT_REFUSED = [
    # options before the subcommand: configuration, another repository, pagers
    ("git -c core.pager=sh log", "shell-git-option"),
    ("git -c 'alias.x=!rm' status", "shell-git-option"),
    ("git --config-env=core.pager=X log", "shell-git-option"),
    ("git --exec-path=/tmp status", "shell-git-option"),
    ("git --exec-path status", "shell-git-option"),
    ("git -C /tmp/other status", "shell-git-option"),
    ("git --git-dir=x log", "shell-git-option"),
    ("git --work-tree=/ status", "shell-git-option"),
    ("git -p log", "shell-git-option"),
    ("git --paginate log", "shell-git-option"),
    ("git --version", "shell-git-option"),
    # options of a read that write files or run programs, or are unknown
    ("git log --output=x", "shell-git-option"),
    ("git log --outp=x", "shell-git-option"),
    ("git diff --output x", "shell-git-option"),
    ("git diff --ext-diff", "shell-git-option"),
    ("git log -p --ext-diff", "shell-git-option"),
    ("git log --textconv", "shell-git-option"),
    ("git show --textconv HEAD", "shell-git-option"),
    ("git grep -O foo", "shell-git-option"),
    ("git grep --open-files-in-pager=vi foo", "shell-git-option"),
    ("git grep -nO foo", "shell-git-option"),
    ("git log --show-signature", "shell-git-option"),
    ("git log --format='%G?'", "shell-git-option"),
    ("git show --pretty=format:%GS", "shell-git-option"),
    ("git branch --format='%(signature)'", "shell-git-option"),
    ("git tag -v v1", "shell-git-option"),
    ("git branch -D old", "shell-git-option"),
    ("git branch -m a b", "shell-git-option"),
    ("git branch --set-upstream-to=origin/main", "shell-git-option"),
    ("git tag -d v1", "shell-git-option"),
    ("git tag -a v1 -m x", "shell-git-option"),
    ("git log -n --output=x", "shell-git-option"),
    ("git grep -e --output=x", "shell-git-option"),
    ("git status --unknown-flag", "shell-git-option"),
    # creating a branch or a tag is a write
    ("git branch new-feature", "shell-git-subcommand"),
    ("git tag v1.0", "shell-git-subcommand"),
    ("git branch -a feature", "shell-git-subcommand"),
    # writers, aliases and anything else
    ("git", "shell-git-subcommand"),
    ("git --no-pager", "shell-git-subcommand"),
    ("git commit -m x", "shell-git-subcommand"),
    ("git add .", "shell-git-subcommand"),
    ("git push", "shell-git-subcommand"),
    ("git checkout .", "shell-git-subcommand"),
    ("git reset --hard", "shell-git-subcommand"),
    ("git stash", "shell-git-subcommand"),
    ("git config core.pager less", "shell-git-subcommand"),
    ("git co main", "shell-git-subcommand"),
    ("git lg", "shell-git-subcommand"),
    ("git format-patch -1", "shell-git-subcommand"),
    ("git difftool", "shell-git-subcommand"),
    ("git help log", "shell-git-subcommand"),
    # the shell's own rules still come first
    ("git status *", "shell-unsafe-glob"),
    ("git log > out", "shell-redirection"),
    ("git log; rm x", "shell-chaining"),
]


@pytest.mark.parametrize(("line", "code"), GIT_REFUSED)
def test_git_fails_closed_on_everything_but_its_reads(line: str, code: str) -> None:
    verdict = classify_command(line)
    assert (verdict.read_only, verdict.code) == (False, code), verdict
    assert verdict.reason and verdict.hint == SHELL_HINTS[code]


# A refused git line, the code and the reason it is refused with (checked with
# the other refused lines below).
GIT_REASONS: list[tuple[str, str, str]] = [
    ("git -c core.pager=sh log", "shell-git-option", "git -c sets configuration, which can name programs to run"),
    # the reason is looked up by the option's name before its first '='
    (
        "git --config-env=core.pager=X log",
        "shell-git-option",
        "git --config-env=core.pager=X sets configuration, which can name programs to run",
    ),
    ("git --version", "shell-git-option", "git --version is not a known read-only option"),
    ("git", "shell-git-subcommand", "git without a subcommand runs nothing to read"),
    ("git lg", "shell-git-subcommand", "git lg is not one of git's reads (aliases are refused too)"),
    ("git log -", "shell-git-option", "git log - is not a known read-only option"),
    ("git log --bogus", "shell-git-option", "git log --bogus is not a known read-only option"),
    ("git log -Q", "shell-git-option", "git log -Q is not a known read-only option"),
    ("git status -5", "shell-git-option", "git status -5 is not a known read-only option"),
    ("git log --author", "shell-git-option", "git log --author needs a value that is not an option"),
    ("git grep -e", "shell-git-option", "git grep -e needs a value that is not an option"),
    ("git grep -e --cached foo", "shell-git-option", "git grep -e needs a value that is not an option"),
    ("git log --format='%G?'", "shell-git-option", "git log --format=%G? checks signatures, which runs a program"),
    ("git branch new-feature", "shell-git-subcommand", "git branch new-feature creates a branch; list with --list"),
    # names after '--' are names too, and options after a name are still checked
    ("git branch -- new", "shell-git-subcommand", "git branch new creates a branch; list with --list"),
    ("git log HEAD --output=x", "shell-git-option", "git log --output=x is not a known read-only option"),
    # a scored letter takes digits and '%' only
    ("git diff -Mx5", "shell-git-option", "git diff -Mx5 is not a known read-only option"),
]


def test_a_scored_git_letter_with_digits_and_a_percent_is_a_read() -> None:
    assert classify_command("git diff -M50%").read_only


GIT_VOCABULARY = (
    *GIT_READS_BY_NAME, "commit", "push", "config", "co",
    "-p", "-n", "5", "-5", "--stat", "--oneline", "-l", "--list", "-e", "-A", "3", "--format=%h", "--cached",
    "-in", "--contains", "HEAD", "foo", "--", "--no-pager", "-P",
    "-c", "x=y", "--output=x", "--output", "--outp=x", "--ext-diff", "--textconv", "-O", "-nO", "-C", "/tmp",
    "--exec-path=x", "--paginate", "--show-signature", "--open-files-in-pager", "--git-dir=x", "-D", "-d",
)  # fmt: skip
_RUNS_OR_WRITES = (
    "--out", "--ext-diff", "--textconv", "--exec-path", "--open-files", "--paginate", "--show-sig", "--git-dir",
    "--work-tree", "--config-env",
)  # fmt: skip


@given(st.lists(st.sampled_from(GIT_VOCABULARY), max_size=6))
@example(["log", "-nO"])  # -n with the value O: accepted, and not grep's -O
@example(["grep", "-nO"])
def test_an_accepted_git_line_is_a_read_with_no_option_that_writes_or_runs_a_program(words: list[str]) -> None:
    line = " ".join(["git", *words])
    if not classify_command(line).read_only:
        return
    argv = shlex.split(line)
    at = 1
    while argv[at].startswith("-"):  # an independent reading: global options first
        assert argv[at] in {"--no-pager", "-P", "--no-optional-locks"}, line
        at += 1
    assert argv[at] in GIT_READS_BY_NAME, line
    options = argv[at + 1 : argv.index("--")] if "--" in argv else argv[at + 1 :]
    assert not any(word.startswith(_RUNS_OR_WRITES) for word in options), line
    if argv[at] == "grep":  # grep -O opens a pager program; log's -O, or -nO (-n with the value O), reads
        assert not any(re.fullmatch(r"-[A-Za-z]*O[A-Za-z]*", word) for word in options), line
    if argv[at] in ("branch", "tag"):
        assert not {"-D", "-d"} & set(options), line


def test_every_hint_code_is_reachable_from_the_tables() -> None:
    seen = {code for _, code in REFUSED}
    call_only = {"shell-bad-arguments", "shell-not-applicable"}
    assert set(SHELL_HINTS) - seen == call_only


# --------------------------------------------------------------------------
# The whole verdict at the edges: lengths, blanks and control characters,
# pipeline length, names that are not plain, words joined across quotes and
# pipes, and each operator

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
def test_a_plain_read_at_the_edge_of_the_rules_is_admitted_with_the_whole_verdict(line: str) -> None:
    verdict = classify_command(line)
    assert (verdict.read_only, verdict.code, verdict.reason, verdict.hint) == (True, "shell-read-only", READ_ONLY, "")


@pytest.mark.parametrize(
    ("line", "code", "reason"),
    [
        *GIT_REASONS,
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


@given(any_shell_write)
def test_generated_write_forms_are_refused(case: tuple[str, str]) -> None:
    form, line = case
    result = classify_command(line)
    assert not result.read_only, (form, line)
    assert result.code in SHELL_HINTS
    assert result.reason


@given(read_command())
def test_generated_plain_reads_are_accepted(line: str) -> None:
    assert classify_command(line).read_only, line


def _defang_quotes(line: str) -> str:
    # Quoted operators are literal; make them plain characters so that shlex's
    # punctuation mode cannot mistake a quoted '|' for a pipe.
    def plain(match: re.Match[str]) -> str:
        return re.sub(r"[|&;<>()]", "_", match.group(0))

    return re.sub(r"'[^']*'|\"[^\"]*\"", plain, line)


def _shlex_view(line: str) -> list[str] | None:
    lexer = shlex.shlex(_defang_quotes(line), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:
        return None


@given(st.text(max_size=60) | st.text(alphabet="ls cat|;&<>$`'\"()#\\-z\n*", max_size=30))
def test_arbitrary_text_never_crashes_and_accepts_only_plain_pipes(line: str) -> None:
    result = classify_command(line)
    assert isinstance(result, Classification)
    assert result.code in SHELL_HINTS or result.code == "shell-read-only"
    if not result.read_only:
        return
    assert line.isascii() and "\n" not in line
    tokens = _shlex_view(line)
    assert tokens is not None, line
    operators = [t for t in tokens if t and set(t) <= set("|&;<>()")]
    assert set(operators) <= {"|"}, (line, tokens)
    commands: list[list[str]] = [[]]
    for token in tokens:
        if token == "|":
            commands.append([])
        else:
            commands[-1].append(token)
    assert 1 <= len(commands) <= MAX_PIPELINE
    for argv in commands:
        assert argv and argv[0] in READ_ONLY_COMMANDS, (line, argv)
        if argv[0] == "find":
            assert not {"-exec", "-execdir", "-ok", "-okdir", "-delete"} & set(argv)
        if argv[0] == "rg":
            assert not any(a.startswith("--pre") for a in argv)


# --------------------------------------------------------------------------
# The classifier as the gate sees it


def test_shell_call_arguments_must_be_exactly_a_command() -> None:
    bash = SHELL_TOOLS[0]
    assert classify_shell_call(bash, {"command": "ls"}).read_only
    assert classify_shell_call(bash, {"command": "ls", "description": "d", "timeout": 5}).read_only
    bad: list[dict[str, JSON]] = [{}, {"command": 3}, {"command": "ls", "env": {"A": "1"}}, {"cmd": "ls"}]
    for arguments in bad:
        result = classify_shell_call(bash, arguments)
        assert not result.read_only
        assert result.code == "shell-bad-arguments"


def test_shell_classifier_covers_only_shell_tools() -> None:
    assert all(SHELL_CLASSIFIER.covers(tool) for tool in SHELL_TOOLS)
    assert not any(SHELL_CLASSIFIER.covers(tool) for tool in READ_TOOLS)
    result = classify_shell_call(READ_TOOLS[0], {"command": "ls"})
    assert not result.read_only and result.code == "shell-not-applicable"


def test_non_string_command_is_refused_not_raised() -> None:
    result = classify_command(b"ls")  # type: ignore[arg-type]
    assert not result.read_only and result.code == "shell-bad-arguments"


def test_a_command_that_is_not_text_or_a_tool_that_is_not_a_shell_is_refused_saying_which() -> None:
    verdict = classify_command(3)  # type: ignore[arg-type]
    assert (verdict.code, verdict.reason) == ("shell-bad-arguments", "the command must be a string")
    reader = ToolSpec("reader", "Read", {}, "read", "builtin")
    verdict = classify_shell_call(reader, {"command": "ls"})
    assert (verdict.code, verdict.reason) == ("shell-not-applicable", "reader is not a shell tool")


@pytest.mark.parametrize(
    ("line", "targets"),
    [
        ("ls", ()),  # a read-only line writes nothing
        ("ls | tee out", ("out",)),
        ("rm -- a b", ("a", "b")),
        ("truncate -s 0 f", ("f",)),  # a valued letter takes the next word
        ("truncate -cs 0 f", ("f",)),
        ("cp a b", ("b", "b/a")),  # the last of two or more, and where a lands if it is a directory
        ("cp a b c", ("c", "c/a", "c/b")),
        ("cp -r d/ e", ("e", "e/d")),  # a source's name without its trailing slash
        ("cp aX/ b", ("b", "b/aX")),  # only the slash goes
        ("cp / e", ("e",)),  # a source with no name lands nowhere else
        ("mv a b", ("a", "b", "b/a")),  # every operand
        # ln names what it links to as well as the link
        ("ln ../x src/h", ("../x", "src/h", "src/h/x")),
        (
            "ln -s ../../outside src/o",
            ("../../outside", "src/o", "src/o/outside", "src/../../outside", "src/o/../../outside"),
        ),
        ("ln -sf /etc/passwd p", ("/etc/passwd", "p", "p/passwd", "/etc/passwd", "/etc/passwd")),
        ("ln -v -s a d/l", ("a", "d/l", "d/l/a", "d/a", "d/l/a")),
        ("ln -s a b d", ("a", "b", "d", "d/a", "d/b", "a", "d/a", "b", "d/b")),  # every source, read against d
        ("ln -s a", None),  # the link's name is not named
        ("install -m 644 a src/b", None),  # writers without a plain form are unknown
        ("dd if=a of=src/b", None),
        ("cp -t src a", None),
        ("ln --symbolic a b", None),
        ("chmod 644 f", ("f",)),  # all but the mode
        ("chmod 644 f g", ("f", "g")),
        # targets that cannot be named
        ("python x", None),
        ("touch -", None),
        ("touch ~/x", None),
        ("touch ''", None),
        ("rm -- -f", None),
        ("truncate -xs 0 f", None),
        ("touch --no-create f", None),
    ],
)
def test_the_paths_a_shell_line_writes_are_the_operands_of_plain_writers_or_none(
    line: str, targets: tuple[str, ...] | None
) -> None:
    assert shell_write_targets({"command": line}) == targets


def test_shell_write_targets_of_arguments_that_are_not_exactly_a_command_are_unknown() -> None:
    assert shell_write_targets({"command": "ls", "cwd": "/"}) is None
    assert shell_write_targets(["ls"]) is None  # type: ignore[arg-type]
