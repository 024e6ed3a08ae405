"""A report as one self-contained HTML page.

Theory of operation
-------------------
``render_report(report)`` and ``render_coverage(coverage)`` return the whole
page as one string: the style sheet, the script and every diagram (inline
SVG, laid out by Graphviz when the package was built and only marked here:
``adapters.report.diagram``) are inside it, and it names no other resource,
so it opens offline and sends no request. Everything it says is in the markup
itself: the page reads the same with script turned off (each diagram has a
table beside it listing every transition with its count and the events that
took it), and prints (a print style sheet drops the interactive parts and
keeps sections whole where it can). The script connects the two:
choosing an edge of a diagram (a click, or Enter on a focused edge) shows
that edge's row (its events, each a link to the event in the timeline) in
the box under the diagram and highlights the edge. It also reads the
"Every event" section: every event of the session in data blocks
(``events.EventIndex``: compressed chunks the browser inflates with its own
``DecompressionStream``, and the folded states), searched and filtered in
the page, each event opened with its payload whole and the state after it;
that section alone needs script.

Every text that comes from a log (ids, messages, tool names, arguments,
rule details, plan contents) is written as ``adapters.visible`` shows it
(control and bidirectional characters as marked escapes) and escaped with
``html.escape``, attribute values included; an id longer than ``LONG_ID``
is shortened, its whole text in a ``details`` element; every cell wraps
long tokens, so the page is never wider than its window. The script sets
only ``textContent``. The page has no inline event handler and no inline
style attribute, and its content security policy (``POLICY``) allows its
own style sheet and script by their SHA-256 and nothing else. A page links
others by their file names (``page_name``): a fork's its source's, a
source's its forks'. ``_usage`` is the place of the usage view.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
import shlex
from collections.abc import Callable, Iterable, Mapping
from html import escape
from typing import TypeVar
from urllib.parse import quote

from ...kernel.graph import Edge, Graph
from ..provenance import ForkProvenance
from ..visible import escapes, visible
from .diagram import Mark, marked_svg, marks
from .events import names_json
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
from .usage import render_usage

__all__ = ["POLICY", "page_name", "render_coverage", "render_report"]

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
html,body{max-width:100%;overflow-wrap:anywhere;word-break:break-word}
td,th,dd,dt,li,p,summary,h1,h2,h3,code,.mono,.detail,.tag{overflow-wrap:anywhere;word-break:break-word;max-width:100%}
.esc{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:0.9em;color:var(--bad);
background:#fbe5e2;border-radius:3px;padding:0 2px}
details.long-id{display:inline-block;vertical-align:top;max-width:100%}details.long-id summary{cursor:pointer}
details.long-id code.full{display:block;max-height:12em;overflow:auto}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:var(--bg);
margin:0 auto;max-width:1180px;padding:24px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:32px 0 8px;border-bottom:1px solid var(--line);
padding-bottom:4px}h3{font-size:15px;margin:20px 0 6px}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
.facts{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:2px 16px;margin:12px 0}
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
.bands{display:block;width:100%;height:10px;border-radius:5px;margin:4px 0 8px}
.bands .plan{fill:var(--plan)}.bands .build{fill:var(--build)}
.stretch{color:var(--muted);font-style:italic;padding:6px 12px;border-left:3px solid var(--line);margin:8px 0}
.diff .add{color:var(--ok)}.diff .del{color:var(--bad)}.diff .chg{color:var(--warn)}
.meter{display:inline-block;width:160px;height:10px;border-radius:5px;vertical-align:middle}
.meter .track{fill:var(--soft)}.meter .done{fill:var(--build)}
.machine-box{border:1px solid var(--line);border-radius:8px;padding:8px 12px;margin:12px 0;break-inside:avoid}
svg.machine{width:100%;max-width:100%;height:auto;display:block;margin:0 auto;background:#fcfcfe;border-radius:6px}
svg.machine .graph>polygon{fill:#fcfcfe}
svg.machine g.node.state path{fill:#fff;stroke:#9aa3b5;stroke-width:1.2}
svg.machine g.node.state.visited path{stroke:var(--ink);stroke-width:2;fill:#eef2fb}
svg.machine g.node text{fill:var(--ink)}
svg.machine g.edge path{stroke:#b8bfcc;stroke-width:1;stroke-dasharray:5 4}
svg.machine g.edge polygon{fill:#b8bfcc;stroke:#b8bfcc}
svg.machine g.edge text{fill:var(--muted)}
svg.machine g.edge{cursor:pointer;outline:none}
svg.machine g.edge a{text-decoration:none}
svg.machine g.edge.initial path{stroke:var(--ink);stroke-dasharray:none}
svg.machine g.edge.initial polygon{fill:var(--ink);stroke:var(--ink)}
svg.machine g.edge.taken path{stroke:var(--ink);stroke-dasharray:none}
svg.machine g.edge.taken polygon{fill:var(--ink);stroke:var(--ink)}
svg.machine g.edge.taken text{fill:var(--ink)}
svg.machine g.edge.w1 path{stroke-width:1.6}svg.machine g.edge.w2 path{stroke-width:2.4}
svg.machine g.edge.w3 path{stroke-width:3.2}svg.machine g.edge.w4 path{stroke-width:4}
svg.machine g.edge.w5 path{stroke-width:4.8}
svg.machine g.edge.hidden path{stroke:#d9dde5;stroke-dasharray:1 4}
svg.machine g.edge.hidden polygon{fill:#d9dde5;stroke:#d9dde5}svg.machine g.edge.hidden text{fill:#aab1bf}
svg.machine g.edge.extra{visibility:hidden}
svg.machine g.edge.extra.taken,svg.machine g.edge.extra[data-edge]{visibility:visible}
svg.machine g.edge.extra[data-edge] path{stroke:var(--extra);stroke-dasharray:8 3}
svg.machine g.edge.extra[data-edge] polygon{fill:var(--extra);stroke:var(--extra)}
svg.machine g.edge.extra[data-edge] text{fill:var(--extra)}
svg.machine g.edge:hover path,svg.machine g.edge:focus path,svg.machine g.edge.chosen path{stroke:#1f6feb}
svg.machine g.edge:hover text,svg.machine g.edge:focus text,svg.machine g.edge.chosen text{fill:#1f6feb}
pre.payload{white-space:pre-wrap;overflow-wrap:anywhere;max-height:30em;overflow:auto;background:var(--soft);
padding:8px;border-radius:6px;font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.search label{margin-right:8px;white-space:nowrap}.search select{max-width:14em}
#event-results td.mono{max-width:40em}
.legend{color:var(--muted);font-size:12.5px}
.detail{min-height:2.2em;padding:6px 10px;background:var(--soft);border-radius:6px;margin:6px 0}
tr.chosen td{background:#e7f0ff}
tr.never td{color:var(--muted)}tr.hidden td{color:#aab1bf}
a{color:#1f5fbf}
@media print{body{max-width:none;padding:0;font-size:11px}
.detail,.hint,#event-search,#state-form,#event-more{display:none}
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
    if(!el){return;}
    if(el.closest('svg')){e.preventDefault();}
    choose(el.getAttribute('data-edge'));
  });
  document.addEventListener('keydown',function(e){
    if(e.key!=='Enter'&&e.key!==' '){return;}
    var el=e.target.closest&&e.target.closest('[data-edge]');
    if(el){e.preventDefault();choose(el.getAttribute('data-edge'));}
  });
  document.querySelectorAll('.hint').forEach(function(el){el.hidden=false;});
})();
(function(){
  var facts=null,events=null,states=null,loading=null,found=[],shown=0;
  var STATE=['plan mode','plan','revision','status','open todos','goal','goal phase','rounds','max rounds'];
  function byId(id){return document.getElementById(id);}
  function inflate(b64){
    var bin=atob(b64),bytes=new Uint8Array(bin.length);
    for(var i=0;i<bin.length;i++){bytes[i]=bin.charCodeAt(i);}
    var stream=new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
    return new Response(stream).text().then(JSON.parse);
  }
  function load(){
    if(loading){return loading;}
    var chunks=Array.prototype.slice.call(document.querySelectorAll('script.event-chunk'));
    loading=Promise.all(chunks.map(function(c){
      return inflate(c.textContent).then(function(rows){
        var first=+c.getAttribute('data-first'),at=rows[0],out=[];
        for(var i=1;i<rows.length;i++){
          var r=rows[i];at+=r[4];
          out.push({seq:first+i-1,kind:r[0],turn:r[1],tool:r[2],rule:r[3],at:at,size:r[5],payload:r[6]===0?null:r[6]});
        }
        return out;
      });
    })).then(function(parts){
      events=[].concat.apply([],parts);
      return inflate(byId('event-states').textContent);
    }).then(function(s){states=s;return events;});
    return loading;
  }
  function event(seq){
    if(!events||!events.length){return null;}
    var e=events[seq-events[0].seq];
    return e&&e.seq===seq?e:null;
  }
  function stateAt(seq){
    var lo=0,hi=states.length-1,at=-1;
    while(lo<=hi){var mid=(lo+hi)>>1;if(states[mid][0]<=seq){at=mid;lo=mid+1;}else{hi=mid-1;}}
    return at<0?['build',null,null,null,[],null,null,null,null]:states[at][1];
  }
  function search(q){
    var out=[],text=(q.text||'').toLowerCase(),seq=/^#(\\d+)$/.exec(text.trim());
    if(seq){var one=event(+seq[1]);return one?[one]:[];}
    for(var i=0;i<events.length;i++){
      var e=events[i];
      if(q.kind>=0&&e.kind!==q.kind){continue;}
      if(q.tool>=0&&e.tool!==q.tool){continue;}
      if(q.rule>=0&&e.rule!==q.rule){continue;}
      if(q.turn!==null&&q.turn!==undefined&&e.turn!==q.turn){continue;}
      if(text&&(e.payload===null||e.payload.toLowerCase().indexOf(text)<0)){continue;}
      out.push(e);
    }
    return out;
  }
  function cell(row,text,cls){
    var td=document.createElement('td');td.textContent=text;
    if(cls){td.className=cls;}
    row.appendChild(td);return td;
  }
  function name(list,i){return i<0||i===null?'':facts[list][i];}
  function stateList(box,state){
    box.textContent='';
    for(var i=0;i<STATE.length;i++){
      var dt=document.createElement('dt'),dd=document.createElement('dd'),v=state[i];
      dt.textContent=STATE[i];
      dd.textContent=v===null?'none':(Array.isArray(v)?(v.length?v.join('; '):'none'):String(v));
      dd.setAttribute('data-field',STATE[i]);
      box.appendChild(dt);box.appendChild(dd);
    }
  }
  function open(seq){
    var e=event(seq),box=byId('event-open');
    box.textContent='';
    if(!e){box.textContent='No event '+seq+' in this session.';return;}
    var h=document.createElement('h3');h.textContent='Event seq '+e.seq;box.appendChild(h);
    var p=document.createElement('p');
    p.textContent=facts.kinds[e.kind]+(e.turn===null?', between turns':', turn '+e.turn)
      +(e.tool>=0?', tool '+name('tools',e.tool):'')+(e.rule>=0?', rule '+name('rules',e.rule):'')
      +', at '+new Date(e.at).toISOString()+', '+e.size+' bytes of payload';
    box.appendChild(p);
    if(e.payload===null){
      var more=document.createElement('p');
      more.textContent='This payload is not embedded in the page (over its size limit or budget). Show it with: ';
      var code=document.createElement('code');code.textContent=facts.around_command+' '+e.seq;
      more.appendChild(code);box.appendChild(more);
    }else{
      var pre=document.createElement('pre');pre.className='payload';pre.textContent=e.payload;box.appendChild(pre);
    }
    var s=document.createElement('h4');s.textContent='State after it (the fold up to seq '+e.seq+')';box.appendChild(s);
    var dl=document.createElement('dl');dl.className='facts';box.appendChild(dl);stateList(dl,stateAt(e.seq));
  }
  function more(){
    var table=byId('event-results'),end=Math.min(found.length,shown+200);
    for(;shown<end;shown++){
      var e=found[shown],row=table.insertRow(-1);
      cell(row,String(e.seq),'num');cell(row,e.turn===null?'':String(e.turn),'num');
      cell(row,facts.kinds[e.kind]);cell(row,name('tools',e.tool));cell(row,name('rules',e.rule));
      cell(row,e.payload===null?'(not embedded: '+e.size+' bytes)':e.payload.slice(0,160),'mono');
      var button=document.createElement('button');button.type='button';button.textContent='open';
      button.setAttribute('data-seq',String(e.seq));cell(row,'').appendChild(button);
    }
    byId('event-more').hidden=shown>=found.length;
  }
  function query(){
    var turn=byId('event-turn').value;
    return {text:byId('event-text').value,kind:+byId('event-kind').value,tool:+byId('event-tool').value,
            rule:+byId('event-rule').value,turn:turn===''?null:+turn};
  }
  function run(){
    load().then(function(){
      found=search(query());shown=0;
      var table=byId('event-results');
      while(table.rows.length>1){table.deleteRow(1);}
      byId('event-count').textContent=found.length+' of '+events.length+' events match.';
      more();
    });
  }
  function fill(id,list){
    var select=byId(id);
    for(var i=0;i<list.length;i++){
      var o=document.createElement('option');o.value=String(i);o.textContent=list[i];select.appendChild(o);
    }
  }
  var box=byId('events');
  if(!box){return;}
  facts=JSON.parse(byId('event-facts').textContent);
  fill('event-kind',facts.kinds);fill('event-tool',facts.tools);fill('event-rule',facts.rules);
  byId('event-search').hidden=false;byId('state-form').hidden=false;
  box.querySelectorAll('.needs-script').forEach(function(el){el.hidden=true;});
  byId('event-search').addEventListener('submit',function(e){e.preventDefault();run();});
  byId('event-more').addEventListener('click',more);
  byId('event-results').addEventListener('click',function(e){
    var b=e.target.closest('button[data-seq]');
    if(b){load().then(function(){open(+b.getAttribute('data-seq'));});}
  });
  byId('state-form').addEventListener('submit',function(e){
    e.preventDefault();
    load().then(function(){stateList(byId('state-at'),stateAt(+byId('state-seq').value));});
  });
  window.planfoldEvents={load:load,search:search,event:event,stateAt:stateAt,open:open};
  var hash=/^#ev-(\\d+)$/.exec(location.hash);
  var first=hash?+hash[1]:facts.around;
  if(first){load().then(function(){open(first);});}
})();
"""


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


