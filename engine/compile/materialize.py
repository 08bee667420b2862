"""Which relations are materialized and which are answered on demand; the decision relation.

Materialized (kept in memory, maintained incrementally): base relations, every recursive
relation that does not depend on the decision relation (nested memberships) but the resource
hierarchy's walked closure, a subject's holdings (the policy below), and everything a
materialized relation depends on. Every other derived relation
is *virtual*: evaluated goal-directed when a read needs it, with the read's bound arguments
pushed into its rules (engine/eval/demand.py), so a check never materializes subject × object. The
decision relation and what is built on it stay virtual even when recursive (one operation's
permission defined through another's); demand evaluation tables recursive calls.

Annotations override the analysis: ``@materialize rel holds(...)`` keeps a small non-recursive
relation in memory (it and what it depends on), ``@demand`` forces a relation virtual, and
``@decision`` names the decision relation of ``check`` (default: ``allowed``).
``@writable`` lets writes give facts of a derived relation (compile/checks.py refuses a fact of
a derived relation without it, and so does every write: ``ir.Program.write_refusal``).

**The policy** (:func:`walked_closures`, :func:`kept_joins`; the reason for each relation:
:func:`reasons`, shown by ``grantlog plan``; docs/evaluation.md). Read
off the model's structure, so that a model written from scratch is kept in memory where the
shipped models' annotations keep theirs:

1. *The resource hierarchy's closure is walked, not kept.* A relation the hierarchy analysis
   (engine/core/hierarchy_roles.py) finds as the closure or strict closure of the hierarchy
   that reaches the decision's resource column, alone in its recursive component, with a linear
   step over a stored edge and stored seeds, is answered by a walk over the edge's index
   (engine/eval/closure.py) when a read needs it: its rows are objects × their ancestors (4M
   rows at 1M tables), a walk is a handful of lookups. Other recursive relations that do not
   build on the decision relation (groups nested in groups: principals × their groups) stay
   materialized.
2. *A subject's holdings are kept.* A derived relation outside recursion is materialized
   when it pairs a subject with something that is not an object: two columns, one whose values
   flow into the decision relation's subject column and one that flows neither there nor into
   its resource column (columns are classed by the variables the rules share: a union-find over
   (relation, column) positions); when it does not build on the decision relation nor on the
   hierarchy (its edge, types or closures: a relation reading them grows with the objects);
   when every rule's positive atoms are joined through shared variables (no cross product: its
   rows are bounded by the memberships and assignments joined, not by their product); and when
   what it reads is materialized or chosen by this rule too. Role holding and membership through
   nested groups qualify (the prelude annotates ``holds`` so); a user's rights on objects
   (subject × object), a join of a subject's attributes with data rows (four columns) and
   anything over the types do not: ``@materialize`` them when they are small. Only with a
   3-column decision relation (else no subject and resource are known).
3. *A filter of stored facts is kept.* A derived relation outside recursion (and not built on
   the decision relation) whose every rule reads one stored relation that binds the head's
   subjects and objects (a base relation outside the hierarchy, or one kept by 1-2 or an
   annotation): the other atoms only test its rows (an object's type, a privilege supported
   there, a known condition) or add an attribute to them (a deprecated privilege's
   replacement: a column whose values flow neither into the decision's subject nor into its
   resource), joined through shared variables. Its rows are at most the stored relation's,
   whatever the objects: grants checked against the types they are set on, the shipped
   model's ``grant``, which the prelude's models annotate and a model written from scratch
   does not. Where every column is one class (Gravitino's users, roles and tables are all
   objects), rule 2 cannot tell a subject's holdings from subject × object; this rule needs
   only the stored relation as the bound. Only with a 3-column decision relation.

The annotations override the policy: ``@materialize`` on a closure keeps it whole, ``@demand``
on a subject's holdings leaves them on demand.
"""

from __future__ import annotations

from dataclasses import replace

from grantlog.grammar.diagnostics import Diagnostic, Span, error

from ..core import ir
from ..core.analyses import closures, program_dependencies, recursive_components
from ..core.hierarchy_roles import hierarchy_roles
from ..core.terms import is_anon, term_vars


