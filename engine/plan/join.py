"""Rule bodies → ordered join plans, with semi-naive delta variants for recursive strata.

A plan is a list of steps run left to right, each binding more variables:

* :class:`Scan` — a positive atom: iterate a relation (or its delta), or look up a hash index on
  the columns already bound (constants and bound variables), or test membership when every
  column is bound.
* :class:`Filter` — a comparison whose variables are bound.
* :class:`Assign` — ``X = term`` where ``X`` is not bound yet.
* :class:`NegCheck` — ``not atom`` once its named variables are bound (anonymous ones are
  wildcards).

Join order is sideways information passing, one loop (engine/plan/greedy.py) with the score as the
caller's policy: after the delta atom (if any), take the best-scored atom given what is bound
(:class:`Policy`, the in-memory default: most bound columns, ties in source order); place
comparisons and negations as soon as they are bound. Goal-directed plans (engine/eval/demand.py)
take the order engine/plan/stats.py estimates cheapest from the database's sizes; the Spark
planner (spark_bridge/planner.py) passes its own policy; the demand rewrite's ``sips``
(engine/plan/magic.py) runs the same loop.
"""

from __future__ import annotations

import heapq
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..core import ir
from ..core.terms import is_anon
from .greedy import Start, greedy_steps

Source = str  # "full" or "delta"


@dataclass(frozen=True)
class Scan:
    rel: str
    source: Source
    arity: int
    key_cols: tuple[int, ...]
    key_terms: tuple[ir.Term, ...]
    out: tuple[tuple[int, str], ...]  # column -> newly bound variable
    eqs: tuple[tuple[int, str], ...]  # column must equal a variable bound earlier in this atom
    literal: int  # position in the rule body


@dataclass(frozen=True)
class NegCheck:
    rel: str
    arity: int
    key_cols: tuple[int, ...]
    key_terms: tuple[ir.Term, ...]
    literal: int


@dataclass(frozen=True)
class Filter:
    op: str
    left: ir.Term
    right: ir.Term
    literal: int


@dataclass(frozen=True)
class Assign:
    var: str
    value: ir.Term
    literal: int


Step = Scan | NegCheck | Filter | Assign


@dataclass(frozen=True)
class RulePlan:
    rule: ir.Rule
    head: ir.Atom
    steps: Sequence[Step]
    delta_literal: int | None  # body position read from the delta, or None
    pre_bound: tuple[str, ...] = ()

    @property
    def delta_rel(self) -> str | None:
        if self.delta_literal is None:
            return None
        lit = self.rule.body[self.delta_literal]
        atom = lit.atom if isinstance(lit, ir.Neg) else lit
        assert isinstance(atom, ir.Atom)
        return atom.rel

    def describe(self) -> str:
        parts = []
        for s in self.steps:
            if isinstance(s, Scan):
                how = "delta " if s.source == "delta" else ""
                if len(s.key_cols) == s.arity:
                    parts.append(f"member {how}{s.rel}{list(s.key_cols)}")
                elif s.key_cols:
                    parts.append(f"lookup {how}{s.rel}{list(s.key_cols)}")
                else:
                    parts.append(f"scan {how}{s.rel}")
            elif isinstance(s, NegCheck):
                parts.append(f"not {s.rel}{list(s.key_cols)}")
            elif isinstance(s, Filter):
                parts.append(f"filter {s.left} {s.op} {s.right}")
            else:
                parts.append(f"let {s.var} = {s.value}")
        return " -> ".join(parts)


def _bound_term(t: ir.Term, bound: set[str]) -> bool:
    return isinstance(t, ir.Const) or (t.name in bound and not is_anon(t))


def _scan(lit: ir.Atom, pos: int, source: Source, bound: set[str]) -> Scan:
    key_cols: list[int] = []
    key_terms: list[ir.Term] = []
    out: list[tuple[int, str]] = []
    eqs: list[tuple[int, str]] = []
    fresh: set[str] = set()
    for col, t in enumerate(lit.args):
        if isinstance(t, ir.Const) or (t.name in bound and not t.name.startswith("_?")):
            key_cols.append(col)
            key_terms.append(t)
        else:
            assert isinstance(t, ir.Var)
            if t.name in fresh:
                eqs.append((col, t.name))
            else:
                fresh.add(t.name)
                out.append((col, t.name))
    bound.update(fresh)
    return Scan(lit.rel, source, len(lit.args), tuple(key_cols), tuple(key_terms),
                tuple(out), tuple(eqs), pos)


