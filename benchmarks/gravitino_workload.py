"""A Gravitino-shaped authorization workload: base facts for rules/gravitino.gl (+ the prelude).

One metalake ``m1`` > catalogs > schemas > tables, with the object ids of rules/gravitino.gl
(``m1.<catalog>.<schema>.<table>``, roles ``m1/role/<name>``), 1,000 users, 100 groups, 200
roles and ~20,000 ``privilege`` grants spread over every level (metalake, catalogs, schemas,
tables), ~5% of them DENY; owners at every level; memberships, role assignments, and the
registration facts the model needs (``metalake_user``, ``metalake_group``). Deterministic for a
given ``(n_tables, seed)``.

Shape (``n`` tables):

* one *big* schema ``m1.cat000.big`` of ``big_schema_tables`` tables (default ``min(10_000,
  n // 2)``) for the ``list`` benchmark; the other tables are spread over schemas of 10..400
  tables (mean ~100), schemas over catalogs of ~50 schemas (at least 5 catalogs);
* users ``u0000``..``u0999``: 98% added to the metalake (the rest are unregistered: reading 2
  makes their grants and ownerships count for nothing); groups ``g000``..``g099``, every user in
  1-3 groups; roles ``m1/role/r000``..``m1/role/r199``: each group holds 1-3 roles, 40% of the
  users hold 1-2 roles directly;
* grants: 20 on the metalake (held by 4 "platform" roles that few principals hold), 15% on
  catalogs, 40% on schemas, the rest on tables. A role that gets SELECT/MODIFY on a schema or
  table usually (85%) also gets USE_SCHEMA on the schema and USE_CATALOG on the catalog, as real
  roles do; the other 15% lack a prerequisite (why-not: missing USE_SCHEMA / USE_CATALOG). 5% of
  the grants are DENY (SELECT_TABLE, MODIFY_TABLE or USE_SCHEMA);
* owners: the metalake (``u0000``), every catalog, every schema and 5% of the tables.

``Workload.facts`` maps relation -> list of row tuples; the rest is metadata the benchmark
uses to sample checks and updates. ``oracle`` answers the table-level operations directly from
the facts (an independent, non-Datalog reading of the same semantics, used to verify the
engine and to classify decisions).
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

METALAKE = "m1"
N_USERS = 1000
N_GROUPS = 100
N_ROLES = 200
N_GRANTS = 20_000
DENY_FRACTION = 0.05

# privilege -> object types it may be set on (a subset of gravitino.gl's supports/2)
SUPPORTS = {
    "use_catalog": {"metalake", "catalog"},
    "use_schema": {"metalake", "catalog", "schema"},
    "select_table": {"metalake", "catalog", "schema", "table"},
    "modify_table": {"metalake", "catalog", "schema", "table"},
    "create_table": {"metalake", "catalog", "schema"},
    "create_schema": {"metalake", "catalog"},
    "create_catalog": {"metalake"},
    "manage_grants": {"metalake"},
}

#: operations the benchmark checks, with the resource type each takes and its share of checks
CHECK_OPS = {
    "load_table": ("table", 0.55),
    "select_table": ("table", 0.10),
    "modify_table": ("table", 0.10),
    "alter_table": ("table", 0.05),
    "drop_table": ("table", 0.05),
    "load_schema": ("schema", 0.05),
    "create_table": ("schema", 0.04),
    "list_table": ("schema", 0.03),
    "load_catalog": ("catalog", 0.03),
}


@dataclass
class Workload:
    n_tables: int
    seed: int
    facts: dict[str, list[tuple[str, ...]]]
    users: list[str]
    groups: list[str]
    roles: list[str]
    catalogs: list[str]
    schemas: list[str]
    tables: list[str]
    parent: dict[str, str]  # child -> parent (catalog -> metalake, schema -> catalog, ...)
    schema_tables: dict[str, list[str]]
    big_schema: str
    platform_roles: list[str] = field(default_factory=list)

    @property
    def n_base_facts(self) -> int:
        return sum(len(v) for v in self.facts.values())

    def counts(self) -> dict[str, int]:
        return {k: len(v) for k, v in sorted(self.facts.items())}


def _schema_sizes(rng: random.Random, total: int) -> list[int]:
    sizes: list[int] = []
    left = total
    while left > 0:
        s = min(left, int(rng.triangular(10, 400, 20)))
        sizes.append(s)
        left -= s
    return sizes


def generate(n_tables: int, seed: int = 1, big_schema_tables: int | None = None,
             n_users: int = N_USERS, n_groups: int = N_GROUPS, n_roles: int = N_ROLES,
             n_grants: int = N_GRANTS) -> Workload:
    rng = random.Random(seed)
    big_n = min(10_000, n_tables // 2) if big_schema_tables is None else big_schema_tables
    facts: dict[str, list[tuple[str, ...]]] = {r: [] for r in (
        "entity", "contains", "member", "role_of", "privilege", "owner", "service_admin",
        "metalake_user", "metalake_group")}
    entity, contains = facts["entity"], facts["contains"]
    parent: dict[str, str] = {}

    m = METALAKE
    entity.append((m, "metalake"))

    # -- the tree ----------------------------------------------------------------------------
    sizes = _schema_sizes(rng, n_tables - big_n)
    n_schemas = len(sizes) + 1
    n_catalogs = max(5, round(n_schemas / 50))
    catalogs = [f"{m}.cat{i:03d}" for i in range(n_catalogs)]
    for c in catalogs:
        entity.append((c, "catalog"))
        contains.append((m, c))
        parent[c] = m
    schemas: list[str] = []
    schema_tables: dict[str, list[str]] = {}
    tables: list[str] = []
    big = f"{catalogs[0]}.big"
    plan = [(big, catalogs[0], big_n)]
    for i, size in enumerate(sizes):
        c = catalogs[rng.randrange(n_catalogs)]
        plan.append((f"{c}.sch{i:05d}", c, size))
    for s, c, size in plan:
        schemas.append(s)
        entity.append((s, "schema"))
        contains.append((c, s))
        parent[s] = c
        ts = [f"{s}.t{j:05d}" for j in range(size)]
        schema_tables[s] = ts
        for t in ts:
            entity.append((t, "table"))
            contains.append((s, t))
            parent[t] = s
        tables.extend(ts)

    # -- principals ---------------------------------------------------------------------------
    users = [f"u{i:04d}" for i in range(n_users)]
    groups = [f"g{i:03d}" for i in range(n_groups)]
    roles = [f"{m}/role/r{i:03d}" for i in range(n_roles)]
    facts["service_admin"].append((users[0],))
    for u in users:
        if u == users[0] or rng.random() < 0.98:
            facts["metalake_user"].append((u, m))
    for g in groups:
        facts["metalake_group"].append((g, m))
    for r in roles:
        entity.append((r, "role"))
        contains.append((m, r))
    platform = roles[:4]  # metalake-wide privileges; held by two groups and a few users
    ordinary = roles[4:]
    for u in users:
        for g in rng.sample(groups, rng.randint(1, 3)):
            facts["member"].append((u, g))
    for i, g in enumerate(groups):
        rs = rng.sample(ordinary, rng.randint(1, 3))
        if i < 2:
            rs.append(platform[i])
        for r in rs:
            facts["role_of"].append((g, r))
    for u in users:
        if rng.random() < 0.4:
            for r in rng.sample(ordinary, rng.randint(1, 2)):
                facts["role_of"].append((u, r))
        if rng.random() < 0.005:
            facts["role_of"].append((u, rng.choice(platform)))

    # -- grants -------------------------------------------------------------------------------
    grants: dict[tuple[str, str, str], str] = {}  # (role, privilege, object) -> condition

    def grant(role: str, priv: str, obj: str, cond: str = "allow") -> None:
        grants.setdefault((role, priv, obj), cond)

    for i in range(20):
        role = platform[i % len(platform)]
        priv = ("use_catalog", "use_schema", "select_table", "create_catalog",
                "manage_grants")[i % 5]
        grant(role, priv, m)

    def with_prereqs(role: str, obj: str) -> None:
        """USE_SCHEMA on the schema of obj and USE_CATALOG on its catalog, usually."""
        if rng.random() >= 0.85:
            return
        path = []
        o = obj
        while o in parent:
            path.append(o)
            o = parent[o]
        for x in path:
            if x in schema_tables:
                grant(role, "use_schema", x)
            elif x in parent and parent[x] == m:
                grant(role, "use_catalog", x)

    # the big schema: a handful of roles read it wholesale, some tables individually
    for role in rng.sample(ordinary, 6):
        grant(role, "select_table", big)
        with_prereqs(role, big)
    n_deny_target = int(n_grants * DENY_FRACTION)
    while len(grants) < n_grants - n_deny_target:
        role = rng.choice(ordinary)
        x = rng.random()
        if x < 0.08:
            c = rng.choice(catalogs)
            priv = rng.choices(["use_catalog", "use_schema", "select_table", "modify_table",
                                "create_schema"], [6, 2, 1, 0.5, 1])[0]
            grant(role, priv, c)
            if priv in ("select_table", "modify_table") and rng.random() < 0.85:
                grant(role, "use_catalog", c)
                grant(role, "use_schema", c)
        elif x < 0.5:
            s = rng.choice(schemas)
            priv = rng.choices(["use_schema", "select_table", "modify_table", "create_table"],
                               [3, 5, 2, 1])[0]
            grant(role, priv, s)
            if priv != "use_schema":
                with_prereqs(role, s)
        else:
            t = rng.choice(tables)
            priv = rng.choices(["select_table", "modify_table"], [3, 1])[0]
            grant(role, priv, t)
            with_prereqs(role, t)
    # DENY: mostly on objects some role already reads, so that DENY really beats an ALLOW
    allowed_grants = [k for k, v in grants.items() if v == "allow"
                      and k[1] in ("select_table", "modify_table", "use_schema")
                      and k[2] != m]
    # ... and mostly through a role held by someone who also holds the ALLOW
    role_sets: dict[str, set[str]] = {}
    for p, r in facts["role_of"]:
        role_sets.setdefault(p, set()).add(r)
    holders: dict[str, list[set[str]]] = {}
    for u, g in facts["member"]:
        rs = role_sets.get(u, set()) | role_sets.get(g, set())
        for r in rs:
            holders.setdefault(r, []).append(rs)
    while len(grants) < n_grants:
        r0, p0, o0 = rng.choice(allowed_grants)
        others = sorted(rng.choice(holders[r0]) - {r0}) if r0 in holders else []
        others = [r for r in others if r not in platform]
        role = rng.choice(others) if others and rng.random() < 0.7 else rng.choice(ordinary)
        obj = o0
        if o0 in schema_tables and p0 != "use_schema" and rng.random() < 0.5:
            obj = rng.choice(schema_tables[o0])  # deny one table of an allowed schema
        grant(role, p0, obj, "deny")
    for (role, priv, obj), cond in grants.items():
        facts["privilege"].append((role, priv, obj, cond))

    # -- owners -------------------------------------------------------------------------------
    facts["owner"].append((m, users[0]))
    for c in catalogs:
        facts["owner"].append((c, rng.choice(users)))
    for s in schemas:
        facts["owner"].append((s, rng.choice(users)))
    for r in roles:
        facts["owner"].append((r, users[0]))
    for t in tables:
        if rng.random() < 0.05:
            facts["owner"].append((t, rng.choice(users)))

    return Workload(n_tables, seed, facts, users, groups, roles, catalogs, schemas, tables,
                    parent, schema_tables, big, platform)


# -- an independent reading of the model, for verification ----------------------------------------


class Oracle:
    """The table-level decisions of rules/gravitino.gl computed directly from the facts.

    Only for the operations in ``CHECK_OPS`` and the facts this generator produces (no
    deprecated privileges, no authorization_disabled, no group owners). ``decide`` returns
    ``(allowed, reason)`` with the reason classifying the decision.
    """

    def __init__(self, facts: dict[str, list[tuple[str, ...]]]) -> None:
        self.refresh(facts)

    def refresh(self, facts: dict[str, list[tuple[str, ...]]]) -> None:
        self.type = {o: t for o, t in facts["entity"]}
        self.parent = {c: p for p, c in facts["contains"]}
        self.registered = {u for u, _ in facts["metalake_user"]}
        self.member: dict[str, set[str]] = {}
        for u, g in facts["member"]:
            self.member.setdefault(u, set()).add(g)
        self.role_of: dict[str, set[str]] = {}
        for p, r in facts["role_of"]:
            self.role_of.setdefault(p, set()).add(r)
        # object -> privilege -> {condition: set(roles)}
        self.grants: dict[str, dict[str, dict[str, set[str]]]] = {}
        for role, priv, obj, cond in facts["privilege"]:
            t = self.type.get(obj)
            if t is None or t not in SUPPORTS.get(priv, ()) or cond not in ("allow", "deny"):
                continue
            self.grants.setdefault(obj, {}).setdefault(priv, {}).setdefault(cond, set()).add(role)
        self.owner: dict[str, set[str]] = {}
        for o, u in facts["owner"]:
            self.owner.setdefault(o, set()).add(u)

    def apply(self, rel: str, row: tuple[str, ...], present: bool) -> None:
        """Mirror one inserted (``present``) or retracted base fact."""
        def put(d: dict[str, set[str]], k: str, v: str) -> None:
            if present:
                d.setdefault(k, set()).add(v)
            else:
                d.get(k, set()).discard(v)

        if rel == "entity":
            if present:
                self.type[row[0]] = row[1]
            else:
                self.type.pop(row[0], None)
        elif rel == "contains":
            if present:
                self.parent[row[1]] = row[0]
            else:
                self.parent.pop(row[1], None)
        elif rel == "metalake_user":
            (self.registered.add if present else self.registered.discard)(row[0])
        elif rel == "member":
            put(self.member, row[0], row[1])
        elif rel == "role_of":
            put(self.role_of, row[0], row[1])
        elif rel == "owner":
            put(self.owner, row[0], row[1])
        elif rel == "privilege":
            role, priv, obj, cond = row
            t = self.type.get(obj)
            if t is None or t not in SUPPORTS.get(priv, ()) or cond not in ("allow", "deny"):
                return
            d = self.grants.setdefault(obj, {}).setdefault(priv, {}).setdefault(cond, set())
            (d.add if present else d.discard)(role)
        else:
            raise ValueError(f"the oracle does not model updates of {rel}")

    def path(self, obj: str) -> list[str]:
        out = [obj]
        while out[-1] in self.parent:
            out.append(self.parent[out[-1]])
        return out

    def roles(self, u: str) -> set[str]:
        rs = set(self.role_of.get(u, ()))
        for g in self.member.get(u, ()):
            rs |= self.role_of.get(g, set())
        return rs

    def _priv(self, u: str, roles: set[str], priv: str, obj: str) -> str:
        """'allow', 'deny' (an ALLOW applies but a DENY wins), 'none'."""
        allow = deny = False
        for a in self.path(obj):
            g = self.grants.get(a, {}).get(priv)
            if g:
                allow = allow or bool(g.get("allow", set()) & roles)
                deny = deny or bool(g.get("deny", set()) & roles)
        if allow and u not in self.registered:
            allow = False
        if allow and deny:
            return "deny"
        return "allow" if allow else "none"

    def controls(self, u: str, obj: str) -> bool:
        if u not in self.registered:
            return False
        return any(u in self.owner.get(a, ()) for a in self.path(obj)
                   if self.type.get(a) != "model_version")

    def authorized(self, u: str, roles: set[str], priv: str, obj: str) -> str:
        if self.controls(u, obj):
            return "owner"
        return self._priv(u, roles, priv, obj)

    def decide(self, u: str, op: str, obj: str) -> tuple[bool, str]:
        if self.type.get(obj) is None:
            return False, "no such object"
        if u not in self.registered:
            return False, "not added to the metalake"
        roles = self.roles(u)
        path = self.path(obj)
        cat = next((a for a in path if self.type.get(a) == "catalog"), None)
        sch = next((a for a in path if self.type.get(a) == "schema"), None)
        if cat is None or self.type[obj] not in CHECK_OPS[op][0]:
            return False, "wrong type"
        a = self.authorized(u, roles, "use_catalog", cat)
        if a not in ("owner", "allow"):
            return False, "DENY use_catalog" if a == "deny" else "missing use_catalog"
        if op == "load_catalog":
            return True, "owner" if a == "owner" else "privilege"
        assert sch is not None
        a = self.authorized(u, roles, "use_schema", sch)
        if a not in ("owner", "allow"):
            return False, "DENY use_schema" if a == "deny" else "missing use_schema"
        if op in ("load_schema", "list_table"):
            return True, "owner" if a == "owner" else "privilege"
        if op == "drop_table":
            return (True, "owner") if self.controls(u, obj) else (False, "not an owner")
        if op == "create_table":
            a = self.authorized(u, roles, "create_table", obj)
            return (True, a) if a in ("owner", "allow") else (False, f"{a} create_table")
        privs = ["modify_table"] if op in ("modify_table", "alter_table") else [
            "select_table", "modify_table"]
        got = [self.authorized(u, roles, p, obj) for p in privs]
        for a in got:
            if a in ("owner", "allow"):
                return True, "owner" if a == "owner" else "privilege"
        if "deny" in got:
            return False, "DENY wins"
        return False, "no privilege"


class Sampler:
    """Random checks ``(user, operation, resource)``: 60% *targeted* (the resource lies under
    an object some role of the user has a grant on, ALLOW or DENY, so that privileges, DENYs and
    missing prerequisites all show up) and 40% uniform (user, resource of the right type)."""

    def __init__(self, w: Workload, seed: int = 7) -> None:
        self.w = w
        self.rng = random.Random(seed)
        self.ops = list(CHECK_OPS)
        self.weights = [CHECK_OPS[o][1] for o in self.ops]
        roles_of: dict[str, set[str]] = {}
        for p, r in w.facts["role_of"]:
            roles_of.setdefault(p, set()).add(r)
        by_role: dict[str, list[str]] = {}
        for role, priv, obj, _ in w.facts["privilege"]:
            if priv in ("select_table", "modify_table", "create_table"):
                by_role.setdefault(role, []).append(obj)
        member: dict[str, list[str]] = {}
        for u, g in w.facts["member"]:
            member.setdefault(u, []).append(g)
        self.granted_objects: dict[str, list[str]] = {}
        for u in w.users:
            rs = set(roles_of.get(u, ()))
            for g in member.get(u, ()):
                rs |= roles_of.get(g, set())
            self.granted_objects[u] = [o for r in sorted(rs) for o in by_role.get(r, ())]
        self.catalog_schemas: dict[str, list[str]] = {}
        for s in w.schemas:
            self.catalog_schemas.setdefault(w.parent[s], []).append(s)

    def _type(self, obj: str) -> str:
        w = self.w
        if obj == METALAKE:
            return "metalake"
        if obj in self.catalog_schemas or w.parent.get(obj) == METALAKE:
            return "catalog"
        return "schema" if obj in w.schema_tables else "table"

    def _below(self, obj: str, typ: str) -> str | None:
        """A random object of ``typ`` at or below ``obj``, else the ancestor of that type."""
        w, rng = self.w, self.rng
        up = obj
        while True:  # obj itself or an ancestor of the type asked for
            if self._type(up) == typ:
                return up
            if up not in w.parent:
                break
            up = w.parent[up]
        t = self._type(obj)
        if t == "metalake":
            obj, t = rng.choice(w.catalogs), "catalog"
            if typ == "catalog":
                return obj
        if t == "catalog":
            ss = self.catalog_schemas.get(obj)
            if not ss:
                return None
            obj, t = rng.choice(ss), "schema"
            if typ == "schema":
                return obj
        if t == "schema" and typ == "table":
            ts = w.schema_tables[obj]
            return rng.choice(ts) if ts else None
        return None

    def one(self, op: str | None = None) -> tuple[str, str, str]:
        w, rng = self.w, self.rng
        op = op or rng.choices(self.ops, self.weights)[0]
        typ = CHECK_OPS[op][0]
        u = rng.choice(w.users)
        if rng.random() < 0.6 and self.granted_objects[u]:
            got = self._below(rng.choice(self.granted_objects[u]), typ)
            if got is not None:
                return u, op, got
        pool = {"table": w.tables, "schema": w.schemas, "catalog": w.catalogs}[typ]
        return u, op, rng.choice(pool)

    def many(self, n: int, op: str | None = None) -> list[tuple[str, str, str]]:
        return [self.one(op) for _ in range(n)]


def summary(w: Workload) -> str:
    c = Counter(cond for *_, cond in w.facts["privilege"])
    lv = Counter()
    types = {o: t for o, t in w.facts["entity"]}
    for _, _, o, _ in w.facts["privilege"]:
        lv[types.get(o, "?")] += 1
    return (f"{w.n_tables:,} tables in {len(w.schemas):,} schemas / {len(w.catalogs)} catalogs "
            f"(big schema {len(w.schema_tables[w.big_schema]):,}); {len(w.users)} users, "
            f"{len(w.groups)} groups, {len(w.roles)} roles; {len(w.facts['privilege']):,} grants "
            f"({dict(lv)}; {c['deny']} deny); {len(w.facts['owner']):,} owners; "
            f"{w.n_base_facts:,} base facts")


if __name__ == "__main__":
    import sys
    import time

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    t0 = time.perf_counter()
    w = generate(n)
    print(summary(w), f"generated in {time.perf_counter() - t0:.2f} s")
    print(w.counts())
