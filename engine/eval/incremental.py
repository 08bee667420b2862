"""Incremental maintenance of a materialization: DRed (delete and re-derive), stratum by stratum.

Why DRed: it handles recursion and stratified negation with one mechanism and needs nothing per
row beyond what evaluation keeps (counting algorithms need derivation counts, which recursion
makes unbounded; the backward/forward algorithm trades DRed's over-deletion for per-fact
backward proofs, which is slower on hierarchies where many facts share supports). DRed's cost
is the over-deletion, which for authorization data (revoking one grant, dropping one table)
stays proportional to what the change touches.

For each stratum, in dependency order, given the net changes ``Δ+``/``Δ-`` of the relations
below it (already applied):

1. **over-delete**: every fact of the stratum with a derivation, in the *old* state, that uses
   a removed fact (``Δ-`` under a positive literal) or a fact that became true under a negated
   literal (``Δ+`` under ``not``); then, transitively inside the stratum, every fact derived
   from an over-deleted one. The old state of a changed lower relation is the overlay
   ``new - Δ+ + Δ-`` (:class:`OldRelation`, :class:`OldIndex`).
2. remove the over-deleted facts;
3. **re-derive**: an over-deleted fact that is still a base fact, or still has a derivation in
   the new state (one rule instance over the remaining facts), comes back;
4. **insert**: facts derived from ``Δ+`` under positive literals, from ``Δ-`` under negated
   literals, base inserts and the re-derived facts, propagated semi-naively inside the stratum.

The stratum's net change is (added − over-deleted, over-deleted − added). Every added row gets
a level above all existing ones, so proofs rebuilt from levels stay well-founded.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterator, Mapping
from operator import itemgetter
from typing import Any

from ..core import ir, progress
from ..core.results import Change
from ..plan.codegen import RunFn, compile_plan
from ..plan.demand import DemandPlans
from ..plan.join import RulePlan, Variants
from .database import Database
from .demand import DemandContext, Memo
from .derivation import Derivations

Rows = set[ir.Row]




class OldRelation:
    """The pre-transaction contents of a relation: ``new - plus + minus``."""

    def __init__(self, new: Mapping[ir.Row, int], plus: Rows, minus: Rows) -> None:
        self.new, self.plus, self.minus = new, plus, minus

    def __contains__(self, row: object) -> bool:
        return (row in self.new and row not in self.plus) or row in self.minus

    def __iter__(self) -> Iterator[ir.Row]:
        plus = self.plus
        for row in self.new:
            if row not in plus:
                yield row
        yield from self.minus

    def __len__(self) -> int:
        return len(self.new) - len(self.plus) + len(self.minus)


class OldIndex:
    """A hash index over :class:`OldRelation`."""

    def __init__(self, new: Mapping[Any, Collection[ir.Row]], cols: tuple[int, ...],
                 plus: Rows, minus: Rows) -> None:
        self.new, self.plus = new, plus
        key = itemgetter(*cols)
        self.minus: dict[Any, list[ir.Row]] = defaultdict(list)
        for row in minus:
            self.minus[key(row)].append(row)

    def get(self, k: Any, default: Any = None) -> Any:
        rows = [r for r in self.new.get(k, ()) if r not in self.plus]
        rows += self.minus.get(k, ())
        return rows or default


def old_state(
    db: Database, changed: Mapping[str, Change]
) -> tuple[dict[str, Any], Callable[[str, tuple[int, ...]], Any]]:
    """``F`` and ``I`` accessors for the state before ``changed`` was applied to ``db``."""
    old_F: dict[str, Any] = dict(db.full)
    for r, c in changed.items():
        old_F[r] = OldRelation(db.ensure(r), c.added, c.removed)
    old_ix: dict[tuple[str, tuple[int, ...]], Any] = {}

    def old_index(rel: str, cols: tuple[int, ...]) -> Any:
        c = changed.get(rel)
        if c is None:
            return db.index(rel, cols)
        k = (rel, cols)
        if k not in old_ix:
            old_ix[k] = OldIndex(db.index(rel, cols), cols, c.added, c.removed)
        return old_ix[k]

    return old_F, old_index


class _Variant:
    """A rule with one body literal read from a delta; planned and its code generated on
    first use (a body of n literals has n variants: planned up front, a long body's cost
    n times over, for the few relations a change ever touches)."""

    __slots__ = ("_fn", "_plan", "negated", "position", "rel", "rule", "variants")

    def __init__(self, variants: Variants, position: int, rel: str, negated: bool) -> None:
        self.rule, self.position = variants.rule, position
        self.variants = variants  # the rule's variants: planned together, as they are read
        self.rel = rel  # the relation read from the delta
        self.negated = negated
        self._plan: RulePlan | None = None
        self._fn: RunFn | None = None

    @property
    def plan(self) -> RulePlan:
        if self._plan is None:
            self._plan = self.variants.plan(self.position)
        return self._plan

    @property
    def fn(self) -> RunFn:
        if self._fn is None:
            self._fn = compile_plan(self.plan)
        return self._fn


class Maintainer:
    """Applies batches of base-fact changes to a :class:`Database` with DRed."""

    def __init__(self, program: ir.Program) -> None:
        self.program = program
        self.derived = program.derived
        self.variants: dict[int, list[_Variant]] = {}
        for st in program.strata:
            for rid in st.rules:
                rule = program.rules[rid]
                shared = Variants(rule)
                vs = []
                for i, lit in enumerate(rule.body):
                    if isinstance(lit, ir.Cmp):
                        continue
                    neg = isinstance(lit, ir.Neg)
                    rel = lit.atom.rel if isinstance(lit, ir.Neg) else lit.rel
                    vs.append(_Variant(shared, i, rel, neg))
                self.variants[rid] = vs
        self.derivations = Derivations(program)  # re-derivation: does a rule still derive it
        self.demand_plans = DemandPlans(program)
        #: answers the last :meth:`virtual_changes` added to the caller's memo
        self.memo_entries = 0
        # per stratum: delta relation -> variants reading it; and the recursive variants
        self.by_rel: dict[int, dict[str, list[_Variant]]] = {}
        self.inner: dict[int, list[_Variant]] = {}
        for st in program.strata:
            rels = set(st.relations)
            m: dict[str, list[_Variant]] = defaultdict(list)
            inner: list[_Variant] = []
            for rid in st.rules:
                for v in self.variants[rid]:
                    if v.rel in rels:
                        if not v.negated:
                            inner.append(v)
                    else:
                        m[v.rel].append(v)
            self.by_rel[st.index] = dict(m)
            self.inner[st.index] = inner

    def apply(
        self,
        db: Database,
        base: Mapping[str, Mapping[ir.Row, object]],
        inserted: Mapping[str, Rows],
        deleted: Mapping[str, Rows],
        watch: frozenset[str] = frozenset(),
        memo: Memo | None = None,
        dependents: Mapping[str, frozenset[str]] | None = None,
        plans: DemandPlans | None = None,
    ) -> dict[str, Change]:
        """Bring ``db`` up to date after ``base`` gained ``inserted`` and lost ``deleted``.

        ``base`` is the new set of base facts; returns the net change of every materialized
        relation, and of the virtual relations in ``watch``. ``memo``: the reader's answers
        of virtual relations for the state before (the watched changes read them, and add
        to them; the caller drops what the change made stale), with ``dependents``
        (relation -> the virtual relations that read it); ``plans``: the reader's plans
        (ordered by its statistics).
        """
        changes: dict[str, Change] = defaultdict(Change)
        level = db.level
        virtual = self.program.virtual
        # base-only relations (and base facts of virtual relations) change directly
        for rel in sorted(set(inserted) | set(deleted)):
            if rel in self.derived and rel not in virtual:
                continue
            full = db.ensure(rel)
            plus = {r for r in inserted.get(rel, ()) if r not in full}
            minus = {r for r in deleted.get(rel, ()) if r in full}
            db.remove(rel, minus)
            db.add(rel, plus, 0)
            changes[rel].added |= plus
            changes[rel].removed |= minus
        def changed() -> str:  # the bar's postfix, asked only when shown
            return f"{sum(len(c.added) + len(c.removed) for c in changes.values()):,} changed"

        for st in progress.each("applying changes", self.program.strata, "stratum", changed):
            if st.relations[0] in virtual:  # a stratum is virtual as a whole
                continue
            level = self._stratum(db, st, base, inserted, deleted, changes, level)
        db.level = level
        if watch:
            self.virtual_changes(db, changes, watch, memo, dependents, plans)
        return {r: c for r, c in changes.items() if c}

    def virtual_changes(self, db: Database, changes: dict[str, Change],
                         watch: frozenset[str], memo: Memo | None = None,
                         dependents: Mapping[str, frozenset[str]] | None = None,
                         plans: DemandPlans | None = None) -> None:
        """Net changes of watched virtual relations (and the virtual ones they read), found
        from the changes below them: candidates from delta variants, confirmed by asking the
        old and the new state. With ``memo`` (answers for the old state), the old state's
        questions start from it, and the new state's from its answers of the relations the
        change cannot reach (a grant leaves every user's roles, the hierarchy and the
        registrations as they were): confirming a candidate is then a warm check."""
        program = self.program
        needed = set(watch) & program.virtual
        for st in reversed(program.strata):
            if set(st.relations) & needed:
                needed |= set(st.relations)
                for rid in st.rules:
                    for v in self.variants[rid]:
                        if v.rel in program.virtual:
                            needed.add(v.rel)
        plans = plans if plans is not None else self.demand_plans
        F = db.full
        lower = {r: c for r, c in changes.items() if c}
        # materialized changes, and stored facts of virtual ones
        old_F, old_index = old_state(db, lower)
        kept: Memo | None = None
        if memo is not None and dependents is not None:
            stale = set().union(*(dependents.get(r, frozenset()) for r in lower))
            kept = {r: tables for r, tables in memo.items() if r not in stale}
        else:
            memo = None
        old = DemandContext(program, plans, old_F, old_index, memo)
        new = DemandContext(program, plans, F, db.index, kept)
        for st in program.strata:
            rels = set(st.relations)
            if not rels & needed:
                continue
            # candidates from the changes below, then (recursive stratum) from the confirmed
            # changes of the stratum itself, until nothing new is confirmed
            lost_c: dict[str, set[ir.Row]] = {r: set() for r in rels}
            gained_c: dict[str, set[ir.Row]] = {r: set() for r in rels}
            by_rel = self.by_rel[st.index]
            for dr, c in list(changes.items()):
                if c and dr not in rels:
                    for v in by_rel.get(dr, ()):
                        self._candidates(v, dr, c, old, new, lost_c, gained_c)
            for r in rels:
                stored = changes.get(r)  # base facts given for the virtual relation itself
                if stored:
                    lost_c[r] |= stored.removed
                    gained_c[r] |= stored.added
            confirmed = {r: Change() for r in rels}
            while True:
                frontier: dict[str, Change] = {}
                for r in rels:
                    # candidates over-approximate (a delta row under `not p(_)` need not flip)
                    old_rel, new_rel = old.F[r], new.F[r]
                    lost = {x for x in lost_c[r] - confirmed[r].removed
                            if x in old_rel and x not in new_rel}
                    gained = {x for x in gained_c[r] - confirmed[r].added
                              if x in new_rel and x not in old_rel}
                    lost_c[r].clear()
                    gained_c[r].clear()
                    if lost or gained:
                        frontier[r] = Change(gained, lost)
                        confirmed[r].added |= gained
                        confirmed[r].removed |= lost
                if not frontier or not st.recursive:
                    break
                for v in self.inner[st.index]:
                    fc = frontier.get(v.rel)
                    if fc:
                        self._candidates(v, v.rel, fc, old, new, lost_c, gained_c)
            for r in rels:
                changes[r] = confirmed[r]
        #: answers the last call added to the caller's memo (the caller bounds its size)
        self.memo_entries = old.entries + new.entries if memo is not None else 0

    @staticmethod
    def _candidates(v: _Variant, dr: str, c: Change, old: DemandContext, new: DemandContext,
                    lost_c: dict[str, set[ir.Row]], gained_c: dict[str, set[ir.Row]]) -> None:
        """Head rows that may have lost (old-state derivations through a removed row) or
        gained (new-state derivations through an added row) support from ``c``."""
        minus = c.added if v.negated else c.removed
        plus = c.removed if v.negated else c.added
        head = v.plan.head.rel
        if minus:
            v.fn(old.F, {dr: minus}, old.index, lost_c[head].add, {})
        if plus:
            v.fn(new.F, {dr: plus}, new.index, gained_c[head].add, {})

    # -- one stratum ---------------------------------------------------------------------------

    def _stratum(
        self,
        db: Database,
        st: ir.Stratum,
        base: Mapping[str, Mapping[ir.Row, object]],
        inserted: Mapping[str, Rows],
        deleted: Mapping[str, Rows],
        changes: dict[str, Change],
        level: int,
    ) -> int:
        rels = set(st.relations)
        F = db.full
        for r in rels:
            db.ensure(r)
        lower = {r: c for r, c in changes.items() if r not in rels and c}
        base_del = {r: {x for x in deleted.get(r, ()) if x in F[r]} for r in rels}
        base_ins = {r: set(inserted.get(r, ())) for r in rels}
        by_rel = self.by_rel[st.index]
        relevant = [v for rel in lower if rel in by_rel for v in by_rel[rel]]
        if not relevant and not any(base_del.values()) and not any(base_ins.values()):
            return level

        # 1. over-delete, in the old state
        old_F, old_index = old_state(db, lower)

        od: dict[str, Rows] = {r: set(base_del[r]) for r in rels}
        outs: dict[str, Rows] = {r: set() for r in rels}
        # a rule reading a relation that was empty derived nothing before: nothing to delete
        loaded = self._loaded(relevant, lower, F)
        for v in relevant:
            c = lower[v.rel]
            delta = c.added if v.negated else c.removed
            if delta and v.rule.index not in loaded:
                v.fn(old_F, {v.rel: delta}, old_index, outs[v.plan.head.rel].add, {})
        frontier: dict[str, Rows] = {}
        for r in rels:
            new = {x for x in outs[r] if x in F[r] and x not in od[r]}
            od[r] |= new
            frontier[r] = set(od[r])
        inner = self.inner[st.index]
        if inner:
            while any(frontier.values()):
                outs = {r: set() for r in rels}
                for v in inner:
                    if frontier[v.rel]:
                        v.fn(old_F, frontier, old_index, outs[v.plan.head.rel].add, {})
                for r in rels:
                    new = {x for x in outs[r] if x in F[r] and x not in od[r]}
                    od[r] |= new
                    frontier[r] = new

        # 2. remove
        for r in rels:
            db.remove(r, od[r])

        # 3. re-derive (one step over the remaining facts) and 4. insert
        seeds: dict[str, Rows] = {r: set() for r in rels}
        for r in rels:
            b = base.get(r, {})
            for row in od[r]:
                if row in b or self._derivable(db, r, row):
                    seeds[r].add(row)
            seeds[r] |= {x for x in base_ins[r] if x not in F[r]}
        for v in relevant:
            c = lower[v.rel]
            delta = c.removed if v.negated else c.added
            if delta and loaded.get(v.rule.index, v) is v:
                v.fn(F, {v.rel: delta}, db.index, seeds[v.plan.head.rel].add, {})
        added: dict[str, Rows] = {r: set() for r in rels}
        frontier = {}
        level += 1
        for r in rels:
            new = {x for x in seeds[r] if x not in F[r]}
            db.add(r, new, level)
            added[r] |= new
            frontier[r] = new
        if inner:
            while any(frontier.values()):
                outs = {r: set() for r in rels}
                for v in inner:
                    if frontier[v.rel]:
                        v.fn(F, frontier, db.index, outs[v.plan.head.rel].add, {})
                level += 1
                for r in rels:
                    new = outs[r].difference(F[r])
                    db.add(r, new, level)
                    added[r] |= new
                    frontier[r] = new

        for r in rels:
            gained = added[r] - od[r]
            lost = od[r] - added[r]
            if gained or lost:
                changes[r].added |= gained
                changes[r].removed |= lost
        return level

    @staticmethod
    def _loaded(relevant: list[_Variant], lower: Mapping[str, Change],
                F: Mapping[str, Any]) -> dict[int, _Variant]:
        """Rule index -> the one delta variant that finds every new derivation of the rule:
        one reading, from the delta, a positive atom over a relation that was empty before
        the change (a first load). Every derivation in the new state reads a new row there,
        so the rule's other variants (one per atom that changed: a body of n atoms over that
        relation has n) would only find the same rows again."""
        out: dict[int, _Variant] = {}
        for v in relevant:
            c = lower[v.rel]
            if (not v.negated and c.added and not c.removed and v.rule.index not in out
                    and len(F.get(v.rel, ())) == len(c.added)):
                out[v.rule.index] = v
        return out

    def _derivable(self, db: Database, rel: str, row: ir.Row) -> bool:
        return self.derivations.rule(rel, row, db.full, db.index) is not None


__all__ = ["Change", "Maintainer", "OldIndex", "OldRelation"]


def dependents(program: ir.Program) -> dict[str, frozenset[str]]:
    """relation -> the virtual relations whose answers depend on it (itself included)."""
    users: dict[str, set[str]] = {}
    for rule in program.rules:
        for lit in rule.body:
            atom = lit.atom if isinstance(lit, ir.Neg) else lit
            if isinstance(atom, ir.Atom):
                users.setdefault(atom.rel, set()).add(rule.head.rel)
    out: dict[str, frozenset[str]] = {}
    for rel in program.relations:
        seen = {rel}
        stack = [rel]
        while stack:
            for u in users.get(stack.pop(), ()):
                if u not in seen:
                    seen.add(u)
                    stack.append(u)
        out[rel] = frozenset(seen & program.virtual)
    return out
