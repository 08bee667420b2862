"""History on the command line: ``--at REV|TIME`` on the questions (``check``, ``list``,
``who``, ``explain``, ``query``) over a ``--store``, ``--author``/``--reason``/``--ticket``
on the commands that write a store (``store load``, ``import ... --store``), and
``grantlog history SUBJECT OPERATION RESOURCE --store URL``: when the decision held. See
docs/history.md."""

from __future__ import annotations

import argparse
from typing import Any

from grantlog.grammar.diagnostics import GrantlogError, error

from .inputs import COMMAND_LINE, EXIT_NO, EXIT_OK, add_command, load, out

HELP_AT = ("answer as the --store's facts (and policy) stood at revision REV, or at TIME (ISO "
           "8601, e.g. 2026-03-03T12:00:00Z; a date is its midnight UTC)")
HELP_NOW = ("count the facts with a validity interval (`from ... until ...`) as at TIME "
            "(ISO 8601 or seconds since the epoch; default: the clock)")
HELP_AUTHOR = "who writes: recorded with the transaction (`grantlog store log` shows it)"
HELP_REASON = "why: recorded with the transaction"
HELP_TICKET = "a change request or ticket (free text) recorded with the transaction"


def add_at(sp: argparse.ArgumentParser) -> None:
    """``--at REV|TIME`` and ``--now TIME``."""
    sp.add_argument("--at", metavar="REV|TIME", help=HELP_AT)
    sp.add_argument("--now", metavar="TIME", help=HELP_NOW)


def add_meta(sp: argparse.ArgumentParser) -> None:
    """``--author``, ``--reason``, ``--ticket``."""
    sp.add_argument("--author", metavar="NAME", help=HELP_AUTHOR)
    sp.add_argument("--reason", metavar="TEXT", help=HELP_REASON)
    sp.add_argument("--ticket", metavar="ID", help=HELP_TICKET)


