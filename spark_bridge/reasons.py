"""Which body literal a Spark reason reports: the premise that decided, not a type check.

``run(..., with_reasons=True)`` gives each decision row ``rule``, ``reason_rel`` and
``reason_row``: the deriving rule's name and one fact of its body. The fact reported is the
body atom that carries the subject's access, read from the rule's shape (no relation is known
by name):

1. never a magic atom of a demand rewrite (the bindings asked for), nor, while another atom is
   left, an atom over a relation playing a hierarchy role (engine/core/hierarchy_roles.py:
   the type relation ``entity(T, table)``, the edge or its closures: where the object sits,
   not who may act on it);
2. then the atom sharing the head's first variable (the subject, by the decision relation's
   convention ``allowed(subject, operation, resource)``);
3. then the atom sharing most of the head's variables;
4. then one naming a constant (``authorized(U, modify_table, T)``: the privilege that decided,
   rather than ``in_usable_schema(U, T)``, a prerequisite);
5. then the last in source order (authors write prerequisites first, the grant last).

>>> from grantlog.engine import compile_program
>>> p = compile_program('''
...   rel entity(o: string, t: string). rel usable(u: string, o: string).
...   rel authorized(u: string, p: string, o: string).
...   allowed(U, alter, T) :- entity(T, table), usable(U, T), authorized(U, modify, T).''')
>>> str(p.rules[0].body[reason_literal(p, p.rules[0])])
'authorized(U, modify, T)'
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from grantlog.engine.core import ir
from grantlog.engine.core.analyses import analysis
from grantlog.engine.core.hierarchy_roles import hierarchy_roles
from grantlog.engine.core.terms import is_anon


def _role_relations(program: ir.Program) -> frozenset[str]:
    roles = hierarchy_roles(program)
    return frozenset(r for r in (roles.edge, roles.type, roles.closure, roles.strict) if r)


def reason_literal(program: ir.Program, rule: ir.Rule, seeds: Collection[str] = (),
                   display: Mapping[str, str] | None = None) -> int | None:
    """The index in ``rule.body`` of the atom a reason reports (see the module doc), or None
    when the body has no positive atom but magic ones. ``display`` maps a rewritten
    relation's name to the original's (a demand rewrite's adorned names)."""
    roles = analysis(program, "spark_reason_roles", _role_relations)
    shown = display or {}
    head = [t.name for t in rule.head.args if isinstance(t, ir.Var) and not is_anon(t)]
    subject = head[0] if rule.head.args and isinstance(rule.head.args[0], ir.Var) else None
    best: tuple[tuple[int, ...], int] | None = None
    for i, lit in enumerate(rule.body):
        if not isinstance(lit, ir.Atom) or lit.rel in seeds:
            continue
        names = {t.name for t in lit.args if isinstance(t, ir.Var) and not is_anon(t)}
        role = lit.rel in roles or shown.get(lit.rel, lit.rel) in roles
        key = (int(not role), int(subject is not None and subject in names),
               len(names & set(head)), int(any(isinstance(t, ir.Const) for t in lit.args)), i)
        if best is None or key > best[0]:
            best = (key, i)
    return None if best is None else best[1]
