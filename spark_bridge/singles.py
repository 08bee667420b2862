"""Rewrite 2 on Spark: classes of one run as members of their base class, corrected on the driver.

Rewrite 1 (symmetry.py) evaluates one representative per class of interchangeable values; what
it leaves are *classes of one*, values with facts of their own (at 100k tables, 9,041 of the
9,961 tables it evaluates: a table's owner, a grant on it). This module, with a goal
(``run(..., goal=, exceptions=)``), takes such a value ``v`` as a member of its **base**: the
collapsed class ``C`` (representative ``r``) of the most rows whose signature is a subset of
``v``'s; the rest of ``v``'s signature are its **extras** ``F_v`` (exceptions.py). Then:

1. **The world without the extras.** ``W0 = W − F`` (``F``: every handled value's extras). In
   ``W0``, ``v``'s signature is ``C``'s, so ``v`` is one more member of ``C``: the Spark run adds
   ``(r, v)`` to rewrite 1's pairs, which drops every row naming ``v`` (its extras with them),
   evaluates over representatives and expands. ``v``'s answers there are ``r``'s.
2. **A guard, not the argument** (exceptions.py :func:`~.exceptions.reach`, on the
   *original* program, per base shape and then for the accepted shapes together): values whose
   extras could have global or sibling effects (``admin(U) :- owner(T, U)``; a rule relating a
   table to its sibling) stay with rewrite 1, since step 3's Reach' would then reach every
   table. The answers' exactness rests on step 1's condition and step 3 alone.
3. **What the extras change, on the driver, output-sensitive.** ``W_reps``, the inputs
   without the rows naming a member of one of ``W``'s collapsed classes (rewrite 1's, before
   the handled values join them) that is not its representative, and ``W0_reps = W_reps − F``
   are read to the driver and loaded into two in-memory engines (engine/answer/reasoner.py,
   the original program). **Reach'** (:func:`reach_rows`) is the least set holding ``F`` and
   the head of every rule instance one of whose literals (positive, or a negated atom: the
   trigger) is in it and whose other positive literals all hold in ``M(W)``, or all in
   ``M(W0)`` (comparisons kept, other negations ignored). It holds every fact of ``M(W) Δ
   M(W0)``: a gained fact's derivation in ``W`` fails in ``W0``, so a positive literal of it
   was gained or a negated one lost (by induction on strata and rank, in Reach'), its other
   positive literals hold in ``M(W)``; a lost fact's least-rank derivation in ``W0`` fails in
   ``W``, likewise with ``M(W0)``. Each (rule, trigger) is compiled once with the trigger's
   variables bound and run on the engines' goal-directed views, so the cost follows what the
   extras reach (the users holding a role granted on the table, its owner), not every user
   × table. Outside Reach', ``M(W)`` and ``M(W0)`` agree, so the Spark answers
   (``M(W0)``'s, by rewrite 1) lose every goal row of Reach' (``drop``, an anti join on whole
   rows) and gain those of them that hold in ``W`` (``add``, decided in ``W``'s engine; no
   decision in ``W0``'s is needed): exactly ``M(W)``'s. Reach' and the decisions
   (:func:`solve`) need the answers only when they are corrected: from
   :data:`PROCESS_ROWS` rows they run in a second process (spawned), on the other core,
   while the driver evaluates the strata.

   **Why the representatives' worlds suffice** (rewrite 1's theorem, symmetry.py, twice).
   ``W``'s classes are sound, so ``M(W_reps)`` is ``M(W)``'s facts over representatives (no
   member that is not one), and every goal row ``f`` of ``M(W)`` is ``π(h(f))``, ``h(f)`` over
   representatives, ``π`` a product of swaps within classes (for the goal's rows: the
   shapes were analysed on the goal's demand rewrite, whose answers are the original
   program's goal rows in any world). The same partition is a valid
   one of ``W0``: ``F`` names no member of a collapsed class (the condition below), so each
   swap fixes ``F``'s rows and maps ``W0`` onto itself, and the classes' shapes (hence the
   analysis) are unchanged; ``W0_reps`` is then ``W0``'s representatives' world (``F`` is in
   ``W_reps``: it names handled values, classes of one in ``W``, and no member). So Reach'
   over ``W_reps``/``W0_reps`` holds ``M(W) Δ M(W0)``'s goal rows over representatives,
   the decisions in ``W_reps`` are ``M(W)``'s, and since each swap is an automorphism of
   both worlds, a row is in ``M(W) Δ M(W0)`` (in ``M(W)``) exactly when its ``h`` image is,
   and Reach' expanded holds every such row: the corrections are the rows
   expanded by ``W``'s pairs (symmetry.py :func:`~.symmetry.expand`, in the columns a member
   reaches) before they are applied. The handled values are no representative there (they
   join their bases only in ``W0``'s pairs): they stay as they are. An extra can name a
   collapsed class's representative only with every member of it (their signatures would
   differ otherwise); such a value is not handled.

**What keeps ``W0`` a world where rewrite 1 holds** (checked on the data): every row of
``F_v`` names no value other than ``v`` that is collapsed in ``W0`` (a member of a collapsed
class, or another handled value), so removing ``F`` leaves every collapsed class's rows as they
were and gives ``v`` exactly ``C``'s signature (``v`` is dropped otherwise: it stays with
rewrite 1). **What keeps the analysis one abstraction**: the handled values of every base shape
accepted together are analysed at once (``M`` any member of their base classes, ``V`` any
handled value), so that a Reach instance joining facts of two base classes is seen; that needs
every input row to hold at most one such value, which the base shapes show (no two of their
rows, of one relation, could be one row with members of two classes: one has ``M`` where the
other has ``⊤`` and the reverse); otherwise only the largest accepted shape is handled.
Shapes refused (a role with one more holder: ``allow_applies(U, P, O)`` does not name the
role, a global effect) keep rewrite 1 for their values.

**Bounds.** Inputs over representatives (``W_reps``) of more than :data:`DRIVER_LIMIT`
rows: no rewrite 2 (said in the progress line). With reasons (``with_reasons``), or without
a goal: no rewrite 2. Only the goal's answers (``relations[<goal relation>]``) are
corrected; the rewritten program's other relations hold the handled values as members of
their base class (``W0``), so a run that applied rewrite 2 hands out the goal's answers only
(``SparkResult.relations``).
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from grantlog.engine.answer.reasoner import Reasoner
from grantlog.engine.compile.compiler import compile_goal
from grantlog.engine.core import ir
from grantlog.engine.plan.codegen import compile_plan
from grantlog.engine.plan.join import plan_bound
from grantlog.grammar.diagnostics import plural

from . import encoding, local
from . import symmetry as symmetric
from .exceptions import reach
from .symmetry import BLANK, OTHER, TOP, Abstract, M

#: inputs over representatives (``W_reps``, read to the driver for the corrections) of more
#: rows: no rewrite 2
DRIVER_LIMIT = 2_000_000
#: candidates' cells (their blanked rows) read to the driver to find bases: at most this many
MAX_CELLS = 4_000_000
#: inputs over representatives from which Reach' and the decisions (:func:`solve`) run in a
#: second process, on the other core, while the driver evaluates the strata (fewer: inline)
PROCESS_ROWS = 20_000


class Skip(Exception):
    """Rewrite 2 does not apply to this run (why: the message)."""


def clash(shapes: list[Mapping[str, set[Abstract]]]) -> bool:
    """whether some input row could hold members of two classes of these ``shapes`` (two
    classes of one shape too): two rows of one relation, ``M`` in one where the other has
    ``⊤`` and the reverse, equal elsewhere"""
    rows: dict[str, set[Abstract]] = {}
    for s in shapes:
        for rel, got in s.items():
            rows.setdefault(rel, set()).update(got)
    for got in rows.values():
        for a in got:
            for b in got:
                if any(x is M for x in a) and all(
                        (x is M and y is TOP) or (x is TOP and y is M)
                        or (x is not M and y is not M and x == y)
                        for x, y in zip(a, b, strict=True)):
                    return True
    return False


@dataclass
class _Class:
    sig: str
    rep: str
    n: int
    sh: str
    rows: frozenset[tuple[str, ...]]


@dataclass
class Found:
    """What :meth:`Rewrite.extend` found: the handled values (value -> representative of its
    base) and the answers' corrections (whole goal rows over W's representatives, internal
    encoding): ``drop`` every goal row of Reach', ``add`` those of them that hold in ``W``."""
    handled: dict[str, str] = field(default_factory=dict)
    add: list[tuple[str, ...]] = field(default_factory=list)
    drop: list[tuple[str, ...]] = field(default_factory=list)
    summary: str = ""
    #: :func:`solve`'s result, or its future in a second process (:meth:`Rewrite.finish`)
    pending: Any = None


