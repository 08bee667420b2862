"""A program cut down to what some relations need: their dependency cone.

``grantlog eval -r member`` needs ``member``'s facts, not the whole model evaluated: the
relations a relation depends on (its rules' bodies, positive or negated, transitively) are its
cone; :func:`restrict` keeps their declarations, rules and facts and drops the rest, so that a
reasoner of the result evaluates only those. Every relation of the cone keeps its rows: nothing
outside the cone can change them.

>>> from grantlog.engine import compile_program
>>> p = compile_program('a(1). b(X) :- a(X). c(X) :- b(X), not d(X). d(2).')
>>> sorted(cone(p, ["b"]))
['a', 'b']
>>> sorted(restrict(p, ["c"]).relations)
['a', 'b', 'c', 'd']
>>> [str(r) for r in restrict(p, ["b"]).rules]
['b(X) :- a(X).']
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from ..core import ir
from ..core.analyses import program_dependencies, stratify
from ..core.facts import Facts


def cone(program: ir.Program, relations: Iterable[str]) -> frozenset[str]:
    """``relations`` and every relation they depend on; an unknown name is
    ``unknown-relation`` (with the closest name)."""
    names = list(relations)
    for rel in names:
        program.relation(rel)
    deps = program_dependencies(program)
    seen: set[str] = set()
    stack = names
    while stack:
        rel = stack.pop()
        if rel not in seen:
            seen.add(rel)
            stack.extend(deps.get(rel, ()))
    return frozenset(seen)


def restrict(program: ir.Program, relations: Iterable[str]) -> ir.Program:
    """``program`` with only the relations, rules and facts of ``relations``' :func:`cone`
    (no tests; the rules renumbered, the strata computed again). The result is for
    evaluating those relations: its relation declarations differ from ``program``'s, so it
    is not a program to open a store with."""
    keep = cone(program, relations)
    kept = [r for r in program.rules if r.head.rel in keep]
    rules = [dataclasses.replace(r, index=i) for i, r in enumerate(kept)]
    return ir.Program(
        {n: r for n, r in program.relations.items() if n in keep}, rules,
        Facts.of(program.facts).restrict(keep), stratify(rules), [], program.sources,
        program.files, [], program.decision, program.virtual & keep,
        validity={r: rows for r, rows in program.validity.items() if r in keep})


__all__ = ["cone", "restrict"]
