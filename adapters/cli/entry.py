"""The ``planfold`` command's entry point: its top level, which imports no
command.

Theory of operation
-------------------
``planfold --version``, ``planfold --help`` and a command line that names no
command are answered here, from the top-level parser alone (the commands'
names and one-line help), so they import no adapter: no store, no model
client, no runtime. ``--version`` alone is answered without even building the
parser. Any other command line goes to ``adapters.cli.main``, which adds every
command's own arguments to the same parser (``top_parser``) and runs the
command; what the top level prints is therefore the same either way.
"""

from __future__ import annotations

import sys

from ... import __version__

TYPE_CHECKING = False  # typing itself is not imported: it costs more than the rest of --version
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from typing import BinaryIO, NoReturn, TextIO

__all__ = ["AFTER", "EXIT_STATUS", "FILE_HELP", "global_options_joined", "main", "printable", "top_parser"]

EXIT_STATUS = """\
exit status:
  0  everything checked is sound (or the command did what it says)
  1  a bad log (its first bad record is named by seq or line, with the rule
     it breaks), a stored projection that does not match its log, or a
     failed conformance check
  2  a usage or input problem, or a refused operation: no such file or
     session, not a planfold database, an import into a session that is not
     empty; nothing was written"""

FILE_HELP = """\
--db FILE names what replay, audit and report read: a planfold SQLite
database (recognised by its header), a postgresql:// URL, or a JSON Lines
log, one {seq, kind, at, payload} record per line; - reads standard input.
An empty file is a log with no events; a blank line is a malformed record.
Every command names its store with --db; the FILE of replay, audit and
report may still be given without it, which is deprecated (a note on
stderr) and goes in the next release."""

#: Each command: its name, its one line of help and its description.
COMMANDS: tuple[tuple[str, str, str | None], ...] = (
    ("demo", "run a whole session and audit its log", None),
    ("replay", "fold logs strictly and say where they stand", FILE_HELP),
    ("audit", "replay, and compare a database's stored projection with the fold", FILE_HELP),
    (
        "report",
        "one session as a self-contained HTML page for auditors (or, with --all, a database's coverage)",
        f"{FILE_HELP}\n\nThe page needs no network and no script to read; a bad log is reported up to its first "
        "bad event (exit status 1).",
    ),
    ("export", "write one session of a database as JSON Lines", None),
    (
        "import",
        "load a JSON Lines log into an empty session of a database",
        "The log is folded strictly first; nothing is written, and no database is created, unless all of it "
        "lands. A session that already holds events, even this very log, is refused.",
    ),
    (
        "fork",
        "make a new session from the first events of another",
        "The new session's log is the first N events of SOURCE (--at N), or everything before turn K started "
        "(--turn K); it keeps where it came from (SOURCE, N and the hash of those events), which audit and "
        "export show. SOURCE is not changed, and from then on the two sessions go on independently. Nothing "
        "is written when SOURCE has no seq N or turn K, or NEW already exists.",
    ),
    ("conform", "check an implementation against conformance vectors", None),
    (
        "completion",
        "print a shell completion script (bash or zsh)",
        "Load it in the running shell, or from its start-up file:\n"
        "  bash: source <(planfold completion bash)     (in ~/.bashrc)\n"
        "  zsh:  source <(planfold completion zsh)      (in ~/.zshrc)\n"
        "It completes command names, each command's options, and file names where a file is asked for.",
    ),
)
#: The command whose parser is its own (no epilog, the default formatter).
SERVE = ("serve", "JSON-RPC 2.0 on stdin/stdout, for runtimes in other languages")
#: What the top level answers without a command.
_TOP_LEVEL = frozenset({"-h", "--help", "--version"})


