"""Term and value helpers every layer shares: the comparison order, anonymous variables and
matching a rule's head against a row."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from . import ir


def is_anon(t: ir.Term) -> bool:
    return isinstance(t, ir.Var) and t.name.startswith("_?")


def less(a: Any, b: Any) -> bool:
    """Total order used by comparisons: integers before strings, then natural order."""
    if type(a) is type(b):
        return bool(a < b)
    return isinstance(a, int)


def compare(op: str, a: Any, b: Any) -> bool:
    if op == "=":
        return bool(a == b)
    if op == "!=":
        return bool(a != b)
    if op == "<":
        return less(a, b)
    if op == "<=":
        return a == b or less(a, b)
    if op == ">":
        return less(b, a)
    if op == ">=":
        return a == b or less(b, a)
    raise ValueError(op)


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


def lit_atom(lit: ir.Lit) -> ir.Atom | None:
    """The atom of a positive or negated literal (None for a comparison)."""
    if isinstance(lit, ir.Atom):
        return lit
    if isinstance(lit, ir.Neg):
        return lit.atom
    return None


def lit_terms(lit: ir.Lit) -> tuple[ir.Term, ...]:
    """The terms of a literal: an atom's (or a negated atom's) arguments, a comparison's two
    sides."""
    atom = lit_atom(lit)
    if atom is not None:
        return atom.args
    assert isinstance(lit, ir.Cmp)
    return (lit.left, lit.right)


def term_vars(terms: Iterable[ir.Term], named: bool = False) -> set[str]:
    """The variables among ``terms`` (``named``: without the anonymous ones)."""
    return {t.name for t in terms if isinstance(t, ir.Var) and not (named and is_anon(t))}


def lit_vars(lit: ir.Lit, named: bool = False) -> set[str]:
    """The variables of a literal (``named``: without the anonymous ones)."""
    return term_vars(lit_terms(lit), named)


def atom_vars(lit: ir.Lit) -> set[str]:
    """The named variables of a positive or negated atom (none for a comparison): what
    reading it binds."""
    atom = lit_atom(lit)
    return set() if atom is None else term_vars(atom.args, named=True)


def distinct_vars(args: Iterable[ir.Term]) -> tuple[str, ...] | None:
    """The names of ``args`` when all are distinct named variables, else None."""
    args = tuple(args)
    names = tuple(t.name for t in args if isinstance(t, ir.Var) and not is_anon(t))
    return names if len(names) == len(args) == len(set(names)) else None


def map_terms(lit: ir.Lit, term: Callable[[ir.Term], ir.Term]) -> ir.Lit:
    """``lit`` with each of its terms replaced by ``term(t)`` (renaming, substitution)."""
    if isinstance(lit, ir.Atom):
        return ir.Atom(lit.rel, tuple(term(t) for t in lit.args))
    if isinstance(lit, ir.Neg):
        return ir.Neg(ir.Atom(lit.atom.rel, tuple(term(t) for t in lit.atom.args)))
    return ir.Cmp(lit.op, term(lit.left), term(lit.right))
