"""The built-in shell classifier: prove a command line read-only, or refuse.

Theory of operation
-------------------
A shell tool counts as a write in the read-only phases. A deployment may put
``SHELL_CLASSIFIER`` in its gate policy; then one particular call runs there
only when ``classify_command`` proves its command line read-only. The proof
is deliberately small and fails closed: whatever it does not understand, it
refuses, and a refused read costs the model one retry with a better tool,
while an admitted write would break the mode.

The classifier lexes the line itself instead of trusting a shell's grammar:

1. The line must be non-empty, at most ``MAX_COMMAND_LENGTH`` characters,
   printable ASCII plus spaces and tabs. Any other character is refused:
   non-ASCII (Unicode look-alikes such as a Cyrillic ``с`` in ``сat`` or a
   full-width ``＞``) and control characters (a newline separates commands).
2. Unquoted text may hold only letters, digits, ``_-./:,=+@%~`` and the glob
   characters ``*?[]``. Single quotes are literal. Double quotes may not hold
   ``$``, a backtick, ``\\`` or ``!``. Everything else that a shell gives a
   meaning is refused with its own code: redirection (``<``, ``>``, ``&>``),
   heredocs and here-strings (``<<``, ``<<<``), substitution (``$``,
   backticks, ``<(``, ``>(``), chaining (``;``, ``&``, ``&&``, ``||``,
   ``|&``), grouping (``( ) { }``) and any other special character.
3. A plain ``|`` splits a pipeline of at most ``MAX_PIPELINE`` commands; each
   must be read-only on its own (a pipe only connects output to input).
4. Each command's name (after quote removal) must be in
   ``READ_ONLY_COMMANDS``. Interpreters (whose ``-c``/``-e`` run any code),
   command runners (``env``, ``xargs``, ``sudo`` …) and known writers
   (``tee``, ``sed`` whose ``-i`` and ``w`` edit files, ``git`` whose
   "read" subcommands refresh the index, take ``--output`` or run configured
   diff drivers …) get their own codes; any other name is not allowed.
5. ``find`` may not use the predicates that run programs or write files
   (``-exec``, ``-delete``, ``-fprint`` …); ``rg`` may not use the options
   that run programs (``--pre``, ``-z``/``--search-zip``,
   ``--hostname-bin``). Neither may take an unquoted glob, which a crafted
   file name could turn into one of those options.

What the process environment of the deployment's shell does (aliases,
exported functions, tool config files) is the deployment's responsibility.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from ..payload import JSONObject
from .spec import CallClassifier, Classification, ToolSpec

__all__ = [
    "COMMAND_RUNNERS",
    "FIND_UNSAFE_PREDICATES",
    "INTERPRETERS",
    "MAX_COMMAND_LENGTH",
    "MAX_PIPELINE",
    "READ_ONLY_COMMANDS",
    "SHELL_ARGUMENT_KEYS",
    "SHELL_CLASSIFIER",
    "SHELL_HINTS",
    "WRITE_COMMANDS",
    "classify_command",
    "classify_shell_call",
]

MAX_COMMAND_LENGTH = 2000
MAX_PIPELINE = 4

#: Commands that only read, given the argument checks below.
READ_ONLY_COMMANDS: frozenset[str] = frozenset(
    {"cat", "find", "grep", "head", "ls", "pwd", "rg", "stat", "tail", "wc"}
)

INTERPRETERS: frozenset[str] = frozenset(
    {
        "python", "python2", "python3", "pypy", "pypy3", "node", "nodejs", "deno",
        "bun", "perl", "ruby", "php", "lua", "tclsh", "Rscript", "osascript",
        "sh", "bash", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "pwsh",
    }
)  # fmt: skip

COMMAND_RUNNERS: frozenset[str] = frozenset(
    {
        "env", "xargs", "sudo", "doas", "su", "nohup", "timeout", "nice", "ionice",
        "time", "watch", "eval", "exec", "command", "builtin", "source", ".",
        "stdbuf", "strace", "chroot", "parallel", "busybox", "script",
    }
)  # fmt: skip

#: Known writers, each with the reason given to the model.
WRITE_COMMANDS: Mapping[str, str] = MappingProxyType({
    "tee": "tee writes its input to files",
    "sed": "sed edits files with -i and writes files with its w command",
    "awk": "awk can write files and run commands from its program",
    "git": (
        "git is not treated as read-only: status refreshes the index, diff and "
        "log accept --output, and configured diff drivers run programs"
    ),
    "cp": "cp writes files",
    "mv": "mv moves files",
    "rm": "rm deletes files",
    "rmdir": "rmdir deletes directories",
    "mkdir": "mkdir creates directories",
    "touch": "touch creates and changes files",
    "ln": "ln creates links",
    "chmod": "chmod changes permissions",
    "chown": "chown changes ownership",
    "dd": "dd writes files and devices",
    "truncate": "truncate changes files",
    "patch": "patch edits files",
    "tree": "tree writes a file with -o",
    "sort": "sort writes a file with -o",
})

#: ``find`` predicates that run programs or write files.
FIND_UNSAFE_PREDICATES: frozenset[str] = frozenset(
    {"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fls", "-fprint", "-fprint0", "-fprintf"}
)

#: The keys a shell call's arguments may have; ``command`` is required.
SHELL_ARGUMENT_KEYS: frozenset[str] = frozenset({"command", "description", "timeout"})

_READ_TOOLS_HINT = (
    "Use the read-only file and search tools, or one plain read-only command "
    "(cat, grep, rg, find, ls, head, tail, wc, stat, pwd)."
)

#: Every refusal code the shell classifier gives, with the hint for the model.
SHELL_HINTS: Mapping[str, str] = MappingProxyType({
    "shell-empty": "Send a command.",
    "shell-too-long": f"Keep the command under {MAX_COMMAND_LENGTH} characters.",
    "shell-non-ascii": "Retype the command in plain ASCII. " + _READ_TOOLS_HINT,
    "shell-control-character": "Send one command on one line. " + _READ_TOOLS_HINT,
    "shell-unparseable": "Close every quote and give each pipe a command on both sides.",
    "shell-redirection": "Do not redirect; read-only phases write no files. " + _READ_TOOLS_HINT,
    "shell-heredoc": "Heredocs are not allowed here. " + _READ_TOOLS_HINT,
    "shell-substitution": "Do not use $, backticks or process substitution. " + _READ_TOOLS_HINT,
    "shell-chaining": "Run one command (or a short pipe) per call. " + _READ_TOOLS_HINT,
    "shell-grouping": "Do not group commands with parentheses or braces. " + _READ_TOOLS_HINT,
    "shell-special-character": "Quote arguments with single quotes. " + _READ_TOOLS_HINT,
    "shell-interpreter": "Interpreters can run any code, so they are refused. " + _READ_TOOLS_HINT,
    "shell-command-runner": "Call the read-only command directly. " + _READ_TOOLS_HINT,
    "shell-write-command": "This phase is read-only. " + _READ_TOOLS_HINT,
    "shell-command-not-allowed": _READ_TOOLS_HINT,
    "shell-unsafe-option": "Drop the option that runs programs or writes files.",
    "shell-unsafe-glob": "Quote the pattern (for example find . -name '*.py').",
    "shell-bad-arguments": "Call the shell tool with {\"command\": \"...\"}.",
    "shell-not-applicable": "This classifier only judges shell tools.",
})

_WORD_CHARS = frozenset(string.ascii_letters + string.digits + "_-./:,=+@%~")
_GLOB_CHARS = frozenset("*?[]")
_BLANKS = frozenset(" \t")
_DOUBLE_QUOTE_FORBIDDEN = frozenset("$`\\!")


class _Refusal(Exception):
    """Internal: the line is not provably read-only (never leaves this module)."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