class ParserExit(Exception):
    """argparse finished (help, version, or a usage error)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def top_parser(out: TextIO, err: TextIO) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The ``planfold`` parser with every command named and none of their
    arguments, and each command's own parser by name; they write to ``out``
    and ``err`` and raise ``ParserExit`` instead of exiting."""
    import argparse  # noqa: PLC0415 (not needed by --version)

    from .args import LOG_LEVELS, log_level  # noqa: PLC0415 (the same)

    class Parser(argparse.ArgumentParser):
        """An ``ArgumentParser`` that writes to the command's own streams and
        returns instead of exiting the process."""

        def _print_message(self, message: str, file: object = None) -> None:
            if message:
                (out if file is sys.stdout else err).write(message)

        def print_usage(self, file: object = None) -> None:
            err.write(self.format_usage())

        def print_help(self, file: object = None) -> None:
            out.write(self.format_help())

        def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
            if message:
                err.write(message)
            raise ParserExit(status)

        def error(self, message: str) -> NoReturn:
            from .text import shown  # noqa: PLC0415 (only a usage error needs it)

            self.print_usage()
            self.exit(2, f"{self.prog}: error: {shown(message)}\n")  # it may quote an argument as given

    formatter = argparse.RawDescriptionHelpFormatter
    parser = Parser(
        prog="planfold",
        description="Plan/build modes, plans and goals as folds of an append-only session log.",
        epilog=f"{FILE_HELP}\n\n{EXIT_STATUS}",
        formatter_class=formatter,
    )
    parser.add_argument("--version", action="version", version=f"planfold {__version__}")

    def global_options(parser: argparse.ArgumentParser, suffix: str) -> None:
        # Accepted before the command and after it; what comes after is kept
        # apart (``suffix``) and joined by ``global_options_joined``, so that
        # ``-v demo -v`` counts two.
        parser.add_argument("-v", "--verbose", dest="verbosity" + suffix, action="count", default=0,
                            help="log more on stderr: -v for INFO, -vv for DEBUG, httpx's requests included "
                            "(default: warnings only; serve: INFO)")
        parser.add_argument("--log-level", dest="log_level" + suffix, type=log_level, metavar="LEVEL",
                            help=f"the level of the logs on stderr, one of {', '.join(LOG_LEVELS)} (overrides -v)")

    global_options(parser, "")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    for name, text, description in COMMANDS:
        sub.add_parser(name, help=text, description=description, epilog=EXIT_STATUS, formatter_class=formatter)
    sub.add_parser(SERVE[0], help=SERVE[1])
    commands: dict[str, argparse.ArgumentParser] = dict(sub.choices)
    for command in commands.values():
        global_options(command, AFTER)
    return parser, commands


#: The suffix of the global options' destinations when they follow the command.
AFTER = "_after"


def global_options_joined(args: argparse.Namespace) -> argparse.Namespace:
    """``args`` with the global options given after the command joined to
    those given before it: ``-v`` counts add up, a ``--log-level`` after the
    command wins."""
    args.verbosity += getattr(args, "verbosity" + AFTER, 0)
    after = getattr(args, "log_level" + AFTER, None)
    if after is not None:
        args.log_level = after
    return args


def printable(stream: TextIO) -> TextIO:
    """``stream`` set to escape what it cannot encode instead of failing."""
    reconfigure = getattr(stream, "reconfigure", None)
    if callable(reconfigure):
        try:  # noqa: SIM105 (contextlib is not imported for --version)
            reconfigure(errors="backslashreplace")
        except (ValueError, OSError):
            pass
    return stream


def _top_level_only(args: Sequence[str]) -> bool:
    """Whether the top-level parser alone answers ``args``: it asks for help
    or the version first, or names no command."""
    return bool(args and args[0] in _TOP_LEVEL) or all(arg.startswith("-") and arg != "-" for arg in args)


def main(
    argv: Sequence[str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    stdin: BinaryIO | None = None,
) -> int:
    """Run ``planfold``; returns the exit status (``EXIT_STATUS``). ``out``
    and ``err`` default to standard output and error (``printable``),
    ``stdin`` to standard input's bytes."""
    args = list(sys.argv[1:] if argv is None else argv)
    out = printable(sys.stdout) if out is None else out
    err = printable(sys.stderr) if err is None else err
    if not _top_level_only(args):
        from .main import run  # noqa: PLC0415 (a command: import what it needs)

        return run(args, out, err, stdin)
    if args == ["--version"]:
        out.write(f"planfold {__version__}\n")
        return 0
    try:
        top_parser(out, err)[0].parse_args(args)
    except ParserExit as done:
        return done.status
    return 2  # not reached: without a command the parser always exits


if __name__ == "__main__":
    sys.exit(main())
