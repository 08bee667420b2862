"""``explain``: the why-proof of a goal's first answer, or the goal's why-not tree."""

from __future__ import annotations

from collections.abc import Sequence

from ...core import ir
from ...eval.demand import DemandContext
from ...plan.codegen import solve
from ...plan.join import plan_bound
from .explanation import Explanation
from .proof import Proof
from .prover import Prover
from .whynot import Limits, WhyNot


def explain_goal(text: str, rule: ir.Rule, names: Sequence[str], ctx: DemandContext,
                 prover: Prover, limits: Limits | None = None, *,
                 why_not: bool = True) -> Explanation:
    """Why the goal ``text`` (compiled as the body of ``rule``, a ``<goal>`` rule whose head
    holds its named variables ``names``) holds in ``ctx``: a proof tree for its first answer
    in value order; or why it has no answer: a why-not tree, within ``limits`` (not searched
    without ``why_not``: the explanation has none then)."""
    plan = plan_bound(rule, set())
    answers = sorted(solve(plan, ctx.F, None, ctx.index, {}),
                     key=lambda e: ir.row_key(e[n] for n in names))
    if not answers and not why_not:
        return Explanation(text, False, {}, None, None)
    if not answers:
        tree = WhyNot(prover.program, ctx, prover, limits).goal(rule)
        return Explanation(text, False, {}, None, tree)
    env = answers[0]
    bindings = {n: env[n] for n in names}
    body = rule.body
    if len(body) == 1 and isinstance(body[0], ir.Atom):
        atom = body[0]
        row = tuple(t.value if isinstance(t, ir.Const) else env[t.name] for t in atom.args)
        return Explanation(text, True, bindings, prover.prove(atom.rel, row))
    node = prover.instance(rule, env, text, 0)
    root = Proof(text, "goal", None, bindings, None, node.children)
    return Explanation(text, True, bindings, root)
