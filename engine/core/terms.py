"""Term and value helpers every layer shares: the comparison order, anonymous variables and
matching a rule's head against a row."""

from __future__ import annotations

from typing import Any

from . import ir


def is_anon(t: ir.Term) -> bool:
    return isinstance(t, ir.Var) and t.name.startswith("_?")


def _lt(a: Any, b: Any) -> bool:
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
        return _lt(a, b)
    if op == "<=":
        return a == b or _lt(a, b)
    if op == ">":
        return _lt(b, a)
    if op == ">=":
        return a == b or _lt(b, a)
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
