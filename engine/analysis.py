"""Which relations are materialized and which are answered on demand; the decision relation.

Materialized (kept in memory, maintained incrementally): base relations, every relation of a
recursive stratum (hierarchy closures, nested memberships), and everything a materialized
relation depends on. Every other derived relation is *virtual*: evaluated goal-directed when a
read needs it, with the read's bound arguments pushed into its rules (engine/demand.py), so a
check never materializes subject × object. Virtual relations are non-recursive by construction.

Annotations override the analysis: ``@materialize rel holds(...)`` keeps a small non-recursive
relation in memory (it and what it depends on), ``@demand`` forces a relation virtual, and
``@decision`` names the decision relation of ``check`` (default: ``allowed``).
"""

from __future__ import annotations

from grantlog.grammar.diagnostics import Diagnostic, Span, error

from . import ir


def analyse(program: ir.Program) -> list[Diagnostic]:
    """Fill ``program.virtual`` and ``program.decision``; return annotation errors."""
    diags: list[Diagnostic] = []
    rels = program.relations

    def where(name: str) -> Span:
        return rels[name].span or Span("<unknown>", 0, 0, 0, 0)

    decisions = [n for n, r in rels.items() if "decision" in r.annotations]
    if len(decisions) > 1:
        for n in decisions[1:]:
            diags.append(error("bad-annotation", f"`{n}` is a second `@decision` relation",
                               where(n), f"`{decisions[0]}` is already the decision relation"))
    if decisions:
        program.decision = decisions[0]
        if rels[decisions[0]].arity != 3:
            diags.append(error("bad-annotation",
                               f"decision relation `{decisions[0]}` must have 3 columns "
                               "(subject, operation, resource)", where(decisions[0])))

    recursive = {r for st in program.strata if st.recursive for r in st.relations}
    deps: dict[str, set[str]] = {}
    for rule in program.rules:
        d = deps.setdefault(rule.head.rel, set())
        for lit in rule.body:
            if isinstance(lit, ir.Atom):
                d.add(lit.rel)
            elif isinstance(lit, ir.Neg):
                d.add(lit.atom.rel)
    derived = program.derived
    forced = {n for n, r in rels.items() if "materialize" in r.annotations}
    demand = {n for n, r in rels.items() if "demand" in r.annotations}
    for n in sorted(demand & recursive):
        diags.append(error("bad-annotation", f"`{n}` is recursive and cannot be `@demand`",
                           where(n), "recursive relations are always materialized"))
    for n in sorted(demand & forced):
        diags.append(error("bad-annotation", f"`{n}` is both `@demand` and `@materialize`",
                           where(n)))
    for n in sorted(demand - derived):
        diags.append(error("bad-annotation", f"`{n}` has no rules; only derived relations "
                           "can be `@demand`", where(n)))

    # materialized: recursive and forced relations, closed under dependencies
    materialized = set(recursive | forced) - demand
    stack: list[str] = sorted(materialized)
    while stack:
        r = stack.pop()
        for dep in deps.get(r, set()):
            if dep not in materialized:
                materialized.add(dep)
                stack.append(dep)
    for n in sorted(materialized & demand):
        diags.append(error("bad-annotation",
                           f"`{n}` is `@demand` but a materialized relation depends on it",
                           where(n), "materialized relations can only use materialized ones"))
    program.virtual = frozenset(derived - materialized)
    return diags
