"""Why-proofs: why a goal holds.

**Why** (the goal holds): every materialized row carries the round in which it was first
derived (base facts: 0). A proof of a row is a rule instance whose positive body rows all have
lower levels; among the instances we take the one whose highest body level is smallest, so the
tree is as shallow as the evaluation allows, and recursion always terminates (:class:`Prover`).
Relations answered on demand have no levels: a non-recursive one takes any instance; a
recursive (tabled) one takes an instance of least height, found by iterative deepening over
its component, so its proofs are well-founded too.

The instances of a rule deriving a row are found with its body planned as checks plan it:
ordered by the reasoner's statistics (engine/plan/demand.py ``DemandPlans.order``), so a proof
reads in proportion to the proof, not to the platform (`ancestor(A, C) :- ancestor(A, P),
contains(P, C)` finds P as C's parent, not among everything below A). Among equally good
instances the smallest binding is taken: the order a plan finds them in is not part of the
answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from grantlog.grammar.diagnostics import Span

from ...core import ir
from ...eval.demand import DemandContext
from ...eval.derivation import Derivations
from .atoms import ground, show_partial, show_term
from .proof import Proof

MAX_DEPTH = 200

Origin = Callable[[str, ir.Row], Span | str | None]


class Prover:
    """Rebuilds proofs. ``levels`` are the materialized relations (row -> level); ``ctx``
    answers every relation, virtual ones on demand (engine/eval/demand.py)."""

    def __init__(self, program: ir.Program, levels: Mapping[str, Mapping[ir.Row, int]],
                 ctx: DemandContext, base_origin: Origin) -> None:
        self.program = program
        self.levels = levels
        self.ctx = ctx
        self.virtual = program.virtual
        self.origin = base_origin
        self.memo: dict[tuple[str, ir.Row], Proof] = {}
        self.derivations = Derivations(program, program.virtual, ctx.plans.order)
        #: recursive relations answered on demand (tabled): no levels, so proofs of their rows
        #: are found by iterative deepening over the relations of their component
        self.component: dict[str, frozenset[str]] = {
            rel: frozenset(st.relations) for st in program.strata if st.recursive
            for rel in st.relations if rel in program.virtual}
        self.witness: dict[tuple[str, ir.Row], tuple[int, ir.Rule, dict[str, ir.Value]]] = {}
        self.fails_within: dict[tuple[str, ir.Row], int] = {}

    def prove(self, rel: str, row: ir.Row, depth: int = 0) -> Proof:
        key = (rel, row)
        if key in self.memo:
            return self.memo[key]
        text = ir.show_atom(rel, row)
        origin = self.origin(rel, row)
        if origin is not None:
            node = Proof(text, "fact", origin=str(origin), rel=rel, row=row)
        elif depth > MAX_DEPTH:
            node = Proof(text, "truncated", rel=rel, row=row)
        else:
            node = self._by_rule(rel, row, text, depth)
        self.memo[key] = node
        return node

    def _by_rule(self, rel: str, row: ir.Row, text: str, depth: int) -> Proof:
        if rel in self.component:
            if row not in self.ctx.F[rel]:
                return Proof(text, "absent", rel=rel, row=row)
            for height in range(1, MAX_DEPTH):
                found = self._within(rel, row, height)
                if found is not None:
                    return self.instance(found[0], found[1], text, depth)
            return Proof(text, "truncated", rel=rel, row=row)
        if rel in self.virtual:
            if row not in self.ctx.F[rel]:
                return Proof(text, "absent", rel=rel, row=row)
            level = 1 << 62  # non-recursive: any instance is well-founded
        else:
            got = self.levels.get(rel, {}).get(row)
            if got is None:
                return Proof(text, "absent", rel=rel, row=row)
            level = got
        # the lowest instance; among equally low ones the first rule's, then the smallest
        # binding (the order rows are stored in is not part of the answer)
        best: tuple[tuple[int, tuple[Any, ...]], ir.Rule, dict[str, ir.Value]] | None = None
        for rule, binding in self.derivations.heads(rel, row):
            for env in self.derivations.instances(rule, binding, self.ctx.F, self.ctx.index):
                top = max((self._level(a, env) for a in rule.body if isinstance(a, ir.Atom)),
                          default=-1)
                if top < level:
                    rank = (top, ir.row_key(env[k] for k in sorted(env)))
                    if best is None or rank < best[0]:
                        best = (rank, rule, env)
            if best is not None and best[0][0] <= 0:
                break
        if best is None:  # cannot happen for a row the evaluator derived
            return Proof(text, "truncated", rel=rel, row=row)
        _, rule, env = best
        return self.instance(rule, env, text, depth)

    def _within(self, rel: str, row: ir.Row,
                height: int) -> tuple[ir.Rule, dict[str, ir.Value]] | None:
        """A rule instance deriving ``rel(row)`` (a row of a tabled recursive relation) whose
        body rows of the same component have proofs at most ``height - 1`` high."""
        key = (rel, row)
        got = self.witness.get(key)
        if got is not None and got[0] <= height:
            return got[1], got[2]
        if height <= 0 or self.fails_within.get(key, 0) >= height:
            return None
        same = self.component[rel]
        # the first rule with such an instance, its smallest binding (the order the plan,
        # chosen from statistics, finds instances in is not part of the answer)
        for rule, binding in self.derivations.heads(rel, row):
            found = [env for env in self.derivations.instances(
                rule, binding, self.ctx.F, self.ctx.index)
                if all(self.origin(a.rel, r) is not None
                       or self._within(a.rel, r, height - 1) is not None
                       for a in rule.body if isinstance(a, ir.Atom) and a.rel in same
                       for r in (ground(a, env),))]
            if found:
                env = min(found, key=lambda e: ir.row_key(e[k] for k in sorted(e)))
                self.witness[key] = (height, rule, env)
                return rule, env
        self.fails_within[key] = height
        return None

    def instance(self, rule: ir.Rule, env: Mapping[str, ir.Value], text: str,
                 depth: int) -> Proof:
        node = Proof(text, "rule", rule,
                     {k: v for k, v in env.items() if not k.startswith("_?")},
                     rel=rule.head.rel if rule.index >= 0 else None,
                     row=ground(rule.head, env) if rule.index >= 0 else None)
        for lit in rule.body:
            if isinstance(lit, ir.Atom):
                r = ground(lit, env)
                node.children.append(self.prove(lit.rel, r, depth + 1))
            elif isinstance(lit, ir.Neg):
                node.children.append(Proof(show_partial(lit.atom, env), "absent"))
            else:
                node.children.append(Proof(
                    f"{show_term(lit.left, env)} {lit.op} {show_term(lit.right, env)}",
                    "comparison"))
        return node

    def _level(self, a: ir.Atom, env: Mapping[str, ir.Value]) -> int:
        if a.rel in self.virtual:
            return 0
        return self.levels[a.rel][ground(a, env)]