#: The page's content security policy: nothing from anywhere, but the page's
#: own style sheet and script, each allowed by its SHA-256 (no
#: ``'unsafe-inline'``: a style or script a log smuggled in would not run).
POLICY = (
    f"default-src 'none'; style-src {_hash(_STYLE)}; script-src {_hash(_SCRIPT)}; base-uri 'none'; "
    "form-action 'none'"
)


def _e(text: object) -> str:
    """``text`` as the page's markup shows it: escaped for HTML, and every
    character that would act on the reader (a control or bidirectional
    formatting character) written visibly as its escape, marked as one."""
    return "".join(
        f'<span class="esc">{escape(run)}</span>' if acting else escape(run, quote=True)
        for run, acting in escapes(text)
    )


def _a(text: object) -> str:
    """``text`` as an attribute's value: escaped for HTML, acting characters as their escapes."""
    return escape(visible(text), quote=True)


#: The longest id the page shows whole in its line; a longer one shows its
#: first ``ID_HEAD`` characters, and the whole id when it is opened.
LONG_ID = 64
ID_HEAD = 40


def _id(text: object) -> str:
    """An id from the log in code style: a long one shortened, the full text on demand."""
    raw = str(text)
    if len(visible(raw)) <= LONG_ID:
        return f"<code>{_e(raw)}</code>"
    return (
        f'<details class="long-id"><summary><code>{_e(raw[:ID_HEAD])}…</code> ({len(raw):,} characters)'
        f'</summary><code class="full">{_e(raw)}</code></details>'
    )


