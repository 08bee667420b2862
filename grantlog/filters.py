"""Data filters rendered as SQL (sqlglot) for a catalog table the caller describes.

A :class:`Layout` says which table holds the resources and which of its columns hold the id,
the type, the parent and (optionally) a materialized path — the ids from the root down to the
resource, each followed by the separator, e.g. ``/m1/m1.c1/m1.c1.s1/``::

    # layout.toml
    table = "catalog_objects"
    schema = "catalog"      # optional: the table's schema (and `catalog`: Trino's catalog)
    id = "id"
    type = "kind"           # optional: needed by filters that name a type
    parent = "parent_id"    # optional: "under X" by a recursive query
    path = "path"           # optional: "under X" by a substring test (faster, and Spark SQL)
    path_separator = "/"    # must not occur in any id: the path is split on it

Every name is an identifier, used exactly as written: it is printed quoted in every dialect
(a column named ``user`` or ``kind; DROP TABLE t; --`` is that column, nothing else). A layout
is checked when it is made (``bad-layout``): each name a non-empty string without NUL, a
table, schema or catalog name without ``.`` (name the schema with ``schema``), and a
``path_separator`` that splits a path one way only (non-empty, not starting with what it ends
with, like ``//``).

:func:`to_sql` renders a residual (``Reasoner.filter``) as a WHERE condition for SQLite,
PostgreSQL, Spark SQL, Trino or DuckDB; :func:`select_sql` as the whole query of the ids. A
condition the layout cannot express (a type without a type column, "under" without a parent or path)
is refused with ``filter-layout``, never rendered as one that admits more; so is an id that
holds the path separator (``bad-layout``). No string literal holds a quote or a backslash
(they are written ``CHR(39)``, ``CHR(92)``), so the SQL means the same whatever the server's
string-escaping settings (PostgreSQL's ``standard_conforming_strings``, Spark's
``escapedStringLiterals``), and LIKE patterns escape with ``!``.

Rows and columns of a table (rules/gravitino_data.gl): :func:`row_filter_sql` renders a row
filter (``Reasoner.row_filter``, conditions on the row's cells) as a condition over the
table's own columns, and :func:`mask_sql` a column mask (:data:`MASKS`) as the expression
that replaces the column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlglot import exp

from grantlog.engine.answer.conditions import Cond
from grantlog.engine.answer.residual import Residual, RowFilter
from grantlog.engine.core import arguments
from grantlog.grammar.diagnostics import GrantlogError, Span, error
from grantlog.tomlfile import read_toml

DIALECTS = ("sqlite", "postgres", "spark", "trino", "duckdb")
#: the layout's fields that name a table part (no ``.``: it would read as two names)
_TABLE_PARTS = ("table", "schema", "catalog")
#: the fields that may be left out (None)
_OPTIONAL = ("type", "parent", "path", "schema", "catalog")
_LAYOUT_HELP = ("each name is a table's or a column's name exactly as the catalog spells it; "
                "path_separator is a string no id contains, e.g. \"/\" (docs/filters.md)")
#: LIKE's escape character (not a backslash: see the module docstring)
_ESCAPE = "!"


@dataclass(frozen=True)
class Layout:
    table: str
    id: str = "id"
    type: str | None = None
    parent: str | None = None
    path: str | None = None
    path_separator: str = "/"
    schema: str | None = None
    catalog: str | None = None

    def __post_init__(self) -> None:
        problems = _problems({f: getattr(self, f) for f in Layout.__dataclass_fields__})
        if problems:
            raise bad_layout(problems, Span("<layout>", 0, 0, 0, 0))

    @staticmethod
    def load(path: str | Path) -> Layout:
        arguments.instance("path", path, (str, Path), "a layout file's path")
        data = read_toml(path, "bad-layout", "the layout")
        return Layout.from_dict(data, Span(str(path), 0, 0, 0, 0))

    @staticmethod
    def from_dict(data: Any, where: Span | None = None) -> Layout:
        """A layout from its fields (a layout file's, a request's), checked (``bad-layout``).
        An optional field may be given as null (JSON)."""
        arguments.instance("where", where, Span, "a `Span` or None", optional=True)
        where = where or Span("<layout>", 0, 0, 0, 0)
        known = set(Layout.__dataclass_fields__)
        if not isinstance(data, dict):
            raise bad_layout([f"a layout is a table of names, not {type(data).__name__}"], where)
        unknown = sorted(str(k) for k in set(data) - known)
        if unknown or "table" not in data:
            raise bad_layout(["a layout names `table` and any of "
                              f"{', '.join(sorted(known - {'table'}))}, each a string"
                              + (f" (unknown: {', '.join(unknown)})" if unknown else "")],
                             where)
        fields = {k: v for k, v in data.items() if not (v is None and k in _OPTIONAL)}
        found = _problems({name: fields.get(name, f.default)
                           for name, f in Layout.__dataclass_fields__.items()})
        if found:
            raise bad_layout(found, where)
        return Layout(**fields)

    def table_ref(self) -> exp.Table:
        return exp.Table(this=_ident(self.table), db=_ident(self.schema) if self.schema else None,
                         catalog=_ident(self.catalog) if self.catalog else None)


def _problems(fields: dict[str, Any]) -> list[str]:
    """What is wrong with a layout's fields (empty: nothing)."""
    out: list[str] = []
    for name, v in fields.items():
        if v is None and name in _OPTIONAL:
            continue
        if not isinstance(v, str):
            out.append(f"`{name}` must be a string, not {type(v).__name__}")
        elif v == "":
            out.append(f"`{name}` must not be empty" + (
                ": an empty separator splits no path (every id would match inside another)"
                if name == "path_separator" else ""))
        elif "\x00" in v:
            out.append(f"`{name}` must not contain NUL")
        elif name in _TABLE_PARTS and "." in v:
            out.append(f"`{name}` {v!r} contains `.`: a {name} name is one name (give the "
                       "table's schema as `schema`, Trino's catalog as `catalog`)")
    sep = fields.get("path_separator")
    if isinstance(sep, str) and len(sep) > 1:
        border = next((sep[:i] for i in range(len(sep) - 1, 0, -1) if sep[:i] == sep[-i:]),
                      None)
        if border is not None:
            out.append(f"`path_separator` {sep!r} starts with what it ends with ({border!r}): "
                       "a path could be split on it in more than one way (an id ending in "
                       "it would match another's prefix)")
    return out


