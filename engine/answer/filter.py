"""Data filters: the decision (or a row relation) partially evaluated with the resource (or
the row) unknown, over one read of a reasoner (the partial evaluation itself is
engine/answer/residual.py; the hierarchy's walks engine/answer/hierarchy.py).

The hierarchy is read through its roles (engine/core/hierarchy_roles.py), never by name: a
model declaring ``@hierarchy(edge) rel parent_of(...)`` is filtered exactly like the prelude's
``contains``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any, Protocol

from grantlog.grammar.diagnostics import GrantlogError, Span, error

from ..core import ir
from ..core.hierarchy_roles import hierarchy_roles
from ..core.results import Answers
from ..eval.demand import DemandContext
from . import vocabulary
from .conditions import FALSE, Cond, conj, disj
from .hierarchy import Hierarchy, rollup, under_chains
from .residual import KNOWN, SYM, Partial, Residual, RowFilter, row_relations, unsupported


class Host(Protocol):
    """What listing and filters read of the reasoner they answer for (engine/answer/
    reasoner.py's ``Reasoner``)."""

    program: ir.Program
    revision: int
    _base: dict[str, dict[ir.Row, None]]
    _levels: dict[Any, Any]
    _symmetry: tuple[dict[str, tuple[int, ...]], set[ir.Value]] | None

    def _read(self) -> AbstractContextManager[None]: ...

    def _context(self) -> DemandContext: ...

    def _decision(self) -> str: ...

    def _relation(self, rel: str) -> ir.Relation: ...

    def wait_for(self, revision: int, timeout: float | None = None) -> int: ...

    def query(self, goal: str, at_least: int | None = None,
              ) -> Answers[dict[str, ir.Value]]: ...


def residual(r: Host, ctx: DemandContext, subject: str, operation: str,
             type: str | None, h: Hierarchy | None = None) -> Cond:
    """The decision's condition on the resource for ``subject`` and ``operation`` (``h``:
    the view's hierarchy, shared with the caller's walks)."""
    roles = hierarchy_roles(r.program)
    if roles.walkable and h is None:
        h = Hierarchy(ctx, roles, r._levels)
    found = Partial(r.program, ctx, r._base, r._levels, h).atom(
        r._decision(), (subject, operation, SYM))
    cond = disj([c for _, c in found])
    cond = cond if type is None else conj([("type", type), cond])
    if h is not None and roles.walkable and h.tree:
        cond = rollup(cond, h)
    return cond


def data_filter(r: Host, subject: str, operation: str, type: str | None = None,
                at_least: int | None = None, strict: bool = False) -> Residual:
    """``Reasoner.filter``: the condition a resource must meet for ``decision(subject,
    operation, R)``; the residual's ``holds`` asks the hierarchy's roles of a known
    resource. A filter that admits nothing warns of the question's unknown constants
    (``strict``: raises; engine/answer/vocabulary.py)."""
    if at_least is not None:
        r.wait_for(at_least)
    roles = hierarchy_roles(r.program)
    with r._read():
        ctx = r._context()
        h = Hierarchy(ctx, roles, r._levels) if roles.walkable else None
        cond = residual(r, ctx, subject, operation, type, h)
        revision = r.revision
        chains = under_chains(cond, h) if h is not None else {}
        # the type always (a condition on it is not false when it is a typo), the subject and
        # the operation when the filter admits nothing
        rel = r._decision()
        args = vocabulary.hierarchy_args(r.program, rel, type, None)
        if cond == FALSE:
            args += vocabulary.decision_args(r.program, rel, (subject, operation, None))
        found = vocabulary.settle(vocabulary.unknown(r.program, ctx, args), strict)

    def asked(rel: str | None, args: str, var: str, x: ir.Value) -> set[ir.Value] | None:
        """``rel(args)`` with ``x`` in the place of ``{}``: the values of ``var``."""
        if rel is None:
            return None
        return {b[var] for b in r.query(f"{rel}({args.format(ir.show_value(x))})")}

    def ancestors(x: ir.Value) -> set[ir.Value]:
        got = asked(roles.closure, "A, {}", "A", x)
        return {x} if got is None else got

    def types(x: ir.Value) -> set[ir.Value]:
        if roles.kinds:  # types as unary relations: the ones holding x
            return {k for k in roles.kinds
                    if r.query(f"{k}({ir.show_value(x)})")}
        return asked(roles.type, "{}, T", "T", x) or set()

    def parents(x: ir.Value) -> set[ir.Value]:
        return asked(roles.edge, "{}, P" if roles.upward else "P, {}", "P", x) or set()

    got = Residual(subject, operation, cond, revision, ancestors, types, parents, chains)
    got.warnings = found
    return got


def row_filter(r: Host, subject: str, table: str, relation: str = "row_visible",
               at_least: int | None = None) -> RowFilter:
    """``Reasoner.row_filter``: the condition a row of ``table`` must meet for
    ``relation(subject, table, R)``."""
    rel = r._relation(relation)
    if rel.arity != 3:
        raise GrantlogError([error(
            "bad-request", f"a row filter asks `{relation}(subject, table, row)`; "
            f"`{relation}` has {rel.arity} columns", Span("<api>", 0, 0, 0, 0))])
    if not row_relations(r.program):
        raise unsupported("row filters need the stored relations `row(table, row)` and "
                          "`cell(row, column, value)`", None)
    if at_least is not None:
        r.wait_for(at_least)
    with r._read():
        p = Partial(r.program, r._context(), r._base)
        p.rows, p.table = True, table
        cond = disj([c for _, c in p.atom(relation, (subject, table, SYM))])
        revision = r.revision
    return RowFilter(subject, table, relation, cond, revision)


def filter_lookups(r: Host, ctx: DemandContext, rel: str,
                   ) -> Iterator[tuple[str, tuple[int, ...]]]:
    """For ``prepare``: the (relation, columns) lookups the walks of list and filter and a
    filter's partial evaluation make, when the model's hierarchy is walkable (none else)."""
    roles = hierarchy_roles(r.program)
    for other in roles.others:  # the other hierarchies' walks (a closure over their edges)
        if other.edge is not None:
            yield other.edge, (0,)
            yield other.edge, (1,)
    if not roles.walkable:
        return
    for stored in sorted(roles.stored):
        yield stored, (0,)
        if stored not in roles.kinds:
            yield stored, (1,)
    partial = Partial(r.program, ctx, r._base, r._levels)
    partial.warm(rel, (KNOWN, KNOWN, SYM))
    yield from partial.lookups
