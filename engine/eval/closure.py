"""Transitive closures answered by a graph search instead of tabled recursion.

A virtual relation whose rules are exactly ``rel(X, Y) :- edge(X, Y).`` and ``rel(X, Y) :-
rel(X, Z), edge(Z, Y).`` (or the right-linear ``edge(X, Z), rel(Z, Y)``), in either order, with
``edge`` stored and binary, is the transitive closure of ``edge``. A lookup of it on one column
walks ``edge``'s index from the key, breadth first: each node once, so a cycle ends the walk,
and a few index reads per level of a hierarchy (engine/demand.py ``DemandContext.closure``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..core import ir
from ..core.index import stored_get
from ..core.terms import is_anon


@dataclass(frozen=True)
class Closure:
    """A relation answered as the transitive closure of ``edge``: rows over a direct edge are
    recorded as derived by rule ``exit``, the others by rule ``step``."""

    edge: str
    exit: int
    step: int


def detect(rules: Sequence[ir.Rule], program: ir.Program) -> Closure | None:
    """The closure the two ``rules`` of a relation define, or None (any other rule set). The
    caller checks that the relation is virtual and alone in its recursive component."""
    if len(rules) != 2:
        return None
    exits = [(r, e) for r in rules if (e := _exit_edge(r, program)) is not None]
    if len(exits) != 1:
        return None
    ex, edge = exits[0]
    step = rules[1] if rules[0] is ex else rules[0]
    return Closure(edge, ex.index, step.index) if _is_step(step, edge) else None


def walk(c: Closure, index: Any, start: ir.Value, forward: bool) -> dict[ir.Row, int]:
    """The closure's rows with ``start`` in the first column (``forward``: what ``start``
    reaches over ``index``, the edge's index on its first column) or in the second (what
    reaches ``start``, over the index on the second column), nearest first, each with the rule
    recorded for it."""
    out: dict[ir.Row, int] = {}
    queue = [start]
    rid = c.exit
    get, unique = stored_get(index)
    # each node reached is walked once: its row is new once (the start again only through a
    # cycle, and then its rows are all known)
    for node in queue:  # the queue grows while it is walked
        got = get(node)
        rows: Any = () if got is None else (got,) if unique else got
        for a, b in rows:
            nxt = b if forward else a
            row = (start, nxt) if forward else (nxt, start)
            if row not in out:
                out[row] = rid
                queue.append(nxt)
        rid = c.step
    return out


def walker(c: Closure, index: Any, forward: bool) -> Callable[[ir.Value], dict[ir.Row, int]]:
    """:func:`walk` over ``index``, as a function of the start. Over a unique index (every
    node has one edge that way: a tree walked up to its root) the walk is a chain, followed
    without a queue; it ends at a node without an edge or at a row met before (a cycle)."""
    get, unique = stored_get(index)
    if not unique:
        return lambda start: walk(c, index, start, forward)
    exit, step = c.exit, c.step
    far = 1 if forward else 0  # the column of an edge row that leads on

    def chain(start: ir.Value) -> dict[ir.Row, int]:
        out: dict[ir.Row, int] = {}
        rid = exit
        edge = get(start)
        while edge is not None:
            nxt = edge[far]
            row = (start, nxt) if forward else (nxt, start)
            if row in out:
                break
            out[row] = rid
            rid = step
            edge = get(nxt)
        return out
    return chain


def _vars(args: tuple[ir.Term, ...]) -> tuple[str, ...] | None:
    """The names of ``args`` when all are distinct named variables."""
    names = tuple(t.name for t in args if isinstance(t, ir.Var) and not is_anon(t))
    return names if len(names) == len(args) == len(set(names)) else None


def _exit_edge(rule: ir.Rule, program: ir.Program) -> str | None:
    """The edge relation when ``rule`` is ``rel(X, Y) :- edge(X, Y).`` with ``edge`` stored
    (not virtual) and binary."""
    head = _vars(rule.head.args)
    if head is None or len(head) != 2 or len(rule.body) != 1:
        return None
    lit = rule.body[0]
    if (not isinstance(lit, ir.Atom) or lit.rel == rule.head.rel or lit.rel in program.virtual
            or _vars(lit.args) != head):
        return None
    return lit.rel


def _is_step(rule: ir.Rule, edge: str) -> bool:
    """Whether ``rule`` is ``rel(X, Y) :- rel(X, Z), edge(Z, Y).`` or ``rel(X, Y) :-
    edge(X, Z), rel(Z, Y).`` (body in any order)."""
    head = _vars(rule.head.args)
    if head is None or len(rule.body) != 2:
        return False
    atoms = {lit.rel: lit for lit in rule.body if isinstance(lit, ir.Atom)}
    rec, ed = atoms.get(rule.head.rel), atoms.get(edge)
    if len(atoms) != 2 or rec is None or ed is None:
        return False
    r, e = _vars(rec.args), _vars(ed.args)
    if r is None or e is None:
        return False
    x, y = head
    left = r[0] == x and e[1] == y and r[1] == e[0]  # rel(X, Z), edge(Z, Y)
    right = e[0] == x and r[1] == y and e[1] == r[0]  # edge(X, Z), rel(Z, Y)
    return (left or right) and len({x, y, r[1] if left else e[1]}) == 3