def bad_layout(problems: list[str], where: Span) -> GrantlogError:
    return GrantlogError([error("bad-layout", p, where, _LAYOUT_HELP) for p in problems])


def check_dialect(dialect: str) -> None:
    if not isinstance(dialect, str) or dialect not in DIALECTS:
        raise GrantlogError([error("bad-option", f"`{dialect}` is not one of "
                                   f"{', '.join(DIALECTS)}", Span("<options>", 0, 0, 0, 0))])


def layout_error(message: str) -> GrantlogError:
    return GrantlogError([error("filter-layout", message, Span("<layout>", 0, 0, 0, 0),
                                "add the column to the layout, or list() the resources")])


def _ident(name: str) -> exp.Identifier:
    """An identifier, always quoted (the dialect's quotes, doubled inside)."""
    return exp.to_identifier(name, quoted=True)


def _str(s: str) -> exp.Expr:
    """A string literal with no quote and no backslash in it: those characters are
    ``CHR(39)`` and ``CHR(92)`` (``CHAR`` in SQLite), concatenated, so the text reads the same
    under every setting of a server's string escapes."""
    if "\x00" in s:
        raise GrantlogError([error(
            "filter-unsupported", f"the value {s!r} contains NUL, which SQL text cannot hold",
            Span("<filter>", 0, 0, 0, 0), "list() the resources instead")])
    parts = [p for p in re.split(r"(['\\])", s) if p]
    if len(parts) <= 1 and not (parts and parts[0] in ("'", "\\")):
        return exp.Literal.string(s)
    terms: list[exp.Expr] = [exp.Chr(expressions=[exp.Literal.number(ord(p))])
                             if p in ("'", "\\") else exp.Literal.string(p) for p in parts]
    out = terms[0]
    for t in terms[1:]:
        out = exp.DPipe(this=out, expression=t)
    return exp.Paren(this=out)


def _lit(v: Any) -> exp.Expr:
    return exp.Literal.number(v) if isinstance(v, int) else _str(str(v))


