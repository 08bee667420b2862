"""Data filters: the decision partially evaluated with the resource unknown.

``Reasoner.filter(subject, operation)`` asks ``allowed(subject, operation, R)`` with ``R`` a
symbol standing for any resource, and evaluates every rule it reaches: what does not depend on
``R`` is evaluated on the facts (the subject's roles, their grants, the user's metalake), and
what does becomes a condition on ``R``. The answer is a residual: a formula over the resource
built from

* ``("is", v)``: the resource is ``v``; ``("in", values)``: one of them;
* ``("type", t)``: ``type(R, t)``;
* ``("under", a)``: ``closure(a, R)``;
* ``("parent", p)``: ``edge(p, R)``;
* ``("cell", column, value)``: for a row filter, the row's ``column`` holds ``value``;
* ``("and", parts)``, ``("or", parts)``, ``("not", part)``, ``("true",)``, ``("false",)``.

Row filters (``Reasoner.row_filter``) ask a relation such as ``row_visible(user, table, R)``
with ``R`` standing for a row of the table: a program that declares the stored relations
``row(table, row)`` and ``cell(row, column, value)`` (rules/gravitino_data.gl) has them read
as the row's own: ``row(T, R)`` holds for the table asked about and ``cell(R, c, v)`` is the
condition that column ``c`` holds ``v`` (rendered as ``c = v`` in SQL).

For the hierarchy models this reads "under one of these objects and not under one of those,
of this type, in one of these schemas". What cannot be expressed this way — a comparison of
the resource by order, a recursive relation over it other than the hierarchy — is refused with
``filter-unsupported`` naming the rule, never turned into a condition that admits too much.
A residual is exact for the facts it was made from: a resource it admits is one ``check``
allows (tests/test_residual.py compares the two for every resource of the shipped models).
"""

from __future__ import annotations

from typing import Any

from grantlog.grammar.diagnostics import GrantlogError, Span, error

from ..core import ir
from ..core.hierarchy_roles import hierarchy_roles
from .conditions import FALSE, TRUE, Cond, conj, disj, neg
from .filtered import Residual, RowFilter
from .hierarchy import Hierarchy, NoLift, lift, unnested


class _Symbol:
    """The unknown resource."""

    def __repr__(self) -> str:
        return "?R"


SYM: Any = _Symbol()
_UNBOUND: Any = None
#: a value known when a filter is computed (the subject, the operation), in :meth:`Partial.warm`
KNOWN: Any = object()

__all__ = ["KNOWN", "SYM", "Partial", "Residual", "RowFilter", "row_relations", "unsupported"]


def row_relations(program: ir.Program) -> bool:
    """Whether ``program`` declares the stored relations a row filter reads as the row's own:
    ``row(table, row)`` and ``cell(row, column, value)``."""
    rels = program.relations
    return all(r in rels and rels[r].arity == n and r not in program.derived
               for r, n in (("row", 2), ("cell", 3)))


def unsupported(message: str, rule: ir.Rule | None) -> GrantlogError:
    span = rule.span if rule is not None else Span("<filter>", 0, 0, 0, 0)
    where = f" (rule `{rule.name}`)" if rule is not None else ""
    return GrantlogError([error("filter-unsupported", message + where, span,
                                "a filter can say what a resource's type, its place in the "
                                "hierarchy and its own name must be; list() answers the rest")])


