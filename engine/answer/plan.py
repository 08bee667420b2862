"""The plan a query runs, as readable lines: ``grantlog plan GOAL``.

:func:`describe` reads what the reasoner has chosen for a goal (``Reasoner.plan``) and walks
the lookups it makes, the way goal-directed evaluation does (engine/eval/demand.py
``DemandPlans.reads``), without running any:

* the goal's **join order**: its atoms in the order the statistics chose (engine/plan/stats.py),
  each a scan, an index lookup ``rel(cols)`` on the columns bound by then, or a (membership)
  test, with the variables it binds;
* each **lookup of a derived relation** it reaches: a materialized relation is an index read
  (engine/compile/materialize.py), with the materialization policy's reason unless an
  annotation (``@materialize``) chose it; a virtual one is answered on demand — by its rules
  with the key bound (each rule's body in its chosen order: the same report per step), tabled
  when it is recursive, by a walk over its edge's index when it is a transitive closure
  (engine/core/analyses.py), or from a coarser lookup that statistics say is small;
* the **closures** recognised, the **indexes** of stored relations read, and, when the
  database holds facts, the **statistics** (rows, distinct values per column) the order was
  chosen by, with each step's estimated rows per lookup.

A performance change then shows as a readable diff of tests/golden/plan/.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ..compile.materialize import ANNOTATED, WALKED, reasons
from ..core import ir
from ..core.hierarchy_roles import HierarchyRoles, hierarchy_roles
from ..plan.demand import DemandPlans
from ..plan.join import Assign, Filter, NegCheck, RulePlan, Scan, plan_bound


class Planner(Protocol):
    """What :func:`describe` reads: a reasoner's ``plan`` (engine/answer/reasoner.py)."""

    program: ir.Program

    def plan(self, goal: str) -> tuple[RulePlan, DemandPlans]: ...


def _cols(cols: tuple[int, ...]) -> str:
    return ",".join(map(str, cols))


@dataclass(frozen=True)
class Step:
    """One step of a body's plan: ``kind`` is scan, lookup, test (a membership test: every
    column bound), not, filter or let."""

    kind: str
    literal: str  # the body literal, as written (views unfolded: their variables renamed)
    rel: str | None = None
    cols: tuple[int, ...] = ()  # the bound columns looked up
    binds: tuple[str, ...] = ()  # the variables the step binds
    rows: float | None = None  # estimated rows per lookup (statistics)

    def line(self) -> str:
        out = (f"{self.kind} {self.literal}" if self.rel is None else
               f"{self.kind} {self.rel}({_cols(self.cols)})  {self.literal}")
        if self.binds:
            out += f"  binds {', '.join(self.binds)}"
        if self.rows is not None:
            out += f"  ~{self.rows:.3g} rows"
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "literal": self.literal, "relation": self.rel,
                "columns": list(self.cols), "binds": list(self.binds), "rows": self.rows}


@dataclass(frozen=True)
class RuleOrder:
    """A rule run for a lookup, with its body's steps in order."""

    rule: str  # its label and place
    steps: tuple[Step, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "steps": [s.to_dict() for s in self.steps]}


@dataclass(frozen=True)
class Lookup:
    """One lookup of a virtual relation on some columns: how it is answered."""

    rel: str
    cols: tuple[int, ...]
    key: str  # the key: constants shown, other columns `?`
    how: str
    rules: tuple[RuleOrder, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"relation": self.rel, "columns": list(self.cols), "key": self.key,
                "how": self.how, "rules": [r.to_dict() for r in self.rules]}


@dataclass(frozen=True)
class RelationStats:
    rel: str
    rows: int
    distinct: tuple[int, ...]  # per column