class _Render:
    def __init__(self, layout: Layout, dialect: str,
                 chains: dict[Any, tuple[Any, ...]] | None = None) -> None:
        check_dialect(dialect)
        self.layout, self.dialect = layout, dialect
        self.chains = chains or {}

    def col(self, name: str, table: str | None = None) -> exp.Column:
        return exp.column(_ident(name), table=_ident(table) if table else None)

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
            column = c[1]
            if not isinstance(column, str) or not column or "\x00" in column:
                raise GrantlogError([error(
                    "filter-unsupported", f"{column!r} cannot be a column's name (a non-empty "
                    "string without NUL)", Span("<filter>", 0, 0, 0, 0))])
            return exp.EQ(this=self.col(column), expression=_lit(c[2]))
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

    def _no_separator(self, ids: Any) -> None:
        """An id that holds the separator would be split into two in the path: the test
        would admit what lies under other objects. Refused."""
        sep = self.layout.path_separator
        for x in ids:
            if sep in str(x):
                raise GrantlogError([error(
                    "bad-layout", f"the id {str(x)!r} contains the layout's path_separator "
                    f"{sep!r}: its path cannot be split on it", Span("<layout>", 0, 0, 0, 0),
                    "choose a path_separator that no id contains (and build the path column "
                    "with it)")])

    def under(self, *objs: Any) -> exp.Expr:
        """The resource is one of ``objs`` or below one."""
        lay = self.layout
        if lay.path is not None:
            (a,) = objs
            sep = lay.path_separator
            chain = self.chains.get(a)
            self._no_separator([a, *(chain or ())])
            if chain is not None:  # the path starts with a's: a prefix, which an index finds
                prefix = sep + "".join(f"{x}{sep}" for x in chain)
                if self.dialect == "sqlite":  # SQLite's LIKE ignores case; GLOB does not
                    globbed = "".join(f"[{ch}]" if ch in "*?[" else ch for ch in prefix)
                    return exp.Glob(this=self.col(lay.path), expression=_str(globbed + "*"))
                escaped = "".join(_ESCAPE + ch if ch in ("%", "_", _ESCAPE) else ch
                                  for ch in prefix)
                return exp.Escape(this=exp.Like(this=self.col(lay.path),
                                                expression=_str(escaped + "%")),
                                  expression=exp.Literal.string(_ESCAPE))
            piece = _str(f"{sep}{a}{sep}")
            return exp.GT(this=exp.StrPosition(this=self.col(lay.path), substr=piece),
                          expression=exp.Literal.number(0))
        if lay.parent is None:
            raise layout_error("the filter needs the resource's place in the hierarchy; the "
                                "layout has neither a `path` nor a `parent` column")
        if self.dialect == "spark":
            raise layout_error("Spark SQL has no recursive queries: give the layout a "
                                "`path` column for filters over the hierarchy")
        # id IN (WITH RECURSIVE sub(id) AS (a UNION ALL its children) SELECT id FROM sub),
        # the table's rows in the step named by an alias of ours; the query's own names are
        # chosen not to be the table's (a CTE of the table's name would hide it)
        sub, obj = "grantlog_under", "grantlog_o"
        while sub.lower() in (lay.table.lower(), obj):
            sub += "_"
        seed = exp.select(self.col(lay.id)).from_(lay.table_ref()).where(
            exp.EQ(this=self.col(lay.id), expression=_lit(objs[0])) if len(objs) == 1 else
            exp.In(this=self.col(lay.id),
                   expressions=[_lit(v) for v in sorted(objs, key=str)]))
        step = exp.select(self.col(lay.id, obj)).from_(
            exp.alias_(lay.table_ref(), _ident(obj), table=True)).join(
            exp.Table(this=_ident(sub)),
            on=exp.EQ(this=self.col(lay.parent, obj), expression=self.col("id", sub)))
        body = exp.union(seed, step, distinct=False)
        q = exp.select(self.col("id", sub)).from_(exp.Table(this=_ident(sub))).with_(
            exp.TableAlias(this=_ident(sub), columns=[_ident("id")]), as_=body,
            recursive=True)
        return self.col(lay.id).isin(query=q)


def _rendered(residual: object, layout: object, dialect: object,
              kind: type = Residual) -> None:
    """The arguments of a renderer (``bad-argument``, ``bad-option``)."""
    arguments.instance("residual" if kind is Residual else "f", residual, kind,
                       f"a `{kind.__name__}` (`Reasoner.filter` returns one)")
    arguments.instance("layout", layout, Layout, "a `Layout` (`Layout.load(path)`)")
    check_dialect(dialect)  # type: ignore[arg-type]


def to_sql(residual: Residual, layout: Layout, dialect: str = "postgres") -> str:
    """The residual as a WHERE condition over ``layout`` in ``dialect``."""
    _rendered(residual, layout, dialect)
    return _Render(layout, dialect, residual.chains).cond(residual.cond).sql(dialect=dialect)


def select_sql(residual: Residual, layout: Layout, dialect: str = "postgres") -> str:
    """``SELECT id FROM table WHERE <the residual>``."""
    _rendered(residual, layout, dialect)
    r = _Render(layout, dialect, residual.chains)
    q = exp.select(r.col(layout.id)).from_(layout.table_ref()).where(r.cond(residual.cond))
    return q.sql(dialect=dialect)


def _cells_only(c: Cond) -> bool:
    if c[0] in ("and", "or"):
        return all(_cells_only(p) for p in c[1])
    if c[0] == "not":
        return _cells_only(c[1])
    return c[0] in ("cell", "true", "false")


def row_filter_sql(f: RowFilter, dialect: str = "trino") -> str:
    """A row filter as a condition over the table's columns, in ``dialect``."""
    _rendered(f, Layout(table="t"), dialect, RowFilter)
    if not _cells_only(f.cond):
        raise layout_error("the row filter says something of the row other than its cells")
    return _Render(Layout(table="t"), dialect).cond(f.cond).sql(dialect=dialect)


#: column masks, the strongest first (a column with several gets the first):
#: ``nullify`` NULL; ``redact`` the string ``'****'``; ``last4`` ``'****'`` and the last four
#: characters. A mask of a string kind over a column known not to hold strings is NULL.
MASKS = ("nullify", "redact", "last4")
_STRINGS = ("varchar", "char", "text", "string", "character varying")


def strongest_mask(masks: Any) -> str | None:
    """The mask a column gets when several apply (None: no known mask among them)."""
    have = set(arguments.names(masks, "masks", "hold mask names (strings)"))
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
    if not isinstance(column, str) or not column or "\x00" in column:
        raise GrantlogError([error("bad-option", f"{column!r} cannot be a column's name (a "
                                   "non-empty string without NUL)", Span("<mask>", 0, 0, 0, 0))])
    arguments.optional_text("column_type", column_type)
    stringy = column_type is None or column_type.lower().split("(")[0].strip() in _STRINGS
    col = exp.column(_ident(column))
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