def analyse(program: ir.Program) -> list[Diagnostic]:
    """Fill ``program.virtual`` and ``program.decision`` (and keep the policy's reasons for
    :func:`reasons`); return annotation errors."""
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

    # materialized: other recursive relations (but the hierarchy's walked closure), forced
    # ones and the small joins, closed under dependencies
    walked = walked_closures(program) - forced
    seeds = {r for st in program.strata if st.recursive and st.index not in on_demand_sccs
             for r in st.relations} - walked
    why = {r: ANNOTATED for r in forced & derived}
    why.update((r, RECURSIVE) for r in seeds if r not in why)
    kept = kept_joins(program, above | demand | walked, seeds | forced, deps)
    why.update((r, w) for r, w in kept.items() if r not in why)
    small = set(kept)
    materialized = (seeds | forced | small) - demand
    stack = sorted(materialized)
    while stack:
        r = stack.pop()
        for dep in deps.get(r, ()):
            if dep not in materialized:
                materialized.add(dep)
                stack.append(dep)
                if dep in derived:
                    why.setdefault(dep, NEEDED)
    for n in sorted(materialized & demand):
        diags.append(error("bad-annotation",
                           f"`{n}` is `@demand` but a materialized relation depends on it",
                           where(n), "materialized relations can only use materialized ones"))
    program.virtual = frozenset(derived - materialized)
    out = {r: w for r, w in why.items() if r in materialized}
    out.update((r, WALKED) for r in walked if r in program.virtual and r not in demand)
    program.compiled[REASONS] = out
    return diags


#: why a derived relation is materialized (or a closure walked): :func:`reasons`
ANNOTATED = "`@materialize`"
RECURSIVE = "policy: recursive, not built on the decision relation"
SMALL = "policy: a subject's holdings, joined from memberships and assignments"
FILTER = "policy: a filter of stored facts, at most as many rows as they"
NEEDED = "read by a materialized relation"
WALKED = "policy: the hierarchy's closure is walked, not kept"
REASONS = "materialize:reasons"


def reasons(program: ir.Program) -> dict[str, str]:
    """Why each materialized derived relation is (:data:`ANNOTATED`, :data:`RECURSIVE`,
    :data:`SMALL`, :data:`FILTER`, :data:`NEEDED`), and the hierarchy closures the policy
    leaves to a walk (:data:`WALKED`); a relation made virtual by ``@demand`` or by default is
    not listed. Kept by :func:`analyse`; for a program it did not analyse, computed on a copy
    (this one's ``virtual`` is left as it is). Only what agrees with ``program.virtual`` now
    is given."""
    got = program.compiled.get(REASONS)
    if not isinstance(got, dict):
        twin = replace(program, compiled=dict(program.compiled))
        analyse(twin)
        got = twin.compiled[REASONS]
    assert isinstance(got, dict)
    virtual = program.virtual
    return {r: w for r, w in got.items() if (r in virtual) == (w == WALKED)}


def walked_closures(program: ir.Program) -> set[str]:
    """Rule 1 of the policy: the resource hierarchy's closure relations that a walk over a
    stored edge answers (linear step, stored seeds, alone in their component)."""
    scc = recursive_components(program)
    derived = program.derived
    out = set()
    for rel in hierarchy_roles(program).closures:
        c = closures(program).get(rel)
        if (c is not None and c.linear and c.edge not in derived
                and all(s not in derived for _, s in c.seeds)
                and scc.get(rel) == frozenset({rel})):
            out.add(rel)
    return out


