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
   (``tee``, ``sed`` whose ``-i`` and ``w`` edit files …) get their own
   codes; any other name is not allowed.
5. ``find`` may not use the predicates that run programs or write files
   (``-exec``, ``-delete``, ``-fprint`` …); ``rg`` may not use the options
   that run programs (``--pre``, ``-z``/``--search-zip``,
   ``--hostname-bin``). Neither may take an unquoted glob, which a crafted
   file name could turn into one of those options.
6. ``git`` runs only its reads (``GIT_READS``: ``status``, ``log``,
   ``diff``, ``show``, ``blame``, ``grep``, ``rev-parse``, ``ls-files``, and
   ``branch`` and ``tag`` as listings), each with an allowlist of options
   matched exactly (git accepts abbreviations, so ``--outp`` is refused like
   ``--output``). Before the subcommand only ``--no-pager``, ``-P`` and
   ``--no-optional-locks`` are allowed: ``-c``, ``--config-env``,
   ``--exec-path``, ``-C``, ``--git-dir``, ``--work-tree`` and
   ``-p``/``--paginate`` are refused (``shell-git-option``), as is every
   option of a read that writes a file (``--output``), runs a program
   (``--ext-diff``, ``--textconv``, ``grep -O``, signature checks with
   ``--show-signature``, ``%G`` or ``%(signature)`` formats) or is not on
   the list. Any other subcommand (writers, aliases, ``help``) is refused
   (``shell-git-subcommand``), and so is a ``branch`` or ``tag`` with a name
   but no ``--list`` (that creates one). A value given as its own word may
   not start with ``-``, so that no option can hide as a value. ``git
   status`` may refresh git's stat cache in ``.git/index``; it changes no
   tracked content (``GIT_OPTIONAL_LOCKS=0`` in the deployment's environment
   stops even that).

``shell_write_targets`` names the paths a shell call writes, for the plan's
scope: none for a provably read-only line; the operands of a small set of
writers in their plain forms (``touch``, ``mkdir``, ``rm``, ``rmdir``,
``cp``, ``mv``, ``tee``, ``chmod``, ``chown``, ``truncate``, ``ln``) in a
pipeline of otherwise read-only commands; and ``None`` (cannot be
determined) for everything else (``install``, ``dd``, a redirection, a long
option …), which a scope with paths refuses. ``cp``, ``mv`` and ``ln`` also
name where each source lands when their last operand is a directory
(``dest/name``), and ``ln`` names what it links to as well as the link: the
source as given for a hard link, and for ``ln -s`` the source read against
the link's directory (where a relative symbolic link points), so a link to a
place outside the scope is refused when it is made. The names are strings;
where they really land (through links) is the runtime's resolver's to find.

What the process environment of the deployment's shell does (aliases,
exported functions, tool config files) is the deployment's responsibility.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from ..payload import JSONObject
from .spec import CallClassifier, Classification, ToolSpec

__all__ = [
    "COMMAND_RUNNERS",
    "FIND_UNSAFE_PREDICATES",
    "GIT_GLOBAL_OPTIONS",
    "GIT_READS",
    "INTERPRETERS",
    "MAX_COMMAND_LENGTH",
    "MAX_PIPELINE",
    "READ_ONLY_COMMANDS",
    "SHELL_ARGUMENT_KEYS",
    "SHELL_CLASSIFIER",
    "SHELL_HINTS",
    "WRITE_COMMANDS",
    "GitRead",
    "classify_command",
    "classify_shell_call",
    "shell_write_targets",
]

MAX_COMMAND_LENGTH = 2000
MAX_PIPELINE = 4

#: Commands that only read, given the argument checks below.
READ_ONLY_COMMANDS: frozenset[str] = frozenset(
    {"cat", "find", "git", "grep", "head", "ls", "pwd", "rg", "stat", "tail", "wc"}
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
    "(cat, grep, rg, find, ls, head, tail, wc, stat, pwd, or a git read such as "
    "git status, log, diff, show, blame or grep)."
)
_GIT_READS_NAMED = "status, log, diff, show, blame, grep, rev-parse, ls-files, branch --list, tag --list"

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
    "shell-git-subcommand": f"Only git's reads run here: {_GIT_READS_NAMED}.",
    "shell-git-option": (
        "Use git's plain read options only: no -c, -C, --exec-path, --output, pager, "
        "external diff, text conversion or signature checks."
    ),
    "shell-bad-arguments": "Call the shell tool with {\"command\": \"...\"}.",
    "shell-not-applicable": "This classifier only judges shell tools.",
})

