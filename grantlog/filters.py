"""Data filters rendered as SQL (sqlglot) for a catalog table the caller describes.

A :class:`Layout` says which table holds the resources and which of its columns hold the id,
the type, the parent and (optionally) a materialized path — the ids from the root down to the
resource, each followed by the separator, e.g. ``/m1/m1.c1/m1.c1.s1/``::

    # layout.toml
    table = "catalog_objects"
    id = "id"
    type = "kind"           # optional: needed by filters that name a type
    parent = "parent_id"    # optional: "under X" by a recursive query
    path = "path"           # optional: "under X" by a substring test (faster, and Spark SQL)
    path_separator = "/"    # must not occur in any id: the path is split on it

:func:`to_sql` renders a residual (``Reasoner.filter``) as a WHERE condition for SQLite,
PostgreSQL, Spark SQL or Trino; :func:`select_sql` as the whole query of the ids. A condition
the layout cannot express (a type without a type column, "under" without a parent or path)
is refused with ``filter-layout``, never rendered as one that admits more.

Rows and columns of a table (rules/gravitino_data.gl): :func:`row_filter_sql` renders a row
filter (``Reasoner.row_filter``, conditions on the row's cells) as a condition over the
table's own columns, and :func:`mask_sql` a column mask (:data:`MASKS`) as the expression
that replaces the column.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlglot import exp

from grantlog.engine.conditions import Cond
from grantlog.engine.residual import Residual, RowFilter
from grantlog.grammar.diagnostics import GrantlogError, Span, error
from grantlog.tomlfile import read_toml

DIALECTS = ("sqlite", "postgres", "spark", "trino")


@dataclass(frozen=True)
class Layout:
    table: str
    id: str = "id"
    type: str | None = None
    parent: str | None = None
    path: str | None = None
    path_separator: str = "/"

    @staticmethod
    def load(path: str | Path) -> Layout:
        data = read_toml(path, "bad-layout", "the layout")
        return Layout.from_dict(data, Span(str(path), 0, 0, 0, 0))

    @staticmethod
    def from_dict(data: Any, where: Span | None = None) -> Layout:
        """A layout from its fields (a layout file's, a request's), checked."""
        where = where or Span("<layout>", 0, 0, 0, 0)
        known = set(Layout.__dataclass_fields__)
        unknown = sorted(set(data) - known) if isinstance(data, dict) else []
        if not isinstance(data, dict) or unknown or "table" not in data or not all(
                isinstance(v, str) for v in data.values()):
            raise GrantlogError([error(
                "bad-layout", "a layout names `table` and any of "
                f"{', '.join(sorted(known - {'table'}))}, each a string"
                + (f" (unknown: {', '.join(unknown)})" if unknown else ""), where)])
        return Layout(**data)


def check_dialect(dialect: str) -> None:
    if dialect not in DIALECTS:
        raise GrantlogError([error("bad-option", f"`{dialect}` is not one of "
                                   f"{', '.join(DIALECTS)}", Span("<options>", 0, 0, 0, 0))])


def layout_error(message: str) -> GrantlogError:
    return GrantlogError([error("filter-layout", message, Span("<layout>", 0, 0, 0, 0),
                                "add the column to the layout, or list() the resources")])


def _lit(v: Any) -> exp.Expr:
    return exp.Literal.number(v) if isinstance(v, int) else exp.Literal.string(str(v))


class _Render:
    def __init__(self, layout: Layout, dialect: str,
                 chains: dict[Any, tuple[Any, ...]] | None = None) -> None:
        check_dialect(dialect)
        self.layout, self.dialect = layout, dialect
        self.chains = chains or {}
        #: column names quoted (a row filter's: the table's own columns, any spelling)
        self.quoted = False

    def col(self, name: str, table: str | None = None) -> exp.Column:
        return exp.column(exp.to_identifier(name, quoted=self.quoted),
                          table=exp.to_identifier(table) if table else None)

    def cond(self, c: Cond) -> exp.Expr:
        tag, lay = c[0], self.layout
        if tag == "true":
            return exp.true()
        if tag == "false":
            return exp.false()
        if tag == "is":
            return exp.EQ(this=self.col(lay.id), expression=_lit(c[1]))
        if tag == "in":
            return exp.In(this=self.col(lay.id),
                          expressions=[_lit(v) for v in sorted(c[1], key=str)])
        if tag == "type":
            if lay.type is None:
                raise layout_error("the filter needs the resource's type; the layout has no "
                                    "`type` column")
            return exp.EQ(this=self.col(lay.type), expression=_lit(c[1]))
        if tag == "parent":
            if lay.parent is None:
                raise layout_error("the filter needs the resource's parent; the layout has "
                                    "no `parent` column")
            return exp.EQ(this=self.col(lay.parent), expression=_lit(c[1]))
        if tag == "under":
            return self.under(c[1])
        if tag == "cell":
            return exp.EQ(this=self.col(c[1]), expression=_lit(c[2]))
        if tag == "and":
            return exp.and_(*[self.cond(p) for p in c[1]])
        if tag == "or":
            unders = [p[1] for p in c[1] if p[0] == "under"]
            if lay.path is None and len(unders) > 1:  # one recursive query for them all
                return exp.or_(self.under(*unders),
                               *[self.cond(p) for p in c[1] if p[0] != "under"])
            return exp.or_(*[self.cond(p) for p in c[1]])
        if tag == "not":
            return exp.not_(exp.paren(self.cond(c[1])))
        raise ValueError(tag)

    def under(self, *objs: Any) -> exp.Expr:
        """The resource is one of ``objs`` or below one."""
        lay = self.layout
        if lay.path is not None:
            (a,) = objs
            sep = lay.path_separator
            chain = self.chains.get(a)
            if chain is not None:  # the path starts with a's: a prefix, which an index finds
                prefix = sep + "".join(f"{x}{sep}" for x in chain)
                if self.dialect == "sqlite":  # SQLite's LIKE ignores case; GLOB does not
                    globbed = "".join(f"[{ch}]" if ch in "*?[" else ch for ch in prefix)
                    return exp.Glob(this=self.col(lay.path),
                                    expression=exp.Literal.string(globbed + "*"))
                escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace(
                    "_", "\\_")
                return exp.Escape(this=exp.Like(this=self.col(lay.path),
                                                expression=exp.Literal.string(escaped + "%")),
                                  expression=exp.Literal.string("\\"))
            piece = exp.Literal.string(f"{sep}{a}{sep}")
            return exp.GT(this=exp.StrPosition(this=self.col(lay.path), substr=piece),
                          expression=exp.Literal.number(0))
        if lay.parent is None:
            raise layout_error("the filter needs the resource's place in the hierarchy; the "
                                "layout has neither a `path` nor a `parent` column")
        if self.dialect == "spark":
            raise layout_error("Spark SQL has no recursive queries: give the layout a "
                                "`path` column for filters over the hierarchy")
        # id IN (WITH RECURSIVE sub(id) AS (a UNION ALL its children) SELECT id FROM sub)
        t, sub = lay.table, "grantlog_under"
        seed = exp.select(self.col(lay.id)).from_(exp.to_identifier(t)).where(
            exp.EQ(this=self.col(lay.id), expression=_lit(objs[0])) if len(objs) == 1 else
            exp.In(this=self.col(lay.id),
                   expressions=[_lit(v) for v in sorted(objs, key=str)]))
        step = exp.select(self.col(lay.id, t)).from_(exp.to_identifier(t)).join(
            exp.to_identifier(sub),
            on=exp.EQ(this=self.col(lay.parent, t), expression=self.col("id", sub)))
        body = exp.union(seed, step, distinct=False)
        q = exp.select(self.col("id", sub)).from_(exp.to_identifier(sub)).with_(
            f"{sub}(id)", as_=body, recursive=True)
        return self.col(lay.id).isin(query=q)


def to_sql(residual: Residual, layout: Layout, dialect: str = "postgres") -> str:
    """The residual as a WHERE condition over ``layout`` in ``dialect``."""
    return _Render(layout, dialect, residual.chains).cond(residual.cond).sql(dialect=dialect)


def select_sql(residual: Residual, layout: Layout, dialect: str = "postgres") -> str:
    """``SELECT id FROM table WHERE <the residual>``."""
    r = _Render(layout, dialect, residual.chains)
    q = exp.select(r.col(layout.id)).from_(exp.to_identifier(layout.table)).where(
        r.cond(residual.cond))
    return q.sql(dialect=dialect)


def _cells_only(c: Cond) -> bool:
    if c[0] in ("and", "or"):
        return all(_cells_only(p) for p in c[1])
    if c[0] == "not":
        return _cells_only(c[1])
    return c[0] in ("cell", "true", "false")


def row_filter_sql(f: RowFilter, dialect: str = "trino") -> str:
    """A row filter as a condition over the table's columns, in ``dialect``."""
    if not _cells_only(f.cond):
        raise layout_error("the row filter says something of the row other than its cells")
    r = _Render(Layout(table=""), dialect)
    r.quoted = True
    return r.cond(f.cond).sql(dialect=dialect)


