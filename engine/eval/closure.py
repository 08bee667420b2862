"""Transitive closures answered by a graph search instead of tabled recursion.

A virtual relation whose rules are exactly ``rel(X, Y) :- edge(X, Y).`` and ``rel(X, Y) :-
rel(X, Z), edge(Z, Y).`` (or the right-linear ``edge(X, Z), rel(Z, Y)``), in either order, with
``edge`` stored and binary, is the transitive closure of ``edge``. A lookup of it on one column
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


__all__ = ["Closure", "walk", "walker"]
