"""The usage a runtime records on its assistant messages (latency, prompt,
completion and cached tokens) comes back unchanged from every store, after a
reopen, and through export and import."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from planfold.adapters.cli.main import main
from planfold.adapters.codec import decode_jsonl
from planfold.adapters.llm.model import ChatResponse, TokenCount, ToolCall, Usage
from planfold.adapters.llm.scripted import ScriptedClient
from planfold.adapters.runtime.toolset import open_runtime
from planfold.adapters.runtime.workspace import Workspace
from planfold.adapters.store.base import Store
from planfold.adapters.store.memory import MemoryStore
from planfold.adapters.store.postgres import PostgresStore
from planfold.adapters.store.sqlite import SqliteStore
from planfold.kernel.log import ASSISTANT_MESSAGE, USAGE_VERSION, Event, ModelUsage, read_assistant_message
from planfold.kernel.session import fold_session
from tests.runtime_helpers import FILES, ticking

REPLIES = (
    ChatResponse(
        None,
        (ToolCall.of("c1", "read_file", {"path": "README.md"}),),
        "tool_calls",
        Usage(TokenCount(1200), TokenCount(35), TokenCount(1235), TokenCount(1024)),
        latency_ms=840,
    ),
    ChatResponse("README.md is a demo.", (), "stop", Usage(TokenCount(1300), TokenCount(12)), latency_ms=95),
    ChatResponse("No usage from this server.", (), "stop"),
)
RECORDED = [
    ModelUsage(USAGE_VERSION, 840, 1200, 35, 1024),
    ModelUsage(USAGE_VERSION, 95, 1300, 12, None),
    None,
]


def _usages(events: tuple[Event, ...]) -> list[ModelUsage | None]:
    return [read_assistant_message(e.payload).usage for e in events if e.kind == ASSISTANT_MESSAGE]


def _run_session(store: Store) -> tuple[Event, ...]:
    """Two turns on ``store``: a tool call and an answer, then a reply without usage."""
    session = open_runtime(
        store, "s1", ScriptedClient.replies(*REPLIES), None, Workspace(dict(FILES)), clock=ticking()
    )
    session.runtime.submit("What is README.md?")
    session.runtime.submit("Thanks.")
    return store.read("s1")


StoreOpener = Callable[[], Store]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreOpener]:
    if request.param == "memory":
        memory = MemoryStore()
        yield lambda: memory
    elif request.param == "sqlite":
        path = tmp_path / "usage.sqlite"
        yield lambda: SqliteStore(path)
    else:
        url = request.getfixturevalue("pg_url")
        yield lambda: PostgresStore(url, pool_size=1)


def test_the_usage_of_each_model_call_comes_back_from_every_store_and_after_a_reopen(opener: StoreOpener) -> None:
    store = opener()
    written = _run_session(store)
    assert _usages(written) == RECORDED
    if not isinstance(store, MemoryStore):  # the memory store lives as long as its process
        store.close()
    again = opener()
    try:
        read = again.read("s1")
        assert read == written and _usages(read) == RECORDED
        assert again.load("s1") == fold_session(read)
        assert again.audit("s1").ok
    finally:
        again.close()


def _cli(*argv: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    assert main(list(argv), out=out, err=err, stdin=io.BytesIO()) == 0, err.getvalue()
    return out.getvalue()


def test_the_usage_survives_export_and_import_into_sqlite_and_postgresql(tmp_path: Path, pg_url: str) -> None:
    source = tmp_path / "source.sqlite"
    store = SqliteStore(source)
    written = _run_session(store)
    store.close()
    log = tmp_path / "s1.jsonl"
    _cli("export", "--db", str(source), "--session", "s1", "-o", str(log))
    exported = tuple(decode_jsonl(log.read_bytes()))
    assert exported == written and _usages(exported) == RECORDED
    for target in (str(tmp_path / "copy.sqlite"), pg_url):
        _cli("import", str(log), "--db", target, "--session", "copy")
        copy = SqliteStore(Path(target)) if not target.startswith("postgresql") else PostgresStore(target, pool_size=1)
        try:
            assert copy.read("copy") == written
        finally:
            copy.close()
