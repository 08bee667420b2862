"""Why-not trees: why a goal does not hold.

**Why not** (the goal does not hold, :class:`WhyNot`): every rule whose head unifies with the
goal is a way it could have been derived, and each way is shown with its body literals as
written, each marked as holding, failing or not reached, for one binding of the rule's
variables: the binding that *gets furthest*. The body is read in the author's order (with the
goal's values bound), checking every literal as soon as its variables are bound and binding
variables from the next positive literal with a known argument (:meth:`WhyNot._search` has
the details); among the bindings so found we take

1. the one with the fewest literals not shown to hold (failed, or not reached because a
   positive literal with variables to bind had no matching row): a binding that fails one
   check beats one that fails two, and one that fails at the last literal beats one stopped
   at the first;
2. then one that was not stopped early (every literal checked);
3. then the first found (rows in storage order, which is stable).

The first failing literal of the chosen binding (as written) is explained in depth, later
ones briefly (a derived one is only named: "does not hold either"): a positive literal on a
derived relation recursively (a why-not of the sub-goal with the values known so far; its
unbound variables are named: "does not hold for any G"); a positive literal on a base relation
is a leaf, the missing base fact; a negated literal that is true names the fact that blocked it
(the DENY that won, the override that fired) with that fact's why-proof; a comparison that is
false is a leaf. Trees are bounded (:class:`Limits`): nesting depth, rules shown per goal (the
ones that got furthest; a "… N more rules" node counts the rest), total nodes, and bindings
tried per rule body. A sub-goal explained once is shown again as "explained above"; a sub-goal
that needs itself (recursion) as "recursive".
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ...core import ir
from ...core.terms import compare, is_anon, lit_terms
from ...eval.demand import DemandContext
from .atoms import (
    canon,
    free_vars,
    ground_atom,
    open_terms,
    rename_apart,
    show_lit,
    show_open_atom,
    unify_pattern,
)
from .proof import Proof
from .prover import Prover


@dataclass(frozen=True)
class Limits:
    """Bounds on a why-not tree, so huge models stay readable."""

    #: nested sub-goals below the goal
    depth: int = 12
    #: rules shown per (sub-)goal; the rest are counted in a "… N more rules" node
    alternatives: int = 6
    #: why-not nodes in the whole tree (why-proofs of blocking facts not counted)
    nodes: int = 400
    #: search steps per rule body (bindings extended); the best binding so far is used
    search: int = 20000
    #: prove the facts that block negated literals (a summary can do without: cheaper)
    proofs: bool = True


@dataclass(frozen=True)
class _Outcome:
    """Where one binding of a rule body ended: its variables, the body literals that failed,
    the positive literal with no matching row that stopped it (if one did), and the literals
    it never reached (their variables were never bound)."""

    env: dict[str, ir.Value]
    failed: tuple[int, ...]
    stuck: int | None
    unreached: frozenset[int]

    @property
    def missing(self) -> int:
        """Literals not shown to hold: failed, stuck or never reached."""
        return len(self.failed) + len(self.unreached)

    @property
    def key(self) -> tuple[int, bool]:
        """Larger is better: fewest literals not shown to hold, then not stopped early."""
        return (-self.missing, self.stuck is None)


class _BodyHolds(Exception):
    """A rule body has a satisfying binding although its head was found false."""


class WhyNot:
    """Builds why-not trees over one read's view (``ctx``); ``prover`` gives the why-proofs of
    the facts that block negated literals."""

    def __init__(self, program: ir.Program, ctx: DemandContext, prover: Prover,
                 limits: Limits | None = None) -> None:
        self.derived = program.derived
        self.virtual = program.virtual
        self.rules: dict[str, list[ir.Rule]] = {}
        for r in program.rules:
            self.rules.setdefault(r.head.rel, []).append(r)
        self.ctx = ctx
        self.prover = prover
        #: the relations of each recursive relation's strongly connected component
        self.component: dict[str, frozenset[str]] = {
            rel: frozenset(st.relations) for st in program.strata if st.recursive
            for rel in st.relations}
        self.limits = limits or Limits()
        self.nodes = 0
        self.done: set[tuple[Any, ...]] = set()

    def _node(self, text: str, kind: str, **kw: Any) -> Proof:
        self.nodes += 1
        return Proof(text, kind, **kw)

    def goal(self, rule: ir.Rule) -> Proof:
        """The why-not tree of a goal compiled as the body of ``rule`` (a ``<goal>`` rule)."""
        body = rule.body
        if len(body) == 1 and isinstance(body[0], ir.Atom):
            return self.atom(body[0].rel, body[0].args, 0, frozenset())
        out = self._search(rule, {})
        text = ", ".join(show_lit(lit, {}) for lit in body)
        free = tuple(dict.fromkeys(
            t.name for lit in body for t in lit_terms(lit)
            if isinstance(t, ir.Var) and not is_anon(t)))
        node = self._node(text, "fails", free=free)
        node.children = self._literals(rule, out, 0, frozenset())
        return node

    def atom(self, rel: str, terms: tuple[ir.Term, ...], depth: int,
             path: frozenset[tuple[Any, ...]]) -> Proof:
        """Why ``rel(terms)`` does not hold (variables in ``terms``: for any value)."""
        text = show_open_atom(rel, terms)
        free = free_vars(terms)
        row = None if free or any(is_anon(t) for t in terms) else tuple(
            t.value for t in terms if isinstance(t, ir.Const))
        facts: dict[str, Any] = {"free": free, "rel": rel, "row": row}
        if rel not in self.derived:
            return self._node(text, "missing", **facts)
        key = canon(rel, terms)
        if key in path:
            return self._node(text, "cycle", **facts)
        if key in self.done:
            return self._node(text, "seen", **facts)
        if depth > self.limits.depth or self.nodes >= self.limits.nodes:
            return self._node(text, "limit", **facts)
        alts: list[tuple[int, ir.Rule, _Outcome]] = []
        for i, rule in enumerate(self.rules.get(rel, ())):
            rule = rename_apart(rule, terms)  # one name, one variable: the goal's first
            u = unify_pattern(rule.head, terms)
            if u is None:
                continue
            env0, extra = u
            full = replace(rule, body=rule.body + extra) if extra else rule
            alts.append((i, full, self._search(full, env0)))
        if not alts:
            return self._node(text, "no-rule", **facts)
        shown = alts
        hidden = 0
        if len(alts) > self.limits.alternatives:
            ranked = sorted(alts, key=lambda a: a[2].key, reverse=True)  # stable: source order
            shown = sorted(ranked[: self.limits.alternatives], key=lambda a: a[0])
            hidden = len(alts) - len(shown)
        node = self._node(text, "fails", **facts)
        inner = path | {key}
        for _, rule, out in shown:
            env = {k: v for k, v in out.env.items() if not k.startswith("_?")}
            head = show_open_atom(rule.head.rel, open_terms(rule.head.args, out.env))
            alt = self._node(head, "alternative", rule=rule, bindings=env)
            alt.children = self._literals(rule, out, depth, inner)
            node.children.append(alt)
        if hidden:
            node.children.append(self._node(
                f"… {hidden} more rule{'s' if hidden != 1 else ''} (each satisfies fewer body "
                "literals)", "more", count=hidden))
        self.done.add(key)
        return node

    def _literals(self, rule: ir.Rule, out: _Outcome, depth: int,
                  path: frozenset[tuple[Any, ...]]) -> list[Proof]:
        """The body literals of ``rule`` as written, each with its state under ``out``."""
        env = out.env
        failed = set(out.failed)
        first = min(failed)
        children: list[Proof] = []
        for j, lit in enumerate(rule.body):
            if j in out.unreached:
                children.append(self._node(show_lit(lit, env), "unchecked"))
            elif j not in failed:
                ground = ground_atom(lit, env)
                children.append(self._node(
                    show_lit(lit, env), "holds",
                    rel=ground[0] if ground else None, row=ground[1] if ground else None))
            elif isinstance(lit, ir.Atom) and j != first and lit.rel in self.derived:
                terms = open_terms(lit.args, env)
                ground = ground_atom(lit, env)
                children.append(self._node(
                    show_open_atom(lit.rel, terms), "unexpanded", free=free_vars(terms),
                    rel=lit.rel, row=ground[1] if ground else None))
            elif isinstance(lit, ir.Atom):
                children.append(self.atom(lit.rel, open_terms(lit.args, env), depth + 1, path))
            elif isinstance(lit, ir.Neg):
                children.append(self._blocked(lit.atom, env))
            else:
                children.append(self._node(show_lit(lit, env), "false"))
        return children

    def _blocked(self, atom: ir.Atom, env: Mapping[str, ir.Value]) -> Proof:
        terms = open_terms(atom.args, env)
        cols = tuple(c for c, t in enumerate(terms) if isinstance(t, ir.Const))
        key = tuple(t.value for t in terms if isinstance(t, ir.Const))
        if len(cols) == len(terms):
            row: ir.Row = key
        else:
            row = min(self.ctx.lookup(atom.rel, cols, key), key=ir.row_key)
        node = self._node(f"not {show_open_atom(atom.rel, terms)}", "blocked")
        if self.limits.proofs:
            node.children.append(self.prover.prove(atom.rel, row))
        return node

    def _rows(self, atom: ir.Atom, env: Mapping[str, ir.Value]) -> Collection[ir.Row]:
        """The rows of ``atom`` matching the values bound in ``env`` (anonymous variables and
        unbound ones match anything; a variable repeated in the atom is not checked here)."""
        cols: list[int] = []
        key: list[ir.Value] = []
        for c, t in enumerate(atom.args):
            if isinstance(t, ir.Const):
                cols.append(c)
                key.append(t.value)
            elif t.name in env and not is_anon(t):
                cols.append(c)
                key.append(env[t.name])
        if len(cols) == len(atom.args):
            row = tuple(key)
            return (row,) if row in self.ctx.F[atom.rel] else ()
        got = self.ctx.lookup(atom.rel, tuple(cols), tuple(key))
        return got.keys() if isinstance(got, Mapping) else got

    def _search(self, rule: ir.Rule, env0: Mapping[str, ir.Value]) -> _Outcome:
        """The binding of the body that gets furthest (see the module docstring).

        The body is read in the author's order, in two ways, and the better outcome is kept
        (the first on a tie). At each point every literal whose variables are all bound is
        checked (a failed check is recorded and the search goes on). Then a positive literal
        binds more variables, one matching row at a time:

        * first way: the first literal linked to the values known so far by a bound
          variable, else the first with a constant argument, else the first: an object's
          schema is sought among the object's ancestors, not among all schemas;
        * second way: the first literal with a known argument (constant or variable), else
          the first: `schema_option(S, p_admin, P)` finds the admin permission of a schema
          before `user_permission(dave, P)` lists what dave holds.

        Either way, of two equally ranked literals a recursive call (a relation of the head's
        own recursive component) comes last: `ancestor(A, P), contains(P, C)` binds P from
        C's parent (one row), not from everything below A (a subtree of the platform), so
        the tree walks up from C and costs the path's length.

        A literal with one matching row binds its variables (`member(alice, G)`: G = eng, so
        the failure reads `grant(eng, delete, t1)`). One with no matching row stops the
        binding there ("no `member(dave, G)` at all"). Before choosing among several rows,
        a stored literal with a known argument and no matching row stops the binding
        instead: no choice could make it hold, and an arbitrary choice would suggest facts
        nobody meant (`deprecated(use_catalog, modify_table)` because the role happens to
        hold use_catalog). Relations answered on demand are not probed ahead, as a partial
        lookup may evaluate a lot of rules. Full scans wait while anything narrower is left.
        """
        best = self._search_in(rule, env0, linked=True)
        if best.missing > 1 or best.stuck is not None:
            other = self._search_in(rule, env0, linked=False)
            if other.key > best.key:
                best = other
        return best

    def _search_in(self, rule: ir.Rule, env0: Mapping[str, ir.Value],
                   linked: bool) -> _Outcome:
        body = rule.body
        n = len(body)
        best: list[_Outcome] = []
        budget = self.limits.search
        done = False

        def bound(t: ir.Term, env: Mapping[str, ir.Value]) -> bool:
            return isinstance(t, ir.Const) or (t.name in env and not is_anon(t))

        def val(t: ir.Term, env: Mapping[str, ir.Value]) -> ir.Value:
            return t.value if isinstance(t, ir.Const) else env[t.name]

        def record(env: dict[str, ir.Value], failed: list[int], stuck: int | None,
                   rest: set[int]) -> None:
            nonlocal done
            o = _Outcome(env, tuple(failed), stuck, frozenset(rest))
            if not best or o.key > best[0].key:
                best[:] = [o]
                done = done or (o.missing == 1 and stuck is None)  # nothing can beat it

        def go(env: dict[str, ir.Value], rest: set[int], failed: list[int]) -> None:
            nonlocal budget, done
            budget -= 1
            if budget < 0:
                done = True
            if done and best:
                return
            env = dict(env)
            rest = set(rest)
            failed = list(failed)
            progress = True
            while progress:  # every literal that can be checked now
                progress = False
                for j in sorted(rest):
                    lit = body[j]
                    if isinstance(lit, ir.Cmp):
                        lb, rb = bound(lit.left, env), bound(lit.right, env)
                        if lb and rb:
                            if not compare(lit.op, val(lit.left, env), val(lit.right, env)):
                                failed.append(j)
                        elif lit.op == "=" and lb and isinstance(lit.right, ir.Var):
                            env[lit.right.name] = val(lit.left, env)
                        elif lit.op == "=" and rb and isinstance(lit.left, ir.Var):
                            env[lit.left.name] = val(lit.right, env)
                        else:
                            continue
                    elif isinstance(lit, ir.Neg):
                        if not all(bound(t, env) or is_anon(t) for t in lit.atom.args):
                            continue
                        if self._rows(lit.atom, env):
                            failed.append(j)
                    elif isinstance(lit, ir.Atom) and all(
                            bound(t, env) or is_anon(t) for t in lit.args):
                        if not self._rows(lit, env):
                            failed.append(j)
                    else:
                        continue
                    rest.discard(j)
                    progress = True
            if best:  # prune: this binding cannot beat the best one any more
                b = best[0]
                if len(failed) > b.missing or (len(failed) == b.missing and b.stuck is None):
                    return
            if not rest:
                if not failed:
                    raise _BodyHolds(str(rule))
                record(env, failed, None, rest)
                return
            # the next positive literal to bind variables (see the docstring); one without a
            # matching row stops the binding
            choice: tuple[tuple[int, int, int], int] | None = None
            same = self.component.get(rule.head.rel, frozenset())
            for j in sorted(rest):
                lit = body[j]
                if isinstance(lit, ir.Atom):
                    known = any(bound(t, env) for t in lit.args)
                    tied = linked and any(isinstance(t, ir.Var) and bound(t, env)
                                          for t in lit.args)
                    # of equal rank, a recursive call last: it may match a whole subtree
                    # (`ancestor(A, P)` from A) where the step matches a row (`contains(P,
                    # C)`: C's parent)
                    rank = (0 if tied else 1 if known else 2, int(lit.rel in same), j)
                    if choice is None or rank < choice[0]:
                        choice = (rank, j)
            assert choice is not None, f"why-not: unplaceable literals in `{rule}`"
            j = choice[1]
            lit = body[j]
            assert isinstance(lit, ir.Atom)
            rows = self._rows(lit, env)
            if len(rows) > 1:  # a choice to make: first, is there a literal no choice can fix?
                for k in sorted(rest):
                    other = body[k]
                    if (k != j and isinstance(other, ir.Atom) and other.rel not in self.virtual
                            and any(bound(t, env) for t in other.args)
                            and not self._rows(other, env)):
                        j, lit, rows = k, other, ()
                        break
            rest.discard(j)
            matched = False
            for row in ir.sorted_rows(rows) if len(rows) > 1 else rows:
                env2 = dict(env)
                ok = True
                for c, t in enumerate(lit.args):
                    if (isinstance(t, ir.Var) and not is_anon(t)
                            and env2.setdefault(t.name, row[c]) != row[c]):
                        ok = False
                        break
                if not ok:
                    continue
                matched = True
                go(env2, rest, failed)
                if done:
                    return
            if not matched:
                record(env, [*failed, j], j, rest)

        try:
            go(dict(env0), set(range(n)), [])
        except _BodyHolds as e:  # the evaluator and this search disagree: a bug, say so loudly
            raise AssertionError(
                f"why-not: the body of `{e}` holds, yet its head does not") from None
        assert best, "why-not: the search found no binding"
        return best[0]
