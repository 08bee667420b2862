"""Timelines evaluated over revision intervals: when ``decision(subject, operation, resource)``
held between two revisions, without replaying the transactions in between.

A check at one past revision (engine/answer/pointread.py) reads, by indexed point lookups, the
few facts its goal-directed evaluation reaches. A timeline asks the same goal at every revision
of a stretch: here each lookup reads *every version* of the facts it matches, each with the
revisions ``[lo, hi)`` it was present in (:class:`~engine.core.journal.TimedReader`: the store's
temporal table, grantlog/store/temporal.py ``TimedFacts``), and the rules are evaluated once
over these interval-annotated rows (engine/answer/spans.py): a join intersects the intervals of
the rows it joins, a relation is the union of its rules' rows (intervals merged per row), a
negation subtracts the intervals of the negated rows, comparisons and assignments act on the
values. That is exact: a row holds at revision ``t`` iff some derivation's facts all held at
``t`` and its negated facts did not. The plans are the goal-directed ones of a check
(engine/plan/demand.py: every derived relation answered on demand, bodies ordered by the live
reasoner's statistics, views unfolded); a lookup of a recursive relation (nested groups, the
hierarchy's closure) is tabled with its strongly connected component's other lookups and
evaluated again until none grows (from empty sets, so the least fixpoint).

A policy installed inside the stretch starts a new stretch evaluated under that policy (as the
review on Spark does: engine/answer/periods.py); an interval that continues across it is one
interval. The decision's revisions become the timeline's intervals, each edge the transaction
that opened or closed it (its revision, commit time, author, reason and ticket: read for these
revisions only).

**Validity intervals** (expiring and scheduled grants: engine/answer/validity.py). A fact
stored with an interval holds at a point of the timeline when its ``@valid`` row is present
at the revision and ``valid_from <= t < valid_until`` at the moment; a rule file's fact with
one, when the moment is inside it. The timeline then also changes between two commits, when
time passes a bound (as the replay's clock passes it: timelines.py ``keyed``, ``passing``).
Chosen: one axis (engine/answer/spans.py ``Moments``), commits and moments in the order the
replay meets them, each point an integer — ``R << 64`` the commit of revision ``R``, a bound
``t`` passed while ``R`` is in force just after it (``R``: the last revision committed before
``t``, one indexed read per distinct bound) — so a fact's revisions and its interval's moments
are both intervals of it and the evaluation above runs unchanged, on the same spans. The
alternative, a two-dimensional domain of revision stretches x time, would turn each fact into
rectangles and each join and negation into rectangle algebra (a negation fragments them),
for the same answer read along the same path. The axis is used only when the stretch has
intervals (an indexed probe; else the spans are plain revisions, as before); the facts with
an interval are read by the partial indexes of the ``@valid`` rows (the fact's relation and
one of its values: grantlog/store/checkpoints.py ``point_indexes``). An edge at a moment is
an :class:`~engine.answer.history.Edge` of the revision in force, the moment as its
``committed_at`` and ``passed`` the facts whose interval started or ended then (read by the
bounds' indexes), as the replay gives it. Commit times are taken to grow with revisions (as
a store writes them).

Where this does not apply, :func:`decided` returns None and engine/answer/timelines.py replays
the log: a journal without a temporal table (no checkpoint taken).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from grantlog.grammar.facts import collector_paused

from ..core import ir
from ..core.journal import VALID, TimedReader
from ..core.terms import compare
from ..core.times import INF, show
from ..plan.codegen import key_binding
from ..plan.join import Assign, Filter, NegCheck, RulePlan, Scan, plan_bound
from . import history, point_proofs, pointread, timed_proofs, validity
from .history import Edge, Interval, _bound
from .spans import MASK, SHIFT, Moments, Spans, meet, merge, micros, minus

Reasoner = Any
Key = tuple[ir.Value, ...]
#: a lookup's answer: the rows matching its key, each with the revisions it held in
Answer = dict[ir.Row, Spans]
_Lookup = tuple[str, tuple[int, ...], Key]
_NONE: Answer = {}
#: lookups of a relation by one column after which the whole relation is read once (when it
#: has at most :data:`SCAN_ROWS` rows by the statistics)
SCAN_AFTER = 8
SCAN_ROWS = 20_000


class TimedContext:
    """One policy stretch ``[first, last]`` of a journal: lookups of any relation of
    ``program`` answered with their rows' intervals (see the module docstring)."""

    def __init__(self, r: Reasoner, program: ir.Program, reader: TimedReader, first: int,
                 last: int, moments: Axis | None = None) -> None:
        self.source = program
        self.program, self.own, self.plans = pointread.planned(r, program)
        self.reader = reader
        self.first, self.last = first, last
        #: with validity intervals: the axis of commits and moments the spans are on
        self.moments = moments
        self.whole: Spans = [(first, last + 1)] if moments is None else \
            moments.stretch(first, last)
        self.derived = frozenset(program.derived)
        self.memo: dict[_Lookup, Answer] = {}
        #: recursive lookups not complete yet (their component's leader is evaluating)
        self.table: dict[_Lookup, Answer] = {}
        #: per strongly connected component being evaluated, its lookups so far
        self.active: dict[frozenset[str], list[_Lookup]] = {}
        self._read: dict[tuple[str, int | None, Any], Answer] = {}
        self._asked: dict[tuple[str, int], int] = {}
        self._narrow: dict[_Lookup, dict[Key, Answer]] = {}
        self._selective: dict[tuple[str, tuple[int, ...]], int] = {}
        self._by: dict[tuple[str, int], dict[Any, Answer]] = {}
        self._groups: dict[tuple[str, tuple[int, ...], int | None, Any],
                           dict[Key, Answer]] = {}
        self._stored: dict[str, bool] = {}
        #: the bodies' plans per (rule, bound variables): made once per program
        self._plans: dict[tuple[int, frozenset[str]], RulePlan] = \
            self.program.compiled.setdefault("timed", {})  # type: ignore[assignment]
        self._dispatch: dict[tuple[str, tuple[int, ...]],
                             tuple[int, dict[ir.Value, list[ir.Rule]], list[ir.Rule]]] = {}

    # -- base facts ------------------------------------------------------------------------

    def base(self, rel: str, cols: tuple[int, ...], key: Key) -> Answer:
        """The stored facts of ``rel`` (and the rule files') matching ``key`` on ``cols``,
        with their intervals: read by the most selective column, kept per its value."""
        c = self._selective.get((rel, cols)) if cols else None
        if c is None and cols:
            c = self._selective[(rel, cols)] = pointread.selective(self.source, self.plans,
                                                                   rel, cols)
        v: Any = key[cols.index(c)] if c is not None else None
        k = (rel, c, v)
        got = self._read.get(k)
        if got is None and c is not None and self._scan(rel, c):
            by = self._by.get((rel, c))
            if by is None:  # the whole relation's versions grouped by that column, once
                by = self._by[(rel, c)] = {}
                for row, s in self.base(rel, (), ()).items():
                    by.setdefault(row[c], {})[row] = s
            got = self._read[k] = by.get(v, _NONE)
        if got is None:
            got = {}
            if rel in self.source.relations:
                got = dict(self.reader.rows(rel, {} if c is None else {c: v}, self.first,
                                            self.last))  # type: ignore[arg-type]
                if self.moments is not None:
                    got = self._timed(rel, {} if c is None else {c: v}, got)
            timed = self.source.validity.get(rel) if self.moments is not None else None
            for row in self.own.get(rel, ()):
                if c is None or row[c] == v:
                    iv = timed.get(row) if timed else None
                    if iv is None:
                        got[row] = self.whole
                    else:  # a rule file's fact with an interval
                        assert self.moments is not None
                        got[row] = merge([*got.get(row, ()),
                                          *self.moments.valid(self.whole, *iv)])
                        if not got[row]:
                            del got[row]
            self._read[k] = got
        if len(cols) <= 1:
            return got
        # several columns: that value's rows grouped by them, once for every key sharing it
        gk = (rel, cols, c, v)
        groups = self._groups.get(gk)
        if groups is None:
            groups = self._groups[gk] = {}
            for row, s in got.items():
                groups.setdefault(tuple(row[i] for i in cols), {})[row] = s
        return groups.get(key, _NONE)

    def _timed(self, rel: str, bound: dict[int, ir.Value], got: Answer) -> Answer:
        """The stored facts ``got`` on the axis of moments, with the facts of ``rel``
        stored with a validity interval (while it holds)."""
        m = self.moments
        assert m is not None
        out = {row: m.revisions(s) for row, s in got.items()}
        if not m.has_timed(rel):
            return {row: s for row, s in out.items() if s}
        for vrow, s in self.reader.timed(rel, bound, self.first, self.last).items():
            fact, lo, hi = m.interval(vrow)
            both = m.valid(m.revisions(s), lo, hi, (str(vrow[2]), str(vrow[3])))
            if both:
                had = out.get(fact)
                out[fact] = both if not had else merge([*had, *both])
        return {row: s for row, s in out.items() if s}

    def _scan(self, rel: str, c: int) -> bool:
        """Whether lookups of ``rel`` by column ``c`` are answered from one read of the
        whole relation: after :data:`SCAN_AFTER` of them, when statistics say it is small
        (a role's holders asked for each role granted on a resource over the years)."""
        if (rel, c) in self._by:
            return True
        n = self._asked[(rel, c)] = self._asked.get((rel, c), 0) + 1
        stats = self.plans.stats
        return n > SCAN_AFTER and stats is not None and rel in self.source.relations \
            and stats.size(rel) <= SCAN_ROWS

    def stored(self, rel: str) -> bool:
        """Whether a derived relation has stored facts in the stretch (``@writable``)."""
        got = self._stored.get(rel)
        if got is None:
            got = self._stored[rel] = rel not in self.source.read_only \
                and bool(self.base(rel, (), ()))
        return got

    # -- lookups -----------------------------------------------------------------------------

    def lookup(self, rel: str, cols: tuple[int, ...], key: Key) -> Answer:
        """The rows of ``rel`` whose ``cols`` are ``key``, with their intervals."""
        if rel not in self.derived:
            return self.base(rel, cols, key)
        k = (rel, cols, key)
        got = self.memo.get(k)
        if got is not None:
            return got
        scc = self.plans.scc.get(rel)
        if scc is None:
            coarse = self.plans.coarse(rel, cols)  # a small coarser lookup shared by many
            if coarse is not None:
                sub = tuple(key[i] for i in coarse.take)
                nk = (rel, cols, sub)
                narrow = self._narrow.get(nk)
                if narrow is None:  # the coarser answer grouped by the other columns, once
                    narrow = self._narrow[nk] = {}
                    for row, s in self.lookup(rel, coarse.cols, sub).items():
                        narrow.setdefault(tuple(row[c] for c, _ in coarse.rest), {})[row] = s
                got = self.memo[k] = narrow.get(tuple(key[i] for _, i in coarse.rest), _NONE)
            else:
                got = self.memo[k] = self._evaluate(rel, cols, key)
            return got
        partial = self.table.get(k)
        if partial is not None:
            return partial
        group = self.active.get(scc)
        if group is not None:  # inside its component's evaluation: again until none grows
            group.append(k)
            self.table[k] = {}
            got = self.table[k] = self._evaluate(rel, cols, key)
            return got
        group = self.active[scc] = [k]
        self.table[k] = {}
        try:
            changed = True
            while changed:
                changed = False
                i = 0
                while i < len(group):
                    g = group[i]
                    new = self._evaluate(*g)
                    if new != self.table[g]:
                        self.table[g] = new
                        changed = True
                    i += 1
        finally:
            del self.active[scc]
        for g in group:
            self.memo[g] = self.table.pop(g)
        return self.memo[k]

    def _plan(self, rule: ir.Rule, bound: frozenset[str]) -> RulePlan:
        k = (rule.index, bound)
        got = self._plans.get(k)
        if got is None:
            flat = self.plans.unfold(rule)
            got = self._plans[k] = plan_bound(flat, set(bound), self.program.virtual,
                                              self.plans.order(flat, bound))
        return got

    def _rules(self, rel: str, cols: tuple[int, ...], key: Key) -> list[ir.Rule]:
        """The rules of ``rel`` whose head may match ``key`` (selected as a check's lookup
        selects them: by the key's value where most heads have a constant)."""
        k = (rel, cols)
        got = self._dispatch.get(k)
        if got is None:
            d = self.plans.calls(rel, cols)
            rules = {rule.index: rule for rule in self.plans.rules.get(rel, ())}
            got = self._dispatch[k] = (d.pos, {v: [rules[i] for i, _ in fs]
                                               for v, fs in d.by.items()},
                                       [rules[i] for i, _ in d.rest])
        pos, by, rest = got  # ``by``'s rules include those with a variable there (``rest``)
        return rest if pos < 0 else by.get(key[pos], rest)

    def _evaluate(self, rel: str, cols: tuple[int, ...], key: Key) -> Answer:
        parts: dict[ir.Row, list[Spans]] = {}  # per row, the intervals of its derivations
        if self.stored(rel):
            for row, s in self.base(rel, cols, key).items():
                parts.setdefault(row, []).append(s)
        for rule in self._rules(rel, cols, key):
            env = key_binding(tuple(rule.head.args[c] for c in cols), key)
            if env is None:
                continue
            plan = self._plan(rule, frozenset(env))
            for e, s in self._run(plan, env):
                row = tuple(e[t.name] if isinstance(t, ir.Var) else t.value
                            for t in plan.head.args)
                parts.setdefault(row, []).append(s)
        return {row: p[0] if len(p) == 1 else merge(x for s in p for x in s)
                for row, p in parts.items()}

    def _run(self, plan: RulePlan, env: dict[str, ir.Value],
             ) -> list[tuple[dict[str, ir.Value], Spans]]:
        """The bindings of ``plan``'s body (``env`` bound first) with their intervals."""
        binds: list[tuple[dict[str, ir.Value], Spans]] = [(env, self.whole)]
        for s in plan.steps:
            nxt: list[tuple[dict[str, ir.Value], Spans]] = []
            if isinstance(s, Scan):
                for e, sp in binds:
                    found = self.lookup(s.rel, s.key_cols, _key(s.key_terms, e))
                    for row, rs in found.items():
                        both = meet(sp, rs)
                        if not both:
                            continue
                        if s.out:
                            e2 = dict(e)
                            for c, name in s.out:
                                e2[name] = row[c]
                            if any(row[c] != e2[name] for c, name in s.eqs):
                                continue
                            nxt.append((e2, both))
                        else:
                            nxt.append((e, both))
            elif isinstance(s, NegCheck):
                for e, sp in binds:
                    found = self.lookup(s.rel, s.key_cols, _key(s.key_terms, e))
                    rest = minus(sp, merge(x for rs in found.values() for x in rs)) \
                        if found else sp
                    if rest:
                        nxt.append((e, rest))
            elif isinstance(s, Filter):
                nxt = [(e, sp) for e, sp in binds
                       if compare(s.op, _value(s.left, e), _value(s.right, e))]
            elif isinstance(s, Assign):
                nxt = [({**e, s.var: _value(s.value, e)}, sp) for e, sp in binds]
            binds = nxt
            if not binds:
                break
        return binds


