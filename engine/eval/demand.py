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

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ..core import ir
from ..plan.codegen import Binder
from ..plan.demand import DemandPlans
from .closure import seeder, walker

Key = tuple[ir.Value, ...]
#: the matching rows of one lookup, each with the index of its deriving rule
Answer = dict[ir.Row, int]
#: relation -> looked-up columns -> key -> the answer
Memo = dict[str, dict[tuple[int, ...], dict[Key, Answer]]]
#: a rule's index and its lookup function bound to a read's view: ``run(O, key)``
Bound = tuple[int, Callable[[Any, Any], None]]
_ALL = [tuple(range(n)) for n in range(64)]
#: the rule index recorded for a row of a virtual relation given as a base fact
STORED = -1
IndexFn = Callable[[str, tuple[int, ...]], Any]


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
            if cols == tuple(range(self.arity[rel])):
                # every column, in order: a membership test of the row, no index built
                rows = self.full[rel]
                return {key: rows[key]} if key in rows else {}
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
                go = walker(c, ctx.base_index(c.edge, (c.edge_column(self.cols[0]),)),
                            forward, seeder(c, lambda rel: ctx.base_index(rel, (0,))))
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
