#!/usr/bin/env python
"""Expiring and scheduled grants (issue #28, item 6): what validity intervals cost a reasoner.

Usage (from the repository root)::

    .venv/bin/python benchmarks/validity_bench.py                 # 100k tables
    .venv/bin/python benchmarks/validity_bench.py --size 10000

On the Gravitino-shaped workload (benchmarks/gravitino_workload.py, rules/gravitino.gl), warm,
medians of 2,000 sampled checks (``time.perf_counter_ns`` around each):

(each scenario's checks are asked once untimed, then timed: the steady state, decisions and
plans warm)

* **check, no interval**: the reasoner holds no fact with an interval (every read still looks
  at the clock: an empty heap);
* **check, 1,000 intervals pending**: 1,000 memberships and role holdings written with a
  ``valid_until`` a day ahead (every read compares the heap's top with ``time.time()``);
* **check, now= same stretch**: ``check(..., now=T)`` with no edge between the clock and T
  (answered by the reasoner itself);
* **check, now= another stretch**: ``now`` past the edges: the first question builds the
  reasoner of that moment (its cost reported apart), the next ones reuse it;
* **tick over one edge**: moving the clock over one expiring membership (the DRed
  maintenance of its loss, as a retract would cost), median of 50;
* **retract**: the same membership retracted instead (the yardstick).

Correctness first: 300 sampled checks at ``now=`` past the edges must equal a fresh reasoner
built without the expired facts.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import ROOT, log, world

import grantlog


def _median_us(fn, calls) -> float:  # type: ignore[no-untyped-def]
    for args in calls:  # warm: every scenario is timed on its second pass
        fn(*args)
    times = []
    for args in calls:
        t0 = time.perf_counter_ns()
        fn(*args)
        times.append(time.perf_counter_ns() - t0)
    return statistics.median(times) / 1000


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=100_000)
    a = ap.parse_args()
    program, w, sampler = world(ROOT / "rules" / "gravitino.gl", a.size)
    r = grantlog.Reasoner(program)
    with r.transaction() as tx:
        for rel, rows in w.facts.items():
            tx.insert(rel, rows)
    r.prepare()
    checks = sampler.many(2000)
    out: dict[str, float] = {}
    out["check, no interval (µs p50)"] = _median_us(r.check, checks)

    rng = random.Random(5)
    timed_rows = rng.sample(w.facts["member"], min(500, len(w.facts["member"]))) + \
        rng.sample(w.facts["role_of"], min(500, len(w.facts["role_of"])))
    day = time.time() + 86400
    with r.transaction() as tx:
        for row in timed_rows[:500]:
            tx.insert("member", [row], valid_until=day)
        for row in timed_rows[500:]:
            tx.insert("role_of", [row], valid_until=day)
    out["check, 1,000 intervals pending (µs p50)"] = _median_us(r.check, checks)
    soon = time.time() + 3600
    out["check, now= same stretch (µs p50)"] = _median_us(
        lambda *c: r.check(*c, now=soon), checks)
    later = day + 1
    t0 = time.perf_counter()
    r.check(*checks[0], now=later)
    out["first check at now= another stretch (ms)"] = (time.perf_counter() - t0) * 1000
    out["check, now= another stretch, reused (µs p50)"] = _median_us(
        lambda *c: r.check(*c, now=later), checks)

    # correctness: the moment past the edges equals a reasoner without the expired facts
    fresh = grantlog.Reasoner(program)
    gone = {("member", x) for x in timed_rows[:500]} | {("role_of", x) for x in timed_rows[500:]}
    with fresh.transaction() as tx:
        for rel, rows in w.facts.items():
            tx.insert(rel, [x for x in rows if (rel, x) not in gone])
    for c in checks[:300]:
        if r.check(*c, now=later).allowed != fresh.check(*c).allowed:
            log(f"MISMATCH at now= past the edges: {c}")
            return 1

    # one edge passed, against the same fact retracted
    ticks, retracts = [], []
    base = time.time() + 10 * 86400
    for i in range(50):
        row = timed_rows[i]
        edge = base + i
        r.insert("member", [row], valid_until=edge)
        r.tick(edge - 0.5)
        t0 = time.perf_counter_ns()
        r.tick(edge)
        ticks.append(time.perf_counter_ns() - t0)
        r.insert("member", [row])
        t0 = time.perf_counter_ns()
        r.retract("member", [row])
        retracts.append(time.perf_counter_ns() - t0)
        r.insert("member", [row], valid_until=day)
    out["tick over one expiring membership (µs p50)"] = statistics.median(ticks) / 1000
    out["retract of that membership (µs p50)"] = statistics.median(retracts) / 1000
    log(f"validity bench, {a.size} tables, {w.n_base_facts} base facts")
    for k, v in out.items():
        print(f"{k:50s} {v:10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