def _digest(program: ir.Program) -> str:
    """``program.digest``, computed once per program (it hashes the rule texts)."""
    got = program.compiled.get("digest")
    if not isinstance(got, str):
        got = program.compiled["digest"] = program.digest
    return got


def _value(t: ir.Term, env: Mapping[str, ir.Value]) -> ir.Value:
    return env[t.name] if isinstance(t, ir.Var) else t.value


def _key(terms: tuple[ir.Term, ...], env: Mapping[str, ir.Value]) -> Key:
    return tuple(env[t.name] if isinstance(t, ir.Var) else t.value for t in terms)


# -- timelines ---------------------------------------------------------------------------------


class Axis(Moments):
    """:class:`~engine.answer.spans.Moments` over a journal's timed reader: the revision in
    force at a moment read by its commit times' index, the validity intervals decoded once,
    whether a relation has any in the stretch asked once."""

    def __init__(self, reader: TimedReader, first: int, last: int, start: float,
                 end: float | None) -> None:
        super().__init__(first, last, start, end, reader.revision_before)
        self.reader = reader
        self._has: dict[str, bool] = {}
        self._decoded: dict[ir.Row, tuple[ir.Row, float, float]] = {}

    def has_timed(self, rel: str) -> bool:
        got = self._has.get(rel)
        if got is None:
            got = self._has[rel] = self.reader.present(VALID, {0: rel}, self.first, self.last)
        return got

    def interval(self, vrow: ir.Row) -> tuple[ir.Row, float, float]:
        """The fact a validity row is of and its bounds (seconds; unbounded: infinite)."""
        got = self._decoded.get(vrow)
        if got is None:
            _, fact, (lo, hi) = validity.decode(vrow)
            got = self._decoded[vrow] = (fact, lo, hi)
        return got


