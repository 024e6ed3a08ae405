"""Every event in the page, in a real browser (headless Chromium): each
event of a 100k-event session found by search and opened in full, the state
at any seq equal to the kernel's fold there, a fork's and its source's pages
linking each other, events past the page's budget named with the command
that shows them, and all of it without a console error or a request."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from planfold.adapters.cli.demo import run_demo
from planfold.adapters.cli.main import main as planfold
from planfold.adapters.report.events import payload_text, state_of
from planfold.adapters.report.html import render_report
from planfold.adapters.report.model import build_report
from planfold.kernel.log import Event
from planfold.kernel.session import fold_session
from tests.adapters.report.browser import launch, open_page
from tests.adapters.report.report_logs import demo_events, gated_events
from tests.system_programs import chromium as system_chromium

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = pytest.mark.usefixtures("chromium")


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    system_chromium()
    with launch() as browser:
        yield browser


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("events") / "demo.sqlite"
    run_demo(str(db), io.StringIO())
    return db


def _report(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    status = planfold(["report", *argv], out=out, err=err)
    return status, out.getvalue()


def _loaded(page: Page) -> int:
    return int(page.evaluate("planfoldEvents.load().then(events => events.length)"))


def _search(page: Page, text: str) -> None:
    page.evaluate("document.getElementById('event-count').textContent = ''")
    page.fill("#event-text", text)
    page.click("#event-search button[type=submit]")
    page.wait_for_function("document.getElementById('event-count').textContent !== ''")


def test_every_event_of_a_100k_event_session_is_found_and_opened_in_full(chromium: Browser) -> None:
    events = list(gated_events(100_000))
    opened = open_page(chromium, render_report(build_report("long", ((None, e) for e in events))))
    page = opened.page
    assert _loaded(page) == 100_000
    # every event is in the page, payload whole, under its seq and kind
    payloads = page.evaluate("planfoldEvents.search({}).map(e => e.payload)")
    assert payloads == [payload_text(e.payload) for e in events]
    kinds = page.evaluate("planfoldEvents.search({}).map(e => e.seq)")
    assert kinds == [e.seq for e in events]
    # and each is found by what it says: a call's id finds its call, refusal and result
    for seq in (1, 4_321, 50_000, 77_777, 100_000):
        event = events[seq - 1]
        _search(page, f"#{seq}")
        assert page.locator("#event-results tr").count() == 2  # the heading and the event
        page.click(f"#event-results button[data-seq='{seq}']")
        assert page.locator("#event-open pre.payload").inner_text() == payload_text(event.payload)
        assert page.locator("#event-open h3").inner_text() == f"Event seq {seq}"
    _search(page, "r3-517")
    found = page.evaluate("Array.from(document.querySelectorAll('#event-results button')).map(b => +b.dataset.seq)")
    assert found == [e.seq for e in events if "r3-517" in json.dumps(e.payload)]
    assert opened.requests == [] and opened.errors == []


def test_the_filters_find_what_the_log_says_by_kind_tool_rule_and_turn(chromium: Browser) -> None:
    events = list(gated_events(20_000))
    opened = open_page(chromium, render_report(build_report("long", ((None, e) for e in events))))
    page = opened.page
    _loaded(page)
    page.select_option("#event-kind", label="tool/refused")
    page.select_option("#event-rule", label="not-offered")
    page.fill("#event-turn", "3")
    _search(page, "")
    turns = _turns(events)
    wanted = [e for e in events if e.kind == "tool/refused" and e.payload.get("code") == "not-offered"
              and turns[e.seq] == 3]
    assert page.locator("#event-count").inner_text() == f"{len(wanted)} of 20000 events match."
    assert len(wanted) == 500  # the wide turn's thousand refusals, half of them not-offered
    page.click("#event-more")
    assert page.locator("#event-results tr").count() == 401
    page.select_option("#event-kind", label="tool/call")
    page.select_option("#event-rule", label="any")
    page.select_option("#event-tool", label="read_file")
    page.fill("#event-turn", "")
    _search(page, "")
    calls = [e for e in events if e.kind == "tool/call" and e.payload.get("tool") == "read_file"]
    assert page.locator("#event-count").inner_text() == f"{len(calls)} of 20000 events match."
    assert opened.requests == [] and opened.errors == []


def _turns(events: list[Event]) -> dict[int, int | None]:
    """The turn each event belongs to (``None`` between turns), from the log itself."""
    turn: int | None = None
    out: dict[int, int | None] = {}
    for e in events:
        if e.kind == "turn/start":
            turn = int(str(e.payload["turn"]))
        out[e.seq] = turn
        if e.kind == "turn/end":
            turn = None
    return out


def _state(page: Page) -> list[str]:
    return [str(v) for v in page.eval_on_selector_all("#state-at dd", "dds => dds.map(d => d.textContent)")]


def _shown(state: list[object]) -> list[str]:
    return ["none" if v is None else ("; ".join(map(str, v)) or "none") if isinstance(v, list) else str(v)
            for v in state]


def test_the_state_at_every_seq_is_the_kernel_s_fold_there(chromium: Browser, demo_db: Path) -> None:
    events: list[Event] = list(demo_events(demo_db))
    status, html = _report("--db", str(demo_db), "--session", "demo-1")
    assert status == 0
    opened = open_page(chromium, html)
    page = opened.page
    _loaded(page)
    at_every = page.evaluate(f"Array.from({{length: {len(events) + 1}}}, (_, seq) => planfoldEvents.stateAt(seq))")
    for seq in range(len(events) + 1):
        assert at_every[seq] == state_of(fold_session(events[:seq])), seq
    assert {s[3] for s in at_every} >= {"draft", "approved", "executing", "completed"}
    for seq in (0, 16, 31, len(events)):
        page.fill("#state-seq", str(seq))
        page.click("#state-form button")
        page.wait_for_function("document.querySelectorAll('#state-at dd').length === 9")
        assert _state(page) == _shown(state_of(fold_session(events[:seq])))
    assert opened.requests == [] and opened.errors == []


def test_a_fork_and_its_source_link_each_other_and_each_turn_offers_its_fork_command(
    chromium: Browser, demo_db: Path, tmp_path: Path
) -> None:
    db = tmp_path / "lineage.sqlite"
    db.write_bytes(demo_db.read_bytes())
    assert planfold(["fork", "--db", str(db), "demo-1", "early", "--at", "20"], out=io.StringIO(),
                    err=io.StringIO()) == 0
    status, source = _report("--db", str(db), "--session", "demo-1")
    assert status == 0
    status, fork = _report("--db", str(db), "--session", "early")
    assert status == 0
    opened = open_page(chromium, fork)
    link = opened.page.locator("a.source-link")
    assert link.get_attribute("href") == "demo-1.html#ev-20" and link.inner_text() == "demo-1"
    assert opened.requests == [] and opened.errors == []
    opened = open_page(chromium, source)
    link = opened.page.locator("a.fork-link")
    assert link.count() == 1 and link.get_attribute("href") == "early.html" and link.inner_text() == "early"
    commands = opened.page.locator(".fork-cmd code").all_inner_texts()
    assert commands[0] == f"planfold fork --db {db} demo-1 NEW --turn 1" and len(commands) == 4
    assert opened.requests == [] and opened.errors == []


def test_a_payload_past_the_limit_names_the_command_and_around_embeds_it(chromium: Browser, demo_db: Path) -> None:
    status, html = _report("--db", str(demo_db), "--session", "demo-1", "--payload-limit", "40")
    assert status == 0
    opened = open_page(chromium, html)
    page = opened.page
    _loaded(page)
    page.evaluate("planfoldEvents.open(31)")
    text = page.locator("#event-open").inner_text()
    assert "not embedded" in text
    command = f"planfold report --db {demo_db} --session demo-1 -o demo-1.html --around 31"
    assert page.locator("#event-open code").inner_text() == command
    status, around = _report("--db", str(demo_db), "--session", "demo-1", "--payload-limit", "40", "--around", "31")
    assert status == 0
    opened = open_page(chromium, around)
    page = opened.page
    page.wait_for_selector("#event-open pre.payload")  # it opens at the seq asked for
    assert page.locator("#event-open h3").inner_text() == "Event seq 31"
    event = demo_events(demo_db)[30]
    assert page.locator("#event-open pre.payload").inner_text() == payload_text(event.payload)
    assert opened.requests == [] and opened.errors == []
