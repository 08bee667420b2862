#!/usr/bin/env python3
"""History (issue 28): as-of checks at the last 1,000 revisions, from the live reasoner.

Over a store of benchmarks/history_world.py (``--tables`` x ``--transactions``, built or
reused at ``--path``), a live reasoner is opened and then writes ``--live`` more transactions
itself (a running service: grants, revokes, joins and leaves of the world's roles, users and
objects, one fact each, with an author), so that it holds the net change of each
(engine/answer/recent.py). Measured:

* **recent as-of check**: ``check(..., at_revision=R)`` for ``--samples`` checks at random
  revisions R in ``[head - 1000, head)`` (half of them the world's focus pair, half sampled
  by benchmarks/gravitino_workload.py's ``Sampler``), p50 / p95, and how many the live
  reasoner answered itself;
* **the same at one revision again** (a run of checks at one moment: its net change kept);
* **before**: a few of those checks without the live path (the rebuilt or point-read past
  reasoner of engine/answer/history.py), p50;
* **check now**, for scale.

    .venv/bin/python benchmarks/history_recent_bench.py --path /tmp/hB/w.db \\
        --tables 1000000 --transactions 1000000
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gravitino_workload as gw
import history_world
from grantlog.engine.answer import recent

import grantlog


def pct(xs: list[float], q: float) -> str:
    s = sorted(xs)
    return f"{s[min(len(s) - 1, int(q * len(s)))] * 1000:.2f} ms"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--path", default="/tmp/hB/world.db")
    ap.add_argument("--tables", type=int, default=10_000)
    ap.add_argument("--transactions", type=int, default=10_000)
    ap.add_argument("--live", type=int, default=1000, help="transactions the reasoner writes")
    ap.add_argument("--samples", type=int, default=400)
    ap.add_argument("--before", type=int, default=5, help="checks without the live path")
    a = ap.parse_args()
    rng = random.Random(11)
    t0 = time.perf_counter()
    w = history_world.build(a.path, a.tables, a.transactions, log=print)
    print(f"world: {a.tables:,} tables x {a.transactions:,} transactions, head {w.head:,} "
          f"({time.perf_counter() - t0:.1f} s to build or reuse)")
    t0 = time.perf_counter()
    r = grantlog.Reasoner(w.program, store=w.url, follow=False)
    focus = (w.focus_user, "select_table", w.focus_table)
    r.check(*focus)
    print(f"opened and first check in {time.perf_counter() - t0:.1f} s")
    wl = w.workload
    privileges = sorted(r.rows("privilege"))
    members = sorted(r.rows("member"))
    objects = [row[2] for row in privileges]
    t0 = time.perf_counter()
    start = r.revision
    i = 0
    while r.revision - start < a.live:  # (a write that changes nothing makes no revision)
        i += 1
        kind = rng.random()
        with r.transaction(author="bench", reason=f"live {i}") as tx:
            if kind < 0.35 and privileges:
                role, priv, _, cond = rng.choice(privileges)
                row = (role, priv, rng.choice(objects), cond)
                tx.insert("privilege", [row])
                privileges.append(row)
            elif kind < 0.6 and privileges:
                row = privileges.pop(rng.randrange(len(privileges)))
                tx.retract("privilege", [row])
            elif kind < 0.85:
                row = (rng.choice(wl.users), rng.choice(members)[1])
                tx.insert("member", [row])
                members.append(row)
            else:
                tx.retract("member", [members.pop(rng.randrange(len(members)))])
    head = r.revision
    print(f"wrote {a.live:,} live transactions in {time.perf_counter() - t0:.1f} s "
          f"(head {head:,})")
    s = gw.Sampler(wl, 5)
    asks = []
    for i in range(a.samples):
        rev = rng.randint(max(start, head - recent.WINDOW), head - 1)
        asks.append((*(focus if i % 2 else s.one()), rev))
    times, fast, plain = [], 0, []
    for subj, op, res, rev in asks:
        t = time.perf_counter()
        d = r.check(subj, op, res, at_revision=rev)
        times.append(time.perf_counter() - t)
        fast += recent.undone(r, rev) is not None  # (after: kept by the check, if it was)
        if not d.warnings:
            plain.append(times[-1])
    print(f"recent as-of check ({len(asks)} at random revisions in [{head - recent.WINDOW:,}, "
          f"{head:,})): p50 {pct(times, 0.5)}, p95 {pct(times, 0.95)}; "
          f"{fast} answered by the live reasoner; without the {len(asks) - len(plain)} "
          f"unknown-constant denials: p50 {pct(plain, 0.5)}, p95 {pct(plain, 0.95)}")
    rev = head - recent.WINDOW // 2
    again = []
    for subj, op, res, _ in asks[:100]:
        t = time.perf_counter()
        r.check(subj, op, res, at_revision=rev)
        again.append(time.perf_counter() - t)
    print(f"recent as-of check, 100 at one revision: p50 {pct(again, 0.5)}, "
          f"p95 {pct(again, 0.95)}")
    now = []
    for subj, op, res, _ in asks[:100]:
        t = time.perf_counter()
        r.check(subj, op, res)
        now.append(time.perf_counter() - t)
    print(f"check now (the same 100): p50 {pct(now, 0.5)}, p95 {pct(now, 0.95)}")
    warned = sum(1 for subj, op, res, _ in asks if r.check(subj, op, res).warnings)
    print(f"{warned} of the {len(asks)} checks are denials with an unknown constant (their "
          "\"did you mean\" reads every stored value of the column, now as then)")
    # before: the past reasoner (rebuilt, or read by points) at other recent revisions
    log = recent._logs.pop(r)
    before = []
    for subj, op, res, rev in asks[:a.before]:
        t = time.perf_counter()
        r.check(subj, op, res, at_revision=rev)
        before.append(time.perf_counter() - t)
    recent._logs[r] = log
    print(f"before (without the live path, {len(before)} checks): p50 "
          f"{statistics.median(before) * 1000:.1f} ms")
    print(f"load average {os.getloadavg()[0]:.1f}")
    r.close()


if __name__ == "__main__":
    main()
