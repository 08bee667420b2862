"""Atoms and literals with some of their variables bound: ground them, show them, match them
against rule heads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ...core import ir
from ...core.terms import is_anon, lit_terms, map_terms


def open_terms(args: tuple[ir.Term, ...], env: Mapping[str, ir.Value]) -> tuple[ir.Term, ...]:
    """Arguments with the bound variables replaced by their values."""
    return tuple(ir.Const(env[t.name]) if isinstance(t, ir.Var) and t.name in env else t
                 for t in args)


def free_vars(terms: tuple[ir.Term, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(t.name for t in terms if isinstance(t, ir.Var) and not is_anon(t)))


def show_open(t: ir.Term, env: Mapping[str, ir.Value]) -> str:
    if isinstance(t, ir.Const):
        return ir.show_value(t.value)
    if t.name in env:
        return ir.show_value(env[t.name])
    return "_" if is_anon(t) else t.name


def show_open_atom(rel: str, terms: tuple[ir.Term, ...]) -> str:
    if not terms:
        return rel
    return f"{rel}({', '.join(show_open(t, {}) for t in terms)})"


def show_lit(lit: ir.Lit, env: Mapping[str, ir.Value]) -> str:
    if isinstance(lit, ir.Atom):
        return show_open_atom(lit.rel, open_terms(lit.args, env))
    if isinstance(lit, ir.Neg):
        return f"not {show_open_atom(lit.atom.rel, open_terms(lit.atom.args, env))}"
    return f"{show_open(lit.left, env)} {lit.op} {show_open(lit.right, env)}"


def ground_atom(lit: ir.Lit, env: Mapping[str, ir.Value]) -> tuple[str, ir.Row] | None:
    if not isinstance(lit, ir.Atom):
        return None
    terms = open_terms(lit.args, env)
    if not all(isinstance(t, ir.Const) for t in terms):
        return None
    return lit.rel, tuple(t.value for t in terms if isinstance(t, ir.Const))


def ground(a: ir.Atom, env: Mapping[str, ir.Value]) -> ir.Row:
    return tuple(t.value if isinstance(t, ir.Const) else env[t.name] for t in a.args)


def show_term(t: ir.Term, env: Mapping[str, ir.Value]) -> str:
    if isinstance(t, ir.Const):
        return ir.show_value(t.value)
    if is_anon(t) or t.name not in env:
        return "_"
    return ir.show_value(env[t.name])


def show_partial(a: ir.Atom, env: Mapping[str, ir.Value]) -> str:
    if not a.args:
        return f"not {a.rel}"
    return f"not {a.rel}({', '.join(show_term(t, env) for t in a.args)})"


def unify_pattern(
    head: ir.Atom, pattern: tuple[ir.Term, ...]
) -> tuple[dict[str, ir.Value], tuple[ir.Lit, ...]] | None:
    """Unify a rule head with a goal pattern (constants and goal variables): the head
    variables bound to constants, and equalities between head variables the pattern forces."""
    parent: dict[tuple[str, Any], tuple[str, Any]] = {}

    def find(x: tuple[str, Any]) -> tuple[str, Any]:
        while parent.get(x, x) != x:
            x = parent[x]
        return x

    for h, p in zip(head.args, pattern, strict=True):
        a = find(("c", h.value) if isinstance(h, ir.Const) else ("r", h.name))
        b = find(("c", p.value) if isinstance(p, ir.Const) else ("g", p.name))
        if a == b:
            continue
        if a[0] == "c" and b[0] == "c" and (type(a[1]) is not type(b[1]) or a[1] != b[1]):
            return None
        if b[0] == "c":
            a, b = b, a
        parent[b] = a  # constants stay roots
    env: dict[str, ir.Value] = {}
    firsts: dict[tuple[str, Any], str] = {}
    extra: list[ir.Lit] = []
    for t in head.args:
        if isinstance(t, ir.Const) or t.name in env:
            continue
        root = find(("r", t.name))
        if root[0] == "c":
            env[t.name] = root[1]
        elif root in firsts and firsts[root] != t.name:
            eq = ir.Cmp("=", ir.Var(firsts[root]), t)
            if eq not in extra:
                extra.append(eq)
        else:
            firsts[root] = t.name
    return env, tuple(extra)


def rename_apart(rule: ir.Rule, pattern: tuple[ir.Term, ...]) -> ir.Rule:
    """``rule`` with its variables named for the goal ``pattern`` its head is matched with,
    so that a why-not tree never shows one name for two variables: a head variable matched
    with a goal variable takes the goal variable's name, and any other variable of the rule
    whose name the goal uses is renamed apart (`A` becomes `A1`). For `controls(A, x)` and
    the rule `controls(U, O) :- owns(U, A), ancestor_or_self(A, O)` the body reads
    `owns(A, A1), ancestor_or_self(A1, x)`."""
    goal = {t.name for t in pattern if isinstance(t, ir.Var) and not is_anon(t)}
    if not goal:
        return rule
    names: dict[str, str] = {}
    for h, p in zip(rule.head.args, pattern, strict=True):
        if (isinstance(h, ir.Var) and not is_anon(h) and h.name not in names
                and isinstance(p, ir.Var) and not is_anon(p)):
            names[h.name] = p.name
    own = [t.name for lit in (rule.head, *rule.body) for t in lit_terms(lit)
           if isinstance(t, ir.Var) and not is_anon(t)]
    used = goal | set(own)
    for name in dict.fromkeys(own):
        if name in names or name not in goal:
            continue
        k = 1
        while f"{name}{k}" in used:
            k += 1
        names[name] = f"{name}{k}"
        used.add(names[name])
    if all(k == v for k, v in names.items()):
        return rule

    def term(t: ir.Term) -> ir.Term:
        return ir.Var(names[t.name]) if isinstance(t, ir.Var) and t.name in names else t

    def atom(a: ir.Atom) -> ir.Atom:
        return ir.Atom(a.rel, tuple(term(t) for t in a.args))

    return replace(rule, head=atom(rule.head), body=tuple(map_terms(x, term)
                                                          for x in rule.body))


def canon(rel: str, terms: tuple[ir.Term, ...]) -> tuple[Any, ...]:
    """A goal pattern up to renaming of its variables."""
    names: dict[str, int] = {}
    out: list[Any] = [rel]
    for t in terms:
        if isinstance(t, ir.Const):
            out.append(("c", type(t.value).__name__, t.value))
        else:
            out.append(("v", names.setdefault(t.name, len(names))))
    return tuple(out)
