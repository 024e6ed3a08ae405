"""A real chat-completions HTTP server on loopback, for end-to-end client tests.

The server listens on 127.0.0.1 with an ephemeral port, answers each
``POST`` with the next planned ``Answer`` (a status, headers and body, an
optional delay before answering, an optional trickle between body pieces, or
a dropped connection), and records every request it received. Hostile
answers misbehave the way real servers and middleboxes have: headers
dribbled one byte at a time, an endless run of ``100 Continue``, a body cut
off before its ``Content-Length``. A ``CONNECT`` (a client using the server
as an HTTPS proxy) is recorded and refused with 403. A request with
no answer planned gets a 500 and is counted in ``unplanned``, so a test can
assert that the client asked exactly as often as planned.

The server speaks HTTP/1.1 and keeps a connection open after a well-formed
answer, as real servers do; ``connections`` counts the connections it
accepted, so a test can see a client reuse one.

Every wait inside a handler is bounded and ends early when the server is
closed; ``close`` stops the accept loop and joins the handler threads.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Answer", "ChatServer", "Received", "completion", "tool_call_json"]


def tool_call_json(call_id: str, name: str, arguments: object) -> dict[str, Any]:
    """A tool call as a server sends it."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def completion(
    text: str | None = "ok",
    tool_calls: Sequence[Mapping[str, Any]] = (),
    *,
    finish_reason: str | None = None,
    usage: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A chat-completion body as a server sends it."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = list(tool_calls)
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": "test-model",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
            }
        ],
    }
    if usage is not None:
        body["usage"] = dict(usage)
    return body


@dataclass(frozen=True)
class Answer:
    """One planned reply. ``body`` may be raw bytes or a JSON-able value."""

    status: int = 200
    body: bytes | Mapping[str, Any] | Sequence[Any] = field(default_factory=completion)
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    trickle: float = 0.0
    drop: bool = False
    #: Seconds between single bytes of the status line and headers.
    dribble: float = 0.0
    #: How many ``100 Continue`` responses precede the answer, ``pause`` apart.
    continues: int = 0
    pause: float = 0.0
    #: Send only this many bytes of the body (the full length announced), then close.
    cut_body: int | None = None

    def payload(self) -> bytes:
        if isinstance(self.body, bytes):
            return self.body
        return json.dumps(self.body).encode("utf-8")


@dataclass(frozen=True)
class Received:
    """One request as the server saw it."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


#: The longest any handler waits, however an answer was planned.
MAX_WAIT = 5.0


class ChatServer:
    """A loopback server that replays planned answers; use as a context manager."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._answers: deque[Answer] = deque()
        self._received: list[Received] = []
        self._open: set[socket.socket] = set()
        self._accepted = 0
        self.unplanned = 0
        self.closing = threading.Event()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self.httpd.daemon_threads = False
        self.httpd.block_on_close = True
        self.port = self.httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release waiting handlers, stop accepting, join every thread."""
        self.closing.set()
        self.httpd.shutdown()
        with self._lock:
            kept = list(self._open)
        for conn in kept:  # a kept-alive connection: its handler waits for a next request
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self.httpd.server_close()
        self._thread.join(timeout=MAX_WAIT)

    def plan(self, *answers: Answer) -> None:
        with self._lock:
            self._answers.extend(answers)

    def reset(self) -> None:
        with self._lock:
            self._answers.clear()
            self._received.clear()
            self.unplanned = 0

    @property
    def received(self) -> list[Received]:
        with self._lock:
            return list(self._received)

    @property
    def connections(self) -> int:
        """How many connections the server has accepted."""
        with self._lock:
            return self._accepted

    def opened(self, conn: socket.socket) -> None:
        with self._lock:
            self._accepted += 1
            self._open.add(conn)

    def finished(self, conn: socket.socket) -> None:
        with self._lock:
            self._open.discard(conn)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._answers)

    def take(self, request: Received) -> Answer | None:
        with self._lock:
            self._received.append(request)
            if self._answers:
                return self._answers.popleft()
            self.unplanned += 1
            return None


def _make_handler(server: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        timeout = MAX_WAIT  # bounds every read of a request
        protocol_version = "HTTP/1.1"  # keep-alive

        def setup(self) -> None:
            super().setup()
            server.opened(self.connection)

        def finish(self) -> None:
            server.finished(self.connection)
            super().finish()

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            headers = {k.lower(): v for k, v in self.headers.items()}
            answer = server.take(Received("POST", self.path, headers, body))
            if answer is None:
                answer = Answer(500, b'{"error": "no answer planned"}')
            if answer.delay:
                server.closing.wait(min(answer.delay, MAX_WAIT))
            if answer.drop:
                self.close_connection = True
                return
            try:
                if answer.dribble or answer.continues or answer.cut_body is not None:
                    self._misbehave(answer)
                else:
                    self._send(answer)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client gave up first

        def do_CONNECT(self) -> None:
            headers = {k.lower(): v for k, v in self.headers.items()}
            server.take(Received("CONNECT", self.path, headers, b""))
            self.send_error(403, "no tunnels here")

        def _paced(self, data: bytes, pause: float) -> bool:
            """Write ``data`` one byte every ``pause`` seconds; False when the
            server closed meanwhile."""
            for i in range(len(data)):
                if server.closing.wait(min(pause, MAX_WAIT)):
                    return False
                self.wfile.write(data[i : i + 1])
                self.wfile.flush()
            return True

        def _misbehave(self, answer: Answer) -> None:
            self.close_connection = True
            for _ in range(answer.continues):
                if server.closing.wait(min(answer.pause, MAX_WAIT)):
                    return
                self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                self.wfile.flush()
            payload = answer.payload()
            head = (
                f"HTTP/1.1 {answer.status} Answer\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
            ).encode("ascii")
            if answer.dribble:
                if not self._paced(head, answer.dribble):
                    return
            else:
                self.wfile.write(head)
            body = payload if answer.cut_body is None else payload[: answer.cut_body]
            self.wfile.write(body)
            self.wfile.flush()

        def _send(self, answer: Answer) -> None:
            payload = answer.payload()
            self.send_response(answer.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.end_headers()
            if not answer.trickle:
                self.wfile.write(payload)
                return
            self.wfile.flush()
            for i in range(0, len(payload), 8):
                if server.closing.wait(min(answer.trickle, MAX_WAIT)):
                    return
                self.wfile.write(payload[i : i + 8])
                self.wfile.flush()

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output quiet

    return Handler
