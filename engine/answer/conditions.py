"""Filter conditions: the formula over the unknown resource that engine/answer/residual.py builds.

* ``("is", v)``: the resource is ``v``; ``("in", values)``: one of them;
* ``("type", t)``: ``entity(R, t)``;
* ``("under", a)``: ``ancestor_or_self(a, R)`` (the prelude's hierarchy);
* ``("parent", p)``: ``contains(p, R)``;
* ``("cell", column, value)``: a row filter's row holds ``value`` in ``column``;
* ``("and", parts)``, ``("or", parts)``, ``("not", part)``, ``("true",)``, ``("false",)``.

``conj``/``disj``/``neg`` build them simplified; ``to_json``/``from_json`` convert;
``compile_cond`` decides one for a known resource.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core import ir

Cond = tuple[Any, ...]
TRUE: Cond = ("true",)
FALSE: Cond = ("false",)


def _flat(parts: Sequence[Cond], op: str, absorbing: Cond, neutral: Cond) -> list[Cond] | None:
    """``parts`` of an ``op`` (``and``/``or``) flattened, without ``neutral`` ones and
    repeats; None when one is ``absorbing`` (the whole is)."""
    out: list[Cond] = []
    for p in parts:
        if p == absorbing:
            return None
        if p != neutral:
            out.extend(p[1] if p[0] == op else (p,))
    return list(dict.fromkeys(out))


def conj(parts: Sequence[Cond]) -> Cond:
    uniq = _flat(parts, "and", FALSE, TRUE)
    if uniq is None:
        return FALSE
    if not uniq:
        return TRUE
    return uniq[0] if len(uniq) == 1 else ("and", tuple(uniq))


def disj(parts: Sequence[Cond]) -> Cond:
    uniq = _flat(parts, "or", TRUE, FALSE)
    if uniq is None:
        return TRUE
    if not uniq:
        return FALSE
    if len(uniq) == 1:
        return uniq[0]
    # what every alternative requires is required once: (a ∧ x) ∨ (a ∧ y) = a ∧ (x ∨ y),
    # and an alternative that requires no more than another makes it redundant (a ∨ (a ∧ x)
    # = a), so a user's grants become one set of objects to be under
    common = set(uniq[0][1]) if uniq[0][0] == "and" else {uniq[0]}
    for p in uniq[1:]:
        common &= set(p[1]) if p[0] == "and" else {p}
        if not common:
            break
    if common:
        rest = [conj([q for q in p[1] if q not in common]) if p[0] == "and" else TRUE
                for p in uniq]
        shared = [q for q in (uniq[0][1] if uniq[0][0] == "and" else (uniq[0],))
                  if q in common]
        return conj([*shared, disj(rest)])
    singles = {p for p in uniq if p[0] != "and"}
    kept = [p for p in uniq if p[0] != "and" or singles.isdisjoint(p[1])]
    return kept[0] if len(kept) == 1 else ("or", tuple(kept))


def neg(c: Cond) -> Cond:
    if c == TRUE:
        return FALSE
    if c == FALSE:
        return TRUE
    if c[0] == "not":
        return c[1]  # type: ignore[no-any-return]
    return ("not", c)


def to_json(c: Cond) -> Any:
    tag = c[0]
    if tag in ("true", "false"):
        return tag == "true"
    if tag in ("and", "or"):
        return {tag: [to_json(p) for p in c[1]]}
    if tag == "not":
        return {"not": to_json(c[1])}
    if tag == "in":
        return {"in": sorted(c[1], key=ir.value_key)}
    if tag == "cell":
        return {"cell": [c[1], c[2]]}
    return {tag: c[1]}


def from_json(c: Any) -> Cond:
    """A condition back from :func:`to_json`."""
    if c is True or c is False:
        return ("true",) if c else ("false",)
    ((tag, v),) = c.items()
    if tag in ("and", "or"):
        return (tag, tuple(from_json(p) for p in v))
    if tag == "not":
        return ("not", from_json(v))
    if tag == "in":
        return ("in", frozenset(v))
    if tag == "cell":
        return ("cell", v[0], v[1])
    return (tag, v)


Test = Any  # a compiled condition: (x, above(x), types(x), parents(x)) -> bool


def compile_cond(c: Cond) -> Test:
    """``c`` as a function of a resource's name, ancestors-or-self, types and parents; a
    disjunction's ``under``/``is``/``type``/``parent`` parts are one set test each."""
    tag = c[0]
    if tag == "true":
        return lambda x, a, t, p: True
    if tag == "false":
        return lambda x, a, t, p: False
    if tag == "is":
        v = c[1]
        return lambda x, a, t, p: x == v
    if tag == "in":
        vs = c[1]
        return lambda x, a, t, p: x in vs
    if tag == "under":
        v = c[1]
        return lambda x, a, t, p: v in a
    if tag == "type":
        v = c[1]
        return lambda x, a, t, p: v in t
    if tag == "parent":
        v = c[1]
        return lambda x, a, t, p: v in p
    if tag == "not":
        f = compile_cond(c[1])
        return lambda x, a, t, p: not f(x, a, t, p)
    if tag == "and":
        fs = [compile_cond(q) for q in c[1]]
        return lambda x, a, t, p: all(f(x, a, t, p) for f in fs)
    assert tag == "or"
    under = frozenset(q[1] for q in c[1] if q[0] == "under")
    names = frozenset(v for q in c[1] if q[0] in ("is", "in")
                      for v in ((q[1],) if q[0] == "is" else q[1]))
    types = frozenset(q[1] for q in c[1] if q[0] == "type")
    parents = frozenset(q[1] for q in c[1] if q[0] == "parent")
    rest = [compile_cond(q) for q in c[1] if q[0] not in ("under", "is", "in", "type",
                                                           "parent")]

    def any_of(x: Any, a: Any, t: Any, p: Any) -> bool:
        return (not under.isdisjoint(a) or x in names or not types.isdisjoint(t)
                or not parents.isdisjoint(p) or any(f(x, a, t, p) for f in rest))
    return any_of


def row_holds(c: Cond, cells: dict[Any, Any]) -> bool:
    """A row filter's condition decided for a row given as ``{column: value}``."""
    tag = c[0]
    if tag in ("true", "false"):
        return bool(tag == "true")
    if tag == "cell":
        return c[1] in cells and bool(cells[c[1]] == c[2])
    if tag == "not":
        return not row_holds(c[1], cells)
    if tag == "and":
        return all(row_holds(p, cells) for p in c[1])
    if tag == "or":
        return any(row_holds(p, cells) for p in c[1])
    raise ValueError(f"`{tag}` says something of a resource, not of a row")


def mentioned(c: Cond) -> set[Any]:
    """The objects ``c`` names (in ``is``, ``in``, ``under`` and ``parent``)."""
    tag = c[0]
    if tag in ("and", "or"):
        return set().union(*(mentioned(p) for p in c[1]))
    if tag == "not":
        return mentioned(c[1])
    if tag == "in":
        return set(c[1])
    if tag in ("is", "under", "parent"):
        return {c[1]}
    return set()