def _short(text: object, width: int = LONG_ID) -> str:
    """An id from the log where it cannot open (a title, a heading), cut to ``width`` characters."""
    raw = str(text)
    return raw if len(visible(raw)) <= width else raw[: width - 1] + "…"


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
            # Nothing may leave the page (no fetch, no image, no font, no frame), and
            # no style or script runs but the page's own, named by their hashes.
            f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">',
            f"<title>{_a(title)}</title><style>{_STYLE}</style></head><body>",
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
            f'<table><tr><th>seq</th><th>kind</th><th>at</th><th>payload</th></tr><tr id="seq-{_a(bad.position)}">'
            f"<td>{_e(bad.position)}</td><td><code>{_e(bad.kind)}</code></td><td>{_e(_time(bad.at))}</td>"
            f'<td class="mono">{_e(bad.payload)}</td></tr></table>'
        )
    return f'<div class="badlog" id="bad-event">{"".join(rows)}</div>'


def _provenance(provenance: ForkProvenance | None) -> str:
    """Where a forked session came from; nothing for a session that is no fork."""
    if provenance is None:
        return ""
    return (
        f'<dt>forked from</dt><dd>session <a class="source-link" href="{_a(page_name(provenance.source))}#ev-'
        f'{provenance.seq}">{_id(provenance.source)}</a> at seq {provenance.seq:,} '
        f"(its first {provenance.seq:,} events have SHA-256 <code>{_e(provenance.prefix_sha256)}</code>)</dd>"
    )