@dataclass(frozen=True, slots=True)
class _Word:
    text: str
    globbed: bool


def _refused(code: str, reason: str) -> Classification:
    return Classification(read_only=False, code=code, reason=reason, hint=SHELL_HINTS[code])


def _check_characters(line: str) -> None:
    if not line.strip():
        raise _Refusal("shell-empty", "the command is empty")
    if len(line) > MAX_COMMAND_LENGTH:
        raise _Refusal("shell-too-long", f"the command is {len(line)} characters long")
    for index, char in enumerate(line):
        point = ord(char)
        if point > 0x7E:
            if point == 0x7F:
                raise _Refusal("shell-control-character", f"control character at {index}")
            raise _Refusal(
                "shell-non-ascii",
                f"non-ASCII character U+{point:04X} at {index}; look-alikes are refused",
            )
        if point < 0x20 and char != "\t":
            raise _Refusal("shell-control-character", f"control character U+{point:04X} at {index}")


def _operator(line: str, index: int) -> _Refusal:
    """The refusal for the unquoted special character at ``index``."""
    char = line[index]
    after = line[index + 1 : index + 2]
    if char == "<":
        if after == "<":
            return _Refusal("shell-heredoc", "heredoc or here-string '<<'")
        if after == "(":
            return _Refusal("shell-substitution", "process substitution '<('")
        return _Refusal("shell-redirection", "input redirection '<'")
    if char == ">":
        if after == "(":
            return _Refusal("shell-substitution", "process substitution '>('")
        return _Refusal("shell-redirection", "output redirection '>'")
    if char == "&":
        if after == ">":
            return _Refusal("shell-redirection", "output redirection '&>'")
        return _Refusal("shell-chaining", "'&' runs commands in the background or chains them")
    if char == ";":
        return _Refusal("shell-chaining", "';' chains commands")
    if char in "$`":
        return _Refusal("shell-substitution", f"{char!r} expands or substitutes")
    if char in "(){}":
        return _Refusal("shell-grouping", f"{char!r} groups commands")
    return _Refusal("shell-special-character", f"special character {char!r} at {index}")


