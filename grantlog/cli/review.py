"""``grantlog review --subject S | --resource R | --role ROLE [--since REV|TIME]
[--format json|csv|html] [-o FILE]``: an access review (engine/answer/review.py) as JSON (the
stable layout of ``Review.to_dict``), CSV (one row per entry, with its change) or one
self-contained HTML page (tables and a timeline chart: inline CSS and SVG, nothing fetched).
See docs/history.md."""

from __future__ import annotations

import argparse
import csv
import html
import io
import json
import time
from typing import Any

from grantlog.engine.answer import timed
from grantlog.grammar.diagnostics import GrantlogError, error

from .inputs import COMMAND_LINE, EXIT_OK, add_command, load, out

FORMATS = ("json", "csv", "html")
CSV_COLUMNS = ("subject", "operation", "resource", "change", "revision", "committed_at",
               "author", "reason", "ticket", "path", "policy")
#: rows of the HTML timeline chart at most (the tables list every entry)
CHART_ROWS = 80


def to_json(rv: Any) -> str:
    return json.dumps(rv.to_dict(), indent=2, ensure_ascii=False) + "\n"


def _iso(t: float | None) -> str:
    return "" if t is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _policy_of(rv: Any, e: Any) -> str:
    """The digest of the policy ``e``'s path was read under (the review's ``policies``): an
    entry held now, the reviewing reasoner's (``now``); one not held now, the store's in
    force where its path was read (just before its last loss, else at ``since``; empty
    where none was read)."""
    pol = rv.policies
    if e.change not in ("lost", "transient"):
        return str(pol.get("now", ""))
    gone = [v.edge for v in e.events if not v.gained]
    was = timed.before(gone[-1])[0] if gone else rv.since
    cuts = [p for p in pol.get("past", ()) if was is not None and p["from"] <= was]
    return str(cuts[-1]["policy"]) if cuts and e.path else ""


def to_csv(rv: Any) -> str:
    """One row per entry: its change (empty without ``since``), the transaction of its last
    gain or loss, its path (the facts, ``; ``-separated) and the digest of the policy its
    path was read under (:func:`_policy_of`)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for e in rv.entries:
        last = e.events[-1].edge if e.events else None
        w.writerow([e.subject, e.operation, e.resource, e.change,
                    "" if last is None else last.revision,
                    "" if last is None else _iso(last.committed_at),
                    "" if last is None else last.author or "",
                    "" if last is None else last.reason or "",
                    "" if last is None else last.ticket or "", "; ".join(e.path),
                    _policy_of(rv, e)])
    return buf.getvalue()


def _policies(rv: Any) -> str:
    """The policies the review was evaluated under (``policies``: engine/answer/review.py),
    by digest, as a paragraph."""
    e, pol = html.escape, rv.policies
    if not pol:
        return ""
    now = str(pol.get("now", ""))
    parts = [f"now (the current entries and their paths): <code>{e(now)}</code>"]
    if "stored" in pol:
        stored = pol["stored"]
        parts.append("the store's at its head: " + ("none" if stored is None else
                     "the same" if stored == now else f"<code>{e(str(stored))}</code>"))
    for p in pol.get("past", ()):
        parts.append(f"the history from r{e(str(p['from']))}: "
                     f"<code>{e(str(p['policy']))}</code>")
    return f'<p class="meta">Policies: {"; ".join(parts)}.</p>'


CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#1d2430}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}
.meta{color:#56606f;margin:0 0 16px}
.counts span{display:inline-block;margin-right:14px;padding:2px 10px;border-radius:10px;
background:#eef1f5}
table{border-collapse:collapse;width:100%;margin:6px 0}
th,td{text-align:left;padding:5px 8px;border-bottom:1px solid #dde2e8;vertical-align:top}
th{background:#f4f6f9;font-weight:600}
td.path{font:12px/1.4 ui-monospace,Menlo,Consolas,monospace;color:#3b4452}
.gained{color:#11703a;font-weight:600}.lost{color:#b42318;font-weight:600}
.transient{color:#a15c00;font-weight:600}
svg text{font:11px system-ui,sans-serif;fill:#1d2430}
"""


