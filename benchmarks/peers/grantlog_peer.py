"""grantlog itself: rules/gravitino.gl (+ the prelude) through the public API, called live."""

from __future__ import annotations

import subprocess
from pathlib import Path

import grantlog
from peers.base import Engine, Facts, Row

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "rules" / "gravitino.gl"


class GrantlogEngine(Engine):
    name = "grantlog"
    encoding = ("rules/gravitino.gl + rules/prelude.gl unchanged (the whole seed model, every API "
                "row), compiled once; base facts inserted in one transaction")
    check_path = "`Reasoner.check(user, op, obj)` (goal-directed; builds the decision's reasons)"
    update_path = "`Reasoner.insert` / `Reasoner.retract` of one `privilege` row (incremental)"
    bulk_path = "`Reasoner.who('load_table', t)` for every table t of the schema"

    def version(self) -> str:
        try:
            head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                  capture_output=True, text=True, check=True).stdout.strip()
            dirty = subprocess.run(["git", "status", "--porcelain", "engine", "rules",
                                    "grantlog", "grammar"], cwd=ROOT, capture_output=True,
                                   text=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return grantlog.__version__
        return f"{grantlog.__version__} ({head}{' + uncommitted engine changes' if dirty else ''})"

    def load(self, facts: Facts) -> None:
        self.program = grantlog.compile(paths=[str(RULES)])
        self.r = grantlog.Reasoner(self.program)
        with self.r.transaction() as tx:
            for rel, rows in facts.items():
                tx.insert(rel, rows)

    def check(self, user: str, op: str, obj: str) -> bool:
        return self.r.check(user, op, obj).allowed

    def grant(self, row: Row) -> None:
        self.r.insert("privilege", [row])

    def revoke(self, row: Row) -> None:
        self.r.retract("privilege", [row])

    def bulk(self, schema: str, users: list[str]) -> set[tuple[str, str]] | None:
        wanted = set(users)
        tables = [b["T"] for b in self.r.query(f'contains("{schema}", T), entity(T, table)')]
        return {(u, t) for t in tables for u in self.r.who("load_table", t) if u in wanted}

    def notes(self) -> dict[str, object]:
        return {"materialized": sorted(self.program.derived - self.program.virtual)}
