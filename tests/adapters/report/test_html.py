"""The report page: one self-contained document that names no other
resource, escapes every text a log brings, and shows a bad log's first bad
event with its rule."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest

from planfold.adapters.provenance import ForkProvenance
from planfold.adapters.report.html import render_coverage, render_report
from planfold.adapters.report.model import BadEvent, Coverage, build_report, with_fork_record
from planfold.kernel.log import Event
from tests.adapters.report.report_logs import demo_events, demo_session, gated_events

HOSTILE = '<script>alert("x")</script>&<img src=x onerror=alert(1)>\'"'


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Event, ...]:
    return demo_events(demo_session(tmp_path_factory.mktemp("html")))


class _Tags(HTMLParser):
    """Every start tag and its attributes, and the text of every script."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self.scripts += tag == "script"


def _parsed(page: str) -> _Tags:
    parser = _Tags()
    parser.feed(page)
    parser.close()
    return parser


def _hostile_log() -> Iterable[tuple[int | None, Event]]:
    events = [
        Event(1, "turn/start", 10, {"turn": 1}),
        Event(2, "user/message", 11, {"text": HOSTILE, "source": None}),
        Event(3, "request/header", 12, {"turn": 1, "step": 1, "plan_mode": False}),
        Event(4, "tool/call", 13, {"call_id": HOSTILE, "tool": HOSTILE, "arguments": {HOSTILE: HOSTILE}}),
        Event(5, "tool/refused", 14, {"call_id": HOSTILE, "tool": HOSTILE, "code": "not-offered",
                                      "reason": HOSTILE, "phase": "build_bootstrap"}),
        Event(6, "assistant/message", 15, {"text": HOSTILE, "source": None}),
        Event(7, "goal/change", 16, {"version": 1, "operation": "create", "goal": {
            "id": HOSTILE, "revision": 1, "objective": "x" + HOSTILE, "phase": "active", "max_rounds": 3,
            "blocked_reason": None}, "rounds_started": 0, "created_at": 16, "updated_at": 16}),
        Event(8, "turn/end", 17, {"turn": 1}),
    ]
    return ((None, e) for e in events)


def test_every_text_from_the_log_is_escaped() -> None:
    report = with_fork_record(build_report(HOSTILE, _hostile_log()), ForkProvenance(HOSTILE, 3, HOSTILE))
    assert report.ok and report.events == 8
    page = render_report(report)
    assert HOSTILE not in page
    assert "<img" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    tags = _parsed(page)
    assert tags.scripts == 1  # the page's own, and no other
    assert not [t for t, attrs in tags.tags if any(name.startswith("on") for name in attrs)]


def test_the_page_names_no_resource_outside_itself(demo: tuple[Event, ...]) -> None:
    page = render_report(build_report("demo-1", ((None, e) for e in demo)))
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    for tag, attrs in _parsed(page).tags:
        assert "src" not in attrs, tag
        href = attrs.get("href")
        assert href is None or href.startswith("#"), (tag, href)
    outside = set(re.findall(r"https?://[^\s\"'<>)]+", page))
    assert outside == {"http://www.w3.org/2000/svg"}  # the SVG namespace name, never fetched
    assert "@import" not in page and "url(http" not in page
    assert "Content-Security-Policy" in page and "default-src 'none'" in page


def test_the_page_shows_what_an_auditor_reads_first(demo: tuple[Event, ...]) -> None:
    page = render_report(build_report("demo-1", ((None, e) for e in demo)))
    for text in ("passes the strict replay", "Timeline", "Turn 4", "Plan revisions", "Reviews", "Verification",
                 "Goal", "State machines", "not-offered", "by the reviewer, answering exit_plan_mode call c3",
                 "3 / 3", "system"):
        assert text in page, text
    assert page.count('class="machine"') == 4
    assert 'id="seq-16"' in page and 'href="#seq-16"' in page


def test_a_bad_log_page_names_its_first_bad_seq_the_rule_and_the_event(demo: tuple[Event, ...]) -> None:
    bad = Event(30, "request/header", demo[29].at, {"turn": 1, "step": 6, "plan_mode": True})
    page = render_report(build_report("demo-1", ((None, e) for e in (*demo[:29], bad))))
    assert "BAD LOG at seq 30" in page and "header-mismatch" in page
    assert 'id="bad-event"' in page and "request/header" in page and "&quot;plan_mode&quot;: true" in page


def test_a_forked_session_shows_where_it_came_from_and_an_original_one_shows_nothing(
    demo: tuple[Event, ...],
) -> None:
    records = [(None, e) for e in demo[:10]]
    assert "forked from" not in render_report(build_report("demo-1", iter(records)))
    report = with_fork_record(build_report("fork", iter(records)), ForkProvenance("demo-1", 10, "abc123"))
    forked = render_report(report)
    assert "forked from" in forked and "abc123" in forked and "at seq 10" in forked
    mismatch = render_report(replace(report, bad=BadEvent(None, None, "provenance-mismatch", "hash differs")))
    assert "BAD LOG at its provenance" in mismatch and "fold cleanly" in mismatch


