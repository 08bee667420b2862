"""Unfolding a view: a call of a one-rule relation replaced by the rule's body.

Both planners that unfold views use this one substitution: goal-directed evaluation
(engine/eval/demand.py ``DemandPlans.unfold``, while statistics can still order the body
exhaustively) and the demand rewrite (engine/plan/magic.py ``unfold_views``, for relations a
magic set would only copy). Which relations are views is the structural analysis
:func:`grantlog.engine.core.analyses.views`; each caller adds its own policy.
"""

from __future__ import annotations

from collections.abc import Callable

from ..core import ir
from ..core.terms import is_anon, map_terms


def instantiate(view: ir.Rule, atom: ir.Atom, suffix: str,
                anonymous: Callable[[str], str] | None = None) -> list[ir.Lit]:
    """The body of ``view`` for the call ``atom``: head variables replaced by the atom's
    arguments (an anonymous argument by a fresh variable ``<head variable><suffix>``, as the
    body may use it more than once), the body's own variables renamed apart,
    ``<name><suffix>``; an anonymous one by ``anonymous(name)`` when given (it must stay
    anonymous), else the same way."""
    sub: dict[str, ir.Term] = {}
    for h, t in zip(view.head.args, atom.args, strict=True):
        assert isinstance(h, ir.Var)
        sub[h.name] = ir.Var(f"{h.name}{suffix}") if is_anon(t) else t

    def term(t: ir.Term) -> ir.Term:
        if isinstance(t, ir.Const):
            return t
        got = sub.get(t.name)
        if got is None:
            got = sub[t.name] = ir.Var(anonymous(t.name) if anonymous and is_anon(t)
                                       else f"{t.name}{suffix}")
        return got

    return [map_terms(x, term) for x in view.body]