def _chart(rv: Any) -> str:
    """The entries' intervals between ``since`` and the review's revision, one row each,
    as inline SVG; gains and losses marked."""
    t = rv.timeline
    if t is None:
        return "<p>No history asked for: pass <code>--since</code> (a revision or a date) " \
               "to see what changed.</p>"
    changed = sorted(rv.entries, key=lambda e: not e.events)  # what changed comes first
    keys = [(e.subject, e.operation, e.resource) for e in changed]
    keys = [k for k in keys if k in t.intervals][:CHART_ROWS]
    if not keys:
        return "<p>Nothing held in this period.</p>"
    shown = [n for n, part in enumerate(("subject", "operation", "resource"))
             if part != rv.kind]  # the reviewed part is the same on every row

    def label(k: tuple[Any, ...]) -> str:
        return " · ".join(str(k[n]) for n in shown)

    first, last = t.first, max(t.last, t.first + 1)
    left = 16 + min(480, 7 * max(len(label(k)) for k in keys))
    width, row = 560, 20
    top = 26
    height = top + row * len(keys) + 10

    def x(rev: int) -> float:
        return float(left + width * (rev - first) / (last - first))

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 40}" '
             f'height="{height}" role="img" aria-label="timeline of the entries from revision '
             f'{first} to {t.last}">']
    for rev in sorted({first, t.last, *(c.edge.revision for c in t.changes())}):
        parts.append(f'<line x1="{x(rev):.1f}" y1="{top - 6}" x2="{x(rev):.1f}" '
                     f'y2="{height - 6}" stroke="#e3e7ed"/>')
        parts.append(f'<text x="{x(rev):.1f}" y="{top - 10}" text-anchor="middle">'
                     f'r{rev}</text>')
    for n, k in enumerate(keys):
        y = top + n * row
        parts.append(f'<text x="{left - 8}" y="{y + 13}" text-anchor="end">'
                     f'{html.escape(label(k))}</text>')
        for i in t.intervals[k]:
            end = t.last if i.end is None else i.end.revision
            x0, x1 = x(i.start.revision), max(x(end), x(i.start.revision) + 3)
            who = i.start.author or "?"
            parts.append(f'<rect x="{x0:.1f}" y="{y + 3}" width="{x1 - x0:.1f}" height="12" '
                         f'rx="3" fill="#4f7cc6"><title>from r{i.start.revision} '
                         f'({html.escape(who)}) until '
                         f'{"now" if i.end is None else f"r{i.end.revision}"}</title></rect>')
            if not i.held_before:
                parts.append(f'<circle cx="{x0:.1f}" cy="{y + 9}" r="4" fill="#11703a"/>')
            if i.end is not None:
                parts.append(f'<circle cx="{x1:.1f}" cy="{y + 9}" r="4" fill="#b42318"/>')
    parts.append("</svg>")
    more = "" if len(keys) == sum(1 for k in rv.entries) else \
        f"<p>The first {len(keys)} entries (those that changed first).</p>"
    legend = ('<p class="meta">Bars: the revisions in which an entry held; '
              '<span class="gained">●</span> gained, <span class="lost">●</span> lost. '
              "Hover a bar for the transactions.</p>")
    return legend + "".join(parts) + more


def to_html(rv: Any, title: str | None = None) -> str:
    """One self-contained page: a header, the counts, the timeline chart, the changes and
    the entries with their paths."""
    e = html.escape
    title = title or f"Access review of {rv.kind} {rv.of}"
    since = "the current state" if rv.since is None else \
        f"changes since revision {rv.since}"
    d = rv.to_dict()
    counts = "".join(f"<span>{e(k)}: {v}</span>" for k, v in d["counts"].items())
    rows = []
    for en, ev in rv.changes():
        g = ev.edge
        rows.append(f'<tr><td class="{"gained" if ev.gained else "lost"}">'
                    f'{"gained" if ev.gained else "lost"}</td><td>{e(str(en.subject))}</td>'
                    f"<td>{e(str(en.operation))}</td><td>{e(str(en.resource))}</td>"
                    f"<td>r{g.revision}</td><td>{e(_iso(g.committed_at))}</td>"
                    f"<td>{e(g.author or '')}</td><td>{e(g.reason or '')}</td>"
                    f"<td>{e(g.ticket or '')}</td></tr>")
    changes = ("<table><thead><tr><th>change</th><th>subject</th><th>operation</th>"
               "<th>resource</th><th>revision</th><th>when</th><th>author</th>"
               "<th>reason</th><th>ticket</th></tr></thead><tbody>" + "".join(rows)
               + "</tbody></table>") if rows else "<p>No changes.</p>"
    entries = "".join(
        f'<tr><td>{e(str(x.subject))}</td><td>{e(str(x.operation))}</td>'
        f'<td>{e(str(x.resource))}</td><td class="{e(x.change)}">{e(x.change)}</td>'
        f'<td class="path">{"<br>".join(e(p) for p in x.path)}</td></tr>'
        for x in rv.entries)
    holders = "" if rv.kind != "role" else \
        f"<p>Held by: {e(', '.join(map(str, rv.holders))) or 'nobody'}</p>"
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f"<title>{e(title)}</title><style>{CSS}</style></head><body>"
            f"<h1>{e(title)}</h1><p class=\"meta\">At revision {rv.revision}; {e(since)}."
            f"</p>{_policies(rv)}{holders}<p class=\"counts\">{counts}</p>"
            f"<h2>Timeline</h2>{_chart(rv)}<h2>Changes</h2>{changes}"
            f"<h2>Entries</h2><table><thead><tr><th>subject</th><th>operation</th>"
            f"<th>resource</th><th>change</th><th>path (the facts that give it)</th></tr>"
            f"</thead><tbody>{entries}</tbody></table></body></html>\n")


