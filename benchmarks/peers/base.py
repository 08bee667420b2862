"""What every peer engine implements, and the API conditions for engines that decide per privilege.

The semantics every engine must reproduce are those of rules/gravitino.gl for the operations of
``gravitino_workload.CHECK_OPS`` (the seed's "API required conditions" rows for load / alter /
drop / create table, load schema, list table and load catalog, plus the data-plane
select_table / modify_table of the model's reading 17):

* ``A(p, o)`` — *authorized*: the user controls ``o`` (owns it or an ancestor; reading 5, and
  a DENY never takes ownership away: reading 8), or has privilege ``p`` on ``o`` (an ALLOW of
  ``p`` set on ``o`` or an ancestor reaches the user through a role held directly or through a
  group, and no DENY of ``p`` on ``o`` or an ancestor does: DENY wins on the same privilege
  only). Ownership and ALLOWs count only for users added to the metalake (reading 2).
* load_catalog(c) = A(use_catalog, c); load_schema(s) = list_table(s) = load_catalog(catalog
  of s) and A(use_schema, s); create_table(s) = load_schema(s) and A(create_table, s);
  load_table(t) = select_table(t) = load_schema(schema of t) and (A(select_table, t) or
  A(modify_table, t)); alter_table(t) = modify_table(t) = load_schema(...) and
  A(modify_table, t); drop_table(t) = load_schema(...) and the user controls t.

Engines that evaluate whole decisions in their own language (grantlog, pyDatalog, clingo, oso)
encode all of that. Cedar and casbin decide one privilege at a time — DENY-wins, inheritance,
groups, roles and ownership inside the engine — and :func:`decide_by_privileges` composes the
operation from those answers, the way Gravitino's own authorizer composes its jcasbin answers
per API.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Row = tuple[str, ...]
Facts = dict[str, list[Row]]

#: operation -> the resource type it takes
OP_TYPE = {
    "load_table": "table", "select_table": "table", "modify_table": "table",
    "alter_table": "table", "drop_table": "table", "load_schema": "schema",
    "list_table": "schema", "create_table": "schema", "load_catalog": "catalog",
}


class Engine:
    """One engine loaded with one workload. Subclasses set ``name`` and implement the methods;
    ``bulk`` returns None when the engine has no bulk evaluation of its own."""

    name = "?"
    #: one sentence: how the model is expressed in this engine
    encoding = ""
    #: how a point check is answered (what the latency figure measures)
    check_path = ""
    #: how an update is applied
    update_path = ""
    #: how bulk materialization is done, or why it is not
    bulk_path = ""

    def version(self) -> str:
        raise NotImplementedError

    def load(self, facts: Facts) -> None:
        raise NotImplementedError

    def check(self, user: str, op: str, obj: str) -> bool:
        raise NotImplementedError

    def grant(self, row: Row) -> None:
        """Insert one ``privilege(role, privilege, object, condition)`` row."""
        raise NotImplementedError

    def revoke(self, row: Row) -> None:
        """Remove one ``privilege`` row."""
        raise NotImplementedError

    def bulk(self, schema: str, users: list[str]) -> set[tuple[str, str]] | None:
        """Every ``(user, table)`` of ``schema``'s tables that ``load_table`` allows."""
        return None

    def notes(self) -> dict[str, Any]:
        """Engine-specific figures for the report (sizes, counts)."""
        return {}


def quoted(x: str, mark: str) -> str:
    """``x`` as a string literal between ``mark`` quotes, backslash-escaped."""
    return mark + x.replace("\\", "\\\\").replace(mark, "\\" + mark) + mark


def pkg_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "?"


class Hierarchy:
    """Object types and parents from the ``entity`` / ``contains`` facts: what an application
    (Gravitino) knows about an object when a request names it."""

    def __init__(self, facts: Facts) -> None:
        self.type: dict[str, str] = {o: t for o, t in facts["entity"]}
        self.parent: dict[str, str] = {c: p for p, c in facts["contains"]}

    def up(self, obj: str, typ: str) -> str | None:
        """``obj`` or its ancestor of type ``typ``."""
        o: str | None = obj
        while o is not None and self.type.get(o) != typ:
            o = self.parent.get(o)
        return o


def decide_by_privileges(h: Hierarchy, op: str, obj: str,
                         authorized: Callable[[str, str], bool],
                         controls: Callable[[str], bool]) -> bool:
    """The API required conditions of the checked operations, from per-privilege answers:
    ``authorized(p, o)`` = the user controls ``o`` or holds ``p`` on it (DENY considered),
    ``controls(o)`` = the user owns ``o`` or an ancestor. Evaluated left to right, stopping at
    the first unmet condition ("First, you should have the privilege to load the catalog")."""
    if h.type.get(obj) != OP_TYPE.get(op):
        return False
    cat = h.up(obj, "catalog")
    if cat is None or not authorized("use_catalog", cat):
        return False
    if op == "load_catalog":
        return True
    sch = h.up(obj, "schema")
    if sch is None or not authorized("use_schema", sch):
        return False
    if op in ("load_schema", "list_table"):
        return True
    if op == "create_table":
        return authorized("create_table", obj)
    if op == "drop_table":
        return controls(obj)
    if op in ("alter_table", "modify_table"):
        return authorized("modify_table", obj)
    return authorized("select_table", obj) or authorized("modify_table", obj)
