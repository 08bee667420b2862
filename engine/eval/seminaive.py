"""Stratified, semi-naive, bottom-up evaluation over a :class:`Database`.

Per stratum (a strongly connected component of the dependency graph, in dependency order):

* non-recursive: every rule runs once over the full relations;
* recursive: exit rules run once; then each round runs the delta variants of the recursive rules
  (one per recursive body atom, that atom read from ``delta_<rel>``), keeps the rows not seen
  before as the next ``delta_<rel>``, and stops when every delta is empty.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field
from itertools import filterfalse

from ..core import ir
from ..core.progress import Advance, nothing, task
from ..plan.codegen import RunFn, compile_plan
from ..plan.join import RulePlan, plan_rule
from .database import Database


@dataclass
class StratumStats:
    stratum: int
    relations: tuple[str, ...]
    iterations: int = 0
    derived: int = 0
    seconds: float = 0.0


@dataclass
class EvalStats:
    strata: list[StratumStats] = field(default_factory=list)

    @property
    def derived(self) -> int:
        return sum(s.derived for s in self.strata)


@dataclass(frozen=True)
class CompiledStratum:
    stratum: ir.Stratum
    exit_plans: tuple[tuple[RulePlan, RunFn], ...]
    delta_plans: tuple[tuple[RulePlan, RunFn], ...]


def compile_strata(program: ir.Program) -> list[CompiledStratum]:
    out = []
    strata = [st for st in program.strata
              # a virtual stratum is answered on demand (engine/eval/demand.py)
              if not all(r in program.virtual for r in st.relations)]
    with task("planning", sum(len(st.rules) for st in strata), "rule") as advance:
        for st in strata:
            rec = frozenset(st.relations) if st.recursive else frozenset()
            exits: list[tuple[RulePlan, RunFn]] = []
            deltas: list[tuple[RulePlan, RunFn]] = []
            for rid in st.rules:
                for p in plan_rule(program.rules[rid], rec):
                    (deltas if p.delta_literal is not None else exits).append(
                        (p, compile_plan(p)))
            out.append(CompiledStratum(st, tuple(exits), tuple(deltas)))
            advance(len(st.rules))
    return out


class Evaluator:
    """Runs a program's compiled strata; reusable across databases."""

    def __init__(self, program: ir.Program) -> None:
        self.program = program
        self.strata = compile_strata(program)

    def run(self, db: Database) -> EvalStats:
        # millions of small tuples and no cycles among them: the cyclic collector only burns
        # time while they are built (it is switched back on afterwards)
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return self._run(db)
        finally:
            if was_enabled:
                gc.enable()

    def _run(self, db: Database) -> EvalStats:
        stats = EvalStats()
        level = db.level
        with task("evaluating", len(self.strata), "stratum") as advance:
            for cs in self.strata:
                t0 = time.perf_counter()
                s = StratumStats(cs.stratum.index, cs.stratum.relations)
                level = evaluate_stratum(db, cs, level, s, advance, stats.derived)
                s.seconds = time.perf_counter() - t0
                stats.strata.append(s)
                advance(1, postfix=_derived(stats.derived))
        db.level = level
        return stats


class TooMany(Exception):
    """A stratum evaluated with a ``cap`` derived more rows than it."""


def evaluate_stratum(db: Database, cs: CompiledStratum, level: int, s: StratumStats,
                     advance: Advance = nothing, before: int = 0, cap: int = 0) -> int:
    """Evaluate one stratum semi-naively over ``db``: its rows are added at the levels after
    ``level`` (the last one is returned); ``advance``: its progress (the rows derived,
    ``before`` it and in it, after each round of a recursive stratum); ``cap`` (0: none):
    :class:`TooMany` once a round has derived more rows than that."""
    F = db.full
    index = db.index
    for r in cs.stratum.relations:
        db.ensure(r)
    # rows derived: a dict used as an ordered set (``O`` is its ``setdefault``), so that the
    # new rows are added, indexed and read by the next round in the order they were made,
    # which is the order of their tuples in memory (a relation's index upkeep about a third
    # faster than over a set's hash order)
    outs: dict[str, dict[ir.Row, None]] = {r: {} for r in cs.stratum.relations}
    for plan, fn in cs.exit_plans:
        fn(F, None, index, outs[plan.head.rel].setdefault, {})
    level += 1
    s.iterations = 1
    delta: dict[str, dict[ir.Row, None]] = {}
    for r, out in outs.items():
        new = _new(out, F[r])
        db.add(r, new, level)
        s.derived += len(new)
    if cap and s.derived > cap:
        raise TooMany(s.derived)
    if not cs.delta_plans:
        return level
    delta = {r: dict.fromkeys(F[r]) for r in cs.stratum.relations}
    while any(delta.values()):
        outs = {r: {} for r in cs.stratum.relations}
        for plan, fn in cs.delta_plans:
            rel = plan.delta_rel
            assert rel is not None
            if delta[rel]:
                fn(F, delta, index, outs[plan.head.rel].setdefault, {})
        level += 1
        s.iterations += 1
        for r, out in outs.items():
            # delta_r = new_r - full_r ; full_r += delta_r
            new = _new(out, F[r])
            db.add(r, new, level)
            delta[r] = new
            s.derived += len(new)
        if cap and s.derived > cap:
            raise TooMany(s.derived)
        if advance is not nothing:  # no text made per round unless shown
            advance(0, postfix=f"{_derived(before + s.derived)} (stratum "
                    f"{cs.stratum.index} round {s.iterations})")
    return level


def _new(out: dict[ir.Row, None], full: dict[ir.Row, int]) -> dict[ir.Row, None]:
    """The rows of ``out`` not in ``full``, in their order (at C speed)."""
    return dict.fromkeys(filterfalse(full.__contains__, out))


def _derived(n: int) -> str:
    """A bar's postfix: the rows derived so far."""
    return f"{n:,} row{'' if n == 1 else 's'}"