_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:,=+@%~")
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
    """One word of a command line: its text, and whether it holds a glob."""

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


@dataclass(frozen=True, slots=True)
class GitRead:
    """The options one git read accepts, matched exactly.

    ``flags``: options that take no value (``--oneline``, ``-p``);
    ``optional``: long options that may carry ``=value`` (``--stat=80``);
    ``valued``: options that take a value, attached (``--since=x``, ``-n5``)
    or as the next word, which may not start with ``-``; ``cluster``:
    letters that may be combined in one word (``-in``); ``scored``: letters
    that may carry digits (``-M50%``); ``numeric``: ``-<n>`` limits;
    ``listing``: names (patterns) are allowed only with ``--list`` or ``-l``
    (a bare name would create a branch or tag).
    """

    flags: frozenset[str] = frozenset()
    optional: frozenset[str] = frozenset()
    valued: frozenset[str] = frozenset()
    cluster: str = ""
    scored: str = ""
    numeric: bool = False
    listing: bool = False


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_DIFF_FLAGS = _words(
    "-p -u --patch -s --no-patch --raw --stat --shortstat --numstat --summary --name-only "
    "--name-status --patch-with-stat --patch-with-raw -z --full-index --binary --no-color "
    "-R --no-renames --find-renames --find-copies --find-copies-harder --irreversible-delete "
    "-w -b --ignore-all-space --ignore-space-change --ignore-space-at-eol --ignore-blank-lines "
    "--ignore-cr-at-eol --minimal --patience --histogram --no-ext-diff --no-textconv "
    "--function-context -W --text -a --no-prefix --exit-code --quiet --check --relative "
    "--no-relative --full-diff --pickaxe-all --pickaxe-regex --compact-summary"
)
_DIFF_OPTIONAL = _words(
    "--stat --dirstat --color --color-words --word-diff --abbrev --relative --color-moved "
    "--find-renames --find-copies --break-rewrites --submodule"
)
_DIFF_VALUED = _words(
    "-U --unified --diff-filter --diff-algorithm -S -G --find-object --src-prefix --dst-prefix "
    "--stat-width --stat-name-width --stat-count --word-diff-regex --inter-hunk-context -l"
)
_LOG_FLAGS = _DIFF_FLAGS | _words(
    "--oneline --graph --all --branches --tags --remotes --reverse --first-parent --merges "
    "--no-merges --follow --abbrev-commit --no-abbrev-commit --no-decorate --relative-date "
    "--topo-order --date-order --author-date-order --left-right --cherry-pick --cherry-mark "
    "--cherry --boundary --ancestry-path --simplify-by-decoration --full-history --parents "
    "--children --source --use-mailmap --no-mailmap --log-size --regexp-ignore-case -i "
    "--extended-regexp -E --fixed-strings -F --perl-regexp -P --basic-regexp --all-match "
    "--invert-grep --no-walk --no-notes --no-min-parents --no-max-parents -m --date-order"
)
_LOG_OPTIONAL = _DIFF_OPTIONAL | _words("--decorate --branches --tags --remotes --no-walk --pretty")
_LOG_VALUED = _DIFF_VALUED | _words(
    "-n --max-count --skip --since --after --until --before --author --committer --grep "
    "--format --date -L --min-parents --max-parents --decorate-refs "
    "--decorate-refs-exclude --exclude"
)
_BLAME_FLAGS = _words(
    "-w -b --root --show-stats -l -t -s -e -f -n -p --porcelain --line-porcelain "
    "--incremental --show-name --show-number --show-email --first-parent --color-lines "
    "--color-by-age --minimal --no-progress"
)
_GREP_FLAGS = _words(
    "--cached --untracked --no-index --exclude-standard --no-exclude-standard -r --recursive "
    "--no-recursive -a --text -I -i --ignore-case -w --word-regexp -v --invert-match -h -H "
    "--full-name -E --extended-regexp -G --basic-regexp -F --fixed-strings -P --perl-regexp "
    "-n --line-number --column -l --files-with-matches --name-only -L --files-without-match "
    "-z --null -o --only-matching -c --count --no-color --break --heading -p --show-function "
    "-W --function-context --and --or --not --all-match -q --quiet --no-textconv "
    "--recurse-submodules"
)
_LIST_REFS_VALUED = _words(
    "--contains --no-contains --merged --no-merged --points-at --sort --format"
)

