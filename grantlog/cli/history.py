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
HELP_AUTHOR = "who writes: recorded with the transaction (`grantlog store log` shows it)"
HELP_REASON = "why: recorded with the transaction"
HELP_TICKET = "a change request or ticket (free text) recorded with the transaction"


def add_at(sp: argparse.ArgumentParser) -> None:
    """``--at REV|TIME``."""
    sp.add_argument("--at", metavar="REV|TIME", help=HELP_AT)


def add_meta(sp: argparse.ArgumentParser) -> None:
    """``--author``, ``--reason``, ``--ticket``."""
    sp.add_argument("--author", metavar="NAME", help=HELP_AUTHOR)
    sp.add_argument("--reason", metavar="TEXT", help=HELP_REASON)
    sp.add_argument("--ticket", metavar="ID", help=HELP_TICKET)


def at(a: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of ``--at`` (none without it): ``at_revision`` for a number,
    else ``as_of``. ``--at`` needs ``--store`` (the history is the store's)."""
    value = getattr(a, "at", None)
    if value is None:
        return {}
    if not getattr(a, "store", None):
        raise GrantlogError([error("bad-option", "--at needs --store: the history is the "
                                   "store's change log", COMMAND_LINE,
                                   "add --store URL (sqlite:///facts.db, postgresql://...)")])
    text = value.strip()
    if text.isdigit():
        return {"at_revision": int(text)}
    return {"as_of": text}


def meta(a: argparse.Namespace) -> Any:
    """The transaction's :class:`~grantlog.engine.core.journal.Meta` of ``--author``,
    ``--reason``, ``--ticket``."""
    from grantlog.engine.core.journal import Meta

    return Meta(getattr(a, "author", None), getattr(a, "reason", None),
                getattr(a, "ticket", None))


def _bound(value: str | None) -> Any:
    """``--since``/``--until``: a revision (digits) or a time."""
    return None if value is None else int(value) if value.strip().isdigit() else value


def cmd_history(a: argparse.Namespace) -> int:
    import json
    import time

    if not a.store:
        raise GrantlogError([error("bad-option", "history needs --store: the history is the "
                                   "store's change log", COMMAND_LINE,
                                   "add --store URL (sqlite:///facts.db, postgresql://...)")])
    r = load(a, a.files)
    found = r.timeline(a.subject, a.operation, a.resource, _bound(a.since), _bound(a.until))
    if a.json:
        out(json.dumps([i.to_dict() for i in found], indent=2, ensure_ascii=False))
        return EXIT_OK if found else EXIT_NO

    def show(e: Any) -> str:
        when = "" if e.committed_at is None else \
            time.strftime(" (%Y-%m-%d %H:%M:%S UTC", time.gmtime(e.committed_at)) + \
            "".join(f", {k} {v}" for k, v in (("by", e.author), ("ticket", e.ticket)) if v) \
            + (f": {e.reason}" if e.reason else "") + ")"
        return f"revision {e.revision}{when}"

    for i in found:
        start = ("held at " if i.held_before else "from ") + show(i.start)
        end = "until now" if i.end is None else "until " + show(i.end)
        out(f"{start} {end}")
    if not found:
        out("never held")
    return EXIT_OK if found else EXIT_NO


def add_parser(sub: Any) -> None:
    sp = add_command(sub, "history", "when SUBJECT could perform OPERATION on RESOURCE: the "
                     "intervals, each opened and closed by a transaction of the --store",
                     inputs=True, args=("SUBJECT", "OPERATION", "RESOURCE"), json=True)
    sp.add_argument("--since", metavar="REV|TIME",
                    help="from this revision or time (default: the oldest kept)")
    sp.add_argument("--until", metavar="REV|TIME",
                    help="up to this revision or time (default: the last)")
    sp.set_defaults(fn=cmd_history)