def at(a: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of ``--at`` (none without it): ``at_revision`` for a number,
    else ``as_of``. ``--at`` needs ``--store`` (the history is the store's)."""
    now = {"now": a.now} if getattr(a, "now", None) is not None else {}  # --now
    value = getattr(a, "at", None)
    if value is None:
        return now
    if not getattr(a, "store", None):
        raise GrantlogError([error("bad-option", "--at needs --store: the history is the "
                                   "store's change log", COMMAND_LINE,
                                   "add --store URL (sqlite:///facts.db, postgresql://...)")])
    text = value.strip()
    if text.isdigit():
        return {"at_revision": int(text), **now}
    return {"as_of": text, **now}


def meta(a: argparse.Namespace) -> Any:
    """The transaction's :class:`~grantlog.engine.core.journal.Meta` of ``--author``,
    ``--reason``, ``--ticket``."""
    from grantlog.engine.core.journal import Meta

    return Meta(getattr(a, "author", None), getattr(a, "reason", None),
                getattr(a, "ticket", None))


def _bound(value: str | None) -> Any:
    """``--since``/``--until``: a revision (digits) or a time."""
    return None if value is None else int(value) if value.strip().isdigit() else value


def _show_edge(e: Any) -> str:
    """An edge in words: its revision, when, by whom, why (or the validity edge it is)."""
    import time

    when = "" if e.committed_at is None else \
        time.strftime(" (%Y-%m-%d %H:%M:%S UTC", time.gmtime(e.committed_at)) + \
        "".join(f", {k} {v}" for k, v in (("by", e.author), ("ticket", e.ticket)) if v) \
        + (f": {e.reason}" if e.reason else "") + ")"
    if e.passed:  # no transaction: validity intervals started or ended then
        return f"{when.strip()[1:-1]} at revision {e.revision}, as {', '.join(e.passed)}"
    return f"revision {e.revision}{when}"


def _question(a: argparse.Namespace) -> tuple[str, str, str] | None:
    """SUBJECT OPERATION RESOURCE (the last three positionals; the rest are rule files), or
    None with ``--resource``/``--subject`` (a whole resource's or subject's timeline)."""
    words = list(a.files)
    whole = a.resource_of is not None or a.subject_of is not None
    if a.resource_of is not None and a.subject_of is not None:
        raise GrantlogError([error("bad-option", "--resource and --subject exclude each "
                                   "other", COMMAND_LINE, "ask one timeline at a time")])
    if whole:
        if a.resource_of is not None and a.operation_of is None:
            raise GrantlogError([error("bad-option", "--resource needs --operation",
                                       COMMAND_LINE, "add --operation OP (e.g. read)")])
        return None
    if len(words) < 3:
        raise GrantlogError([error("bad-option", "history needs SUBJECT OPERATION RESOURCE, "
                                   "--resource R --operation O, or --subject S",
                                   COMMAND_LINE, "e.g. grantlog history --model gravitino "
                                   "--store URL dave load_table m1.c.s.t")])
    a.files = words[:-3]
    s, o, x = words[-3:]
    return s, o, x


def cmd_history(a: argparse.Namespace) -> int:
    import json

    if not a.store:
        raise GrantlogError([error("bad-option", "history needs --store: the history is the "
                                   "store's change log", COMMAND_LINE,
                                   "add --store URL (sqlite:///facts.db, postgresql://...)")])
    asked = _question(a)
    r = load(a, a.files)
    if asked is None:
        return _whole(a, r)
    subject, operation, resource = asked
    found = r.timeline(subject, operation, resource, _bound(a.since), _bound(a.until),
                       proofs=a.explain)
    if a.json:
        out(json.dumps([i.to_dict() for i in found], indent=2, ensure_ascii=False))
        return EXIT_OK if found else EXIT_NO
    for i in found:
        start = ("held at " if i.held_before else "from ") + _show_edge(i.start)
        end = "until now" if i.end is None else "until " + _show_edge(i.end)
        out(f"{start} {end}")
        if a.explain:
            out(f"why at revision {i.start.revision}:")
            out(_indent(i.why.render()))
            if i.why_not is not None:
                assert i.end is not None
                out(f"why not at revision {i.end.revision}:")
                out(_indent(i.why_not.render()))
    if not found:
        out("never held")
    return EXIT_OK if found else EXIT_NO


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def _whole(a: argparse.Namespace, r: Any) -> int:
    """``--resource R --operation O`` or ``--subject S [--operation O]``: every change."""
    import json

    since, until = _bound(a.since), _bound(a.until)
    if a.resource_of is not None:
        t = r.resource_timeline(a.operation_of, a.resource_of, since, until)
    else:
        t = r.subject_timeline(a.subject_of, a.operation_of, since, until)
    if a.json:
        out(json.dumps(t.to_dict(), indent=2, ensure_ascii=False))
        return EXIT_OK if t.intervals else EXIT_NO
    held = sorted(t.at(t.first))
    out(f"at revision {t.first}: " + (", ".join(" ".join(map(str, k)) for k in held)
                                      if held else "nobody" if a.resource_of else "nothing"))
    for c in t.changes():
        out(f"{' '.join(map(str, c.key))} {'gained' if c.gained else 'lost'} at "
            f"{_show_edge(c.edge)}")
    return EXIT_OK if t.intervals else EXIT_NO


def add_parser(sub: Any) -> None:
    sp = add_command(sub, "history", "when SUBJECT could perform OPERATION on RESOURCE: the "
                     "intervals, each opened and closed by a transaction of the --store; "
                     "or who gained and lost access to a --resource, what a --subject gained "
                     "and lost", inputs=True, json=True,
                     usage="grantlog history [options] [FILE ...] SUBJECT OPERATION RESOURCE "
                     "| --resource R --operation O | --subject S [--operation O]")
    sp.add_argument("--resource", dest="resource_of", metavar="R",
                    help="the whole resource's timeline: who gained and lost OPERATION on it")
    sp.add_argument("--subject", dest="subject_of", metavar="S",
                    help="the whole subject's timeline: what it gained and lost")
    sp.add_argument("--operation", dest="operation_of", metavar="O",
                    help="with --resource (needed) or --subject (only that operation)")
    sp.add_argument("--explain", action="store_true",
                    help="each interval with the proof at its start and the why-not at its "
                    "end")
    sp.add_argument("--since", metavar="REV|TIME",
                    help="from this revision or time (default: the oldest kept)")
    sp.add_argument("--until", metavar="REV|TIME",
                    help="up to this revision or time (default: the last)")
    sp.set_defaults(fn=cmd_history)
