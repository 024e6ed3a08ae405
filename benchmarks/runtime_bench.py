"""A runtime turn on a long session against the same turn on a short one.

Theory of operation
-------------------
A goal can drive a session for days; the runtime's own work per turn (the
pre-step flush, the request header, the request and its conversation, the
appends) must not grow with the history it continues. Two sessions are
built through the runtime itself (``open_runtime`` on a SQLite store with
``synchronous=normal``, so that building them is not a run of fsyncs), each
turn one human message answered by a model that replies with one line and
stops (``_OneLine``), until the logs hold ``small_events`` and
``mid_events`` events. Each session first runs one untimed turn (the log's
events read, the conversation read once), then both take turns running
``growth_appends`` more turns per repetition, and the user CPU time of the
process (``resource.getrusage``) per turn at 100k is held to at most 1.2
times that at 1k, as an append is. The request still carries the whole
conversation (the model is sent every message), but as a view of the
messages already read (``adapters.views.Prefix``), not a copy.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.harness import FamilyResult, Measurement, Scale, median, ratio, user_cpu
from planfold.adapters.llm.model import ChatRequest, ChatResponse
from planfold.adapters.runtime.toolset import Session, open_runtime
from planfold.adapters.runtime.workspace import Workspace
from planfold.adapters.store.sqlite import SqliteStore

__all__ = ["run_runtime_turns"]

TURNS = "runtime-turn"
SESSION = "bench-runtime"


class _OneLine:
    """A model that answers every request with one line and stops."""

    def complete(self, request: ChatRequest) -> ChatResponse:
        return ChatResponse("Noted.", finish_reason="stop")



def _session(path: Path, events: int) -> tuple[SqliteStore, Session]:
    """A session of at least ``events`` events, built turn by turn."""
    store = SqliteStore(path, synchronous="normal")
    session = open_runtime(store, SESSION, _OneLine(), None, Workspace())
    while session.log.last_seq < events:
        session.runtime.run_turn("Carry on.")
    session.runtime.run_turn("Carry on.")  # steady state: events and conversation read
    return store, session


def run_runtime_turns(scale: Scale, workdir: Path) -> FamilyResult:
    """User CPU per runtime turn at ``mid_events`` of history against ``small_events``."""
    workdir.mkdir(parents=True, exist_ok=True)
    sizes = {"small": scale.small_events, "mid": scale.mid_events}
    built = {name: _session(workdir / f"turns-{name}.db", count) for name, count in sizes.items()}
    samples: dict[str, list[float]] = {name: [] for name in sizes}
    per = scale.growth_appends
    try:
        for _ in range(scale.growth_repeats):
            for name, (_, session) in built.items():
                before = user_cpu()
                for _ in range(per):
                    session.runtime.run_turn("Carry on.")
                samples[name].append((user_cpu() - before) / per * 1e6)
    finally:
        for store, _ in built.values():
            store.close()
    found = {
        name: Measurement(
            TURNS,
            f"user CPU per runtime turn, {sizes[name]:,}-event session",
            "us",
            median(s),
            tuple(s),
            f"{per} turns per repetition (a human message, one request, a one-line reply), SQLite normal",
        )
        for name, s in samples.items()
    }
    ratios = (
        ratio(
            TURNS,
            f"user CPU per runtime turn: {sizes['mid']:,} events / {sizes['small']:,} events",
            found["mid"],
            found["small"],
            direction="at-most",
            bound=1.2,
            how="user CPU microseconds per turn, median of the interleaved repetitions' ratios",
        ),
    )
    return FamilyResult(TURNS, tuple(found.values()), ratios)