class Partial:
    """One partial evaluation over a read's view ``ctx`` (engine/eval/demand.py)."""

    def __init__(self, program: ir.Program, ctx: Any,
                 base: dict[str, dict[ir.Row, None]],
                 levels: dict[Any, Any] | None = None,
                 hierarchy: Hierarchy | None = None) -> None:
        self.program = program
        #: per type, whether its objects are never nested (hierarchy.unnested), and what lies
        #: above a level (Hierarchy.upper): the caller's cache, kept while the hierarchy
        #: does not change
        self.levels = {} if levels is None else levels
        #: the view's hierarchy (the caller's, shared with its walks), made when first needed
        self._h = hierarchy
        if hierarchy is not None:
            hierarchy.cache = self.levels
        self.ctx = ctx
        #: base facts given for derived relations (the reasoner's)
        self.base = base
        self.rules_for = program.rules_for
        self.derived = program.derived
        self.memo: dict[tuple[str, tuple[Any, ...]], list[tuple[tuple[Any, ...], Cond]]] = {}
        #: the hierarchy's relations (engine/core/hierarchy_roles.py); their meaning over the
        #: resource is built in when ``hierarchy`` (the rules have the hierarchy's shape):
        #: otherwise they are evaluated like any other relation
        self.roles = hierarchy_roles(program)
        self.hierarchy = self.roles.walkable
        self.closures = self.roles.closures
        #: a row filter: ``row``/``cell`` over the unknown are the row's own (see above)
        self.rows = False
        #: a row filter's table
        self.table: Any = None
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
        if self.rows and rel in ("row", "cell"):
            return self._row(rel, args)
        if rel in self.closures and self.hierarchy:
            a, b = args
            if b is SYM and a is not SYM:
                if a is _UNBOUND:
                    raise unsupported(f"`{rel}(A, R)` with `A` unknown", self.rule)
                c = ("under", a) if rel == self.roles.closure else \
                    conj([("under", a), neg(("is", a))])
                return [((a, SYM), c)]
            if a is SYM and b is not SYM and b is not _UNBOUND:  # R is above b
                above = {row[0] for row in self.lookup(rel, (_UNBOUND, b))}
                return [((SYM, b), ("in", frozenset(above)))] if above else []
            raise unsupported(f"`{rel}` with the resource in both places", self.rule)
        if rel in self.derived and rel not in self.roles.stored:
            out = self._rules(rel, args)
            given = self.base.get(rel)
            if given:  # base facts of a derived relation
                out += self._stored(rel, args, [r for r in given if all(
                    a is _UNBOUND or a is SYM or a == v for a, v in zip(args, r, strict=True))])
            return out
        if rel == self.roles.type and args[0] is SYM and args[1] is not SYM and self.hierarchy:
            if args[1] is not _UNBOUND:
                return [((SYM, args[1]), ("type", args[1]))]
            types = {row[1] for row in self.ctx.F[rel]}
            return [((SYM, t), ("type", t)) for t in sorted(types, key=ir.value_key)]
        if rel in self.roles.kinds and self.hierarchy:  # a type as a unary relation
            return [((SYM,), ("type", rel))]
        if rel == self.roles.edge and self.hierarchy:
            par, kid = self.roles.down
            if args[kid] is SYM and args[par] not in (SYM, _UNBOUND):
                return [(args, ("parent", args[par]))]
        return self._stored(rel, args)

    def _row(self, rel: str, args: tuple[Any, ...]) -> list[tuple[tuple[Any, ...], Cond]]:
        """``row(T, R)``: the row asked about is of the table asked about; ``cell(R, c, v)``:
        the condition that its column ``c`` holds ``v``."""
        if rel == "row":
            table, row = args
            if row is SYM and table is not SYM and table is not _UNBOUND:
                return [((table, SYM), TRUE)] if table == self.table else []
            raise unsupported("`row(T, R)` needs the table known and the row unknown", self.rule)
        r, column, value = args
        if r is SYM and column not in (SYM, _UNBOUND) and value not in (SYM, _UNBOUND):
            return [((SYM, column, value), ("cell", column, value))]
        raise unsupported("`cell(R, C, V)` needs the column and the value known", self.rule)

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
        for rule in self.rules_for(rel):
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
                lits = list(rule.body)
                plan = self._lift_plan(rule, env)
                if plan is not None:
                    got = self._lifted(*plan, env)
                    if got is not None:
                        lits = plan[3]
                        conds.append(got)
                for e, c in self.body(lits, env, conj(conds), head_names(rule)):
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

    # -- a level's object: "the schema of R" -----------------------------------------------------

    def level_of(self, rel: str) -> Any:
        """The type ``t`` when ``rel`` is defined by one rule ``rel(O, S) :- type(S, t),
        closure(S, O)`` (or ``t(S)`` for a type as a unary relation; the hierarchy's roles)
        and holds no base facts ("S is the ``t`` at or above O"), else None."""
        if self.base.get(rel):  # base facts of it too: not only the rule's answers
            return None
        levels = self.program.compiled.setdefault("level_relations", {})
        assert isinstance(levels, dict)
        if rel in levels:
            return levels[rel]
        t = None
        rules = self.rules_for(rel)
        if len(rules) == 1:
            (r,) = rules
            o, s = r.head.args
            if isinstance(o, ir.Var) and isinstance(s, ir.Var) and o.name != s.name and \
                    len(r.body) == 2 and all(isinstance(x, ir.Atom) for x in r.body):
                anc = next((x for x in r.body if isinstance(x, ir.Atom)
                            and x.rel == self.roles.closure), None)
                if anc is not None and anc.args == (s, o):
                    t = self.type_on(r.body, s)[0]
        levels[rel] = t
        return t

    def type_on(self, body: Any, s: ir.Var) -> tuple[Any, ir.Atom | None]:
        """The type ``t`` and the literal that says ``s`` has it (``type(s, t)``, or ``t(s)``
        for a type as a unary relation) among ``body``'s, or (None, None)."""
        for x in body:
            if not isinstance(x, ir.Atom) or not x.args or x.args[0] != s:
                continue
            if x.rel == self.roles.type and isinstance(x.args[1], ir.Const):
                return x.args[1].value, x
            if x.rel in self.roles.kinds:
                return x.rel, x
        return None, None

    def hierarchy_of_view(self) -> Hierarchy:
        if self._h is None:
            self._h = Hierarchy(self.ctx, self.roles, self.levels)
            self._h.cache = self.levels
        return self._h

    def _lift_plan(self, rule: ir.Rule, env: dict[str, Any],
                   ) -> tuple[str, Any, list[ir.Lit], list[ir.Lit]] | None:
        """For a body ``level(R, S), <literals on S>, <the rest>`` with ``R`` the resource
        and ``S`` unbound: (S's name, the level's type, the literals on S, the rest), when the
        literals on S share no variable with the rest but bound ones; else None."""
        if not self.hierarchy or self.rows:
            return None
        head = {t.name for t in rule.head.args if isinstance(t, ir.Var)}
        for lit in rule.body:
            if not isinstance(lit, ir.Atom) or len(lit.args) != 2:
                continue
            r, sv = lit.args
            used: tuple[ir.Lit, ...] = (lit,)
            if lit.rel == self.roles.closure:  # closure(S, R) beside S's type, in place
                sv, r = r, sv
            if not (isinstance(r, ir.Var) and env.get(r.name, _UNBOUND) is SYM
                    and isinstance(sv, ir.Var) and env.get(sv.name, _UNBOUND) is _UNBOUND
                    and sv.name not in head and not sv.name.startswith("_?")):
                continue
            if lit.rel == self.roles.closure:
                t, ent = self.type_on(rule.body, sv)
                if ent is None:
                    continue
                used = (lit, ent)
            else:
                t = self.level_of(lit.rel)
            if t is None:
                continue
            group = [x for x in rule.body if all(x is not u for u in used)
                     and sv.name in _names(x)]
            rest = [x for x in rule.body if all(x is not u for u in used)
                    and sv.name not in _names(x)]
            if not group:
                continue
            outside = head | {n for x in rest for n in _names(x)} | {r.name}
            if all(env[n] is not SYM if env.get(n, _UNBOUND) is not _UNBOUND
                   else n not in outside for x in group for n in _names(x) if n != sv.name):
                return sv.name, t, group, rest
        return None

    def _lifted(self, s: str, t: Any, group: list[ir.Lit], rest: list[ir.Lit],
                env: dict[str, Any]) -> Cond | None:
        """The literals on ``S`` evaluated with ``S`` unknown (a condition on the level's
        object) and lifted to a condition on the resource (hierarchy.lift); None where the
        lift is not exact (not a tree, nested levels) or cannot say it."""
        h = self.hierarchy_of_view()
        if not h.tree:
            return None
        if t not in self.levels:
            self.levels[t] = unnested(t, h)
        if not self.levels[t]:
            return None
        inner = dict(env)
        inner[s] = SYM
        try:
            c = disj([c for _, c in self.body(list(group), inner, TRUE)])
            return lift(c, t, h)
        except NoLift:
            return None
        except GrantlogError as err:  # e.g. recursive over S: S's values one by one instead
            if err.diagnostics and err.diagnostics[0].code == "filter-unsupported":
                return None
            raise

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
        if (rel in self.closures or rel in self.roles.stored) and self.hierarchy:
            if rel in self.closures and args[0] is SYM:
                self.warm(rel, (_UNBOUND, args[1]))
            return
        if rel not in self.derived:
            self.warm(rel, tuple(_UNBOUND if a is SYM else a for a in args))
            return
        for rule in self.rules_for(rel):
            env: dict[str, Any] = {}
            for t, a in zip(rule.head.args, args, strict=True):
                if isinstance(t, ir.Var) and a is not _UNBOUND:
                    env.setdefault(t.name, a)
            lits = list(rule.body)
            plan = self._lift_plan(rule, env)
            if plan is not None:  # the level's literals with S unknown, then the rest
                s, t, group, lits = plan
                h = self.hierarchy_of_view()
                if h.tree and t not in self.levels:
                    self.levels[t] = unnested(t, h)
                self._warm_body(list(group), dict(env) | {s: SYM})
            self._warm_body(lits, env)

    def _warm_body(self, lits: list[ir.Lit], env: dict[str, Any]) -> None:
        """:meth:`warm` over a body's literals, in :meth:`body`'s order."""
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
             keep: frozenset[str] | set[str] = frozenset(),
             ) -> list[tuple[dict[str, Any], Cond]]:
        """Every binding of a body (concrete where it can be), with its condition: the
        bindings advance together, one literal at a time, the literal chosen once for all
        bindings whose variables stand for the resource in the same places. After each
        literal, a variable that no literal left and none of ``keep`` (the head's) reads is
        dropped, and the bindings it told apart become one with the disjunction of their
        conditions: a user's 700 grants, once ``under`` their objects, go on as one binding
        (∃A. grant(A) ∧ under A)."""
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
                lit = rest[i]
                got = self._step(lit, group)
                if got:
                    left = rest[:i] + rest[i + 1:]
                    atom = lit.atom if isinstance(lit, ir.Neg) else lit
                    # bindings merge after a literal on the resource (their values told
                    # apart which objects to be under: no longer needed)
                    if len(got) > 1 and isinstance(atom, ir.Atom) and any(
                            self._value(t, group[0][0]) is SYM for t in atom.args):
                        got = _merged(got, left, keep)
                    todo.append((left, got))
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
                if not has_sym:  # the fewest rows expected first (engine/plan/stats.py)
                    s = 50.0 + 29.0 / (1.0 + self._fanout(lit, vals))
                else:
                    others = [v for v in vals if v is not SYM]
                    s = 20.0 + (10.0 if all(v is not _UNBOUND for v in others) else 0.0)
                    if lit.rel in self.closures and vals[0] is _UNBOUND:
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


