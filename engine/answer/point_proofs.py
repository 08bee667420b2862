"""The prover over a point-read view (engine/answer/timed_proofs.py): a goal's why and why-not
at a past revision, explained goal-directed over the facts at that revision read by points
(engine/answer/pointread.py :class:`~.pointread.PastView`, or ``MomentView``: the facts as
they stood at a moment), with the same prover and why-not search as the rebuilt reasoner
(engine/answer/explain/), so the explanation is the same, node for node:

* a fact is a ``fact`` leaf where the rebuilt reasoner's would be: a stored row of a base
  relation, or a stored (or rule-file) row of a derived one, its origin the rule files' place
  of it or "inserted at run time";
* the rebuilt reasoner picks, among a materialized row's derivations, the one whose highest
  body row was derived in the earliest evaluation round (engine/eval/database.py's levels).
  Those rounds are not stored; they are recomputed for the rows a proof reaches
  (:class:`_Levels`). Bottom-up evaluation (engine/eval/seminaive.py) runs the materialized
  strata in order, each taking rounds above the previous ones, so a level is ordered as
  (the stratum's position, the round inside it): a non-recursive stratum derives its rows in
  one round; in a recursive one, a row's round is the least height of its derivations — 1
  for an exit rule's, else one more than the highest round of its body rows of the same
  stratum (a stored row of it counts 1: it enters the first delta) — found by iterative
  deepening over the on-demand answers. Rows given as facts are level 0, as there.

Everything else (the goal's answers, the rule instances, the why-not's rows) is read from the
on-demand evaluation of the view, whose answers are those of the rebuilt reasoner
(tests/test_history_pointread.py); the prover and the why-not search take the smallest
binding among equals, never the order rows come in.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..core import arguments, ir
from ..core.facts import Facts, RowSpans
from ..eval.demand import DemandContext
from ..eval.derivation import Derivations
from ..plan.codegen import key_binding
from . import pointread
from .explain import Explanation, Limits, Prover, explain_goal
from .explain.atoms import ground
from .query import Goals
from .reasoner import INSERTED

Key = tuple[ir.Value, ...]
#: where a program keeps what its proofs by point reads need (``ir.Program.compiled``)
KEY = "timed_proofs"
#: the levels of one materialized stratum above the previous one's (its rounds stay below)
STRIDE = 1 << 32


class _Shape:
    """What proofs by point reads need of a program, made once: its compiled goals, where
    its rule files' facts are, and each materialized relation's stratum (its position among
    the materialized strata, and its relations when the stratum is recursive)."""

    def __init__(self, program: ir.Program) -> None:
        self.goals = Goals(program)
        self.facts = Facts.of(program.facts)
        self.spans: dict[str, RowSpans] = {}
        self.stratum: dict[str, tuple[int, frozenset[str] | None]] = {}
        #: a stratum with materialized and on-demand relations (not taken: None answers)
        self.mixed = False
        position = 0
        for st in program.strata:
            kept = [rel for rel in st.relations if rel not in program.virtual]
            if not kept:
                continue
            self.mixed = self.mixed or len(kept) != len(st.relations)
            position += 1  # as engine/eval/seminaive.py compile_strata orders them
            for rel in st.relations:
                self.stratum[rel] = (position, frozenset(st.relations) if st.recursive
                                     else None)

    def origin_of(self, rel: str, row: ir.Row) -> str:
        spans = self.spans.get(rel)
        if spans is None:
            spans = self.spans[rel] = self.facts.spans(rel)
        got = spans.get(row)
        return INSERTED if got is None else str(got)


def _shape(program: ir.Program) -> _Shape:
    got = program.compiled.get(KEY)
    if not isinstance(got, _Shape):
        got = program.compiled[KEY] = _Shape(program)
    return got


class _Proofs:
    """One explanation's reads of a view: which rows are facts, and the levels."""

    def __init__(self, program: ir.Program, shape: _Shape, view: pointread.PastView,
                 ctx: DemandContext) -> None:
        self.program, self.shape, self.view, self.ctx = program, shape, view, ctx
        self.derived = program.derived
        self.levels = _Levels(self)
        self.prover = Prover(program, self.levels, ctx, self.origin)
        #: per row of a recursive materialized stratum: a height it has a derivation
        #: within, and the greatest height it has none within
        self.upper: dict[tuple[str, ir.Row], int] = {}
        self.fails: dict[tuple[str, ir.Row], int] = {}

    def stored(self, rel: str, row: ir.Row) -> bool:
        """Whether ``rel(row)`` is a fact at the revision (stored, or in the rule files)."""
        v = self.view
        if rel in self.derived and not v.any(rel):
            return False
        return row in v.full[rel]

    def origin(self, rel: str, row: ir.Row) -> str | None:
        return self.shape.origin_of(rel, row) if self.stored(rel, row) else None

    def level(self, rel: str, row: ir.Row) -> int | None:
        """The round the rebuilt reasoner derives ``rel(row)`` in, as an order (None: not
        a row of ``rel`` at the revision)."""
        if rel not in self.derived:
            return 0 if row in self.view.full[rel] else None
        if self.stored(rel, row):
            return 0
        if row not in self.ctx.F[rel]:
            return None
        position, same = self.shape.stratum[rel]
        return position * STRIDE + (1 if same is None else self.height(rel, row, same))

    def height(self, rel: str, row: ir.Row, same: frozenset[str]) -> int:
        """The round of a row of a recursive stratum: its least derivation height."""
        k = self.fails.get((rel, row), 0) + 1
        while not self.within(rel, row, k, same):
            k += 1
        return k

    def within(self, rel: str, row: ir.Row, k: int, same: frozenset[str]) -> bool:
        """Whether ``rel(row)`` has a derivation at most ``k`` rounds high."""
        if k <= 0:
            return False
        key = (rel, row)
        up = self.upper.get(key)
        if up is not None and up <= k:
            return True
        if self.fails.get(key, 0) >= k:
            return False
        d = self.prover.derivations
        for rule, binding in d.heads(rel, row):
            rec = [a for a in rule.body if isinstance(a, ir.Atom) and a.rel in same]
            for env in d.instances(rule, binding, self.ctx.F, self.ctx.index):
                # an exit rule's row: the first round; else one above its body's rows
                if all((k >= 2 and self.stored(a.rel, g)) or self.within(a.rel, g, k - 1, same)
                       for a in rec for g in (ground(a, env),)):
                    self.upper[key] = k
                    return True
        self.fails[key] = k
        return False