RENDER = {"json": to_json, "csv": to_csv, "html": to_html}


def cmd_review(a: argparse.Namespace) -> int:
    given = [n for n in ("subject", "resource", "role") if getattr(a, n) is not None]
    if a.spark:
        return _on_spark(a, given)
    if a.until is not None:
        raise GrantlogError([error("bad-option", "--until is for the whole platform's review "
                                   "(--spark)", COMMAND_LINE, "drop --until, or add --spark")])
    if len(given) != 1:
        raise GrantlogError([error("bad-option", "review needs exactly one of --subject, "
                                   "--resource, --role", COMMAND_LINE,
                                   "e.g. grantlog review --model gravitino --facts F "
                                   "--subject alice")])
    if a.since is not None and not a.store:
        raise GrantlogError([error("bad-option", "--since needs --store: the history is the "
                                   "store's change log", COMMAND_LINE,
                                   "add --store URL, or drop --since for the current state")])
    r = load(a, a.files)
    since = None if a.since is None else int(a.since) if a.since.strip().isdigit() \
        else a.since
    rv = r.review(a.subject, a.resource, a.role, since)
    text = RENDER[a.format](rv)
    if a.output:
        with open(a.output, "w", encoding="utf-8", newline="") as f:
            f.write(text)
    else:
        out(text)
    return EXIT_OK


def _on_spark(a: argparse.Namespace, given: list[str]) -> int:
    """Every (subject, operation, resource) interval of the store's history between --since
    and --until, computed on Spark and written as Parquet to -o DIR
    (spark_bridge/review.py)."""
    wrong = "--subject, --resource or --role" if given else None if a.store and a.output \
        else "no --store or no -o DIR"
    if wrong:
        raise GrantlogError([error("bad-option", f"the review on Spark is of the whole "
                                   f"platform's history: {wrong}", COMMAND_LINE,
                                   "grantlog review --spark --store URL --since A --until B "
                                   "-o DIR")])
    from grantlog.spark_bridge.review import prepare, review, session

    def bound(text: str | None) -> object:
        return None if text is None else int(text) if text.strip().isdigit() else text

    r = load(a, a.files)
    checked = prepare(r, bound(a.since), bound(a.until), a.output)  # before Spark starts
    spark = session(a.master)
    t0 = time.perf_counter()
    p, n = review(r, spark, a.output, checked=checked)
    out(f"{n:,} intervals of revisions {p.first} to {p.last} written to {a.output} in "
        f"{time.perf_counter() - t0:.1f} s\n")
    return EXIT_OK


def add_parser(sub: Any) -> None:
    sp = add_command(sub, "review", "an access review: what a --subject may do, who may use "
                     "a --resource, or what a --role's holders may do through it, each entry "
                     "with the facts that give it; with --since, what changed (gained, lost, "
                     "by which transaction and author)", inputs=True)
    sp.add_argument("--subject", metavar="S", help="review what S may do")
    sp.add_argument("--resource", metavar="R", help="review who may do what on R")
    sp.add_argument("--role", metavar="ROLE",
                    help="review what ROLE's holders may do through it (the model's role "
                    "holding relation: a binary relation with a column named `role`)")
    sp.add_argument("--since", metavar="REV|TIME",
                    help="what changed since this revision or time (ISO 8601; needs --store)")
    sp.add_argument("--spark", action="store_true",
                    help="the whole platform's review on Spark: every (subject, operation, "
                    "resource) interval between --since and --until, as Parquet in -o DIR "
                    "(needs --store)")
    sp.add_argument("--until", metavar="REV|TIME",
                    help="the end of the period (--spark; default: the head)")
    sp.add_argument("--master", default="local[*]",
                    help="Spark master URL (--spark; default local[*])")
    sp.add_argument("--format", choices=FORMATS, default="json",
                    help="json (the default: a stable layout, docs/history.md), csv (one row "
                    "per entry) or html (one self-contained page)")
    sp.add_argument("--output", "-o", metavar="FILE",
                    help="write the report to FILE (--spark: the Parquet directory)")
    sp.set_defaults(fn=cmd_review)