#: Every git read and the options it accepts; nothing else runs.
GIT_READS: Mapping[str, GitRead] = MappingProxyType({
    "status": GitRead(
        flags=_words(
            "-s --short -b --branch --long -z --show-stash -v --verbose --no-renames --renames "
            "--ahead-behind --no-ahead-behind --null"
        ),
        optional=_words("--porcelain --untracked-files --ignored --ignore-submodules --find-renames --column"),
        cluster="sbvz",
    ),
    "log": GitRead(
        flags=_LOG_FLAGS, optional=_LOG_OPTIONAL, valued=_LOG_VALUED, cluster="puswzRbaWiEFm",
        scored="MCB", numeric=True,
    ),
    "show": GitRead(
        flags=_LOG_FLAGS, optional=_LOG_OPTIONAL, valued=_LOG_VALUED, cluster="puswzRbaWiEFm",
        scored="MCB",
    ),
    "diff": GitRead(
        flags=_DIFF_FLAGS | _words("--cached --staged --no-index --merge-base"),
        optional=_DIFF_OPTIONAL,
        valued=_DIFF_VALUED,
        cluster="puswzRbaW",
        scored="MCB",
    ),
    "blame": GitRead(
        flags=_BLAME_FLAGS,
        optional=_words("--abbrev"),
        valued=_words("-L --since --date --reverse"),
        cluster="wbltsefnp",
        scored="MC",
    ),
    "grep": GitRead(
        flags=_GREP_FLAGS,
        optional=_words("--color"),
        valued=_words(
            "-e -f -A -B -C --after-context --before-context --context --max-depth --threads "
            "-m --max-count"
        ),
        cluster="aIiwvhHEGFPnlLzocpWrq",
    ),
    "rev-parse": GitRead(
        flags=_words(
            "--show-toplevel --show-prefix --show-cdup --git-dir --absolute-git-dir "
            "--git-common-dir --is-inside-work-tree --is-inside-git-dir --is-bare-repository "
            "--is-shallow-repository --verify -q --quiet --symbolic --symbolic-full-name --all "
            "--show-object-format --local-env-vars --shared-index-path"
        ),
        optional=_words("--abbrev-ref --short --branches --tags --remotes"),
        valued=_words("--git-path"),
    ),
    "ls-files": GitRead(
        flags=_words(
            "-c --cached -d --deleted -m --modified -o --others -i --ignored -s --stage -u "
            "--unmerged -k --killed --directory --no-empty-directory --exclude-standard -z -t -v "
            "-f --full-name --error-unmatch --deduplicate --eol --sparse --recurse-submodules"
        ),
        optional=_words("--abbrev"),
        valued=_words("-x --exclude -X --exclude-from --exclude-per-directory --format"),
        cluster="cdmoisukztvf",
    ),
    "branch": GitRead(
        flags=_words(
            "-a --all -r --remotes -l --list -v -vv --verbose --show-current --no-color -i "
            "--ignore-case --omit-empty --no-abbrev"
        ),
        optional=_words("--color --abbrev"),
        valued=_LIST_REFS_VALUED,
        cluster="arlvi",
        listing=True,
    ),
    "tag": GitRead(
        flags=_words("-l --list --no-color -i --ignore-case --omit-empty"),
        optional=_words("--color"),
        valued=_LIST_REFS_VALUED | _words("-n"),
        cluster="li",
        numeric=False,
        listing=True,
    ),
})

#: The only options git may get before its subcommand.
GIT_GLOBAL_OPTIONS: frozenset[str] = frozenset({"--no-pager", "-P", "--no-optional-locks"})