@dataclass(frozen=True)
class PlanReport:
    """What :func:`describe` found; :meth:`lines` for people, :meth:`to_dict` for tools."""

    goal: str
    order: tuple[Step, ...]
    relations: tuple[tuple[str, str], ...]  # derived relation reached -> how it is answered
    lookups: tuple[Lookup, ...]
    closures: tuple[tuple[str, str], ...]  # relation -> its edge
    indexes: tuple[str, ...]  # `rel(cols)` of stored relations read
    statistics: tuple[RelationStats, ...]  # empty without facts
    #: whether list, filters and levels walk the model's hierarchy, and why not
    fast_paths: tuple[str, ...] = ()

    def lines(self) -> list[str]:
        out = [f"plan {self.goal}", "join order:"]
        out += [f"  {n}. {s.line()}" for n, s in enumerate(self.order, 1)]
        out.append("derived relations:")
        width = max((len(r) for r, _ in self.relations), default=0)
        out += [f"  {r:<{width}}  {how}" for r, how in self.relations] or ["  (none)"]
        out.append("on demand:")
        for lk in self.lookups:
            out.append(f"  {lk.rel}({_cols(lk.cols)}) key {lk.key}: {lk.how}")
            for r in lk.rules:
                out.append(f"    {r.rule}")
                out += [f"      {n}. {s.line()}" for n, s in enumerate(r.steps, 1)]
        if not self.lookups:
            out.append("  (none)")
        out.append("closures:")
        out += [f"  {r}: transitive closure of {edge}" for r, edge in self.closures] \
            or ["  (none)"]
        out.append("indexes: " + (", ".join(self.indexes) or "(none)"))
        out.append("fast paths:")
        out += [f"  {line}" for line in self.fast_paths] or ["  (none)"]
        if self.statistics:
            out.append("statistics:")
            width = max(len(s.rel) for s in self.statistics)
            out += [f"  {s.rel:<{width}}  {s.rows} rows, distinct "
                    f"({', '.join(map(str, s.distinct))})" for s in self.statistics]
        else:
            out.append("statistics: no facts")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"goal": self.goal, "order": [s.to_dict() for s in self.order],
                "relations": dict(self.relations),
                "lookups": [lk.to_dict() for lk in self.lookups],
                "closures": dict(self.closures), "indexes": list(self.indexes),
                "fast_paths": list(self.fast_paths),
                "statistics": {s.rel: {"rows": s.rows, "distinct": list(s.distinct)}
                               for s in self.statistics}}


def _hierarchy(h: HierarchyRoles) -> str:
    """One hierarchy's roles, as a line: its closure, edge and types."""
    edge = f"`{h.edge}` (child, parent)" if h.upward else f"`{h.edge}` (parent, child)"
    types = (f"types {', '.join(f'`{k}`' for k in h.kinds)}" if h.kinds else
             f"types `{h.type}`" if h.type else "no types")
    if h.closure is None:
        return f"`{h.strict}` over `{h.edge}`" + (" (rows reversed)" if h.upward else "")
    strict = f", strict `{h.strict}`" if h.strict else ""
    return f"`{h.closure}` over {edge}{strict}, {types}"


def fast_paths(program: ir.Program) -> tuple[str, ...]:
    """Whether ``list``, ``who``, filters and levels walk the model's hierarchy
    (engine/core/hierarchy_roles.py), and why not."""
    h = hierarchy_roles(program)
    if h.walkable:
        out = [f"list, filters, levels: walk the hierarchy {_hierarchy(h)}"]
    else:
        out = [f"list: no walkable hierarchy: {h.why}; list and filters evaluate the "
               "decision for every candidate"]
    out += [f"closure walk (prepare builds its indexes): {_hierarchy(o)}" for o in h.others]
    return tuple(out)


def describe(reasoner_or_program: Planner | ir.Program, goal: str) -> PlanReport:
    """The plan a query of ``goal`` runs on this reasoner now (a program: on a fresh
    in-memory reasoner over its own facts)."""
    if isinstance(reasoner_or_program, ir.Program):
        from .reasoner import Reasoner

        reasoner: Planner = Reasoner(reasoner_or_program)
    else:
        reasoner = reasoner_or_program
    plan, plans = reasoner.plan(goal)
    return _Walk(reasoner.program, plans).report(goal, plan)