class Rewrite:
    """Rewrite 2 for one goal run (:func:`run`): :meth:`extend` is symmetry.py's hook, called
    with rewrite 1's classes over ``W``."""

    def __init__(self, program: ir.Program, goal: str, where: str | None, atom: ir.Atom,
                 answer: str, progress: Callable[[str], None], limit: int) -> None:
        self.program = program  # the original program (exceptions.py: not the rewrite)
        self.text = goal + (f", {where}" if where else "")
        self.atom = atom
        self.answer = answer
        self.progress = progress
        self.limit = limit
        self.found: Found | None = None
        self.pairs: Any = None  # W's pairs (rewrite 1's): the corrections expand through them
        self.pool: ProcessPoolExecutor | None = None  # the second process, while it works
        self.began = 0.0

    def extend(self, run: Any, cells: Any, internal: dict[str, Any], values: Any,
               classes: Any, kept: Any, pairs: Any, members: int,
               columns: Mapping[str, set[int]]) -> tuple[Any, int]:
        """symmetry.py :func:`~.symmetry.collapse`'s hook: the pairs with each handled value
        added as a member of its base class (or as they are, and why, in the progress)"""
        self.began = time.perf_counter()
        try:
            found, extra = self._extend(run, internal, values, classes, kept, pairs,
                                        columns)
        except Skip as why:
            self.progress(f"exceptions: off: {why}")
            return pairs, members
        self.found = found
        return pairs.unionByName(extra), members + len(found.handled)

    def finish(self) -> None:
        """The corrections of :meth:`_exact`, waited for (after the strata) when they are
        decided in a second process; the summary line (in the plans and the progress)."""
        found = self.found
        if found is None or found.pending is None:
            return
        t0 = time.perf_counter()
        got = found.pending
        if isinstance(got, Future):
            got = got.result()
            if self.pool is not None:
                self.pool.shutdown(wait=True)  # reaped: its CPU is the driver's children's
                self.pool = None
        drop, add, reached, cpu, where = got
        found.drop += drop
        found.add += add
        found.pending = None
        self.progress(f"exceptions: {reached:,} rows reached, {len(drop):,} goal rows "
                      f"decided ({cpu:.1f} s of CPU {where}; waited for "
                      f"{time.perf_counter() - t0:.1f} s)")
        found.summary = (f"exceptions: {plural(len(found.handled), 'value')} of their own "
                         f"facts run as members of their base class; "
                         f"{len(found.drop):,} answers decided again over representatives, "
                         f"{len(found.add):,} of them hold "
                         f"({time.perf_counter() - self.began:.1f} s)")
        self.progress(found.summary)

    def _extend(self, run: Any, internal: dict[str, Any], values: Any,
                classes: Any, kept: Any, pairs: Any, columns: Mapping[str, set[int]]
                ) -> tuple[Found, Any]:
        from pyspark.sql import functions as F

        got = kept.select("sig", "rep", "n", "sh", "shape").collect()
        if not got:
            raise Skip("no class")
        shapes = {g["sh"]: symmetric.parse_shape(g["shape"]) for g in got}
        # the classes of one whose abstract rows hold some class's shape: the candidates
        ones = (values.groupBy("sig").agg(F.count(F.lit(1)).alias("n"))
                .filter(F.col("n") == 1).select("sig"))
        cond = None
        for s in {tuple(tuple(r) for r in g["shape"]) for g in got}:
            lit = F.array(*[F.array(*[F.lit(c) for c in r]) for r in s])
            holds = F.size(F.array_except(lit, F.col("shape"))) == 0
            cond = holds if cond is None else cond | holds
        # their blanked rows and the representatives', kept by the collapse's one pass
        # (``values.bs``); abstracted here as the collapse does (symmetry.py ``cells``)
        cand = values.join(ones, on="sig").filter(cond).select("v", "bs")
        firsts = values.join(F.broadcast(kept.select(F.col("rep").alias("v"))), on="v")
        rows = cand.unionByName(firsts.select("v", "bs")).limit(MAX_CELLS + 1).collect()
        if len(rows) > MAX_CELLS or sum(len(x["bs"]) for x in rows) > MAX_CELLS:
            raise Skip(f"more than {MAX_CELLS:,} cells of candidates")
        self.progress(f"exceptions: the candidates' and representatives' blanked rows read "
                      f"({len(rows):,} values)")
        consts = {encoding.encode(v) for v in symmetric.constants(run.program)}
        by: dict[str, dict[tuple[str, ...], tuple[str, ...]]] = {}
        for x in rows:
            by[x["v"]] = {tuple(b): (b[0], *(c if c == BLANK or c in consts else OTHER
                                             for c in b[1:])) for b in x["bs"]}
        classes_ = [_Class(g["sig"], g["rep"], g["n"], g["sh"], frozenset(by.get(g["rep"], {})))
                    for g in got]
        repset = {c.rep for c in classes_}
        # each class by its rarest row: a candidate looks up its own rows only
        count: dict[tuple[str, ...], int] = {}
        for c in classes_:
            for row in c.rows:
                count[row] = count.get(row, 0) + 1
        index: dict[tuple[str, ...], list[_Class]] = {}
        for c in classes_:
            if c.rows:
                index.setdefault(min(c.rows, key=lambda r: (count[r], r)), []).append(c)
        base: dict[str, _Class] = {}
        for v, mine_ in by.items():
            if v in repset:
                continue
            own = set(mine_)
            best = None
            for row in own:
                for c in index.get(row, ()):
                    if c.rows <= own and (best is None or (len(c.rows), c.n, best.rep)
                                          > (len(best.rows), best.n, c.rep)):
                        best = c
            if best is not None and len(best.rows) < len(own):
                base[v] = best
        if not base:
            raise Skip("no class of one has a base")
        # extras naming another collapsed value (a member, another handled value): not handled
        others: dict[str, set[str]] = {}
        for v, c in base.items():
            for row in set(by[v]) - c.rows:
                others[v] = others.get(v, set()) | {x for x in row[1:] if x != BLANK}
        named = set().union(*others.values()) if others else set()
        collapsed = set()
        if named:
            probe = local.frame(run, [(x,) for x in sorted(named)], 1, ["x"])
            collapsed = {x["mem"] for x in pairs.join(F.broadcast(probe),
                                                      F.col("mem") == F.col("x"))
                         .select("mem").collect()}
        blocked = collapsed | set(base)  # once: per value it was quadratic (315 s at 1M)
        base = {v: c for v, c in base.items() if not (others.get(v, set()) & blocked)}
        handled, _k = self._analyse(base, by, shapes)
        if not handled:
            raise Skip("no base shape is local")
        found = Found({v: c.rep for v, c in handled.items()})
        extras: dict[str, set[tuple[str, ...]]] = {}
        for v, c in handled.items():
            for row in set(by[v]) - c.rows:
                extras.setdefault(row[0], set()).add(
                    tuple(v if x == BLANK else x for x in row[1:]))
        # what the extras change, decided over W's representatives (module doc, step 3)
        self.pairs = pairs
        others = pairs.filter(F.col("rep") != F.col("mem")).select(F.col("mem").alias("_o"))
        reps: dict[str, Any] = {}
        for rel, df in internal.items():
            names = df.columns
            for i in sorted(columns.get(rel, ())):
                df = df.join(others, F.col(f"c{i}") == F.col("_o"), "left_anti")
            reps[rel] = df.select(*names)
        self._exact(run, reps, found, extras)
        extra = local.frame(run, sorted((r, v) for v, r in found.handled.items()), 2,
                            ["rep", "mem"])
        # the extras go with their values: rewrite 1 drops a member's rows only in the
        # columns its classes' shapes reach, which need not hold an extra row's value
        at: dict[str, set[int]] = {}
        for v in handled:
            for row in set(by[v]) - handled[v].rows:
                at.setdefault(row[0], set()).update(
                    i for i, x in enumerate(row[1:]) if x == BLANK)
        gone = extra.select(F.col("mem").alias("_h"))
        for rel, cols in at.items():
            df = internal[rel]
            names = df.columns
            for i in sorted(cols - columns.get(rel, set())):
                df = df.join(F.broadcast(gone), F.col(f"c{i}") == F.col("_h"), "left_anti")
            internal[rel] = df.select(*names)
        return found, extra

    def _analyse(self, base: dict[str, _Class], by: Mapping[str, Mapping[tuple[str, ...],
                                                                      tuple[str, ...]]],
                 shapes: Mapping[str, dict[str, set[Abstract]]]
                 ) -> tuple[dict[str, _Class], int | None]:
        """the handled values (exceptions.py :func:`~.exceptions.reach` per base shape, then
        the accepted shapes together) and the goal's column they are decided in (None: the
        goal never names them)"""
        groups: dict[str, list[str]] = {}
        for v, c in base.items():
            groups.setdefault(c.sh, []).append(v)
        vars_ = [i for i, t in enumerate(self.atom.args) if isinstance(t, ir.Var)
                 and sum(1 for u in self.atom.args if u == t) == 1]

        def extras(vs: list[str]) -> dict[str, set[Abstract]]:
            out: dict[str, set[Abstract]] = {}
            for v in vs:
                for row in set(by[v]) - base[v].rows:
                    rel, a = symmetric.abstract(by[v][row])
                    out.setdefault(rel, set()).add(a)
            return out

        def verdict(shs: list[str]) -> tuple[str | None, set[int]]:
            both: dict[str, set[Abstract]] = {}
            for sh in shs:
                for rel, rows in shapes[sh].items():
                    both.setdefault(rel, set()).update(rows)
            if len(shs) > 1 and clash([shapes[sh] for sh in shs]):
                return "rows could hold members of two classes", set()
            got = reach(self.program, both, extras([v for sh in shs for v in groups[sh]]))
            if got.refused:
                return got.refused, set()
            cols = got.columns().get(self.atom.rel, set())
            if not cols <= set(vars_) or len(cols) > 1:
                return f"the goal names a value in columns {sorted(cols)}", set()
            return None, cols

        ok: list[str] = []
        for sh in sorted(groups, key=lambda s: -len(groups[s])):
            why, _cols = verdict([sh])
            if why is None and not clash([shapes[sh]]):
                ok.append(sh)
            elif why is not None:
                self.progress(f"exceptions: refused {plural(len(groups[sh]), 'value')} "
                              f"based on one shape: {why}")
        if not ok:
            return {}, None
        why, cols = verdict(ok)
        if why is not None:
            self.progress(f"exceptions: the accepted shapes together: {why}; the largest only")
            ok = ok[:1]
            why, cols = verdict(ok)
            assert why is None
        return {v: base[v] for sh in ok for v in groups[sh]}, next(iter(cols), None)

    def _exact(self, run: Any, reps: Mapping[str, Any], found: Found,
               extras: Mapping[str, set[tuple[str, ...]]]) -> None:
        """``add`` and ``drop`` over W's representatives (module doc, step 3): ``W_reps``
        read to the driver (``W0_reps``: without the extras, Reach's seeds), then
        :func:`solve`, in a second process from :data:`PROCESS_ROWS` rows (so that it runs
        on the other core while the driver evaluates the strata: :meth:`finish` waits for
        it before the corrections are applied), else here"""
        t0 = time.perf_counter()
        body, _names = compile_goal(self.program, self.text)
        atom = body[0] if body else None
        if not isinstance(atom, ir.Atom) or atom.rel != self.atom.rel:
            raise Skip("the goal's atom is not its first literal")
        left = self.limit
        inputs: dict[str, list[ir.Row]] = {}
        seeds: dict[str, list[ir.Row]] = {}
        for rel, df in reps.items():
            got = df.limit(left + 1).collect()
            left -= len(got)
            if left < 0:
                raise Skip(f"the inputs over representatives pass {self.limit:,} rows")
            gone = extras.get(rel, set())
            rows = inputs[rel] = [tuple(encoding.decode(x) for x in r) for r in got]
            mine = [r for r, e in zip(rows, got, strict=True) if tuple(e) in gone]
            if mine:
                seeds[rel] = mine
        # relations of no column: a row or none
        unit = [rel for rel, df in run.inputs.items()
                if not self.program.relations[rel].arity and df.limit(1).count()]
        n = self.limit - left
        args = (self.program, self.text, inputs, seeds, unit)
        if n >= PROCESS_ROWS:
            self.pool = ProcessPoolExecutor(1, multiprocessing.get_context("spawn"))
            found.pending = self.pool.submit(solve, *args)
        else:
            found.pending = solve(*args)
        self.progress(f"exceptions: {n:,} input rows over representatives read "
                      f"({time.perf_counter() - t0:.1f} s); Reach' and the decisions "
                      + ("in a second process, beside the strata" if n >= PROCESS_ROWS
                         else "on the driver"))


