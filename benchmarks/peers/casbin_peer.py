"""pycasbin: RBAC with resource roles and an allow-and-deny effect, one privilege per enforce.

The model (below) is casbin's "RBAC with resource roles" plus its "allow-and-deny" effect: ``g``
links users to groups, users and groups to roles, and users to the metalakes they were added
to; ``g2`` links every object to its parent (table -> schema -> catalog -> metalake), so
``g2(r.obj, p.obj)`` is "the grant's object is the requested object or an ancestor"; a policy
line is a grant ``role, object, privilege, allow|deny`` or an ownership ``user, object, own,
allow``; the effect ``some(where (p.eft == allow)) && !some(where (p.eft == deny))`` is "DENY
wins on the same privilege". Ownership is its own action ``own``, so no DENY line ever matches
it (reading 8). The matcher also requires ``g(r.sub, <metalake>)``: unregistered users match no
line (reading 2).

Like Cedar, one enforce decides one privilege on one object; a check composes the operation from
its privileges per the API table (base.decide_by_privileges), stopping at the first unmet
condition — which is how Gravitino uses jCasbin (its model checks one privilege or OWNER on one
object per request).

Speed: pycasbin evaluates the matcher (a Python expression) against each candidate policy line.
``FastEnforcer`` with ``cache_key_order=[2]`` indexes the lines by privilege, so an enforce
scans only that privilege's lines (thousands here) instead of all of them. Two pycasbin 1.43
bugs are worked around below: ``FastModel`` drops every role definition after the first (its
``add_def`` returns None, which ends ``load_section``'s loop), which loses ``g2``; and
``FastPolicy`` with a one-key index fails on ``add_policy`` (its unfiltered iteration assumes
two key levels; its ``len``, called by every ``add_policy``, walks every line).
"""

from __future__ import annotations

from typing import Any

import gravitino_workload as gw

from peers.base import Engine, Facts, Hierarchy, Row, decide_by_privileges, pkg_version

MODEL = """
[request_definition]
r = sub, obj, act

[policy_definition]
p = sub, obj, act, eft

[role_definition]
g = _, _
g2 = _, _

[policy_effect]
e = some(where (p.eft == allow)) && !some(where (p.eft == deny))

[matchers]
m = r.act == p.act && g2(r.obj, p.obj) && g(r.sub, p.sub) && g(r.sub, "{metalake}")
"""


class CasbinEngine(Engine):
    name = "casbin"
    encoding = ("RBAC with resource roles: `g` user->group->role (+ user->metalake), `g2` "
                "object->parent, policy lines `role, object, privilege, allow|deny` and "
                "`user, object, own, allow`, effect allow-and-deny (DENY wins); the operation is "
                "composed from per-privilege `enforce` calls")
    check_path = ("`FastEnforcer.enforce(user, object, privilege)` per privilege the operation "
                  "needs, in API-table order, stopping at the first unmet condition "
                  "(policy lines indexed by privilege)")
    update_path = "`add_policy` / `remove_policy` of the grant line"
    bulk_path = "none: casbin answers one request at a time (a loop of enforce calls)"

    def version(self) -> str:
        return f"casbin {pkg_version('casbin')}"

    def load(self, facts: Facts) -> None:
        import casbin
        from casbin.model import FastModel, Model
        from casbin.model.policy_fast import FastPolicy

        class _IndexedPolicy(FastPolicy):  # type: ignore[misc]
            """FastPolicy with a one-key index: 1.43's unfiltered iteration assumes two
            levels of keys, and its ``len`` (called by every ``add_policy``) walks them all."""

            def __init__(self, order: list[int]) -> None:
                super().__init__(order)
                self.n = 0

            def append(self, item: Any) -> None:
                super().append(item)
                self.n += 1

            def remove(self, policy: Any) -> bool:
                if policy in self:
                    self.n -= 1
                return bool(super().remove(policy))

            def __len__(self) -> int:
                f = self._current_filter
                return self.n if f is None else len(f)

            def __iter__(self) -> Any:
                f = self._current_filter
                rows = f if f is not None else (r for s in self._cache.values() for r in s)
                return (list(r) for r in rows)

        class _FastModel(FastModel):  # type: ignore[misc]
            def add_def(self, sec: str, key: str, value: Any) -> Any:
                ok = Model.add_def(self, sec, key, value)
                if sec == "p" and key == "p":
                    self.model[sec][key].policy = _IndexedPolicy(self._cache_key_order)
                return ok

        self.h = h = Hierarchy(facts)
        metalakes = sorted(o for o, t in facts["entity"] if t == "metalake")
        if len(metalakes) != 1:
            raise ValueError("this casbin model is written for one metalake")
        model = _FastModel([2])
        model.load_model_from_text(MODEL.replace("{metalake}", metalakes[0]))
        e = casbin.FastEnforcer(model, cache_key_order=[2])
        e.enable_auto_build_role_links(False)
        e.add_policies([self._line(row) for row in facts["privilege"]
                        if self._valid(row)])
        e.add_policies([[u, o, "own", "allow"] for o, u in facts["owner"]
                        if h.type.get(o) in ("metalake", "catalog", "schema", "table")])
        e.add_named_grouping_policies("g", [list(r) for r in facts["member"]]
                                      + [list(r) for r in facts["role_of"]]
                                      + [list(r) for r in facts["metalake_user"]])
        e.add_named_grouping_policies("g2", [[c, p] for p, c in facts["contains"]
                                             if h.type.get(c) != "role"])
        e.build_role_links()
        self.e = e

    def _valid(self, row: Row) -> bool:
        _, priv, obj, cond = row
        return (self.h.type.get(obj) in gw.SUPPORTS.get(priv, ())
                and cond in ("allow", "deny"))

    @staticmethod
    def _line(row: Row) -> list[str]:
        role, priv, obj, cond = row
        return [role, obj, priv, cond]

    def check(self, user: str, op: str, obj: str) -> bool:
        enforce = self.e.enforce

        def controls(o: str) -> bool:
            return bool(enforce(user, o, "own"))

        def authorized(p: str, o: str) -> bool:
            return controls(o) or bool(enforce(user, o, p))

        return decide_by_privileges(self.h, op, obj, authorized, controls)

    def grant(self, row: Row) -> None:
        if self._valid(row):
            self.e.add_policy(*self._line(row))

    def revoke(self, row: Row) -> None:
        self.e.remove_policy(*self._line(row))

    def notes(self) -> dict[str, object]:
        return {"policy lines": len(self.e.get_policy())}