def _lex(line: str) -> list[list[_Word]]:
    """Split ``line`` into a pipeline of commands; raise ``_Refusal``."""
    _check_characters(line)
    pipeline: list[list[_Word]] = []
    words: list[_Word] = []
    chars: list[str] | None = None
    globbed = False
    index = 0
    while index < len(line):
        char = line[index]
        if char in _BLANKS:
            if chars is not None:
                words.append(_Word("".join(chars), globbed))
            chars, globbed = None, False
        elif char in _WORD_CHARS or char in _GLOB_CHARS:
            chars = [] if chars is None else chars
            chars.append(char)
            globbed = globbed or char in _GLOB_CHARS
        elif char in "'\"":
            end = line.find(char, index + 1)
            if end < 0:
                raise _Refusal("shell-unparseable", f"unterminated {char} quote at {index}")
            body = line[index + 1 : end]
            if char == '"' and _DOUBLE_QUOTE_FORBIDDEN & set(body):
                bad = sorted(_DOUBLE_QUOTE_FORBIDDEN & set(body))[0]
                code = "shell-substitution" if bad in "$`" else "shell-special-character"
                raise _Refusal(code, f"{bad!r} inside double quotes")
            chars = [] if chars is None else chars
            chars.extend(body)
            index = end
        elif char == "|":
            after = line[index + 1 : index + 2]
            if after in ("|", "&"):
                raise _Refusal("shell-chaining", f"'|{after}' chains commands")
            if chars is not None:
                words.append(_Word("".join(chars), globbed))
            chars, globbed = None, False
            if not words:
                raise _Refusal("shell-unparseable", f"a pipe at {index} has no command before it")
            pipeline.append(words)
            words = []
        else:
            raise _operator(line, index)
        index += 1
    if chars is not None:
        words.append(_Word("".join(chars), globbed))
    if not words:
        raise _Refusal("shell-unparseable", "the last pipe has no command after it")
    pipeline.append(words)
    if len(pipeline) > MAX_PIPELINE:
        raise _Refusal(
            "shell-chaining", f"a pipeline of {len(pipeline)} commands (at most {MAX_PIPELINE})"
        )
    return pipeline