def solve(program: ir.Program, text: str, inputs: Mapping[str, list[ir.Row]],
          seeds: Mapping[str, list[ir.Row]], unit: list[str]
          ) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]], int, float, str]:
    """Rewrite 2's corrections over representatives (module doc, step 3): ``W_reps``
    (``inputs``, and a row of each relation of no column in ``unit``) and ``W0_reps`` (the
    same without ``seeds``, the extras) in memory, Reach' from the seeds, its goal rows
    (of ``text``'s first atom) decided in ``W_reps``'s engine. Returns ``drop`` and ``add``
    (internal encoding), the rows reached, the CPU seconds it took, and where it ran. Called
    in a second process too (its arguments and result pickle)."""
    c0 = time.process_time()
    w, w0 = Reasoner(program), Reasoner(program)
    with w.transaction() as tx, w0.transaction() as tx0:
        for rel, rows in inputs.items():
            tx.insert(rel, rows)
            mine = set(seeds.get(rel, ()))
            tx0.insert(rel, [r for r in rows if r not in mine] if mine else rows)
        for rel in unit:
            tx.insert(rel, [()])
            tx0.insert(rel, [()])
    body, _names = compile_goal(program, text)
    atom = body[0]
    assert isinstance(atom, ir.Atom)
    reached = reach_rows(program, w, w0, [(rel, r) for rel, rs in seeds.items() for r in rs],
                         atom)
    drop, add = decide(body, atom, reached.get(atom.rel, set()), w)
    where = "on the driver" if multiprocessing.parent_process() is None \
        else "in a second process"
    return (encoding.encode_rows(drop, len(atom.args)), encoding.encode_rows(add, len(atom.args)),
            sum(map(len, reached.values())), time.process_time() - c0, where)