_GIT_GLOBAL_REASONS: Mapping[str, str] = MappingProxyType({
    "-c": "sets configuration, which can name programs to run",
    "--config-env": "sets configuration, which can name programs to run",
    "--exec-path": "runs git's programs from another directory",
    "-C": "runs in another repository, with its configuration",
    "--git-dir": "reads another repository, with its configuration",
    "--work-tree": "works on another tree",
    "-p": "runs a pager",
    "--paginate": "runs a pager",
})

_GIT_SIGNATURE_FORMATS = ("%G", "signature")
_GIT_LIST_FLAGS = frozenset({"-l", "--list"})


def _git_refusal(code: str, reason: str) -> _Refusal:
    return _Refusal(code, f"git {reason}")


def _long_option(spec: GitRead, sub: str, word: str, rest: list[_Word]) -> str | None:
    """Check a ``--name[=value]`` word; return its value, if any."""
    name, eq, value = word.partition("=")
    if not eq and name in spec.flags:
        return None
    if name in spec.optional and (eq or name not in spec.valued):
        return value if eq else None
    if name in spec.valued:
        return value if eq else _separate_value(sub, name, rest)
    raise _git_refusal("shell-git-option", f"{sub} {word} is not a known read-only option")


def _separate_value(sub: str, name: str, rest: list[_Word]) -> str:
    if not rest or rest[0].text.startswith("-"):
        raise _git_refusal("shell-git-option", f"{sub} {name} needs a value that is not an option")
    return rest.pop(0).text


def _short_option(spec: GitRead, sub: str, word: str, rest: list[_Word]) -> str | None:
    """Check a ``-x`` word (a flag, a cluster, a limit, a scored letter or a
    valued letter); return its value, if any."""
    body = word[1:]
    if word in spec.flags:
        return None
    if spec.numeric and body.isdigit():
        return None
    if body[:1] in spec.scored and all(c.isdigit() or c == "%" for c in body[1:]):
        return None
    if f"-{body[:1]}" in spec.valued:
        return body[1:] if body[1:] else _separate_value(sub, word, rest)
    if body and all(c in spec.cluster for c in body):
        return None
    raise _git_refusal("shell-git-option", f"{sub} {word} is not a known read-only option")


def _check_git_value(sub: str, option: str, value: str | None) -> None:
    """A format that asks for a signature check runs gpg: refused."""
    formats = option.startswith(("--format", "--pretty"))
    if formats and value is not None and any(mark in value for mark in _GIT_SIGNATURE_FORMATS):
        raise _git_refusal("shell-git-option", f"{sub} {option} checks signatures, which runs a program")


def _check_git(args: list[_Word]) -> None:
    rest = list(args)
    while rest and rest[0].text.startswith("-"):
        option = rest.pop(0).text
        if option not in GIT_GLOBAL_OPTIONS:
            why = _GIT_GLOBAL_REASONS.get(option.partition("=")[0], "is not a known read-only option")
            raise _git_refusal("shell-git-option", f"{option} {why}")
    if not rest:
        raise _git_refusal("shell-git-subcommand", "without a subcommand runs nothing to read")
    sub = rest.pop(0).text
    spec = GIT_READS.get(sub)
    if spec is None:
        raise _git_refusal("shell-git-subcommand", f"{sub} is not one of git's reads (aliases are refused too)")
    names: list[str] = []
    listing = False
    while rest:
        word = rest.pop(0).text
        if word == "--":
            names.extend(w.text for w in rest)
            break
        if not word.startswith("-") or word == "-":
            if word == "-":
                raise _git_refusal("shell-git-option", f"{sub} - is not a known read-only option")
            names.append(word)
            continue
        value = _long_option(spec, sub, word, rest) if word.startswith("--") else _short_option(spec, sub, word, rest)
        _check_git_value(sub, word, value)
        listing = listing or word in _GIT_LIST_FLAGS
    if spec.listing and names and not listing:
        raise _git_refusal("shell-git-subcommand", f"{sub} {names[0]} creates a {sub}; list with --list")


