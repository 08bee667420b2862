"""Data filters: the decision partially evaluated with the resource unknown.

``Reasoner.filter(subject, operation)`` asks ``allowed(subject, operation, R)`` with ``R`` a
symbol standing for any resource, and evaluates every rule it reaches: what does not depend on
``R`` is evaluated on the facts (the subject's roles, their grants, the user's metalake), and
what does becomes a condition on ``R``. The answer is a residual: a formula over the resource
built from

* ``("is", v)``: the resource is ``v``; ``("in", values)``: one of them;
* ``("type", t)``: ``entity(R, t)``;
* ``("under", a)``: ``ancestor_or_self(a, R)`` (the prelude's hierarchy);
* ``("parent", p)``: ``contains(p, R)``;
* ``("and", parts)``, ``("or", parts)``, ``("not", part)``, ``("true",)``, ``("false",)``.

For the hierarchy models this reads "under one of these objects and not under one of those,
of this type, in one of these schemas". What cannot be expressed this way — a comparison of
the resource by order, a recursive relation over it other than the hierarchy — is refused with
``filter-unsupported`` naming the rule, never turned into a condition that admits too much.
A residual is exact for the facts it was made from: a resource it admits is one ``check``
allows (tests/test_residual.py compares the two for every resource of the shipped models).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from grantlog.grammar.diagnostics import GrantlogError, Span, error

from . import ir

Cond = tuple[Any, ...]
TRUE: Cond = ("true",)
FALSE: Cond = ("false",)


class _Symbol:
    """The unknown resource."""

    def __repr__(self) -> str:
        return "?R"


SYM: Any = _Symbol()
_UNBOUND: Any = None
#: a value known when a filter is computed (the subject, the operation), in :meth:`Partial.warm`
KNOWN: Any = object()

#: the prelude's hierarchy (rules/prelude.gl), whose meaning over the resource is built in:
#: a program that defines these relations otherwise has them evaluated like any other
PRELUDE = {
    "ancestor": {"ancestor(P, C) :- contains(P, C).",
                 "ancestor(A, C) :- ancestor(A, P), contains(P, C)."},
    "ancestor_or_self": {"ancestor_or_self(X, X) :- entity(X, _?0).",
                         "ancestor_or_self(A, X) :- ancestor(A, X)."},
}


def rules_by_head(program: ir.Program) -> dict[str, list[ir.Rule]]:
    """``program``'s rules by the relation they derive (made once per program)."""
    got = program.compiled.get("rules_by_head")
    if got is None:
        by: dict[str, list[ir.Rule]] = {}
        for r in program.rules:
            by.setdefault(r.head.rel, []).append(r)
        got = program.compiled["rules_by_head"] = by
    assert isinstance(got, dict)
    return got


def prelude_hierarchy(program: ir.Program) -> bool:
    """Whether ``program``'s hierarchy is the prelude's: ``contains`` and ``entity`` stored,
    ``ancestor`` their transitive closure, ``ancestor_or_self`` it and every entity (found
    once per program)."""
    got = program.compiled.get("prelude_hierarchy")
    if got is None:
        got = program.compiled["prelude_hierarchy"] = not (
            program.derived & {"contains", "entity"}) and all(
            {str(r) for r in program.rules_for(rel)} == want for rel, want in PRELUDE.items())
    return bool(got)


def conj(parts: Sequence[Cond]) -> Cond:
    out: list[Cond] = []
    for p in parts:
        if p == FALSE:
            return FALSE
        if p == TRUE:
            continue
        out.extend(p[1] if p[0] == "and" else (p,))
    uniq = list(dict.fromkeys(out))
    if not uniq:
        return TRUE
    return uniq[0] if len(uniq) == 1 else ("and", tuple(uniq))


def disj(parts: Sequence[Cond]) -> Cond:
    out: list[Cond] = []
    for p in parts:
        if p == TRUE:
            return TRUE
        if p == FALSE:
            continue
        out.extend(p[1] if p[0] == "or" else (p,))
    uniq = list(dict.fromkeys(out))
    if not uniq:
        return FALSE
    if len(uniq) == 1:
        return uniq[0]
    # what every alternative requires is required once: (a ∧ x) ∨ (a ∧ y) = a ∧ (x ∨ y),
    # and an alternative that requires no more than another makes it redundant (a ∨ (a ∧ x)
    # = a), so a user's grants become one set of objects to be under
    common = set(uniq[0][1]) if uniq[0][0] == "and" else {uniq[0]}
    for p in uniq[1:]:
        common &= set(p[1]) if p[0] == "and" else {p}
        if not common:
            break
    if common:
        rest = [conj([q for q in p[1] if q not in common]) if p[0] == "and" else TRUE
                for p in uniq]
        shared = [q for q in (uniq[0][1] if uniq[0][0] == "and" else (uniq[0],))
                  if q in common]
        return conj([*shared, disj(rest)])
    singles = {p for p in uniq if p[0] != "and"}
    kept = [p for p in uniq if p[0] != "and" or singles.isdisjoint(p[1])]
    return kept[0] if len(kept) == 1 else ("or", tuple(kept))


