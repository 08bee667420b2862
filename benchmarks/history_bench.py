#!/usr/bin/env python3
"""History (issue 28): as-of answers and timelines over a store with a long change log.

A Gravitino-shaped world (``--tables``, SQLite) loaded as revision 1, then ``--transactions``
one-fact transactions, each granting or revoking a role's privilege or a user's membership
(with an author and a reason). Measured, medians of ``--repeat`` runs:

* **facts at a past revision** (``grantlog.store.history.snapshot_at``, the SQL read), at a
  revision near the start and one near the end;
* **as-of check, first** at a revision not asked before (reading its facts, evaluating them
  under its policy, deciding) and **again** at the same revision (the kept past reasoner);
* **check now** and **a new reasoner over the store, first check** (a cold start), for scale;
* **timeline** of one (subject, operation, resource) over the whole history;
* **store growth** per transaction (bytes of the SQLite file, write metadata included);
* **facts at a random past revision**, p50, from the log only and after ``store checkpoint``
  (the temporal table: grantlog/store/checkpoints.py), and the checkpoint's cost and bytes.

    .venv/bin/python benchmarks/history_bench.py --tables 10000 --transactions 2000
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import gravitino_workload as gw

import grantlog
from grantlog.store import history

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "rules" / "gravitino.gl"


def ms(seconds: list[float]) -> str:
    return f"{statistics.median(seconds) * 1000:.3f} ms"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tables", type=int, default=10_000)
    ap.add_argument("--transactions", type=int, default=2_000)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    rng = random.Random(7)
    w = gw.generate(a.tables, seed=1)
    program = grantlog.compile(paths=[str(RULES)])
    tmp = tempfile.mkdtemp()
    url = f"sqlite:///{tmp}/history.db"
    r = grantlog.Reasoner(program, store=url, create=True, follow=False)
    with r.transaction(author="loader") as tx:
        for rel, rows in w.facts.items():
            tx.insert(rel, rows)
    assert r.store is not None
    size0 = os.path.getsize(r.store.url.split("///", 1)[1])
    privs, members = w.facts["privilege"], w.facts["member"]
    table = w.tables[0]
    user = next(u for u, _ in members)
    t0 = time.perf_counter()
    for i in range(a.transactions):
        if i % 2:
            row = rng.choice(privs)
            verb = r.retract if rng.random() < 0.5 else r.insert
            verb("privilege", [row], author=f"admin{i % 7}", reason="access review")
        else:
            row = (user, rng.choice(w.groups))
            verb = r.retract if rng.random() < 0.5 else r.insert
            verb("member", [row], author="hr-sync", reason="org change")
    writes = time.perf_counter() - t0
    head = r.revision
    r.store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    grew = os.path.getsize(r.store.url.split("///", 1)[1]) - size0
    facts = sum(len(v) for v in w.facts.values())
    print(f"world: {a.tables:,} tables, {facts:,} base facts; {a.transactions:,} transactions "
          f"({writes / a.transactions * 1000:.2f} ms each); head {head}; "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"store growth: {grew / a.transactions:.0f} bytes per transaction")
    for rev in (2, head - 1):
        times = []
        for _ in range(a.repeat):
            t = time.perf_counter()
            history.snapshot_at(r.store, rev)
            times.append(time.perf_counter() - t)
        print(f"facts at revision {rev} (SQL): {ms(times)}")
    sample = rng.sample(range(2, head), min(a.repeat * 4, head - 2))
    for label in ("log only", "after `store checkpoint`"):
        if label != "log only":
            t = time.perf_counter()
            r.store.checkpoint()
            took = time.perf_counter() - t
            r.store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            more = os.path.getsize(r.store.url.split("///", 1)[1]) - size0 - grew
            print(f"checkpoint (the whole log folded): {took * 1000:.0f} ms, "
                  f"+{more / max(head, 1):.0f} bytes per transaction")
        times = []
        for rev in sample:
            t = time.perf_counter()
            history.snapshot_at(r.store, rev)
            times.append(time.perf_counter() - t)
        print(f"facts at a random past revision, {label}: p50 {ms(times)}")
    op = "select_table"
    now = []
    for _ in range(a.repeat * 20):
        t = time.perf_counter()
        r.check(user, op, table)
        now.append(time.perf_counter() - t)
    first, again = [], []
    for rev in rng.sample(range(2, head + 1), a.repeat):
        t = time.perf_counter()
        r.check(user, op, table, at_revision=rev)
        first.append(time.perf_counter() - t)
        for _ in range(20):
            t = time.perf_counter()
            r.check(user, op, table, at_revision=rev)
            again.append(time.perf_counter() - t)
    cold = []
    for _ in range(a.repeat):
        t = time.perf_counter()
        with grantlog.Reasoner(program, store=url, follow=False) as fresh:
            fresh.check(user, op, table)
        cold.append(time.perf_counter() - t)
    print(f"check now: {ms(now)}; a new reasoner over the store, first check: {ms(cold)}; "
          f"as-of check, first at a revision: {ms(first)}; again: {ms(again)}")
    times = []
    for _ in range(a.repeat):
        t = time.perf_counter()
        found = r.timeline(user, op, table)
        times.append(time.perf_counter() - t)
    print(f"timeline over {head} revisions: {ms(times)} ({len(found)} intervals)")
    r.close()


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    main()
