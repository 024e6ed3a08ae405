"""A report as one self-contained HTML page.

Theory of operation
-------------------
``render_report(report)`` and ``render_coverage(coverage)`` return the whole
page as one string: the style sheet, the script and every diagram (inline
SVG, laid out by ``adapters.report.svg``) are inside it, and it names no other resource, so it
opens offline and sends no request. Everything it says is in the markup
itself: the page reads the same with script turned off (each diagram has a
table beside it listing every transition with its count and the events that
took it), and prints (a print style sheet drops the interactive parts and
keeps sections whole where it can). The script only connects the two:
choosing an edge of a diagram (a click, or Enter on a focused edge) shows
that edge's row (its events, each a link to the event in the timeline) in
the box under the diagram and highlights the edge.

Every text that comes from a log (ids, messages, tool names, arguments,
rule details, plan contents) is escaped with ``html.escape`` where it is
written, attribute values included; the page has no inline event handlers
and embeds no data in its script.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable, Mapping
from html import escape
from typing import TypeVar

from ...kernel.graph import Edge, Graph
from ..provenance import ForkProvenance
from .machines import MACHINES, observable
from .model import (
    BadEvent,
    Block,
    CoverageReport,
    Entry,
    GoalChangeEntry,
    GoalEntry,
    Listing,
    MachineUse,
    Report,
    Review,
    Revision,
    SessionLine,
    Stretch,
    Summarised,
    Verification,
)
from .svg import DrawnEdge, layout_edges, render_svg
from .usage import render_usage

__all__ = ["render_coverage", "render_report"]

T = TypeVar("T", bound=Summarised)

_TITLES = {
    "plan_mode": "Plan mode (choices)",
    "plan_status": "Plan status",
    "runtime_phase": "Runtime phase",
    "goal": "Goal",
}

_STYLE = """
:root{--ink:#1d2330;--muted:#5b6478;--line:#d5dae3;--plan:#7b5cd6;--build:#2f8f6a;--bad:#c0392b;--warn:#b7791f;
--ok:#2f8f6a;--bg:#fff;--soft:#f4f6fa;--extra:#d35400}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:var(--bg);
margin:0 auto;max-width:1180px;padding:24px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:32px 0 8px;border-bottom:1px solid var(--line);
padding-bottom:4px}h3{font-size:15px;margin:20px 0 6px}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:12px 0}
.facts dt{color:var(--muted)}.facts dd{margin:0}
.verdict{display:inline-block;padding:2px 10px;border-radius:12px;font-weight:600}
.verdict.ok{background:#e3f4ec;color:var(--ok)}.verdict.bad{background:#fbe5e2;color:var(--bad)}
.badlog{border:2px solid var(--bad);border-radius:8px;padding:10px 14px;margin:12px 0;background:#fff7f6}
table{border-collapse:collapse;width:100%;margin:6px 0 10px}
th,td{text-align:left;vertical-align:top;padding:3px 8px;border-bottom:1px solid var(--line)}
th{font-weight:600;color:var(--muted);font-size:12.5px}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.tag{display:inline-block;padding:0 6px;border-radius:8px;font-size:12px;background:var(--soft)}
.tag.refused{background:#fbe5e2;color:var(--bad)}.tag.warned{background:#fdf1dc;color:var(--warn)}
.tag.allowed{background:#e3f4ec;color:var(--ok)}.tag.plan{background:#ece6fb;color:var(--plan)}
.tag.build{background:#e3f4ec;color:var(--build)}
.block{border:1px solid var(--line);border-radius:8px;padding:8px 12px;margin:10px 0;break-inside:avoid}
.block h3{margin:0 0 4px}
.bands{display:flex;height:10px;border-radius:5px;overflow:hidden;margin:4px 0 8px;background:var(--soft)}
.bands span{display:block;height:100%}.bands .plan{background:var(--plan)}.bands .build{background:var(--build)}
.stretch{color:var(--muted);font-style:italic;padding:6px 12px;border-left:3px solid var(--line);margin:8px 0}
.diff .add{color:var(--ok)}.diff .del{color:var(--bad)}.diff .chg{color:var(--warn)}
.meter{display:inline-block;width:160px;height:10px;background:var(--soft);border-radius:5px;vertical-align:middle;
overflow:hidden}.meter span{display:block;height:100%;background:var(--build)}
.machine-box{border:1px solid var(--line);border-radius:8px;padding:8px 12px;margin:12px 0;break-inside:avoid}
svg.machine{width:100%;max-width:920px;height:auto;display:block;margin:0 auto;background:#fcfcfe;border-radius:6px}
svg .state rect{fill:#fff;stroke:#9aa3b5;stroke-width:1.2}
svg .state.visited rect{stroke:var(--ink);stroke-width:2;fill:#eef2fb}
svg .state.initial rect{stroke-dasharray:none;stroke-width:2.5}
svg .state text{font:12px system-ui,sans-serif;fill:var(--ink)}
svg .edge .line{fill:none;stroke:#b8bfcc;stroke-width:1}
svg .edge .hit{fill:none;stroke:transparent;stroke-width:12;pointer-events:stroke}
svg .edge{cursor:pointer;outline:none}
svg .edge.taken .line{stroke:var(--ink)}
svg .edge.never .line{stroke-dasharray:5 4}
svg .edge.hidden .line{stroke:#d9dde5;stroke-dasharray:1 4}
svg .edge.extra .line{stroke:var(--extra);stroke-dasharray:8 3}
svg .edge:hover .line,svg .edge:focus .line,svg .edge.chosen .line{stroke:#1f6feb}
svg .head-taken{fill:var(--ink)}svg .head-never{fill:#b8bfcc}svg .head-hidden{fill:#d9dde5}
svg .head-extra{fill:var(--extra)}
svg text.label{font:10.5px system-ui,sans-serif;fill:var(--muted);paint-order:stroke;stroke:#fff;stroke-width:3px;
cursor:pointer}
svg text.label.taken{fill:var(--ink);font-weight:600}svg text.label.extra{fill:var(--extra)}
svg text.label.hidden{fill:#aab1bf}
.legend{color:var(--muted);font-size:12.5px}
.detail{min-height:2.2em;padding:6px 10px;background:var(--soft);border-radius:6px;margin:6px 0}
tr.chosen td{background:#e7f0ff}
tr.never td{color:var(--muted)}tr.hidden td{color:#aab1bf}
a{color:#1f5fbf}
@media print{body{max-width:none;padding:0;font-size:11px}.detail,.hint{display:none}
a{color:inherit;text-decoration:none}h2{break-after:avoid}.block,.machine-box,table{break-inside:auto}
svg.machine{max-height:none}}
"""

_SCRIPT = """
(function(){
  function choose(id){
    if(!id){return;}
    var row=document.getElementById(id+'-row');
    if(!row){return;}
    var box=row.closest('.machine-box');
    box.querySelectorAll('.chosen').forEach(function(el){el.classList.remove('chosen');});
    box.querySelectorAll('[data-edge="'+id+'"]').forEach(function(el){el.classList.add('chosen');});
    row.classList.add('chosen');
    var detail=box.querySelector('.detail');
    detail.textContent='';
    var head=document.createElement('strong');
    head.textContent=row.cells[0].textContent+' \\u2192 '+row.cells[1].textContent+' ['+row.cells[2].textContent+']: '
      +row.cells[3].textContent+' time(s). ';
    detail.appendChild(head);
    var events=row.cells[4].cloneNode(true);
    var span=document.createElement('span');
    span.className='events';
    while(events.firstChild){span.appendChild(events.firstChild);}
    detail.appendChild(span);
  }
  document.addEventListener('click',function(e){
    var el=e.target.closest('[data-edge]');
    if(el){choose(el.getAttribute('data-edge'));}
  });
  document.addEventListener('keydown',function(e){
    if(e.key!=='Enter'&&e.key!==' '){return;}
    var el=e.target.closest&&e.target.closest('[data-edge]');
    if(el){e.preventDefault();choose(el.getAttribute('data-edge'));}
  });
  document.querySelectorAll('.hint').forEach(function(el){el.hidden=false;});
})();
"""


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def _time(ms: int | None) -> str:
    if ms is None:
        return "—"
    try:
        moment = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)
    except (OverflowError, OSError, ValueError):
        return f"{ms} ms"
    return moment.strftime("%Y-%m-%d %H:%M:%S") + f".{ms % 1000:03d} UTC"


def _duration(ms: int) -> str:
    seconds = ms / 1000
    if seconds < 120:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {secs:02d} s"


def _offset(ms: int, first: int | None) -> str:
    return "" if first is None else "+" + _duration(max(0, ms - first))


def _page(title: str, body: Iterable[str]) -> str:
    return "".join(
        [
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
            # Nothing may leave the page: no fetch, no image, no font, no frame.
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
            "script-src 'unsafe-inline'; img-src data:\">",
            f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>",
            *body,
            f"<script>{_SCRIPT}</script></body></html>\n",
        ]
    )


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{_e(code)} {n:,}" for code, n in sorted(counts.items())) or "none"


def _listing(
    listing: Listing[T],
    row: Callable[[T], str],
    stretch: Callable[[Stretch], str],
    wrap: tuple[str, str] = ("", ""),
    empty: str | None = None,
) -> str:
    """The rows of ``listing`` inside ``wrap``, the stretch left out between
    its head and its tail; ``empty`` (when given) instead for a listing that
    holds nothing at all."""
    if empty is not None and not listing.head and not listing.tail and listing.left_out is None:
        return empty
    out = [wrap[0], *(row(item) for item in listing.head)]
    if listing.left_out is not None:
        out.append(stretch(listing.left_out))
    out.extend(row(item) for item in listing.tail)
    out.append(wrap[1])
    return "".join(out)


def _stretch_text(s: Stretch, noun: str) -> str:
    """``… 9,112 turns left out (92,646 events of turns 21–7,614, seq 7,238–99,883): 22,782 tool calls (…) …``."""
    facts = []
    if s.events:
        facts.append(f"{s.events:,} events")
        if s.first_turn is not None:
            turns = f"turn {s.first_turn:,}" if s.first_turn == s.last_turn else (
                f"turns {s.first_turn:,}–{s.last_turn:,}")
            facts[-1] += f" of {turns}"
    if s.first_seq is not None and s.last_seq is not None:
        facts.append(f"seq {s.first_seq:,}" if s.first_seq == s.last_seq else f"seq {s.first_seq:,}–{s.last_seq:,}")
    text = f"… {s.items:,} {noun} left out" + (f" ({', '.join(facts)})" if facts else "")
    parts = [s.calls_text()] if s.calls else []
    other = {k: n for k, n in s.kinds.items() if k != "tool/call"}
    if other:
        parts.append(", ".join(f"{k} {n:,}" for k, n in sorted(other.items())))
    if parts:
        text += ": " + "; ".join(parts)
    return text + " …"


def _stretch_div(noun: str) -> Callable[[Stretch], str]:
    return lambda s: f'<p class="stretch">{_e(_stretch_text(s, noun))}</p>'


def _stretch_row(noun: str, span: int) -> Callable[[Stretch], str]:
    return lambda s: f'<tr><td colspan="{span}" class="stretch">{_e(_stretch_text(s, noun))}</td></tr>'


# --------------------------------------------------------------------------
# The session page


def _where(bad: BadEvent) -> str:
    """Where a log goes bad: its seq (and line), its line, or its provenance."""
    if bad.position is not None:
        return f"seq {bad.position}" + ("" if bad.line is None else f" (line {bad.line})")
    return "its provenance" if bad.line is None else f"line {bad.line}"


def _bad(bad: BadEvent) -> str:
    covered = (
        "The events themselves fold cleanly; the fork's record of where they came from does not hold."
        if bad.position is None and bad.line is None
        else "The report covers the log up to the event before it; nothing after it was read."
    )
    rows = [
        f"<p><strong>BAD LOG at {_e(_where(bad))}</strong>: rule <code>{_e(bad.rule)}</code>. {_e(bad.detail)}</p>",
        f"<p>{covered}</p>",
    ]
    if bad.kind:
        rows.append(
            f'<table><tr><th>seq</th><th>kind</th><th>at</th><th>payload</th></tr><tr id="seq-{_e(bad.position)}">'
            f"<td>{_e(bad.position)}</td><td><code>{_e(bad.kind)}</code></td><td>{_e(_time(bad.at))}</td>"
            f'<td class="mono">{_e(bad.payload)}</td></tr></table>'
        )
    return f'<div class="badlog" id="bad-event">{"".join(rows)}</div>'


def _provenance(provenance: ForkProvenance | None) -> str:
    """Where a forked session came from; nothing for a session that is no fork."""
    if provenance is None:
        return ""
    return (
        f"<dt>forked from</dt><dd>session <code>{_e(provenance.source)}</code> at seq {provenance.seq:,} "
        f"(its first {provenance.seq:,} events have SHA-256 <code>{_e(provenance.prefix_sha256)}</code>)</dd>"
    )


def _header(r: Report) -> str:
    verdict = (
        '<span class="verdict ok">passes the strict replay</span>'
        if r.bad is None
        else f'<span class="verdict bad">BAD LOG at {_e(_where(r.bad))} [{_e(r.bad.rule)}]</span>'
    )
    span = "—"
    if r.first_at is not None and r.last_at is not None:
        span = f"{_time(r.first_at)} – {_time(r.last_at)} ({_duration(r.last_at - r.first_at)})"
    refused = sum(r.refused.values())
    warned = sum(r.warned.values())
    facts = [
        ("session", f"<code>{_e(r.session)}</code>"),
        ("audit", verdict),
        ("events", f"{r.events:,}" + ("" if r.bad is None else " (before the first bad event)")),
        ("turns", f"{r.turns:,} ({r.requests:,} model requests)"),
        ("time span", _e(span)),
        ("tool calls", f"{r.calls:,}: {r.calls - refused:,} allowed, {refused:,} refused ({_counts(r.refused)}), "
                       f"{warned:,} warned ({_counts(r.warned)})"),
        ("mode now", f'<span class="tag {_e(r.mode)}">{_e(r.mode)}</span>'),
        ("plan", _e(r.plan)),
        ("goal", _e(r.goal)),
    ]
    kinds = ", ".join(f"<code>{_e(k)}</code> {n:,}" for k, n in sorted(r.kinds.items())) or "none"
    dl = "".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in facts)
    return (
        f"<header><h1>planfold report: session <code>{_e(r.session)}</code></h1>"
        f'<dl class="facts">{dl}{_provenance(r.provenance)}<dt>events by kind</dt><dd>{kinds}</dd></dl>'
        + ("" if r.bad is None else _bad(r.bad))
        + "</header>"
    )


_KIND_TAG = {
    "tool/call": "tool",
    "user/message": "user",
    "assistant/message": "assistant",
    "plan/mode": "mode",
    "plan/artifact": "plan",
    "goal/change": "goal",
}


def _entry_row(first: int | None) -> Callable[[Entry], str]:
    def row(e: Entry) -> str:
        verdict = ""
        if e.kind == "tool/call":
            verdict = f'<span class="tag {_e(e.verdict)}">{_e(e.verdict)}</span>'
            if e.code:
                verdict += f" <code>{_e(e.code)}</code>"
            if e.ok is False:
                verdict += ' <span class="tag warned">failed</span>'
            if e.reason:
                verdict += f"<br><small>{_e(e.reason)}</small>"
        tag = _KIND_TAG.get(e.kind, e.kind)
        return (
            f'<tr id="seq-{e.seq}"><td class="num">{e.seq}</td><td class="num">{_e(_offset(e.at, first))}</td>'
            f'<td><span class="tag">{_e(tag)}</span> {_e(e.label)}</td><td class="mono">{_e(e.detail)}</td>'
            f"<td>{verdict}</td></tr>"
        )

    return row


def _bands(block: Block) -> str:
    if not block.bands:
        return ""
    total = sum(n for _, n in block.bands)
    spans = "".join(
        f'<span class="{"plan" if mode else "build"}" style="width:{100 * n / total:.2f}%" '
        f'title="{n} request(s) in {"plan" if mode else "build"} mode"></span>'
        for mode, n in block.bands
    )
    words = ", then ".join(f"{n} in {'plan' if mode else 'build'} mode" for mode, n in block.bands)
    return f'<div class="bands" role="img" aria-label="requests: {_e(words)}">{spans}</div>'


def _block(first: int | None) -> Callable[[Block], str]:
    def render(b: Block) -> str:
        title = "Between turns" if b.turn is None else f"Turn {b.turn}" + ("" if b.closed else " (not closed)")
        refused = sum(b.refused.values())
        facts = (
            f"seq {b.first_seq:,}–{b.last_seq:,}, {_offset(b.first_at, first)}, {b.events:,} events, "
            f"{b.requests:,} requests ({b.steps} steps), {b.calls:,} tool calls"
        )
        if refused:
            facts += f", {refused:,} refused ({_counts(b.refused)})"
        if b.warned:
            facts += f", {sum(b.warned.values()):,} warned ({_counts(b.warned)})"
        table = _listing(
            b.items.listing(),
            _entry_row(first),
            _stretch_row("entries", 5),
            ('<table><tr><th class="num">seq</th><th class="num">time</th><th>what</th><th>detail</th>'
             "<th>verdict</th></tr>", "</table>"),
        )
        return (
            f'<section class="block" id="block-{b.first_seq}"><h3>{_e(title)}</h3><div class="legend">{_e(facts)}'
            f"</div>{_bands(b)}{table if len(b.items) else ''}</section>"
        )

    return render


def _timeline(r: Report) -> str:
    legend = (
        '<p class="legend">Each turn with its requests as bands: <span class="tag plan">plan mode</span> '
        '<span class="tag build">build mode</span>. Long stretches are summarised.</p>'
    )
    body = _listing(
        r.timeline, _block(r.first_at), _stretch_div("turns and stretches between turns"), empty="<p>No events.</p>"
    )
    return f'<section id="timeline"><h2>Timeline</h2>{legend}{body}</section>'


def _diff(rev: Revision) -> str:
    classes = {"+": "add", "-": "del", "~": "chg", "…": "chg"}
    lines = "".join(
        f'<li class="{classes.get(d.sign, "chg")}"><code>{_e(d.sign)}</code> <strong>{_e(d.field)}</strong> '
        f"{_e(d.text)}</li>"
        for d in rev.diff
    )
    return f'<ul class="diff">{lines}</ul>' if lines else "<p>no change to the PlanSpec</p>"


def _revision(first: int | None) -> Callable[[Revision], str]:
    def render(rev: Revision) -> str:
        history = "; ".join(f"{_e(action)} → {_e(status)} (seq {seq})" for status, action, seq, _ in rev.history)
        approved = "none needed (an implicit plan of build mode)" if rev.action == "bootstrap" else "not approved"
        if rev.approved is not None:
            seq, at, by = rev.approved
            approved = f"approved at seq {seq} ({_e(_time(at))}) by {_e(by)}"
        rejected = "".join(f"<br>sent back at seq {seq}: {_e(note)}" for seq, note in rev.rejected)
        change = "the change from the revision before" if rev.revision > 1 else "the new plan"
        return (
            f'<tr id="rev-{_e(rev.plan_id)}-{rev.revision}"><td><code>{_e(rev.plan_id)}</code> rev {rev.revision}'
            f"</td><td>{_e(rev.action)} at seq {rev.seq} ({_e(rev.mode)} mode, {_e(_offset(rev.at, first))})</td>"
            f"<td><strong>{_e(rev.status)}</strong><br><small>{history or 'no change since'}</small></td>"
            f"<td>{approved}{rejected}</td><td><small>{_e(change)}:</small>{_diff(rev)}</td></tr>"
        )

    return render


def _revisions(r: Report) -> str:
    body = _listing(
        r.revisions,
        _revision(r.first_at),
        _stretch_row("revisions", 5),
        ("<table><tr><th>revision</th><th>made by</th><th>status</th><th>approval</th><th>change</th></tr>",
         "</table>"),
        "<p>No plan was recorded.</p>",
    )
    return f'<section id="plans"><h2>Plan revisions</h2>{body}</section>'


def _review_row(r: Review) -> str:
    return (
        f'<tr><td class="num"><a href="#seq-{r.seq}">{r.seq}</a></td><td>{_e(r.turn or "—")}</td>'
        f"<td><code>{_e(r.call_id)}</code></td><td>{_e(r.question)}</td><td>{_e(r.plan or '—')}</td>"
        f'<td><span class="tag {"allowed" if r.outcome == "approved" else "warned"}">{_e(r.outcome)}</span></td>'
        f"<td>{_e(r.answer)}</td></tr>"
    )


def _verification_row(v: Verification) -> str:
    tag = {"complete": "allowed", "verify-fail": "refused"}.get(v.action, "")
    word = {"complete": "passed", "verify-fail": "failed", "verify": "verification started"}.get(v.action, v.action)
    return (
        f'<tr><td class="num"><a href="#seq-{v.seq}">{v.seq}</a></td><td>{_e(v.turn or "—")}</td>'
        f"<td><code>{_e(v.plan_id)}</code> rev {v.revision}</td><td><span class=\"tag {tag}\">{_e(word)}</span></td>"
        f"<td>{_e(v.note)}</td></tr>"
    )


def _reviews(r: Report) -> str:
    reviews = _listing(
        r.reviews, _review_row, _stretch_row("reviews", 7),
        ('<table><tr><th class="num">seq</th><th>turn</th><th>call</th><th>question: the plan put to the reviewer'
         "</th><th>plan recorded</th><th>outcome</th><th>answer</th></tr>", "</table>"),
        "<p>No plan was put to a reviewer.</p>",
    )
    checks = _listing(
        r.verifications, _verification_row, _stretch_row("verification steps", 5),
        ('<table><tr><th class="num">seq</th><th>turn</th><th>plan</th><th>result</th><th>note</th></tr>',
         "</table>"),
        "<p>No verification was recorded.</p>",
    )
    return (
        f'<section id="reviews"><h2>Reviews</h2>{reviews}</section>'
        f'<section id="verification"><h2>Verification</h2>{checks}</section>'
    )


def _goal_row(g: GoalEntry) -> str:
    share = 0 if g.max_rounds <= 0 else min(100, 100 * g.rounds / g.max_rounds)
    return (
        f"<tr><td><code>{_e(g.goal_id)}</code></td><td>{_e(g.objective)}</td>"
        f'<td><span class="meter" role="img" aria-label="{g.rounds} of {g.max_rounds} rounds">'
        f'<span style="width:{share:.1f}%"></span></span> {g.rounds} / {g.max_rounds}</td>'
        f"<td>{_e(g.phase)}{'<br><small>' + _e(g.reason) + '</small>' if g.reason else ''}</td>"
        f'<td class="num">{g.changes}</td></tr>'
    )


def _change_row(first: int | None) -> Callable[[GoalChangeEntry], str]:
    def row(c: GoalChangeEntry) -> str:
        return (
            f'<tr><td class="num"><a href="#seq-{c.seq}">{c.seq}</a></td><td>{_e(_offset(c.at, first))}</td>'
            f"<td>{_e(c.operation)}</td><td><code>{_e(c.goal_id)}</code> rev {c.revision}</td><td>{_e(c.phase)}"
            f"{' (' + _e(c.reason) + ')' if c.reason else ''}</td><td>{c.rounds} / {c.max_rounds}</td>"
            f"<td>{_e(c.actor)}</td></tr>"
        )

    return row


def _goals(r: Report) -> str:
    if not r.goals.items and r.goals.left_out is None:
        return '<section id="goal"><h2>Goal</h2><p>No goal was set.</p></section>'
    goals = _listing(
        r.goals, _goal_row, _stretch_row("goals", 5),
        ('<table><tr><th>goal</th><th>objective</th><th>rounds against the budget</th><th>phase</th>'
         '<th class="num">changes</th></tr>', "</table>"),
    )
    changes = _listing(
        r.goal_changes, _change_row(r.first_at), _stretch_row("changes", 7),
        ('<table><tr><th class="num">seq</th><th>time</th><th>operation</th><th>goal</th><th>phase after</th>'
         "<th>rounds</th><th>actor</th></tr>", "</table>"),
    )
    note = (
        '<p class="legend">The log does not record who asked for a change; the actor column lists who the '
        "kernel's authority table allows to make it.</p>"
    )
    return f'<section id="goal"><h2>Goal</h2>{goals}<h3>Every change</h3>{note}{changes}</section>'


# --------------------------------------------------------------------------
# Diagrams


def _seq_links(refs: Iterable[tuple[str | None, int]], count: int, linked: bool) -> str:
    listed = list(refs)
    out = []
    for session, seq in listed:
        if session is None:
            out.append(f'<a href="#seq-{seq}">{seq}</a>' if linked else str(seq))
        else:
            out.append(f"<code>{_e(session)}</code>#{seq}")
    text = ", ".join(out)
    if count > len(listed):
        text += f" … and {count - len(listed):,} more"
    return text or "—"


def _machine(key: str, graph: Graph, use: MachineUse, linked: bool) -> str:
    extra = [e for e in use.extra if e not in set(graph.edges)]
    drawn = layout_edges(graph, use.counts, extra, lambda e: observable(key, e), key)
    visited = frozenset(s for d in drawn if d.count for s in (d.edge.source, d.edge.target))
    if graph.initial is not None:
        visited |= {graph.initial}
    svg = render_svg(graph, key, drawn, visited)
    taken, shown = use.coverage(graph, key)
    hidden = sum(1 for d in drawn if d.style == "hidden")
    coverage = f"{taken} of the {shown} transitions of the table a log can show were taken"
    if hidden:
        coverage += f"; {hidden} more append nothing, so no log shows them"
    if extra:
        coverage += f"; {len(extra)} taken outside the table"
    rows = "".join(_edge_row(d, use, linked) for d in drawn)
    source = f" Read from <code>{_e(graph.source)}</code>." if graph.source else ""
    return (
        f'<section class="machine-box" id="machine-{_e(key)}"><h3>{_e(_TITLES.get(key, graph.title))}</h3>'
        f'<p class="legend">{_e(coverage)}.{source} Heavier: taken (×count); dashed: never taken; dotted: '
        f"no log can show it; orange: taken, not in the table.</p>{svg}"
        f'<p class="hint" hidden>Choose a transition in the diagram to see the events that took it.</p>'
        f'<div class="detail" aria-live="polite"></div>'
        f"<table><tr><th>from</th><th>to</th><th>transition</th><th class=\"num\">taken</th><th>events</th></tr>"
        f"{rows}</table></section>"
    )


def _edge_row(d: DrawnEdge, use: MachineUse, linked: bool) -> str:
    edge: Edge = d.edge
    label = edge.label
    if d.style == "extra":
        label += f" (not in the table: {use.extra.get(edge, '')})"
    elif d.style == "hidden":
        label += " (appends nothing)"
    return (
        f'<tr id="{_e(d.ident)}-row" class="{_e(d.style)}" data-edge="{_e(d.ident)}"><td>{_e(edge.source)}</td>'
        f'<td>{_e(edge.target)}</td><td>{_e(label)}</td><td class="num">{d.count:,}</td>'
        f"<td>{_seq_links(use.seqs.get(edge, ()), d.count, linked)}</td></tr>"
    )


def _diagrams(machines: Mapping[str, MachineUse], graphs: Mapping[str, Graph], linked: bool, intro: str) -> str:
    boxes = "".join(_machine(key, graphs[key], machines[key], linked) for key in MACHINES)
    return f'<section id="machines"><h2>State machines</h2><p class="legend">{intro}</p>{boxes}</section>'


def render_report(report: Report) -> str:
    """The page of one session's report."""
    intro = (
        "Each machine as its transition table draws it, with the transitions this session took drawn heavier and "
        "counted, and the ones it never took shown as such. Choose a transition to list the events that took it."
    )
    return _page(
        f"planfold report: {report.session}",
        [
            _header(report),
            _timeline(report),
            render_usage(report.usage),
            _revisions(report),
            _reviews(report),
            _goals(report),
            _diagrams(report.machines, report.graphs, True, _e(intro)),
        ],
    )


# --------------------------------------------------------------------------
# The coverage page


def _session_row(s: SessionLine) -> str:
    verdict = '<span class="verdict ok">ok</span>'
    if s.bad is not None:
        verdict = (f'<span class="verdict bad">BAD at {_e(_where(s.bad))} [{_e(s.bad.rule)}]</span> '
                   f"{_e(s.bad.detail)}")
    return (
        f'<tr><td><code>{_e(s.session)}</code></td><td class="num">{s.events:,}</td>'
        f'<td class="num">{s.turns:,}</td><td>{verdict}</td></tr>'
    )


def render_coverage(coverage: CoverageReport) -> str:
    """The page of a whole database: every session's verdict, and every
    machine with the transitions all of them took together."""
    facts = (
        f"<dt>source</dt><dd><code>{_e(coverage.source)}</code></dd><dt>sessions</dt><dd>{coverage.sessions:,}"
        f"</dd><dt>events</dt><dd>{coverage.events:,}</dd><dt>audit</dt><dd>"
        + ('<span class="verdict ok">every session passes the strict replay</span>' if not coverage.bad else
           f'<span class="verdict bad">{coverage.bad:,} session(s) break a rule</span>')
        + "</dd>"
    )
    sessions = _listing(
        coverage.listed, _session_row, _stretch_row("sessions", 4),
        ('<table><tr><th>session</th><th class="num">events</th><th class="num">turns</th><th>audit</th></tr>',
         "</table>"),
    )
    intro = (
        "Transition coverage of each machine's table over every session: how often real traffic took each "
        "transition, and which never happened. A bad session counts up to its first bad event."
    )
    return _page(
        f"planfold report: {coverage.source}",
        [
            f'<header><h1>planfold report: every session of <code>{_e(coverage.source)}</code></h1>'
            f'<dl class="facts">{facts}</dl></header>',
            f'<section id="sessions"><h2>Sessions</h2>{sessions}</section>',
            _diagrams(coverage.machines, coverage.graphs, False, _e(intro)),
        ],
    )