def comparison(lit: ir.Cmp, is_bound: Callable[[ir.Term], bool]) -> bool | tuple[ir.Var, ir.Term]:
    """How a comparison is placed, given which terms are bound: True, a filter (both sides
    bound); ``(X, term)``, an assignment ``X = term`` (``=`` with one side a variable not
    bound yet, the other bound); False, not yet."""
    lb, rb = is_bound(lit.left), is_bound(lit.right)
    if lb and rb:
        return True
    if lit.op == "=" and lb and isinstance(lit.right, ir.Var):
        return (lit.right, lit.left)
    if lit.op == "=" and rb and isinstance(lit.left, ir.Var):
        return (lit.left, lit.right)
    return False


class Policy:
    """How :func:`order_body` chooses the next positive atom: the highest :meth:`score`;
    :meth:`taking` sees each atom (the delta one too) just before it is read. This default
    is the in-memory engine's: most bound columns first, counting constants (an index
    lookup); a fully bound atom (a membership test) before a lookup; a stored relation before
    a virtual one, whose lookups evaluate rules; ties in source order."""

    def __init__(self, virtual: frozenset[str] = frozenset()) -> None:
        self.virtual = virtual

    def score(self, pos: int, atom: ir.Atom, bound: set[str]) -> Any:
        """(any column bound, all bound, stored, bound columns) packed into one integer
        with the same order (compared in C by :func:`~.greedy.greedy`'s heap)."""
        n = 0
        for t in atom.args:
            if isinstance(t, ir.Const) or (t.name in bound and not t.name.startswith("_?")):
                n += 1
        full = n == len(atom.args)
        return ((1 if n or full else 0) << 34 | (1 if full else 0) << 33
                | (0 if atom.rel in self.virtual else 1) << 32 | n)

    def taking(self, pos: int, atom: ir.Atom, bound: set[str]) -> None:
        """Called before ``atom`` (at body position ``pos``) is read, ``bound`` not yet
        updated."""

    def depends(self, pos: int, atom: ir.Atom) -> Iterable[str]:
        """The variables :meth:`score` reads for ``atom``: it is scored again only when one
        of them is bound (:func:`greedy`). A subclass whose score reads more overrides this."""
        return _named(atom.args)


def _named(args: Iterable[ir.Term]) -> list[str]:
    return [t.name for t in args if type(t) is ir.Var and not t.name.startswith("_?")]


class Waiting:
    """The comparisons and negations of a body not placed yet (body position -> literal),
    placed as :func:`place_ready` places them (passes in body order until a pass places
    none), but a pass after the first visits only the literals that read a variable bound
    since (their readiness depends on nothing else), not every literal left."""

    def __init__(self, items: Iterable[tuple[int, ir.Lit]]) -> None:
        self.items: dict[int, ir.Lit] = dict(items)
        self.readers: dict[str, list[int]] = {}
        for i, lit in self.items.items():
            for name in _named(_terms(lit)):
                self.readers.setdefault(name, []).append(i)

    def __bool__(self) -> bool:
        return bool(self.items)

    def fork(self) -> Waiting:
        """A copy to place from (the readers shared: :meth:`place` only reads them)."""
        w = Waiting(())
        w.items, w.readers = dict(self.items), self.readers
        return w

    def place(self, place: Callable[[int, ir.Lit], list[str] | None],
              fresh: Iterable[str] | None, also: Iterable[int] = ()) -> list[str]:
        """Place what is ready: ``place`` places one literal and returns the variables it
        bound, or None (not ready); ``fresh``: the variables bound since the last call (None:
        visit every literal); ``also``: more positions to visit (e.g. the literals ready
        with nothing bound). Returns the variables the placed literals bound."""
        items, readers = self.items, self.readers
        if not items:
            return []
        if fresh is None:
            todo = list(items)
        else:
            todo = sorted({j for name in fresh for j in readers.get(name, ()) if j in items}
                          | {j for j in also if j in items})
        got: list[str] = []
        while todo:  # one pass, in body order
            queued = set(todo)
            later: set[int] = set()
            while todo:
                pos = heapq.heappop(todo)
                names = place(pos, items[pos])
                if names is None:
                    continue
                del items[pos]
                got.extend(names)
                for name in names:
                    for j in readers.get(name, ()):
                        if j not in items:
                            continue
                        if j > pos and j not in queued:
                            heapq.heappush(todo, j)
                            queued.add(j)
                        elif j < pos:
                            later.add(j)
            todo = sorted(later)
        return got


