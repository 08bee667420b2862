"""The workload's own ``Oracle``: plain Python over dictionaries, a voter and a reference point
(what a hand-written authorizer with no engine at all costs)."""

from __future__ import annotations

import gravitino_workload as gw

from peers.base import Engine, Facts, Row


class OracleEngine(Engine):
    name = "oracle"
    encoding = ("gravitino_workload.Oracle: hand-written Python over dicts (parents, grants by "
                "object and privilege, role sets), walking the path of the object per check")
    check_path = "`Oracle.decide(user, op, obj)`"
    update_path = "`Oracle.apply('privilege', row, present)` (dict update)"
    bulk_path = "`decide` for every (user, table) pair of the schema"

    def version(self) -> str:
        return "benchmarks/gravitino_workload.py"

    def load(self, facts: Facts) -> None:
        self.o = gw.Oracle(facts)

    def check(self, user: str, op: str, obj: str) -> bool:
        return self.o.decide(user, op, obj)[0]

    def grant(self, row: Row) -> None:
        self.o.apply("privilege", row, True)

    def revoke(self, row: Row) -> None:
        self.o.apply("privilege", row, False)

    def bulk(self, schema: str, users: list[str]) -> set[tuple[str, str]] | None:
        ts = [t for t, p in self.o.parent.items() if p == schema and self.o.type.get(t) == "table"]
        return {(u, t) for u in users for t in ts if self.o.decide(u, "load_table", t)[0]}