def decide(body: tuple[ir.Lit, ...], atom: ir.Atom, rows: set[ir.Row], w: Reasoner
           ) -> tuple[list[ir.Row], list[ir.Row]]:
    """the goal's ``rows`` (of ``atom``, the first literal of the goal's ``body``) it can
    read, and those of them that hold in ``w``"""
    names = {t.name for t in atom.args if isinstance(t, ir.Var)}
    fn = compile_plan(plan_bound(ir.Rule(-1, "<goal>", ir.Atom("<goal>", ()), body), names))
    mine, held = [], []
    for row in sorted(rows, key=ir.row_key):
        b = _bind(atom, row, {})
        if b is not None:
            mine.append(row)
            if _holds(fn, w, b):
                held.append(row)
    return mine, held


def _bind(atom: ir.Atom, row: ir.Row, b: dict[str, ir.Value]) -> dict[str, ir.Value] | None:
    """``b`` extended so that ``atom`` reads ``row`` (None: it cannot)"""
    nb = dict(b)
    for t, x in zip(atom.args, row, strict=True):
        if isinstance(t, ir.Const):
            if t.value != x or type(t.value) is not type(x):
                return None
        elif t.name in nb:
            if nb[t.name] != x or type(nb[t.name]) is not type(x):
                return None
        else:
            nb[t.name] = x
    return nb


