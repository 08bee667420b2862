"""Who may do what, where: ``list``, ``who`` and ``filter``."""

from __future__ import annotations

import argparse
import json
from typing import Any

from grantlog.engine.answer.vocabulary import to_json
from grantlog.engine.core import progress
from grantlog.grammar.diagnostics import GrantlogError, error

from .history import add_at, at
from .inputs import (
    COMMAND_LINE,
    EXIT_OK,
    add_command,
    add_inputs,
    add_json,
    load,
    out,
    print_values,
)
from .typos import warn


def cmd_list(a: argparse.Namespace) -> int:
    files, subject, operation = a.files, a.subject, a.operation
    r = load(a, files)
    with progress.task("listing"):  # the first read evaluates and plans: it may take long
        found = r.list(subject, operation, a.type, a.within, strict=a.strict, **at(a))
    warn(found.warnings)
    return print_values(a, found)


def cmd_who(a: argparse.Namespace) -> int:
    files, operation, resource = a.files, a.operation, a.resource
    r = load(a, files)
    with progress.task("listing"):
        found = r.who(operation, resource, strict=a.strict, **at(a))
    warn(found.warnings)
    return print_values(a, found)


def cmd_filter(a: argparse.Namespace) -> int:
    here = COMMAND_LINE
    if a.rows is not None:
        return _row_filter(a)
    if len(a.args) < 2:
        raise GrantlogError([error("bad-option", "filter takes FILE... SUBJECT OPERATION",
                                   here)])
    *files, subject, operation = a.args
    f = load(a, files).filter(subject, operation, a.type, strict=a.strict)
    warn(f.warnings)
    if a.sql is None:
        payload = f.to_dict()
        if f.warnings:
            payload["warnings"] = to_json(f.warnings)
        out(json.dumps(payload, indent=2, ensure_ascii=False))
        return EXIT_OK
    if a.layout is None:
        raise GrantlogError([error("bad-option", "--sql needs --layout FILE (the catalog "
                                   "table's name and columns)", here)])
    try:
        from grantlog.filters import Layout, select_sql, to_sql
    except ImportError as exc:
        raise GrantlogError([error("missing-dependency", f"SQL filters need sqlglot ({exc})",
                                   here, "install it with `pip install 'grantlog[filters]'`")]) \
            from None
    layout = Layout.load(a.layout)
    _sql(a, (to_sql if a.where else select_sql)(f, layout, a.sql))
    return EXIT_OK


def _row_filter(a: argparse.Namespace) -> int:
    """``grantlog filter --rows TABLE FILE... SUBJECT``: a row filter, as JSON or SQL."""
    if a.layout is not None or a.type is not None:
        raise GrantlogError([error("bad-option", "--rows takes neither --layout nor --type: "
                                   "a row filter is over the table's own columns",
                                   COMMAND_LINE)])
    *files, subject = a.args
    f = load(a, files).row_filter(subject, a.rows, a.relation)
    if a.sql is None:
        out(json.dumps(f.to_dict(), indent=2, ensure_ascii=False))
        return EXIT_OK
    from grantlog.filters import row_filter_sql

    _sql(a, row_filter_sql(f, a.sql))
    return EXIT_OK


def _sql(a: argparse.Namespace, sql: str) -> None:
    """A filter's SQL: as it is, or with ``--json`` in an object naming its dialect."""
    out(json.dumps({"dialect": a.sql, "sql": sql}, ensure_ascii=False) if a.json else sql)


def add_parser(sub: Any) -> None:
    sp = add_command(sub, "list", "the resources SUBJECT may perform OPERATION on", inputs=True,
                     args=("SUBJECT", "OPERATION"), json=True)
    sp.add_argument("--type", "-t", help="only resources with entity(resource, TYPE)")
    sp.add_argument("--within", "-w", metavar="CONTAINER",
                    help="only CONTAINER and the resources below it "
                         "(ancestor_or_self(CONTAINER, resource))")
    add_at(sp)
    sp.set_defaults(fn=cmd_list)

    # `filter --rows TABLE` takes one positional fewer (no OPERATION): one list, read by cmd_filter
    sp = add_command(sub, "filter", "the condition a resource must meet for SUBJECT to perform "
                     "OPERATION on it: JSON, or SQL over a catalog table (--sql, --layout)",
                     inputs=False, usage="%(prog)s [options] [FILE ...] SUBJECT OPERATION\n"
                     "       %(prog)s --rows TABLE [options] [FILE ...] SUBJECT")
    add_inputs(sp, files=None)
    sp.add_argument("args", nargs="+", metavar="FILE... SUBJECT OPERATION",
                    help="rule files, then the subject and the operation (with --rows: the "
                    "subject only)")
    sp.add_argument("--type", "-t", help="only resources with entity(resource, TYPE)")
    sp.add_argument("--sql", choices=["sqlite", "postgres", "spark", "trino", "duckdb"],
                    help="render the filter as a SQL query in this dialect (needs --layout)")
    sp.add_argument("--layout", metavar="FILE",
                    help="the catalog table: a TOML file (table, id, type, parent, path)")
    sp.add_argument("--where", action="store_true",
                    help="with --sql, print only the WHERE condition")
    sp.add_argument("--rows", metavar="TABLE",
                    help="a row filter instead (FILE... SUBJECT): the condition a row of TABLE "
                    "must meet for RELATION(SUBJECT, TABLE, row); --sql without --layout")
    sp.add_argument("--relation", "-r", default="row_visible", metavar="REL",
                    help="with --rows, the relation asked (row_visible)")
    add_json(sp, "print JSON (the default without --sql; with --sql: the query in a JSON "
             "object)")
    sp.set_defaults(fn=cmd_filter)

    sp = add_command(sub, "who", "the subjects that may perform OPERATION on RESOURCE",
                     inputs=True, args=("OPERATION", "RESOURCE"), json=True)
    add_at(sp)
    sp.set_defaults(fn=cmd_who)
