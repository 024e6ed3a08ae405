"""Shared tools, policies and strategies for the tool-gate tests.

``REGISTRY`` holds one tool of every kind the gate must tell apart. The
strategies build forged calls: write tools, shell write forms, unknown and
miscased names, MCP tools claiming to be read-only, malformed calls.
"""

from __future__ import annotations

import functools
import shlex
from collections.abc import Mapping

from hypothesis import strategies as st

from planfold.kernel.payload import JSON, JSONObject
from planfold.kernel.phase import RUNTIME_PHASES, RuntimePhase
from planfold.kernel.tools.shell import SHELL_CLASSIFIER
from planfold.kernel.tools.spec import CallClassifier, Classification, ToolRegistry, ToolSpec

OBJECT = {"type": "object", "properties": {}}


def spec(name: str, effect: str, origin: str, **extra: object) -> ToolSpec:
    return ToolSpec(name, f"the {name} tool", OBJECT, effect, origin, **extra)  # type: ignore[arg-type]


#: Built-in tools that declare ``read``: the only ones trusted in plan mode.
READ_TOOLS: tuple[ToolSpec, ...] = (
    spec("read_file", "read", "builtin"),
    spec("grep_search", "read", "builtin"),
    spec("list_dir", "read", "builtin"),
    spec("memory_query", "read", "builtin"),
    spec("web_fetch", "read", "builtin"),
)

#: Every tool that must not run in plan or build_bootstrap without a classifier.
WRITE_TOOLS: tuple[ToolSpec, ...] = (
    spec("write_file", "write", "builtin"),
    spec("edit_file", "write", "builtin"),
    spec("delete_file", "write", "builtin"),
    spec("mystery_tool", "unknown", "builtin"),
    spec("memory_write", "write", "builtin", category="memory-write"),
    spec("memory_delete", "unknown", "builtin", category="memory-write"),
    spec("todo_update", "unknown", "builtin", category="task-state"),
    spec("set_plan", "write", "builtin", category="plan-state"),
    spec("bash", "unknown", "shell"),
    spec("shell_readonly", "read", "shell"),
    spec("mcp__fs__read_file", "read", "mcp", read_only_hint=True),
    spec("mcp__gh__search", "unknown", "mcp", read_only_hint=True),
    spec("mcp__fs__write_file", "write", "mcp", read_only_hint=False),
    spec("mcp__db__query", "unknown", "mcp"),
)

EXIT = spec("exit_plan_mode", "write", "builtin")

REGISTRY = ToolRegistry.of(*READ_TOOLS, *WRITE_TOOLS, EXIT)
SHELL_TOOLS = tuple(t for t in WRITE_TOOLS if t.origin == "shell")
MCP_TOOLS = tuple(t for t in WRITE_TOOLS if t.origin == "mcp")
READ_ONLY_PHASES: tuple[RuntimePhase, ...] = ("plan", "build_bootstrap")
PHASES: tuple[RuntimePhase, ...] = RUNTIME_PHASES


def _never(tool: ToolSpec, arguments: JSONObject) -> Classification:
    return Classification(False, "deployment-says-no", f"{tool.name} is not known to be read-only")


def _boom(tool: ToolSpec, arguments: JSONObject) -> Classification:
    raise RuntimeError("a deployment classifier with a bug")


def _is_mcp(tool: ToolSpec) -> bool:
    return tool.origin == "mcp"


def _everything(tool: ToolSpec) -> bool:
    return True


def _get_only(tool: ToolSpec, arguments: JSONObject) -> Classification:
    if set(arguments) == {"path"} and isinstance(arguments["path"], str):
        return Classification(True, "path-read", "reading one path")
    return Classification(False, "not-a-read", "only {path} reads are read-only")


def _covers_fs_read(tool: ToolSpec) -> bool:
    return tool.name == "mcp__fs__read_file"