def _holds(fn: Any, mem: Reasoner, b: Mapping[str, ir.Value]) -> bool:
    out: set[ir.Row] = set()
    ctx = mem.view()  # a view per read: the engine bounds what its reads keep
    fn(ctx.F, None, ctx.index, out.add, b)
    return bool(out)


#: the rows of a relation a rule may read: a constant per column, or None (any value)
Pattern = tuple[ir.Value | None, ...]


def _same(x: ir.Value, y: ir.Value) -> bool:
    return x == y and type(x) is type(y)


def cone(program: ir.Program, goal: ir.Atom) -> tuple[list[ir.Rule], dict[str, set[Pattern]]]:
    """the rules ``goal`` depends on, and the rows of each relation they may read: a rule is
    kept when its head may match a pattern of its relation (the goal's constants, at first),
    and that pattern's constants, carried through the head's variables, with the body's own
    constants make a pattern of each atom it reads (positive or negated), transitively; a row
    that matches no pattern of its relation is read by no rule instance the goal needs"""
    def pattern(atom: ir.Atom, b: Mapping[str, ir.Value]) -> Pattern:
        return tuple(t.value if isinstance(t, ir.Const) else b.get(t.name) for t in atom.args)

    def bind(head: ir.Atom, p: Pattern) -> dict[str, ir.Value] | None:
        b: dict[str, ir.Value] = {}
        for t, x in zip(head.args, p, strict=True):
            if x is None:
                continue
            if isinstance(t, ir.Const):
                if not _same(t.value, x):
                    return None
            elif t.name in b and not _same(b[t.name], x):
                return None
            else:
                b[t.name] = x
        return b

    pats: dict[str, set[Pattern]] = {goal.rel: {pattern(goal, {})}}
    kept: set[int] = set()
    done: set[tuple[int, Pattern]] = set()
    changed = True
    while changed:
        changed = False
        for i, rule in enumerate(program.rules):
            for p in list(pats.get(rule.head.rel, ())):
                if (i, p) in done:
                    continue
                done.add((i, p))
                b = bind(rule.head, p)
                if b is None:
                    continue
                kept.add(i)
                for lit in rule.body:
                    atom = lit.atom if isinstance(lit, ir.Neg) else lit
                    if isinstance(atom, ir.Atom):
                        q = pattern(atom, b)
                        if q not in pats.setdefault(atom.rel, set()):
                            pats[atom.rel].add(q)
                            changed = True
    return [r for i, r in enumerate(program.rules) if i in kept], pats


