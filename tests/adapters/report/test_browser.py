"""The demo's report in a real browser (headless Chromium): nothing leaves
the page, no script error is logged, every diagram renders, and choosing a
transition, by mouse or keyboard, shows the events that took it. On a
machine without Chromium (or Playwright) they are skipped, saying what to
install; CI installs it and sets ``PLANFOLD_REQUIRE_CHROMIUM``, under which
they fail instead (``tests.system_programs``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from planfold.adapters.report.html import render_report
from planfold.adapters.report.model import build_report
from planfold.kernel.log import Event
from tests.adapters.report.browser import demo_report, edge_id, launch, open_page, screenshot
from tests.adapters.report.report_logs import gated_events
from tests.system_programs import chromium as system_chromium

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = pytest.mark.usefixtures("chromium")


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    system_chromium()  # skipped, or failed where the run requires it, without one
    with launch() as browser:
        yield browser


@pytest.fixture(scope="module")
def page_html(tmp_path_factory: pytest.TempPathFactory) -> str:
    return demo_report(tmp_path_factory.mktemp("browser"))


def test_the_report_sends_no_request_and_logs_no_error(chromium: Browser, page_html: str) -> None:
    opened = open_page(chromium, page_html)
    page = opened.page
    assert page.title() == "planfold report: demo-1"
    # Every event's anchor and every diagram's script ran, and nothing asked the network.
    page.locator("#machine-goal g.edge.taken text").first.click()
    assert opened.requests == [] and opened.errors == []
    assert page.evaluate("document.querySelectorAll('img, link, iframe, object, embed').length") == 0


def test_every_diagram_renders_with_its_states_and_edges(chromium: Browser, page_html: str) -> None:
    page = open_page(chromium, page_html).page
    svgs = page.locator("svg.machine")
    assert svgs.count() == 4
    for index in range(4):
        svg = svgs.nth(index)
        box = svg.bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 200
        states = svg.locator("g.node.state path")
        assert states.count() >= 4
        for n in range(states.count()):
            rect = states.nth(n).bounding_box()
            assert rect is not None and rect["width"] > 20 and rect["height"] > 10
        taken = svg.locator("g.edge.taken path")
        assert taken.count() >= 1
        for n in range(taken.count()):
            line = taken.nth(n).bounding_box()
            assert line is not None and line["width"] + line["height"] > 5


def test_choosing_a_transition_shows_the_events_that_took_it(chromium: Browser, page_html: str) -> None:
    page = open_page(chromium, page_html).page
    detail = page.locator("#machine-plan_status .detail")
    assert detail.inner_text().strip() == ""
    approve = edge_id(page, "plan_status", "approve")
    page.locator(f'#machine-plan_status g.edge[data-edge="{approve}"] text').click()
    assert "draft → approved [approve]: 1 time(s)" in detail.inner_text()
    assert detail.locator("a").get_attribute("href") == "#seq-16"
    assert page.locator(f"#{approve}-row").get_attribute("class") == "taken chosen"
    verify = edge_id(page, "plan_status", "verify (build)")
    page.locator(f'#machine-plan_status g.edge[data-edge="{verify}"]').focus()
    page.keyboard.press("Enter")
    text = detail.inner_text()
    assert "3 time(s)" in text and "31, 64, 76" in text and "approve" not in text
    detail.locator("a", has_text="64").click()
    assert page.evaluate("location.hash") == "#seq-64"
    assert page.locator("#seq-64").is_visible()


def test_the_page_reads_without_script_and_prints(chromium: Browser, page_html: str) -> None:
    context = chromium.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.set_content(page_html, wait_until="load")
        assert page.locator("svg.machine").count() == 4
        assert not page.locator("#machine-plan_status .hint").is_visible()  # it speaks of choosing: script only
        label = page.locator("td:nth-child(3)", has_text=re.compile("^approve$"))
        row = page.locator("#machine-plan_status tr.taken").filter(has=label)
        assert row.count() == 1 and row.locator("a").get_attribute("href") == "#seq-16"
        assert page.locator("#seq-16").is_visible() and page.locator("#timeline .block").count() == 8
        page.emulate_media(media="print")
        assert not page.locator("#machine-plan_status .detail").is_visible()
        assert page.locator("svg.machine").first.is_visible()
        pdf = page.pdf(format="A4")
        assert pdf.startswith(b"%PDF") and len(pdf) > 50_000
    finally:
        context.close()


def test_the_coverage_page_of_a_database_renders_and_names_each_sessions_events(
    chromium: Browser, tmp_path: Path
) -> None:
    opened = open_page(chromium, demo_report(tmp_path, runs=2))
    page = opened.page
    assert page.locator("svg.machine").count() == 4
    for index in range(4):
        box = page.locator("svg.machine").nth(index).bounding_box()
        assert box is not None and box["width"] > 300
    approve = edge_id(page, "plan_status", "approve")
    page.locator(f'#machine-plan_status g.edge[data-edge="{approve}"] text').click()
    text = page.locator("#machine-plan_status .detail").inner_text()
    assert "2 time(s)" in text and "demo-1#16, demo-2#16" in text
    assert opened.requests == [] and opened.errors == []


def test_a_100k_event_session_opens_with_its_long_stretches_summarised(chromium: Browser) -> None:
    report = build_report("long", ((None, e) for e in gated_events(100_000)))
    html = render_report(report)
    assert len(html) < 1_000_000  # bounded: the page does not grow with the log
    opened = open_page(chromium, html)
    page = opened.page
    stretch = page.locator("#timeline > p.stretch")
    assert stretch.count() == 1 and "turns and stretches between turns left out" in stretch.inner_text()
    assert page.locator("svg.machine").count() == 4 and opened.errors == [] and opened.requests == []


def test_the_readme_screenshot_is_made_from_the_demo_report(
    chromium: Browser, page_html: str, tmp_path: Path
) -> None:
    out = tmp_path / "report.png"
    screenshot(chromium, page_html, out)
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


def test_the_request_guard_catches_a_page_that_asks_the_network(chromium: Browser) -> None:
    opened = open_page(chromium, '<img src="http://example.invalid/x.png"><script>console.error("boom")</script>')
    assert opened.requests == ["http://example.invalid/x.png"] and "boom" in opened.errors


SCRIPT = "<script>window.pwned=1</script><img src=x onerror=\"window.pwned=2\">"
ACTING = "evil\u202etxt.sh \u2066x\u2069 \u200e\u200f\u061c \x00\x1b[2J\x07 \x85"
ACTING_SEEN = "evil\\u202etxt.sh \\u2066x\\u2069 \\u200e\\u200f\\u061c \\x00\\x1b[2J\\x07 \\x85"


def _hostile_page(text: str, ident: str) -> str:
    events = [
        Event(1, "turn/start", 10, {"turn": 1}),
        Event(2, "user/message", 11, {"text": text, "source": None}),
        Event(3, "request/header", 12, {"turn": 1, "step": 1, "plan_mode": False}),
        Event(4, "tool/call", 13, {"call_id": ident, "tool": text[:200], "arguments": {"path": text}}),
        Event(5, "tool/refused", 14, {"call_id": ident, "tool": text[:200], "code": "not-offered",
                                      "reason": text, "phase": "build_bootstrap"}),
        Event(6, "assistant/message", 15, {"text": text, "source": None}),
        Event(7, "goal/change", 16, {"version": 1, "operation": "create", "goal": {
            "id": ident, "revision": 1, "objective": text, "phase": "active", "max_rounds": 3,
            "blocked_reason": None}, "rounds_started": 0, "created_at": 16, "updated_at": 16}),
        Event(8, "turn/end", 17, {"turn": 1}),
    ]
    return render_report(build_report(ident, ((None, e) for e in events)))


def _width(page: Page) -> tuple[int, int]:
    scroll, window = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    return int(scroll), int(window)


def test_a_hostile_log_shows_its_acting_characters_as_escapes_and_runs_no_script(chromium: Browser) -> None:
    opened = open_page(chromium, _hostile_page(ACTING + SCRIPT, "call-" + ACTING))
    page = opened.page
    text = page.locator("body").inner_text()
    assert ACTING_SEEN in text and "\u202e" not in text and "\x1b" not in text
    assert page.locator(".esc", has_text="\\u202e").count() >= 3
    assert page.evaluate("window.pwned") is None
    assert opened.requests == [] and opened.errors == []


@pytest.mark.parametrize(("token", "ident"), [("A" * 1_000_000, "s"), ("short", "i" * 100_000)])
def test_the_page_is_never_wider_than_its_window(chromium: Browser, token: str, ident: str) -> None:
    for width in (1400, 600):
        opened = open_page(chromium, _hostile_page(token, ident), width=width)
        page = opened.page
        scroll, window = _width(page)
        assert scroll <= window
        for summary in page.locator("details.long-id summary").all()[:3]:
            summary.click()
        scroll, window = _width(page)
        assert scroll <= window
        assert opened.requests == [] and opened.errors == []
        page.close()


#: Every text box of each diagram, in the picture's own units (getBBox).
_TEXT_BOXES = """svg => Array.from(svg.querySelectorAll('text')).map(t => {
  const b = t.getBBox();
  return [t.textContent, b.x, b.y, b.width, b.height];
})"""


def test_no_two_labels_of_any_diagram_overlap(chromium: Browser, page_html: str) -> None:
    page = open_page(chromium, page_html).page
    svgs = page.locator("svg.machine")
    assert svgs.count() == 4
    for index in range(4):
        boxes = svgs.nth(index).evaluate(_TEXT_BOXES)
        assert len(boxes) >= 4
        for i, (a, ax, ay, aw, ah) in enumerate(boxes):
            assert aw > 0 and ah > 0, a
            for b, bx, by, bw, bh in boxes[i + 1 :]:
                apart = ax + aw <= bx + 0.5 or bx + bw <= ax + 0.5 or ay + ah <= by + 0.5 or by + bh <= ay + 0.5
                assert apart, f"{a!r} overlaps {b!r} in diagram {index}"


def test_the_policy_lets_the_page_s_style_and_script_run_and_nothing_else(
    chromium: Browser, page_html: str
) -> None:
    opened = open_page(chromium, page_html)
    page = opened.page
    assert page.evaluate("getComputedStyle(document.body).maxWidth") == "1180px"  # the style sheet applies
    assert page.locator("#machine-plan_status .hint").is_visible()  # the script ran
    assert opened.errors == [] and opened.requests == []
    smuggled = page_html.replace("</body>", "<script>window.smuggled=1</script><style>body{color:red}</style></body>")
    opened = open_page(chromium, smuggled)
    assert opened.page.evaluate("window.smuggled") is None
    assert opened.page.evaluate("getComputedStyle(document.body).color") != "rgb(255, 0, 0)"
    assert any("Content Security Policy" in error for error in opened.errors)
