"""Cedar (the Rust engine, through cedarpy): entity hierarchy + permit/forbid policy templates.

* Entities: ``Metalake`` > ``Catalog`` > ``Schema`` > ``Table`` through ``parents``; a ``User``'s
  parents are its groups, the roles granted to it directly and the metalakes it was added to; a
  ``Group``'s parents are its roles. ``principal in Role::"r"`` is then "holds r, directly or
  through a group", and ``resource in Schema::"s"`` is "s or below it": Cedar does the role
  resolution and the inheritance down the tree.
* Actions are the privileges (``select_table``, ``use_catalog``, ...) plus ``own``.
* A grant is a template-linked policy: ``permit`` (ALLOW) or ``forbid`` (DENY) of ``action ==
  Action::"<privilege>"`` for ``principal in ?principal`` (the role) on ``resource in ?resource``
  (the object). Cedar's forbid-overrides-permit is exactly "DENY wins on the same privilege".
  An owner is a linked ``permit (principal == ?principal, action == Action::"own", resource in
  ?resource)``: ownership reaches down the tree and, being a different action, no DENY blocks it
  (reading 8). One ``forbid ... unless { principal in Metalake::"m1" }`` per metalake makes
  unregistered users' grants and ownerships count for nothing (reading 2).
* A grant or revoke links or unlinks one template instance (``with_linked`` /
  ``without_linked``); the PolicySet handle is immutable, so each update clones it.

What Cedar cannot express in one request: a decision that needs *several* privileges on
*different* resources (USE_CATALOG on the catalog and USE_SCHEMA on the schema and SELECT_TABLE
or MODIFY_TABLE on the table), each with its own DENY, plus the owner exemption from DENY. A
permit is one principal/action/resource match; Cedar has no way to ask "is another request
permitted" inside a policy. So each check sends the privilege-level requests it needs as one
``is_authorized_batch`` call and composes them per the API table (base.decide_by_privileges),
as Gravitino's own authorizer does with its per-privilege answers.
"""

from __future__ import annotations

import json
from typing import Any

import gravitino_workload as gw

from peers.base import Engine, Facts, Hierarchy, Row, decide_by_privileges, pkg_version

KIND = {"metalake": "Metalake", "catalog": "Catalog", "schema": "Schema", "table": "Table",
        "role": "Role"}


def uid(kind: str, i: str) -> dict[str, str]:
    return {"type": kind, "id": i}


def templates(metalakes: list[str]) -> str:
    out = []
    for m in metalakes:
        out.append(f'@id("registered-only:{m}")\n'
                   f'forbid (principal is User, action, resource in Metalake::{json.dumps(m)})\n'
                   f'unless {{ principal in Metalake::{json.dumps(m)} }};')
    for p in sorted(gw.SUPPORTS):
        out.append(f'@id("allow:{p}")\npermit (principal in ?principal, '
                   f'action == Action::"{p}", resource in ?resource);')
        out.append(f'@id("deny:{p}")\nforbid (principal in ?principal, '
                   f'action == Action::"{p}", resource in ?resource);')
    out.append('@id("owner")\npermit (principal == ?principal, action == Action::"own", '
               'resource in ?resource);')
    return "\n".join(out)


