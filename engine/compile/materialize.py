"""Which relations are materialized and which are answered on demand; the decision relation.

Materialized (kept in memory, maintained incrementally): base relations, every recursive
relation that does not depend on the decision relation (hierarchy closures, nested
memberships), and everything a materialized relation depends on. Every other derived relation
is *virtual*: evaluated goal-directed when a read needs it, with the read's bound arguments
pushed into its rules (engine/eval/demand.py), so a check never materializes subject × object. The
decision relation and what is built on it stay virtual even when recursive (one operation's
permission defined through another's); demand evaluation tables recursive calls.

Annotations override the analysis: ``@materialize rel holds(...)`` keeps a small non-recursive
relation in memory (it and what it depends on), ``@demand`` forces a relation virtual, and
``@decision`` names the decision relation of ``check`` (default: ``allowed``).
``@writable`` lets writes give facts of a derived relation (compile/checks.py refuses a fact of
a derived relation without it, and so does every write: ``ir.Program.write_refusal``).
"""

from __future__ import annotations

from grantlog.grammar.diagnostics import Diagnostic, Span, error

from ..core import ir
from ..core.analyses import program_dependencies


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

    deps = program_dependencies(program)
    derived = program.derived
    forced = {n for n, r in rels.items() if "materialize" in r.annotations}
    demand = {n for n, r in rels.items() if "demand" in r.annotations}
    for n in sorted(demand & forced):
        diags.append(error("bad-annotation", f"`{n}` is both `@demand` and `@materialize`",
                           where(n)))
    for n in sorted(demand - derived):
        diags.append(error("bad-annotation", f"`{n}` has no rules; only derived relations "
                           "can be `@demand`", where(n)))
    writable = {n for n, r in rels.items() if "writable" in r.annotations}
    for n in sorted(writable - derived):
        diags.append(error("bad-annotation", f"`{n}` has no rules; only derived relations "
                           "can be `@writable`", where(n),
                           "writes always may give facts of base relations"))

    # the decision relation and everything built on it: never materialized by default, even
    # when recursive (e.g. one operation's permission defined through another's)
    users: dict[str, set[str]] = {}
    for head, ds in deps.items():
        for dep in ds:
            users.setdefault(dep, set()).add(head)
    above: set[str] = set()
    stack: list[str] = [program.decision] if program.decision in derived else []
    while stack:
        r = stack.pop()
        if r not in above:
            above.add(r)
            stack.extend(users.get(r, ()))
    on_demand_sccs = {st.index for st in program.strata
                      if set(st.relations) & (above | demand)}

    # materialized: other recursive relations and forced ones, closed under dependencies
    seeds = {r for st in program.strata if st.recursive and st.index not in on_demand_sccs
             for r in st.relations}
    materialized = (seeds | forced) - demand
    stack = sorted(materialized)
    while stack:
        r = stack.pop()
        for dep in deps.get(r, ()):
            if dep not in materialized:
                materialized.add(dep)
                stack.append(dep)
    for n in sorted(materialized & demand):
        diags.append(error("bad-annotation",
                           f"`{n}` is `@demand` but a materialized relation depends on it",
                           where(n), "materialized relations can only use materialized ones"))
    program.virtual = frozenset(derived - materialized)
    return diags