def _verdict(r: Report) -> str:
    """The audit line: ``planfold audit``'s verdict on the session (the strict
    replay, and for a stored session its projection, snapshot and provenance)."""
    if r.bad is not None:
        return f'<span class="verdict bad">BAD LOG at {_e(_where(r.bad))} [{_e(r.bad.rule)}]</span>'
    if r.audit is None:
        return '<span class="verdict ok">passes the strict replay</span>'
    if r.audit.mismatches:
        items = "".join(f"<li>{_e(m)}</li>" for m in r.audit.mismatches)
        return (
            '<span class="verdict bad">FAILS the audit: the stored session does not match its log</span>'
            f' <small>(the strict replay passes; snapshot {_e(r.audit.snapshot)})</small><ul class="mismatches">'
            f"{items}</ul>"
        )
    return (
        '<span class="verdict ok">passes the audit</span> <small>it passes the strict replay, and its stored '
        f"projection matches the fold (snapshot {_e(r.audit.snapshot)})</small>"
    )


def _header(r: Report) -> str:
    verdict = _verdict(r)
    span = "—"
    if r.first_at is not None and r.last_at is not None:
        span = f"{_time(r.first_at)} – {_time(r.last_at)} ({_duration(r.last_at - r.first_at)})"
    refused = sum(r.refused.values())
    warned = sum(r.warned.values())
    facts = [
        ("session", _id(r.session)),
        ("audit", verdict),
        ("events", f"{r.events:,}" + ("" if r.bad is None else " (before the first bad event)")),
        ("turns", f"{r.turns:,} ({r.requests:,} model requests)"),
        ("time span", _e(span)),
        ("tool calls", f"{r.calls:,}: {r.calls - refused:,} allowed, {refused:,} refused ({_counts(r.refused)}), "
                       f"{warned:,} warned ({_counts(r.warned)})"),
        ("mode now", f'<span class="tag {_a(r.mode)}">{_e(r.mode)}</span>'),
        ("plan", _e(r.plan)),
        ("goal", _e(r.goal)),
    ]
    kinds = ", ".join(f"<code>{_e(k)}</code> {n:,}" for k, n in sorted(r.kinds.items())) or "none"
    dl = "".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in facts)
    return (
        f"<header><h1>planfold report: session <code>{_e(_short(r.session))}</code></h1>"
        f'<dl class="facts">{dl}{_provenance(r.provenance)}{_forks(r)}<dt>events by kind</dt><dd>{kinds}</dd></dl>'
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
            verdict = f'<span class="tag {_a(e.verdict)}">{_e(e.verdict)}</span>'
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
    """The block's requests as bands of plan and build mode, an SVG (its
    widths are attributes, so the page needs no inline style)."""
    if not block.bands:
        return ""
    total = sum(n for _, n in block.bands)
    rects, x = [], 0.0
    for mode, n in block.bands:
        width = 1000 * n / total
        name = "plan" if mode else "build"
        rects.append(f'<rect class="{name}" x="{x:.2f}" y="0" width="{width:.2f}" height="10">'
                     f"<title>{n} request(s) in {name} mode</title></rect>")
        x += width
    words = ", then ".join(f"{n} in {'plan' if mode else 'build'} mode" for mode, n in block.bands)
    return (f'<svg class="bands" viewBox="0 0 1000 10" preserveAspectRatio="none" role="img" '
            f'aria-label="requests: {_a(words)}">{"".join(rects)}</svg>')


def _block(first: int | None, r: Report | None = None) -> Callable[[Block], str]:
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
        fork = ""
        if r is not None and b.turn is not None:
            fork = (f'<p class="fork-cmd legend">Rewind here: <code>{_e(_fork_command(r, b.turn))}</code> '
                    "(a new session of everything before this turn)</p>")
        return (
            f'<section class="block" id="block-{b.first_seq}"><h3>{_e(title)}</h3><div class="legend">{_e(facts)}'
            f"</div>{_bands(b)}{fork}{table if len(b.items) else ''}</section>"
        )

    return render


def _timeline(r: Report) -> str:
    legend = (
        '<p class="legend">Each turn with its requests as bands: <span class="tag plan">plan mode</span> '
        '<span class="tag build">build mode</span>. Long stretches are summarised.</p>'
    )
    body = _listing(
        r.timeline, _block(r.first_at, r), _stretch_div("turns and stretches between turns"), empty="<p>No events.</p>"
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
            f'<tr id="rev-{_a(rev.plan_id)}-{rev.revision}"><td>{_id(rev.plan_id)} rev {rev.revision}'
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
        f"<td>{_id(r.call_id)}</td><td>{_e(r.question)}</td><td>{_e(r.plan or '—')}</td>"
        f'<td><span class="tag {"allowed" if r.outcome == "approved" else "warned"}">{_e(r.outcome)}</span></td>'
        f"<td>{_e(r.answer)}</td></tr>"
    )


def _verification_row(v: Verification) -> str:
    tag = {"complete": "allowed", "verify-fail": "refused"}.get(v.action, "")
    word = {"complete": "passed", "verify-fail": "failed", "verify": "verification started"}.get(v.action, v.action)
    return (
        f'<tr><td class="num"><a href="#seq-{v.seq}">{v.seq}</a></td><td>{_e(v.turn or "—")}</td>'
        f"<td>{_id(v.plan_id)} rev {v.revision}</td><td><span class=\"tag {tag}\">{_e(word)}</span></td>"
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
        f"<tr><td>{_id(g.goal_id)}</td><td>{_e(g.objective)}</td>"
        f'<td><svg class="meter" viewBox="0 0 100 10" preserveAspectRatio="none" role="img" '
        f'aria-label="{g.rounds} of {g.max_rounds} rounds"><rect class="track" width="100" height="10"/>'
        f'<rect class="done" width="{share:.1f}" height="10"/></svg> {g.rounds} / {g.max_rounds}</td>'
        f"<td>{_e(g.phase)}{'<br><small>' + _e(g.reason) + '</small>' if g.reason else ''}</td>"
        f'<td class="num">{g.changes}</td></tr>'
    )


def _change_row(first: int | None) -> Callable[[GoalChangeEntry], str]:
    def row(c: GoalChangeEntry) -> str:
        return (
            f'<tr><td class="num"><a href="#seq-{c.seq}">{c.seq}</a></td><td>{_e(_offset(c.at, first))}</td>'
            f"<td>{_e(c.operation)}</td><td>{_id(c.goal_id)} rev {c.revision}</td><td>{_e(c.phase)}"
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
            out.append(f"{_id(session)}#{seq}")
    text = ", ".join(out)
    if count > len(listed):
        text += f" … and {count - len(listed):,} more"
    return text or "—"


def _machine(key: str, graph: Graph, use: MachineUse, linked: bool) -> str:
    extra = [e for e in use.extra if e not in set(graph.edges)]
    drawn = marks(key, graph, use.counts, extra, lambda e: observable(key, e))
    visited = frozenset(s for d in drawn if d.count for s in (d.edge.source, d.edge.target))
    if graph.initial is not None:
        visited |= {graph.initial}
    svg = marked_svg(key, graph.title, drawn, visited, graph)
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
        f'<section class="machine-box" id="machine-{_a(key)}"><h3>{_e(_TITLES.get(key, graph.title))}</h3>'
        f'<p class="legend">{_e(coverage)}.{source} Dark and heavier: taken (the heavier, the more often); '
        f"dashed: never taken; dotted: no log can show it; orange: taken, not in the table. Laid out by "
        f"Graphviz.</p>{svg}"
        f'<p class="hint" hidden>Choose a transition in the diagram to see the events that took it.</p>'
        f'<div class="detail" aria-live="polite"></div>'
        f"<table><tr><th>from</th><th>to</th><th>transition</th><th class=\"num\">taken</th><th>events</th></tr>"
        f"{rows}</table></section>"
    )


def _edge_row(d: Mark, use: MachineUse, linked: bool) -> str:
    edge: Edge = d.edge
    label = edge.label
    if d.style == "extra":
        label += f" (not in the table: {use.extra.get(edge, '')})"
    elif d.style == "hidden":
        label += " (appends nothing)"
    return (
        f'<tr id="{_a(d.ident)}-row" class="{_a(d.style)}" data-edge="{_a(d.ident)}"><td>{_e(edge.source)}</td>'
        f'<td>{_e(edge.target)}</td><td>{_e(label)}</td><td class="num">{d.count:,}</td>'
        f"<td>{_seq_links(use.seqs.get(edge, ()), d.count, linked)}</td></tr>"
    )


def _diagrams(machines: Mapping[str, MachineUse], graphs: Mapping[str, Graph], linked: bool, intro: str) -> str:
    boxes = "".join(_machine(key, graphs[key], machines[key], linked) for key in MACHINES)
    return f'<section id="machines"><h2>State machines</h2><p class="legend">{intro}</p>{boxes}</section>'



def _usage(r: Report) -> str:
    """The place of the usage view (latency, tokens and cost per step, turn
    and session, from the usage the log records on the model's messages):
    its own module renders it; nothing until the log records usage."""
    return ""


# --------------------------------------------------------------------------
# Every event, the state at any seq, lineage


def page_name(session: str) -> str:
    """The file name the page of ``session`` goes by, so that pages written
    side by side link each other (a fork to its source, a source to its
    forks): the id percent-encoded, or a hash of it when that is too long."""
    name = quote(session, safe="")
    if len(name) > 200:
        name = "session-" + hashlib.sha256(session.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return name + ".html"


def _shell(text: str) -> str:
    return shlex.quote(visible(text))


def _data(text: str) -> str:
    """Text inside a data block: nothing in it can close the block."""
    return text.replace("<", "\\u003c")


def _events(r: Report) -> str:
    index = r.index
    if index is None:
        return ""
    origin = _shell(r.origin) if r.origin else "FILE"
    around = f"planfold report --db {origin} --session {_shell(r.session)} -o {_shell(page_name(r.session))} --around"
    facts = {**names_json(index), "around_command": around}
    left = ""
    if index.left_out:
        left = (f" {index.left_out:,} payloads are not embedded (over {index.limit:,} bytes, or past the page's "
                f"budget of {index.budget:,} compressed bytes): each names the command that shows it, "
                f"<code>{_e(around)} SEQ</code>.")
    chunks = "".join(
        f'<script type="application/gzip-base64" class="event-chunk" data-first="{c.first}" data-last="{c.last}">'
        f"{c.data}</script>"
        for c in index.chunks
    )
    selects = "".join(
        f'<label>{label} <select id="event-{key}"><option value="-1">any</option></select></label> '
        for key, label in (("kind", "kind"), ("tool", "tool"), ("rule", "rule"))
    )
    return (
        '<section id="events"><h2>Every event</h2>'
        f'<p class="legend">All {index.events:,} events are in this page: {index.embedded:,} with their payload whole '
        f"(tool outputs, messages and review notes included).{left} Search by text (or #seq for one event) and "
        "filter by kind, tool, rule and turn; open an event to read it in full with the folded state after it.</p>"
        '<p class="needs-script legend">Searching and opening events needs script; the sections above are the '
        "page's printable record.</p>"
        '<form id="event-search" class="search" hidden><label>text (or #seq) <input id="event-text" type="search">'
        f'</label> {selects}<label>turn <input id="event-turn" type="number" min="0"></label> '
        '<button type="submit">search</button></form>'
        '<p id="event-count" aria-live="polite"></p>'
        '<table id="event-results"><tr><th class="num">seq</th><th class="num">turn</th><th>kind</th><th>tool</th>'
        "<th>rule</th><th>payload</th><th></th></tr></table>"
        '<button id="event-more" type="button" hidden>show 200 more</button>'
        '<div id="event-open" aria-live="polite"></div>'
        "<h3>The state at a seq</h3>"
        '<p class="legend">The kernel\'s fold of the events up to a seq: plan mode, the plan and its open todos, '
        "the goal and its rounds (taken from the fold when the page was made, wherever it changed).</p>"
        f'<form id="state-form" hidden><label>seq <input id="state-seq" type="number" min="0" max="{index.events}">'
        '</label> <button type="submit">show</button></form><dl id="state-at" class="facts"></dl>'
        f'<script type="application/json" id="event-facts">{_data(json.dumps(facts))}</script>'
        f'<script type="application/gzip-base64" id="event-states">{index.states}</script>{chunks}</section>'
    )


def _forks(r: Report) -> str:
    if not r.forks:
        return ""
    items = ", ".join(
        f'<a href="{_a(page_name(fork))}" class="fork-link">{_e(_short(fork))}</a> (at seq {seq:,})'
        for fork, seq in r.forks
    )
    return f"<dt>forks of it</dt><dd>{items} <small>(sessions of the same database)</small></dd>"


def _fork_command(r: Report, turn: int) -> str:
    origin = _shell(r.origin) if r.origin else "DB"
    return f"planfold fork --db {origin} {_shell(r.session)} NEW --turn {turn}"

def render_report(report: Report) -> str:
    """The page of one session's report."""
    intro = (
        "Each machine as its transition table draws it, with the transitions this session took drawn heavier and "
        "counted, and the ones it never took shown as such. Choose a transition to list the events that took it."
    )
    return _page(
        f"planfold report: {_short(report.session)}",
        [
            _header(report),
            _timeline(report),
            render_usage(report.usage),
            _revisions(report),
            _reviews(report),
            _goals(report),
            _usage(report),
            _diagrams(report.machines, report.graphs, True, _e(intro)),
            _events(report),
        ],
    )


# --------------------------------------------------------------------------
# The coverage page


def _session_row(s: SessionLine) -> str:
    verdict = '<span class="verdict ok">ok</span>'
    if s.mismatches:
        verdict = ('<span class="verdict bad">FAILS the audit</span> '
                   + "; ".join(_e(m) for m in s.mismatches))
    if s.bad is not None:
        verdict = (f'<span class="verdict bad">BAD at {_e(_where(s.bad))} [{_e(s.bad.rule)}]</span> '
                   f"{_e(s.bad.detail)}")
    return (
        f'<tr><td>{_id(s.session)}</td><td class="num">{s.events:,}</td>'
        f'<td class="num">{s.turns:,}</td><td>{verdict}</td></tr>'
    )


def render_coverage(coverage: CoverageReport) -> str:
    """The page of a whole database: every session's verdict, and every
    machine with the transitions all of them took together."""
    facts = (
        f"<dt>source</dt><dd>{_id(coverage.source)}</dd><dt>sessions</dt><dd>{coverage.sessions:,}"
        f"</dd><dt>events</dt><dd>{coverage.events:,}</dd><dt>audit</dt><dd>"
        + ('<span class="verdict ok">every session passes the audit</span>' if not coverage.bad else
           f'<span class="verdict bad">{coverage.bad:,} session(s) fail the audit</span>')
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
        f"planfold report: {_short(coverage.source)}",
        [
            f'<header><h1>planfold report: every session of <code>{_e(_short(coverage.source))}</code></h1>'
            f'<dl class="facts">{facts}</dl></header>',
            f'<section id="sessions"><h2>Sessions</h2>{sessions}</section>',
            _diagrams(coverage.machines, coverage.graphs, False, _e(intro)),
        ],
    )
