#!/usr/bin/env python3
"""Cold start on the Gravitino-shaped workload (issue 26, item 5): the time to the first
answered check, from Python lists and from an opened SQLite store.

* **lists**: ``Reasoner(program)``, one transaction inserting every base fact (``insert``),
  then the first check (``first check``: the first evaluation and the planner's statistics);
* **store**: the facts bulk-loaded into a new SQLite file (not timed), then
  ``Reasoner(program, store=URL, follow=False)`` (``open``) and its first check.

Each figure is the median over ``--repeat`` runs, each run in a fresh process state (a new
Reasoner; the workload generated once).

    .venv/bin/python benchmarks/cold_start_bench.py --sizes 100000 --repeat 3
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import gravitino_workload as gw
from harness import ROOT, load_store, log

import grantlog

RULES = ROOT / "rules" / "gravitino.gl"


def from_lists(program: Any, w: Any, first: tuple[str, str, str]) -> tuple[float, float]:
    gc.collect()
    r = grantlog.Reasoner(program)
    t0 = time.perf_counter()
    with r.transaction() as tx:
        for rel, rows in w.facts.items():
            tx.insert(rel, rows)
    t1 = time.perf_counter()
    r.check(*first)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1


def from_store(program: Any, url: str, first: tuple[str, str, str]) -> tuple[float, float]:
    gc.collect()
    t0 = time.perf_counter()
    r = grantlog.Reasoner(program, store=url, follow=False)
    t1 = time.perf_counter()
    r.check(*first)
    t2 = time.perf_counter()
    r.close()
    return t1 - t0, t2 - t1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    program = grantlog.compile(paths=[str(RULES)])
    for size in a.sizes:
        w = gw.generate(size, seed=1)
        first = gw.Sampler(w, seed=2).one("load_table")
        lists = [from_lists(program, w, first) for _ in range(a.repeat)]
        with tempfile.TemporaryDirectory() as tmp:
            url = f"sqlite:///{Path(tmp) / 'cold.db'}"
            load_store(url, program, w)
            stored = [from_store(program, url, first) for _ in range(a.repeat)]
        med = statistics.median
        log(f"{size:>9,} tables  lists: insert {med(x[0] for x in lists):.2f} s, first check "
            f"{med(x[1] for x in lists):.2f} s, total {med(sum(x) for x in lists):.2f} s | "
            f"store: open {med(x[0] for x in stored):.2f} s, first check "
            f"{med(x[1] for x in stored):.2f} s, total {med(sum(x) for x in stored):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