def kept_joins(program: ir.Program, excluded: set[str], materialized: set[str],
               deps: dict[str, list[str]]) -> dict[str, str]:
    """Rules 2 and 3 of the policy: the non-recursive derived relations outside ``excluded``
    that are a subject's holdings (:data:`SMALL`) or filters of stored facts
    (:data:`FILTER`; module doc), reading only ``materialized`` relations, base relations and
    each other; each with its reason."""
    decision = program.relations.get(program.decision)
    derived = program.derived
    if decision is None or decision.arity != 3 or program.decision not in derived:
        return {}
    h = hierarchy_roles(program)
    objects = h.stored | h.closures
    recursive = recursive_components(program)
    domain = _Domains(program)
    subject, resource = domain.find((program.decision, 0)), domain.find((program.decision, 2))
    # relations built on the hierarchy: they grow with the objects
    users: dict[str, set[str]] = {}
    for head, ds in deps.items():
        for dep in ds:
            users.setdefault(dep, set()).add(head)
    grown: set[str] = set()
    stack = sorted(objects)
    while stack:
        r = stack.pop()
        for u in users.get(r, ()):
            if u not in grown:
                grown.add(u)
                stack.append(u)

    def candidate(rel: str) -> bool:
        return not (rel in excluded or rel in recursive or rel in materialized)

    def holdings(rel: str) -> bool:
        if rel in grown:
            return False
        cls = [domain.find((rel, c)) for c in range(program.relations[rel].arity)]
        if len(cls) != 2 or subject not in cls:  # a subject's holdings: (subject, what)
            return False
        if cls.count(subject) + cls.count(resource) > 1:  # subject × object
            return False
        return all(_connected(rule) for rule in program.rules_for(rel))

    chosen = {r: SMALL for r in sorted(derived) if candidate(r) and holdings(r)}
    # rule 3: what a filter may read its rows from (the hierarchy's relations hold objects)
    stored = ((set(program.relations) - derived) | materialized | set(chosen)) - objects

    def filtered(rule: ir.Rule) -> bool:
        """``rule`` reads a stored relation whose columns bind every head variable but
        attributes of their own kind (a replacement value)."""
        head = [(c, t.name) for c, t in enumerate(rule.head.args)
                if isinstance(t, ir.Var) and not is_anon(t)]
        for lit in rule.body:
            if not isinstance(lit, ir.Atom) or lit.rel not in stored:
                continue
            bound = term_vars(lit.args, named=True)
            kinds = {domain.find((lit.rel, c)) for c in range(len(lit.args))}
            kinds -= {subject, resource}
            if all(v in bound or domain.find((rule.head.rel, c)) in kinds for c, v in head):
                return _connected(rule)
        return False

    def tests(rule: ir.Rule) -> bool:
        """``rule`` reads more than one stored relation (else a lookup there is as cheap as
        one of a copy)."""
        return len(rule.body) > 1

    chosen.update((r, FILTER) for r in sorted(derived) if r not in chosen and candidate(r)
                  and all(filtered(rule) for rule in program.rules_for(r))
                  and any(tests(rule) for rule in program.rules_for(r)))
    while True:  # keep those reading only materialized, base or chosen relations
        drop = {r for r in chosen if any(d in derived and d not in chosen and d not in
                                         materialized for d in deps.get(r, ()))}
        if not drop:
            return chosen
        for r in drop:
            del chosen[r]


def _connected(rule: ir.Rule) -> bool:
    """Whether ``rule``'s positive atoms with variables are joined through shared variables
    (no cross product)."""
    groups = [set(term_vars(lit.args)) for lit in rule.body if isinstance(lit, ir.Atom)]
    groups = [g for g in groups if g]
    if not groups:
        return True
    joined, rest = set(groups[0]), groups[1:]
    while rest:
        near = [g for g in rest if g & joined]
        if not near:
            return False
        for g in near:
            joined |= g
        rest = [g for g in rest if not g & joined]
    return True


class _Domains:
    """Columns classed by the variables rules share: (relation, column) positions joined by
    one variable of one rule are in one class (union-find)."""

    def __init__(self, program: ir.Program) -> None:
        self.parent: dict[tuple[str, int], tuple[str, int]] = {}
        for rule in program.rules:
            seen: dict[str, tuple[str, int]] = {}
            for atom in (rule.head, *(lit.atom if isinstance(lit, ir.Neg) else lit
                                      for lit in rule.body if isinstance(lit, ir.Atom | ir.Neg))):
                for c, t in enumerate(atom.args):
                    if isinstance(t, ir.Var) and not is_anon(t):
                        pos = (atom.rel, c)
                        if t.name in seen:
                            self.union(seen[t.name], pos)
                        else:
                            seen[t.name] = pos

    def find(self, pos: tuple[str, int]) -> tuple[str, int]:
        root = pos
        while (up := self.parent.get(root, root)) != root:
            root = up
        while pos != root:
            self.parent[pos], pos = root, self.parent.get(pos, pos)
        return root

    def union(self, a: tuple[str, int], b: tuple[str, int]) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[ra] = rb
