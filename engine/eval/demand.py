"""Goal-directed answers for virtual relations (see engine/compile/materialize.py).

A :class:`DemandContext` wraps the accessors generated rule code reads — ``F[rel]`` and
``I(rel, cols)`` — so that a virtual relation looks like any other: membership, iteration and
index lookups on it run its rules with the looked-up columns bound (sideways information
passing: the bound head arguments seed the body plan, engine/plan/join.py ``plan_bound``). Results
are memoized per (relation, bound columns, key): for one read, or across reads when the
reasoner passes its memo (it drops a relation's entries when something it depends on changes).
A lookup may be answered from a coarser one that statistics say is small (:meth:`DemandPlans.
coarse`). Recursive virtual relations are tabled (:meth:`DemandContext.demand`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..core import ir
from ..core.analyses import Closure, edge_closure, recursive_components, views
from ..plan.codegen import Binder, RunFn, compile_keyed, compile_plan
from ..plan.join import NegCheck, RulePlan, Scan, plan_bound
from ..plan.stats import EXHAUSTIVE, Statistics
from ..plan.unfold import instantiate
from .closure import walker

Key = tuple[ir.Value, ...]
#: the matching rows of one lookup, each with the index of its deriving rule
Answer = dict[ir.Row, int]
#: relation -> looked-up columns -> key -> the answer
Memo = dict[str, dict[tuple[int, ...], dict[Key, Answer]]]
#: a rule's index and its function compiled for a lookup (bound, it takes the key as ``B``)
Call = tuple[int, Binder]
#: a rule's index and its lookup function bound to a read's view: ``run(O, key)``
Bound = tuple[int, Callable[[Any, Any], None]]
_ALL = [tuple(range(n)) for n in range(64)]
#: a coarser lookup is used when it is estimated to return at most this many rows
COARSE_ROWS = 16.0
#: the rule index recorded for a row of a virtual relation given as a base fact
STORED = -1
IndexFn = Callable[[str, tuple[int, ...]], Any]


class DemandPlans:
    """Compiled bound plans per (rule, bound head variables), shared by all contexts.

    With :class:`~engine.plan.stats.Statistics` attached (:meth:`use`), each body is ordered by
    estimated cost; without, by bound columns. Generated functions are kept in ``compiled``
    by (rule, bound variables, atom order), which reasoners of one program may share."""

    def __init__(self, program: ir.Program,
                 compiled: dict[tuple[Any, ...], Any] | None = None) -> None:
        self.program = program
        self.rules: dict[str, list[ir.Rule]] = {}
        for r in program.rules:
            self.rules.setdefault(r.head.rel, []).append(r)
        self.cache: dict[tuple[int, frozenset[str]], RunFn] = {}
        #: functions compiled for lookups, by (rule index, the head's terms at the key)
        self.keyed: dict[tuple[int, tuple[ir.Term, ...]], Binder] = {}
        self.compiled = {} if compiled is None else compiled
        self.stats: Statistics | None = None
        self.arity = {n: r.arity for n, r in program.relations.items()}
        #: the relations of each recursive relation's strongly connected component
        self.scc = recursive_components(program)
        self.recursive = frozenset(self.scc)
        self._coarse: dict[tuple[str, tuple[int, ...]], Coarse | None] = {}
        self._calls: dict[tuple[str, tuple[int, ...]], Dispatch] = {}
        self._closure: dict[str, Closure | None] = {}
        #: views unfolded into the plans made since :meth:`use` (see :meth:`unfold`)
        self.unfolded: set[str] = set()
        self._orders: dict[tuple[int, frozenset[str]],
                           tuple[tuple[ir.Lit, ...], tuple[int, ...]]] = {}
        self._flat: dict[int, tuple[ir.Rule, ir.Rule]] = {}

    def use(self, stats: Statistics | None) -> None:
        """Plan from these statistics from now on (forgetting the plans made before)."""
        self.stats = stats
        self.cache = {}
        self.keyed = {}
        self._coarse = {}
        self._calls = {}
        self.unfolded = set()
        self._orders = {}
        self._flat = {}

    def coarse(self, rel: str, cols: tuple[int, ...]) -> Coarse | None:
        """Answer a lookup on ``cols`` from a lookup on fewer columns, when that one is small
        and cheap: ``holds(U, R)`` asked for many roles ``R`` of one user is one evaluation of
        ``holds(U, _)`` (a handful of rows) shared by all of them. Not for recursive
        relations, whose partial answers inside a cycle must not be filtered and kept."""
        k = (rel, cols)
        if k in self._coarse:
            return self._coarse[k]
        best: Coarse | None = None
        st = self.stats
        if st is not None and len(cols) >= 2 and rel not in self.recursive:
            arity = self.program.relations[rel].arity
            _, fine_work = st.estimate(rel, cols, arity)
            best_work = 2 * fine_work + 4
            for n in range(1, len(cols)):
                for sub in itertools.combinations(cols, n):
                    rows, work = st.estimate(rel, sub, arity)
                    if rows <= COARSE_ROWS and work <= best_work:
                        best_work = work
                        best = Coarse(sub, tuple(cols.index(c) for c in sub),
                                      tuple((c, i) for i, c in enumerate(cols) if c not in sub))
        self._coarse[k] = best
        return best

    def order(self, rule: ir.Rule, bound: frozenset[str]) -> tuple[int, ...] | None:
        """The atom order statistics choose for ``rule``'s body (kept per rule body and
        bound variables until :meth:`use`); a query's goal (rule index -1) is ordered as one
        (engine/plan/stats.py ``Statistics.order``)."""
        if self.stats is None:
            return None
        k = (id(rule.body), bound)  # bodies hash slowly; the kept body makes the id safe
        got = self._orders.get(k)
        if got is None or got[0] is not rule.body:
            got = self._orders[k] = (rule.body, tuple(
                self.stats.order(rule.body, set(bound), goal=rule.index < 0)))
        return got[1]

    def calls(self, rel: str, cols: tuple[int, ...]) -> Dispatch:
        """How to evaluate ``rel`` looked up on ``cols``: its rules, each compiled to take the
        key (and check the head's constants and repeated variables itself), selected by the
        key's value at the position where most heads have a constant (the operation of a
        decision relation with one rule per operation)."""
        k = (rel, cols)
        got = self._calls.get(k)
        if got is None:
            rules = [(rule, tuple(rule.head.args[c] for c in cols))
                     for rule in self.rules.get(rel, ())]
            fns = [(rule.index, self.keyed_fn(rule, key)) for rule, key in rules]
            consts = [sum(isinstance(key[i], ir.Const) for _, key in rules)
                      for i in range(len(cols))]
            pos = max(range(len(cols)), key=consts.__getitem__) if cols else -1
            cyclic = frozenset(rule.index for rule, _ in rules if self.cyclic(rule))
            if pos < 0 or consts[pos] < 2:
                got = Dispatch(-1, {}, tuple(fns), cyclic=cyclic)
            else:
                at = [key[pos] for _, key in rules]  # each head's term at the position
                values = {t.value for t in at if isinstance(t, ir.Const)}
                by = {v: tuple(f for f, t in zip(fns, at, strict=True)
                               if isinstance(t, ir.Var) or t.value == v)
                      for v in values}
                rest = tuple(f for f, t in zip(fns, at, strict=True) if isinstance(t, ir.Var))
                plain = frozenset(v for v, fs in by.items()
                                  if not any(rid in cyclic for rid, _ in fs))
                got = Dispatch(pos, by, rest, plain, cyclic)
            self._calls[k] = got
        return got

    def closure(self, rel: str) -> Closure | None:
        """How ``rel`` is answered by a graph walk when it is a virtual transitive closure
        alone in its component (engine/eval/closure.py; :meth:`DemandContext.closure`)."""
        if rel not in self._closure:
            self._closure[rel] = (
                edge_closure(self.program, rel)
                if rel in self.program.virtual and self.scc.get(rel) == frozenset({rel})
                else None)
        return self._closure[rel]

    def cyclic(self, rule: ir.Rule) -> bool:
        """Whether ``rule`` reads its head's component (can recurse). A rule that does not,
        even in a recursive relation (one operation's rule among many of a decision relation
        defined partly through itself), needs no tabling. Reading the component directly is
        the only way: a body relation that led back to it would be in it."""
        scc = self.scc.get(rule.head.rel)
        return scc is not None and any(
            (lit.atom if isinstance(lit, ir.Neg) else lit).rel in scc
            for lit in rule.body if isinstance(lit, ir.Atom | ir.Neg))

    def reads(self, rel: str, cols: tuple[int, ...],
              seen: set[tuple[str, tuple[int, ...]]] | None = None,
              ) -> set[tuple[str, tuple[int, ...]]]:
        """The stored-row indexes ``(relation, columns)`` a lookup of ``rel`` on ``cols`` may
        read, planning and compiling every rule it may run on the way (the rules a check
        runs, planned before the first check instead of during it). A lookup of a virtual
        relation is listed too (its base facts, if it has any, are read that way)."""
        seen = set() if seen is None else seen
        k = (rel, cols)
        if k in seen:
            return set()
        seen.add(k)
        out = {k} if cols else set()
        if rel not in self.program.virtual:  # every column: a membership test, no index
            return out if len(cols) < self.arity[rel] else set()
        closure = self.closure(rel)
        if closure is not None and cols:
            if cols == (0,) or cols == (1,):  # a walk over the edge (Lookup._walker)
                return out | {(closure.edge, cols)}
            return out | self.reads(rel, (1,), seen)  # both: the walk from the second
        coarse = self.coarse(rel, cols)
        if coarse is not None:
            return out | self.reads(rel, coarse.cols, seen)
        self.calls(rel, cols)
        for rule in self.rules.get(rel, ()):
            key = tuple(rule.head.args[c] for c in cols)
            bound = frozenset(t.name for t in key if isinstance(t, ir.Var))
            flat = self.unfold(rule)
            plan = plan_bound(flat, set(bound), self.program.virtual, self.order(flat, bound))
            wide = self.wide(plan)
            for s in plan.steps:
                if isinstance(s, Scan | NegCheck) and s.key_cols:
                    out |= self.reads(s.rel, wide.get((s.rel, s.key_cols), s.key_cols), seen)
        return out

    def keyed_fn(self, rule: ir.Rule, key: tuple[ir.Term, ...]) -> Binder:
        """``rule`` compiled for a lookup whose key is ``key`` (the head's terms there), with
        the views it reads unfolded where that is safe (:meth:`unfold`)."""
        k = (rule.index, key)
        f = self.keyed.get(k)
        if f is None:
            bound = frozenset(t.name for t in key if isinstance(t, ir.Var))
            flat = self.unfold(rule)
            order = self.order(flat, bound)
            plan = plan_bound(flat, set(bound), self.program.virtual, order)
            wide = self.wide(plan)
            ck = (rule.index, bound, order, key, flat.body, tuple(sorted(wide.items())))
            f = self.compiled.get(ck)
            if f is None:
                f = self.compiled[ck] = compile_keyed(plan, key, self.program.virtual,
                                                      wide=wide)
            self.keyed[k] = f
        return f

    def wide(self, plan: RulePlan) -> dict[tuple[str, tuple[int, ...]], tuple[int, ...]]:
        """The lookups of virtual relations in ``plan`` that generated code answers from a
        coarser lookup (:meth:`coarse`): ``(relation, columns) -> the coarser columns``. The
        function filters the coarser answer itself, which keeps no narrowed answer: a
        membership test on a small answer costs less than keeping one per key."""
        out = {}
        for s in plan.steps:
            if isinstance(s, Scan | NegCheck) and s.rel in self.program.virtual and s.key_cols:
                c = self.coarse(s.rel, s.key_cols)
                if c is not None:
                    out[(s.rel, s.key_cols)] = c.cols
        return out

    def unfold(self, rule: ir.Rule) -> ir.Rule:
        """``rule`` with each positive body atom of a view replaced by the view's body, while
        the body keeps at most :data:`~engine.plan.stats.EXHAUSTIVE` positive atoms (so statistics
        still order it exhaustively). A view here: virtual, not recursive, defined by one rule
        whose head has distinct variables, and with no stored rows (:attr:`unfolded` lists
        the views unfolded, so that storing rows in one of them re-plans). The unfolded rule
        keeps its index: its answers are recorded as the original rule's. Without statistics,
        rules are not unfolded."""
        if self.stats is None:
            return rule
        kept = self._flat.get(id(rule))
        if kept is not None and kept[0] is rule:
            return kept[1]
        body = list(rule.body)
        n = 0
        while True:
            atoms = sum(isinstance(lit, ir.Atom) for lit in body)
            for i, lit in enumerate(body):
                if not isinstance(lit, ir.Atom) or lit.rel == rule.head.rel:
                    continue
                view = self._view(lit.rel)
                if view is None or atoms - 1 + sum(
                        isinstance(v, ir.Atom) for v in view.body) > EXHAUSTIVE:
                    continue
                n += 1
                self.unfolded.add(lit.rel)
                body[i:i + 1] = instantiate(view, lit, f"~{n}")
                break
            else:
                break
        flat = rule if n == 0 else replace(rule, body=tuple(body))
        self._flat[id(rule)] = (rule, flat)
        return flat

    def _view(self, rel: str) -> ir.Rule | None:
        """The one rule of ``rel`` when ``rel`` can be unfolded (see :meth:`unfold`)."""
        view = views(self.program).get(rel)
        if (view is None or rel not in self.program.virtual or self.stats is None
                or self.stats.size(rel)):
            return None
        return view

    def fn(self, rule: ir.Rule, bound: frozenset[str]) -> RunFn:
        k = (rule.index, bound)
        f = self.cache.get(k)
        if f is None:
            order = self.order(rule, bound)
            ck = (rule.index, bound, order)
            f = self.compiled.get(ck)
            if f is None:
                f = self.compiled[ck] = compile_plan(
                    plan_bound(rule, set(bound), self.program.virtual, order))
            self.cache[k] = f
        return f


@dataclass(frozen=True)
class Dispatch:
    """The rules answering a lookup (:meth:`DemandPlans.calls`)."""

    pos: int  # the key position whose value selects the rules, or -1: all rules, always
    by: dict[ir.Value, tuple[Call, ...]]  # per value there: the rules whose head may match it
    rest: tuple[Call, ...]  # the rules with a variable there (all of them when ``pos`` is -1)
    #: the values there whose rules cannot recurse (:meth:`DemandPlans.cyclic`): a lookup
    #: with one of them needs no tabling even in a recursive relation
    plain: frozenset[ir.Value] = frozenset()
    #: the rules (by index) that read their head's strongly connected component
    cyclic: frozenset[int] = frozenset()


@dataclass(frozen=True)
class Coarse:
    """How a lookup is answered from a coarser one (:meth:`DemandPlans.coarse`)."""

    cols: tuple[int, ...]  # the coarser lookup's columns
    take: tuple[int, ...]  # positions in the finer key of its values
    rest: tuple[tuple[int, int], ...]  # (column, position in the finer key) left to filter


class DemandContext:
    """One read's view of the database: materialized relations as they are, virtual ones on
    demand. ``F`` and ``index`` are what generated rule functions take."""

    def __init__(self, program: ir.Program, plans: DemandPlans,
                 full: Mapping[str, Any], index: IndexFn, memo: Memo | None = None) -> None:
        """``memo``: complete answers kept from earlier reads of the same state (the reasoner
        drops a relation's entries when something it depends on changes); new ones are added
        to it. ``entries`` counts the additions."""
        self.virtual = program.virtual
        self.plans = plans
        self.full = full
        self.base_index = index
        self.arity = plans.arity
        self.memo: Memo = {} if memo is None else memo
        self.entries = 0
        self.recursive = plans.recursive
        #: the index of a relation on columns, by (relation, columns): what functions
        #: compiled for lookups read (``I[(rel, cols)]``)
        self.indexes = _Indexes(self)
        self.lookups: dict[tuple[str, tuple[int, ...]], Lookup] = {}
        # tabling state for recursive virtual relations
        self.stack: list[tuple[str, tuple[int, ...], Key]] = []
        self.partial: list[dict[ir.Row, int]] = []
        self.active: dict[tuple[str, tuple[int, ...], Key], int] = {}
        self.low: list[int] = [1 << 30]
        self.recursive_hits: set[int] = set()
        #: per stack depth, the epoch its current round started at; ``epoch`` counts rounds
        self.epochs: list[int] = []
        self.epoch = 0
        #: bumped whenever a tabled call's answers grow (a leader's fixpoint test)
        self.growth = 0
        #: calls evaluated inside an unfinished cycle: (answers, leader depth, start epoch)
        self.incomplete: dict[tuple[str, tuple[int, ...], Key],
                              tuple[dict[ir.Row, int], int, int]] = {}
        self.pending: list[tuple[str, tuple[int, ...], Key]] = []
        self.F = _Relations(self)
        self.bound: dict[Binder, Callable[[Any, Any], None]] = {}

    def index(self, rel: str, cols: tuple[int, ...]) -> Any:
        return self.indexes[(rel, cols)]

    def bind(self, fn: Binder) -> Callable[[Any, Any], None]:
        """A function compiled for a lookup, bound to this view (once)."""
        got = self.bound.get(fn)
        if got is None:
            got = self.bound[fn] = fn(self.F, self.indexes)
        return got

    def lookup_of(self, rel: str, cols: tuple[int, ...]) -> Lookup:
        """The :class:`Lookup` of virtual ``rel`` on ``cols`` (made once per context)."""
        k = (rel, cols)
        got = self.lookups.get(k)
        if got is None:
            got = self.lookups[k] = Lookup(self, rel, cols)
        return got

    def lookup(self, rel: str, cols: tuple[int, ...], key: Key) -> Mapping[ir.Row, Any]:
        """Rows of ``rel`` whose ``cols`` equal ``key`` (any relation)."""
        if rel not in self.virtual:
            if not cols:
                return self.full[rel]  # type: ignore[no-any-return]
            k: Any = key[0] if len(key) == 1 else key
            return self.base_index(rel, cols).get(k, {})  # type: ignore[no-any-return]
        return self.demand(rel, cols, key)

    def demand(self, rel: str, cols: tuple[int, ...], key: Key) -> dict[ir.Row, int]:
        """Rows of virtual ``rel`` whose ``cols`` equal ``key`` (kept, or evaluated now)."""
        lk = self.lookup_of(rel, cols)
        got = lk.table.get(key)
        return got if got is not None else lk.ask(key)

    def narrowed(self, lk: Lookup, key: Key) -> dict[ir.Row, int]:
        """A lookup answered from a coarser one (:meth:`DemandPlans.coarse`)."""
        coarse = lk.coarse
        assert coarse is not None
        sub = tuple(key[i] for i in coarse.take)
        wide = self.demand(lk.rel, coarse.cols, sub)
        rest = coarse.rest
        if len(rest) == 1:
            (c, i), = rest
            v = key[i]
            narrow = {row: r for row, r in wide.items() if row[c] == v}
        else:
            narrow = {row: r for row, r in wide.items()
                      if all(row[c] == key[i] for c, i in rest)}
        if sub in self.memo[lk.rel][coarse.cols]:  # complete (not in an unfinished cycle)
            lk.table[key] = narrow
            self.entries += 1
        return narrow

    def closure(self, lk: Lookup, key: Key) -> dict[ir.Row, int]:
        """A lookup of a transitive closure (:meth:`DemandPlans.closure`) on both columns:
        the walk from the second, filtered; on one column, the walk itself
        (:meth:`Lookup._walker`). Complete at once: kept."""
        c = lk.closure
        assert c is not None
        if not lk.point:
            return lk.ask(key)  # Lookup._walker
        above = self.demand(lk.rel, (1,), key[1:])  # (X, Y): X among the nodes above Y
        out = {key: above[key]} if key in above else {}
        lk.table[key] = out
        self.entries += 1
        return out

    def tabled(self, lk: Lookup, key: Key) -> dict[ir.Row, int]:
        """Rows of a recursive virtual relation, tabled.

        Recursive virtual relations (the decision relation defined through itself) are
        handled like SLG tabling without negation in cycles (stratification rules it out), with
        completion per cycle: a call that meets a call still on the stack gets that call's
        answers so far and marks the cycle; a call finishing inside an unfinished cycle keeps
        its answers in ``incomplete``, stamped with the round of the cycle's leader (its oldest
        call) it ran in, and is not evaluated again in that round. The leader repeats rounds
        until nothing in its cycle grew; the tables evaluated in that last round are then
        memoized as complete.
        """
        rel, cols = lk.rel, lk.cols
        mk = (rel, cols, key)
        pos = self.active.get(mk)
        if pos is not None:  # a recursive call: answers so far; the caller is incomplete
            self._hit(pos)
            return dict(self.partial[pos])  # a snapshot: the caller iterates it
        seed: dict[ir.Row, int] | None = None
        waiting = self.incomplete.get(mk)
        if waiting is not None:
            answers, lead, started = waiting
            if started >= self.epochs[lead]:  # already evaluated in this round of its leader
                self._hit(lead)
                return answers
            seed = answers
        depth = len(self.stack)
        out = {} if seed is None else dict(seed)
        self.stack.append(mk)
        self.partial.append(out)
        self.active[mk] = depth
        self.low.append(depth)
        self.epochs.append(0)
        self.recursive_hits.discard(depth)
        mark = len(self.pending)
        started = self.epoch + 1
        again = False
        try:
            while True:
                self.epoch += 1
                self.epochs[depth] = self.epoch
                grown = self.growth
                before = len(out)
                lk.fill(key, out, again)
                again = True
                if len(out) > before:
                    self.growth += 1
                if self.low[-1] < depth:  # inside a cycle led further down the stack
                    break
                if depth not in self.recursive_hits or self.growth == grown:
                    break  # no cycle through this call, or nothing in its cycle grew
        finally:
            low = self.low.pop()
            final = self.epochs.pop()
            self.stack.pop()
            self.partial.pop()
            del self.active[mk]
        if low < depth:  # part of a cycle led further down: kept for this round, not complete
            if low < self.low[-1]:
                self.low[-1] = low
            for m in self.pending[mark:]:
                w = self.incomplete.get(m)
                if w is not None and w[1] > low:
                    self.incomplete[m] = (w[0], low, w[2])
            self.incomplete[mk] = (out, low, started)
            self.pending.append(mk)
            return out
        # a leader at its fixpoint: the members evaluated in its last round are complete
        for m in self.pending[mark:]:
            w = self.incomplete.pop(m, None)
            if w is not None and w[2] >= final:
                self.memo[m[0]][m[1]][m[2]] = w[0]
                self.entries += 1
        del self.pending[mark:]
        self.incomplete.pop(mk, None)
        self.recursive_hits.discard(depth)
        lk.table[key] = out
        self.entries += 1
        return out

    def table(self, rel: str, cols: tuple[int, ...]) -> dict[Key, Answer]:
        """The complete answers of ``rel`` looked up on ``cols``, by key."""
        tables = self.memo.get(rel)
        if tables is None:
            tables = self.memo[rel] = {}
        got = tables.get(cols)
        if got is None:
            got = tables[cols] = {}
        return got

    def idle(self) -> bool:
        """No evaluation under way (a read finished, normally or not)."""
        return not (self.stack or self.pending or self.incomplete)

    def _hit(self, pos: int) -> None:
        """The running call reads the unfinished answers of the call at stack ``pos``."""
        self.recursive_hits.add(pos)
        if pos < self.low[-1]:
            self.low[-1] = pos


class _Indexes(dict[tuple[str, tuple[int, ...]], Any]):
    """``I`` for functions compiled for lookups: stored indexes, and :class:`Lookup` objects
    for virtual relations (each made at its first use in the read)."""

    def __init__(self, ctx: DemandContext) -> None:
        super().__init__()
        self.ctx = ctx

    def __missing__(self, k: tuple[str, tuple[int, ...]]) -> Any:
        rel, cols = k
        got = self[k] = (self.ctx.lookup_of(rel, cols) if rel in self.ctx.virtual
                         else self.ctx.base_index(rel, cols))
        return got


class _Relations(dict[str, Any]):
    """``F`` for generated code: dicts for materialized relations, views for virtual ones
    (each made at its first use in the read)."""

    def __init__(self, ctx: DemandContext) -> None:
        super().__init__()
        self.ctx = ctx

    def __missing__(self, rel: str) -> Any:
        got = self[rel] = (VirtualRelation(self.ctx, rel) if rel in self.ctx.virtual
                           else self.ctx.full[rel])
        return got


class VirtualRelation:
    """A virtual relation seen as a set of rows. Membership reads the complete answers kept
    for the row first (no call into the context when there is one)."""

    __slots__ = ("ctx", "points", "rel")

    def __init__(self, ctx: DemandContext, rel: str) -> None:
        self.ctx, self.rel = ctx, rel
        self.points = ctx.lookup_of(rel, _ALL[ctx.arity[rel]])

    def __contains__(self, row: object) -> bool:
        assert isinstance(row, tuple)
        points = self.points
        got = points.table.get(row)
        if got is None:
            got = points.ask(row)
        return bool(got)

    def __iter__(self) -> Iterator[ir.Row]:
        return iter(self.ctx.demand(self.rel, (), ()))

    def __len__(self) -> int:
        return len(self.ctx.demand(self.rel, (), ()))

    def get(self, row: ir.Row, default: Any = None) -> Any:
        return 0 if row in self else default


class Lookup:
    """One virtual relation looked up on one set of columns, in one context: its kept
    answers, how a new key is answered (from a coarser lookup, tabled, or by running the
    rules the key selects), and the face of a hash index (``get``) for generated code."""

    __slots__ = ("ask", "bound", "by", "closure", "coarse", "cols", "ctx", "cyclic", "plain",
                 "point", "pos", "recursive", "rel", "rest", "single", "stored", "table")

    def __init__(self, ctx: DemandContext, rel: str, cols: tuple[int, ...]) -> None:
        self.ctx, self.rel, self.cols = ctx, rel, cols
        self.single = len(cols) == 1
        self.point = len(cols) == ctx.arity[rel]  # a membership test: one row at most
        self.table = ctx.table(rel, cols)
        self.coarse = ctx.plans.coarse(rel, cols)
        self.recursive = rel in ctx.recursive
        d = ctx.plans.calls(rel, cols)
        self.pos, self.by, self.rest, self.plain = d.pos, d.by, d.rest, d.plain
        #: the rules that read their own component (the only ones a round can change)
        self.cyclic = d.cyclic
        #: whether base facts are stored for the relation (a context lives no longer than the
        #: stored rows it reads: any transaction makes a new one)
        self.stored = bool(ctx.full.get(rel))
        #: a transitive closure looked up on one or both columns, without stored rows: a
        #: graph search answers it (:meth:`DemandContext.closure`)
        self.closure = (ctx.plans.closure(rel) if cols and not self.stored else None)
        #: the rules bound to this view (:meth:`calls`), by the key's value at ``pos`` (None:
        #: the rules for any other value)
        self.bound: dict[ir.Value | None, tuple[Bound, ...]] = {}
        #: what answers a key with no kept answer: :meth:`answer`, or a closure over this
        #: lookup's state doing the same without its tests and attribute reads, for the
        #: lookups a check makes most (:meth:`_runner`, :meth:`_walker`); generated code
        #: binds it once per view
        self.ask: Callable[[Key], dict[ir.Row, int]] = (
            self._walker() if self.closure is not None and not self.point
            else self.answer if (self.closure is not None or self.coarse is not None
                                 or self.stored or (self.recursive and not self.plain))
            else self._runner())

    def _walker(self) -> Callable[[Key], dict[ir.Row, int]]:
        """:meth:`answer` for a transitive closure looked up on one column: the walk
        (engine/eval/closure.py ``walker``) over the edge's index, found at the first call."""
        c, ctx, table = self.closure, self.ctx, self.table
        assert c is not None
        forward = self.cols == (0,)
        go: Callable[[ir.Value], dict[ir.Row, int]] | None = None

        def ask(key: Key) -> dict[ir.Row, int]:
            nonlocal go
            if go is None:
                go = walker(c, ctx.base_index(c.edge, (0,) if forward else (1,)), forward)
            out = table[key] = go(key[0])
            ctx.entries += 1
            return out
        return ask

    def _runner(self) -> Callable[[Key], dict[ir.Row, int]]:
        """:meth:`answer` for a lookup that runs its rules: the rules' bound functions by the
        key's value at ``pos``, called until one answers a membership test (hot: a check
        answers about ten keys this way)."""
        table, calls_of, pos, point, ctx, by = (self.table, self.calls, self.pos, self.point,
                                                self.ctx, self.by)
        recursive, plain, tabled = self.recursive, self.plain, ctx.tabled
        fns: dict[ir.Value | None, tuple[Callable[[Any, Any], None], ...]] = {}

        def rules(key: Key) -> tuple[Callable[[Any, Any], None], ...]:
            v = key[pos] if pos >= 0 and key[pos] in by else None
            got = fns.get(v)
            if got is None:
                got = fns[v] = tuple(fn for _, fn in calls_of(key))
            return got

        def ask(key: Key) -> dict[ir.Row, int]:
            # one frame per lookup: a chain of views nests as deep as Python's stack allows
            if recursive and key[pos] not in plain:
                return tabled(self, key)
            got = fns.get(key[pos] if pos >= 0 else None)
            if got is None:
                got = rules(key)
            out: dict[ir.Row, int] = {}
            add = out.setdefault
            if point:
                for fn in got:
                    fn(add, key)
                    if out:
                        break
            else:
                for fn in got:
                    fn(add, key)
            table[key] = out
            ctx.entries += 1
            return out
        return ask

    def calls(self, key: Key) -> tuple[Bound, ...]:
        """The rules answering ``key`` (selected by its value at ``pos``), bound to this
        view: each rule's relations, indexes and lookups are read once per view."""
        v = None if self.pos < 0 or key[self.pos] not in self.by else key[self.pos]
        got = self.bound.get(v)
        if got is None:
            F, index = self.ctx.F, self.ctx.indexes
            got = self.bound[v] = tuple((rid, bind(F, index)) for rid, bind
                                        in (self.rest if v is None else self.by[v]))
        return got

    def get(self, k: Any, default: Any = None) -> Any:
        key = (k,) if self.single else k
        rows = self.table.get(key)
        if rows is None:
            rows = self.ask(key)
        return rows if rows else default

    def answer(self, key: Key) -> dict[ir.Row, int]:
        """The rows for a key with no kept answer."""
        if self.closure is not None:
            return self.ctx.closure(self, key)
        if self.coarse is not None:
            return self.ctx.narrowed(self, key)
        if self.recursive and not (self.plain and key[self.pos] in self.plain):
            return self.ctx.tabled(self, key)
        # outside recursion no call can meet itself, and nothing it reads is partial
        out: dict[ir.Row, int] = {}
        self.fill(key, out)  # (a lookup without stored rows is answered by _runner instead)
        self.table[key] = out
        self.ctx.entries += 1
        return out

    def fill(self, key: Key, out: dict[ir.Row, int], again: bool = False) -> None:
        """Add the rows matching ``key`` to ``out``, each with the index of the first rule
        that derived it (:data:`STORED` for a stored row). ``again``: a later round of a
        tabled call, in which only rules reading their own component can add rows (the
        others read complete answers only and gave theirs in the first round)."""
        ctx = self.ctx
        if self.stored:  # base facts given for a virtual relation are stored like any others
            if not self.cols:
                out.update(dict.fromkeys(ctx.full[self.rel], STORED))
            else:
                k: Any = key[0] if self.single else key
                out.update(dict.fromkeys(ctx.base_index(self.rel, self.cols).get(k, ()),
                                         STORED))
        add = out.setdefault  # the generated functions pass their rule's index
        point = self.point
        calls = self.calls(key)
        if again:
            calls = tuple(c for c in calls if c[0] in self.cyclic)
        for _, fn in calls:
            if point and out:
                return
            fn(add, key)
