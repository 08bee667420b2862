"""Rules of the whole-platform review (spark_bridge/review.py) whose bodies are the same: their
body is evaluated once and each binding gives every one of their heads.

A decision relation is often many rules that differ only in the constant of their head: the
operations one privilege allows (``d(U, alter, T)``, ``d(U, update_statistics, T)``, … all from
one body ``object(T, table), usable(U, T), authorized(U, modify, T)``), or the listings every
user of a site may call. On Spark
each rule was a plan of its own, its joins computed once per rule (a plan's identical shuffles
are shared, its joins are not). :func:`groups` puts the rules whose bodies are the same up to
the names of their variables, and whose heads are of one relation with their variables in the
same places, in one group: the group's first rule is planned, and its bindings are turned into
each rule's head row (``explode`` of one row per head). The same rows, intervals included: a
rule's head row holds when its body's binding does, and the bindings of identical bodies are
the same.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from grantlog.engine.core import ir

from . import encoding


def _canon(rule: ir.Rule) -> tuple[Any, dict[str, str]]:
    """``rule``'s body and head with its variables named by first occurrence (body first),
    its head's constants left out; and the names given"""
    names: dict[str, str] = {}

    def term(t: ir.Term) -> Any:
        if isinstance(t, ir.Var):
            return names.setdefault(t.name, f"v{len(names)}")
        return ("const", type(t.value).__name__, t.value)

    body: list[Any] = []
    for lit in rule.body:
        if isinstance(lit, ir.Atom):
            body.append(("atom", lit.rel, tuple(map(term, lit.args))))
        elif isinstance(lit, ir.Neg):
            body.append(("not", lit.atom.rel, tuple(map(term, lit.atom.args))))
        else:
            body.append(("cmp", lit.op, term(lit.left), term(lit.right)))
    head = tuple(term(t) if isinstance(t, ir.Var) else None for t in rule.head.args)
    return (rule.head.rel, head, tuple(body)), names


def groups(rules: Iterable[ir.Rule]) -> list[tuple[ir.Rule, tuple[ir.Atom, ...]]]:
    """``rules`` in groups of the same body (up to variable names) and the same head but for
    its constants, in the order of their first rules: each group's first rule and every
    rule's head in the first rule's variables."""
    found: dict[Any, tuple[ir.Rule, list[ir.Atom], dict[str, str]]] = {}
    for rule in rules:
        key, names = _canon(rule)
        if key not in found:
            found[key] = (rule, [rule.head], names)
            continue
        _, heads, theirs = found[key]
        back = {c: n for n, c in theirs.items()}
        heads.append(ir.Atom(rule.head.rel, tuple(
            ir.Var(back[names[t.name]]) if isinstance(t, ir.Var) else t
            for t in rule.head.args)))
    return [(rule, tuple(heads)) for rule, heads, _ in found.values()]


def bounded(heads: Iterable[ir.Atom], prefer: int = 0) -> tuple[int, list[str]] | None:
    """A column where every one of ``heads`` (of one relation) has a constant, and those
    constants encoded (spark_bridge/encoding.py): the rows of the rules of these heads hold
    only these values there, so the relation's rows with another value there are none of
    their keys (``prefer``: that column when it is one; None: no such column)."""
    heads = list(heads)
    if not heads:
        return None
    some = [j for j in range(len(heads[0].args))
            if all(isinstance(h.args[j], ir.Const) for h in heads)]
    if not some:
        return None
    j = prefer if prefer in some else some[0]
    return j, sorted({encoding.encode(h.args[j].value) for h in heads})  # type: ignore[union-attr]


__all__ = ["bounded", "groups"]
