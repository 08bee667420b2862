"""Cardinality estimates for goal-directed plans (engine/eval/demand.py).

A point query binds a few arguments, and the cost of answering it depends almost entirely on
which body atom is read first: in the Gravitino model, ``allow_applies(U, P, O)`` with all three
bound is answered in a handful of lookups when it starts from the object's ancestors, and in
thousands when it starts from every grant of privilege ``P``. Counting bound columns (the
ordering of engine/plan/join.py without statistics) cannot tell the two apart; sizes can.

:class:`Statistics` estimates, for an atom with some columns bound, its *fanout* (rows per
lookup) and the *cost* of one lookup:

* a stored relation (base or materialized): for a lookup, the expected size of the bucket of
  a random row's key (:meth:`Statistics.weighted`, which sees skew); for a membership test,
  ``|R| / Π distinct(c)`` (independence, the textbook estimate; at most 1); cost 1;
* a virtual relation: the sum over its rules of the cheapest plan for the rule body with the
  head's bound variables bound (rows out, work done), computed recursively and memoized; a
  recursive reference met while estimating itself counts as :data:`RECURSIVE`.

:meth:`Statistics.order` picks the order of a body's atoms that minimizes the estimated work
(the sum over steps of rows flowing in × the step's cost), exhaustively for short bodies and
greedily beyond :data:`EXHAUSTIVE` atoms; comparisons and negations are placed as soon as they
are bound (engine/plan/join.py) and assumed to keep half the rows.

Estimates are taken from the database as it is when a plan is first needed; the reasoner
throws them away (and re-plans) when the base facts grow or shrink by a factor of two. What
they read of a big relation is computed once per load, whatever the questions: a sample of
:data:`SAMPLE` rows (grouped once per set of constant columns), and the database's own hash
indexes (the ones the evaluator's walks read; built once, shared) for a closure's counts and
a rare constant's rows (issue 26: no copy of a million-row hierarchy, no walk per question);
where the database has not built such an index of a big relation, the rows are read at C
speed without building it (a parent's children counted, a rare constant's column scanned:
:meth:`Statistics._unindexed`), so a first answer after a load from lists builds only the
indexes its evaluation reads.
The exhaustive search shares the prefixes of the permutations (:meth:`Statistics._exhaustive`).

What each estimate reads (a size, a distinct count, a bucket size, a walk) is recorded
(:attr:`Statistics.reads`), so that the plans made from them are kept with the program and
taken by another reasoner's statistics that read alike (engine/plan/cache.py).
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from operator import itemgetter
from typing import Any

from ..core import ir
from ..core.analyses import edge_closure
from ..core.hierarchy_roles import hierarchy_roles
from ..core.index import Fanout, SortedIndex, build_index, first_holding
from ..core.terms import atom_vars, is_anon
from .cache import Reads, Sample, shaped
from .greedy import greedy

#: (rows per lookup, work per lookup)
Estimate = tuple[float, float]
#: values a bound column takes, by column: drawn from the stored rows that bound it
Given = tuple[tuple[int, tuple[ir.Value, ...]], ...]
#: sampled values kept per variable
GIVEN = 256
#: bodies with at most this many positive atoms are ordered exhaustively
EXHAUSTIVE = 6
#: what a recursive reference is assumed to cost while its own estimate is being computed
RECURSIVE: Estimate = (1.0, 50.0)
#: virtual relations estimated through at most this many levels of rules
MAX_DEPTH = 40
#: share of rows a comparison or a negation keeps
FILTER = 0.5
#: relations up to this size are measured exactly, bigger ones from a sample of this size
SAMPLE = 20_000
#: rows holding an atom's constants found in a sample: fewer cannot be scaled up
RARE = 20


def _bound(t: ir.Term, bound: set[str]) -> bool:
    return isinstance(t, ir.Const) or (t.name in bound and not is_anon(t))


class Statistics:
    """Sizes and per-column distinct counts of the stored relations, estimates for the rest."""

    def __init__(self, program: ir.Program, full: Mapping[str, Any],
                 index: Callable[[str, tuple[int, ...]], Any] | None = None) -> None:
        """``full``: the stored relations' rows; ``index``: the database's hash index of a
        relation on some columns, built on first use and kept up to date
        (engine/eval/database.py), which the statistics share (without one, they build
        their own). engine/plan/kept.py fills the memos from measurements kept with a
        store instead of passes over the rows."""
        self.program = program
        self.full = full
        self._index = index
        self._indexes: dict[tuple[str, tuple[int, ...]], Any] = {}
        self.virtual = program.virtual
        self.rules: dict[str, list[ir.Rule]] = {}
        for r in program.rules:
            self.rules.setdefault(r.head.rel, []).append(r)
        self._distinct: dict[tuple[str, int], int] = {}
        self._weighted: dict[tuple[Any, ...], float] = {}
        self.samples: dict[str, list[ir.Row]] = {}
        self._virtual: dict[tuple[Any, ...], Estimate] = {}
        self._active: set[tuple[Any, ...]] = set()
        self._values: dict[tuple[Any, ...], tuple[ir.Value, ...]] = {}
        self._rows_with: dict[tuple[Any, ...], list[ir.Row]] = {}
        #: per closure edge and direction: how many nodes each inner node reaches
        self._reach: dict[str, dict[ir.Value, int]] = {}
        self._closures: dict[str, Any] = {}
        #: per (relation, columns) of a big relation nothing has indexed: its keys in the
        #: rows' order, or its edges' fanout (read instead of an index: :meth:`_unindexed`)
        self.scanned: dict[tuple[str, tuple[int, ...]], Any] = {}
        #: per (relation, columns): its sample's rows (the relation's own, up to
        #: :data:`SAMPLE`) grouped by their values there (:meth:`_holding`)
        self._grouped: dict[tuple[str, tuple[int, ...]], dict[Any, list[ir.Row]]] = {}
        #: passes over a whole stored relation, and closure nodes walked (each at most once
        #: per direction): what the statistics cost, whatever the questions asked
        self.scans = 0
        self.walked = 0
        #: steps of join orders estimated (:meth:`_exhaustive` shares the prefixes)
        self.steps = 0
        #: the closure walks asked for (the starts; :attr:`_reach` also holds every node
        #: walked through) and the edge samples drawn: what engine/plan/kept.py keeps
        self._starts: set[tuple[str, ir.Value]] = set()
        self._edge_samples: dict[str, list[ir.Row]] = {}
        #: estimates measured on the rows (not taken from kept ones): a reason to keep them;
        #: the indexes built from kept ones (engine/plan/kept.py)
        self.measured = 0
        self.prewarmed: frozenset[tuple[str, tuple[int, ...]]] = frozenset()
        #: what the estimates read, recorded for the plans kept with the program
        #: (engine/plan/cache.py): the node of the estimate under way (a root while none
        #: is), one node per estimate of a virtual relation (:attr:`_deps`); ``checked``,
        #: the kept plans' reads and nodes checked against these statistics
        self.reads = Reads()
        self._deps: dict[tuple[Any, ...], Reads] = {}
        self.checked: dict[Any, Any] = {}

    def _rows(self, rel: str) -> int:
        rows = self.full.get(rel)
        return len(rows) if rows else 0

    def size(self, rel: str) -> int:
        n = self._rows(rel)
        self.reads.own[("size", rel)] = shaped(n, n)
        return n

    def distinct(self, rel: str, col: int) -> int:
        """Distinct values in a column: exact up to :data:`SAMPLE` rows; beyond, estimated
        from a sample of that many: scaled to the relation's size when nearly every sampled
        value is seen once (a key-like column), else the GEE estimate (√(n/s)·f₁ + the values
        seen more than once), which does not scale the values a sample already saturates
        (an object's type)."""
        k = (rel, col)
        d = self._distinct.get(k)
        if d is None:
            self.measured += 1
            rows: Any = self.full.get(rel) or ()
            n = len(rows)
            if n <= SAMPLE:
                d = len({row[col] for row in rows})
            else:
                counts = Counter(row[col] for row in self._sample(rel))
                once = sum(1 for c in counts.values() if c == 1)
                if once >= 0.9 * SAMPLE:
                    d = round(len(counts) * n / SAMPLE)
                else:
                    d = round((n / SAMPLE) ** 0.5 * once) + len(counts) - once
            d = self._distinct[k] = max(1, d)
        self.reads.own[("distinct", rel, col)] = shaped(self._rows(rel), d)
        return d

    def _sample(self, rel: str) -> list[ir.Row]:
        """:data:`SAMPLE` rows of a big relation, drawn once (the same for every column)."""
        got = self.samples.get(rel)
        if got is None:
            rows = self.full.get(rel) or ()
            got = self.samples[rel] = random.Random(len(rows)).sample(list(rows), SAMPLE)
        return got

    def stored(self, rel: str, cols: Sequence[int], arity: int) -> float:
        n = self.size(rel)
        if not n:
            return 0.0
        if not cols:
            return float(n)
        if len(cols) == arity:  # a membership test: the chance that the row is there
            kinds = hierarchy_roles(self.program).kinds
            if arity == 1 and rel in kinds:  # an object's type as a unary relation (issue 26):
                return 1.0 / len(kinds)  # one type of several, as ``entity(S, schema)`` is
            f = float(n)
            for c in cols:
                f /= self.distinct(rel, c)
            return min(1.0, f)
        return max(1.0, self.weighted(rel, tuple(cols)))

    def weighted(self, rel: str, cols: tuple[int, ...],
                 where: tuple[tuple[int, ir.Value], ...] = ()) -> float:
        """The expected number of rows sharing the key of a random row (Σ count² / n over
        the keys on ``cols``). Unlike n / distinct it sees skew: keys taken from other
        relations' rows (join keys) hit the big buckets more often than the small ones —
        a catalog carries far more grants than a table. ``where``: (column, value) pairs
        the rows hold (an atom's constants, ``grant(R, P, A, deny)``): among those rows
        only, so a rare constant makes its lookup selective (0 when no row holds them, below
        :data:`SAMPLE` rows; beyond, a constant fewer than :data:`RARE` sampled rows hold is
        not scaled from them).
        Exact up to :data:`SAMPLE` rows, estimated from a sample of that many beyond."""
        k = (rel, cols, where)
        got = self._weighted.get(k)
        if got is not None:
            self.reads.own[("weighted", *k)] = shaped(self._rows(rel), got)
            return got
        self.measured += 1
        rows: Any = self.full.get(rel) or ()
        n = len(rows)
        key = itemgetter(*cols)
        big = n > SAMPLE
        picked: Any = self._holding(rel, where) if where or big else rows
        m = len(picked)
        if not big:
            counts = Counter(map(key, picked))
            got = sum(c * c for c in counts.values()) / m if m else 0.0
        elif m < RARE:  # too few sampled to tell: as many as could hide from the sample,
            # in one bucket (a metalake's few catalogs among a million objects drew 0 or 1
            # rows, and a scan of them looked like one row)
            got = max(1.0, (m + RARE) * n / SAMPLE)
        else:  # the matching rows of the whole relation, estimated from the sample's
            total = m * n / SAMPLE
            pairs = sum(c * (c - 1) for c in Counter(map(key, picked)).values())
            got = 1.0 + pairs * (total - 1) / (m * (m - 1))
        self._weighted[k] = got
        self.reads.own[("weighted", *k)] = shaped(n, got)
        return got

    def _holding(self, rel: str, where: tuple[tuple[int, ir.Value], ...]) -> list[ir.Row]:
        """The rows of ``rel``'s sample (of the relation itself up to :data:`SAMPLE` rows)
        holding ``where``'s (column, value) pairs: the sample grouped once per set of columns,
        not filtered once per set of values."""
        rows: Any = self.full.get(rel) or ()
        if len(rows) > SAMPLE:
            rows = self._sample(rel)
        if not where:
            return list(rows)
        cols = tuple(c for c, _ in where)
        groups = self._grouped.get((rel, cols))
        if groups is None:
            groups = self._grouped[(rel, cols)] = {}
            for kv, row in zip(map(itemgetter(*cols), rows), rows, strict=True):
                got = groups.get(kv)
                if got is None:
                    groups[kv] = [row]
                else:
                    got.append(row)
        return groups.get(where[0][1] if len(where) == 1 else tuple(v for _, v in where), [])

    def estimate(self, rel: str, cols: tuple[int, ...], arity: int,
                 consts: tuple[tuple[int, ir.Value], ...] = (), given: Given = ()) -> Estimate:
        """Rows per lookup of ``rel`` on ``cols``, and the work of one lookup. ``consts``:
        the key's known values, (column, value) pairs (an atom's constants): a rule whose
        head has another constant there does not answer the lookup (of a decision relation
        with a rule per operation, ``allowed(U, load_table, T)`` runs the load_table rules
        only, as goal-directed evaluation selects them). ``given``: values the bound columns
        take where the rows that bind them are known (:meth:`cost`): a transitive closure
        walked from them is estimated from what they reach (:meth:`_closure`)."""
        if rel not in self.virtual:
            return (self.stored(rel, cols, arity), 1.0)
        k = (rel, cols, consts, given)
        got = self._virtual.get(k)
        if got is not None:
            deps = self._deps.get(k)
            if deps is not None:  # what it read, the estimate under way reads too
                self.reads.kids.add(deps)
            return got
        if k in self._active or len(self._active) >= MAX_DEPTH:
            return RECURSIVE  # recursion, or a chain of views too deep to follow
        self._active.add(k)
        known = dict(consts)
        values = dict(given)
        outer, node = self.reads, Reads()
        self.reads = self._deps[k] = node
        try:
            rows, work = self.stored(rel, cols, arity), 1.0
            walked = self._walk(rel, cols, values)
            if walked is not None:
                rows, work = rows + walked[0], work + walked[1]
                self._virtual[k] = (rows, work)
                return rows, work
            for rule in self.rules.get(rel, ()):
                bound: set[str] = set()
                ok = True
                for c in cols:
                    t = rule.head.args[c]
                    if isinstance(t, ir.Var):
                        bound.add(t.name)
                    elif c in known and known[c] != t.value:
                        ok = False
                if not ok:
                    continue
                samples = {t.name: values[c] for c in cols if c in values
                           and isinstance(t := rule.head.args[c], ir.Var)}
                _, r, w = self._best(rule.body, bound, samples=samples)
                rows += r
                work += w
            if len(cols) == arity and rows > 0.0:
                # a membership test of a derived fact: whether it holds is what is asked, and
                # independence cannot tell (facts derived down a hierarchy go together: a
                # user with USE_CATALOG on a catalog mostly has USE_SCHEMA on its schemas),
                # so it keeps half the rows, like a comparison or a negation
                rows = max(FILTER, min(rows, 1.0))
        finally:
            self._active.discard(k)
            self.reads = outer
            outer.kids.add(node)
        got = self._virtual[k] = (rows, work)
        return got

    def order(self, body: Sequence[ir.Lit], bound: set[str], goal: bool = False) -> list[int]:
        """Body positions of the positive atoms in the cheapest estimated order. ``goal``:
        the body of a query, whose own constants do not select rows (:meth:`_atom`)."""
        return self._best(body, bound, goal)[0]

    def _walk(self, rel: str, cols: tuple[int, ...],
              given: dict[int, tuple[ir.Value, ...]]) -> Estimate | None:
        """:meth:`_closure`, recorded as read (with the atoms ``given``'s values were sampled
        from: engine/plan/cache.py reads it again from theirs)."""
        walked = self._closure(rel, cols, given)
        if walked is not None:
            self.reads.own[("closure", rel, cols, tuple(
                (c, *v.of) for c, v in sorted(given.items()) if isinstance(v, Sample)))
            ] = shaped(max(walked), walked)  # a walk of a few nodes is small
        return walked

    def _closure(self, rel: str, cols: tuple[int, ...],
                 given: dict[int, tuple[ir.Value, ...]]) -> Estimate | None:
        """A transitive closure (engine/eval/closure.py) looked up by a walk, from what the walk
        reaches: walked down from known values, how many nodes they reach on average (the
        average over every node cannot tell a metalake, which reaches a million objects,
        from a table, which reaches none: a plan that walked down from the user's metalake
        looked as cheap as one that walked down from the user's grants); walked up from the
        second column (a lookup on it, or a membership test), how many nodes a sampled node
        has above it."""
        if not cols:
            return None
        if rel not in self._closures:
            self._closures[rel] = edge_closure(self.program, rel)
        c = self._closures[rel]
        if c is None:
            return None
        if cols == (0,):
            if 0 not in given:
                return None
            starts = given[0]
            if not starts:  # nothing binds it: no walk
                return (0.0, 1.0)
            rows = sum(self.reached(c.edge, v, not c.flipped) for v in starts) / len(starts)
            return (rows, rows + 1.0)
        starts = given.get(1) or tuple(row[c.edge_column(1)] for row in
                                       self._edge_sample(c.edge))
        up = sum(self.reached(c.edge, v, c.flipped) for v in starts) / max(1, len(starts))
        if cols == (1,):
            return (up, up + 1.0)
        return (FILTER, up + 1.0)  # a membership test: a walk up from the second column

    def _edge_sample(self, edge: str) -> list[ir.Row]:
        got = self._edge_samples.get(edge)
        if got is None:
            self.measured += 1
            rows: Any = self.full.get(edge) or ()
            picked = self._sample(edge) if len(rows) > SAMPLE else list(rows)
            got = self._edge_samples[edge] = picked[:GIVEN]
        return got

    def reached(self, edge: str, start: ir.Value, down: bool) -> int:
        """The nodes below ``start`` over ``edge`` (``down``: from the first column to the
        second; a node reached twice in a DAG counts twice: an estimate) or above it, each
        node's count computed once (a leaf's, 0, never stored: the walk expands the inner
        nodes only, each at most once per direction, counted in :attr:`walked`). The edge is
        read through the database's index on the column walked from (the one the
        evaluator's walks read: engine/eval/closure.py), a node's children listed and tested
        at C speed, so a walk from the root of a million objects costs one pass over them in
        C, not in Python."""
        key = f"{edge}/{'down' if down else 'up'}"
        reach = self._reach.setdefault(key, {})
        got = reach.get(start)
        if got is not None:
            self._starts.add((key, start))  # (an inner node of an earlier walk, maybe)
            return got
        a, b = (0, 1) if down else (1, 0)
        has, kids_of, count = self._edges(edge, a, b)
        self._starts.add((key, start))
        self.measured += 1
        if not has(start):
            reach[start] = 0
            return 0
        step = itemgetter(b)

        def inner(node: ir.Value) -> list[ir.Value]:
            """The node's children that have children themselves (walked further)."""
            return list(filter(has, map(step, kids_of(node))))

        # post-order without recursion; a node met again on the stack (a cycle) counts 0
        on_stack = {start}
        first = inner(start)
        stack: list[tuple[ir.Value, list[ir.Value], Any]] = [(start, first, iter(first))]
        while stack:
            node, kids, it = stack[-1]
            for kid in it:
                if kid not in reach and kid not in on_stack:
                    on_stack.add(kid)
                    more = inner(kid)
                    stack.append((kid, more, iter(more)))
                    break
            else:
                stack.pop()
                on_stack.discard(node)
                self.walked += 1
                reach[node] = count(node) + sum(map(reach.get, kids, itertools.repeat(0)))
        return reach[start]

    def _edges(self, edge: str, a: int, b: int) -> tuple[Callable[[Any], bool],
                                                        Callable[[Any], Any],
                                                        Callable[[Any], int]]:
        """How a walk reads ``edge`` from column ``a``: whether a node has edges, its edges
        (at least those to nodes that have edges), how many. Through the index on ``a``
        (:meth:`_index_of`), unless the relation is big, not indexed there yet and ``a``
        holds few keys (a parent's many children, not a child's one parent): then counted
        at C speed without the index of buckets (engine/core/index.py ``Fanout``)."""
        db = getattr(self._index, "__self__", None)
        have = getattr(db, "indexes", {}).get((edge, (a,)))
        got = have.unwritten() if type(have) is SortedIndex else None  # a bulk load's
        fan = self._unindexed(edge, (a,), lambda rows: Fanout(rows, a, b) if got is None
                              else Fanout(got[0], a, b, got[1]), few=True)
        if fan is not None:
            return fan.has, fan.kids, fan.count
        ix = self._index_of(edge, (a,))
        return ix.__contains__, ix.get, lambda node: len(ix.get(node))

    def _unindexed(self, rel: str, cols: tuple[int, ...], read: Callable[[Any], Any],
                   few: bool = False) -> Any:
        """``read(rows)``, once, of a relation of more than :data:`SAMPLE` rows that neither
        these statistics nor the database has indexed on ``cols`` nor holds sorted (a store's
        snapshot: its index there is a bisection, made at once) (``few``: and whose sample
        holds each key there twice on average; a sorted index a bulk load made there, not
        hashed yet, is counted so too, not bisected from every node walked), else None: the
        first answer after a load from lists then builds only the indexes its evaluation
        reads (issue 26, item 5)."""
        k = (rel, cols)
        got = self.scanned.get(k)
        if got is None:
            rows: Any = self.full.get(rel) or ()
            db = getattr(self._index, "__self__", None)
            have = getattr(db, "indexes", {}).get(k)
            if few and type(have) is SortedIndex and have.hash is None:
                have = None  # walked from many nodes: counted at C speed, not bisected
            if (len(rows) <= SAMPLE or k in self._indexes or have is not None
                    or rel in getattr(db, "orders", ())  # a store's sorted rows: read them
                    or (few and 2 * len(set(map(itemgetter(*cols), sample := self._sample(rel))))
                        > len(sample))):
                return None
            self.scans += 1
            got = self.scanned[k] = read(rows)
        return got

    def _index_of(self, rel: str, cols: tuple[int, ...]) -> Any:
        """The hash index of a stored relation on ``cols``: the database's (shared with the
        evaluator, built once) or, without one, built here; the first request of each
        counted in :attr:`scans`."""
        k = (rel, cols)
        ix = self._indexes.get(k)
        if ix is None:
            self.scans += 1
            ix = self._indexes[k] = (
                self._index(rel, cols) if self._index is not None
                else build_index(self.full.get(rel) or {}, itemgetter(*cols)))
        return ix

    def _sampled(self, a: ir.Atom, col: int) -> tuple[ir.Value, ...]:
        """Values of column ``col`` among the stored rows that hold ``a``'s constants (up to
        :data:`GIVEN`, from the relation's sample; from the relation itself when the sample
        holds fewer than :data:`RARE`: the one metalake among a million objects)."""
        k = (a.rel, col, a.args)
        got = self._values.get(k)
        if got is None:
            consts = tuple((c, t.value) for c, t in enumerate(a.args)
                           if isinstance(t, ir.Const))
            rows = self._matching(a.rel, consts)
            sample = Sample(row[col] for row in rows)
            sample.of = (a, col)
            got = self._values[k] = sample
        return got

    def _matching(self, rel: str, consts: tuple[tuple[int, ir.Value], ...]) -> list[ir.Row]:
        """The first :data:`GIVEN` rows holding ``consts`` (column, value): of the relation's
        sample (the relation itself up to :data:`SAMPLE` rows) when it holds at least
        :data:`RARE` of them, else of the relation itself (:meth:`first_rows`)."""
        k = (rel, consts)
        got = self._rows_with.get(k)
        if got is None:
            self.measured += 1
            rows: Any = self.full.get(rel) or ()
            got = self._holding(rel, consts)[:GIVEN]  # exact up to SAMPLE rows
            if len(rows) > SAMPLE and len(got) < min(GIVEN, RARE):
                got = self.first_rows(rel, consts)
            self._rows_with[k] = got
        return got

    def first_rows(self, rel: str, consts: tuple[tuple[int, ir.Value], ...]) -> list[ir.Row]:
        """The first :data:`GIVEN` rows of ``rel`` holding ``consts``, in the relation's order:
        a lookup in its index on those columns (:meth:`_index_of`)."""
        rows: Any = self.full.get(rel) or ()
        if not consts:
            return list(itertools.islice(rows, GIVEN))
        cols = tuple(c for c, _ in consts)
        value = consts[0][1] if len(consts) == 1 else tuple(v for _, v in consts)
        keys = self._unindexed(rel, cols, lambda rs: list(map(itemgetter(*cols), rs)))
        if keys is not None:  # no index for it yet: the column scanned
            return first_holding(rows, keys, value, GIVEN)
        return list(itertools.islice(self._index_of(rel, cols).get(value, ()), GIVEN))

    def _atom(self, a: ir.Atom, bound: set[str], goal: bool = False,
              samples: dict[str, tuple[ir.Value, ...]] | None = None) -> Estimate:
        cols = tuple(c for c, t in enumerate(a.args) if _bound(t, bound))
        consts = _consts(a.args, cols)
        # a stored atom's constants select the rows its buckets are estimated on: a rule's
        # (``deny``, ``schema``); not a query's (``goal``), which name objects whose buckets
        # range over orders of magnitude: weighed exactly against the rough estimates of
        # enumerating a virtual relation, a big one turned a listing's plan around
        # (``allowed(u, load_table, T), contains(big, T)`` enumerated the user's tables:
        # 0.3 s → 20 s)
        if (consts and not goal and a.rel not in self.virtual and len(cols) < len(a.args)
                and self.size(a.rel)):
            return (max(1.0, self.weighted(a.rel, cols, consts)), 1.0)
        given: Given = ()
        if samples and a.rel in self.virtual:
            given = tuple((c, samples[t.name]) for c in cols
                          if isinstance(t := a.args[c], ir.Var) and t.name in samples)
        return self.estimate(a.rel, cols, len(a.args), consts, given)

    def _best(self, body: Sequence[ir.Lit], bound: set[str], goal: bool = False,
              samples: dict[str, tuple[ir.Value, ...]] | None = None,
              ) -> tuple[list[int], float, float]:
        atoms = [i for i, lit in enumerate(body) if isinstance(lit, ir.Atom)]
        others: list[ir.Lit] = [lit for lit in body if not isinstance(lit, ir.Atom)]
        if len(atoms) <= EXHAUSTIVE:
            return self._exhaustive(body, atoms, bound, others, goal, samples)
        chosen: list[int] = []
        b = set(bound)

        def take(i: int) -> set[str]:
            chosen.append(i)
            fresh = atom_vars(body[i]) - b
            b.update(fresh)
            return fresh

        # cheapest next step first (a step's cost reads which of its variables are bound)
        greedy(atoms, lambda i: -self._step_key(body[i], b, goal), take,
               lambda i: atom_vars(body[i]))
        rows, work = self.cost(body, chosen, bound, goal, samples)
        return chosen, rows, work

    def _step_key(self, lit: ir.Lit, bound: set[str], goal: bool) -> float:
        assert isinstance(lit, ir.Atom)
        fanout, work = self._atom(lit, bound, goal)
        return work + 10.0 * fanout

    def _exhaustive(self, body: Sequence[ir.Lit], atoms: list[int], bound: set[str],
                    others: list[ir.Lit], goal: bool,
                    samples: dict[str, tuple[ir.Value, ...]] | None,
                    ) -> tuple[list[int], float, float]:
        """The cheapest order of ``atoms``: every permutation, depth first, each prefix's
        steps estimated once and shared by the orders that start with it, a prefix dropped
        once its work reaches the best complete order's (work only grows). The orders are
        met in lexicographic order and a later one wins only when strictly cheaper, so the
        choice is the first cheapest permutation."""
        if not atoms:
            return [], 1.0, 0.0
        if len(atoms) == 1:  # one order, no search (and no frame of it under nested estimates)
            i = atoms[0]
            r, w = self._step(body, i, bound, set(bound), list(others), dict(samples or {}),
                              1.0, 0.0, True, goal)
            return [i], r, w
        best: list[Any] = [None, 1.0, float("inf")]
        perm: list[int] = []

        def go(b: set[str], pending: list[ir.Lit], known: dict[str, tuple[ir.Value, ...]],
               rows: float, work: float, left: list[int]) -> None:
            last = len(left) == 1
            for i in left:
                b2, pending2, known2 = set(b), list(pending), dict(known)
                r, w = self._step(body, i, bound, b2, pending2, known2, rows, work, last, goal)
                if w >= best[2]:
                    continue
                perm.append(i)
                if last:
                    best[:] = [list(perm), r, w]
                else:
                    go(b2, pending2, known2, r, w, [j for j in left if j != i])
                perm.pop()

        go(set(bound), list(others), dict(samples or {}), 1.0, 0.0, atoms)
        assert best[0] is not None
        return best[0], best[1], best[2]

    def cost(self, body: Sequence[ir.Lit], perm: Sequence[int], bound: set[str],
             goal: bool = False, samples: dict[str, tuple[ir.Value, ...]] | None = None,
             ) -> tuple[float, float]:
        """Rows out and work done by the body's atoms (positions) in the order ``perm``,
        comparisons and negations placed as soon as they are bound."""
        b = set(bound)
        pending: list[ir.Lit] = [lit for lit in body if not isinstance(lit, ir.Atom)]
        rows, work = 1.0, 0.0
        # the values of variables bound by stored rows, for the estimates of what is walked
        # from them (:meth:`_closure`)
        known = dict(samples or {})
        for i in perm:
            rows, work = self._step(body, i, bound, b, pending, known, rows, work,
                                    i == perm[-1], goal)
        return rows, work

    def _step(self, body: Sequence[ir.Lit], i: int, bound: set[str], b: set[str],
              pending: list[ir.Lit], known: dict[str, tuple[ir.Value, ...]], rows: float,
              work: float, last: bool, goal: bool) -> tuple[float, float]:
        """One step of an order: atom ``i`` read with ``b`` bound (``bound``: the body's own
        bound variables), then what that binds of the comparisons and negations
        ``pending``; updates ``b``, ``pending`` and ``known`` (the values of variables bound
        by stored rows) and gives the rows and work so far."""
        lit = body[i]
        assert isinstance(lit, ir.Atom)
        self.steps += 1
        fanout, w = self._atom(lit, b, goal, known)
        if lit.rel not in self.virtual and not goal:
            for c, t in enumerate(lit.args):
                if isinstance(t, ir.Var) and t.name not in b and not is_anon(t):
                    known[t.name] = self._sampled(lit, c)
        if (0.0 < fanout < 1.0 and lit.rel not in self.virtual and atom_vars(lit) <= bound
                and (any(isinstance(t, ir.Const) for t in lit.args)
                     or lit.rel in hierarchy_roles(self.program).kinds)
                and all(_bound(t, b) for t in lit.args)):
            # a stored category of the key (``entity(S, schema)``, or ``schema(S)``): callers
            # ask for keys that have it, so it filters nothing. Counted as a filter, it discounted a
            # lookup's whole work by the category's share, and a lookup for every user
            # could look as cheap as one user's (depending on the sample drawn)
            fanout = 1.0
        work += rows * w
        rows *= fanout
        b |= atom_vars(lit)
        return self._filters(pending, b, rows, work, last)

    def _filters(self, pending: list[ir.Lit], b: set[str], rows: float,
                 work: float, last: bool = True) -> tuple[float, float]:
        """Place what ``b`` binds of ``pending``; a negation of a virtual relation only
        ``last`` (after every positive atom, as engine/plan/join.py places it)."""
        for lit in list(pending):
            if isinstance(lit, ir.Neg):
                if not all(_bound(t, b) for t in lit.atom.args if not is_anon(t)):
                    continue
                if not last and lit.atom.rel in self.virtual:
                    continue
                cols = tuple(c for c, t in enumerate(lit.atom.args) if not is_anon(t))
                _, w = self.estimate(lit.atom.rel, cols, len(lit.atom.args),
                                     _consts(lit.atom.args, cols))
                work += rows * w
            elif isinstance(lit, ir.Cmp):
                lb, rb = _bound(lit.left, b), _bound(lit.right, b)
                if lit.op == "=" and (lb or rb):
                    for t in (lit.left, lit.right):
                        if isinstance(t, ir.Var):
                            b.add(t.name)
                    if not (lb and rb):
                        pending.remove(lit)
                        continue
                elif not (lb and rb):
                    continue
            pending.remove(lit)
            rows *= FILTER
        return rows, work


def _consts(args: Sequence[ir.Term], cols: tuple[int, ...]) -> tuple[tuple[int, ir.Value], ...]:
    """The (column, value) pairs of the constants among ``args`` at ``cols``."""
    return tuple((c, t.value) for c in cols if isinstance(t := args[c], ir.Const))