class _Walk:
    """The lookups a plan makes, followed once each (per relation, columns and constants)."""

    def __init__(self, program: ir.Program, plans: DemandPlans) -> None:
        self.program, self.plans = program, plans
        self.stats = plans.stats
        self.facts = self.stats is not None and any(self.stats.size(r)
                                                    for r in program.relations)
        self.seen: set[tuple[str, tuple[int, ...], tuple[tuple[int, ir.Value], ...]]] = set()
        self.lookups: list[Lookup] = []
        self.reached: dict[str, str] = {}
        self.stored: set[str] = set()
        self.indexes: set[tuple[str, tuple[int, ...]]] = set()
        self.closures: dict[str, str] = {}
        #: why each relation is materialized, or a closure walked (engine/compile/materialize.py)
        self.why = reasons(program)
        #: the key of the first lookup shown with these rule orders (others refer to it)
        self.shown: dict[tuple[Any, ...], str] = {}

    def report(self, goal: str, plan: RulePlan) -> PlanReport:
        order = self.steps(plan)
        stats = self.stats
        statistics = () if stats is None or not self.facts else tuple(
            RelationStats(r, stats.size(r), tuple(stats.distinct(r, c) for c in
                                                  range(self.program.relations[r].arity)))
            for r in sorted(self.stored))
        return PlanReport(goal, order, tuple(sorted(self.reached.items())),
                          tuple(self.lookups), tuple(sorted(self.closures.items())),
                          tuple(f"{r}({_cols(c)})" for r, c in sorted(self.indexes)),
                          statistics, fast_paths(self.program))

    def steps(self, plan: RulePlan) -> tuple[Step, ...]:
        """The plan's steps, each lookup of a derived relation followed."""
        wide = self.plans.wide(plan)
        body = plan.rule.body
        out: list[Step] = []
        for s in plan.steps:
            text = str(body[s.literal])
            if isinstance(s, Scan):
                kind = ("test" if len(s.key_cols) == s.arity else
                        "lookup" if s.key_cols else "scan")
                cols = wide.get((s.rel, s.key_cols), s.key_cols)
                out.append(Step(kind, text, s.rel, s.key_cols, tuple(v for _, v in s.out),
                                self.estimate(s.rel, s.key_cols, s.key_terms)))
                self.read(s.rel, cols, s.key_cols, s.key_terms)
            elif isinstance(s, NegCheck):
                out.append(Step("not", text, s.rel, s.key_cols))
                self.read(s.rel, wide.get((s.rel, s.key_cols), s.key_cols), s.key_cols,
                          s.key_terms)
            elif isinstance(s, Filter):
                out.append(Step("filter", text))
            else:
                assert isinstance(s, Assign)
                out.append(Step("let", text, binds=(s.var,)))
        return tuple(out)

    def estimate(self, rel: str, cols: tuple[int, ...],
                 terms: tuple[ir.Term, ...]) -> float | None:
        if self.stats is None or not self.facts:
            return None
        consts = tuple((c, t.value) for c, t in zip(cols, terms, strict=True)
                       if isinstance(t, ir.Const))
        return self.stats.estimate(rel, cols, self.program.relations[rel].arity, consts)[0]

    def read(self, rel: str, cols: tuple[int, ...], key_cols: tuple[int, ...],
             terms: tuple[ir.Term, ...]) -> None:
        """A lookup of ``rel`` on ``cols`` (``key_cols``/``terms``: the step's own key, of
        which ``cols`` may be a coarser part)."""
        consts = tuple((c, t.value) for c, t in zip(key_cols, terms, strict=True)
                       if isinstance(t, ir.Const) and c in cols)
        self.lookup(rel, cols, consts)

    def lookup(self, rel: str, cols: tuple[int, ...],
               consts: tuple[tuple[int, ir.Value], ...]) -> None:
        program, plans = self.program, self.plans
        if rel not in program.virtual:
            self.stored.add(rel)
            if rel in program.derived:  # the policy's reason; an annotation shows itself
                why = self.why.get(rel, ANNOTATED)
                self.reached[rel] = "materialized" + ("" if why == ANNOTATED else f": {why}")
            if cols and len(cols) < program.relations[rel].arity:
                self.indexes.add((rel, cols))
            return
        k = (rel, cols, consts)
        if k in self.seen:
            return
        self.seen.add(k)
        known = dict(consts)
        key = "(" + ", ".join(ir.show_value(known[c]) if c in known else "?" for c in cols) + ")"
        has_rows = self.stats is not None and self.stats.size(rel) > 0
        if has_rows:
            self.stored.add(rel)
        closure = plans.closure(rel)
        if closure is not None:
            self.closures[rel] = closure.edge
        if closure is not None and cols and not has_rows:
            self.reached[rel] = "on demand: closure walk" + (
                f" ({WALKED})" if self.why.get(rel) == WALKED else "")
            if cols in ((0,), (1,)):
                edge_cols = (closure.edge_column(cols[0]),)
                self.lookups.append(Lookup(rel, cols, key, f"walk over {closure.edge}"
                                           f"({_cols(edge_cols)})"))
                self.stored.add(closure.edge)
                self.indexes.add((closure.edge, edge_cols))
            else:
                self.lookups.append(Lookup(rel, cols, key, f"from {rel}(1), filtered"))
                self.lookup(rel, (1,), tuple((c, v) for c, v in consts if c == 1))
            return
        coarse = plans.coarse(rel, cols)
        if coarse is not None:
            self.reached.setdefault(rel, "on demand: rules")
            self.lookups.append(Lookup(rel, cols, key, f"from {rel}({_cols(coarse.cols)}), "
                                       "filtered"))
            self.lookup(rel, coarse.cols, tuple((c, v) for c, v in consts if c in coarse.cols))
            return
        # the rules the key selects, and whether they are tabled, as a lookup decides
        # (engine/eval/demand.py ``Lookup``): by the key's value where most heads have one
        d = plans.calls(rel, cols)
        if d.pos >= 0 and cols[d.pos] in known:
            value = known[cols[d.pos]]
            selected = {i for i, _ in d.by.get(value, d.rest)}
            tabled = rel in plans.recursive and value not in d.plain
        else:  # any rule, depending on the key
            selected = {r.index for r in plans.rules.get(rel, ())}
            tabled = rel in plans.recursive
        how = "tabled" if tabled else "rules"
        self.reached[rel] = f"on demand: {how}"
        entry = len(self.lookups)
        self.lookups.append(Lookup(rel, cols, key, how))
        orders: list[RuleOrder] = []
        for rule in plans.rules.get(rel, ()):
            if rule.index not in selected:
                continue  # another key value selects this rule
            head = tuple(rule.head.args[c] for c in cols)
            bound = frozenset(t.name for t in head if isinstance(t, ir.Var))
            flat = plans.unfold(rule)
            for view in _unfolded(rule, flat):
                self.reached[view] = "on demand: unfolded into the rules that read it"
            plan = plan_bound(flat, set(bound), program.virtual, plans.order(flat, bound))
            orders.append(RuleOrder(_label(rule), self.steps(plan)))
        how += " + stored rows" if has_rows else ""
        same = self.shown.setdefault((rel, cols, how, tuple(orders)), key)
        self.lookups[entry] = (Lookup(rel, cols, key, how, tuple(orders)) if same == key else
                               Lookup(rel, cols, key, f"{how}, as for key {same}"))


def _unfolded(rule: ir.Rule, flat: ir.Rule) -> list[str]:
    """The views of ``rule``'s body that ``flat`` has unfolded."""
    if flat is rule:
        return []
    kept = {lit.rel for lit in flat.body if isinstance(lit, ir.Atom)}
    return sorted({lit.rel for lit in rule.body if isinstance(lit, ir.Atom)} - kept)


def _label(rule: ir.Rule) -> str:
    s = rule.span
    return f"{rule.head} ({s.shown_file}:{s.line})"