def _check_find(args: list[_Word]) -> None:
    for word in args:
        if word.text in FIND_UNSAFE_PREDICATES:
            raise _Refusal("shell-unsafe-option", f"find {word.text} runs programs or writes files")


def _rg_option_unsafe(text: str) -> bool:
    if text.startswith("--"):
        return text.startswith(("--pre", "--search-zip", "--hostname-bin"))
    return text.startswith("-") and "z" in text[1:]


def _check_rg(args: list[_Word]) -> None:
    for word in args:
        if _rg_option_unsafe(word.text):
            raise _Refusal("shell-unsafe-option", f"rg {word.text} can run programs")


_ARGUMENT_CHECKS: Mapping[str, Callable[[list[_Word]], None]] = MappingProxyType(
    {"find": _check_find, "rg": _check_rg}
)


def _check_command(words: list[_Word]) -> None:
    name = words[0]
    command = name.text
    if name.globbed or "=" in command or "/" in command or not command:
        raise _Refusal(
            "shell-command-not-allowed",
            f"{command!r} is not a plain command name (glob, assignment or path)",
        )
    if command in INTERPRETERS:
        raise _Refusal("shell-interpreter", f"{command} is an interpreter")
    if command in COMMAND_RUNNERS:
        raise _Refusal("shell-command-runner", f"{command} runs another command")
    if command in WRITE_COMMANDS:
        raise _Refusal("shell-write-command", WRITE_COMMANDS[command])
    if command not in READ_ONLY_COMMANDS:
        raise _Refusal("shell-command-not-allowed", f"{command!r} is not a known read-only command")
    check = _ARGUMENT_CHECKS.get(command)
    if check is not None:
        for word in words[1:]:
            if word.globbed:
                raise _Refusal("shell-unsafe-glob", f"{command} with unquoted glob {word.text!r}")
        check(words[1:])


def classify_command(line: str) -> Classification:
    """Read-only when ``line`` is provably read-only; otherwise refused with a
    ``shell-*`` code from ``SHELL_HINTS`` and a reason. Never raises."""
    if not isinstance(line, str):
        return _refused("shell-bad-arguments", "the command must be a string")
    try:
        for words in _lex(line):
            _check_command(words)
    except _Refusal as refusal:
        return _refused(refusal.code, refusal.reason)
    return Classification(
        read_only=True, code="shell-read-only", reason="every command is a read-only command"
    )


def classify_shell_call(spec: ToolSpec, arguments: JSONObject) -> Classification:
    """Classify one call of a shell tool: its arguments must be
    ``{command: str}`` plus optionally ``description`` and ``timeout``."""
    if spec.origin != "shell":
        return _refused("shell-not-applicable", f"{spec.name} is not a shell tool")
    if not isinstance(arguments, Mapping):
        return _refused("shell-bad-arguments", "the arguments must be an object")
    extra = sorted(str(key) for key in arguments.keys() - SHELL_ARGUMENT_KEYS)
    if extra:
        return _refused("shell-bad-arguments", f"unexpected argument(s) {extra}")
    command = arguments.get("command")
    if not isinstance(command, str):
        return _refused("shell-bad-arguments", "'command' must be a string")
    return classify_command(command)


def _covers_shell(spec: ToolSpec) -> bool:
    return spec.origin == "shell"


#: The classifier a deployment puts in its gate policy to let provably
#: read-only shell calls run in the read-only phases.
SHELL_CLASSIFIER = CallClassifier(
    name="builtin-shell", covers=_covers_shell, classify=classify_shell_call
)
