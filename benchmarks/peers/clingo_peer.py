"""clingo (Potassco): the model as an ASP/Datalog program; gringo (C++) evaluates it.

Multi-shot: the ``base`` part (facts + the rules that stay small: ancestry, role holding) is
grounded once at load. Each check grounds the ``query(q, u, op, o)`` part with fresh constants;
the program is stratified, so the grounder alone derives ``answer(q)`` as a fact (no solving) and
the check reads ``symbolic_atoms[answer(q)].is_fact``. A grant grounds a part holding the new
``privilege`` fact. Grounded facts cannot be retracted in clingo; a revoke therefore grounds a
tombstone fact ``revoked(...)`` that the query rules respect (``#external`` atoms are clingo's
own device for retractable facts, but they leave every check's answer undecided until a
``solve()``: a prototype with the grants as externals took ~12x longer per check (ground +
solve) than this form at 10,000 tables, with the same answers). A bulk request grounds the
``bulk(s)`` part once; there grants on the schema and above are derived once per user, then
combined with each table's own grants.
"""

from __future__ import annotations

import functools
from typing import Any

import gravitino_workload as gw

from peers.base import Engine, Facts, Row, pkg_version, quoted

BASE = """
anc(A, O) :- contains(A, O).
anc(A, O) :- anc(A, P), contains(P, O).
aos(O, O) :- entity(O, _).
aos(A, O) :- anc(A, O).
holds(U, R) :- role_of(U, R).
holds(U, R) :- member(U, G), role_of(G, R).
priv(P) :- supports(P, _).
effective(R, P, A, C) :- privilege(R, P, A, C), entity(A, T), supports(P, T).
"""

# Every predicate of a query carries the query id q, so that answers of different checks never
# share an atom (an atom may be defined in one grounding step only).
QUERY = """
on(q, X) :- aos(X, o).
reg(q) :- metalake_user(u, M), entity(M, "metalake"), aos(M, o).
allow(q, P, X) :- on(q, X), aos(A, X), privilege(R, P, A, "allow"), not revoked(R, P, A, "allow"),
                  entity(A, T), supports(P, T), holds(u, R), reg(q).
deny(q, P, X) :- on(q, X), aos(A, X), privilege(R, P, A, "deny"), not revoked(R, P, A, "deny"),
                 entity(A, T), supports(P, T), holds(u, R).
controls(q, X) :- on(q, X), aos(A, X), owner(A, u), reg(q).
auth(q, P, X) :- allow(q, P, X), not deny(q, P, X).
auth(q, P, X) :- controls(q, X), on(q, X), priv(P).
usecat(q) :- on(q, C), entity(C, "catalog"), auth(q, "use_catalog", C).
usesch(q) :- usecat(q), on(q, S), entity(S, "schema"), auth(q, "use_schema", S).
answer(q) :- op = "load_catalog", entity(o, "catalog"), usecat(q).
answer(q) :- op = "load_schema", entity(o, "schema"), usesch(q).
answer(q) :- op = "list_table", entity(o, "schema"), usesch(q).
answer(q) :- op = "create_table", entity(o, "schema"), usesch(q), auth(q, "create_table", o).
answer(q) :- op = "load_table", entity(o, "table"), usesch(q), auth(q, "select_table", o).
answer(q) :- op = "load_table", entity(o, "table"), usesch(q), auth(q, "modify_table", o).
answer(q) :- op = "select_table", entity(o, "table"), usesch(q), auth(q, "select_table", o).
answer(q) :- op = "select_table", entity(o, "table"), usesch(q), auth(q, "modify_table", o).
answer(q) :- op = "alter_table", entity(o, "table"), usesch(q), auth(q, "modify_table", o).
answer(q) :- op = "modify_table", entity(o, "table"), usesch(q), auth(q, "modify_table", o).
answer(q) :- op = "drop_table", entity(o, "table"), usesch(q), controls(q, o).
"""