def head_names(rule: ir.Rule) -> set[str]:
    return {t.name for t in rule.head.args if isinstance(t, ir.Var)}


def _merged(batch: list[tuple[dict[str, Any], Cond]], left: list[ir.Lit],
            keep: frozenset[str] | set[str]) -> list[tuple[dict[str, Any], Cond]]:
    """``batch`` without the variables neither ``left`` nor ``keep`` reads, bindings equal
    on the rest made one (their conditions' disjunction)."""
    needed = set(keep)
    for lit in left:
        needed |= _names(lit)
    if all(k in needed for k in batch[0][0]) and len(batch[0][0]) == len(batch[-1][0]):
        return batch  # nothing to drop (the bindings of one batch bind the same names)
    names = sorted(needed)
    groups: dict[tuple[Any, ...], tuple[dict[str, Any], list[Cond]]] = {}
    for env, c in batch:
        key = tuple(env.get(n, _UNBOUND) for n in names)
        got = groups.get(key)
        if got is None:
            groups[key] = ({n: env[n] for n in names if n in env}, [c])
        else:
            got[1].append(c)
    if len(groups) == len(batch):
        return batch
    return [(e, cs[0] if len(cs) == 1 else disj(cs)) for e, cs in groups.values()]


def _names(lit: ir.Lit) -> set[str]:
    """The variables of a literal."""
    if isinstance(lit, ir.Cmp):
        terms: tuple[ir.Term, ...] = (lit.left, lit.right)
    else:
        terms = (lit.atom if isinstance(lit, ir.Neg) else lit).args
    return {t.name for t in terms if isinstance(t, ir.Var)}


def _compare(op: str, a: Any, b: Any) -> bool:
    if op == "=":
        return bool(a == b)
    if op == "!=":
        return bool(a != b)
    ka, kb = ir.value_key(a), ir.value_key(b)
    return {"<": ka < kb, "<=": ka <= kb, ">": ka > kb, ">=": ka >= kb}[op]