class CedarEngine(Engine):
    name = "cedar"
    encoding = ("entities with parents (Table in Schema in Catalog in Metalake; User in its "
                "Groups, Roles and Metalake; Group in its Roles), actions = privileges + `own`, "
                "one template-linked `permit` (ALLOW) or `forbid` (DENY) per grant, one linked "
                "`permit` on `own` per owner, one `forbid ... unless principal in Metalake` for "
                "unregistered users; the operation is composed from per-privilege decisions")
    check_path = ("one `is_authorized_batch` call with every privilege request the operation "
                  "needs (e.g. 7 for load_table: own + use_catalog on the catalog, own + "
                  "use_schema on the schema, own + select_table + modify_table on the table), "
                  "composed per the API table; pre-parsed `PolicySet` and `Entities` handles")
    update_path = "`PolicySet.with_linked` / `without_linked` (returns a new, cloned set)"
    bulk_path = ("none: Cedar answers one request at a time (no enumeration of resources); "
                 "a bulk answer is a loop of point checks")

    def version(self) -> str:
        return f"cedarpy {pkg_version('cedarpy')}"

    def load(self, facts: Facts) -> None:
        import cedarpy

        self.cedar: Any = cedarpy
        self.h = h = Hierarchy(facts)
        ents: list[dict[str, Any]] = []
        for o, t in facts["entity"]:
            p = h.parent.get(o)
            parents = [uid(KIND[h.type[p]], p)] if p is not None and t != "role" else []
            ents.append({"uid": uid(KIND[t], o), "attrs": {}, "parents": parents})
        up: dict[str, list[dict[str, str]]] = {}
        for p, r in facts["role_of"]:
            up.setdefault(p, []).append(uid("Role", r))
        for u, g in facts["member"]:
            up.setdefault(u, []).append(uid("Group", g))
        for u, m in facts["metalake_user"]:
            up.setdefault(u, []).append(uid("Metalake", m))
        groups = {g for _, g in facts["member"]} | {g for g, _ in facts["metalake_group"]}
        users = {u for u, _ in facts["member"]} | {u for u, _ in facts["metalake_user"]} | {
            u for _, u in facts["owner"]}
        for g in sorted(groups):
            ents.append({"uid": uid("Group", g), "attrs": {}, "parents": up.get(g, [])})
        for u in sorted(users - groups):
            ents.append({"uid": uid("User", u), "attrs": {}, "parents": up.get(u, [])})
        self.entities = cedarpy.Entities.from_json_str(json.dumps(ents))
        metalakes = sorted(o for o, t in facts["entity"] if t == "metalake")
        ps = cedarpy.PolicySet.from_str(templates(metalakes))
        self.links: dict[Row, str] = {}
        self.n_links = 0
        batch = []
        for row in facts["privilege"]:
            link = self._link(row)
            if link is not None:
                batch.append(link)
        for o, u in facts["owner"]:
            if h.type.get(o) in ("metalake", "catalog", "schema", "table"):
                batch.append({"template_id": "owner", "new_id": f"owner:{o}:{u}",
                              "values": {"?principal": uid("User", u),
                                         "?resource": uid(KIND[h.type[o]], o)}})
        self.ps = ps.with_linked_batch(batch)
        self.n_policies = len(self.ps)

    def _link(self, row: Row) -> dict[str, Any] | None:
        role, priv, obj, cond = row
        t = self.h.type.get(obj)
        if t is None or t not in gw.SUPPORTS.get(priv, ()) or cond not in ("allow", "deny"):
            return None  # Gravitino refuses such a grant; the model ignores it (reading 10)
        self.n_links += 1
        new_id = f"grant:{self.n_links}"
        self.links[row] = new_id
        return {"template_id": f"{cond}:{priv}", "new_id": new_id,
                "values": {"?principal": uid("Role", role), "?resource": uid(KIND[t], obj)}}

    def check(self, user: str, op: str, obj: str) -> bool:
        h = self.h
        if h.type.get(obj) is None:
            return False
        # every privilege request the operation may need, asked in one call
        needed: list[tuple[str, str]] = []
        cat, sch = h.up(obj, "catalog"), h.up(obj, "schema")
        if cat is not None:
            needed += [("own", cat), ("use_catalog", cat)]
        if sch is not None:
            needed += [("own", sch), ("use_schema", sch)]
        if op == "create_table":
            needed.append(("create_table", obj))
        elif h.type[obj] == "table":
            needed.append(("own", obj))
            if op in ("load_table", "select_table"):
                needed.append(("select_table", obj))
            if op in ("load_table", "select_table", "alter_table", "modify_table"):
                needed.append(("modify_table", obj))
        principal = uid("User", user)
        reqs = [{"principal": principal, "action": uid("Action", a),
                 "resource": uid(KIND[h.type[o]], o)} for a, o in needed]
        res = self.cedar.is_authorized_batch(reqs, self.ps, self.entities)
        ok = {k: r.allowed for k, r in zip(needed, res, strict=True)}
        return decide_by_privileges(
            h, op, obj, lambda p, o: ok.get(("own", o), False) or ok.get((p, o), False),
            lambda o: ok.get(("own", o), False))

    def grant(self, row: Row) -> None:
        link = self._link(row)
        if link is not None:
            self.ps = self.ps.with_linked(link["template_id"], link["new_id"], link["values"])

    def revoke(self, row: Row) -> None:
        new_id = self.links.pop(row, None)
        if new_id is not None:
            self.ps = self.ps.without_linked(new_id)

    def notes(self) -> dict[str, object]:
        return {"policies": self.n_policies, "entities": len(self.entities)}
