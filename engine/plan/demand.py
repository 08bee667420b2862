"""The plans of goal-directed lookups on virtual relations (engine/eval/demand.py runs them):
which rules a lookup on some columns calls, each compiled for its key with its body ordered by
the reasoner's statistics (engine/plan/stats.py), views unfolded into the rules that read them,
closures walked, and small coarser lookups used for finer ones (:meth:`DemandPlans.coarse`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Any

from ..core import ir
from ..core.analyses import Closure, edge_closure, recursive_components, views
from .cache import plan_cache
from .codegen import Binder, RunFn, compile_keyed, compile_plan
from .join import NegCheck, RulePlan, Scan, plan_bound
from .stats import EXHAUSTIVE, Statistics
from .unfold import instantiate

#: a rule's index and its function compiled for a lookup (bound, it takes the key as ``B``)
Call = tuple[int, Binder]
#: a coarser lookup is used when it is estimated to return at most this many rows
COARSE_ROWS = 16.0


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
        #: the orders and coarser lookups chosen by every planner of the program, taken
        #: while this one's statistics look alike (engine/plan/cache.py)
        self.kept = plan_cache(program)

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
            # a column whose value selects the rules (the operation of a decision relation
            # with one rule per operation) stays in the key: without it every rule would run
            d = self.calls(rel, cols)
            keep = cols[d.pos] if d.pos >= 0 else None
            best = self.kept.plan(("coarse", rel, cols), st,
                                  lambda: _coarsest(st, rel, cols, self.program, keep))
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
            st, goal = self.stats, rule.index < 0
            got = self._orders[k] = (rule.body, self.kept.plan(
                ("order", rule.body, bound, goal), st,
                lambda: tuple(st.order(rule.body, set(bound), goal=goal))))
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
                return out | {(closure.edge, (closure.edge_column(cols[0]),))} | {
                    (seed, (0,)) for _, seed in closure.seeds}
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


def _coarsest(st: Statistics, rel: str, cols: tuple[int, ...], program: ir.Program,
              keep: int | None) -> Coarse | None:
    """The cheapest coarser lookup answering ``rel`` on ``cols`` in at most
    :data:`COARSE_ROWS` rows and about the work of the lookup itself, keeping column
    ``keep`` (:meth:`DemandPlans.coarse`)."""
    best: Coarse | None = None
    arity = program.relations[rel].arity
    _, fine_work = st.estimate(rel, cols, arity)
    best_work = 2 * fine_work + 4
    for n in range(1, len(cols)):
        for sub in itertools.combinations(cols, n):
            if keep is not None and keep not in sub:
                continue
            rows, work = st.estimate(rel, sub, arity)
            if rows <= COARSE_ROWS and work <= best_work:
                best_work = work
                best = Coarse(sub, tuple(cols.index(c) for c in sub),
                              tuple((c, i) for i, c in enumerate(cols) if c not in sub))
    return best


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
