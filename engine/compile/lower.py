"""Checked AST → IR: relations, rules with anonymous variables renamed apart, facts, strata."""

from __future__ import annotations

import itertools

from grantlog.grammar import ast
from grantlog.grammar.formatter import body as format_body

from ..core import ir
from ..core.analyses import stratify
from ..core.facts import Facts
from .checks import Unit, body_atoms, fact_interval


class _Fresh:
    def __init__(self) -> None:
        self.n = itertools.count()

    def term(self, t: ast.Term) -> ir.Term:
        if isinstance(t, ast.Const):
            return ir.Const(t.value)
        if t.anonymous:
            return ir.Var(f"_?{next(self.n)}")
        return ir.Var(t.name)

    def atom(self, a: ast.Atom) -> ir.Atom:
        return ir.Atom(a.rel, tuple(self.term(t) for t in a.args))

    def lit(self, lit: ast.Literal) -> ir.Lit:
        if isinstance(lit, ast.Atom):
            return self.atom(lit)
        if isinstance(lit, ast.Negation):
            return ir.Neg(self.atom(lit.atom))
        return ir.Cmp(lit.op, self.term(lit.left), self.term(lit.right))


def lower_body(body: tuple[ast.Literal, ...]) -> tuple[ir.Lit, ...]:
    f = _Fresh()
    return tuple(f.lit(x) for x in body)


def _row(a: ast.Atom) -> ir.Row:
    return tuple(t.value for t in a.args if isinstance(t, ast.Const))


def lower(u: Unit, sources: dict[str, str], files: list[str]) -> ir.Program:
    relations: dict[str, ir.Relation] = {}
    for name, d in u.decls.items():
        relations[name] = ir.Relation(
            name, len(d.columns), tuple(c.name for c in d.columns),
            tuple(c.type for c in d.columns), d.doc, True, d.span, d.annotations,
        )
    for name, n in u.arity.items():
        if name not in relations:
            relations[name] = ir.Relation(
                name, n, tuple(f"c{i}" for i in range(n)), (None,) * n, (), False, None
            )

    rules: list[ir.Rule] = []
    facts = Facts()
    validity: dict[str, dict[ir.Row, tuple[float, float]]] = {}
    counts: dict[str, int] = {}
    tables = dict(u.fact_tables())
    for i, m in enumerate(u.modules):
        for st in m.statements:
            if isinstance(st, ast.Clause) and st.is_fact:
                facts.add(ir.Fact(st.head.rel, _row(st.head), st.head.span))
                iv = fact_interval(st)
                if iv is not None:  # engine/answer/validity.py
                    validity.setdefault(st.head.rel, {})[_row(st.head)] = iv
        if i in tables:  # the module's fact lines, read into rows
            facts.add_table(tables[i])
    for c in u.clauses():
        if c.is_fact:
            continue
        counts[c.head.rel] = counts.get(c.head.rel, 0) + 1
        name = c.label or f"{c.head.rel}#{counts[c.head.rel]}"
        f = _Fresh()
        rules.append(ir.Rule(
            len(rules), name, f.atom(c.head), tuple(f.lit(x) for x in c.body), c.doc, c.span,
            c.label is not None,
        ))

    tests: list[ir.TestCase] = []
    for m in u.modules:
        for st in m.statements:
            if not isinstance(st, ast.TestBlock):
                continue
            tfacts = tuple(ir.Fact(it.head.rel, _row(it.head), it.head.span)
                           for it in st.items if isinstance(it, ast.Clause))
            expects = tuple(
                ir.Expectation(lower_body(it.body), it.negated, format_body(it.body), it.span)
                for it in st.items if isinstance(it, ast.Expect)
            )
            tests.append(ir.TestCase(st.name, m.file, tfacts, expects, st.span))

    return ir.Program(relations, rules, facts, stratify(rules), tests, sources, files,
                      validity=validity)


__all__ = ["body_atoms", "lower", "lower_body", "stratify"]
