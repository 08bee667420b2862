#!/usr/bin/env python3
"""Cold start on the Gravitino-shaped workload (issue 26, item 5): the time to the first
answered check, from Python lists and from an opened SQLite store.

* **lists**: ``Reasoner(program)``, one transaction inserting every base fact (``insert``),
  then the first check (``first check``: the first evaluation and the planner's statistics),
  then the first listing (``first list``: ``list(subject, "load_table", type="table")`` for the
  first check's subject; budget 50 ms + 2 µs per listed table);
* **store**: the facts bulk-loaded into a new SQLite file, the big relations' snapshot taken
  (grantlog/store/snapshots.py; ``--no-snapshot``: none, the open reads the tables) and the
  planner's statistics measured and kept with them, as ``grantlog store load`` does
  (``measure``, timed apart; ``--no-kept``: none kept, each open measures the rows), then
  ``Reasoner(program, store=URL, follow=False)`` (``open``), its first check and first list;
* **store, list first**: a listing as the first question after opening the store;
* **store, prepared**: ``prepare()`` after opening (what ``grantlog serve`` does before it
  takes traffic: plans and indexes of checks, lists and filters), then the first listing.

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
from grantlog.store import open_store, planstats, snapshots, warm

RULES = ROOT / "rules" / "gravitino.gl"
#: wall-clock time; ``--cpu``: the process's CPU time (on a shared machine, the work done
#: without the waits for a core)
clock = time.perf_counter


Run = tuple[float, float, float, int]  # load, first check, first list, tables listed


def questions(r: Any, first: tuple[str, str, str], t0: float, t1: float) -> Run:
    r.check(*first)
    t2 = clock()
    n = len(r.list(first[0], "load_table", type="table"))
    t3 = clock()
    return t1 - t0, t2 - t1, t3 - t2, n


def from_lists(program: Any, w: Any, first: tuple[str, str, str]) -> Run:
    gc.collect()
    r = grantlog.Reasoner(program)
    t0 = clock()
    with r.transaction() as tx:
        for rel, rows in w.facts.items():
            tx.insert(rel, rows)
    return questions(r, first, t0, clock())


def forget(url: str, kept: bool) -> None:
    """Without ``kept``: drop the statistics a previous reasoner kept at its close."""
    if not kept:
        st = open_store(url)
        st.attach()
        planstats.forget(st)
        st.close()


def measure(program: Any, url: str, snapshot: bool = True) -> float:
    """The big relations' snapshot taken (``snapshot``) and the planner's statistics measured
    and kept after the load (``grantlog store load``)."""
    gc.collect()
    t0 = clock()
    st = open_store(url, program)
    try:
        if snapshot:
            snapshots.write(st)
        warm.measure(st, program)
    finally:
        st.close()
    return clock() - t0


def from_store(program: Any, url: str, first: tuple[str, str, str], kept: bool = True) -> Run:
    forget(url, kept)
    gc.collect()
    t0 = clock()
    r = grantlog.Reasoner(program, store=url, follow=False)
    try:
        return questions(r, first, t0, clock())
    finally:
        r.close()


def list_first(program: Any, url: str, first: tuple[str, str, str],
               prepare: bool, kept: bool = True) -> tuple[float, float]:
    """(prepare, first list) after opening the store; prepare 0 when not asked for."""
    forget(url, kept)
    gc.collect()
    r = grantlog.Reasoner(program, store=url, follow=False)
    try:
        t0 = clock()
        if prepare:
            r.prepare()
        t1 = clock()
        r.list(first[0], "load_table", type="table")
        return t1 - t0, clock() - t1
    finally:
        r.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cpu", action="store_true",
                    help="measure the process's CPU time instead of the wall clock")
    ap.add_argument("--no-kept", action="store_true",
                    help="keep no planner statistics with the store: every open measures")
    ap.add_argument("--no-snapshot", action="store_true",
                    help="take no snapshot of the big relations: every open reads the tables")
    a = ap.parse_args()
    kept = not a.no_kept
    if a.cpu:
        global clock
        clock = time.process_time
    program = grantlog.compile(paths=[str(RULES)])
    for size in a.sizes:
        w = gw.generate(size, seed=1)
        first = gw.Sampler(w, seed=2).one("load_table")
        lists = [from_lists(program, w, first) for _ in range(a.repeat)]
        with tempfile.TemporaryDirectory() as tmp:
            url = f"sqlite:///{Path(tmp) / 'cold.db'}"
            load_store(url, program, w)
            measured = measure(program, url, not a.no_snapshot) if kept else 0.0
            stored = [from_store(program, url, first, kept) for _ in range(a.repeat)]
            listed = [list_first(program, url, first, False, kept)[1] for _ in range(a.repeat)]
            prepared = [list_first(program, url, first, True, kept) for _ in range(a.repeat)]
        med = statistics.median
        n = lists[0][3]
        log(f"{size:>9,} tables  lists: insert {med(x[0] for x in lists):.2f} s, first check "
            f"{med(x[1] for x in lists):.2f} s, first list {med(x[2] for x in lists):.3f} s | "
            f"store: measure {measured:.2f} s, open {med(x[0] for x in stored):.2f} s, first check "
            f"{med(x[1] for x in stored):.2f} s, first list {med(x[2] for x in stored):.3f} s | "
            f"store, list first {med(listed):.3f} s | store, prepared: prepare "
            f"{med(x[0] for x in prepared):.2f} s, first list {med(x[1] for x in prepared):.3f} s"
            f" | {n:,} tables listed, budget {0.05 + 2e-6 * n:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