def order_body(
    body: tuple[ir.Lit, ...],
    pre_bound: set[str] | None = None,
    first: int | None = None,
    virtual: frozenset[str] = frozenset(),
    atom_order: Sequence[int] | None = None,
    policy: Policy | None = None,
) -> list[Step]:
    """Steps for a body: the delta literal first (``first``), then the positive atoms in
    ``atom_order`` (body positions, e.g. chosen from statistics by engine/plan/stats.py) or
    greedily by the ``policy``'s score (default: bound columns, :class:`Policy`; the Spark
    planner passes its own), each comparison and negation as soon as it is bound — except,
    in an ``atom_order`` plan, a negation of a virtual relation: its lookup evaluates rules,
    so it waits until every positive atom has been read (``not denied(U, P, O)`` is asked
    only where an ALLOW applied, not for every object looked at)."""
    steps: list[Step] = []
    for _ in _ordering(steps, body, pre_bound, first, virtual, atom_order, policy):
        pass
    return steps


def _ordering(
    steps: list[Step],
    body: tuple[ir.Lit, ...],
    pre_bound: set[str] | None = None,
    first: int | None = None,
    virtual: frozenset[str] = frozenset(),
    atom_order: Sequence[int] | None = None,
    policy: Policy | None = None,
    shared: _Body | None = None,
) -> Iterator[None]:
    """:func:`order_body` appending to ``steps``, yielding after each atom read (with the
    literals it made ready); ``shared``: what the delta variants of ``body`` share
    (:class:`Variants`, the default policy, nothing pre-bound)."""
    bound = set(pre_bound or ())
    policy = shared.policy if shared is not None else (policy or Policy(virtual))
    defer = atom_order is not None and bool(virtual) and any(
        isinstance(lit, ir.Atom) for lit in body)
    others = (shared.waiting.fork() if shared is not None else
              Waiting((i, lit) for i, lit in enumerate(body) if not isinstance(lit, ir.Atom)))
    atoms = (shared.atoms if shared is not None else
             [(i, lit) for i, lit in enumerate(body) if isinstance(lit, ir.Atom)])

    def place(i: int, lit: ir.Lit, last: bool) -> list[str] | None:
        if isinstance(lit, ir.Cmp):
            how = comparison(lit, lambda t: _bound_term(t, bound))
            if how is False:
                return None
            if how is True:
                steps.append(Filter(lit.op, lit.left, lit.right, i))
                return []
            var, value = how
            steps.append(Assign(var.name, value, i))
            bound.add(var.name)
            return [var.name]
        assert isinstance(lit, ir.Neg)
        if not _ready(lit, bound):
            return None
        if defer and not last and lit.atom.rel in virtual:
            return None
        cols = [c for c, t in enumerate(lit.atom.args) if not is_anon(t)]
        steps.append(NegCheck(lit.atom.rel, len(lit.atom.args), tuple(cols),
                              tuple(lit.atom.args[c] for c in cols), i))
        return []

    def read(i: int, atom: ir.Atom, source: Source, last: bool = False) -> list[str]:
        """Read ``atom``, then place what it made ready; the variables bound."""
        policy.taking(i, atom, bound)
        scan = _scan(atom, i, source, bound)
        steps.append(scan)
        fresh = [v for _, v in scan.out]
        return fresh + others.place(lambda j, lit: place(j, lit, last),
                                    None if last else fresh)

    # a shared start with variables pre-bound (a template of :class:`Variants`): a delta's
    fresh: list[str] = sorted(bound) if shared is not None else []
    taken: list[int] = []
    if first is not None:
        # the delta literal goes first; a negated literal read from a delta binds its atom's
        # variables from the delta rows (incremental maintenance, engine/eval/incremental.py) and
        # stays in the body as a check: `not p(_)` may still be false because of other rows
        lit = body[first]
        atom = lit.atom if isinstance(lit, ir.Neg) else lit
        assert isinstance(atom, ir.Atom)
        if shared is None:
            atoms = [a for a in atoms if a[0] != first]
        elif first in shared.k:
            taken.append(shared.k[first])
        policy.taking(first, atom, bound)
        scan = _scan(atom, first, "delta", bound)
        steps.append(scan)
        fresh = [v for _, v in scan.out]
    if shared is None:
        others.place(lambda j, lit: place(j, lit, False), None)
    else:  # the literals ready with nothing bound, and those reading what the delta bound
        fresh += others.place(lambda j, lit: place(j, lit, False), fresh, shared.ready)
    yield
    if atom_order is not None:
        by_pos = dict(atoms)
        assert sorted(atom_order) == sorted(by_pos), "atom_order must list every atom"
        for n, i in enumerate(atom_order, 1):
            a = by_pos[i]
            assert isinstance(a, ir.Atom)
            read(i, a, "full", n == len(atom_order))
            yield
        atoms = []

    yield from greedy_steps(
        atoms, lambda a: policy.score(a[0], a[1], bound), lambda a: read(a[0], a[1], "full"),
        lambda a: policy.depends(a[0], a[1]), shared.start if shared is not None else None,
        taken, fresh if shared is not None else ())
    if others:  # the safety check rules this out; keep the failure loud if it ever happens
        raise AssertionError(f"unplaceable literals {[str(o) for o in others.items.values()]}")