@dataclass(frozen=True)
class Decided:
    """The decision rows matching a key between revisions ``first`` and ``last``, each
    with its intervals (``edges``: the transactions, or the moments, of their ends);
    ``lookups`` and ``rows_read``: what the reader did. The intervals are of positions:
    revisions, or with validity intervals the points of the axis of commits and moments
    (engine/answer/spans.py ``Moments``) from ``start`` to ``end`` (excluded)."""

    first: int
    last: int
    rows: dict[ir.Row, Spans]
    edges: dict[int, Edge]
    lookups: int
    rows_read: int
    start: int = -1
    end: int = -1

    def edge(self, position: int) -> Edge:
        return self.edges.get(position, Edge(position))

    def intervals(self, row: ir.Row) -> list[Interval]:
        """``row``'s intervals as a timeline gives them (the first one held already at
        ``first`` when it starts there; the last still holds when it ends after ``last``)."""
        start = self.first if self.start < 0 else self.start
        end = self.last + 1 if self.end < 0 else self.end
        return [Interval(self.edge(lo), None if hi >= end else self.edge(hi), lo == start)
                for lo, hi in self.rows.get(row, [])]


def decided(r: Reasoner, cols: tuple[int, ...], key: Key, since: object = None,
            until: object = None, *, rel: str | None = None,
            more: tuple[Key, ...] = ()) -> Decided | None:
    """The rows of ``r``'s decision relation whose ``cols`` are ``key`` with the revisions
    between ``since`` and ``until`` (revisions, or times as ``as_of`` takes them; default:
    the oldest revision kept and the head) they held in (with validity intervals: the
    points of commits and moments, see the module docstring); None where this path does not
    apply (see the module docstring: timelines.py replays the log). ``rel``: another
    relation's rows instead (None where a policy of the stretch lacks it); ``more``: the
    rows of further keys on ``cols`` too, in the same evaluation (their reads shared: a
    role's holders, engine/answer/review.py)."""
    journal = r.journal
    make = getattr(journal, "timed_reader", None)
    if make is None:
        return None
    reader: TimedReader | None = make()
    if reader is None:
        return None
    first = _bound(r, since, "since")
    first = reader.oldest if first is None else first
    last = reader.head if until is None else _bound(r, until, "until")
    assert last is not None
    if last < first:
        from ..core import arguments

        raise arguments.bad_argument("until", f"a revision of at least {first} (`since`)",
                                     until)
    reader.check(first)
    reader.check(last)
    cuts = sorted({first, *(p for p in journal.policy_revisions() if first < p <= last)})
    stretches = []
    for lo, hi in zip(cuts, [*cuts[1:], last + 1], strict=True):
        program = journal.policy_at(lo) or r.program
        if program is not r.program and _digest(program) == _digest(r.program):
            program = r.program  # its plans are made already
        d = program.relations.get(rel or program.decision)
        if d is None or (rel is None and d.arity != 3):
            return None  # no decision: the replay's error
        stretches.append((program, lo, hi - 1))
    parts: dict[ir.Row, list[tuple[int, int]]] = {}
    axis = None  # (the journal's own reads first: not inside the reader's transaction)
    if any(p.validity for p, _, _ in stretches) or reader.present(VALID, {}, first, last):
        axis = _axis(journal, reader, first, last, until is None)
    # one read of the store (one snapshot); bounded work with no cycles among what it makes:
    # a collection would walk the whole reasoner
    with reader.reading(), collector_paused():
        for program, lo, hi in stretches:
            ctx = TimedContext(r, program, reader, lo, hi, axis)
            for k in (key, *more):
                for row, s in ctx.lookup(rel or program.decision, cols, k).items():
                    parts.setdefault(row, []).extend(s)
        rows = {row: merge(p) for row, p in parts.items()}
        rows = {row: s for row, s in rows.items() if s}
        if axis is None:
            ends = {x for s in rows.values() for iv in s for x in iv if x <= last}
            edges = {rev: Edge(rev, c.committed_at, c.author, c.reason, c.ticket)
                     for rev, c in reader.transactions(ends).items()}
            return Decided(first, last, rows, edges, getattr(reader, "lookups", 0),
                           getattr(reader, "rows_read", 0))
        ends = {x for s in rows.values() for iv in s for x in iv if x < axis.end}
        commits = reader.transactions({x >> SHIFT for x in ends if not x & MASK})
        edges = {}
        for x in ends:
            rev = x >> SHIFT
            c = commits.get(rev)
            if x & MASK:
                t, text = axis.named[x]
                edges[x] = Edge(rev, t, passed=_passed(reader, stretches, rev, t, text))
            elif c is not None:
                edges[x] = Edge(rev, c.committed_at, c.author, c.reason, c.ticket)
            else:
                edges[x] = Edge(rev)
    return Decided(first, last, rows, edges, getattr(reader, "lookups", 0),
                   getattr(reader, "rows_read", 0), axis.start, axis.end)


