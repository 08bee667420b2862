"""The search behind suggested changes (engine/answer/suggest.py): the goal's body solved
*abductively* over one read's view, giving candidate sets of base facts to insert or retract.

A positive literal either matches rows that exist (binding its variables) or is assumed: an
assumed literal of a base relation is a fact to insert, one of a derived relation is expanded
through each of its rules (depth bounded). A negated literal whose atom holds is repaired by
retracting one base fact of the atom's why-proof, for each row that blocks it (and, when a
copy says the row still holds another way, one fact of its next proof: :meth:`Search.killed`).
Variables no row binds get a fresh constant named after their column. Literals are placed
most-bound first, those with matching rows before those without (relations answered on demand
are not probed ahead), and among them the hierarchy's closure asked upward from a known object
first: an ancestor is bound to the places above the goal's object (where an ownership or a
grant would apply) before another literal binds it elsewhere (whose suggestion would then
have to move the hierarchy; those moves are still searched, after). Candidates are at most
:attr:`Search.size` facts; a lower bound (the facts so far and the missing ground base facts
the agenda still needs) and the suggestions already kept (their supersets are not the
smallest) prune the search. Nothing here runs a
candidate: suggest.py checks them.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..core import ir
from ..core.hierarchy_roles import hierarchy_roles
from ..core.terms import compare, is_anon, lit_terms, map_terms
from ..eval.demand import DemandContext
from .explain import Proof, Prover
from .explain.atoms import canon, open_terms


@dataclass(frozen=True)
class Bounds:
    """How far the search for suggestions goes."""

    #: facts per suggestion
    size: int = 3
    #: rule expansions below the goal
    depth: int = 8
    #: existing rows tried per literal (to bind its variables)
    rows: int = 4
    #: candidates run on the copy
    candidates: int = 120
    #: search steps (literals placed)
    steps: int = 100000
    #: wall-clock seconds for the whole search
    seconds: float = 5.0


@dataclass(frozen=True)
class Edit:
    """One base fact to insert (``op`` "insert") or retract ("retract")."""

    op: str
    rel: str
    row: ir.Row

    @property
    def fact(self) -> str:
        return ir.show_atom(self.rel, self.row)

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.op, "rel": self.rel, "row": list(self.row), "fact": self.fact}


@dataclass(frozen=True)
class Repair:
    """A failed premise a suggestion repairs: a missing fact (``kind`` "missing"), a
    derived fact made to hold ("fails"), or a negated literal unblocked ("blocked": ``row`` is
    the fact that blocked it)."""

    kind: str
    rel: str
    row: ir.Row

    @property
    def fact(self) -> str:
        text = ir.show_atom(self.rel, self.row)
        return f"not {text}" if self.kind == "blocked" else text

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "rel": self.rel, "row": list(self.row), "fact": self.fact}


class Cut(Exception):
    """A bound was reached (its name in ``args[0]``)."""


@dataclass
class State:
    """One partial candidate: variable values, facts to insert (as atoms over the variables),
    facts to retract, premises repaired, and which literal bound each variable."""

    env: dict[str, ir.Value]
    inserts: tuple[tuple[str, tuple[ir.Term, ...]], ...] = ()
    retracts: frozenset[tuple[str, ir.Row]] = frozenset()
    repairs: tuple[tuple[str, str, tuple[ir.Term, ...]], ...] = ()
    bound_by: dict[str, tuple[str, tuple[ir.Term, ...]]] = field(default_factory=dict)
    branch: str | None = None
    grounded: set[tuple[str, tuple[ir.Term, ...]]] | None = None

    @property
    def size(self) -> int:
        """Facts so far: insert atoms that agree under the values known so far count once."""
        return len(self.pending()) + len(self.retracts)

    def pending(self) -> set[tuple[str, tuple[ir.Term, ...]]]:
        """The insert atoms with the values known so far (kept: a state never changes)."""
        if self.grounded is None:
            self.grounded = {(rel, open_terms(args, self.env)) for rel, args in self.inserts}
        return self.grounded

    def but(self, **kw: Any) -> State:
        """A copy with ``kw`` changed (its grounded inserts made again when asked)."""
        return replace(self, grounded=None, **kw)


@dataclass(frozen=True)
class Item:
    lit: ir.Lit
    depth: int


class Search:
    """Candidates for one goal over one read's view, at most ``size`` facts each."""

    def __init__(self, program: ir.Program, ctx: DemandContext, prover: Prover,
                 bounds: Bounds, deadline: float) -> None:
        self.program = program
        self.derived = program.derived
        self.virtual = program.virtual
        #: the hierarchy's closure relations (``closure(anc, obj)``, declared or recognised:
        #: engine/core/hierarchy_roles.py): asked with the object known first, they bind an
        #: ancestor to the places above the goal's object where a grant or an ownership
        #: would apply (before a literal binds it to some other object, whose suggestion
        #: then has to move the hierarchy)
        self.closures = hierarchy_closures(program)
        self.ctx = ctx
        self.prover = prover
        self.bounds = bounds
        self.deadline = deadline
        self.steps = 0
        self.renames = 0
        self.size = 1
        self.memo: dict[tuple[str, tuple[Any, ...]], list[ir.Row]] = {}
        #: the suggestions kept so far (their supersets are not searched)
        self.kept: list[frozenset[Edit]] = []
        #: (rel, row, retractions) -> None when the row no longer holds without them, else the
        #: base facts of a proof it still has (asked of a copy; None: not asked)
        self.still: Callable[[str, ir.Row, frozenset[tuple[str, ir.Row]]],
                             list[tuple[str, ir.Row]] | None] | None = None

    def tick(self) -> None:
        self.steps += 1
        if self.steps > self.bounds.steps:
            raise Cut("steps")
        if self.steps % 32 == 0 and time.monotonic() > self.deadline:
            raise Cut("time")

    # -- terms --------------------------------------------------------------------------------

    @staticmethod
    def bound(t: ir.Term, env: Mapping[str, ir.Value]) -> bool:
        return isinstance(t, ir.Const) or t.name in env  # anonymous ones are never bound

    @staticmethod
    def value(t: ir.Term, env: Mapping[str, ir.Value]) -> ir.Value:
        return t.value if isinstance(t, ir.Const) else env[t.name]

    def rows(self, rel: str, args: tuple[ir.Term, ...],
             env: Mapping[str, ir.Value]) -> list[ir.Row]:
        """The existing rows of ``rel`` matching ``args`` under ``env`` (repeated variables
        checked), sorted (kept for the search: the view does not change under it)."""
        k = (rel, canon(rel, open_terms(args, env)))
        got = self.memo.get(k)
        if got is None:
            got = self.memo[k] = self._rows(rel, args, env)
        return got

    def _rows(self, rel: str, args: tuple[ir.Term, ...],
              env: Mapping[str, ir.Value]) -> list[ir.Row]:
        cols = tuple(c for c, t in enumerate(args) if self.bound(t, env))
        key = tuple(self.value(args[c], env) for c in cols)
        if len(cols) == len(args):
            return [key] if key in self.ctx.F[rel] else []
        got = self.ctx.lookup(rel, cols, key)
        out = []
        for row in sorted(got, key=ir.row_key):
            seen: dict[str, ir.Value] = {}
            if all(is_anon(t) or not isinstance(t, ir.Var) or t.name in env
                   or seen.setdefault(t.name, row[c]) == row[c] for c, t in enumerate(args)):
                out.append(row)
        return out

    # -- solving ------------------------------------------------------------------------------

    def solve(self, agenda: tuple[Item, ...], st: State) -> Iterator[State]:
        """Every way (within the bounds) to make all of ``agenda`` hold from ``st``."""
        self.tick()
        if st.size > self.size:
            return
        if not agenda:
            yield st
            return
        if self.owed(agenda, st) > self.size or self.covered(st):
            return
        i = self.pick(agenda, st.env)
        if i is None:  # only negations and comparisons over unbound variables are left
            yield from self.solve(agenda, self.freshen(agenda, st))
            return
        item, rest = agenda[i], agenda[:i] + agenda[i + 1:]
        lit = item.lit
        env = st.env
        if isinstance(lit, ir.Cmp):
            if self.bound(lit.left, env) and self.bound(lit.right, env):
                if compare(lit.op, self.value(lit.left, env), self.value(lit.right, env)):
                    yield from self.solve(rest, st)
                return
            var, other = (lit.right, lit.left) if self.bound(lit.left, env) else (
                lit.left, lit.right)
            assert isinstance(var, ir.Var)
            yield from self.solve(rest, st.but(env={**env, var.name: self.value(other, env)}))
            return
        if isinstance(lit, ir.Neg):
            yield from self.unblock(lit.atom, rest, st)
            return
        assert isinstance(lit, ir.Atom)
        yield from self.atom(lit, item.depth, rest, st)

    def covered(self, st: State) -> bool:
        """Whether the facts known so far hold a suggestion already kept (anything more
        would not be the smallest)."""
        if not self.kept or st.size < 2:
            return False
        have = {Edit("insert", rel, tuple(t.value for t in terms if isinstance(t, ir.Const)))
                for rel, terms in st.pending() if all(isinstance(t, ir.Const) for t in terms)}
        have.update(Edit("retract", rel, row) for rel, row in st.retracts)
        return any(k <= have for k in self.kept)

    def owed(self, agenda: tuple[Item, ...], st: State) -> int:
        """A lower bound on the candidate's size: its facts so far, one more for each
        missing base fact the agenda needs with all its values known (none pending of that
        relation could become it), and one for any derived one (several may share a fix)."""
        env = st.env
        pending = {rel for rel, _ in st.inserts}
        missing: set[tuple[str, ir.Row]] = set()
        derived = 0
        for item in agenda:
            lit = item.lit
            if not isinstance(lit, ir.Atom) or lit.rel in pending or not all(
                    self.bound(t, env) for t in lit.args):
                continue
            row = tuple(self.value(t, env) for t in lit.args)
            if row in self.ctx.F[lit.rel]:
                continue
            if lit.rel not in self.derived:
                missing.add((lit.rel, row))
            elif not st.inserts and not st.retracts:
                derived = 1
        return st.size + len(missing) + (derived if not missing else 0)

    def pick(self, agenda: tuple[Item, ...], env: Mapping[str, ir.Value]) -> int | None:
        """The next literal to place: a comparison that can be decided or binds, a negation
        with its variables bound, then the atom with the fewest unbound variables."""
        best: tuple[tuple[int, int], int] | None = None
        for i, item in enumerate(agenda):
            lit = item.lit
            if isinstance(lit, ir.Cmp):
                lb, rb = self.bound(lit.left, env), self.bound(lit.right, env)
                rank = (0, 0) if (lb and rb) or (lit.op == "=" and (lb or rb)) else None
            elif isinstance(lit, ir.Neg):
                ok = all(self.bound(t, env) or is_anon(t) for t in lit.atom.args)
                rank = (1, 0) if ok else None
            else:
                assert isinstance(lit, ir.Atom)
                free = sum(1 for t in lit.args if not self.bound(t, env))
                known = any(self.bound(t, env) for t in lit.args) or not lit.args
                # one with matching rows first: it binds variables an assumed fact needs (a
                # relation answered on demand is not probed ahead: a partial lookup may
                # evaluate a lot of rules, but for the hierarchy's closure asked upward from
                # a known object: its rows are the object's ancestors); of those, that
                # closure first, before a kept relation's rows (whether the model keeps
                # ``owns(U, O)`` or answers it on demand, the object's ancestors come first)
                up = self.upward(lit, env)
                probe = known and (lit.rel not in self.virtual or up)
                rank = ((2 if probe and self.rows(lit.rel, lit.args, env) else 3)
                        if known else 4, free - (1 if up else 0))
            if rank is not None and (best is None or rank < best[0]):
                best = (rank, i)
        return None if best is None else best[1]

    def upward(self, lit: ir.Atom, env: Mapping[str, ir.Value]) -> bool:
        """Whether ``lit`` asks the hierarchy's closure for the ancestors of a known object."""
        return lit.rel in self.closures and len(lit.args) == 2 and \
            self.bound(lit.args[1], env) and not self.bound(lit.args[0], env)

    def freshen(self, agenda: tuple[Item, ...], st: State) -> State:
        """Give every unbound variable of ``agenda`` a fresh constant (a variable equated
        with another by ``=`` shares it)."""
        env = dict(st.env)
        for item in agenda:
            lit = item.lit
            if isinstance(lit, ir.Cmp) and lit.op == "=":
                for a, b in ((lit.left, lit.right), (lit.right, lit.left)):
                    if isinstance(a, ir.Var) and a.name not in env:
                        env[a.name] = self.fresh_value(a.name, None, env, st)
                        if isinstance(b, ir.Var) and b.name not in env:
                            env[b.name] = env[a.name]
            for t in lit_terms(lit):
                if isinstance(t, ir.Var) and not is_anon(t) and t.name not in env:
                    env[t.name] = self.fresh_value(t.name, None, env, st)
        return st.but(env=env)

    def fresh_value(self, var: str, column: str | None, env: Mapping[str, ir.Value],
                    st: State, kind: str | None = None) -> ir.Value:
        """A constant no fact has in that place: ``new_<column>`` (numbered when taken)."""
        if kind == "int":
            return 900_000_000 + len(env)
        base = "new_" + (column or var.split("~", 1)[0].lstrip("_").lower() or "value")
        taken = {v for v in env.values() if isinstance(v, str)}
        for k in itertools.count(1):
            name = base if k == 1 else f"{base}{k}"
            if name not in taken and not self.anywhere(name):
                return name
        raise AssertionError("unreachable")

    def anywhere(self, value: str) -> bool:
        """Whether a base relation has ``value`` in its first columns (a cheap test, for the
        names of fresh constants only)."""
        for rel in self.program.relations:
            if rel in self.derived:
                continue
            for c in range(min(2, self.program.relations[rel].arity)):
                if self.ctx.lookup(rel, (c,), (value,)):
                    return True
        return False

    def atom(self, lit: ir.Atom, depth: int, rest: tuple[Item, ...],
             st: State) -> Iterator[State]:
        env = st.env
        known = any(self.bound(t, env) for t in lit.args) or not lit.args
        rows = self.rows(lit.rel, lit.args, env) if known else []
        ground = all(self.bound(t, env) or is_anon(t) for t in lit.args)
        for row in rows[: self.bounds.rows]:  # it holds: bind its variables from a row
            env2 = dict(env)
            by = dict(st.bound_by)
            for t, v in zip(lit.args, row, strict=True):
                if isinstance(t, ir.Var) and not is_anon(t) and t.name not in env2:
                    env2[t.name] = v
                    by[t.name] = (lit.rel, lit.args)
            yield from self.solve(rest, st.but(env=env2, bound_by=by))
        if rows and ground:
            return  # it holds as it is: nothing to assume
        if lit.rel not in self.derived:  # a missing base fact: insert it
            if st.size + (0 if (lit.rel, open_terms(lit.args, env)) in st.pending()
                          else 1) > self.size:
                return
            yield from self.solve(rest, st.but(
                inserts=(*st.inserts, (lit.rel, lit.args)),
                repairs=(*st.repairs, ("missing", lit.rel, lit.args))))
            return
        if (rows and not self.upward(lit, env)) or depth >= self.bounds.depth:
            return  # a derived literal some row satisfies is used as it is, not re-derived
            # (but for the ancestors of an object: an ancestor elsewhere moves the hierarchy)
        for rule in self.program.rules_for(lit.rel):  # a derived fact: through one of its rules
            body = self.expand(rule, lit.args)
            if body is None:
                continue
            items = tuple(Item(b, depth + 1) for b in body)
            yield from self.solve(items + rest, st.but(
                repairs=(*st.repairs, ("fails", lit.rel, lit.args)),
                branch=st.branch if st.branch is not None else rule.name))

    def expand(self, rule: ir.Rule, args: tuple[ir.Term, ...]) -> tuple[ir.Lit, ...] | None:
        """The body of ``rule`` with its variables renamed apart and its head equated with
        ``args``: the head's constants and repeated variables become comparisons."""
        self.renames += 1
        tag = f"~{self.renames}"
        names: dict[str, ir.Term] = {}
        eqs: list[ir.Lit] = []
        for h, a in zip(rule.head.args, args, strict=True):
            if isinstance(h, ir.Const):
                if isinstance(a, ir.Const):
                    if type(a.value) is not type(h.value) or a.value != h.value:
                        return None
                elif not is_anon(a):
                    eqs.append(ir.Cmp("=", a, h))
                continue
            if is_anon(h):
                continue
            if h.name not in names and isinstance(a, ir.Var) and not is_anon(a):
                names[h.name] = a
            elif h.name not in names:
                names[h.name] = ir.Var(h.name + tag)
                if isinstance(a, ir.Const):
                    eqs.append(ir.Cmp("=", names[h.name], a))
            elif not (isinstance(a, ir.Var) and is_anon(a)):
                eqs.append(ir.Cmp("=", names[h.name], a))

        def term(t: ir.Term) -> ir.Term:
            if isinstance(t, ir.Const):
                return t
            got = names.get(t.name)
            if got is None:
                got = names[t.name] = ir.Var(("_?" if is_anon(t) else "") + t.name + tag)
            return got

        return (*eqs, *(map_terms(b, term) for b in rule.body))

    def unblock(self, atom: ir.Atom, rest: tuple[Item, ...], st: State) -> Iterator[State]:
        """``not atom``: holds when no row matches; else retract, for every row that blocks
        it, one base fact of that row's why-proof."""
        rows = self.rows(atom.rel, atom.args, st.env)
        if not rows:
            yield from self.solve(rest, st)
            return
        if len(rows) > self.size:
            return
        choices = [self.supports(atom.rel, row) for row in rows]
        blocked = tuple(("blocked", atom.rel, tuple(ir.Const(v) for v in row)) for row in rows)
        for pick in itertools.islice(itertools.product(*choices), 64):
            for gone in self.killed(atom.rel, rows, st.retracts | frozenset(pick), st):
                yield from self.solve(rest, st.but(retracts=gone,
                                                   repairs=st.repairs + blocked))

    def killed(self, rel: str, rows: list[ir.Row], gone: frozenset[tuple[str, ir.Row]],
               st: State) -> Iterator[frozenset[tuple[str, ir.Row]]]:
        """Retractions, ``gone`` and more, after which no row of ``rows`` holds: a row
        derived more than one way still holds without one proof's fact, so (given
        :attr:`still`, which asks a copy) one fact of its next proof is retracted too."""
        if len(gone) + len(st.pending()) > self.size:
            return
        if self.still is not None:
            for row in rows:
                more = self.still(rel, row, gone)
                if more is not None:
                    for fact in [f for f in more if f not in gone][:3]:
                        yield from self.killed(rel, rows, gone | {fact}, st)
                    return
        yield gone

    def supports(self, rel: str, row: ir.Row) -> list[tuple[str, ir.Row]]:
        """The base facts of ``rel(row)``'s why-proof, nearest first (one of them retracted
        may make it false)."""
        return leaves(self.prover.prove(rel, row))

    # -- a finished state as a candidate ------------------------------------------------------

    def candidate(self, st: State) -> Candidate | None:
        """The facts of a finished state: its insert atoms grounded (a variable nothing bound
        takes a fresh constant named after its column), minus facts that exist already."""
        env = dict(st.env)
        fresh: dict[str, str] = {}
        grounded: list[tuple[str, ir.Row]] = []
        for rel, args in dict.fromkeys(st.inserts):
            relation = self.program.relations[rel]
            row: list[ir.Value] = []
            for c, t in enumerate(args):
                if isinstance(t, ir.Var) and (is_anon(t) or t.name not in env):
                    col = relation.columns[c] if c < len(relation.columns) else "value"
                    kind = relation.types[c] if c < len(relation.types) else None
                    v = self.fresh_value(t.name, col, env, st, kind)
                    if not is_anon(t):
                        env[t.name] = v
                    else:
                        env[f"{t.name}@{rel}/{c}"] = v  # taken: the next one differs
                    fresh[str(v)] = col
                    row.append(v)
                else:
                    row.append(self.value(t, env))
            grounded.append((rel, tuple(row)))
        inserts = {f: None for f in grounded if f[1] not in self.ctx.F[f[0]]}
        if any(f in inserts for f in st.retracts):
            return None
        edits = tuple(Edit("insert", r, row) for r, row in inserts) + tuple(
            Edit("retract", r, row) for r, row in sorted(st.retracts, key=fact_key))
        if not edits:
            return None
        used = {v for _, row in inserts for v in row}
        found: dict[str, str] = {}
        for var, (rel, args) in st.bound_by.items():
            if var not in env:
                continue
            v = env[var]
            if v in used and str(v) not in found and all(
                    self.bound(t, env) or is_anon(t) for t in args):
                found[str(v)] = ir.show_atom(rel, tuple(
                    self.value(t, env) if not is_anon(t) else "_" for t in args))
        repairs: list[Repair] = []
        for kind, rel, args in st.repairs:
            if all(self.bound(t, env) or is_anon(t) for t in args):
                shown = tuple(self.value(t, env) if not is_anon(t) else "_" for t in args)
                if Repair(kind, rel, shown) not in repairs:
                    repairs.append(Repair(kind, rel, shown))
        return Candidate(edits, st.branch, tuple(repairs), tuple(sorted(found.items())),
                          tuple(sorted((v, c) for v, c in fresh.items() if v in map(
                              str, (x for _, row in inserts for x in row)))))


