"""A period of a journal's history as facts with revision intervals: the input of a
whole-platform access review on Spark (spark_bridge/review.py), which propagates the
intervals through the rules instead of evaluating them once per revision.

:func:`period` reads the facts at ``since`` (:meth:`Journal.snapshot_at`) and the log up to
``until`` once, and returns each base fact of the decision relation's dependency cone with
the revisions ``[lo, hi)`` in which it was present (``hi``: the revision that removed it;
``last + 1`` while it still held at ``until``), cut into :class:`Stretch` es of one policy
each (a policy installed at revision ``p`` starts a stretch there: the store keeps policies by
serial). The rule files' own facts hold through their stretch. Each revision's
:class:`~engine.answer.history.Edge` (commit time, author, reason) comes along, so an interval
can say which transactions opened and closed it, as a timeline does.

Facts with a validity interval (:data:`~engine.core.journal.VALID`) start and end between
revisions, at times: a period holding any in the cone is refused (``unsupported-feature``);
the in-memory timelines (engine/answer/timelines.py) follow them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grantlog.grammar.diagnostics import GrantlogError, Span, error

from ..compile.restrict import cone
from ..core import ir
from ..core.journal import VALID
from .history import Edge, span

Reasoner = Any
#: a base fact present in revisions ``[lo, hi)``
Timed = tuple[ir.Row, int, int]
_API = Span("<api>", 0, 0, 0, 0)


@dataclass(frozen=True)
class Stretch:
    """Revisions ``[start, end)`` under one ``program``; ``facts``: per base relation of
    the decision's cone, its facts with the revisions they were present in (clipped to the
    stretch; the rule files' facts not included: ``program.facts``)."""

    program: ir.Program
    start: int
    end: int
    facts: dict[str, list[Timed]] = field(default_factory=dict)


@dataclass(frozen=True)
class Period:
    """Revisions ``first`` to ``last`` (both included) of a journal: its policy
    :class:`Stretch` es in order and each revision's :class:`Edge`."""

    first: int
    last: int
    stretches: tuple[Stretch, ...]
    edges: dict[int, Edge]

    def edge(self, revision: int) -> Edge:
        return self.edges.get(revision, Edge(revision))


def period(r: Reasoner, since: object = None, until: object = None) -> Period:
    """The facts of ``r``'s journal between ``since`` and ``until`` (revisions, or times as
    ``as_of`` takes them; default: the oldest revision kept and the head), as intervals."""
    journal, committed, first, last = span(r, since, until)
    edges = {rev: Edge(rev, c.committed_at, c.author, c.reason, c.ticket)
             for rev, c in committed.items() if first <= rev <= last}
    cuts = sorted({first, *(p for p in journal.policy_revisions() if first < p <= last)})
    bounds = list(zip(cuts, [*cuts[1:], last + 1], strict=True))
    programs = [journal.policy_at(lo) or r.program for lo, _ in bounds]
    wanted = set().union(*(cone(p, [p.decision]) for p in programs)) | {VALID}
    # every fact of the cone: when it came (``opened``) and the intervals it held in
    _, rows = journal.snapshot_at(first)
    opened: dict[tuple[str, ir.Row], int] = {
        (rel, row): first for rel, rs in rows.items() if rel in wanted for row in rs}
    spans: list[tuple[str, ir.Row, int, int]] = []
    for e in journal.since(first):
        if e.revision > last:
            break
        for rel, rs in e.removed.items():
            if rel in wanted:
                for row in rs:
                    lo = opened.pop((rel, row), None)
                    if lo is not None:
                        spans.append((rel, row, lo, e.revision))
        for rel, rs in e.added.items():
            if rel in wanted:
                for row in rs:
                    opened.setdefault((rel, row), e.revision)
    spans += [(rel, row, lo, last + 1) for (rel, row), lo in opened.items()]
    if any(rel == VALID for rel, *_ in spans):
        raise GrantlogError([error(
            "unsupported-feature", "the facts of this period include facts with a validity "
            "interval, which the review on Spark does not read", _API,
            "review the period in memory (`grantlog history`, `grantlog review --since`), "
            "or a period without expiring or scheduled grants")])
    stretches = []
    for (lo, hi), program in zip(bounds, programs, strict=True):
        facts: dict[str, list[Timed]] = {}
        mine = cone(program, [program.decision])
        for rel, row, a, b in spans:
            if rel in mine and a < hi and lo < b and rel in program.relations:
                facts.setdefault(rel, []).append((row, max(a, lo), min(b, hi)))
        stretches.append(Stretch(program, lo, hi, facts))
    return Period(first, last, tuple(stretches), edges)


__all__ = ["Period", "Stretch", "Timed", "period"]