def matcher(pats: Mapping[str, set[Pattern]]) -> Callable[[str, ir.Row], bool]:
    """whether a row of a relation matches one of its patterns (:func:`cone`): per relation,
    a pattern of no constant (any row), or the patterns' constants by the columns they fix
    (a set lookup per set of columns; values with their types: ``1`` is not ``"1"``)"""
    checks: dict[str, list[tuple[tuple[int, ...], set[tuple[Any, ...]]]] | None] = {}
    for rel, ps in pats.items():
        if any(all(x is None for x in p) for p in ps):
            checks[rel] = None
            continue
        by: dict[tuple[int, ...], set[tuple[Any, ...]]] = {}
        for p in ps:
            at = tuple(i for i, x in enumerate(p) if x is not None)
            by.setdefault(at, set()).add(tuple((type(p[i]), p[i]) for i in at))
        checks[rel] = list(by.items())

    def ok(rel: str, row: ir.Row) -> bool:
        if rel not in checks:
            return False
        got = checks[rel]
        return got is None or any(tuple((type(row[i]), row[i]) for i in at) in keys
                                  for at, keys in got)
    return ok


def reach_rows(program: ir.Program, w: Reasoner, w0: Reasoner,
               seeds: list[tuple[str, ir.Row]], goal: ir.Atom | None = None
               ) -> dict[str, set[ir.Row]]:
    """Reach' on the data (module doc): the least set holding ``seeds`` (the extras) and the
    head of every rule instance one of whose literals (positive or negated, the trigger) is
    in it and whose other positive literals all hold in ``w`` (``M(W)``), or all in ``w0``
    (``M(W0)``); comparisons kept, other negations ignored. Each (rule, trigger) is compiled
    once, its trigger's variables bound. With ``goal``, only the rules of its :func:`cone`
    and the rows that match its patterns: the rest cannot change its rows (a changed row
    the goal needs has a derivation, in ``W`` or ``W0``, by a kept rule whose literals all
    match their patterns, so the induction stays within them)."""
    plans: dict[str, list[tuple[ir.Atom, str, Any]]] = {}
    rules, pats = (program.rules, None) if goal is None else cone(program, goal)
    matches = None if pats is None else matcher(pats)
    for rule in rules:
        for i, lit in enumerate(rule.body):
            trigger = lit.atom if isinstance(lit, ir.Neg) else lit
            if not isinstance(trigger, ir.Atom):
                continue
            rest = tuple(x for j, x in enumerate(rule.body)
                         if j != i and not isinstance(x, ir.Neg))
            bound = {t.name for t in trigger.args if isinstance(t, ir.Var)}
            other = ir.Rule(rule.index, rule.name, rule.head, rest)
            # the atoms ordered by the engine's statistics (as its queries are)
            order = w.planner.order(other, frozenset(bound))
            plan = (plan_bound(other, bound, program.virtual, order) if order
                    else plan_bound(other, bound))
            plans.setdefault(trigger.rel, []).append((trigger, rule.head.rel,
                                                      compile_plan(plan)))
    seen: dict[str, set[ir.Row]] = {}
    todo = []
    for rel, row in seeds:
        if row not in seen.setdefault(rel, set()) and (matches is None or matches(rel, row)):
            seen[rel].add(row)
            todo.append((rel, row))
    while todo:
        rel, row = todo.pop()
        for trigger, head, fn in plans.get(rel, ()):
            b = _bind(trigger, row, {})
            if b is None:
                continue
            out: set[ir.Row] = set()
            for mem in (w, w0):
                ctx = mem.view()  # a view per read: the engine bounds what its reads keep
                fn(ctx.F, None, ctx.index, out.add, b)
            known = seen.setdefault(head, set())
            for got in out - known:
                if matches is None or matches(head, got):
                    known.add(got)
                    todo.append((head, got))
    return seen