def _ready(lit: ir.Neg | ir.Cmp, bound: set[str]) -> bool:
    """Whether a negation (every named variable bound) or a comparison (see
    :func:`comparison`) can be placed, given ``bound``."""
    if isinstance(lit, ir.Cmp):
        return comparison(lit, lambda t: _bound_term(t, bound)) is not False
    return all(t.name in bound for t in lit.atom.args
               if isinstance(t, ir.Var) and not is_anon(t))


class _Body:
    """What the delta variants of one body share under the default :class:`Policy` with
    nothing pre-bound: its atoms, their scores with nothing bound and the heap of them
    (:class:`Start`), the comparisons and negations waiting and those ready at once."""

    def __init__(self, body: tuple[ir.Lit, ...]) -> None:
        self.policy = policy = Policy()
        self.atoms = [(i, lit) for i, lit in enumerate(body) if isinstance(lit, ir.Atom)]
        self.k = {i: k for k, (i, _) in enumerate(self.atoms)}
        nothing: set[str] = set()
        self.start = Start(self.atoms, lambda a: policy.score(a[0], a[1], nothing),
                           lambda a: policy.depends(a[0], a[1]))
        self.waiting = Waiting((i, lit) for i, lit in enumerate(body)
                               if not isinstance(lit, ir.Atom))
        self.ready = [i for i, lit in self.waiting.items.items()
                      if isinstance(lit, ir.Neg | ir.Cmp) and _ready(lit, nothing)]
        names = [frozenset(_named(_terms(lit))) for lit in body]
        uses = Counter(v for vs in names for v in vs)
        #: per body position, the variables of its literal another literal reads too: what
        #: a delta read of it binds that matters to the rest of the plan (:class:`Variants`)
        self.shared = [frozenset(v for v in vs if uses[v] > 1) for vs in names]


def _terms(lit: ir.Lit) -> tuple[ir.Term, ...]:
    return (lit.args if isinstance(lit, ir.Atom) else lit.atom.args if isinstance(lit, ir.Neg)
            else (lit.left, lit.right))


_END = object()


class Steps(Sequence[Step]):
    """A plan's steps, planned as they are first read: a delta variant run by the
    interpreter (engine/plan/codegen.py ``solve``) asks for step k+1 only once a row has
    passed step k, so a variant whose first steps find nothing is never planned further.
    The steps are those :func:`order_body` makes (the same loop, stopped early)."""

    def __init__(self, steps: list[Step], more: Iterator[None], length: int,
                 scans: int) -> None:
        self._steps, self._len = steps, length
        self._more: Iterator[None] | None = more
        self.scans = scans  # how many of the steps are scans (engine/plan/codegen.py)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._len

    @property
    def planned(self) -> int:
        """How many steps are planned so far."""
        return len(self._steps)

    def _fill(self, n: int) -> None:
        with self._lock:
            while len(self._steps) < n and self._more is not None:
                if next(self._more, _END) is _END:
                    self._more = None
                    assert len(self._steps) == self._len, "a plan has one step per literal"

    def __getitem__(self, i: Any) -> Any:
        if type(i) is int and 0 <= i < len(self._steps):
            return self._steps[i]
        if isinstance(i, slice) or i < 0:
            self._fill(self._len)
            return tuple(self._steps)[i]
        if i >= self._len:
            raise IndexError(i)
        self._fill(i + 1)
        return self._steps[i]

    def __iter__(self) -> Iterator[Step]:
        for i in range(self._len):
            yield self[i]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"Steps({len(self._steps)} of {self._len} planned)"


