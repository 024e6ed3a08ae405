"""A small Python client of ``planfold serve``: a child process over pipes.

Theory of operation
-------------------
``ServeClient.spawn`` starts ``planfold serve`` as a child process (the same
Python, ``-m planfold.adapters.cli``) and keeps its standard input and
output; standard error is passed through (or sent where the caller says).
``call`` writes one request line and reads one response line: the result,
or a ``RemoteError`` carrying the JSON-RPC error (its ``data.code`` is
planfold's stable code). ``send`` writes any bytes as one line and returns
the raw response line, for tests that speak malformed JSON on purpose.
``close`` ends the input and returns the server's exit status.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from collections.abc import Sequence
from typing import IO, Any

import msgspec

from ..errors import AdapterError

__all__ = ["RemoteError", "ServeClient"]


class RemoteError(AdapterError):
    """The server answered with a JSON-RPC error: ``rpc_code`` is its
    number, ``data`` its data (``data["code"]`` planfold's code)."""

    code = "remote-error"

    def __init__(self, rpc_code: int, message: str, data: dict[str, Any]) -> None:
        super().__init__(f"[{data.get('code', rpc_code)}] {message}")
        self.rpc_code = rpc_code
        self.data = data

    @property
    def remote_code(self) -> str:
        return str(self.data.get("code", ""))


class ServeClient:
    """One ``planfold serve`` child process."""

    def __init__(self, argv: Sequence[str], *, stderr: IO[bytes] | int | None = None) -> None:
        self.process = subprocess.Popen(
            list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr
        )
        self._ids = itertools.count(1)

    @classmethod
    def spawn(
        cls,
        db: str,
        *,
        ticks: tuple[int, int] | None = None,
        stderr: IO[bytes] | int | None = None,
        extra: Sequence[str] = (),
    ) -> ServeClient:
        """``planfold serve --db DB`` (with ``--ticks START:STEP``)."""
        argv = [sys.executable, "-m", "planfold.adapters.cli", "serve", "--db", db, *extra]
        if ticks is not None:
            argv += ["--ticks", f"{ticks[0]}:{ticks[1]}"]
        return cls(argv, stderr=stderr)

    def send(self, line: bytes) -> bytes:
        """Write ``line`` (a newline is added) and read one response line."""
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        stdin.write(line + b"\n")
        stdin.flush()
        answer = stdout.readline()
        if not answer:
            raise AdapterError(f"the server ended (status {self.process.poll()}) without answering")
        return answer.rstrip(b"\n")

    def call(self, method: str, **params: Any) -> Any:
        """Call ``method`` with ``params``; its result, or ``RemoteError``."""
        rid = next(self._ids)
        line = msgspec.json.encode({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        answer = msgspec.json.decode(self.send(line))
        if "error" in answer:
            error = answer["error"]
            raise RemoteError(error["code"], error["message"], error.get("data") or {})
        if answer.get("id") != rid:
            raise AdapterError(f"answer to request {answer.get('id')!r} arrived for request {rid}")
        return answer["result"]

    def close(self, timeout: float = 30.0) -> int:
        """End the server's input and wait for it; its exit status."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        status = self.process.wait(timeout)
        if self.process.stdout is not None:
            self.process.stdout.close()
        return status

    def __enter__(self) -> ServeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:
            self.close()