# Every load_table decision for the tables of schema s, all users at once.
BULK = """
b_table(s, T) :- contains(s, T), entity(T, "table").
b_reg(U) :- metalake_user(U, M), entity(M, "metalake"), aos(M, s).
% grants on the schema or above apply to every table alike: derived once per user
b_up(s, U, P, C) :- aos(A, s), privilege(R, P, A, C), not revoked(R, P, A, C),
                    entity(A, Ty), supports(P, Ty), holds(U, R).
b_here(s, U, P, T, C) :- b_table(s, T), privilege(R, P, T, C), not revoked(R, P, T, C),
                         supports(P, "table"), holds(U, R).
b_allow(s, U, P, T) :- b_table(s, T), b_up(s, U, P, "allow"), b_reg(U).
b_allow(s, U, P, T) :- b_here(s, U, P, T, "allow"), b_reg(U).
b_deny(s, U, P, T) :- b_table(s, T), b_up(s, U, P, "deny").
b_deny(s, U, P, T) :- b_here(s, U, P, T, "deny").
b_owner_up(s, U) :- aos(A, s), owner(A, U), b_reg(U).
b_controls(s, U, T) :- b_table(s, T), b_owner_up(s, U).
b_controls(s, U, T) :- b_table(s, T), owner(T, U), b_reg(U).
b_auth(s, U, P, T) :- b_allow(s, U, P, T), not b_deny(s, U, P, T).
b_auth(s, U, P, T) :- b_controls(s, U, T), priv(P).
b_usecat(s, U) :- aos(C, s), entity(C, "catalog"), b_reg(U), b_up(s, U, "use_catalog", "allow"),
                  not b_up(s, U, "use_catalog", "deny").
b_usecat(s, U) :- b_owner_up(s, U), aos(A, s), owner(A, U), entity(A, Ty), Ty != "schema".
b_usesch(s, U) :- b_usecat(s, U), b_up(s, U, "use_schema", "allow"), b_reg(U),
                  not b_up(s, U, "use_schema", "deny").
b_usesch(s, U) :- b_usecat(s, U), b_owner_up(s, U).
b_allowed(s, U, T) :- b_usesch(s, U), b_auth(s, U, "select_table", T).
b_allowed(s, U, T) :- b_usesch(s, U), b_auth(s, U, "modify_table", T).
"""


lit = functools.partial(quoted, mark='"')


class ClingoEngine(Engine):
    name = "clingo"
    encoding = ("the model as an ASP (Datalog) program: a `base` part grounded once (facts, "
                "ancestry, role holding, effective grants) and a parameterized `query(q,u,op,o)` "
                "part per check; stratified, so gringo decides without the solver")
    check_path = ("`Control.ground([('query', [q, u, op, o])])` + "
                  "`symbolic_atoms[answer(q)].is_fact`")
    update_path = ("grant: ground a part with the new `privilege` fact; revoke: ground a "
                   "`revoked` tombstone fact (grounded facts cannot be retracted)")
    bulk_path = ("ground the `bulk(s)` part once (grants on the schema and above derived once "
                 "per user), read the `b_allowed(s, U, T)` facts")

    def version(self) -> str:
        return pkg_version("clingo")

    def load(self, facts: Facts) -> None:
        import clingo

        self.clingo: Any = clingo
        ctl = clingo.Control(["--warn=none"])
        lines = [BASE, "#program query(q, u, op, o).", QUERY,
                 "#program bulk(s).", BULK,
                 "#program grant(r, p, o, c). privilege(r, p, o, c).",
                 "#program revoke(r, p, o, c). revoked(r, p, o, c).",
                 "#program base."]
        for rel, rows in facts.items():
            for row in rows:
                lines.append(f"{rel}({','.join(map(lit, row))}).")
        for p, types in gw.SUPPORTS.items():
            for t in sorted(types):
                lines.append(f"supports({lit(p)},{lit(t)}).")
        ctl.add("base", [], "\n".join(lines))
        ctl.ground([("base", [])])
        self.ctl = ctl
        self.n = 0

    def check(self, user: str, op: str, obj: str) -> bool:
        c = self.clingo
        self.n += 1
        q = c.Number(self.n)
        self.ctl.ground([("query", [q, c.String(user), c.String(op), c.String(obj)])])
        atom = self.ctl.symbolic_atoms[c.Function("answer", [q])]
        return atom is not None and atom.is_fact

    def _part(self, name: str, row: Row) -> None:
        self.ctl.ground([(name, [self.clingo.String(x) for x in row])])

    def grant(self, row: Row) -> None:
        self._part("grant", row)

    def revoke(self, row: Row) -> None:
        self._part("revoke", row)

    def bulk(self, schema: str, users: list[str]) -> set[tuple[str, str]] | None:
        c = self.clingo
        s = c.String(schema)
        self.ctl.ground([("bulk", [s])])
        wanted = set(users)
        out = set()
        for a in self.ctl.symbolic_atoms.by_signature("b_allowed", 3):
            args = a.symbol.arguments
            if a.is_fact and args[0] == s and args[1].string in wanted:
                out.add((args[1].string, args[2].string))
        return out

    def notes(self) -> dict[str, object]:
        return {"checks grounded": self.n}