class Variants:
    """The delta variants of one rule under the in-memory :class:`Policy`, planned as they
    are read: what they share is computed once, on the first (:class:`_Body`: the atoms'
    scores with nothing bound, their heap, the readers of each variable), so a variant
    costs a copy of the heap plus the steps it plans, each touching only the atoms that
    read a variable just bound; with :class:`Steps`, only as far as evaluation reads it.
    Each plan is :func:`plan_variant`'s (tests/test_plan_variants.py compares them)."""

    def __init__(self, rule: ir.Rule) -> None:
        self.rule = rule
        self._body: _Body | None = None
        #: shared variables a delta read binds -> variants planned so far, and the template
        self._asked: dict[frozenset[str], int] = {}
        self._templates: dict[frozenset[str], tuple[list[Step], dict[int, int]]] = {}
        self._lock = threading.Lock()

    def plan(self, position: int, lazy: bool = True) -> RulePlan:
        """The rule with body literal ``position`` read from a delta; ``lazy``: its steps a
        :class:`Steps`, planned as they are read.

        Variants binding the same variables that other literals read (a star ``p(X) :-
        e(X, Y1), e(X, Y2), ...``: each binds ``X``; ``Yi`` matters to no other literal)
        share a template from the second one on: the body planned with those variables
        bound. A variant is its delta read, then the template without its own literal's step
        (copied): the same steps, as that read binds nothing another literal reads."""
        body = self.rule.body
        if self._body is None:
            self._body = _Body(body)
        shared = self._body
        steps: list[Step] = []
        key = shared.shared[position]
        with self._lock:
            n = self._asked[key] = self._asked.get(key, 0) + 1
        more = (self._copied(steps, position, key) if n > 1
                else _ordering(steps, body, first=position, shared=shared))
        neg = 1 if isinstance(body[position], ir.Neg) else 0
        seq = Steps(steps, more, len(body) + neg, len(shared.atoms) + neg)
        return RulePlan(self.rule, self.rule.head, seq if lazy else tuple(seq), position)

    def _copied(self, steps: list[Step], position: int, key: frozenset[str]
                ) -> Iterator[None]:
        """The variant of ``position`` from the template of ``key`` (made on first use)."""
        assert self._body is not None
        with self._lock:
            got = self._templates.get(key)
            if got is None:
                template: list[Step] = []
                for _ in _ordering(template, self.rule.body, pre_bound=set(key),
                                   shared=self._body):
                    pass
                got = self._templates[key] = (
                    template, {s.literal: j for j, s in enumerate(template)})
        template, at = got
        lit = self.rule.body[position]
        atom = lit.atom if isinstance(lit, ir.Neg) else lit
        assert isinstance(atom, ir.Atom)
        steps.append(_scan(atom, position, "delta", set()))
        if isinstance(lit, ir.Neg):  # its check stays in the body
            steps.extend(template)
        else:
            j = at[position]
            steps.extend(template[:j])
            steps.extend(template[j + 1:])
        yield


def plan_rule(rule: ir.Rule, recursive_rels: frozenset[str] = frozenset(),
              policy: Callable[[], Policy] = Policy) -> list[RulePlan]:
    """One plan for a rule outside recursion; one delta variant per recursive body atom
    (``policy``: makes the join-order policy of each, :class:`Policy` by default, whose
    variants are planned as they are read: :class:`Variants`)."""
    rec = [i for i, lit in enumerate(rule.body)
           if isinstance(lit, ir.Atom) and lit.rel in recursive_rels]
    if not rec:
        return [RulePlan(rule, rule.head, tuple(order_body(rule.body, policy=policy())), None)]
    if policy is Policy:
        variants = Variants(rule)
        return [variants.plan(i) for i in rec]
    return [RulePlan(rule, rule.head, tuple(order_body(rule.body, first=i, policy=policy())), i)
            for i in rec]


def plan_variant(rule: ir.Rule, position: int) -> RulePlan:
    """The rule with body literal ``position`` (an atom or a negated atom) read from a delta
    (planned from nothing; :class:`Variants` plans several of one rule)."""
    return RulePlan(rule, rule.head, tuple(order_body(rule.body, first=position)), position)


def plan_bound(
    rule: ir.Rule, pre_bound: set[str], virtual: frozenset[str] = frozenset(),
    atom_order: Sequence[int] | None = None,
) -> RulePlan:
    """A plan for the body with some variables already bound (explanations, queries, demand)."""
    steps = order_body(rule.body, pre_bound, virtual=virtual, atom_order=atom_order)
    return RulePlan(rule, rule.head, tuple(steps), None, tuple(sorted(pre_bound)))