def hierarchy_closures(program: ir.Program) -> frozenset[str]:
    """The closure relations of the program's hierarchies (none when it has none)."""
    roles = hierarchy_roles(program)
    return roles.closures.union(*(o.closures for o in roles.others))


def hierarchy_moves(program: ir.Program) -> frozenset[str]:
    """The relations whose facts move objects in a hierarchy (its edges)."""
    roles = hierarchy_roles(program)
    return frozenset(e for e in (roles.edge, *(o.edge for o in roles.others)) if e)


def leaves(proof: Proof) -> list[tuple[str, ir.Row]]:
    """The base facts a why-proof rests on, nearest the root first."""
    out: list[tuple[str, ir.Row]] = []
    level = [proof]
    while level:
        nxt = []
        for p in level:
            if p.kind == "fact" and p.rel is not None and p.row is not None:
                if (p.rel, p.row) not in out:
                    out.append((p.rel, p.row))
            else:
                nxt.extend(p.children)
        level = nxt
    return out


def fact_key(f: tuple[str, ir.Row]) -> tuple[Any, ...]:
    return (f[0], ir.row_key(f[1]))


@dataclass(frozen=True)
class Candidate:
    edits: tuple[Edit, ...]
    branch: str | None
    repairs: tuple[Repair, ...]
    found: tuple[tuple[str, str], ...]
    fresh: tuple[tuple[str, str], ...]