def test_the_coverage_page_lists_each_session_and_the_transitions_of_all(
    demo: tuple[Event, ...], tmp_path: Path
) -> None:
    coverage = Coverage("db.sqlite")
    coverage.add(build_report("one", ((None, e) for e in demo)))
    coverage.add(build_report(HOSTILE, ((None, e) for e in demo)))
    page = render_coverage(coverage.finish())
    assert HOSTILE not in page and "2" in page and "<code>one</code>#16" in page
    assert "every session passes the audit" in page and page.count('class="machine"') == 4


def test_a_long_stretch_is_one_line_of_counts_with_its_seqs_and_verdicts() -> None:
    report = build_report("long", ((None, e) for e in gated_events(8_000)))
    page = render_report(report)
    line = re.search(r'class="stretch">(… [\d,]+ entries left out \([^<]*)<', page)
    assert line is not None
    assert re.match(r"… [\d,]+ entries left out \([\d,]+ events, seq [\d,]+–[\d,]+\): [\d,]+ tool calls "
                    r"\([\d,]+ allowed; [\d,]+ refused: not-offered [\d,]+, read-only-phase [\d,]+; [\d,]+ warned: "
                    r"advisory-write [\d,]+\) …$", line.group(1)), line.group(1)


ACTING = "evil\u202etxt.sh \u2066x\u2069 \u200e\u200f\u061c \x00\x1b[2J\x07 \x85\x9b"
ACTING_SEEN = "evil\\u202etxt.sh \\u2066x\\u2069 \\u200e\\u200f\\u061c \\x00\\x1b[2J\\x07 \\x85\\x9b"


def _acting_log(text: str, ident: str) -> Iterable[tuple[int | None, Event]]:
    events = [
        Event(1, "turn/start", 10, {"turn": 1}),
        Event(2, "user/message", 11, {"text": text, "source": None}),
        Event(3, "request/header", 12, {"turn": 1, "step": 1, "plan_mode": False}),
        Event(4, "tool/call", 13, {"call_id": ident, "tool": "write_file", "arguments": {"path": text}}),
        Event(5, "tool/refused", 14, {"call_id": ident, "tool": "write_file", "code": "not-offered",
                                      "reason": text, "phase": "build_bootstrap"}),
        Event(6, "assistant/message", 15, {"text": text, "source": None}),
        Event(7, "turn/end", 17, {"turn": 1}),
    ]
    return ((None, e) for e in events)


def test_control_and_bidirectional_characters_are_shown_as_marked_escapes() -> None:
    page = render_report(build_report("s" + ACTING, _acting_log(ACTING, "c" + ACTING)))
    assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]", page)
    assert '<span class="esc">\\u202e</span>' in page and '<span class="esc">\\x00\\x1b</span>' in page
    assert "<title>planfold report: s" + ACTING_SEEN.replace("&", "&amp;") in page  # no markup in a title
    text = re.sub(r"<[^>]+>", "", page)
    assert text.count(ACTING_SEEN) >= 3  # the message, the reply and the tool's argument


def test_a_long_id_is_shortened_and_its_full_text_is_one_click_away() -> None:
    long_id = "id-" + "x" * 100_000
    report = build_report(long_id, _acting_log("hello", long_id))
    page = render_report(report)
    title = re.search("<title>(.*?)</title>", page)
    assert title is not None and len(title.group(1)) < 100
    h1 = re.search("<h1>(.*?)</h1>", page)
    assert h1 is not None and len(h1.group(1)) < 200
    assert '<details class="long-id"><summary><code>id-xxxxxxxx' in page and "(100,003 characters)" in page
    assert f'<code class="full">{long_id}</code>' in page


def test_the_policy_allows_only_the_page_s_own_style_and_script_by_their_hashes(demo: tuple[Event, ...]) -> None:
    import base64  # noqa: PLC0415
    import hashlib  # noqa: PLC0415

    page = render_report(build_report("demo-1", ((None, e) for e in demo)))
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert policy is not None and "unsafe" not in policy.group(1) and "default-src 'none'" in policy.group(1)
    for tag, directive in (("style", "style-src"), ("script", "script-src")):
        bodies = re.findall(f"<{tag}>(.*?)</{tag}>", page, re.DOTALL)
        assert len(bodies) == 1
        digest = base64.b64encode(hashlib.sha256(bodies[0].encode("utf-8")).digest()).decode("ascii")
        assert f"{directive} 'sha256-{digest}';" in policy.group(1)
    assert " style=" not in page  # an inline style attribute would need 'unsafe-inline'