#: Covers every MCP tool and never says read-only.
MCP_NEVER = CallClassifier("mcp-never", _is_mcp, _never)
#: Covers everything and always raises: must fail closed.
BROKEN = CallClassifier("broken", _everything, _boom)
#: Marks ``mcp__fs__read_file`` calls with exactly ``{path: str}`` read-only.
MCP_PATH_READ = CallClassifier("mcp-path-read", _covers_fs_read, _get_only)

SHELL = SHELL_CLASSIFIER

# --------------------------------------------------------------------------
# JSON and names

json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
json_values: st.SearchStrategy[JSON] = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
json_objects: st.SearchStrategy[Mapping[str, JSON]] = st.dictionaries(
    st.text(max_size=6), json_values, max_size=3
)


def nested_lists(depth: int) -> JSON:
    """``0`` inside ``depth`` lists."""
    value: JSON = 0
    for _ in range(depth):
        value = [value]
    return value


def nested_objects(depth: int) -> JSON:
    """``0`` inside ``depth`` objects."""
    value: JSON = 0
    for _ in range(depth):
        value = {"k": value}
    return value


words = st.from_regex(r"[a-z][a-z0-9_.-]{0,10}", fullmatch=True)

LOOKALIKES = {
    "a": "\u0430", "c": "\u0441", "e": "\u0435", "o": "\u043e", "p": "\u0440",
    "i": "\u0456", "l": "\u217c", "s": "\u0455", "x": "\u0445", " ": "\u00a0",
    ">": "\uff1e", ";": "\uff1b", "|": "\uff5c", "-": "\u2010",
}  # fmt: skip


@st.composite
def lookalike_of(draw: st.DrawFn, text: str) -> str:
    """``text`` with one character swapped for a Unicode look-alike (or a
    zero-width space inserted)."""
    spots = [i for i, ch in enumerate(text) if ch in LOOKALIKES]
    if not spots or draw(st.booleans()):
        at = draw(st.integers(0, len(text)))
        return text[:at] + "\u200b" + text[at:]
    at = draw(st.sampled_from(spots))
    return text[:at] + LOOKALIKES[text[at]] + text[at + 1 :]


@st.composite
def case_variant(draw: st.DrawFn, name: str) -> str:
    """``name`` with a different case pattern (never ``name`` itself)."""
    flips = draw(st.lists(st.booleans(), min_size=len(name), max_size=len(name)))
    out = "".join(ch.swapcase() if flip else ch for ch, flip in zip(name, flips, strict=True))
    if out == name:
        first = next(i for i, ch in enumerate(name) if ch.isalpha())
        out = name[:first] + name[first].swapcase() + name[first + 1 :]
    return out


def _unregistered(name: str) -> bool:
    return REGISTRY.get_casefold(name) is None


unknown_names = st.one_of(
    st.text(max_size=24).filter(_unregistered),
    st.sampled_from(
        ["", " read_file", "read_file ", "read-file", "readfile", "bash2", "exit_plan", "rm"]
    ),
    st.sampled_from([t.name for t in REGISTRY]).flatmap(lookalike_of),
)

# --------------------------------------------------------------------------
# Shell command lines

READ_COMMANDS = (
    "cat README.md", "ls -la", "grep -rn foo src", "head -n 5 a.txt", "wc -l notes",
    "rg -n TODO", "tail -n 20 log.txt", "find . -name '*.py'", "stat setup.cfg", "pwd",
    "git status", "git log -5 --oneline", "git diff --stat", "git show HEAD", "git blame README.md",
    "git grep -n TODO", "git rev-parse HEAD", "git ls-files", "git branch --list", "git tag -l",
)  # fmt: skip


@st.composite
def read_command(draw: st.DrawFn) -> str:
    """A command line the shell classifier must accept."""
    base = draw(st.sampled_from(READ_COMMANDS))
    extra = draw(st.lists(words, max_size=2))
    line = " ".join([base, *extra])
    if draw(st.booleans()):
        line += " | " + draw(st.sampled_from(["head -n 3", "wc -l", "grep x", "tail -1"]))
    return line