def neg(c: Cond) -> Cond:
    if c == TRUE:
        return FALSE
    if c == FALSE:
        return TRUE
    if c[0] == "not":
        return c[1]  # type: ignore[no-any-return]
    return ("not", c)


def unsupported(message: str, rule: ir.Rule | None) -> GrantlogError:
    span = rule.span if rule is not None else Span("<filter>", 0, 0, 0, 0)
    where = f" (rule `{rule.name}`)" if rule is not None else ""
    return GrantlogError([error("filter-unsupported", message + where, span,
                                "a filter can say what a resource's type, its place in the "
                                "hierarchy and its own name must be; list() answers the rest")])


class Partial:
    """One partial evaluation over a read's view ``ctx`` (engine/demand.py)."""

    def __init__(self, program: ir.Program, ctx: Any,
                 base: dict[str, dict[ir.Row, None]]) -> None:
        self.program = program
        self.ctx = ctx
        #: base facts given for derived relations (the reasoner's)
        self.base = base
        self.rules = rules_by_head(program)
        self.derived = program.derived
        self.memo: dict[tuple[str, tuple[Any, ...]], list[tuple[tuple[Any, ...], Cond]]] = {}
        self.hierarchy = prelude_hierarchy(program)
        self.active: set[tuple[str, tuple[Any, ...]]] = set()
        self.rule: ir.Rule | None = None
        self.fanouts: dict[tuple[Any, ...], float] = {}
        self.warmed: set[tuple[str, tuple[Any, ...]]] = set()
        self.lookups: set[tuple[str, tuple[int, ...]]] = set()

    # -- atoms ---------------------------------------------------------------------------------

    def lookup(self, rel: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """Concrete rows of ``rel`` matching the bound ``args`` (None: unbound)."""
        cols = tuple(i for i, a in enumerate(args) if a is not _UNBOUND)
        key = tuple(args[i] for i in cols)
        if not cols:
            return list(self.ctx.F[rel])
        if len(cols) == len(args) and rel not in self.ctx.virtual:  # a membership test
            return [key] if key in self.ctx.full.get(rel, ()) else []
        got = self.ctx.lookup(rel, cols, key)
        return list(got)

    def atom(self, rel: str, args: tuple[Any, ...]) -> list[tuple[tuple[Any, ...], Cond]]:
        """The rows of ``rel`` matching ``args`` (values, :data:`SYM`, or None for unbound),
        each with the condition on the resource under which it holds."""
        if not any(a is SYM for a in args):
            return [(row, TRUE) for row in self.lookup(rel, args)]
        k = (rel, args)
        got = self.memo.get(k)
        if got is not None:
            return got
        if k in self.active:
            raise unsupported(f"`{rel}` is recursive over the resource", self.rule)
        self.active.add(k)
        try:
            got = self._atom(rel, args)
        finally:
            self.active.discard(k)
        self.memo[k] = got
        return got

    def _atom(self, rel: str, args: tuple[Any, ...]) -> list[tuple[tuple[Any, ...], Cond]]:
        if rel in ("ancestor_or_self", "ancestor") and self.hierarchy:
            a, b = args
            if b is SYM and a is not SYM:
                if a is _UNBOUND:
                    raise unsupported(f"`{rel}(A, R)` with `A` unknown", self.rule)
                c = ("under", a) if rel == "ancestor_or_self" else \
                    conj([("under", a), neg(("is", a))])
                return [((a, SYM), c)]
            if a is SYM and b is not SYM and b is not _UNBOUND:  # R is above b
                above = {row[0] for row in self.lookup(rel, (_UNBOUND, b))}
                return [((SYM, b), ("in", frozenset(above)))] if above else []
            raise unsupported(f"`{rel}` with the resource in both places", self.rule)
        if rel in self.derived and rel not in ("contains", "entity"):
            out = self._rules(rel, args)
            given = self.base.get(rel)
            if given:  # base facts of a derived relation
                out += self._stored(rel, args, [r for r in given if all(
                    a is _UNBOUND or a is SYM or a == v for a, v in zip(args, r, strict=True))])
            return out
        if rel == "entity" and args[0] is SYM and args[1] is not SYM and self.hierarchy:
            if args[1] is not _UNBOUND:
                return [((SYM, args[1]), ("type", args[1]))]
            types = {row[1] for row in self.ctx.F["entity"]}
            return [((SYM, t), ("type", t)) for t in sorted(types, key=ir.value_key)]
        if rel == "contains" and args[1] is SYM and args[0] not in (SYM, _UNBOUND) and \
                self.hierarchy:
            return [((args[0], SYM), ("parent", args[0]))]
        return self._stored(rel, args)

    def _stored(self, rel: str, args: tuple[Any, ...],
                rows: list[ir.Row] | None = None) -> list[tuple[tuple[Any, ...], Cond]]:
        """A stored relation with the resource in some columns: the values those columns
        hold in the rows that match the rest, grouped by the unbound columns' values."""
        sym = [i for i, a in enumerate(args) if a is SYM]
        plain = tuple(_UNBOUND if a is SYM else a for a in args)
        groups: dict[tuple[Any, ...], set[Any]] = {}
        for row in self.lookup(rel, plain) if rows is None else rows:
            first = row[sym[0]]
            if any(row[i] != first for i in sym):
                continue  # the resource twice: both columns the same value
            key = tuple(SYM if i in sym else v for i, v in enumerate(row))
            groups.setdefault(key, set()).add(first)
        return [(key, ("is", next(iter(vs))) if len(vs) == 1 else ("in", frozenset(vs)))
                for key, vs in groups.items()]

    def _rules(self, rel: str, args: tuple[Any, ...]) -> list[tuple[tuple[Any, ...], Cond]]:
        out: list[tuple[tuple[Any, ...], Cond]] = []
        for rule in self.rules.get(rel, ()):
            env: dict[str, Any] = {}
            conds: list[Cond] = []
            ok = True
            for t, a in zip(rule.head.args, args, strict=True):
                if isinstance(t, ir.Const):
                    if a is SYM:
                        conds.append(("is", t.value))
                    elif a is not _UNBOUND and a != t.value:
                        ok = False
                        break
                    continue
                have = env.get(t.name, _UNBOUND)
                if have is _UNBOUND:
                    env[t.name] = a
                elif a is not _UNBOUND and have != a:
                    if a is SYM or have is SYM:
                        conds.append(("is", have if a is SYM else a))
                        env[t.name] = have if have is not SYM else a
                    else:
                        ok = False
                        break
            if not ok:
                continue
            outer, self.rule = self.rule, rule
            try:
                for e, c in self.body(list(rule.body), env, conj(conds)):
                    head = tuple(t.value if isinstance(t, ir.Const) else e.get(t.name, _UNBOUND)
                                 for t in rule.head.args)
                    out.append((head, c))
            finally:
                self.rule = outer
        # the same row from several rules or bindings: one disjunction
        merged: dict[tuple[Any, ...], list[Cond]] = {}
        for row, c in out:
            merged.setdefault(row, []).append(c)
        return [(row, disj(cs)) for row, cs in merged.items()]

    # -- planning ahead ------------------------------------------------------------------------

    def warm(self, rel: str, args: tuple[Any, ...]) -> None:
        """The lookups a filter of ``rel`` with ``args`` (values as :data:`KNOWN`,
        :data:`SYM`, None) would make, found without reading any fact (following
        :meth:`body`'s choice of literals) and added to ``lookups`` as (relation, bound
        columns): ``Reasoner.prepare`` plans them and builds the indexes they read, so that
        the first filter (or list) of a process does not pay for them."""
        k = (rel, tuple(a if a is SYM or a is _UNBOUND else KNOWN for a in args))
        if k in self.warmed:
            return
        self.warmed.add(k)
        cols = tuple(i for i, a in enumerate(args) if a is not _UNBOUND and a is not SYM)
        if not any(a is SYM for a in args):
            if rel in self.ctx.virtual or (cols and len(cols) < len(args)):
                self.lookups.add((rel, cols))
            return
        if rel in ("ancestor_or_self", "ancestor", "entity", "contains") and self.hierarchy:
            if rel in ("ancestor_or_self", "ancestor") and args[0] is SYM:
                self.warm(rel, (_UNBOUND, args[1]))
            return
        if rel not in self.derived:
            self.warm(rel, tuple(_UNBOUND if a is SYM else a for a in args))
            return
        for rule in self.rules.get(rel, ()):
            env: dict[str, Any] = {}
            for t, a in zip(rule.head.args, args, strict=True):
                if isinstance(t, ir.Var) and a is not _UNBOUND:
                    env.setdefault(t.name, a)
            lits = list(rule.body)
            while lits:
                lit = lits.pop(self._next(lits, env))
                if isinstance(lit, ir.Cmp):
                    a, b = self._value(lit.left, env), self._value(lit.right, env)
                    for t, other in ((lit.left, b), (lit.right, a)):
                        if isinstance(t, ir.Var) and t.name not in env and other is not None:
                            env[t.name] = other
                    continue
                atom = lit.atom if isinstance(lit, ir.Neg) else lit
                vals = tuple(_UNBOUND if isinstance(t, ir.Var) and t.name.startswith("_?")
                             else self._value(t, env) for t in atom.args)
                self.warm(atom.rel, vals)
                for t in atom.args:
                    if isinstance(t, ir.Var) and not isinstance(lit, ir.Neg):
                        env.setdefault(t.name, KNOWN)

    # -- bodies --------------------------------------------------------------------------------

    def body(self, lits: list[ir.Lit], env: dict[str, Any], cond: Cond,
             ) -> list[tuple[dict[str, Any], Cond]]:
        """Every binding of a body (concrete where it can be), with its condition: the
        bindings advance together, one literal at a time, the literal chosen once for all
        bindings whose variables stand for the resource in the same places."""
        out: list[tuple[dict[str, Any], Cond]] = []
        if cond == FALSE:
            return out
        todo: list[tuple[list[ir.Lit], list[tuple[dict[str, Any], Cond]]]] = [
            (lits, [(env, cond)])]
        while todo:
            rest, batch = todo.pop()
            if not rest:
                out += batch
                continue
            groups: dict[tuple[str, ...], list[tuple[dict[str, Any], Cond]]] = {}
            for b in batch:
                groups.setdefault(tuple(k for k, v in b[0].items() if v is SYM), []).append(b)
            for group in groups.values():
                i = self._next(rest, group[0][0])
                got = self._step(rest[i], group)
                if got:
                    todo.append((rest[:i] + rest[i + 1:], got))
        return out

    def _step(self, lit: ir.Lit, batch: list[tuple[dict[str, Any], Cond]],
              ) -> list[tuple[dict[str, Any], Cond]]:
        """``batch`` advanced over one literal."""
        out: list[tuple[dict[str, Any], Cond]] = []
        if isinstance(lit, ir.Cmp):
            for env, cond in batch:
                self._cmp(lit, env, cond, out)
            return out
        if isinstance(lit, ir.Neg):
            for env, cond in batch:
                args = tuple(self._value(t, env) for t in lit.atom.args)
                found = self.atom(lit.atom.rel, tuple(
                    _UNBOUND if isinstance(t, ir.Var) and t.name.startswith("_?") else a
                    for t, a in zip(lit.atom.args, args, strict=True)))
                c = conj([cond, neg(disj([c for _, c in found]))])
                if c != FALSE:
                    out.append((env, c))
            return out
        names = [t.name if isinstance(t, ir.Var) else None for t in lit.args]
        for env, cond in batch:
            args = tuple(self._value(t, env) for t in lit.args)
            for row, c in self.atom(lit.rel, args):
                e = dict(env)
                for name, v in zip(names, row, strict=True):
                    if name is not None:
                        have = e.get(name, _UNBOUND)
                        if have is _UNBOUND:
                            e[name] = v
                        elif have != v:
                            break
                else:
                    c2 = cond if c == TRUE else conj([cond, c])
                    if c2 != FALSE:
                        out.append((e, c2))
        return out

    def _value(self, t: ir.Term, env: dict[str, Any]) -> Any:
        return t.value if isinstance(t, ir.Const) else env.get(t.name, _UNBOUND)

    def _next(self, lits: list[ir.Lit], env: dict[str, Any]) -> int:
        """The literal to evaluate next: a bound comparison or negation, then an atom
        without the resource (most bound arguments first), then one with it whose other
        arguments are bound, then anything."""
        def bound(t: ir.Term) -> bool:
            return isinstance(t, ir.Const) or env.get(t.name, _UNBOUND) is not _UNBOUND

        def named(t: ir.Term) -> bool:
            return not (isinstance(t, ir.Var) and t.name.startswith("_?"))

        best, score = 0, -1.0
        for i, lit in enumerate(lits):
            if isinstance(lit, ir.Cmp):
                s = 100.0 if bound(lit.left) and bound(lit.right) else -1.0
                if lit.op == "=" and (bound(lit.left) or bound(lit.right)):
                    s = max(s, 90.0)
            elif isinstance(lit, ir.Neg):
                s = 80.0 if all(bound(t) for t in lit.atom.args if named(t)) else -1.0
            else:
                vals = [self._value(t, env) for t in lit.args]
                has_sym = any(v is SYM for v in vals)
                if not has_sym:  # the fewest rows expected first (engine/stats.py)
                    s = 50.0 + 29.0 / (1.0 + self._fanout(lit, vals))
                else:
                    others = [v for v in vals if v is not SYM]
                    s = 20.0 + (10.0 if all(v is not _UNBOUND for v in others) else 0.0)
                    if lit.rel in ("ancestor_or_self", "ancestor") and vals[0] is _UNBOUND:
                        s = 0.0  # needs the ancestor first
            if s > score:
                best, score = i, s
        return best

    def _fanout(self, lit: ir.Atom, vals: list[Any]) -> float:
        """Rows expected from a lookup of ``lit`` with ``vals`` bound (None: unbound)."""
        cols = tuple(i for i, v in enumerate(vals) if v is not _UNBOUND)
        consts = tuple((i, t.value) for i, t in enumerate(lit.args) if isinstance(t, ir.Const))
        k = (lit.rel, cols, consts)
        got = self.fanouts.get(k)
        if got is None:
            stats = self.ctx.plans.stats
            if stats is None:
                got = 1.0 if cols else 100.0
            else:
                got = stats.estimate(lit.rel, cols, len(vals), consts)[0]
            self.fanouts[k] = got
        return got

    def _cmp(self, lit: ir.Cmp, env: dict[str, Any], cond: Cond,
             out: list[tuple[dict[str, Any], Cond]]) -> None:
        a, b = self._value(lit.left, env), self._value(lit.right, env)
        if lit.op == "=" and (a is _UNBOUND) != (b is _UNBOUND):
            var = lit.left if a is _UNBOUND else lit.right
            assert isinstance(var, ir.Var)
            e = dict(env)
            e[var.name] = b if a is _UNBOUND else a
            out.append((e, cond))
            return
        if a is _UNBOUND or b is _UNBOUND:
            raise unsupported(f"`{lit}` compares an unbound variable", self.rule)
        if a is SYM or b is SYM:
            other = b if a is SYM else a
            if other is SYM:
                c = TRUE if lit.op in ("=", "<=", ">=") else FALSE
            elif lit.op == "=":
                c = ("is", other)
            elif lit.op == "!=":
                c = neg(("is", other))
            else:
                raise unsupported(f"`{lit}` orders the resource", self.rule)
            c = conj([cond, c])
            if c != FALSE:
                out.append((env, c))
            return
        if _compare(lit.op, a, b):
            out.append((env, cond))


def _compare(op: str, a: Any, b: Any) -> bool:
    if op == "=":
        return bool(a == b)
    if op == "!=":
        return bool(a != b)
    ka, kb = ir.value_key(a), ir.value_key(b)
    return {"<": ka < kb, "<=": ka <= kb, ">": ka > kb, ">=": ka >= kb}[op]


class Residual:
    """A filter: the condition a resource must meet (``cond``), for ``subject`` and
    ``operation`` at ``revision``; ``holds(x)`` decides it for a known resource."""

    def __init__(self, subject: ir.Value, operation: ir.Value, cond: Cond, revision: int,
                 ancestors: Any, types: Any, parents: Any,
                 chains: dict[Any, tuple[Any, ...]] | None = None) -> None:
        self.subject, self.operation, self.cond, self.revision = (
            subject, operation, cond, revision)
        self._ancestors, self._types, self._parents = ancestors, types, parents
        self._test: Test | None = None
        #: in a tree, each object the filter is "under": the ids from the root down to it
        #: (SQL over a path column then asks for a prefix, which an index answers)
        self.chains = chains or {}

    def to_dict(self) -> dict[str, Any]:
        return {"subject": self.subject, "operation": self.operation,
                "revision": self.revision, "condition": to_json(self.cond)}

    def holds(self, resource: ir.Value) -> bool:
        if self._test is None:
            self._test = compile_cond(self.cond)
        x = resource
        return bool(self._test(x, self._ancestors(x), self._types(x), self._parents(x)))


def to_json(c: Cond) -> Any:
    tag = c[0]
    if tag in ("true", "false"):
        return tag == "true"
    if tag in ("and", "or"):
        return {tag: [to_json(p) for p in c[1]]}
    if tag == "not":
        return {"not": to_json(c[1])}
    if tag == "in":
        return {"in": sorted(c[1], key=ir.value_key)}
    return {tag: c[1]}


def from_json(c: Any) -> Cond:
    """A condition back from :func:`to_json`."""
    if c is True or c is False:
        return ("true",) if c else ("false",)
    ((tag, v),) = c.items()
    if tag in ("and", "or"):
        return (tag, tuple(from_json(p) for p in v))
    if tag == "not":
        return ("not", from_json(v))
    if tag == "in":
        return ("in", frozenset(v))
    return (tag, v)


class Hierarchy:
    """The prelude's hierarchy read from a view's stored indexes (``contains``, ``entity``)."""

    def __init__(self, ctx: Any) -> None:
        from .database import stored_get

        self._down = stored_get(ctx.base_index("contains", (0,)))
        self._up = stored_get(ctx.base_index("contains", (1,)))
        self._types = stored_get(ctx.base_index("entity", (0,)))
        #: every object has at most one parent and one type (the indexes say so as they
        #: stand): subtrees are disjoint and a walk down knows each node's ancestors
        self.tree = self._up[1] and self._types[1]
        self._ctx = ctx

    def kinds(self) -> list[Any]:
        """Every type an object has."""
        return list(self._ctx.base_index("entity", (1,)))

    @staticmethod
    def _rows(got: tuple[Any, bool], key: Any) -> Any:
        get, unique = got
        b = get(key)
        return () if b is None else (b,) if unique else b

    def types(self, x: Any) -> set[Any]:
        return {row[1] for row in self._rows(self._types, x)}

    def parents(self, x: Any) -> list[Any]:
        return [row[0] for row in self._rows(self._up, x)]

    def child_count(self, x: Any) -> int:
        return len(self._rows(self._down, x))

    def children(self, x: Any) -> list[Any]:
        return [row[1] for row in self._rows(self._down, x)]

    def above(self, x: Any) -> set[Any]:
        """``ancestor_or_self(A, x)``: every strict ancestor, and ``x`` if it is an entity."""
        out = {x} if self._rows(self._types, x) else set()
        todo = self.parents(x)
        seen: set[Any] = set()
        while todo:
            p = todo.pop()
            if p in seen:
                continue
            seen.add(p)
            out.add(p)
            todo.extend(self.parents(p))
        return out


Test = Any  # a compiled condition: (x, above(x), types(x), parents(x)) -> bool


def compile_cond(c: Cond) -> Test:
    """``c`` as a function of a resource's name, ancestors-or-self, types and parents; a
    disjunction's ``under``/``is``/``type``/``parent`` parts are one set test each."""
    tag = c[0]
    if tag == "true":
        return lambda x, a, t, p: True
    if tag == "false":
        return lambda x, a, t, p: False
    if tag == "is":
        v = c[1]
        return lambda x, a, t, p: x == v
    if tag == "in":
        vs = c[1]
        return lambda x, a, t, p: x in vs
    if tag == "under":
        v = c[1]
        return lambda x, a, t, p: v in a
    if tag == "type":
        v = c[1]
        return lambda x, a, t, p: v in t
    if tag == "parent":
        v = c[1]
        return lambda x, a, t, p: v in p
    if tag == "not":
        f = compile_cond(c[1])
        return lambda x, a, t, p: not f(x, a, t, p)
    if tag == "and":
        fs = [compile_cond(q) for q in c[1]]
        return lambda x, a, t, p: all(f(x, a, t, p) for f in fs)
    assert tag == "or"
    under = frozenset(q[1] for q in c[1] if q[0] == "under")
    names = frozenset(v for q in c[1] if q[0] in ("is", "in")
                      for v in ((q[1],) if q[0] == "is" else q[1]))
    types = frozenset(q[1] for q in c[1] if q[0] == "type")
    parents = frozenset(q[1] for q in c[1] if q[0] == "parent")
    rest = [compile_cond(q) for q in c[1] if q[0] not in ("under", "is", "in", "type",
                                                           "parent")]

    def any_of(x: Any, a: Any, t: Any, p: Any) -> bool:
        return (not under.isdisjoint(a) or x in names or not types.isdisjoint(t)
                or not parents.isdisjoint(p) or any(f(x, a, t, p) for f in rest))
    return any_of


def seeds(c: Cond, h: Hierarchy) -> list[tuple[str, Any]] | None:
    """Where the resources ``c`` admits can be found: ``("is", v)`` or ``("under", a)``
    entries (a resource the condition admits is one of them or below one), or None when the
    condition does not bound them (a negation, a type alone)."""
    tag = c[0]
    if tag == "false":
        return []
    if tag == "is":
        return [("is", c[1])]
    if tag == "in":
        return [("is", v) for v in sorted(c[1], key=ir.value_key)]
    if tag == "under":
        return [("under", c[1])]
    if tag == "parent":
        return [("is", x) for x in h.children(c[1])]
    if tag == "or":
        out: list[tuple[str, Any]] = []
        for q in c[1]:
            got = seeds(q, h)
            if got is None:
                return None
            out += got
        return out
    if tag == "and":
        options = [s for s in (seeds(q, h) for q in c[1]) if s is not None]
        if len(options) < 2:
            return options[0] if options else None
        if h.tree:  # every option's subtrees hold the resource: their intersection
            out = options[0]
            for o in options[1:]:
                out = _meet(out, o, h)
            return out
        # the narrowest: the one whose walk visits the fewest resources (a named resource
        # counts one)
        cap = 1024  # each option walked up to a bound that grows until one fits in it
        while True:
            sizes = [_walk_size(o, h, cap) for o in options]
            i = min(range(len(options)), key=sizes.__getitem__)
            if sizes[i] <= cap or cap > 1 << 40:
                return options[i]
            cap *= 8
    return None


def _meet(s1: list[tuple[str, Any]], s2: list[tuple[str, Any]], h: Hierarchy,
          ) -> list[tuple[str, Any]]:
    """Seeds of the resources both ``s1`` and ``s2`` hold, in a tree: two subtrees meet in
    the deeper one when one holds the other, and not at all otherwise."""
    def kept(mine: list[tuple[str, Any]], theirs: list[tuple[str, Any]],
             ) -> list[tuple[str, Any]]:
        unders = {v for k, v in theirs if k == "under"}
        named = {v for k, v in theirs if k == "is"}
        return [(k, v) for k, v in mine
                if (k == "is" and v in named) or not unders.isdisjoint(h.above(v) | {v})]
    return list(dict.fromkeys(kept(s1, s2) + kept(s2, s1)))


def _walk_size(seed: list[tuple[str, Any]], h: Hierarchy, cap: int | None) -> int:
    """How many resources a walk from ``seed`` visits (stopping past ``cap``)."""
    n = 0
    seen: set[Any] = set()
    todo = [(v, k == "under") for k, v in seed]
    while todo:
        x, down = todo.pop()
        if x in seen:
            continue
        seen.add(x)
        n += 1
        if cap is not None and n > cap:
            return n
        if down:
            todo.extend((c, True) for c in h.children(x))
    return n


def enumerate_admitted(c: Cond, h: Hierarchy) -> list[Any] | None:
    """Every resource ``c`` admits, found by walking down from its seeds (each resource
    visited once, its ancestors carried down the walk), or None when ``c`` does not bound
    them. In a tree, without duplicates."""
    found = seeds(c, h)
    if found is None:
        return None
    test = compile_cond(c)
    if h.tree:
        return _walk_tree(c, test, found, h)
    out: list[Any] = []
    seen: set[Any] = set()
    # the subtrees first: a node seen in one had its subtree walked, a named one did not
    for kind, v in sorted(found, key=lambda s: s[0] != "under"):
        if v in seen:
            continue
        above = h.above(v)
        if kind == "is":
            seen.add(v)
            if test(v, above, h.types(v), h.parents(v)):
                out.append(v)
            continue
        # walk down; a node with one parent inherits its ancestors from the walk
        stack = [(v, above)]
        while stack:
            x, a = stack.pop()
            if x in seen:
                continue
            seen.add(x)
            types = h.types(x)
            parents = h.parents(x)
            if test(x, a, types, parents):
                out.append(x)
            for child in h.children(x):
                if child in seen:
                    continue
                if len(h.parents(child)) == 1:  # its ancestors: x and x's, and itself
                    ca = a | {x, child} if h.types(child) else a | {x}
                else:
                    ca = h.above(child)
                stack.append((child, ca))
    return out


class _Other:
    """A resource the condition does not name (stands for every such resource)."""


def mentioned(c: Cond) -> set[Any]:
    """The objects ``c`` names (in ``is``, ``in``, ``under`` and ``parent``)."""
    tag = c[0]
    if tag in ("and", "or"):
        return set().union(*(mentioned(p) for p in c[1]))
    if tag == "not":
        return mentioned(c[1])
    if tag == "in":
        return set(c[1])
    if tag in ("is", "under", "parent"):
        return {c[1]}
    return set()


def _walk_tree(c: Cond, test: Test, found: list[tuple[str, Any]], h: Hierarchy) -> list[Any]:
    """:func:`enumerate_admitted` in a tree, set-at-a-time below the objects the condition
    names. Below a node ``x`` with no named object under it, whether a resource is admitted
    depends only on its type (and, for ``x``'s children, on having ``x`` as parent): the
    condition is decided once per type there, and the subtree is collected without deciding
    each resource; a subtree where no type passes is not walked at all. Nodes with a named
    object below them (a handful per named object) are decided one by one."""
    named = mentioned(c)
    busy: set[Any] = set()  # strict ancestors of a named object
    for v in named:
        busy |= h.above(v) - {v}
    types_get = h._types[0]
    down_get, one_child = h._down  # one_child: the index holds each parent's only row
    kinds = h.kinds()
    other = _Other()
    out: list[Any] = []
    # the seeds' subtrees, without those inside another seed's
    unders = {v for k, v in found if k == "under"}
    starts: dict[Any, bool] = {}
    for k, v in found:
        starts[v] = starts.get(v, False) or k == "under"
    top = [(v, down) for v, down in starts.items() if unders.isdisjoint(h.above(v) - {v})]

    def type_of(x: Any) -> frozenset[Any]:
        row = types_get(x)
        return frozenset() if row is None else frozenset((row[1],))

    for v, down in top:
        a = h.above(v)
        if test(v, a, type_of(v), h.parents(v)):
            out.append(v)
        if not down:
            continue
        stack = [(v, a | {v})]  # a node, and its descendants' ancestors among the named
        while stack:
            x, ax = stack.pop()
            bucket = down_get(x)
            if bucket is None:
                continue
            kids = [bucket[1]] if one_child else [row[1] for row in bucket]
            if x in busy:  # a named object below: each child decided with its own name
                px = (x,)
                for y in kids:
                    ty = type_of(y)
                    ay = ax | {y} if ty else ax
                    if test(y, ay, ty, px):
                        out.append(y)
                    stack.append((y, ax | {y}))
                continue
            # nothing named below x: by type, for x's children and for deeper descendants
            near = {t for t in kinds if test(other, ax, frozenset((t,)), (x,))}
            far = {t for t in kinds if test(other, ax, frozenset((t,)), (other,))}
            untyped_near = test(other, ax, frozenset(), (x,))
            untyped_far = test(other, ax, frozenset(), (other,))
            if not (near or far or untyped_near or untyped_far):
                continue  # nothing below x is admitted
            _collect(kids, near, untyped_near, far, untyped_far, types_get, down_get,
                     one_child, out)
    return out


def _collect(kids: list[Any], near: set[Any], untyped_near: bool, far: set[Any],
             untyped_far: bool, types_get: Any, down_get: Any, one_child: bool,
             out: list[Any]) -> None:
    """The admitted descendants of a node (``kids`` its children) with nothing named below
    it: children whose type is in ``near``, deeper ones whose type is in ``far``."""
    level, ok, untyped = kids, near, untyped_near
    while level:
        deeper: list[Any] = []
        for y in level:
            row = types_get(y)
            if (untyped if row is None else row[1] in ok):
                out.append(y)
            bucket = down_get(y)
            if bucket is not None:
                if one_child:
                    deeper.append(bucket[1])
                else:
                    deeper.extend(row[1] for row in bucket)
        level, ok, untyped = deeper, far, untyped_far


def under_chains(c: Cond, h: Hierarchy) -> dict[Any, tuple[Any, ...]]:
    """In a tree: for each object ``c`` is "under", the ids from the root down to it."""
    if not h.tree:
        return {}
    out: dict[Any, tuple[Any, ...]] = {}

    def walk(c: Cond) -> None:
        tag = c[0]
        if tag in ("and", "or"):
            for p in c[1]:
                walk(p)
        elif tag == "not":
            walk(c[1])
        elif tag == "under" and c[1] not in out:
            chain, x = [c[1]], c[1]
            while (up := h.parents(x)) and len(chain) <= 10_000:
                x = up[0]
                chain.append(x)
            out[c[1]] = tuple(reversed(chain))
    walk(c)
    return out


def rollup(c: Cond, h: Hierarchy, kind: Any = None) -> Cond:
    """``c`` with every set of ``under``s that names all the children of an object ``p``
    replaced by one ``under p`` (again, up the tree), where that is exact: ``p`` has no
    type (it is not under itself), or the resource has another type (``kind``, from a
    ``type`` the condition requires around it). A user who may use every schema of a
    catalog gets one term for the catalog, not one per schema. In a tree only."""
    tag = c[0]
    if tag == "and":
        types = [p[1] for p in c[1] if p[0] == "type"]
        inner = types[0] if len(types) == 1 else kind
        parts = [rollup(p, h, inner) for p in c[1]]
        # "under a" beside a part that admits only resources under a says nothing more
        # (every filter of a user of metalake m1 is "under m1")
        kept = list(parts)
        for p in parts:
            region = _region(p)
            if region is not None and any(
                    q is not p and (s := seeds(q, h)) and all(_covers(region, k, v, h)
                                                             for k, v in s)
                    for q in kept):
                kept.remove(p)
        return conj(kept)
    if tag == "not":
        return neg(rollup(c[1], h, kind))
    if tag != "or":
        return c
    parts = [rollup(p, h, kind) for p in c[1]]
    unders = {p[1] for p in parts if p[0] == "under"}
    rolled = set(unders)
    below: dict[Any, set[Any]] = {}  # parent -> its children among the unders
    todo = list(unders)
    while todo:
        u = todo.pop()
        for p in h.parents(u):
            kids = below.setdefault(p, set())
            kids.add(u)
            if p in rolled or len(kids) != h.child_count(p):
                continue
            ptypes = h.types(p)
            if ptypes and (kind is None or kind in ptypes):
                continue  # p itself would be admitted: not the same condition
            rolled -= kids  # every child of p: p's subtree, p aside
            rolled.add(p)
            todo.append(p)
    if rolled == unders:
        return disj(parts)
    return disj([p for p in parts if p[0] != "under"] + [("under", u) for u in sorted(
        rolled, key=ir.value_key)])


def _region(c: Cond) -> tuple[set[Any], set[Any]] | None:
    """``c`` as the objects it admits everything under and the ones it admits by name, when
    it is an ``under``, an ``is`` or a disjunction of them."""
    parts = c[1] if c[0] == "or" else (c,)
    if not all(p[0] in ("under", "is") for p in parts):
        return None
    return {p[1] for p in parts if p[0] == "under"}, {p[1] for p in parts if p[0] == "is"}


def _covers(region: tuple[set[Any], set[Any]], kind: str, v: Any, h: Hierarchy) -> bool:
    """Whether every resource seed ``(kind, v)`` stands for is in ``region``."""
    unders, names = region
    return (kind == "is" and v in names) or (kind == "under" and v in unders) or \
        not unders.isdisjoint(h.above(v))
