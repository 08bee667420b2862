#!/usr/bin/env python3
"""The explorer's server side of one asked check (issue 29: "a check answered and drawn
<= 200 ms at 100k tables"): the decision, the explanation (why or why-not), its graph for the
page (grantlog/explorer/proofs.py) and the JSON the page receives, on the Gravitino model over
a generated world (benchmarks/gravitino_workload.py, seed 1) of ``--tables`` tables.

Checks are the workload's sampler's (60% targeted, 40% uniform: ALLOWs and DENYs); each is
asked ``--rounds`` times through ``grantlog.explorer.ask.answer`` (what ``POST /api/ask``
runs), after one warm-up ask of each. Prints the median, p90 and max per part and in total;
the browser's drawing is measured by tests/test_explorer_e2e.py's page (``explorer.drawMs``).

    .venv/bin/python benchmarks/explorer_bench.py [--tables 100000] [--checks 40]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gravitino_workload as gw  # noqa: E402
from grantlog.engine.core.ir import show_atom  # noqa: E402

import grantlog  # noqa: E402
from grantlog.explorer import ask, proofs  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tables", type=int, default=100_000)
    p.add_argument("--checks", type=int, default=40)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()

    t0 = time.perf_counter()
    w = gw.generate(a.tables, seed=1)
    r = grantlog.Reasoner(grantlog.compile(paths=[str(HERE.parent / "rules" / "gravitino.gl")]))
    with r.transaction() as tx:
        for rel, rows in w.facts.items():
            tx.insert(rel, rows)
    print(f"world: {a.tables} tables, loaded in {time.perf_counter() - t0:.1f} s; "
          f"load average {os.getloadavg()[0]:.2f}")
    fold = proofs.folded_relations(r.program)
    checks = gw.Sampler(w).many(a.checks)
    parts: dict[str, list[float]] = {k: [] for k in ("check", "explain", "graph", "json",
                                                     "total")}
    nodes: list[int] = []
    split: dict[str, list[float]] = {"ALLOW": [], "DENY": []}
    allowed = 0
    for s, o, res in checks:
        q = ask.Question("check", (s, o, res))
        ask.answer(r, q)  # warm-up: the first ask of a question plans its demand
        for _ in range(a.rounds):
            t = time.perf_counter()
            d = r.check(s, o, res)
            t1 = time.perf_counter()
            goal = show_atom(r.program.decision, (s, o, res))
            ex = r.explain(goal).to_dict()
            t2 = time.perf_counter()
            g = proofs.graph(ex, fold)
            t3 = time.perf_counter()
            json.dumps({"graph": g, "summary": d.allowed})
            t4 = time.perf_counter()
            for k, dt in zip(parts, (t1 - t, t2 - t1, t3 - t2, t4 - t3, t4 - t), strict=True):
                parts[k].append(dt * 1000)
        allowed += bool(d.allowed)
        split["ALLOW" if d.allowed else "DENY"] += parts["total"][-a.rounds:]
        nodes.append(len(g["nodes"]))
    print(f"{len(checks)} checks ({allowed} ALLOW), {a.rounds} rounds each; graph nodes: "
          f"median {statistics.median(nodes):.0f}, max {max(nodes)}")
    print(f"{'part':<8} {'median ms':>10} {'p90 ms':>8} {'max ms':>8}")
    for k, v in parts.items():
        v.sort()
        print(f"{k:<8} {statistics.median(v):>10.2f} {v[int(len(v) * 0.9)]:>8.2f} "
              f"{v[-1]:>8.2f}")
    for k, v in split.items():
        if v:
            print(f"total of a{'n' if k == 'ALLOW' else ''} {k}: median "
                  f"{statistics.median(v):.2f} ms, max {max(v):.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