def _axis(journal: Any, reader: TimedReader, first: int, last: int, now: bool) -> Axis:
    """The axis of moments of a timeline from ``first`` to ``last``: from the time of
    ``first``'s commit (the horizon's, or else the oldest kept transaction's: where the
    replay's clock starts) to the wall clock (``now``) or ``last``'s commit."""
    got = reader.transactions({first, last, reader.oldest + 1})
    start = got[first].committed_at if first in got else journal.committed_at(first)
    if start is None and reader.oldest + 1 in got:
        start = got[reader.oldest + 1].committed_at
    wall = time.time()
    end = wall if now else got[last].committed_at if last in got else None
    return Axis(reader, first, last, wall if start is None else start, end)


def _passed(reader: TimedReader, stretches: list[tuple[ir.Program, int, int]], rev: int,
            t: float, text: str | None) -> tuple[str, ...]:
    """The facts whose validity interval started (``+fact``) or ended (``-fact``) at the
    moment ``t`` while revision ``rev`` was in force, as the replay's change feed lists them:
    the stored ones (by the interval rows' indexes) and the rule files' of that policy."""
    shown = text or show(t)
    by: dict[str, tuple[set[ir.Row], set[ir.Row]]] = {}
    for i, came in ((2, True), (3, False)):
        for vrow in reader.rows(VALID, {i: shown}, rev, rev):
            rel, fact, _ = validity.decode(vrow)
            by.setdefault(rel, (set(), set()))[came].add(fact)
    us = micros(t)
    program = next(p for p, lo, hi in stretches if lo <= rev <= hi)
    for rel, facts in program.validity.items():
        for fact, (lo, hi) in facts.items():
            for b, came in ((lo, True), (hi, False)):
                if abs(b) != INF and micros(b) == us:
                    by.setdefault(rel, (set(), set()))[came].add(fact)
    out: list[str] = []
    for rel in sorted(by):
        gone, new = by[rel][False], by[rel][True]
        out += [f"-{ir.show_atom(rel, f)}" for f in sorted(gone, key=ir.row_key)]
        out += [f"+{ir.show_atom(rel, f)}" for f in sorted(new, key=ir.row_key)]
    return tuple(out)


