"""Goal-directed answers for virtual relations (see engine/analysis.py).

A :class:`DemandContext` wraps the accessors generated rule code reads — ``F[rel]`` and
``I(rel, cols)`` — so that a virtual relation looks like any other: membership, iteration and
index lookups on it run its rules with the looked-up columns bound (sideways information
passing: the bound head arguments seed the body plan, engine/plan.py ``plan_bound``). Results
are memoized per (relation, bound columns, key) for the life of the context, which is one read.
Virtual relations are non-recursive, so this terminates; it is tabling without the fixpoint.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from . import ir
from .codegen import RunFn, compile_plan
from .plan import plan_bound

Key = tuple[ir.Value, ...]
IndexFn = Callable[[str, tuple[int, ...]], Any]


class DemandPlans:
    """Compiled bound plans per (rule, bound head variables), shared by all contexts."""

    def __init__(self, program: ir.Program) -> None:
        self.program = program
        self.rules: dict[str, list[ir.Rule]] = {}
        for r in program.rules:
            self.rules.setdefault(r.head.rel, []).append(r)
        self.cache: dict[tuple[int, frozenset[str]], RunFn] = {}

    def fn(self, rule: ir.Rule, bound: frozenset[str]) -> RunFn:
        k = (rule.index, bound)
        f = self.cache.get(k)
        if f is None:
            f = self.cache[k] = compile_plan(
                plan_bound(rule, set(bound), self.program.virtual))
        return f


class DemandContext:
    """One read's view of the database: materialized relations as they are, virtual ones on
    demand. ``F`` and ``index`` are what generated rule functions take."""

    def __init__(self, program: ir.Program, plans: DemandPlans,
                 full: Mapping[str, Any], index: IndexFn) -> None:
        self.virtual = program.virtual
        self.plans = plans
        self.full = full
        self.base_index = index
        self.memo: dict[tuple[str, tuple[int, ...], Key], dict[ir.Row, None]] = {}
        # tabling state for recursive virtual relations
        self.stack: list[tuple[str, tuple[int, ...], Key]] = []
        self.partial: list[dict[ir.Row, None]] = []
        self.active: dict[tuple[str, tuple[int, ...], Key], int] = {}
        self.low: list[int] = [1 << 30]
        self.recursive_hits: set[int] = set()
        self.F = _Relations(self)

    def index(self, rel: str, cols: tuple[int, ...]) -> Any:
        if rel in self.virtual:
            return VirtualIndex(self, rel, cols)
        return self.base_index(rel, cols)

    def lookup(self, rel: str, cols: tuple[int, ...], key: Key) -> Mapping[ir.Row, None]:
        """Rows of ``rel`` whose ``cols`` equal ``key`` (any relation)."""
        if rel not in self.virtual:
            if not cols:
                return self.full[rel]  # type: ignore[no-any-return]
            k: Any = key[0] if len(key) == 1 else key
            return self.base_index(rel, cols).get(k, {})  # type: ignore[no-any-return]
        return self.demand(rel, cols, key)

    def demand(self, rel: str, cols: tuple[int, ...], key: Key) -> dict[ir.Row, None]:
        """Rows of virtual ``rel`` whose ``cols`` equal ``key``, tabled.

        Recursive virtual relations (the decision relation defined through itself) are
        handled like SLG tabling without negation in cycles (stratification rules it out): a
        call that meets a call still on the stack gets that call's answers so far and marks
        the cycle; the oldest call of the cycle (its leader) re-evaluates until its answers
        stop growing, and only then are the cycle's answers memoized as complete.
        """
        mk = (rel, cols, key)
        got = self.memo.get(mk)
        if got is not None:
            return got
        pos = self.active.get(mk)
        if pos is not None:  # a recursive call: answers so far; the caller is incomplete
            self.recursive_hits.add(pos)
            if pos < self.low[-1]:
                self.low[-1] = pos
            return dict(self.partial[pos])  # a snapshot: the caller iterates it
        depth = len(self.stack)
        out: dict[ir.Row, None] = {}
        self.stack.append(mk)
        self.partial.append(out)
        self.active[mk] = depth
        self.low.append(depth)
        self.recursive_hits.discard(depth)
        try:
            while True:
                before = len(out)
                self._evaluate(rel, cols, key, out)
                if self.low[-1] < depth:  # inside a cycle led further down the stack
                    break
                if depth not in self.recursive_hits or len(out) == before:
                    break  # no cycle through this call, or its answers reached a fixpoint
        finally:
            low = self.low.pop()
            self.stack.pop()
            self.partial.pop()
            del self.active[mk]
        if low < depth:  # part of a cycle led further down: not complete yet, not memoized
            if low < self.low[-1]:
                self.low[-1] = low
            return out
        self.recursive_hits.discard(depth)
        self.memo[mk] = out
        return out

    def _evaluate(self, rel: str, cols: tuple[int, ...], key: Key,
                  out: dict[ir.Row, None]) -> None:
        add = out.setdefault
        stored = self.full.get(rel)
        if stored:  # base facts given for a virtual relation are stored like any others
            if not cols:
                out.update(dict.fromkeys(stored))
            else:
                k: Any = key[0] if len(key) == 1 else key
                out.update(dict.fromkeys(self.base_index(rel, cols).get(k, ())))
        for rule in self.plans.rules.get(rel, ()):
            binding: dict[str, ir.Value] = {}
            ok = True
            for c, v in zip(cols, key, strict=True):
                t = rule.head.args[c]
                if isinstance(t, ir.Const):
                    ok = t.value == v
                elif binding.setdefault(t.name, v) != v:
                    ok = False
                if not ok:
                    break
            if not ok:
                continue
            fn = self.plans.fn(rule, frozenset(binding))
            fn(self.F, None, self.index, add, binding)


class _Relations(Mapping[str, Any]):
    """``F`` for generated code: dicts for materialized relations, views for virtual ones."""

    def __init__(self, ctx: DemandContext) -> None:
        self.ctx = ctx

    def __getitem__(self, rel: str) -> Any:
        if rel in self.ctx.virtual:
            return VirtualRelation(self.ctx, rel)
        return self.ctx.full[rel]

    def __iter__(self) -> Iterator[str]:
        return iter(self.ctx.full)

    def __len__(self) -> int:
        return len(self.ctx.full)


class VirtualRelation:
    """A virtual relation seen as a set of rows."""

    __slots__ = ("ctx", "rel")

    def __init__(self, ctx: DemandContext, rel: str) -> None:
        self.ctx, self.rel = ctx, rel

    def __contains__(self, row: object) -> bool:
        assert isinstance(row, tuple)
        return bool(self.ctx.demand(self.rel, tuple(range(len(row))), row))

    def __iter__(self) -> Iterator[ir.Row]:
        return iter(self.ctx.demand(self.rel, (), ()))

    def __len__(self) -> int:
        return len(self.ctx.demand(self.rel, (), ()))

    def get(self, row: ir.Row, default: Any = None) -> Any:
        return 0 if row in self else default


class VirtualIndex:
    """A virtual relation seen as a hash index on ``cols``."""

    __slots__ = ("cols", "ctx", "rel")

    def __init__(self, ctx: DemandContext, rel: str, cols: tuple[int, ...]) -> None:
        self.ctx, self.rel, self.cols = ctx, rel, cols

    def get(self, k: Any, default: Any = None) -> Any:
        key = (k,) if len(self.cols) == 1 else k
        rows = self.ctx.demand(self.rel, self.cols, key)
        return rows if rows else default