class _Level(Mapping[ir.Row, int]):
    """One relation's levels (``full[rel]`` of the rebuilt reasoner), computed per row."""

    def __init__(self, proofs: _Proofs, rel: str) -> None:
        self.proofs, self.rel = proofs, rel
        self.memo: dict[ir.Row, int | None] = {}

    def __getitem__(self, row: ir.Row) -> int:
        got = self.memo.get(row, -1)
        if got == -1:
            got = self.memo[row] = self.proofs.level(self.rel, row)
        if got is None:
            raise KeyError(row)
        return got

    def __iter__(self) -> Iterator[ir.Row]:  # not read by proofs: the rows are not listed
        return iter(())

    def __len__(self) -> int:
        return 0


class _Levels(Mapping[str, _Level]):
    def __init__(self, proofs: _Proofs) -> None:
        self.proofs = proofs
        self.by: dict[str, _Level] = {}

    def __getitem__(self, rel: str) -> _Level:
        got = self.by.get(rel)
        if got is None:
            if rel not in self.proofs.program.relations:
                raise KeyError(rel)
            got = self.by[rel] = _Level(self.proofs, rel)
        return got

    def __iter__(self) -> Iterator[str]:
        return iter(self.proofs.program.relations)

    def __len__(self) -> int:
        return len(self.proofs.program.relations)


class _Context(DemandContext):
    """The view's reads for one explanation. A lookup of a derived relation on some of its
    columns is listed in full only when its rows are iterated or counted; whether it has
    any (the why-not search asks before it chooses a binding, and of a negated literal with
    anonymous variables) is answered by the first derivation found: the rebuilt reasoner
    reads that from its materialization, here a full answer would read every version's
    facts it reaches (every grant of one privilege, an entity each)."""

    derivations: Derivations | None = None
    past: pointread.PastView | None = None

    def lookup(self, rel: str, cols: tuple[int, ...], key: Key) -> Mapping[ir.Row, Any]:
        if rel in self.virtual and 0 < len(cols) < self.arity[rel] \
                and self.derivations is not None:
            got = self.lookup_of(rel, cols).table.get(key)
            return _Some(self, rel, cols, key) if got is None else got
        return super().lookup(rel, cols, key)

    def exists(self, rel: str, cols: tuple[int, ...], key: Key) -> bool:
        """Whether ``rel`` has a row whose ``cols`` are ``key``: a stored one, or the first
        rule instance deriving one."""
        d, past = self.derivations, self.past
        assert d is not None and past is not None
        if past.any(rel) and past.index(rel, cols)[key[0] if len(key) == 1 else key]:
            return True
        for rule in d.rules.get(rel, ()):
            env = key_binding(tuple(rule.head.args[c] for c in cols), key)
            if env is None:
                continue
            if next(iter(d.instances(rule, env, self.F, self._first)), None) is not None:
                return True
        return False

    def _first(self, rel: str, cols: tuple[int, ...]) -> Any:
        """``index`` for :meth:`exists`: a stored relation's rows read a page at a time."""
        past = self.past
        assert past is not None
        if rel in self.virtual or rel in past.own or rel in past.scanned \
                or not hasattr(past.reader, "first"):
            return self.index(rel, cols)
        return _Pages(past, rel, cols)


