"""pyDatalog (pure Python; top-down resolution with tabling) with its own rules."""

from __future__ import annotations

import functools
from typing import Any

import gravitino_workload as gw

from peers.base import Engine, Facts, Row, pkg_version, quoted

# The model in pyDatalog's rule syntax. Recursion and joins are ordered for the bound queries
# the checks ask (the object is always bound): ancestry walks up from the object.
RULES = """
anc(A, O) <= contains(A, O)
anc(A, O) <= contains(P, O) & anc(A, P)
aos(O, O) <= entity(O, T)
aos(A, O) <= anc(A, O)
holds(U, R) <= role_of(U, R)
holds(U, R) <= member(U, G) & role_of(G, R)
registered(U, O) <= aos(M, O) & entity(M, 'metalake') & metalake_user(U, M)
effective(R, P, A, C) <= privilege(R, P, A, C) & entity(A, T) & supports(P, T)
allow_applies(U, P, O) <= aos(A, O) & effective(R, P, A, 'allow') & holds(U, R) & registered(U, O)
denied(U, P, O) <= aos(A, O) & effective(R, P, A, 'deny') & holds(U, R)
has_privilege(U, P, O) <= allow_applies(U, P, O) & ~denied(U, P, O)
controls(U, O) <= aos(A, O) & owner(A, U) & registered(U, O)
auth(U, P, O) <= has_privilege(U, P, O)
auth(U, P, O) <= controls(U, O) & priv(P)
catalog_of(O, C) <= aos(C, O) & entity(C, 'catalog')
schema_of(O, S) <= aos(S, O) & entity(S, 'schema')
use_catalog(U, C) <= entity(C, 'catalog') & auth(U, 'use_catalog', C)
use_schema(U, S) <= (entity(S, 'schema') & catalog_of(S, C) & use_catalog(U, C)
                     & auth(U, 'use_schema', S))
usable(U, T) <= entity(T, 'table') & schema_of(T, S) & use_schema(U, S)
reads(U, T) <= auth(U, 'select_table', T)
reads(U, T) <= auth(U, 'modify_table', T)
allowed(U, 'load_catalog', C) <= use_catalog(U, C)
allowed(U, 'load_schema', S) <= use_schema(U, S)
allowed(U, 'list_table', S) <= use_schema(U, S)
allowed(U, 'create_table', S) <= use_schema(U, S) & auth(U, 'create_table', S)
allowed(U, 'load_table', T) <= usable(U, T) & reads(U, T)
allowed(U, 'select_table', T) <= usable(U, T) & reads(U, T)
allowed(U, 'alter_table', T) <= usable(U, T) & auth(U, 'modify_table', T)
allowed(U, 'modify_table', T) <= usable(U, T) & auth(U, 'modify_table', T)
allowed(U, 'drop_table', T) <= usable(U, T) & controls(U, T)
"""


lit = functools.partial(quoted, mark="'")


class PyDatalogEngine(Engine):
    name = "pydatalog"
    encoding = ("the model as 30 pyDatalog rules (ancestry, holds, effective grants, "
                "allow/deny with `~denied`, owners, prerequisites, one `allowed` rule per "
                "operation); base facts asserted with `assert_fact`")
    check_path = "`pyDatalog.ask(\"allowed('u', 'op', 'obj')\")` (all arguments bound)"
    update_path = "`pyDatalog.assert_fact` / `retract_fact` of the `privilege` row"
    bulk_path = "`pyDatalog.ask(\"contains('s', T) & allowed(U, 'load_table', T)\")`"

    def version(self) -> str:
        return pkg_version("pyDatalog")

    def load(self, facts: Facts) -> None:
        from pyDatalog import pyDatalog

        self.pd: Any = pyDatalog
        pyDatalog.clear()
        for rel, rows in facts.items():
            for row in rows:
                pyDatalog.assert_fact(rel, *row)
        for p, types in gw.SUPPORTS.items():
            pyDatalog.assert_fact("priv", p)
            for t in sorted(types):
                pyDatalog.assert_fact("supports", p, t)
        pyDatalog.load(RULES)

    def check(self, user: str, op: str, obj: str) -> bool:
        return self.pd.ask(f"allowed({lit(user)}, {lit(op)}, {lit(obj)})") is not None

    def grant(self, row: Row) -> None:
        self.pd.assert_fact("privilege", *row)

    def revoke(self, row: Row) -> None:
        self.pd.retract_fact("privilege", *row)

    def bulk(self, schema: str, users: list[str]) -> set[tuple[str, str]] | None:
        ans = self.pd.ask(f"contains({lit(schema)}, T) & allowed(U, 'load_table', T)")
        wanted = set(users)
        if ans is None:
            return set()
        # answers are tuples in the order of the variables' first appearance: (T, U)
        return {(u, t) for t, u in ans.answers if u in wanted}
