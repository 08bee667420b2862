"""Timelines beyond one decision: the proofs of a timeline's intervals, and the timelines of a
whole resource (who gained and lost access) and of a whole subject (what it gained and lost).

A keyed timeline starts from one answer at ``since`` (``who`` for a resource, ``list`` or a
query for a subject) and then follows the decision relation's derived change feed: each
transaction whose log touches the decision's dependency cone is applied incrementally to a
reasoner of the facts at ``since`` with the decision relation watched, and the rows the
transaction gained and lost (engine/eval/incremental.py) open and close intervals. No ``who``
per revision; a new policy rebuilds that reasoner and diffs the answer under it
(engine/answer/history.py builds it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..compile.restrict import cone
from ..core import arguments, ir
from ..core.journal import VALID
from ..core.results import Changes
from . import timed, timed_proofs
from .explain import Explanation
from .history import Edge, Interval, _build, kept, past, span

Reasoner = Any
Key = tuple[ir.Value, ...]


def pattern(rel: str, args: tuple[ir.Var | ir.Value, ...]) -> str:
    """A goal of ``rel`` with some arguments variables: ``allowed(alice, O, R)``."""
    shown = (str(a) if isinstance(a, ir.Var) else ir.show_value(a) for a in args)
    return f"{rel}({', '.join(shown)})"


# -- proofs of intervals -----------------------------------------------------------------------


@dataclass(frozen=True)
class ProvenInterval:
    """An interval with the proof at its start (the why at the opening revision) and the
    why-not at its end (at the closing revision; None while it still holds)."""

    interval: Interval
    why: Explanation
    why_not: Explanation | None

    @property
    def start(self) -> Edge:
        return self.interval.start

    @property
    def end(self) -> Edge | None:
        return self.interval.end

    @property
    def held_before(self) -> bool:
        return self.interval.held_before

    def __contains__(self, revision: object) -> bool:
        return revision in self.interval

    def to_dict(self) -> dict[str, Any]:
        return {**self.interval.to_dict(), "why": self.why.to_dict(),
                "why_not": None if self.why_not is None else self.why_not.to_dict()}


def _at(r: Reasoner, edge: Edge) -> Reasoner:
    """The reasoner of ``edge``: its revision, its clock (the facts' validity intervals) at
    the edge's moment — the transaction's commit, or when an interval started or ended."""
    p = past(r, edge.revision, None)
    if edge.committed_at is not None:
        from . import validity

        return validity.at(p, validity.instant(edge.committed_at, "now"))
    return p


def _explain(r: Reasoner, edge: Edge, goal: str, shared: timed_proofs.Shared | None = None,
             holds: bool = True) -> Explanation:
    """``goal`` explained at ``edge``: by point reads at its revision, the facts' validity
    intervals read at its moment (engine/answer/timed_proofs.py: no reasoner of it built;
    ``shared``: the reads of the timeline's other edges, ``holds``: a why expected, else a
    why-not) where they apply and no reasoner of it is kept, else by the reasoner of the
    edge (:func:`_at`)."""
    if kept(r, edge.revision) is not None:
        got = None
    elif shared is not None:
        got = shared.explain(r, edge.revision, goal, holds, edge.committed_at)
    else:
        got = timed_proofs.explain(r, edge.revision, goal, now=edge.committed_at)
    return _at(r, edge).explain(goal) if got is None else got


def prove(r: Reasoner, subject: str, operation: str, resource: str,
          intervals: Iterable[Interval]) -> list[ProvenInterval]:
    """``intervals`` of ``decision(subject, operation, resource)`` (``timeline``'s), each
    with its why at the start and its why-not at the end: explained only for these, with
    the reads shared between the edges when there are many (engine/answer/timed_proofs.py
    ``Shared``, ``SHARED_FROM``)."""
    goal = ir.show_atom(r.program.decision, (subject, operation, resource))
    intervals = list(intervals)
    edges = [e.revision for i in intervals for e in (i.start, i.end) if e is not None]
    shared = timed_proofs.shared(r, edges) if len(edges) >= timed_proofs.SHARED_FROM else None
    out = []
    for i in intervals:
        why = _explain(r, i.start, goal, shared, True)
        why_not = None if i.end is None else _explain(r, i.end, goal, shared, False)
        out.append(ProvenInterval(i, why, why_not))
    return out


def leaves(e: Explanation) -> list[str]:
    """The base facts a why-proof rests on (its ``fact`` leaves), in proof order, once
    each: the grants and memberships that give the decision."""
    if not e.holds or e.proof is None:
        return []
    seen: dict[str, None] = {}
    for n in e.proof.walk():
        if n.kind == "fact":
            seen[n.text] = None
    return sorted(seen)


# -- keyed timelines ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """A key (a subject; an operation and a resource) gained or lost at ``edge``."""

    key: Key
    gained: bool
    edge: Edge

    def to_dict(self, names: tuple[str, ...]) -> dict[str, Any]:
        return {**dict(zip(names, self.key, strict=True)),
                "change": "gained" if self.gained else "lost", **self.edge.to_dict()}


@dataclass(frozen=True)
class AccessTimeline:
    """The intervals per key from revision ``first`` to ``last``: for a resource
    timeline the keys are ``(subject,)``, for a subject timeline ``(operation, resource)``
    (``names`` names their parts; ``of``: the fixed arguments)."""

    of: dict[str, ir.Value]
    names: tuple[str, ...]
    first: int
    last: int
    intervals: dict[Key, list[Interval]] = field(default_factory=dict)

    def at(self, revision: int) -> set[Key]:
        """The keys that held at ``revision``."""
        return {k for k, ivs in self.intervals.items() if any(revision in i for i in ivs)}

    def changes(self) -> list[Change]:
        """Every gain and loss, in revision order (an interval that held at ``first``
        has no gain)."""
        out = []
        for k, ivs in self.intervals.items():
            for i in ivs:
                if not i.held_before:
                    out.append(Change(k, True, i.start))
                if i.end is not None:
                    out.append(Change(k, False, i.end))
        out.sort(key=lambda c: (c.edge.revision, c.edge.committed_at or 0.0, not c.gained,
                                ir.row_key(c.key)))
        return out

    def to_dict(self) -> dict[str, Any]:
        return {**self.of, "first": self.first, "last": self.last,
                "intervals": [{**dict(zip(self.names, k, strict=True)),
                               "intervals": [i.to_dict() for i in ivs]}
                              for k, ivs in sorted(self.intervals.items(),
                                                   key=lambda kv: ir.row_key(kv[0]))],
                "changes": [c.to_dict(self.names) for c in self.changes()]}


def timeline(r: Reasoner, subject: str, operation: str, resource: str,
             since: object = None, until: object = None) -> list[Interval]:
    """The intervals between ``since`` and ``until`` (revisions, or times as ``as_of``
    takes them; default: the oldest revision kept and the head) in which ``decision(subject,
    operation, resource)`` held, each edge the transaction (or the validity edge) that
    opened or closed it: :func:`keyed` with one key."""
    arguments.question(arguments.DECIDED, (subject, operation, resource))
    asked = (subject, operation, resource)
    over = timed.decided(r, (0, 1, 2), asked, since, until)  # over revision intervals
    if over is not None:
        return over.intervals(asked)

    def start(live: Reasoner) -> set[Key]:
        return {()} if live.check(subject, operation, resource) else set()

    def select(row: ir.Row) -> Key | None:
        return () if tuple(row) == asked else None

    found = keyed(r, {"subject": subject, "operation": operation, "resource": resource}, (),
                  since, until, start, select)
    return list(found.intervals.get((), []))


def resource_timeline(r: Reasoner, operation: str, resource: str, since: object = None,
                      until: object = None) -> AccessTimeline:
    """Who could perform ``operation`` on ``resource`` between ``since`` and ``until``
    (revisions or times, as ``timeline`` takes them), each interval tied to the transactions
    that opened and closed it."""
    arguments.question(("operation", "resource"), (operation, resource))
    of: dict[str, ir.Value] = {"operation": operation, "resource": resource}
    over = timed.decided(r, (1, 2), (operation, resource), since, until)
    if over is not None:
        return _over(over, of, ("subject",), lambda row: (row[0],))

    def start(live: Reasoner) -> set[Key]:
        return {(s,) for s in live.who(operation, resource)}

    def select(row: ir.Row) -> Key | None:
        return (row[0],) if row[1] == operation and row[2] == resource else None

    return keyed(r, of, ("subject",), since, until, start, select)


def subject_timeline(r: Reasoner, subject: str, operation: str | None = None,
                     since: object = None, until: object = None) -> AccessTimeline:
    """What ``subject`` could do (``operation``: only that operation) between ``since`` and
    ``until``: per (operation, resource), the intervals and the transactions that opened and
    closed them."""
    arguments.question(("subject",), (subject,))

    def start(live: Reasoner) -> set[Key]:
        if operation is not None:
            return {(operation, x) for x in live.list(subject, operation)}
        goal = pattern(live.program.decision, (subject, ir.Var("O"), ir.Var("R")))
        return {(b["O"], b["R"]) for b in live.query(goal)}

    def select(row: ir.Row) -> Key | None:
        if row[0] != subject or (operation is not None and row[1] != operation):
            return None
        return (row[1], row[2])

    of: dict[str, ir.Value] = {"subject": subject}
    if operation is not None:
        of["operation"] = operation
    over = timed.decided(r, (0,) if operation is None else (0, 1),
                         (subject,) if operation is None else (subject, operation), since,
                         until)
    if over is not None:
        return _over(over, of, ("operation", "resource"), lambda row: (row[1], row[2]))
    return keyed(r, of, ("operation", "resource"), since, until, start, select)


def _over(over: timed.Decided, of: dict[str, ir.Value], names: tuple[str, ...],
          key: Callable[[ir.Row], Key]) -> AccessTimeline:
    """The timeline of every key from decision rows evaluated over revision intervals."""
    return AccessTimeline(of, names, over.first, over.last,
                          {key(row): over.intervals(row) for row in over.rows})


def keyed(r: Reasoner, of: dict[str, ir.Value], names: tuple[str, ...], since: object,
          until: object, start: Callable[[Reasoner], set[Key]],
          select: Callable[[ir.Row], Key | None]) -> AccessTimeline:
    """The timeline of every key: ``start(live)`` the keys holding at ``since`` (asked of
    a reasoner of that revision, and again under each new policy), ``select(row)`` the key
    of a decision row (None: not of this timeline)."""
    journal, committed, first, last = span(r, since, until)
    policies = {rev for rev in journal.policy_revisions() if first < rev <= last}

    def edge(rev: int) -> Edge:
        c = committed.get(rev)
        return Edge(rev) if c is None else Edge(rev, c.committed_at, c.author, c.reason,
                                                c.ticket)

    def when(rev: int) -> float | None:
        c = committed.get(rev)
        return None if c is None else c.committed_at

    clock = when(first) if first in committed else journal.committed_at(first) or (
        when(min(committed)) if committed else None)  # the horizon's, after a compaction

    def build(rev: int, at: float | None) -> tuple[ir.Program, Reasoner]:
        program, live = _build(r, rev, at)
        live._watch = frozenset({program.decision})  # its change feed carries the decision
        return program, live

    program, live = build(first, clock)
    cone_rels = cone(program, [program.decision]) | {VALID}
    held = start(live)
    opened: dict[Key, Edge] = {k: edge(first) for k in held}
    before = set(held)
    out: dict[Key, list[Interval]] = {}

    def close(k: Key, at: Edge | None) -> None:
        first_one = k in before and k not in out  # it held at ``first``: not opened then
        out.setdefault(k, []).append(Interval(opened.pop(k), at, first_one))

    def turn(gained: Iterable[Key], lost: Iterable[Key], at: Edge) -> None:
        for k in lost:
            if k in opened:
                close(k, at)
        for k in gained:
            if k not in opened:
                opened[k] = at

    def feed(changes: Changes, at: Edge) -> None:
        d = program.decision
        turn({k for row in changes.gained(d) if (k := select(row)) is not None},
             {k for row in changes.lost(d) if (k := select(row)) is not None}, at)

    def passing(until_t: float | None, rev: int) -> None:
        c = live._clock
        while until_t is not None and (due := c.due()) is not None and due <= until_t:
            seen: list[Changes] = []
            live.listeners.append(seen.append)
            try:
                c.move(due)
            finally:
                live.listeners.remove(seen.append)
            lines = tuple(line for ch in seen for line in Changes(
                {rel: x for rel, x in ch.by_relation.items()
                 if rel not in ch.derived_relations}).lines())
            for ch in seen:
                feed(ch, Edge(rev, due, passed=lines))
        if until_t is not None and until_t > c.now:  # no edge left before it: the clock
            c.move(until_t)  # is then (a transaction's intervals are read at its commit)

    rev = first
    for e in journal.since(first):
        if e.revision > last:
            break
        passing(when(e.revision), rev)
        rev = e.revision
        if e.revision in policies:
            program, live = build(e.revision, when(e.revision))
            cone_rels = cone(program, [program.decision]) | {VALID}
            now = start(live)
            turn(now - set(opened), set(opened) - now, edge(e.revision))
        elif (e.added.keys() | e.removed.keys()) & cone_rels:
            touched = (e.added.keys() | e.removed.keys()) & cone_rels
            ops = {rel: {**dict.fromkeys(e.removed.get(rel, ()), False),
                         **dict.fromkeys(e.added.get(rel, ()), True)} for rel in touched}
            feed(live._apply(*live._delta(ops), live._watch, live.revision + 1),
                 edge(e.revision))
    passing(time.time() if until is None else when(last), rev)
    for k in list(opened):
        close(k, None)
    for ivs in out.values():
        ivs.sort(key=lambda i: i.start.revision)
    return AccessTimeline(of, names, first, last, out)
