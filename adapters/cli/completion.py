"""``planfold completion bash|zsh``: a shell completion script, printed.

Theory of operation
-------------------
The script is written from the command's own parser, so it cannot drift
from it: the commands' names, each command's options (the global ``-v`` and
``--log-level`` included, which every command takes too), and what each
option's value is. A value that names a file (``--db``, ``-o``, a ``FILE``
or ``DIR`` argument: its metavar says so) completes file names; a value with
choices (the shell of ``completion``; ``--log-level`` its level names) completes those; any
other value completes nothing, so that a number is not offered a file name.

The script defines one bash function, ``_planfold``, bound with ``complete
-F``. It finds the command as the first word that is neither an option nor
an option's value, then completes the word under the cursor from what that
command takes. zsh runs the same function through its bash emulation
(``bashcompinit``), loaded by the script when the shell has not loaded it.

No package is needed: the script is plain bash, and the command that prints
it imports nothing that the other commands do not.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TextIO

from .args import LOG_LEVELS, log_level

__all__ = ["SHELLS", "add_completion_arguments", "completion_script", "run_completion"]

#: The shells a script is printed for.
SHELLS = ("bash", "zsh")
#: Metavars whose value is a file or a folder.
_FILE_METAVARS = frozenset({"FILE", "PATH", "OUT", "DIR", "FILE|URL"})


@dataclass(frozen=True, slots=True)
class _Command:
    """What one command takes: its options, which of them take a file, which
    take one of some choices, which take another value; what its positional
    arguments complete (file names, choices, or nothing)."""

    options: tuple[str, ...]
    files: tuple[str, ...]
    choices: tuple[tuple[str, tuple[str, ...]], ...]
    values: tuple[str, ...]
    positional: str  # "files", a word list, or ""


def add_completion_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shell", choices=SHELLS, help="the shell to print the script for")


def _actions(parser: argparse.ArgumentParser) -> Iterable[argparse.Action]:
    # argparse lists a parser's arguments only in this attribute (its own help reads it)
    return tuple(parser._actions)


def _takes_file(action: argparse.Action) -> bool:
    metavar = action.metavar if isinstance(action.metavar, str) else None
    return metavar in _FILE_METAVARS or action.dest in ("db", "store", "output", "file")


def _command(parser: argparse.ArgumentParser) -> _Command:
    options: list[str] = []
    files: list[str] = []
    choices: list[tuple[str, tuple[str, ...]]] = []
    values: list[str] = []
    positional = ""
    for action in _actions(parser):
        if isinstance(action, argparse._SubParsersAction):
            continue
        if not action.option_strings:
            if action.choices is not None:
                positional = " ".join(str(choice) for choice in action.choices)
            elif _takes_file(action):
                positional = "files"
            continue
        options.extend(action.option_strings)
        if action.nargs == 0:
            continue
        named = tuple(str(c) for c in action.choices) if action.choices is not None else (
            LOG_LEVELS if action.type is log_level else None)
        if named is not None:
            choices.append(("|".join(action.option_strings), named))
        elif _takes_file(action):
            files.extend(action.option_strings)
        else:
            values.extend(action.option_strings)
    return _Command(tuple(options), tuple(files), tuple(choices), tuple(values), positional)


def _words(words: Iterable[str]) -> str:
    return shlex.quote(" ".join(words))


def _case(command: _Command, indent: str) -> str:
    """The body of one command's completion."""
    lines = [f'{indent}case "$prev" in']
    if command.files:
        lines.append(f'{indent}    {"|".join(command.files)}) COMPREPLY=($(compgen -f -- "$cur")); return ;;')
    for names, words in command.choices:
        lines.append(f'{indent}    {names}) COMPREPLY=($(compgen -W {_words(words)} -- "$cur")); return ;;')
    if command.values:
        lines.append(f'{indent}    {"|".join(command.values)}) COMPREPLY=(); return ;;')
    lines.append(f"{indent}esac")
    options = _words(command.options)
    if command.positional == "files":
        lines.append(f'{indent}if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W {options} -- "$cur"));')
        lines.append(f'{indent}else COMPREPLY=($(compgen -f -- "$cur")); fi')
    elif command.positional:
        lines.append(f'{indent}if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W {options} -- "$cur"));')
        lines.append(f'{indent}else COMPREPLY=($(compgen -W {_words(command.positional.split())} -- "$cur")); fi')
    else:
        lines.append(f'{indent}COMPREPLY=($(compgen -W {options} -- "$cur"))')
    return "\n".join(lines)


def completion_script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script of ``parser`` (the whole ``planfold`` parser) for ``shell``."""
    if shell not in SHELLS:
        raise ValueError(f"no completion script for {shell!r}: one of {', '.join(SHELLS)}")
    top = _command(parser)
    commands: dict[str, argparse.ArgumentParser] = {}
    for action in _actions(parser):
        if isinstance(action, argparse._SubParsersAction):
            commands = dict(action.choices)
    top = _Command(top.options, top.files, top.choices, top.values, " ".join(commands))
    # the values of options given before the command are skipped when it is looked for
    before = [*top.files, *top.values, *(n for names, _ in top.choices for n in names.split("|"))]
    skip = "|".join(before) if before else "--"
    parts = [
        f"# planfold completion for {shell}: source <(planfold completion {shell})",
    ]
    if shell == "zsh":
        parts.append("if ! (( $+functions[compdef] )); then autoload -U +X compinit && compinit; fi")
        parts.append("autoload -U +X bashcompinit && bashcompinit")
    parts.append(
        "_planfold() {\n"
        '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" command="" i\n'
        "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
        '        case "${COMP_WORDS[i]}" in\n'
        f"            {skip}) ((i++)) ;;\n"
        "            -*) ;;\n"
        '            *) command="${COMP_WORDS[i]}"; break ;;\n'
        "        esac\n"
        "    done\n"
        '    case "$command" in'
    )
    parts.append('        "")\n' + _case(top, " " * 12) + "\n            ;;")
    for name, sub in commands.items():
        parts.append(f"        {name})\n" + _case(_command(sub), " " * 12) + "\n            ;;")
    parts.append("    esac\n}\ncomplete -o filenames -F _planfold planfold")
    return "\n".join(parts) + "\n"


def run_completion(args: argparse.Namespace, parser: argparse.ArgumentParser, out: TextIO) -> int:
    """Print the script for ``args.shell``; the exit status (0)."""
    out.write(completion_script(parser, args.shell))
    return 0
