"""The ``planfold serve`` page (docs/serve.md) cannot drift: its method
table is the protocol's method table, and its exchange is what the server
answers."""

from __future__ import annotations

import re
from pathlib import Path

from planfold.adapters.cli.serve import ticks
from planfold.adapters.serve.protocol import METHODS
from planfold.adapters.serve.server import Server
from planfold.adapters.store.memory import MemoryStore

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "serve.md"


def _section() -> str:
    return PAGE.read_text(encoding="utf-8")


def test_the_serve_page_lists_every_method_with_its_summary() -> None:
    rows = re.findall(r"^\| `([^`]+)` \| (.+) \|$", _section(), re.MULTILINE)
    expected = [(m.name, m.summary) for m in METHODS.values()]
    assert rows == [*expected, ("rpc.discover", "The OpenRPC document of the protocol.")]


def test_the_serve_page_exchange_is_what_the_server_answers() -> None:
    block = re.search(r"^```jsonrpc\n(.*?)^```$", _section(), re.MULTILINE | re.DOTALL)
    assert block is not None
    lines = block.group(1).splitlines()
    sent = [line[4:] for line in lines if line.startswith("--> ")]
    shown = [line[4:] for line in lines if line.startswith("<-- ")]
    assert len(sent) == len(shown) == len(lines) // 2 >= 5
    server = Server(MemoryStore(), ticks(1_000))
    answers = []
    for request in sent:
        answer = server.handle(request.encode())
        assert answer is not None
        answers.append(answer.decode())
    assert answers == shown
