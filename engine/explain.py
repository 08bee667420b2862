"""Why-explanations: the minimal proof of a derived fact, rebuilt on demand from levels.

Every materialized row carries the round in which it was first derived (base facts: 0). A proof
of a row is a rule instance whose positive body rows all have lower levels; among the instances
we take the one whose highest body level is smallest, so the tree is as shallow as the
evaluation allows, and recursion always terminates.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from grantlog.grammar.diagnostics import Span

from . import ir
from .codegen import solve
from .demand import DemandContext
from .plan import RulePlan, is_anon, plan_bound

MAX_DEPTH = 200


@dataclass
class Proof:
    """One node: a fact and how it holds (a rule instance, a base fact, an absent fact, a test)."""

    text: str
    kind: str  # "rule", "fact", "absent", "comparison", "goal", "truncated"
    rule: ir.Rule | None = None
    bindings: dict[str, ir.Value] = field(default_factory=dict)
    origin: str | None = None
    children: list[Proof] = field(default_factory=list)

    def label(self) -> str:
        if self.kind == "rule" and self.rule is not None:
            return f"{self.text}  <- rule {self.rule.summary}"
        if self.kind == "fact":
            return f"{self.text}  <- fact ({self.origin})"
        if self.kind == "absent":
            return f"{self.text}  <- no such fact"
        if self.kind == "comparison":
            return f"{self.text}  <- holds"
        if self.kind == "goal":
            return f"{self.text}  <- goal"
        return f"{self.text}  <- ..."

    def render(self) -> str:
        lines = [self.label()]
        self._render_children(lines, "")
        return "\n".join(lines)

    def _render_children(self, lines: list[str], prefix: str) -> None:
        for i, c in enumerate(self.children):
            last = i == len(self.children) - 1
            lines.append(f"{prefix}{'└── ' if last else '├── '}{c.label()}")
            c._render_children(lines, prefix + ("    " if last else "│   "))

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"fact": self.text, "kind": self.kind}
        if self.rule is not None:
            d["rule"] = self.rule.name
            d["doc"] = self.rule.doc_line
            d["at"] = str(self.rule.span)
            d["bindings"] = dict(sorted(self.bindings.items()))
        if self.origin is not None:
            d["origin"] = self.origin
        if self.children:
            d["children"] = [c.to_dict() for c in self.children]
        return d

    def rule_names(self) -> list[str]:
        out: list[str] = []
        stack = [self]
        while stack:
            n = stack.pop(0)
            if n.rule is not None and n.rule.name not in out:
                out.append(n.rule.name)
            stack.extend(n.children)
        return out


@dataclass
class Explanation:
    goal: str
    holds: bool
    bindings: dict[str, ir.Value]
    proof: Proof | None

    def render(self) -> str:
        if not self.holds or self.proof is None:
            return f"{self.goal}: does not hold"
        return self.proof.render()

    def to_dict(self) -> dict[str, Any]:
        return {
            "goal": self.goal,
            "holds": self.holds,
            "bindings": self.bindings,
            "proof": self.proof.to_dict() if self.proof else None,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)


Origin = Callable[[str, ir.Row], Span | str | None]


class Prover:
    """Rebuilds proofs. ``levels`` are the materialized relations (row -> level); ``ctx``
    answers every relation, virtual ones on demand (engine/demand.py)."""

    def __init__(self, program: ir.Program, levels: Mapping[str, Mapping[ir.Row, int]],
                 ctx: DemandContext, base_origin: Origin) -> None:
        self.program = program
        self.levels = levels
        self.ctx = ctx
        self.virtual = program.virtual
        self.origin = base_origin
        self.memo: dict[tuple[str, ir.Row], Proof] = {}
        self.plans: dict[tuple[int, tuple[str, ...]], RulePlan] = {}

    def _plan(self, rule: ir.Rule, bound: set[str]) -> RulePlan:
        k = (rule.index, tuple(sorted(bound)))
        p = self.plans.get(k)
        if p is None:
            p = self.plans[k] = plan_bound(rule, bound)
        return p

    def prove(self, rel: str, row: ir.Row, depth: int = 0) -> Proof:
        key = (rel, row)
        if key in self.memo:
            return self.memo[key]
        text = ir.show_atom(rel, row)
        origin = self.origin(rel, row)
        if origin is not None:
            node = Proof(text, "fact", origin=str(origin))
        elif depth > MAX_DEPTH:
            node = Proof(text, "truncated")
        else:
            node = self._by_rule(rel, row, text, depth)
        self.memo[key] = node
        return node

    def _by_rule(self, rel: str, row: ir.Row, text: str, depth: int) -> Proof:
        if rel in self.virtual:
            if row not in self.ctx.F[rel]:
                return Proof(text, "absent")
            level = 1 << 62  # non-recursive: any instance is well-founded
        else:
            got = self.levels.get(rel, {}).get(row)
            if got is None:
                return Proof(text, "absent")
            level = got
        best: tuple[int, ir.Rule, dict[str, ir.Value]] | None = None
        for rule in self.program.rules_for(rel):
            binding = unify(rule.head, row)
            if binding is None:
                continue
            plan = self._plan(rule, set(binding))
            for env in solve(plan, self.ctx.F, None, self.ctx.index, binding):
                top = max((self._level(a, env) for a in rule.body if isinstance(a, ir.Atom)),
                          default=-1)
                if top < level and (best is None or top < best[0]):
                    best = (top, rule, env)
                    if top <= 0:
                        break
            if best is not None and best[0] <= 0:
                break
        if best is None:  # cannot happen for a row the evaluator derived
            return Proof(text, "truncated")
        _, rule, env = best
        return self.instance(rule, env, text, depth)

    def instance(self, rule: ir.Rule, env: Mapping[str, ir.Value], text: str,
                 depth: int) -> Proof:
        node = Proof(text, "rule", rule,
                     {k: v for k, v in env.items() if not k.startswith("_?")})
        for lit in rule.body:
            if isinstance(lit, ir.Atom):
                r = _ground(lit, env)
                node.children.append(self.prove(lit.rel, r, depth + 1))
            elif isinstance(lit, ir.Neg):
                node.children.append(Proof(_show_partial(lit.atom, env), "absent"))
            else:
                node.children.append(Proof(
                    f"{_show_term(lit.left, env)} {lit.op} {_show_term(lit.right, env)}",
                    "comparison"))
        return node

    def _level(self, a: ir.Atom, env: Mapping[str, ir.Value]) -> int:
        if a.rel in self.virtual:
            return 0
        return self.levels[a.rel][_ground(a, env)]


def unify(head: ir.Atom, row: ir.Row) -> dict[str, ir.Value] | None:
    env: dict[str, ir.Value] = {}
    for t, v in zip(head.args, row, strict=True):
        if isinstance(t, ir.Const):
            if t.value != v:
                return None
        elif t.name in env:
            if env[t.name] != v:
                return None
        else:
            env[t.name] = v
    return env


def _ground(a: ir.Atom, env: Mapping[str, ir.Value]) -> ir.Row:
    return tuple(t.value if isinstance(t, ir.Const) else env[t.name] for t in a.args)


def _show_term(t: ir.Term, env: Mapping[str, ir.Value]) -> str:
    if isinstance(t, ir.Const):
        return ir.show_value(t.value)
    if is_anon(t) or t.name not in env:
        return "_"
    return ir.show_value(env[t.name])


def _show_partial(a: ir.Atom, env: Mapping[str, ir.Value]) -> str:
    if not a.args:
        return f"not {a.rel}"
    return f"not {a.rel}({', '.join(_show_term(t, env) for t in a.args)})"