class _Some(Mapping[ir.Row, int]):
    """A lookup's rows, evaluated when listed; ``bool`` asks :meth:`_Context.exists`."""

    def __init__(self, ctx: _Context, rel: str, cols: tuple[int, ...], key: Key) -> None:
        self.ctx, self.rel, self.cols, self.key = ctx, rel, cols, key
        self._rows: dict[ir.Row, int] | None = None

    def rows(self) -> dict[ir.Row, int]:
        if self._rows is None:
            self._rows = self.ctx.demand(self.rel, self.cols, self.key)
        return self._rows

    def __bool__(self) -> bool:
        if self._rows is None:
            return self.ctx.exists(self.rel, self.cols, self.key)
        return bool(self._rows)

    def __getitem__(self, row: ir.Row) -> int:
        return self.rows()[row]

    def __iter__(self) -> Iterator[ir.Row]:
        return iter(self.rows())

    def __len__(self) -> int:
        return len(self.rows())

    def keys(self) -> Any:  # itself: ``bool`` of a keys view would count the rows
        return self


class _Pages:
    """A stored relation's index on ``cols`` whose keys' rows are read a page at a time as
    they are taken (a point reader's ``first``), the rest read in full (and kept) only when
    the first page is taken and more are wanted."""

    PAGE = 32

    def __init__(self, past: pointread.PastView, rel: str, cols: tuple[int, ...]) -> None:
        self.past, self.rel, self.cols = past, rel, cols

    def get(self, k: Any, default: Any = ()) -> Iterator[ir.Row]:
        index = self.past.index(self.rel, self.cols)
        got = dict.get(index, k)  # read already
        if got is not None:
            return iter(got)
        return self._rows(index, k)

    def _rows(self, index: Any, k: Any) -> Iterator[ir.Row]:
        key = (k,) if len(self.cols) == 1 else tuple(k)
        c = self.past.selective(self.rel, self.cols)
        bound = {c: key[self.cols.index(c)]}  # the most selective column first
        bound.update(zip(self.cols, key, strict=True))
        page, complete = self.past.reader.first(self.rel, bound, self.PAGE)  # type: ignore
        yield from page
        if not complete or isinstance(self.past, pointread.MomentView):  # (its facts with an
            # interval holding at its moment are not among a relation's stored rows)
            seen = set(page)
            yield from (row for row in index[k] if row not in seen)


def explain_in(program: ir.Program, v: pointread.PastView, goal: str,
               limits: Limits | None = None) -> Explanation | None:
    """``goal`` explained under ``program`` over the view ``v`` (None where this prover does
    not apply: a stratum mixing materialized and on-demand relations, a recursion too deep
    for it; the rebuilt reasoner answers then)."""
    shape = _shape(program)
    if shape.mixed:
        return None
    g = shape.goals[arguments.goal(goal, limits=(limits, Limits))]
    with v.lock:
        ctx = _Context(v.program, v.plans, v.full, v.index, v.memo)
        proofs = _Proofs(program, shape, v, ctx)
        ctx.derivations, ctx.past = proofs.prover.derivations, v
        try:
            return explain_goal(goal, g.rule, g.names, ctx, proofs.prover, limits)
        except RecursionError:
            return None  # the rebuilt reasoner's answer (or its diagnostic)


def explain_each(program: ir.Program, v: pointread.PastView, goals: Sequence[str],
                 why_not: bool = True) -> list[Explanation | None] | None:
    """:func:`explain_in` of each of ``goals`` over the view ``v``, with one prover (and one
    context) for all of them: a proof depends only on its row (the lowest instance, the
    smallest binding; a recursive row's level on its least height), so a premise's proof
    kept from an earlier goal is the one a fresh explanation would give. ``why_not``: a
    goal with no answer gets its why-not tree (else none). None where this prover does not
    apply (a stratum mixing materialized and on-demand relations); a goal whose recursion
    is too deep for it is None, and the goals after it get a fresh prover."""
    shape = _shape(program)
    if shape.mixed:
        return None
    out: list[Explanation | None] = []
    with v.lock:
        proofs: _Proofs | None = None
        for goal in goals:
            g = shape.goals[arguments.goal(goal, limits=(None, Limits))]
            if proofs is None:
                ctx = _Context(v.program, v.plans, v.full, v.index, v.memo)
                proofs = _Proofs(program, shape, v, ctx)
                ctx.derivations, ctx.past = proofs.prover.derivations, v
            try:
                out.append(explain_goal(goal, g.rule, g.names, proofs.ctx, proofs.prover,
                                        why_not=why_not))
            except RecursionError:
                out.append(None)  # (the rebuilt reasoner's answer)
                proofs = None
    return out


__all__ = ["explain_each", "explain_in"]