# -- the state at an edge -----------------------------------------------------------------------

#: how far before a validity edge the state "just before" it is read (bounds are kept in
#: microseconds: no other bound lies in between)
JUST_BEFORE = 1e-6


def before(edge: Edge) -> tuple[int, float | None]:
    """The (revision, moment) just before ``edge``: a transaction's, the revision before it
    at its commit time (a bound at that time passed before the commit); a validity edge's,
    the revision in force a microsecond before the moment (None: no time known)."""
    t = edge.committed_at
    if edge.passed:
        return edge.revision, None if t is None else t - JUST_BEFORE
    return edge.revision - 1, t


def explain_at(r: Reasoner, revision: int, goal: str, t: float | None = None) -> Any:
    """``goal`` explained at ``revision`` as it stood at the moment ``t`` (None: the clock;
    the facts' validity intervals read then): by point reads where they apply
    (engine/answer/timed_proofs.py: the facts at ``t`` read by points where some have a
    validity interval), else by the reasoner of that revision at ``t``, as a review's path
    or a timeline's proof at a validity edge needs."""
    if t is None or history.kept(r, revision) is not None:
        got = None
    else:
        got = timed_proofs.explain(r, revision, goal, now=t)
    if got is not None:
        return got
    if t is None:
        return timed_proofs.explain_at(r, revision, goal)
    return validity.at(history.past(r, revision, None),
                       validity.instant(t, "now")).explain(goal)


def explain_each_at(r: Reasoner, revision: int, goals: Sequence[str],
                    t: float | None = None) -> list[Any]:
    """:func:`explain_at` of each of ``goals`` at ``revision`` and the moment ``t``, by point
    reads over one view with one prover for them all (point_proofs.py ``explain_each``),
    where they apply; a goal with no answer has no why-not tree (its ``holds`` is False).
    The goals they do not apply to are each explained by :func:`explain_at`."""
    got: list[Any] | None = None
    now = None if t is None or history.kept(r, revision) is not None else t
    if now is not None or history.kept(r, revision) is None:
        v = timed_proofs.view(r, revision, None, now)
        got = None if v is None else point_proofs.explain_each(*v, goals, why_not=False)
    if got is None:
        got = [None] * len(goals)
    return [ex if ex is not None else explain_at(r, revision, g, t)
            for g, ex in zip(goals, got, strict=True)]


__all__ = ["Axis", "Decided", "TimedContext", "before", "decided", "explain_at",
           "explain_each_at"]