_ARGUMENT_CHECKS: Mapping[str, Callable[[list[_Word]], None]] = MappingProxyType(
    {"find": _check_find, "git": _check_git, "rg": _check_rg}
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


@dataclass(frozen=True, slots=True)
class _Writer:
    """A writer whose plain form names its targets: the option letters it may
    take (``valued`` ones take the next word), and which operands it writes
    (``all``, ``last`` of two or more, ``every`` of two or more, or
    ``after-first``: all but the mode or owner). ``into``: the last operand
    may be a directory each source lands in (``dest/name`` is named too);
    ``symbolic``: the letter that makes the links it creates symbolic."""

    letters: str
    operands: str
    valued: str = ""
    into: bool = False
    symbolic: str = ""


_WRITERS: Mapping[str, _Writer] = MappingProxyType({
    "touch": _Writer("acm", "all"),
    "mkdir": _Writer("pv", "all"),
    "rm": _Writer("frRiIvd", "all"),
    "rmdir": _Writer("pv", "all"),
    "tee": _Writer("ai", "all"),
    "truncate": _Writer("c", "all", valued="s"),
    "cp": _Writer("rRafnpv", "last", into=True),
    "ln": _Writer("sfnv", "every", into=True, symbolic="s"),
    "mv": _Writer("fnvi", "every", into=True),
    "chmod": _Writer("Rvfc", "after-first"),
    "chown": _Writer("Rvfch", "after-first"),
})


def _landing(sources: list[str], dest: str) -> list[str]:
    """Where each source lands when ``dest`` is a directory: ``dest/name``."""
    names = (posixpath.basename(source.rstrip("/")) for source in sources)
    return [posixpath.join(dest, name) for name in names if name]


def _symlink_targets(sources: list[str], dest: str) -> list[str]:
    """Where ``ln -s`` links point: each source read against the directory
    of the link (``dest`` itself, or ``dest``'s directory)."""
    places = (posixpath.dirname(dest), dest)
    return [posixpath.join(place, source) for source in sources for place in places]


def _writer_targets(words: list[_Word]) -> list[str] | None:
    """The paths one writer command writes, or ``None`` when they cannot be
    named (an unknown command or option, a glob, a ``~`` path …)."""
    writer = _WRITERS.get(words[0].text)
    if writer is None or any(word.globbed for word in words):
        return None
    operands: list[str] = []
    options: list[str] = []
    rest = [word.text for word in words[1:]]
    while rest:
        text = rest.pop(0)
        if text == "--":
            operands.extend(rest)
            break
        if not text.startswith("-") or text == "-":
            operands.append(text)
            continue
        if text.startswith("--"):
            return None
        letters = text[1:]
        options.append(letters)
        if letters[-1] in writer.valued and all(c in writer.letters for c in letters[:-1]) and rest:
            rest.pop(0)
        elif not all(c in writer.letters for c in letters):
            return None
    if any(not operand or operand.startswith(("~", "-")) for operand in operands):
        return None
    if writer.operands == "all":
        return operands
    if len(operands) < 2:
        return None
    if writer.operands == "after-first":
        return operands[1:]
    named = operands[-1:] if writer.operands == "last" else operands
    if writer.into:
        named = named + _landing(operands[:-1], operands[-1])
    if writer.symbolic and any(writer.symbolic in option for option in options):
        named = named + _symlink_targets(operands[:-1], operands[-1])
    return named


def shell_write_targets(arguments: JSONObject) -> tuple[str, ...] | None:
    """The paths a shell call (``{command, description?, timeout?}``) writes,
    as far as they can be named: ``()`` for a provably read-only line, the
    written operands of plain writers in a pipeline of otherwise read-only
    commands, ``None`` when they cannot be determined. Never raises."""
    if not isinstance(arguments, Mapping) or arguments.keys() - SHELL_ARGUMENT_KEYS:
        return None
    command = arguments.get("command")
    if not isinstance(command, str):
        return None
    try:
        pipeline = _lex(command)
    except _Refusal:
        return None
    targets: list[str] = []
    for words in pipeline:
        try:
            _check_command(words)
            continue  # a read-only command writes nothing
        except _Refusal:
            named = _writer_targets(words)
        if named is None:
            return None
        targets.extend(named)
    return tuple(targets)


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