#: column masks, the strongest first (a column with several gets the first):
#: ``nullify`` NULL; ``redact`` the string ``'****'``; ``last4`` ``'****'`` and the last four
#: characters. A mask of a string kind over a column known not to hold strings is NULL.
MASKS = ("nullify", "redact", "last4")
_STRINGS = ("varchar", "char", "text", "string", "character varying")


def strongest_mask(masks: Any) -> str | None:
    """The mask a column gets when several apply (None: no known mask among them)."""
    have = set(masks)
    known = [m for m in MASKS if m in have]
    return known[0] if known else None


def mask_sql(mask: str, column: str, dialect: str = "trino",
             column_type: str | None = None) -> str:
    """The expression that shows ``column`` through ``mask`` in ``dialect`` (``column_type``,
    as the engine names it: a non-string column masked by a string kind becomes NULL)."""
    if mask not in MASKS:
        raise GrantlogError([error("bad-option", f"`{mask}` is not a mask; masks are "
                                   f"{', '.join(MASKS)}", Span("<mask>", 0, 0, 0, 0))])
    check_dialect(dialect)
    stringy = column_type is None or column_type.lower().split("(")[0].strip() in _STRINGS
    col = exp.column(exp.to_identifier(column, quoted=True))
    stars = exp.Literal.string("****")
    e: exp.Expr
    if mask == "nullify" or not stringy:
        e = exp.Null()
    elif mask == "redact":
        e = stars
    else:
        last = (exp.Substring(this=col, start=exp.Literal.number(-4))
                if dialect in ("sqlite", "trino") else
                exp.Right(this=col, expression=exp.Literal.number(4)))
        e = exp.DPipe(this=stars, expression=last, safe=True)
    return e.sql(dialect=dialect)


def apply_mask(mask: str, value: Any) -> Any:
    """What :func:`mask_sql` shows of a string ``value`` (the tests' oracle)."""
    if value is None or mask == "nullify":
        return None
    return "****" if mask == "redact" else "****" + str(value)[-4:]