CHAIN_OPS = (";", " ; ", "&&", " && ", "||", " || ", " & ", "\n", "|&")
SHELL_WRITE_FORMS = (
    "redirection", "tee", "sed-in-place", "heredoc", "interpreter", "git", "git-option", "chain",
    "long-chain", "substitution", "lookalike", "unparseable", "find-unsafe", "rg-unsafe",
    "writer", "runner", "grouping",
)  # fmt: skip


#: Fixed pieces of the write forms.
GIT = (
    "commit -am x", "push", "add .", "checkout .", "reset --hard", "stash", "config core.pager less",
    "branch new", "branch -D old", "branch -m a b", "tag v1", "tag -d v1", "tag -a v1 -m x",
    "rebase main", "merge topic", "pull", "fetch", "clean -fdx", "rm a", "mv a b", "restore .",
    "switch -c x", "apply p.diff", "am p.mbox", "cherry-pick HEAD", "revert HEAD", "gc", "init",
    "clone url", "worktree add x", "submodule update", "notes add", "update-ref HEAD x",
    "format-patch -1", "difftool", "mergetool", "lg", "co main", "help log", "",
)  # fmt: skip
#: Git reads with an option or a global option that writes a file, runs a
#: program (pager, external diff, text conversion, signature check) or
#: points git at another configuration.
GIT_OPTIONS = (
    "-c core.pager=sh log", "-c 'alias.st=!rm -rf .' st", "--config-env=core.pager=X log",
    "--exec-path=/tmp status", "-C /tmp status", "--git-dir=x log", "--work-tree=/ status",
    "-p log", "--paginate diff", "log --output=x", "log --outp=x", "diff --output x",
    "show --output=x HEAD", "diff --ext-diff", "log -p --ext-diff", "log --textconv",
    "show --textconv HEAD", "grep -O foo", "grep -nO foo", "grep --open-files-in-pager=vi x",
    "log --show-signature", "log --format='%G?'", "show --pretty=format:%GS", "blame --contents x f",
    "tag -v v1", "branch --format='%(signature)'", "branch --set-upstream-to=o/m", "grep -e --output=x",
    "status --unknown", "ls-files --with-tree=HEAD", "rev-parse --parseopt", "log -n --output=x",
)  # fmt: skip
SUBSTITUTIONS = (
    "cat $(ls)", "cat `id`", "ls ${HOME}", "ls $HOME", "cat <(ls)", "ls > >(wc)",
    'grep "$(rm -rf x)" f', "cat $((1+1))",
)  # fmt: skip
UNPARSEABLE = (
    "", "   ", "\t", "cat 'foo", 'grep "x', "|", "| cat", "cat |", "ls | | wc",
    "cat a\\ b", "ls #", "ls !x", "cat\x00x", "ls\r", "ls\x7f", "cat x" * 500,
)  # fmt: skip
FIND_UNSAFE = (
    "-delete", "-exec rm '{}' +", "'-exec' rm '{}' '+'", "-execdir x '{}' +", "-ok rm '{}' +",
    "-fprint out", "-fls out",
)  # fmt: skip
RG_UNSAFE = (
    "rg --pre sh foo", "rg --pre=./x foo", "rg -z foo", "rg -iz foo", "rg --search-zip foo",
    "rg --hostname-bin=./x foo", "rg foo *",
)  # fmt: skip
WRITERS = (
    "rm -rf", "mv a", "cp a", "touch", "mkdir -p", "dd of=", "truncate -s 0", "chmod 777", "ln -s x",
    "tree -o", "sort -o", "awk '{print > \"f\"}'",
)  # fmt: skip
RUNNERS = (
    "env", "xargs", "sudo", "nohup", "timeout 5", "time", "exec", "eval", "command", "/bin/cat", "FOO=1", "./cat",
)  # fmt: skip
INTERPRETER_NAMES = ("python", "python3", "node", "perl", "ruby", "bash", "sh", "zsh")
PROGRAMS = ("open('x','w').write('1')", "require('fs').rmSync('a')", "rm -rf .")


