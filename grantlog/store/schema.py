"""How a program's relations become store tables, and whether a store fits a program.

One table per relation that holds base facts, named ``rel_<relation>``, with the relation's
declared column names and a column type from its declared type (``string`` -> text, ``int``
-> a 64-bit integer, ``any`` or undeclared -> a column that keeps strings and integers apart:
SQLite's untyped column, PostgreSQL's ``jsonb``), and a primary key over all columns.
``grantlog_relations`` records each table's columns and types, so that opening a store with
changed rules can say what changed (:func:`compare`).
"""

from __future__ import annotations

from dataclasses import dataclass

from grantlog.engine.core import ir
from grantlog.engine.core.journal import VALID
from grantlog.grammar.diagnostics import Diagnostic, Span, error

#: the column kinds the stores know
KINDS = ("string", "int", "any")


@dataclass(frozen=True)
class Table:
    """The store table of one relation."""

    rel: str
    columns: tuple[str, ...]
    kinds: tuple[str, ...]  # per column: string, int or any

    @property
    def name(self) -> str:
        return f"rel_{self.rel}"

    def spec(self) -> str:
        """What ``grantlog_relations`` records (compared on open)."""
        return ",".join(f"{c}:{k}" for c, k in zip(self.columns, self.kinds, strict=True))


def table(relation: ir.Relation) -> Table:
    cols = tuple(c or f"c{i}" for i, c in enumerate(relation.columns)) or ()
    if len(cols) != relation.arity:
        cols = tuple(f"c{i}" for i in range(relation.arity))
    seen: set[str] = set()
    unique = []
    for i, c in enumerate(cols):  # a declaration may repeat a column name; SQL may not
        name = c if c not in seen else f"{c}_{i}"
        seen.add(name)
        unique.append(name)
    kinds = tuple(t if t in ("string", "int") else "any" for t in relation.types) \
        if len(relation.types) == relation.arity else ("any",) * relation.arity
    return Table(relation.name, tuple(unique), kinds)


def validity_table() -> Table:
    """The table of the facts' validity intervals (``rel_@valid``): one row per fact written
    with an interval, which is then not in its relation's table (engine/answer/validity.py)."""
    return Table(VALID, ("relation", "fact", "valid_from", "valid_until"), ("string",) * 4)


def table_of(program: ir.Program, rel: str) -> Table:
    """The table of ``rel``: a relation of ``program``'s, or the intervals'."""
    return validity_table() if rel == VALID else table(program.relations[rel])


def stored_relations(program: ir.Program) -> dict[str, Table]:
    """The tables a program needs from the start: every relation no rule derives (base facts
    of a derived relation get a table when the first one is written)."""
    derived = program.derived
    return {name: table(r) for name, r in sorted(program.relations.items())
            if name not in derived}


def compare(program: ir.Program, recorded: dict[str, tuple[str, int]],
            store: str) -> tuple[list[str], list[str], list[Diagnostic]]:
    """A store's recorded tables (relation -> (spec, rows)) against a program: the relations to
    add, the empty tables to drop (relations the rules no longer have), and diagnostics for
    what cannot change in place (a changed column list or type, a dropped relation that still
    has facts). Nothing is changed silently: every diagnostic names the relation and how to
    migrate."""
    here = Span(store, 0, 0, 0, 0)
    migrate = (f"dump the facts (`grantlog store dump {store} RULES -o DIR`), create a new store "
               "for the new rules and load them (`grantlog store load`)")
    add = [rel for rel in stored_relations(program) if rel not in recorded]
    drop: list[str] = []
    diags: list[Diagnostic] = []
    for rel, (spec, rows) in sorted(recorded.items()):
        if rel == VALID:  # the intervals' table: the same for every program
            continue
        relation = program.relations.get(rel)
        if relation is None:
            if rows:
                diags.append(error(
                    "store-schema-mismatch",
                    f"the store holds {rows} fact{'s' if rows != 1 else ''} of `{rel}`, which "
                    "the rules no longer have; opening it would drop them", here, migrate))
            else:
                drop.append(rel)
            continue
        if rows and rel in program.read_only:  # facts no write could give now
            diags.append(program.write_refusal(
                rel, here, f"the store holds {rows} fact{'s' if rows != 1 else ''} of")
                or error("derived-relation", rel, here))
            continue
        want = table(relation).spec()
        if want != spec:
            diags.append(error(
                "store-schema-mismatch",
                f"`{rel}` is stored as ({_show(spec)}) but the rules declare "
                f"({_show(want)})", relation.span or here, migrate))
    return add, drop, diags


def _show(spec: str) -> str:
    return ", ".join(f"{p.split(':')[0]}: {p.split(':')[1]}" for p in spec.split(",") if p)
