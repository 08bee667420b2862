"""``list`` on a model written from scratch (issue 26, item 1): the benchmark models of
benchmarks/models/ at N tables, each probe user's ``load_table`` listing (a few tables, a few
thousand, every table), timed warm (medians), and whether it went through the hierarchy's walk
(``list_filtered`` answered) or evaluated the decision per candidate.

    .venv/bin/python benchmarks/own_shapes_bench.py [--tables 100000] [--model unary] [--runs 7]
                                                    [--probes probe_small,probe_medium]

Budget (the listing issue): 50 ms + 2 µs per listed table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "models"))
sys.path.insert(0, str(HERE))

import worlds  # noqa: E402
from grantlog.engine.answer import listing  # noqa: E402

import grantlog  # noqa: E402

#: each model's decision operation for reading a table
OPERATION = {"shipped": "load_table", "renamed": "load_table", "unary": "load_table",
             "twotrees": "read_table"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", type=int, default=100_000)
    ap.add_argument("--model", default="unary", choices=worlds.MODELS)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--probes", default=",".join(worlds.PROBES),
                    help="the probe users to list for (comma-separated)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    world = worlds.generate(args.model, args.tables)
    r = grantlog.Reasoner(grantlog.compile(paths=[world.rules]))
    with r.transaction() as tx:
        for rel, rows in world.facts.items():
            if rows:
                tx.insert(rel, rows)
    r.prepare()
    print(f"{args.model} at {args.tables:,} tables: {world.n_facts:,} facts, loaded and "
          f"prepared in {time.perf_counter() - t0:.1f} s")
    op = OPERATION[args.model]
    for user in args.probes.split(","):
        t = time.perf_counter()
        got = r.list(user, op)
        first = time.perf_counter() - t
        times = []
        for _ in range(args.runs):
            t = time.perf_counter()
            r.list(user, op)
            times.append(time.perf_counter() - t)
        fast = listing.list_filtered(r, user, op, None) is not None
        med = statistics.median(times)
        budget = 0.050 + 2e-6 * len(got)
        print(f"  list({user}, {op}): {len(got):>7,} tables  first {first * 1e3:8.1f} ms  "
              f"median {med * 1e3:8.1f} ms  budget {budget * 1e3:6.1f} ms  "
              f"{'walk' if fast else 'per candidate'}")
    # a write to the hierarchy (a new table): the first listing after it
    user = args.probes.split(",")[-1]
    w = world.workload
    parent = next(p for p, c in w.facts["contains"] if c in w.parent and c.count(".") == 3)
    for i in range(3):
        new = f"{parent}.new{i}"
        with r.transaction() as tx:
            if args.model in ("unary",):
                tx.insert("table", [(new,)])
                tx.insert("parent", [(new, parent)])
            else:
                rel, edge = {"twotrees": ("resource", "encloses"),
                             "renamed": ("kind", "nests")}.get(args.model,
                                                                 ("entity", "contains"))
                tx.insert(rel, [(new, "table")])
                tx.insert(edge, [(parent, new)])
        t = time.perf_counter()
        got = r.list(user, op)
        print(f"  after inserting a table: list({user}) {len(got):,} tables in "
              f"{(time.perf_counter() - t) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