@functools.cache
def shell_write(form: str) -> st.SearchStrategy[str]:
    """Command lines of one write form; the classifier must refuse each."""
    base = st.sampled_from(READ_COMMANDS)
    path = words
    if form == "redirection":
        op = st.sampled_from([">", ">>", ">|", "1>", "2>", "&>", "&>>", "<", "2>&1 >"])
        space = st.sampled_from(["", " "])
        return st.builds(lambda b, o, p, s: f"{b}{s}{o}{s}{p}", base, op, path, space)
    if form == "tee":
        return st.builds(lambda b, p: f"{b} | tee -a {p}", base, path) | st.just("tee out.txt")
    if form == "sed-in-place":
        flag = st.sampled_from(["-i", "-i.bak", "--in-place", "-ni", "-n"])
        return st.builds(lambda f, p: f"sed {f} 's/a/b/w out' {p}", flag, path)
    if form == "heredoc":
        quote = st.sampled_from(["", "'", '"'])
        heredoc = st.builds(lambda p, q: f"cat <<{q}EOF{q} > {p}\nhello\nEOF", path, quote)
        return heredoc | st.builds(lambda p: f"cat <<< {p}", path)
    if form == "interpreter":
        flag = st.sampled_from(["-c", "-e", "-lc", ""])
        program = st.sampled_from(PROGRAMS).map(shlex.quote)
        return st.builds(lambda i, f, c: f"{i} {f} {c}", st.sampled_from(INTERPRETER_NAMES), flag, program)
    if form == "git":
        return st.sampled_from(GIT).map("git {}".format).map(str.rstrip)
    if form == "git-option":
        return st.sampled_from(GIT_OPTIONS).map("git {}".format)
    if form == "chain":
        return st.builds(lambda a, o, b: f"{a}{o}{b}", base, st.sampled_from(CHAIN_OPS), base)
    if form == "long-chain":
        pipes = st.lists(base, min_size=6, max_size=20).map(" | ".join)
        chained = st.lists(st.tuples(base, st.sampled_from(CHAIN_OPS)), min_size=3, max_size=12)
        return pipes | chained.map(lambda parts: "".join(c + o for c, o in parts) + "ls")
    if form == "substitution":
        return st.sampled_from(SUBSTITUTIONS)
    if form == "lookalike":
        return base.flatmap(lookalike_of)
    if form == "unparseable":
        return st.sampled_from(UNPARSEABLE)
    if form == "find-unsafe":
        return st.sampled_from(FIND_UNSAFE).map("find . -name '*.tmp' {}".format) | st.just("find *")
    if form == "rg-unsafe":
        return st.sampled_from(RG_UNSAFE)
    if form == "writer":
        return st.builds(lambda c, p: f"{c} {p}", st.sampled_from(WRITERS), path)
    if form == "runner":
        return st.builds(lambda c, b: f"{c} {b}", st.sampled_from(RUNNERS), base)
    if form == "grouping":
        return base.map("( {} )".format) | base.map("{{ {} ; }}".format)
    raise AssertionError(form)


def _tagged(form: str) -> st.SearchStrategy[tuple[str, str]]:
    return shell_write(form).map(lambda line: (form, line))


#: (form, command line) of any shell write form.
any_shell_write = st.one_of(*[_tagged(form) for form in SHELL_WRITE_FORMS])


@st.composite
def miscased_names(draw: st.DrawFn) -> tuple[str, str]:
    """(a registered name, a case variant of it that is not the name)."""
    name = draw(st.sampled_from(REGISTRY.names))
    return name, draw(case_variant(name))


#: Small argument objects (their content never matters to a refusal).
small_objects: st.SearchStrategy[Mapping[str, JSON]] = st.dictionaries(
    st.sampled_from(("path", "content", "query", "command", "x")),
    st.text(max_size=6) | st.integers(),
    max_size=2,
)
#: Arguments that are JSON but not an object.
non_objects: st.SearchStrategy[JSON] = st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(max_size=6), st.lists(st.integers(), max_size=2)
)
