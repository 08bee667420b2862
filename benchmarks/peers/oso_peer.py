"""oso 0.27 (the Polar language; Rust VM, Python host): the model as Polar rules over the
application's own objects.

Polar's resource blocks (``resource Table { roles = ...; permissions = ...; }``) have no DENY
and no prerequisites on other resources, so the policy is written as plain Polar rules: the
object tree is walked through ``obj.parent``, roles come from ``user.roles`` and
``user.groups``, grants are looked up with ``obj.roles_with(privilege, effect)`` on the object
(or an ancestor), DENY wins through ``not``, and ``allow/3`` has one rule per operation.
The data stays in Python objects (oso's model: the policy reads application data), so a grant
or revoke is a change of the application's dict, seen by the next query.
"""

from __future__ import annotations

from typing import Any

import gravitino_workload as gw

from peers.base import Engine, Facts, Row, pkg_version

POLICY = """
on_path(obj, obj);
on_path(obj, anc) if obj.parent != nil and on_path(obj.parent, anc);

holds(user: User, role) if role in user.roles;
holds(user: User, role) if group in user.groups and role in group.roles;

# users act only in metalakes they were added to (reading 2)
registered(user: User, obj) if on_path(obj, m) and m.kind = "metalake" and m.id in user.metalakes;

# an ALLOW (DENY) of priv on obj or an ancestor reaches the user through a role
applies(user: User, priv: String, obj, effect: String) if
    on_path(obj, a) and role in a.roles_with(priv, effect) and holds(user, role) and cut;

# DENY wins on the same privilege
has_privilege(user: User, priv: String, obj) if
    registered(user, obj) and
    applies(user, priv, obj, "allow") and
    not applies(user, priv, obj, "deny");

# the owner of an object or an ancestor; no DENY takes it away (reading 8)
controls(user: User, obj) if
    registered(user, obj) and on_path(obj, a) and user.id in a.owners and cut;

authorized(user: User, _priv: String, obj) if controls(user, obj) and cut;
authorized(user: User, priv: String, obj) if has_privilege(user, priv, obj);

can_use_catalog(user: User, c: Catalog) if authorized(user, "use_catalog", c);
can_use_schema(user: User, s: Schema) if
    can_use_catalog(user, s.parent) and authorized(user, "use_schema", s);
reads_table(user: User, t: Table) if authorized(user, "select_table", t) and cut;
reads_table(user: User, t: Table) if authorized(user, "modify_table", t);

allow(user: User, "load_catalog", c: Catalog) if can_use_catalog(user, c);
allow(user: User, "load_schema", s: Schema) if can_use_schema(user, s);
allow(user: User, "list_table", s: Schema) if can_use_schema(user, s);
allow(user: User, "create_table", s: Schema) if
    can_use_schema(user, s) and authorized(user, "create_table", s);
allow(user: User, "load_table", t: Table) if
    can_use_schema(user, t.parent) and reads_table(user, t);
allow(user: User, "select_table", t: Table) if
    can_use_schema(user, t.parent) and reads_table(user, t);
allow(user: User, "alter_table", t: Table) if
    can_use_schema(user, t.parent) and authorized(user, "modify_table", t);
allow(user: User, "modify_table", t: Table) if
    can_use_schema(user, t.parent) and authorized(user, "modify_table", t);
allow(user: User, "drop_table", t: Table) if can_use_schema(user, t.parent) and controls(user, t);
"""


class Obj:
    """A securable object: its id, kind, parent, grants (privilege, effect) -> roles, owners."""

    __slots__ = ("grants", "id", "kind", "owners", "parent")

    def __init__(self, id: str, kind: str) -> None:
        self.id = id
        self.kind = kind
        self.parent: Obj | None = None
        self.grants: dict[tuple[str, str], set[str]] = {}
        self.owners: set[str] = set()

    def roles_with(self, priv: str, effect: str) -> list[str]:
        return list(self.grants.get((priv, effect), ()))


class Metalake(Obj):
    __slots__ = ()


class Catalog(Obj):
    __slots__ = ()


class Schema(Obj):
    __slots__ = ()


class Table(Obj):
    __slots__ = ()


class Role(Obj):
    __slots__ = ()


class Group:
    __slots__ = ("id", "roles")

    def __init__(self, id: str) -> None:
        self.id = id
        self.roles: list[str] = []


class User:
    __slots__ = ("groups", "id", "metalakes", "roles")

    def __init__(self, id: str) -> None:
        self.id = id
        self.roles: list[str] = []
        self.groups: list[Group] = []
        self.metalakes: set[str] = set()


CLASSES: dict[str, type[Obj]] = {"metalake": Metalake, "catalog": Catalog, "schema": Schema,
                                 "table": Table, "role": Role}


class OsoEngine(Engine):
    name = "oso"
    encoding = ("Polar rules over Python objects (`obj.parent` walk, `user.roles` / "
                "`user.groups`, `obj.roles_with(privilege, effect)`, DENY via `not`, owners, "
                "prerequisites, one `allow` rule per operation)")
    check_path = "`Oso.is_allowed(user, op, obj)` (Polar VM; attribute lookups call into Python)"
    update_path = "change the object's grant set in Python (read live by the next query)"
    bulk_path = ("none without a data-filtering adapter (Polar cannot enumerate Python "
                 "objects): a loop of point checks")

    def version(self) -> str:
        return f"oso {pkg_version('oso')}"

    def load(self, facts: Facts) -> None:
        from oso import Oso

        self.objs: dict[str, Obj] = {o: CLASSES[t](o, t) for o, t in facts["entity"]}
        for p, c in facts["contains"]:
            self.objs[c].parent = self.objs[p]
        for row in facts["privilege"]:
            self.grant(row)
        for o, u in facts["owner"]:
            self.objs[o].owners.add(u)
        self.users: dict[str, User] = {}
        self.groups: dict[str, Group] = {}
        for u, g in facts["member"]:
            self._user(u).groups.append(self.groups.setdefault(g, Group(g)))
        for p, r in facts["role_of"]:
            (self.groups[p] if p in self.groups else self._user(p)).roles.append(r)
        for u, m in facts["metalake_user"]:
            self._user(u).metalakes.add(m)
        oso: Any = Oso()
        for cls in (User, Group, *CLASSES.values()):
            oso.register_class(cls)
        oso.load_str(POLICY)
        self.oso = oso

    def _user(self, u: str) -> User:
        got = self.users.get(u)
        if got is None:
            got = self.users[u] = User(u)
        return got

    def check(self, user: str, op: str, obj: str) -> bool:
        o = self.objs.get(obj)
        if o is None:
            return False
        return bool(self.oso.is_allowed(self._user(user), op, o))

    def grant(self, row: Row) -> None:
        role, priv, obj, cond = row
        o = self.objs.get(obj)
        if o is not None and o.kind in gw.SUPPORTS.get(priv, ()) and cond in ("allow", "deny"):
            o.grants.setdefault((priv, cond), set()).add(role)

    def revoke(self, row: Row) -> None:
        role, priv, obj, cond = row
        o = self.objs.get(obj)
        if o is not None:
            o.grants.get((priv, cond), set()).discard(role)
