"""``list`` and ``who``: the resources a subject may act on, the subjects that may act on a
resource, over one read of a reasoner.

``type=`` and ``within=`` read the hierarchy's roles (engine/core/hierarchy_roles.py): the
relation declared ``@hierarchy(type)`` and the one declared ``@hierarchy(closure)`` (or
recognised as such), never a relation by name.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence

from grantlog.grammar.diagnostics import GrantlogError, Span, error

from ..core import ir
from ..core.hierarchy_roles import hierarchy_roles
from ..core.index import stored_get
from ..core.results import Answers
from ..eval import symmetry
from ..eval.demand import DemandContext
from . import vocabulary
from .conditions import conj
from .filter import Host, residual
from .hierarchy import Hierarchy, enumerate_admitted


def sorted_answers(found: Iterable[ir.Value], revision: int,
                   distinct: bool = False) -> Answers[ir.Value]:
    """Distinct values (``distinct``: ``found`` has no duplicates) in value order: the
    natural order when all are strings or all ints (sorting a mix raises)."""
    values = found if distinct else set(found)
    try:
        return Answers(sorted(values), revision)
    except TypeError:
        return Answers(sorted(values, key=ir.value_key), revision)


def page(answers: Answers[ir.Value], after: ir.Value | None,
         limit: int | None) -> Answers[ir.Value]:
    """The sorted ``answers`` after ``after`` (not included), at most ``limit`` of them."""
    if after is None and limit is None:
        return answers
    if limit is not None and limit < 0:
        raise GrantlogError([error("bad-request", f"`limit` must be 0 or more, not {limit}",
                                   Span("<api>", 0, 0, 0, 0))])
    start = 0 if after is None else ir.position_after(answers, after)
    end = len(answers) if limit is None else start + limit
    return Answers(answers[start:end], answers.revision)


def list_resources(
    r: Host, subject: str, operation: str, type: str | None = None,
    within: str | None = None, at_least: int | None = None,
    after: ir.Value | None = None, limit: int | None = None, strict: bool = False,
) -> Answers[ir.Value]:
    """``Reasoner.list`` (see its doc); an empty answer warns of its unknown constants
    (``strict``: raises; engine/answer/vocabulary.py)."""
    if at_least is not None:
        r.wait_for(at_least)
    rel = r._decision()
    roles = hierarchy_roles(r.program)
    type_rel = roles.need("type", "`list(type=)`") if type is not None else None
    if type is not None and roles.type is None:  # types as unary relations: that relation
        type_rel = None
    closure = roles.need("closure", "`list(within=)`") if within is not None else None
    fast = list_filtered(r, subject, operation, type, within)
    if fast is not None:  # through the filter: walked down from what it admits
        got = page(sorted_answers(fast[0], fast[1], distinct=True), after, limit)
        return typos(r, rel, (subject, operation, None), type, within, got, strict)
    with r._read():
        ctx = r._context()
        if closure is None or within is None:
            found = [row[2] for row in ctx.lookup(rel, (0, 1), (subject, operation))]
        else:
            found = [row[1] for row in ctx.lookup(closure, (0,), (within,))]
        known: set[tuple[str, int]] = set()
        if type_rel is not None:
            get, unique = (stored_get(ctx.base_index(type_rel, (0,)))
                           if type_rel not in r.program.derived else (None, False))
            if get is not None and unique:  # one type per object
                found = [x for x, row in zip(found, map(get, found), strict=True)
                         if row is not None and row[1] == type]
                known.add((type_rel, 0))  # each candidate's one row: (x, type)
            else:
                types = ctx.F[type_rel]
                found = [x for x in found if (x, type) in types]
        elif type is not None:  # the unary relation named `type` (none: nothing)
            t = r.program.relations.get(str(type))
            if t is None or t.arity != 1:
                found = []
            elif t.name in r.program.virtual:
                found = [x for x in found if ctx.lookup(t.name, (0,), (x,))]
            else:
                members = ctx.F[t.name]
                found = [x for x in found if (x,) in members]
        if within is not None:  # decided last: the cheap filters first
            decided: list[ir.Value] = []
            for kind in kinds(r, ctx, found, {subject, operation}, known):
                if ctx.lookup(rel, (0, 1, 2), (subject, operation, kind[0])):
                    decided += kind
            found = decided
        revision = r.revision
    got = page(sorted_answers(found, revision), after, limit)
    return typos(r, rel, (subject, operation, None), type, within, got, strict)


def typos(r: Host, rel: str, row: tuple[ir.Value | None, ...], type: ir.Value | None,
          within: ir.Value | None, answers: Answers[ir.Value], strict: bool,
          ) -> Answers[ir.Value]:
    """``answers`` with the warnings of the question's unknown constants when it is empty
    (engine/answer/vocabulary.py; ``strict``: raised)."""
    if answers:
        return answers
    program = r.program
    args = [*vocabulary.decision_args(program, rel, row),
            *vocabulary.hierarchy_args(program, rel, type, within)]
    with r._read():
        return vocabulary.answered(program, r._context(), args, answers, strict)


def list_filtered(r: Host, subject: str, operation: str, type: str | None,
                  within: ir.Value | None = None,
                  ) -> tuple[builtins.list[ir.Value], int] | None:
    """``list`` through the decision's filter, when the model's hierarchy is walkable
    (engine/core/hierarchy_roles.py) and the filter bounds the resources: output-sensitive
    (the subtrees the filter names, not every resource); None otherwise. ``within``: the
    filter and ``under within`` (the hierarchy's closure): the walk starts at ``within``,
    with what the subject holds above it read once on the way up (engine/answer/hierarchy.py
    ``enumerate_admitted``), so it costs the subtree and the subject's grants, not the
    platform."""
    roles = hierarchy_roles(r.program)
    if not roles.walkable or (type is not None and roles.type is None
                              and type not in roles.kinds):
        return None
    with r._read():
        ctx = r._context()
        h = Hierarchy(ctx, roles, r._levels)
        try:
            cond = residual(r, ctx, subject, operation, type, h)
        except GrantlogError as err:
            if err.diagnostics and err.diagnostics[0].code == "filter-unsupported":
                return None
            raise
        if within is not None:
            cond = conj([cond, ("under", within)])
        got = enumerate_admitted(cond, h)
        return None if got is None else (got, r.revision)


def kinds(r: Host, ctx: DemandContext, candidates: Sequence[ir.Value],
          fixed: set[ir.Value], known: set[tuple[str, int]] | None = None,
          ) -> builtins.list[builtins.list[ir.Value]]:
    """``candidates`` grouped into values no rule can tell apart (engine/eval/symmetry.py):
    one decision answers for each group. Each candidate alone when the rules compare values by
    order. ``known``: (relation, column) pairs where the caller found that every candidate has
    one row, the same but for the candidate; a relation whose only counting column is one of
    them is not read again."""
    if r._symmetry is None:
        program = r.program
        cols: dict[str, set[int]] = {}
        if symmetry.generic(program):
            for rel, c in symmetry.reachable_columns(program, r._decision(), 2):
                cols.setdefault(rel, set()).add(c)
        r._symmetry = ({rel: tuple(sorted(c)) for rel, c in cols.items()},
                       symmetry.constants(program))
    columns, consts = r._symmetry
    if not columns:
        return [[x] for x in candidates]
    full = ctx.full
    stored = {rel: c for rel, c in columns.items()
              if (r._base[rel] if rel in r._base else full.get(rel))}
    for rel, col in known or ():
        if stored.get(rel) == (col,) and rel not in r._base:
            del stored[rel]  # the one column that counts: the same row for everyone
    base = {rel: r._base.get(rel) for rel in stored}
    return symmetry.kinds(candidates, stored, ctx.base_index, base, fixed | consts)


def who(r: Host, operation: str, resource: str,
        at_least: int | None = None, strict: bool = False) -> Answers[ir.Value]:
    """``Reasoner.who``: the subjects that may perform ``operation`` on ``resource``."""
    if at_least is not None:
        r.wait_for(at_least)
    rel = r._decision()
    with r._read():
        found = {row[0] for row in r._context().lookup(rel, (1, 2), (operation, resource))}
        revision = r.revision
    got = Answers(sorted(found, key=ir.value_key), revision)
    return typos(r, rel, (None, operation, resource), None, None, got, strict)
