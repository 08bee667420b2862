"""Transitive closures answered by a graph search instead of tabled recursion.

A virtual relation whose rules are exactly ``rel(X, Y) :- edge(X, Y).`` and ``rel(X, Y) :-
rel(X, Z), edge(Z, Y).`` (or the right-linear ``edge(X, Z), rel(Z, Y)``), in either order, with
``edge`` stored and binary, is the transitive closure of ``edge`` (or, every ``edge`` atom
written reversed, of the reversed edge: ``Closure.flipped``). A lookup of it on one column
walks ``edge``'s index from the key, breadth first: each node once, so a cycle ends the walk,
and a few index reads per level of a hierarchy (engine/eval/demand.py ``DemandContext.closure``).
The shape is recognised on the IR by engine/core/analyses.py (:func:`edge_closure`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core import ir
from ..core.analyses import Closure
from ..core.index import stored_get

#: a node's seed rule, or None (:func:`seeder`)
Seed = Callable[[ir.Value], "int | None"] | None


def walk(c: Closure, index: Any, start: ir.Value, forward: bool,
         seed: Seed = None) -> dict[ir.Row, int]:
    """The closure's rows with ``start`` in the first column (``forward``: what ``start``
    reaches over ``index``, the edge's index on its first column, or on its second when the
    closure is ``flipped``) or in the second (what reaches ``start``, over the index on the
    other column), nearest first, each with the rule recorded for it. ``seed``: for a
    closure with ``seeds``, the seed rule holding a node (None: none), from :func:`seeder`."""
    out: dict[ir.Row, int] = {}
    if seed is not None and (rid := seed(start)) is not None:
        out[(start, start)] = rid
    queue = [start]
    rid = c.exit
    get, unique = stored_get(index)
    down = forward != c.flipped  # along the edge rows: (a, b) leads from a to b
    # each node reached is walked once: its row is new once (the start again only through a
    # cycle, and then its rows are all known)
    for node in queue:  # the queue grows while it is walked
        got = get(node)
        rows: Any = () if got is None else (got,) if unique else got
        for a, b in rows:
            nxt = b if down else a
            row = (start, nxt) if forward else (nxt, start)
            if row not in out:
                out[row] = rid
                queue.append(nxt)
        rid = c.step
    return out


def seeder(c: Closure, index: Callable[[str], Any]) -> Seed:
    """For a closure with ``seeds``: a node's seed rule (the first seed relation holding it
    in its first column, read over ``index(rel)``, the relation's index on it), or None."""
    if not c.seeds:
        return None
    gets = [(rid, stored_get(index(rel))[0]) for rid, rel in c.seeds]
    if len(gets) == 1:
        (rid0, get0), = gets
        return lambda x: rid0 if get0(x) is not None else None

    def seed(x: ir.Value) -> int | None:
        for rid, get in gets:
            if get(x) is not None:
                return rid
        return None
    return seed


def walker(c: Closure, index: Any, forward: bool,
           seed: Seed = None) -> Callable[[ir.Value], dict[ir.Row, int]]:
    """:func:`walk` over ``index``, as a function of the start. Over a unique index (every
    node has one edge that way: a tree walked up to its root) the walk is a chain, followed
    without a queue; it ends at a node without an edge or at a row met before (a cycle)."""
    get, unique = stored_get(index)
    if not unique:
        return lambda start: walk(c, index, start, forward, seed)
    exit, step = c.exit, c.step
    far = 1 if forward != c.flipped else 0  # the column of an edge row that leads on

    def chain(start: ir.Value) -> dict[ir.Row, int]:
        out: dict[ir.Row, int] = {}
        if seed is not None and (sid := seed(start)) is not None:
            out[(start, start)] = sid
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


__all__ = ["Closure", "Seed", "seeder", "walk", "walker"]
