"""The command line called in-process, as the CLI tests call it: the arguments,
the bytes on standard input, and back the exit status with what was written
to standard output and standard error."""

from __future__ import annotations

import io

from planfold.adapters.cli.main import main


def run_cli(*argv: str, stdin: bytes = b"") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), out=out, err=err, stdin=io.BytesIO(stdin))
    return status, out.getvalue(), err.getvalue()