def correct(r: Any, found: Found, answer: str, c: symmetric.Collapse | None = None,
            cols: set[int] | frozenset[int] = frozenset()) -> None:
    """the answers of ``r`` (evaluator.py ``_Run``, after rewrite 1's expansion: ``M(W0)``'s)
    minus ``found.drop``, plus ``found.add`` (a part of it: no row twice; whole rows over
    representatives, each expanded by ``c``'s pairs, W's, in the columns ``cols``:
    :func:`~.symmetry.expand`)"""
    from pyspark.sql import functions as F

    df = r.full[answer]
    names = list(df.columns)
    arity = len(names)

    def rows(got: list[tuple[str, ...]]) -> Any:
        out = local.frame(r, got, arity)  # internal columns c0, c1, ...
        if c is not None and cols:
            out = symmetric.expand(c, out, set(cols))
        return out.toDF(*names)

    if found.drop:
        df = df.join(F.broadcast(rows(found.drop)), on=names, how="left_anti").select(*names)
    if found.add:
        df = df.unionByName(rows(found.add))
    r.full[answer] = df
    r.sizes.pop(answer, None)


def run(r: Any, symmetry: bool | None, exceptions: bool | None, program: ir.Program,
        goal: str, where: str | None, d: Any, limit: int = DRIVER_LIMIT) -> None:
    """``symmetry.run(r, symmetry)`` for a goal run (``d``: its demand rewrite of
    ``program``), with rewrite 2 (module doc) when ``exceptions`` (None: when rewrite 1 runs
    and classes of one have a base; True turns rewrite 1 on; not with reasons)."""
    if exceptions is True and symmetry is False:
        raise ValueError("exceptions=True needs symmetry (rewrite 1)")
    if exceptions is False or r.with_reasons:
        if exceptions and r.with_reasons:
            r.progress("exceptions: off: with reasons")
        symmetric.run(r, symmetry)
        return
    rw = Rewrite(program, goal, where, d.goal, d.answer, r.progress, limit)
    try:
        c = symmetric.run(r, True if exceptions else symmetry, rw.extend)
        rw.finish()  # (after the strata: a second process decided beside them)
    finally:
        if rw.pool is not None:  # an error before: the second process is not waited for
            rw.pool.shutdown(wait=False, cancel_futures=True)
    if rw.found is not None and c is not None:
        r.plans.append(rw.found.summary)
        if rw.found.add or rw.found.drop:
            # the corrections are over W's representatives: expanded by W's pairs (the
            # handled values are no representative there: they stay as they are)
            wc = symmetric.Collapse(rw.pairs, c.columns, c.classes, c.members, c.summary)
            correct(r, rw.found, d.answer, wc, c.columns.get(d.answer, set()))
        # only the goal's answers are M(W)'s; the other relations hold W0 (the handled values
        # as members of their base class): not handed out (the CLI's `-r` says so)
        for rel in [x for x in r.full if x != d.answer]:
            del r.full[rel]
